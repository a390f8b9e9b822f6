package org.apache.hadoop.yarn.sls.scheduler;

import java.util.List;

import org.apache.hadoop.conf.Configurable;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.api.records.ApplicationAttemptId;
import org.apache.hadoop.yarn.api.records.ContainerId;
import org.apache.hadoop.yarn.api.records.ResourceRequest;
import org.apache.hadoop.yarn.api.records.SchedulingRequest;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.Allocation;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.ContainerUpdates;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.event.SchedulerEvent;
import org.apache.hadoop.yarn.sls.SLSRunner;
import org.slotwise.shim.SlotwiseScheduler;
import org.slotwise.sls.SlsTimings;

/**
 * SlotwiseScheduler as SLS runs a scheduler: SLS wraps only its own Fair and
 * Capacity schedulers, and expects any other to be a {@link SchedulerWrapper}
 * (its metrics and queue tracking go through SLSSchedulerCommons). The
 * scheduling itself is SlotwiseScheduler's, untouched; this class only
 * times NODE_UPDATE and counts allocations, as {@link TimedFairScheduler}
 * does for the FairScheduler.
 */
public class SlotwiseSlsScheduler extends SlotwiseScheduler implements SchedulerWrapper, Configurable {
  private final SLSSchedulerCommons commons;
  private SLSRunner runner;
  private Configuration conf;

  public SlotwiseSlsScheduler() {
    commons = new SLSSchedulerCommons(this);
  }

  /** SLS configures its wrapper before the RM starts it (SlotwiseScheduler reads the service's own). */
  @Override
  public void setConf(Configuration conf) {
    this.conf = conf;
    commons.initMetrics(SlotwiseScheduler.class, conf);
  }

  @Override
  public Configuration getConf() {
    return conf;
  }

  @Override
  public Allocation allocate(ApplicationAttemptId attemptId, List<ResourceRequest> ask,
      List<SchedulingRequest> schedulingRequests, List<ContainerId> release, List<String> blacklistAdditions,
      List<String> blacklistRemovals, ContainerUpdates updates) {
    return commons.allocate(attemptId, ask, schedulingRequests, release, blacklistAdditions, blacklistRemovals,
        updates);
  }

  @Override
  public Allocation allocatePropagated(ApplicationAttemptId attemptId, List<ResourceRequest> ask,
      List<SchedulingRequest> schedulingRequests, List<ContainerId> release, List<String> blacklistAdditions,
      List<String> blacklistRemovals, ContainerUpdates updates) {
    Allocation a = super.allocate(attemptId, ask, schedulingRequests, release, blacklistAdditions,
        blacklistRemovals, updates);
    SlsTimings.allocated(a.getContainers().size());
    return a;
  }

  @Override
  public void handle(SchedulerEvent event) {
    try {
      commons.handle(event);
    } catch (Exception e) {
      System.err.println("slotwise-sls: handling " + event.getType() + ": " + e);
    }
  }

  @Override
  public void propagatedHandle(SchedulerEvent event) {
    SlsTimings.handle(event, super::handle);
  }

  @Override
  public void serviceStop() throws Exception {
    SlsTimings.batches(schedulingCounts());
    SlsTimings.write();
    commons.stopMetrics();
    super.serviceStop();
  }

  @Override
  public String getRealQueueName(String queue) {
    return queue.startsWith("root.") || queue.equals("root") ? queue : "root." + queue;
  }

  @Override
  public SchedulerMetrics getSchedulerMetrics() {
    return commons.getSchedulerMetrics();
  }

  @Override
  public Tracker getTracker() {
    return commons.getTracker();
  }

  @Override
  public void setSLSRunner(SLSRunner runner) {
    this.runner = runner;
  }

  @Override
  public SLSRunner getSLSRunner() {
    return runner;
  }
}
