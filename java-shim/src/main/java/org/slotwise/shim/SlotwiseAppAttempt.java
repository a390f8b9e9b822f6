package org.slotwise.shim;

import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.hadoop.yarn.api.records.*;
import org.apache.hadoop.yarn.server.resourcemanager.RMContext;
import org.apache.hadoop.yarn.server.resourcemanager.rmcontainer.*;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.*;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.common.fica.FiCaSchedulerApp;
import org.apache.hadoop.yarn.server.scheduler.SchedulerRequestKey;

/**
 * An attempt as YARN's FifoScheduler keeps it (FiCaSchedulerApp: its
 * containerCompleted is YARN's own), allocating one container as
 * FifoAppAttempt does (whose constructor YARN keeps to its package), and the
 * containers the AM is warned about (kill=false preemptions), which every
 * allocate response carries until they are gone.
 */
final class SlotwiseAppAttempt extends FiCaSchedulerApp {
  private final Set<ContainerId> warned = ConcurrentHashMap.newKeySet();

  SlotwiseAppAttempt(ApplicationAttemptId attemptId, String user, SlotwiseQueue queue, RMContext rmContext) {
    super(attemptId, user, queue, queue.getAbstractUsersManager(), rmContext);
  }

  /** One container at a locality the caller checked; null if stopped or no ask is left at that key. */
  RMContainer allocate(NodeType type, SchedulerNode node, SchedulerRequestKey key, Container container) {
    writeLock.lock();
    try {
      if (isStopped || getOutstandingAsksCount(key) <= 0) {
        return null;
      }
      RMContainerImpl rmContainer = new RMContainerImpl(container, key,
          getApplicationAttemptId(), node.getNodeID(), getUser(), rmContext, node.getPartition());
      rmContainer.setQueueName(getQueueName());
      updateAMContainerDiagnostics(AMState.ASSIGNED, null);
      addToNewlyAllocatedContainers(node, rmContainer);
      liveContainers.put(container.getId(), rmContainer);
      rmContainer.setContainerRequest(appSchedulingInfo.allocate(type, node, key, rmContainer));
      attemptResourceUsage.incUsed(node.getPartition(), container.getResource());
      rmContainer.handle(new RMContainerEvent(container.getId(), RMContainerEventType.START));
      return rmContainer;
    } finally {
      writeLock.unlock();
    }
  }

  /** Puts a live container into the AM's preemption message (warn), or takes it out. */
  void warnPreemption(ContainerId id, boolean warn) {
    if (!warn) {
      warned.remove(id);
    } else if (liveContainers.containsKey(id)) {
      warned.add(id);
    }
  }

  /** The live containers the AM is warned about (a finished one leaves the set). */
  Set<ContainerId> getWarnedContainers() {
    warned.retainAll(liveContainers.keySet());
    return new HashSet<>(warned);
  }
}
