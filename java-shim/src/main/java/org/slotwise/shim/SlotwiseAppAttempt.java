package org.slotwise.shim;

import java.util.Collections;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.hadoop.yarn.api.records.*;
import org.apache.hadoop.yarn.server.resourcemanager.RMContext;
import org.apache.hadoop.yarn.server.resourcemanager.rmcontainer.*;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.NodeType;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.SchedulerApplicationAttempt;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.SchedulerNode;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.common.ContainerRequest;
import org.apache.hadoop.yarn.server.scheduler.SchedulerRequestKey;

/**
 * An app attempt under Slotwise: YARN's generic attempt plus allocation of
 * one container, completion, and the set of containers the AM is warned about
 * (kill=false preemptions), which every allocate response carries until the
 * containers are gone.
 */
final class SlotwiseAppAttempt extends SchedulerApplicationAttempt {
  private final Set<ContainerId> warned = ConcurrentHashMap.newKeySet();

  SlotwiseAppAttempt(ApplicationAttemptId attemptId, String user, SlotwiseQueue queue,
      RMContext rmContext) {
    super(attemptId, user, queue, queue.getAbstractUsersManager(), rmContext);
  }

  /**
   * Allocates one container at the given locality; null if the attempt
   * stopped or has no outstanding ask at that key any more. The caller has
   * checked the locality and the node's room, and holds the scheduler lock.
   */
  RMContainer allocate(NodeType type, SchedulerNode node, SchedulerRequestKey key,
      Container container) {
    writeLock.lock();
    try {
      if (isStopped || getOutstandingAsksCount(key) <= 0) {
        return null;
      }
      RMContainerImpl rmContainer = new RMContainerImpl(container, key,
          getApplicationAttemptId(), node.getNodeID(), getUser(), rmContext,
          node.getPartition());
      rmContainer.setQueueName(getQueueName());
      updateAMContainerDiagnostics(AMState.ASSIGNED, null);
      addToNewlyAllocatedContainers(node, rmContainer);
      liveContainers.put(container.getId(), rmContainer);
      ContainerRequest request = appSchedulingInfo.allocate(type, node, key, rmContainer);
      rmContainer.setContainerRequest(request);
      attemptResourceUsage.incUsed(node.getPartition(), container.getResource());
      rmContainer.handle(new RMContainerEvent(container.getId(), RMContainerEventType.START));
      return rmContainer;
    } finally {
      writeLock.unlock();
    }
  }

  /** Forgets a finished container; false if it was not live. */
  boolean containerCompleted(RMContainer rmContainer, ContainerStatus status,
      RMContainerEventType event, String partition) {
    writeLock.lock();
    try {
      ContainerId id = rmContainer.getContainerId();
      if (liveContainers.remove(id) == null) {
        return false;
      }
      newlyAllocatedContainers.remove(rmContainer);
      warned.remove(id);
      rmContainer.handle(new RMContainerFinishedEvent(id, status, event));
      Resource r = rmContainer.getContainer().getResource();
      queue.getMetrics().releaseResources(partition, getUser(), 1, r);
      attemptResourceUsage.decUsed(partition, r);
      lastMemoryAggregateAllocationUpdateTime = -1;
      return true;
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

  Set<ContainerId> getWarnedContainers() {
    return warned.isEmpty() ? Collections.emptySet() : new HashSet<>(warned);
  }

  /** Whether this attempt still waits for its AM container. */
  boolean waitsForAM() {
    try {
      return isWaitingForAMContainer();
    } catch (RuntimeException e) {
      return false; // no RMAppAttempt (tests, races): not an AM container
    }
  }
}
