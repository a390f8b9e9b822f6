package org.apache.hadoop.yarn.sls.scheduler;

import java.util.List;

import org.apache.hadoop.yarn.api.records.ApplicationAttemptId;
import org.apache.hadoop.yarn.api.records.ContainerId;
import org.apache.hadoop.yarn.api.records.ResourceRequest;
import org.apache.hadoop.yarn.api.records.SchedulingRequest;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.Allocation;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.ContainerUpdates;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.event.SchedulerEvent;
import org.slotwise.sls.SlsTimings;

/** SLS's FairScheduler, timed and counted exactly as {@link SlotwiseSlsScheduler}. */
public class TimedFairScheduler extends SLSFairScheduler {
  @Override
  public Allocation allocatePropagated(ApplicationAttemptId attemptId, List<ResourceRequest> ask,
      List<SchedulingRequest> schedulingRequests, List<ContainerId> release, List<String> blacklistAdditions,
      List<String> blacklistRemovals, ContainerUpdates updates) {
    Allocation a = super.allocatePropagated(attemptId, ask, schedulingRequests, release, blacklistAdditions,
        blacklistRemovals, updates);
    SlsTimings.allocated(a.getContainers().size());
    return a;
  }

  @Override
  public void propagatedHandle(SchedulerEvent event) {
    SlsTimings.handle(event, super::propagatedHandle);
  }

  @Override
  public void serviceStop() throws Exception {
    SlsTimings.write();
    super.serviceStop();
  }
}
