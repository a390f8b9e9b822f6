package org.slotwise.shim;

import java.io.IOException;
import java.util.*;
import java.util.concurrent.*;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.thirdparty.com.google.common.util.concurrent.SettableFuture;
import org.apache.hadoop.yarn.api.protocolrecords.MoveApplicationAcrossQueuesRequest;
import org.apache.hadoop.yarn.api.protocolrecords.UpdateApplicationPriorityRequest;
import org.apache.hadoop.yarn.api.records.*;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.exceptions.YarnException;
import org.apache.hadoop.yarn.proto.YarnServiceProtos.SchedulerResourceTypes;
import org.apache.hadoop.yarn.server.resourcemanager.RMContext;
import org.apache.hadoop.yarn.server.resourcemanager.recovery.RMStateStore.RMState;
import org.apache.hadoop.yarn.server.resourcemanager.recovery.records.ApplicationStateData;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.*;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.attempt.*;
import org.apache.hadoop.yarn.server.resourcemanager.rmcontainer.*;
import org.apache.hadoop.yarn.server.resourcemanager.rmnode.RMNode;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.*;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.common.fica.FiCaSchedulerNode;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.event.*;
import org.apache.hadoop.yarn.server.scheduler.SchedulerRequestKey;
import org.apache.hadoop.yarn.server.utils.BuilderUtils;
import org.apache.hadoop.yarn.util.resource.*;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slotwise.shim.PolicyLink.Deltas;

/**
 * A YARN ResourceScheduler whose policy runs in Python (docs/shim.md). YARN's
 * bookkeeping (apps, attempts, nodes, containers, metrics) is done here the
 * way FifoScheduler does it; the decisions (which container goes where, which
 * queue an app joins, what to preempt, which app to move) come from Python.
 * When Python cannot answer in time, a built-in FIFO schedules the heartbeat.
 *
 * <p>One heartbeat, top to bottom in {@link #scheduleNodes}: take the line,
 * build the Payload ({@link #payload}), send it, carry out the answer ({@link
 * #applyHeartbeat}, each assignment checked by Hadoop's own locality rule,
 * {@link #tryAssign}) or the FIFO's choice ({@link #fifo}). The write lock
 * guards every change of scheduler state; no call to Python is made under it.
 */
