package org.slotwise.shim;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.ToLongFunction;

import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.api.records.Container;
import org.apache.hadoop.yarn.api.records.ContainerId;
import org.apache.hadoop.yarn.api.records.NodeId;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.api.records.ResourceRequest;
import org.apache.hadoop.yarn.server.resourcemanager.rmcontainer.RMContainer;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.AppSchedulingInfo;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.ClusterNodeTracker;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.NodeType;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.SchedulerAppUtils;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.SchedulerApplication;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.common.fica.FiCaSchedulerNode;
import org.apache.hadoop.yarn.server.scheduler.SchedulerRequestKey;
import org.apache.hadoop.yarn.server.utils.BuilderUtils;
import org.apache.hadoop.yarn.util.resource.Resources;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Places containers on a node: Python's assignments, each checked against
 * Hadoop's own locality rule and the node's room before it is allocated
 * (a refusal goes back to Python with its reason), or, when Python cannot
 * decide, the built-in FIFO's choice. The scheduler calls it under its write
 * lock; YARN's bookkeeping of an allocation is the attempt's and the node's.
 */
final class Allocator {
  private static final Logger LOG = LoggerFactory.getLogger(Allocator.class);

  private final Map<ApplicationId, SchedulerApplication<SlotwiseAppAttempt>> applications;
  private final ClusterNodeTracker<FiCaSchedulerNode> nodeTracker;
  private final Deltas deltas;
  private final Map<ContainerId, String> engineIds;
  private final Resource minimumAllocation;
  private final ToLongFunction<ApplicationId> submitTime;

  Allocator(Map<ApplicationId, SchedulerApplication<SlotwiseAppAttempt>> applications,
      ClusterNodeTracker<FiCaSchedulerNode> nodeTracker, Deltas deltas,
      Map<ContainerId, String> engineIds, Resource minimumAllocation,
      ToLongFunction<ApplicationId> submitTime) {
    this.applications = applications;
    this.nodeTracker = nodeTracker;
    this.deltas = deltas;
    this.engineIds = engineIds;
    this.minimumAllocation = minimumAllocation;
    this.submitTime = submitTime;
  }

  /**
   * Checks and allocates Python's assignments; under the write lock. A refused one is reported with
   * its app, whose ask Python took when it assigned and must get back.
   */
  void apply(List<Messages.Assignment> assignments) {
    for (Messages.Assignment a : assignments) {
      Refused refused;
      try {
        refused = tryAssign(a);
      } catch (RuntimeException e) {
        refused = new Refused(Messages.Reason.ERROR, e.toString());
        LOG.warn("Slotwise: error while allocating {}", a.engineId(), e);
      }
      if (refused != null) {
        deltas.rejected(a.engineId(), refused.reason());
        deltas.appChanged(a.app());
        LOG.info("Slotwise: refused assignment {} of {} on {} ({}): {}", a.engineId(), a.app(),
            a.node(), a.locality(), refused.why());
      }
    }
  }

  /** Why an assignment was not carried out: the wire's reason, and words for the log. */
  private record Refused(Messages.Reason reason, String why) {
  }

  /** Allocates one assignment; returns null when done, else why not. */
  private Refused tryAssign(Messages.Assignment a) {
    ApplicationId appId;
    NodeId nodeId;
    try {
      appId = ApplicationId.fromString(a.app());
      nodeId = NodeId.fromString(a.node());
    } catch (IllegalArgumentException e) {
      return new Refused(Messages.Reason.ERROR, "malformed id");
    }
    SchedulerApplication<SlotwiseAppAttempt> app = applications.get(appId);
    SlotwiseAppAttempt attempt = app == null ? null : app.getCurrentAppAttempt();
    if (attempt == null || attempt.isStopped()) {
      return new Refused(Messages.Reason.NO_ATTEMPT, "no live attempt");
    }
    FiCaSchedulerNode node = nodeTracker.getNode(nodeId);
    if (node == null) {
      return new Refused(Messages.Reason.NO_NODE, "no such node");
    }
    if (SchedulerAppUtils.isPlaceBlacklisted(attempt, node, LOG)) {
      return new Refused(Messages.Reason.BLACKLISTED, "node blacklisted by the app");
    }
    for (SchedulerRequestKey key : attempt.getSchedulerKeys()) {
      if (key.getPriority().getPriority() == a.priority()
          && a.locality() == locality(attempt, key, node, a.locality())) {
        Resource capability =
            attempt.getPendingAsk(key, ResourceRequest.ANY).getPerAllocationResource();
        if (!Resources.fitsIn(capability, node.getUnallocatedResource())) {
          return new Refused(Messages.Reason.NO_ROOM, "does not fit");
        }
        return allocateOne(attempt, node, key, a.locality(), a.engineId()) ? null
            : new Refused(Messages.Reason.ERROR, "allocation refused");
      }
    }
    return new Refused(Messages.Reason.LOCALITY,
        "no outstanding request at priority " + a.priority() + " allowing " + a.locality());
  }

