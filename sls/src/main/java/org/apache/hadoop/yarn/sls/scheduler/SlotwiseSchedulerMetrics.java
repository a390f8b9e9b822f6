package org.apache.hadoop.yarn.sls.scheduler;

/** SLS picks a scheduler's metrics class by the scheduler's class name; Slotwise's are the generic ones. */
public class SlotwiseSchedulerMetrics extends SchedulerMetrics {
}