public class SlotwiseScheduler extends AbstractYarnScheduler<SlotwiseAppAttempt, FiCaSchedulerNode>
    implements ShimRuntime.Master {
  /** How often an update carries every app's truth for Python to check (ms). */
  public static final String CHECK_INTERVAL_MS = "slotwise.check.interval-ms";
  public static final String CALL_OBSERVER = "slotwise.call-observer.class";
  /** Whether node heartbeats hand their node to one scheduling thread instead of waiting on Python. */
  public static final String ASYNC = "slotwise.scheduling.async";
  /** With async scheduling, at most this many nodes go to Python in one call. */
  public static final String MAX_NODES_PER_CALL = "slotwise.scheduling.max-nodes-per-call";
  /** Whether SchedulerInfoFilter answers the RM's scheduler views. */
  public static final String SCHEDULER_INFO = "slotwise.rest.scheduler-info";
  public static final long DEFAULT_TIMEOUT_MS = 200;
  /** The FairScheduler's switch, told to Python at registration (Hadoop's default: off). */
  public static final String PREEMPTION = "yarn.scheduler.fair.preemption";

  private static final Logger LOG = LoggerFactory.getLogger(SlotwiseScheduler.class);
  private static final String DEFAULT_QUEUE = SlotwiseQueue.ROOT + ".default";

  private final ResourceCalculator calculator = new DominantResourceCalculator();
  private final Deltas deltas = new Deltas();
  private final Map<String, SlotwiseQueue> queues = new ConcurrentHashMap<>();
  /** Python's id for each live container it placed. */
  private final Map<ContainerId, String> engineIds = new ConcurrentHashMap<>();
  /** Moves Python orders run here: YARN's move path waits for the state store and for Python. */
  private final ExecutorService mover = Executors.newSingleThreadExecutor(r -> {
    Thread t = new Thread(r, "slotwise-moves");
    t.setDaemon(true);
    return t;
  });

  private boolean usePortForNodeName;
  private Resource increment; // the FairScheduler's increment allocation (1,024 MB by default)
  private SlotwiseQueue root;
  private ShimRuntime runtime;
  private PolicyLink link;
  private long checkIntervalMs;
  private long lastCheck;
  private NodeBatcher<NodeId> batcher; // null: each heartbeat calls Python itself
  private Thread scheduling; // with async scheduling: takes the batcher's nodes to Python

  public SlotwiseScheduler() {
    super(SlotwiseScheduler.class.getName());
  }

  @Override
  public void serviceInit(Configuration conf) throws Exception {
    applications = new ConcurrentHashMap<>();
    minimumAllocation = super.getMinimumAllocation();
    increment = new org.apache.hadoop.yarn.server.resourcemanager.scheduler.fair.FairSchedulerConfiguration(conf)
        .getIncrementAllocation();
    initMaximumResourceCapability(super.getMaximumAllocation());
    usePortForNodeName = conf.getBoolean(YarnConfiguration.RM_SCHEDULER_INCLUDE_PORT_IN_NODE_NAME,
        YarnConfiguration.DEFAULT_RM_SCHEDULER_USE_PORT_FOR_NODE_NAME);
    root = queue(SlotwiseQueue.ROOT); // others come with Python's queue table or an app
    Class<? extends PolicyLink.CallObserver> observer =
        conf.getClass(CALL_OBSERVER, null, PolicyLink.CallObserver.class);
    runtime = new ShimRuntime(conf::get, Messages.Kind.YARN, () -> conf.getBoolean(PREEMPTION, false),
        DEFAULT_TIMEOUT_MS, deltas::requireFull,
        observer == null ? null : observer.getDeclaredConstructor().newInstance(), this);
    link = runtime.link();
    updateInterval = runtime.updateInterval(); // AbstractYarnScheduler's update thread runs update() so often
    checkIntervalMs = conf.getLong(CHECK_INTERVAL_MS, 5000);
    if (conf.getBoolean(ASYNC, true)) {
      batcher = new NodeBatcher<>(conf.getInt(MAX_NODES_PER_CALL, 100));
    }
    // The RM's web server (started after this) reads its filters from this same configuration.
    if (conf.getBoolean(SCHEDULER_INFO, true)) {
      SchedulerInfoFilter.install(conf);
    }
    super.serviceInit(conf);
  }

  @Override
  public void serviceStart() throws Exception {
    super.serviceStart();
    if (batcher != null) {
      scheduling = new Thread(this::schedulingLoop, "slotwise-scheduling");
      scheduling.setDaemon(true);
      scheduling.start();
    }
    runtime.start(getConfig().get("hadoop.tmp.dir", System.getProperty("java.io.tmpdir")));
  }

  @Override
  public void serviceStop() throws Exception {
    if (runtime != null) {
      runtime.stop();
    }
    if (scheduling != null) {
      scheduling.interrupt();
      scheduling.join(5000);
    }
    mover.shutdownNow();
    super.serviceStop();
  }

  @Override
  public void setRMContext(RMContext context) {
    this.rmContext = context;
  }

  @Override
  public void recover(RMState state) { } // apps and containers come back through APP_ADDED and NODE_ADDED

  public ShimRuntime runtime() {
    return runtime;
  }

  /** A policy registered: its first calls at once on the update thread. */
  @Override
  public void registered() {
    triggerUpdate();
  }

  /** Every scheduler event; a bug here must not take the RM down with it. */
  @Override
  public void handle(SchedulerEvent event) {
    try {
      switch (event.getType()) {
        case NODE_ADDED -> addNode((NodeAddedSchedulerEvent) event);
        case NODE_REMOVED -> removeNode(((NodeRemovedSchedulerEvent) event).getRemovedRMNode());
        case NODE_UPDATE -> nodeUpdate(((NodeUpdateSchedulerEvent) event).getRMNode());
        case NODE_RESOURCE_UPDATE -> {
          NodeResourceUpdateSchedulerEvent e = (NodeResourceUpdateSchedulerEvent) event;
          updateNodeResource(e.getRMNode(), e.getResourceOption());
        }
        case APP_ADDED -> addApplication((AppAddedSchedulerEvent) event);
        case APP_REMOVED -> removeApplication((AppRemovedSchedulerEvent) event);
        case APP_ATTEMPT_ADDED -> addAttempt((AppAttemptAddedSchedulerEvent) event);
        case APP_ATTEMPT_REMOVED -> removeAttempt((AppAttemptRemovedSchedulerEvent) event);
        case CONTAINER_EXPIRED -> {
          ContainerId id = ((ContainerExpiredSchedulerEvent) event).getContainerId();
          completedContainer(getRMContainer(id),
              SchedulerUtils.createAbnormalContainerStatus(id, SchedulerUtils.EXPIRED_CONTAINER),
              RMContainerEventType.EXPIRE);
        }
        case RELEASE_CONTAINER -> {
          RMContainer c = ((ReleaseContainerEvent) event).getContainer();
          completedContainer(c, SchedulerUtils.createAbnormalContainerStatus(c.getContainerId(),
              SchedulerUtils.RELEASED_CONTAINER), RMContainerEventType.RELEASED);
        }
        case MARK_CONTAINER_FOR_PREEMPTION, MARK_CONTAINER_FOR_NONKILLABLE -> {
          ContainerPreemptEvent e = (ContainerPreemptEvent) event;
          SlotwiseAppAttempt attempt = getApplicationAttempt(e.getAppId());
          if (attempt != null) {
            attempt.warnPreemption(e.getContainer().getContainerId(),
                event.getType() == SchedulerEventType.MARK_CONTAINER_FOR_PREEMPTION);
          }
        }
        case MARK_CONTAINER_FOR_KILLABLE -> killPreempted(((ContainerPreemptEvent) event).getContainer());
        // Reservations, node labels and attributes, CapacityScheduler queue management: none here.
        default -> LOG.debug("Slotwise: ignoring {}", event.getType());
      }
    } catch (Exception e) {
      LOG.error("Slotwise: error while handling {}", event.getType(), e);
    }
  }

  /** Runs {@code r} under the scheduler's write lock, then brings the root queue's room up to date. */
  private void locked(Runnable r) {
    writeLock.lock();
    try {
      r.run();
      root.getMetrics().setAvailableResourcesToQueue(headroom());
    } finally {
      writeLock.unlock();
    }
  }

  /** What the cluster has left (none rather than a negative amount). */
  private Resource headroom() {
    return Resources.componentwiseMax(Resources.none(),
        Resources.subtract(getClusterResource(), root.getMetrics().getAllocatedResources()));
  }

  private void addNode(NodeAddedSchedulerEvent e) {
    RMNode nm = e.getAddedRMNode();
    locked(() -> {
      FiCaSchedulerNode node = new FiCaSchedulerNode(nm, usePortForNodeName);
      nodeTracker.addNode(node);
      deltas.nodeChanged(nodeRecord(node));
      recoverContainersOnNode(e.getContainerReports(), nm);
      for (RMContainer c : node.getCopiedListOfRunningContainers()) {
        deltas.launched(containerRecord(c, null, c.isAMContainer()));
      }
    });
    LOG.info("Slotwise: added node {} ({}); cluster {}", nm.getNodeID(), nm.getTotalCapability(), getClusterResource());
  }

  private void removeNode(RMNode nm) {
    locked(() -> {
      FiCaSchedulerNode node = nodeTracker.getNode(nm.getNodeID());
      if (node != null) {
        for (RMContainer c : node.getCopiedListOfRunningContainers()) {
          completedContainer(c, SchedulerUtils.createAbnormalContainerStatus(c.getContainerId(),
              SchedulerUtils.LOST_CONTAINER), RMContainerEventType.KILL);
        }
        nodeTracker.removeNode(nm.getNodeID());
        deltas.nodeRemoved(nm.getNodeID().toString());
        if (batcher != null) {
          batcher.remove(nm.getNodeID());
        }
        LOG.info("Slotwise: removed node {}; cluster {}", nm.getNodeID(), getClusterResource());
      }
    });
  }

  @Override
  public void updateNodeResource(RMNode nm, ResourceOption option) {
    locked(() -> {
      super.updateNodeResource(nm, option);
      FiCaSchedulerNode node = nodeTracker.getNode(nm.getNodeID());
      if (node != null) {
        deltas.nodeChanged(nodeRecord(node));
      }
    });
  }

  /** YARN's bookkeeping; then the node goes to the scheduling thread (async, warm policy) or calls itself. */
  @Override
  protected void nodeUpdate(RMNode nm) {
    locked(() -> super.nodeUpdate(nm));
    FiCaSchedulerNode node = nodeTracker.getNode(nm.getNodeID());
    if (node == null || (rmContext.isWorkPreservingRecoveryEnabled()
        && !rmContext.isSchedulerReadyForAllocatingContainers())) {
      return;
    }
    link.heartbeat();
    if (batcher != null && link.hasPolicy() && !link.isCold()) {
      if (Resources.fitsIn(minimumAllocation, node.getUnallocatedResource())) {
        batcher.offer(node.getNodeID());
      }
      return;
    }
    scheduleNodes(List.of(node));
  }

  /** With async scheduling, {calls, nodes in them} since the start; null without. */
  protected long[] schedulingCounts() {
    return batcher == null ? null : batcher.counts();
  }

  /** The scheduling thread: the nodes that heartbeated with room since its last call, in one call. */
  private void schedulingLoop() {
    while (!Thread.currentThread().isInterrupted()) {
      List<FiCaSchedulerNode> nodes = new ArrayList<>();
      try {
        for (NodeId id : batcher.take()) {
          FiCaSchedulerNode n = nodeTracker.getNode(id);
          if (n != null) {
            nodes.add(n);
          }
        }
        if (!nodes.isEmpty()) {
          scheduleNodes(nodes);
        }
      } catch (InterruptedException e) {
        return;
      } catch (Throwable t) { // the thread goes on: a bug must not stop the RM's scheduling
        LOG.error("Slotwise: error while scheduling {} node(s)", nodes.size(), t);
      }
    }
  }

  /** One call to Python for these nodes, or the FIFO on each if it fails or a new policy still warms up. */
  private void scheduleNodes(Collection<FiCaSchedulerNode> nodes) {
    boolean answered = false;
    if (!(link.hasPolicy() && link.isCold())) {
      try {
        answered = call("heartbeat", link.getTimeoutMs(), nodes, false);
      } catch (RuntimeException e) {
        LOG.error("Slotwise: error while scheduling {} node(s) by Python's answer", nodes.size(), e);
        deltas.requireFull();
      }
    }
    if (!answered) {
      locked(() -> {
        for (FiCaSchedulerNode node : nodes) {
          link.fallbackHeartbeat();
          if (nodeTracker.exists(node.getNodeID())) {
            fifo(node);
          }
        }
      });
    }
  }

  /** One call on the line with these nodes' beats (and with {@code check} the truth); false if it failed. */
  private boolean call(String what, long deadlineMs, Collection<FiCaSchedulerNode> nodes, boolean check) {
    try (PolicyLink.Turn turn = link.turn(what, deadlineMs)) {
      Messages.HeartbeatAnswer answer = turn == null ? null
          : turn.send(payload(nodes, check), Messages.HeartbeatAnswer.class);
      if (answer != null) {
        applyHeartbeat(answer);
      }
      return answer != null;
    }
  }

  private void applyHeartbeat(Messages.HeartbeatAnswer answer) {
    locked(() -> {
      assign(answer.assign());
      applyPreemptions(answer.preempt());
      if (answer.resync()) {
        deltas.requireFull();
      }
    });
  }

  /** Python's assignments checked and allocated; a refused one goes back with its app, whose ask Python took. */
  private void assign(List<Messages.Assignment> assignments) {
    for (Messages.Assignment a : assignments) {
      Messages.Reason refused;
      try {
        refused = tryAssign(a);
      } catch (RuntimeException e) {
        refused = Messages.Reason.ERROR;
        LOG.warn("Slotwise: error while allocating {}", a.engineId(), e);
      }
      if (refused != null) {
        deltas.rejected(a.engineId(), refused);
        deltas.appChanged(a.app());
        LOG.info("Slotwise: refused assignment {} of {} at priority {} on {} ({}): {}", a.engineId(), a.app(),
            a.priority(), a.node(), a.locality(), refused);
      }
    }
  }

  /** One assignment carried out (null), or why not. A malformed id throws: an error, in assign. */
  private Messages.Reason tryAssign(Messages.Assignment a) {
    SlotwiseAppAttempt attempt = liveAttempt(applications.get(ApplicationId.fromString(a.app())));
    FiCaSchedulerNode node = nodeTracker.getNode(NodeId.fromString(a.node()));
    if (attempt == null) {
      return Messages.Reason.NO_ATTEMPT;
    } else if (node == null) {
      return Messages.Reason.NO_NODE;
    } else if (SchedulerAppUtils.isPlaceBlacklisted(attempt, node, LOG)) {
      return Messages.Reason.BLACKLISTED;
    }
    for (SchedulerRequestKey key : attempt.getSchedulerKeys()) {
      if (key.getPriority().getPriority() == a.priority()
          && a.locality() == locality(attempt, key, node, a.locality())) {
        return allocateOne(attempt, node, key, a.locality(), a.engineId());
      }
    }
    return Messages.Reason.LOCALITY; // no outstanding request at that priority allows that locality
  }

  private static SlotwiseAppAttempt liveAttempt(SchedulerApplication<SlotwiseAppAttempt> app) {
    SlotwiseAppAttempt attempt = app == null ? null : app.getCurrentAppAttempt();
    return attempt == null || attempt.isStopped() ? null : attempt;
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
      NodeType type = NodeType.valueOf(level.name()); // NODE_LOCAL, RACK_LOCAL, OFF_SWITCH
      if (asks.checkAllocation(type, node, key)
          && (type == NodeType.NODE_LOCAL || asks.canDelayTo(key, node.getRackName()))
          && (type != NodeType.OFF_SWITCH || asks.canDelayTo(key, ResourceRequest.ANY))) {
        return level;
      }
    }
    return null;
  }

  /** One container at a checked locality, if it fits (null), or why not; one the FIFO placed re-sends its app. */
  private Messages.Reason allocateOne(SlotwiseAppAttempt attempt, FiCaSchedulerNode node,
      SchedulerRequestKey key, Messages.Locality locality, String engineId) {
    Resource size = attempt.getPendingAsk(key, ResourceRequest.ANY).getPerAllocationResource();
    if (!Resources.fitsIn(size, node.getUnallocatedResource())) {
      return Messages.Reason.NO_ROOM;
    }
    boolean am = attempt.isWaitingForAMContainer();
    ContainerId id = BuilderUtils.newContainerId(attempt.getApplicationAttemptId(), attempt.getNewContainerId());
    Container container = BuilderUtils.newContainer(id, node.getNodeID(), node.getRMNode().getHttpAddress(), size,
        key.getPriority(), null, key.getAllocationRequestId());
    RMContainer rmContainer = attempt.allocate(NodeType.valueOf(locality.name()), node, key, container);
    if (rmContainer == null) {
      return Messages.Reason.ERROR;
    }
    node.allocateContainer(rmContainer);
    if (engineId != null) {
      engineIds.put(id, engineId);
    } else {
      deltas.appChanged(attempt.getApplicationId().toString());
    }
    deltas.launched(containerRecord(rmContainer, engineId, am));
    return null;
  }

  /** The built-in FIFO for one node (FifoFallback's rules), when Python cannot decide. */
  private void fifo(FiCaSchedulerNode node) {
    List<FifoFallback.App<SlotwiseAppAttempt>> apps = new ArrayList<>();
    applications.forEach((id, app) -> {
      SlotwiseAppAttempt attempt = liveAttempt(app);
      if (attempt != null) {
        apps.add(new FifoFallback.App<>(attempt, id.toString(), app.getPriority().getPriority(), submitTime(id)));
      }
    });
    for (FifoFallback.App<SlotwiseAppAttempt> app : FifoFallback.order(apps)) {
      SlotwiseAppAttempt attempt = app.attempt();
      if (!Resources.fitsIn(minimumAllocation, node.getUnallocatedResource())) {
        break;
      } else if (SchedulerAppUtils.isPlaceBlacklisted(attempt, node, LOG)) {
        continue;
      }
      for (SchedulerRequestKey key : attempt.getSchedulerKeys()) { // lower priority number first
        if (attempt.getOutstandingAsksCount(key, ResourceRequest.ANY) <= 0) {
          continue;
        }
        int assigned = 0;
        Messages.Locality loc;
        while ((loc = locality(attempt, key, node, null)) != null
            && allocateOne(attempt, node, key, loc, null) == null) {
          assigned++;
        }
        if (assigned == 0) {
          break; // as FifoScheduler: an app's requests are served in priority order
        }
      }
    }
  }

  /**
   * What Python has not seen, on the line as a heartbeat with no beats (with
   * the truth each check interval); then the pass on the update line, which
   * carries no deltas (PolicyLink: why). The first after a registration is full.
   */
  @Override
  public void update() {
    try {
      if (!link.hasPolicy()) {
        return;
      }
      long now = System.currentTimeMillis();
      boolean check = now - lastCheck >= checkIntervalMs;
      if (check) {
        lastCheck = now;
      }
      if (!call(PolicyLink.DELTAS, link.isCold() ? Math.max(link.getTimeoutMs(), PolicyLink.WARMUP_MS)
          : link.getTimeoutMs(), List.of(), check)) {
        return;
      }
      try (PolicyLink.Turn turn = link.updateTurn()) {
        Messages.UpdateAnswer answer = turn == null ? null
            : turn.send("{\"now_ms\": " + now + "}", Messages.UpdateAnswer.class);
        if (answer != null) {
          applyUpdate(answer);
        }
      }
    } catch (Throwable t) {
      LOG.error("Slotwise: periodic update failed", t);
    }
  }

  private void applyUpdate(Messages.UpdateAnswer answer) {
    locked(() -> {
      applyPreemptions(answer.preempt());
      // The rows that changed (all when queuesFull), by the full names of Python's tree; queues it dropped go.
      Set<String> gone = new HashSet<>(answer.queuesFull() ? queues.keySet() : Set.of());
      for (Messages.QueueRow row : answer.queues()) {
        queue(row.name()).row = row;
        gone.remove(row.name());
      }
      gone.addAll(answer.queuesRemoved());
      forgetQueues(gone);
      if (answer.resync()) {
        deltas.requireFull();
        LOG.warn("Slotwise: Python found its view of the cluster different from the RM's; sending the full state");
      }
    });
    for (Messages.MoveOrder m : answer.move()) {
      mover.execute(() -> {
        Messages.MoveAnswer done = adminMove(m.app(), m.queue());
        LOG.info("Slotwise: moving {} to {} for Python ({}): {}", m.app(), m.queue(), m.reason(),
            done.error() == null ? "done" : done.error());
      });
    }
  }

  private void addApplication(AppAddedSchedulerEvent e) {
    ApplicationId id = e.getApplicationId();
    String user = e.getUser();
    Priority priority = e.getApplicatonPriority() == null ? Priority.newInstance(0) : e.getApplicatonPriority();
    String requested = e.getQueue() == null || e.getQueue().isEmpty() ? "default" : e.getQueue();
    // A name no queue can have (the protocol's bound) is refused as Python would, without asking it.
    String tooLong = SlotwiseQueue.tooLong(requested);
    String why = e.getIsAppRecovering() || tooLong == null ? null : "Rejected by Slotwise: " + tooLong;
    String target = SlotwiseQueue.qualify(requested); // without Python's answer: the one asked for
    if (!e.getIsAppRecovering() && why == null) {
      try (PolicyLink.Turn turn = link.turn("place")) {
        Messages.PlaceAnswer answer = turn == null ? null : turn.send(PolicyLink.write(new Messages.PlaceRequest(
            id.toString(), user, requested, UserGroupInformation.createRemoteUser(user).getGroups(),
            priority.getPriority())), Messages.PlaceAnswer.class);
        target = answer == null ? target : answer.queue(); // a full name, or (null) a rejection
        why = answer == null || answer.reject() == null ? null : "Rejected by the Slotwise policy: " + answer.reject();
      }
    }
    if (why != null) {
      LOG.info("Slotwise: {}: {}", id, why);
      rmContext.getDispatcher().getEventHandler().handle(new RMAppEvent(id, RMAppEventType.APP_REJECTED, why));
      return;
    }
    String queueName = target == null ? DEFAULT_QUEUE : target;
    locked(() -> {
      SlotwiseQueue q = queue(queueName);
      SchedulerApplication<SlotwiseAppAttempt> app = new SchedulerApplication<>(q, user, priority, e.isUnmanagedAM());
      applications.put(id, app);
      q.getMetrics().submitApp(user, e.isUnmanagedAM());
      RMApp rmApp = rmContext.getRMApps().get(id); // the RMApp that sent APP_ADDED
      rmApp.setQueue(queueName);
      rmApp.getApplicationSubmissionContext().setQueue(queueName);
      if (!e.getIsAppRecovering() && !queueName.equals(SlotwiseQueue.qualify(requested))) {
        store(rmApp, null); // a restarted RM recovers it where Python placed it
      }
      deltas.appChanged(id.toString());
    });
    LOG.info("Slotwise: accepted {} from {} into {}", id, user, queueName);
    if (!e.getIsAppRecovering()) {
      rmContext.getDispatcher().getEventHandler().handle(new RMAppEvent(id, RMAppEventType.APP_ACCEPTED));
    }
  }

  private void removeApplication(AppRemovedSchedulerEvent e) {
    ApplicationId id = e.getApplicationID();
    Messages.FinalState end = finalState(e.getFinalState(), rmContext.getRMApps().get(id));
    locked(() -> {
      SchedulerApplication<SlotwiseAppAttempt> app = applications.remove(id);
      if (app != null) { // else it was rejected
        app.getQueue().getAbstractUsersManager().deactivateApplication(app.getUser(), id);
        app.stop(e.getFinalState());
        deltas.appRemoved(id.toString(), end);
      }
    });
  }

  /** An attempt of an app this scheduler accepted: RMAppImpl makes attempts only once APP_ACCEPTED came back. */
  private void addAttempt(AppAttemptAddedSchedulerEvent e) {
    ApplicationAttemptId attemptId = e.getApplicationAttemptId();
    SchedulerApplication<SlotwiseAppAttempt> app = applications.get(attemptId.getApplicationId());
    locked(() -> {
      SlotwiseAppAttempt attempt = new SlotwiseAppAttempt(attemptId, app.getUser(),
          (SlotwiseQueue) app.getQueue(), rmContext);
      attempt.setPriority(app.getPriority());
      if (e.getTransferStateFromPreviousAttempt() && app.getCurrentAppAttempt() != null) {
        attempt.transferStateFromPreviousAttempt(app.getCurrentAppAttempt());
      }
      app.setCurrentAppAttempt(attempt);
      app.getQueue().getMetrics().submitAppAttempt(app.getUser(), app.isUnmanagedAM());
      deltas.appChanged(attemptId.getApplicationId().toString());
    });
    if (!e.getIsAttemptRecovering()) {
      rmContext.getDispatcher().getEventHandler().handle(
          new RMAppAttemptEvent(attemptId, RMAppAttemptEventType.ATTEMPT_ADDED));
    }
  }

  private void removeAttempt(AppAttemptRemovedSchedulerEvent e) {
    SlotwiseAppAttempt attempt = getApplicationAttempt(e.getApplicationAttemptID());
    if (attempt == null) {
      LOG.warn("Slotwise: unknown attempt {} has completed", e.getApplicationAttemptID());
      return;
    }
    locked(() -> {
      for (RMContainer c : attempt.getLiveContainers()) {
        // A work-preserving AM restart keeps the running ones.
        if (!e.getKeepContainersAcrossAppAttempts() || c.getState() != RMContainerState.RUNNING) {
          completedContainer(c, SchedulerUtils.createAbnormalContainerStatus(
              c.getContainerId(), SchedulerUtils.COMPLETED_APPLICATION), RMContainerEventType.KILL);
        }
      }
      attempt.stop(e.getFinalAttemptState());
      deltas.appChanged(attempt.getApplicationId().toString());
    });
  }

  /** Asks round up as the FairScheduler rounds them, so a cluster runs the containers it ran under it. */
  @Override
  public Resource getNormalizedResource(Resource ask, Resource max) {
    return SchedulerUtils.getNormalizedResource(ask, calculator, getMinimumResourceCapability(), max, increment);
  }

  /** The AM's path: new asks, releases and blacklist; takes new containers. */
  @Override
  public Allocation allocate(ApplicationAttemptId attemptId, List<ResourceRequest> ask,
      List<SchedulingRequest> schedulingRequests, List<ContainerId> release,
      List<String> blacklistAdditions, List<String> blacklistRemovals,
      ContainerUpdates updateRequests) {
    SlotwiseAppAttempt app = getApplicationAttempt(attemptId);
    if (app == null || !app.getApplicationAttemptId().equals(attemptId)) {
      LOG.error("Slotwise: allocate from a removed or unknown attempt {}", attemptId);
      return EMPTY_ALLOCATION;
    }
    normalizeResourceRequests(ask);
    releaseContainers(release, app);
    app.getWriteLock().lock();
    try {
      if (app.isStopped()) {
        return EMPTY_ALLOCATION;
      }
      app.updateResourceRequests(ask); // none: nothing changes
      app.updateBlacklist(blacklistAdditions, blacklistRemovals);
    } finally {
      app.getWriteLock().unlock();
    }
    if (!ask.isEmpty()) {
      deltas.appChanged(attemptId.getApplicationId().toString()); // after: read when sent
    }
    Resource headroom = headroom();
    app.setHeadroom(headroom);
    app.setApplicationHeadroomForMetrics(headroom);
    Set<ContainerId> warned = app.getWarnedContainers();
    return new Allocation(app.pullNewlyAllocatedContainers(), headroom,
        warned.isEmpty() ? null : warned, null, null, app.pullUpdatedNMTokens());
  }

  @Override
  public void preValidateMoveApplication(ApplicationId appId, String newQueue) throws YarnException {
    SchedulerApplication<SlotwiseAppAttempt> app = applications.get(appId);
    String tooLong = SlotwiseQueue.tooLong(newQueue);
    if (app == null) {
      throw new YarnException("App to be moved " + appId + " not found.");
    } else if (SlotwiseQueue.qualify(newQueue) == null) {
      throw new YarnException(tooLong != null ? "Invalid queue name: " + tooLong
          : "Invalid queue name '" + newQueue + "'");
    } else if (app.getCurrentAppAttempt() != null && app.getCurrentAppAttempt().isStopped()) {
      throw new YarnException("Application " + appId + " is stopped and can't be moved!");
    } else if (!link.hasPolicy()) {
      throw new YarnException("Cannot move " + appId + ": no Slotwise policy is registered");
    }
  }

  /** A move as the RM's client service makes it (state store, RMApp, then this scheduler; an absent app refused). */
  @Override
  public Messages.MoveAnswer adminMove(String appId, String queue) {
    try {
      ApplicationId id = ApplicationId.fromString(appId);
      rmContext.getClientRMService().moveApplicationAcrossQueues(
          MoveApplicationAcrossQueuesRequest.newInstance(id, queue));
      return new Messages.MoveAnswer(rmContext.getRMApps().get(id).getQueue(), null);
    } catch (Exception e) {
      return new Messages.MoveAnswer(null, e.getMessage() == null ? e.toString() : e.getMessage());
    }
  }

  /** A priority change as the RM's client service makes it; the one in force, capped. */
  @Override
  public Messages.PriorityAnswer adminPriority(String appId, int priority) {
    try {
      return new Messages.PriorityAnswer(rmContext.getClientRMService().updateApplicationPriority(
          UpdateApplicationPriorityRequest.newInstance(ApplicationId.fromString(appId),
              Priority.newInstance(priority))).getApplicationPriority().getPriority(), null);
    } catch (Exception e) {
      return new Messages.PriorityAnswer(null, e.getMessage() == null ? e.toString() : e.getMessage());
    }
  }

  /** Python decides (and may rename) the target queue; then the app moves. */
  @Override
  public String moveApplication(ApplicationId appId, String newQueue) throws YarnException {
    Messages.MoveAnswer answer;
    try (PolicyLink.Turn turn = link.turn("move")) {
      answer = turn == null ? null : turn.send(PolicyLink.write(new Messages.MoveRequest(appId.toString(),
          newQueue)), Messages.MoveAnswer.class);
    }
    if (answer == null || answer.error() != null) {
      throw new YarnException("Cannot move " + appId + " to " + newQueue + ": " + (answer == null
          ? "the Slotwise policy did not answer (" + link.getLastFailure() + ")" : answer.error()));
    }
    String target = answer.queue(); // a full name
    writeLock.lock();
    try {
      SchedulerApplication<SlotwiseAppAttempt> app = applications.get(appId);
      SlotwiseAppAttempt attempt = app == null ? null : app.getCurrentAppAttempt();
      if (app == null || (attempt != null && attempt.isStopped())) {
        throw new YarnException("Application " + appId + " is gone or stopped and can't be moved");
      }
      SlotwiseQueue to = queue(target);
      if (app.getQueue() != to) {
        if (attempt != null) {
          attempt.move(to); // live containers, pending asks, metrics, users
        }
        app.setQueue(to);
        deltas.appChanged(appId.toString());
        LOG.info("Slotwise: moved {} to {}", appId, target);
      }
      return target;
    } finally {
      writeLock.unlock();
    }
  }

  @Override
  public Priority checkAndGetApplicationPriority(Priority requested, UserGroupInformation user,
      String queuePath, ApplicationId applicationId) {
    int cap = getMaxClusterLevelAppPriority().getPriority(); // read by AbstractYarnScheduler's serviceInit
    return Priority.newInstance(Math.min(requested == null ? 0 : requested.getPriority(), cap));
  }

  @Override
  public Priority updateApplicationPriority(Priority newPriority, ApplicationId appId,
      SettableFuture<Object> future, UserGroupInformation user) throws YarnException {
    SchedulerApplication<SlotwiseAppAttempt> app = applications.get(appId);
    RMApp rmApp = rmContext.getRMApps().get(appId);
    if (app == null || rmApp == null) {
      throw new YarnException("Application '" + appId + "' is not present, hence could not change priority.");
    }
    Priority p = checkAndGetApplicationPriority(newPriority, user, rmApp.getQueue(), appId);
    if (p.equals(app.getPriority())) {
      future.set(null);
      return p;
    }
    rmApp.getApplicationSubmissionContext().setPriority(p);
    store(rmApp, future);
    locked(() -> {
      app.setPriority(p);
      if (app.getCurrentAppAttempt() != null) {
        app.getCurrentAppAttempt().setPriority(p);
      }
      deltas.appChanged(appId.toString());
    });
    LOG.info("Slotwise: priority of {} is now {}", appId, p.getPriority());
    return p;
  }

  /** The app's submission context (queue, priority) into the state store, for a restart; {@code future}: wait. */
  private void store(RMApp rmApp, SettableFuture<Object> future) {
    ApplicationStateData state = ApplicationStateData.newInstance(rmApp.getSubmitTime(),
        rmApp.getStartTime(), rmApp.getApplicationSubmissionContext(), rmApp.getUser(),
        rmApp.getCallerContext());
    state.setApplicationTimeouts(rmApp.getApplicationTimeouts());
    state.setLaunchTime(rmApp.getLaunchTime());
    if (future == null) {
      rmContext.getStateStore().updateApplicationState(state);
    } else {
      rmContext.getStateStore().updateApplicationStateSynchronously(state, false, future);
    }
  }

  /** YARN puts the ask back when a container dies before the AM acquired it: Python must see it. */
  @Override
  public void completedContainer(RMContainer rmContainer, ContainerStatus status, RMContainerEventType event) {
    boolean askComesBack = rmContainer != null && rmContainer.getContainerRequest() != null;
    super.completedContainer(rmContainer, status, event);
    if (askComesBack) {
      deltas.appChanged(rmContainer.getApplicationAttemptId().getApplicationId().toString());
    }
  }

  @Override
  protected void completedContainerInternal(RMContainer rmContainer, ContainerStatus status,
      RMContainerEventType event) {
    locked(() -> {
      ContainerId id = rmContainer.getContainerId();
      SlotwiseAppAttempt attempt = getCurrentAttemptForContainer(id);
      if (attempt == null) {
        LOG.info("Slotwise: container {} of an unknown application finished ({})", id, event);
        return;
      }
      if (attempt.containerCompleted(rmContainer, status, event, rmContainer.getNodeLabelExpression())) {
        deltas.finished(id.toString());
      }
      FiCaSchedulerNode node = nodeTracker.getNode(rmContainer.getNodeId());
      if (node != null) { // else it was removed, its containers completed first
        node.releaseContainer(id, false);
      }
      engineIds.remove(id);
    });
  }

  @Override
  public void killContainer(RMContainer container) {
    completedContainer(container, SchedulerUtils.createKilledContainerStatus(
        container.getContainerId(), "Killed by RM to simulate an AM container failure"),
        RMContainerEventType.KILL);
  }

  private void killPreempted(RMContainer c) {
    LOG.info("Slotwise: preempting container {} of {}", c.getContainerId(), c.getApplicationAttemptId());
    completedContainer(c, SchedulerUtils.createPreemptedContainerStatus(
        c.getContainerId(), SchedulerUtils.PREEMPTED_CONTAINER), RMContainerEventType.KILL);
  }

  /** kill=true kills as preempted; kill=false warns the AM. Under the write lock. */
  private void applyPreemptions(List<Messages.Preemption> preemptions) {
    for (Messages.Preemption p : preemptions) {
      try {
        ContainerId id = ContainerId.fromString(p.container());
        RMContainer c = getRMContainer(id); // found through its app's current attempt
        if (c != null && p.kill()) {
          killPreempted(c);
        } else if (c != null) {
          getCurrentAttemptForContainer(id).warnPreemption(id, true);
        }
      } catch (RuntimeException e) {
        LOG.warn("Slotwise: cannot preempt {}: {}", p.container(), e.toString());
      }
    }
  }

  /**
   * The line's next Payload, built under its turn: {@code beating}'s room as
   * YARN counts it (a killed container holds its resources until the NM
   * reports it gone), and with {@code check} every app's truth.
   */
  private String payload(Collection<FiCaSchedulerNode> beating, boolean check) {
    readLock.lock();
    try {
      Deltas.Taken d = deltas.take();
      List<Messages.Node> nodes = d.full() ? new ArrayList<>() : d.nodes();
      List<Messages.Container> launched = d.full() ? new ArrayList<>() : d.launched();
      List<Messages.App> apps = new ArrayList<>();
      if (d.full()) {
        nodeTracker.getAllNodes().forEach(n -> nodes.add(nodeRecord(n)));
        applications.forEach((id, app) -> {
          apps.add(appRecord(id, app));
          SlotwiseAppAttempt attempt = app.getCurrentAppAttempt();
          for (RMContainer c : attempt == null ? List.<RMContainer>of() : attempt.getLiveContainers()) {
            launched.add(containerRecord(c, engineIds.get(c.getContainerId()), c.isAMContainer()));
          }
        });
      } else {
        for (String id : d.appsChanged()) {
          ApplicationId appId = ApplicationId.fromString(id);
          SchedulerApplication<SlotwiseAppAttempt> app = applications.get(appId);
          if (app != null) {
            apps.add(appRecord(appId, app));
          }
        }
      }
      List<Messages.AppCheck> truth = check ? new ArrayList<>() : null;
      if (check) {
        applications.forEach((id, app) -> truth.add(appCheck(id.toString(), app.getCurrentAppAttempt())));
      }
      List<Messages.Beat> beats = new ArrayList<>(beating.size());
      for (FiCaSchedulerNode n : beating) {
        beats.add(new Messages.Beat(n.getNodeID().toString(), res(n.getUnallocatedResource())));
      }
      return PolicyLink.write(d.payload(nodes, apps, launched, beats, link.episodesToReport(), truth));
    } finally {
      readLock.unlock();
    }
  }

  private Messages.App appRecord(ApplicationId id, SchedulerApplication<SlotwiseAppAttempt> app) {
    RMApp rmApp = rmContext.getRMApps().get(id);
    return new Messages.App(id.toString(), app.getUser(), rmApp == null ? null : rmApp.getName(),
        app.getQueue().getQueueName(), app.getPriority().getPriority(), submitTime(id), app.isUnmanagedAM(), null,
        asks(app.getCurrentAppAttempt()));
  }

  private long submitTime(ApplicationId id) {
    RMApp rmApp = rmContext.getRMApps().get(id);
    return rmApp == null ? id.getClusterTimestamp() : rmApp.getSubmitTime();
  }

  /** How an app ended: FAILED, KILLED; FINISHED as its AM reported it; else UNDEFINED (null: not said). */
  static Messages.FinalState finalState(RMAppState state, RMApp app) {
    FinalApplicationStatus s = app == null ? null : app.getFinalApplicationStatus();
    return state == null ? null : switch (state) {
      case FAILED -> Messages.FinalState.FAILED;
      case KILLED -> Messages.FinalState.KILLED;
      case FINISHED -> s == FinalApplicationStatus.SUCCEEDED ? Messages.FinalState.SUCCEEDED
          : s == FinalApplicationStatus.FAILED ? Messages.FinalState.FAILED
          : s == FinalApplicationStatus.KILLED ? Messages.FinalState.KILLED : Messages.FinalState.UNDEFINED;
      default -> Messages.FinalState.UNDEFINED;
    };
  }

  static Messages.Node nodeRecord(FiCaSchedulerNode n) {
    return new Messages.Node(n.getNodeID().toString(), n.getNodeName(), n.getRackName(), res(n.getTotalResource()));
  }

  static Messages.Container containerRecord(RMContainer c, String engineId, boolean am) {
    return new Messages.Container(c.getContainerId().toString(),
        c.getApplicationAttemptId().getApplicationId().toString(), c.getAllocatedNode().toString(),
        res(c.getAllocatedResource()), am, c.getAllocatedSchedulerKey().getPriority().getPriority(), engineId);
  }

  /** A YARN resource as the protocol's (Messages.Resource clamps a negative room to 0). */
  static Messages.Resource res(Resource r) {
    return new Messages.Resource(r.getMemorySize(), r.getVirtualCores(), 0, 0);
  }

  /** An attempt's outstanding asks as the RM holds them (none if stopped); Python groups them. */
  static List<Messages.Ask> asks(SlotwiseAppAttempt attempt) {
    List<Messages.Ask> out = new ArrayList<>();
    if (attempt != null && !attempt.isStopped()) {
      for (ResourceRequest r : attempt.getAppSchedulingInfo().getAllResourceRequests()) {
        out.add(new Messages.Ask(r.getPriority().getPriority(), r.getResourceName(), res(r.getCapability()),
            r.getNumContainers(), r.getRelaxLocality()));
      }
    }
    return out;
  }

  /** The RM's truth about one app: what it still asks for (YARN's own pending sum of its ANY asks) and holds. */
  static Messages.AppCheck appCheck(String id, SlotwiseAppAttempt attempt) {
    boolean live = attempt != null && !attempt.isStopped(); // stopping clears the asks, not the pending sum
    return new Messages.AppCheck(id, res(live ? attempt.getAppAttemptResourceUsage().getPending() : Resources.none()),
        res(attempt == null ? Resources.none() : attempt.getCurrentConsumption()),
        attempt == null ? 0 : attempt.getLiveContainers().size());
  }

  /** The queue of this full name, made (with its parents) on first use. */
  SlotwiseQueue queue(String fullName) {
    synchronized (queues) {
      SlotwiseQueue q = queues.get(fullName);
      if (q == null) {
        int dot = fullName.lastIndexOf('.');
        q = new SlotwiseQueue(fullName, dot < 0 ? null : queue(fullName.substring(0, dot)), getConfig(),
            this::getClusterResource);
        queues.put(fullName, q);
      }
      return q;
    }
  }

  /** Drops queues Python no longer has, deepest first; root, or one with an app or a child, stays. */
  private void forgetQueues(Set<String> gone) {
    if (gone.isEmpty()) {
      return;
    }
    Set<String> busy = new HashSet<>(); // their parents keep a child, so stay too
    applications.values().forEach(app -> busy.add(app.getQueue().getQueueName()));
    List<String> names = new ArrayList<>(gone);
    names.removeIf(name -> busy.contains(name) || name.indexOf('.') < 0);
    names.sort((a, b) -> Integer.compare(b.length(), a.length()));
    synchronized (queues) {
      for (String name : names) {
        SlotwiseQueue q = queues.get(name);
        if (q != null && q.children.isEmpty()) {
          queues.remove(name);
          queues.get(name.substring(0, name.lastIndexOf('.'))).children.remove(name);
        }
      }
    }
  }

  @Override
  public QueueInfo getQueueInfo(String queueName, boolean includeChildQueues, boolean recursive) throws IOException {
    String name = SlotwiseQueue.qualify(queueName);
    SlotwiseQueue q = name == null ? null : queues.get(name);
    if (q == null) {
      throw new IOException("queue " + queueName + " does not exist");
    }
    return q.getQueueInfo(includeChildQueues, recursive);
  }

  /** Access to queues is Python's business (place, move): YARN lets everyone in. */
  @Override
  public List<QueueUserACLInfo> getQueueUserAclInfo() {
    return root.getQueueUserAclInfo(null);
  }

  @Override
  public QueueMetrics getRootQueueMetrics() {
    return root.getMetrics();
  }

  @Override
  public boolean checkAccess(UserGroupInformation callerUGI, QueueACL acl, String queueName) {
    return true;
  }

  @Override
  public List<ApplicationAttemptId> getAppsInQueue(String queueName) {
    String name = SlotwiseQueue.qualify(queueName);
    if (name == null || !queues.containsKey(name)) {
      return null;
    }
    List<ApplicationAttemptId> out = new ArrayList<>();
    for (SchedulerApplication<SlotwiseAppAttempt> app : applications.values()) {
      String q = app.getQueue().getQueueName();
      if (app.getCurrentAppAttempt() != null && (q.equals(name) || q.startsWith(name + "."))) {
        out.add(app.getCurrentAppAttempt().getApplicationAttemptId());
      }
    }
    return out;
  }

  @Override
  public int getNumClusterNodes() {
    return nodeTracker.nodeCount();
  }

  @Override
  public ResourceCalculator getResourceCalculator() {
    return calculator;
  }

  @Override
  public EnumSet<SchedulerResourceTypes> getSchedulingResourceTypes() {
    return EnumSet.of(SchedulerResourceTypes.MEMORY, SchedulerResourceTypes.CPU);
  }

  /**
   * The nodes waiting for the scheduling thread, which takes every node that
   * offered itself since its last call (up to {@code maxPerCall}, once each)
   * into one call: the YARN-5139 pattern, the batch growing with the load.
   */
  static final class NodeBatcher<K> {
    private final int maxPerCall;
    private final LinkedHashSet<K> pending = new LinkedHashSet<>(); // guarded by this
    private long batches; // guarded by this, as is the next
    private long nodes;

    NodeBatcher(int maxPerCall) {
      this.maxPerCall = Math.max(1, maxPerCall);
    }

    synchronized void offer(K nodeId) {
      if (pending.add(nodeId)) {
        notifyAll();
      }
    }

    synchronized void remove(K nodeId) {
      pending.remove(nodeId);
    }

    /** Batches taken and nodes in them since the start: {batches, nodes}. */
    synchronized long[] counts() {
      return new long[] {batches, nodes};
    }

    /** The next batch, oldest offers first, at most maxPerCall; waits while there is none. */
    synchronized List<K> take() throws InterruptedException {
      while (pending.isEmpty()) {
        wait();
      }
      List<K> batch = new ArrayList<>(Math.min(pending.size(), maxPerCall));
      for (Iterator<K> it = pending.iterator(); it.hasNext() && batch.size() < maxPerCall; ) {
        batch.add(it.next());
        it.remove();
      }
      batches++;
      nodes += batch.size();
      return batch;
    }
  }
}