  /**
   * The locality one container of this request may have on this node: the
   * wanted one if given and allowed, else the best allowed; null if none.
   * Allowed is Hadoop's own answer: the asks, by AppSchedulingInfo's
   * checkAllocation (node-local needs the node's and its rack's asks,
   * rack-local the rack's, off-switch ANY's), and relaxLocality as the
   * FairScheduler's FSAppAttempt reads it (a rack that may not be relaxed
   * to takes node-local only; ANY's forbids off-switch).
   */
  private static Messages.Locality locality(SlotwiseAppAttempt attempt, SchedulerRequestKey key,
      FiCaSchedulerNode node, Messages.Locality wanted) {
    AppSchedulingInfo asks = attempt.getAppSchedulingInfo();
    for (Messages.Locality level : wanted != null ? List.of(wanted) : List.of(Messages.Locality.values())) {
      NodeType type = nodeType(level);
      if (asks.checkAllocation(type, node, key)
          && (type == NodeType.NODE_LOCAL || asks.canDelayTo(key, node.getRackName()))
          && (type != NodeType.OFF_SWITCH || asks.canDelayTo(key, ResourceRequest.ANY))) {
        return level;
      }
    }
    return null;
  }

  private static NodeType nodeType(Messages.Locality level) {
    return level == Messages.Locality.NODE_LOCAL ? NodeType.NODE_LOCAL
        : level == Messages.Locality.RACK_LOCAL ? NodeType.RACK_LOCAL : NodeType.OFF_SWITCH;
  }

  /**
   * Allocates one container the normal way; under the write lock. A container
   * Python did not place (engineId null) changes the app's ask behind its back:
   * the app goes to Python again.
   */
  private boolean allocateOne(SlotwiseAppAttempt attempt, FiCaSchedulerNode node,
      SchedulerRequestKey key, Messages.Locality locality, String engineId) {
    Resource capability =
        attempt.getPendingAsk(key, ResourceRequest.ANY).getPerAllocationResource();
    boolean am = attempt.waitsForAM();
    ContainerId id = BuilderUtils.newContainerId(attempt.getApplicationAttemptId(),
        attempt.getNewContainerId());
    Container container = BuilderUtils.newContainer(id, node.getNodeID(),
        node.getRMNode().getHttpAddress(), capability, key.getPriority(), null,
        key.getAllocationRequestId());
    RMContainer rmContainer = attempt.allocate(nodeType(locality), node, key, container);
    if (rmContainer == null) {
      return false;
    }
    node.allocateContainer(rmContainer);
    if (engineId != null) {
      engineIds.put(id, engineId);
    } else {
      deltas.appChanged(attempt.getApplicationId().toString());
    }
    deltas.launched(YarnRecords.containerRecord(rmContainer, engineId, am));
    return true;
  }

  /** The built-in FIFO for one heartbeat (FifoFallback's rules), when Python cannot decide; under the write lock. */
  void fifo(FiCaSchedulerNode node) {
    if (!Resources.fitsIn(minimumAllocation, node.getUnallocatedResource())) {
      return;
    }
    List<FifoFallback.App<SlotwiseAppAttempt>> apps = new ArrayList<>();
    for (Map.Entry<ApplicationId, SchedulerApplication<SlotwiseAppAttempt>> e
        : applications.entrySet()) {
      SlotwiseAppAttempt attempt = e.getValue().getCurrentAppAttempt();
      if (attempt != null && !attempt.isStopped()) {
        apps.add(new FifoFallback.App<>(attempt, e.getKey().toString(), SlotwiseScheduler.priorityOf(e.getValue()),
            submitTime.applyAsLong(e.getKey())));
      }
    }
    for (FifoFallback.App<SlotwiseAppAttempt> app : FifoFallback.order(apps)) {
      SlotwiseAppAttempt attempt = app.attempt();
      if (SchedulerAppUtils.isPlaceBlacklisted(attempt, node, LOG)) {
        continue;
      }
      for (SchedulerRequestKey key : FifoFallback.byRequestPriority(
          attempt.getSchedulerKeys(), k -> k.getPriority().getPriority())) {
        if (attempt.getOutstandingAsksCount(key, ResourceRequest.ANY) <= 0) {
          continue;
        }
        int assigned = 0;
        while (true) {
          Messages.Locality loc = locality(attempt, key, node, null);
          Resource capability =
              attempt.getPendingAsk(key, ResourceRequest.ANY).getPerAllocationResource();
          if (loc == null || !Resources.fitsIn(capability, node.getUnallocatedResource())
              || !allocateOne(attempt, node, key, loc, null)) {
            break;
          }
          assigned++;
        }
        if (assigned == 0) {
          break; // as FifoScheduler: an app's requests are served in priority order
        }
      }
      if (!Resources.fitsIn(minimumAllocation, node.getUnallocatedResource())) {
        break;
      }
    }
  }
}
