package org.slotwise.shim;

import java.io.IOException;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.hadoop.conf.Configurable;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.thirdparty.com.google.common.util.concurrent.SettableFuture;
import org.apache.hadoop.yarn.api.records.ApplicationAttemptId;
import org.apache.hadoop.yarn.api.protocolrecords.MoveApplicationAcrossQueuesRequest;
import org.apache.hadoop.yarn.api.protocolrecords.UpdateApplicationPriorityRequest;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.api.records.Container;
import org.apache.hadoop.yarn.api.records.ContainerId;
import org.apache.hadoop.yarn.api.records.ContainerStatus;
import org.apache.hadoop.yarn.api.records.NodeId;
import org.apache.hadoop.yarn.api.records.Priority;
import org.apache.hadoop.yarn.api.records.QueueACL;
import org.apache.hadoop.yarn.api.records.QueueInfo;
import org.apache.hadoop.yarn.api.records.QueueUserACLInfo;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.api.records.ResourceOption;
import org.apache.hadoop.yarn.api.records.ResourceRequest;
import org.apache.hadoop.yarn.api.records.SchedulingRequest;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.exceptions.YarnException;
import org.apache.hadoop.yarn.proto.YarnServiceProtos.SchedulerResourceTypes;
import org.apache.hadoop.yarn.server.resourcemanager.RMContext;
import org.apache.hadoop.yarn.server.resourcemanager.nodelabels.RMNodeLabelsManager;
import org.apache.hadoop.yarn.server.resourcemanager.recovery.RMStateStore.RMState;
import org.apache.hadoop.yarn.server.resourcemanager.recovery.records.ApplicationStateData;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.RMApp;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.RMAppEvent;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.RMAppEventType;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.attempt.RMAppAttemptEvent;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.attempt.RMAppAttemptEventType;
import org.apache.hadoop.yarn.server.resourcemanager.rmcontainer.RMContainer;
import org.apache.hadoop.yarn.server.resourcemanager.rmcontainer.RMContainerEventType;
import org.apache.hadoop.yarn.server.resourcemanager.rmcontainer.RMContainerState;
import org.apache.hadoop.yarn.server.resourcemanager.rmnode.RMNode;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.AbstractYarnScheduler;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.Allocation;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.ContainerUpdates;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.NodeType;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.QueueMetrics;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.SchedulerAppUtils;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.SchedulerApplication;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.SchedulerUtils;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.common.fica.FiCaSchedulerNode;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.event.AppAddedSchedulerEvent;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.event.AppAttemptAddedSchedulerEvent;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.event.AppAttemptRemovedSchedulerEvent;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.event.AppRemovedSchedulerEvent;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.event.ContainerExpiredSchedulerEvent;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.event.ContainerPreemptEvent;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.event.NodeAddedSchedulerEvent;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.event.NodeRemovedSchedulerEvent;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.event.NodeResourceUpdateSchedulerEvent;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.event.NodeUpdateSchedulerEvent;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.event.ReleaseContainerEvent;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.event.SchedulerEvent;
import org.apache.hadoop.yarn.server.scheduler.SchedulerRequestKey;
import org.apache.hadoop.yarn.server.utils.BuilderUtils;
import org.apache.hadoop.yarn.util.resource.DominantResourceCalculator;
import org.apache.hadoop.yarn.util.resource.ResourceCalculator;
import org.apache.hadoop.yarn.util.resource.Resources;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A YARN ResourceScheduler whose policy runs in Python (docs/shim.md,
 * docs/protocol.md). YARN's bookkeeping (apps, attempts, nodes, containers,
 * metrics) is done here the way FifoScheduler does it; the decisions (which
 * container goes where, which pool an app joins, what to preempt) come from
 * Python over Py4J, one JSON call per node heartbeat. When Python cannot
 * answer in time, a built-in FIFO schedules the heartbeat.
 *
 * <p>Locking: the scheduler's write lock guards every change of scheduler
 * state; calls to Python are made without it (see {@link PolicyLink}), with
 * the payload built under the read lock and the answer applied under the
 * write lock.
 */
public class SlotwiseScheduler
    extends AbstractYarnScheduler<SlotwiseAppAttempt, FiCaSchedulerNode>
    implements Configurable {
  static final String VERSION = "0.1.0";

  public static final String GATEWAY_PORT = "slotwise.gateway.port";
  public static final String TOKEN_FILE = "slotwise.gateway.token-file";
  public static final String INFO_FILE = "slotwise.gateway.info-file";
  public static final String TIMEOUT_MS = "slotwise.policy.timeout-ms";
  public static final String READ_TIMEOUT_MS = "slotwise.policy.read-timeout-ms";
  public static final String UPDATE_INTERVAL_MS = "slotwise.update.interval-ms";

  private static final Logger LOG = LoggerFactory.getLogger(SlotwiseScheduler.class);
  private static final String DEFAULT_QUEUE = SlotwiseQueue.ROOT + ".default";

  private final ResourceCalculator calculator = new DominantResourceCalculator();
  private final Payload payload = new Payload();
  private final Map<String, SlotwiseQueue> queues = new ConcurrentHashMap<>();
  /** Python's id for each live container it placed. */
  private final Map<ContainerId, String> engineIds = new ConcurrentHashMap<>();

  private Configuration conf;
  private boolean usePortForNodeName;
  private SlotwiseQueue root;
  private PolicyLink link;
  private Gateway gateway;

  public SlotwiseScheduler() {
    super(SlotwiseScheduler.class.getName());
  }

  // ------------------------------------------------------------------ service

  @Override
  public void serviceInit(Configuration configuration) throws Exception {
    this.conf = configuration;
    applications = new ConcurrentHashMap<>();
    minimumAllocation = super.getMinimumAllocation();
    initMaximumResourceCapability(super.getMaximumAllocation());
    usePortForNodeName = conf.getBoolean(
        YarnConfiguration.RM_SCHEDULER_INCLUDE_PORT_IN_NODE_NAME,
        YarnConfiguration.DEFAULT_RM_SCHEDULER_USE_PORT_FOR_NODE_NAME);
    root = queue(SlotwiseQueue.ROOT);
    queue(DEFAULT_QUEUE);
    link = new PolicyLink(conf.getLong(TIMEOUT_MS, 100), payload::requireFull);
    // AbstractYarnScheduler runs update() on its daemon thread at this period.
    updateInterval = Math.max(10, conf.getLong(UPDATE_INTERVAL_MS, 500));
    super.serviceInit(conf);
  }

  @Override
  public void serviceStart() throws Exception {
    super.serviceStart();
    String dir = conf.get("hadoop.tmp.dir", System.getProperty("java.io.tmpdir")) + "/slotwise/";
    gateway = new Gateway(new GatewayEntryPoint(this), conf.getInt(GATEWAY_PORT, 0),
        Paths.get(conf.get(TOKEN_FILE, dir + "gateway.token")),
        Paths.get(conf.get(INFO_FILE, dir + "gateway.json")),
        conf.getInt(READ_TIMEOUT_MS, 5000));
    try {
      gateway.start();
    } catch (Throwable t) {
      LOG.error("Slotwise: the Py4J gateway did not start; the built-in FIFO schedules "
          + "until the RM restarts with a working gateway", t);
    }
  }

  @Override
  public void serviceStop() throws Exception {
    if (gateway != null) {
      gateway.stop();
    }
    if (link != null) {
      link.stop();
    }
    super.serviceStop();
  }

  @Override
  public void setConf(Configuration configuration) {
    this.conf = configuration;
  }

  @Override
  public Configuration getConf() {
    return conf;
  }

  @Override
  public void setRMContext(RMContext context) {
    this.rmContext = context;
  }

  @Override
  public void reinitialize(Configuration configuration, RMContext context) throws IOException {
    setConf(configuration);
    super.reinitialize(configuration, context);
  }

  @Override
  public void recover(RMState state) {
    // Apps and containers come back through APP_ADDED and NODE_ADDED.
  }

  // ------------------------------------------------------------ Python side

  /**
   * A new policy (or null to unregister). Its first call, which opens Py4J's
   * callback connection, is a full-state update made right away on the update
   * thread with a longer deadline; heartbeats use the FIFO until it answers.
   */
  void registerPolicy(PolicyServer policy) {
    link.register(policy);
    if (policy != null) {
      triggerUpdate();
    }
  }

  /** Heartbeats scheduled by the built-in FIFO since the RM started. */
  public long getFallbackCount() {
    return link == null ? 0 : link.getFallbackCount();
  }

  /** Failed calls to Python (any method) since the RM started. */
  public long getPolicyFailureCount() {
    return link == null ? 0 : link.getFailureCount();
  }

  /**
   * Timings of the successful calls of one method as JSON ({@link
   * CallStats#toJson}) plus the fallback and failure counters.
   */
  String getCallStats(String method, boolean reset) {
    String json = link == null ? new CallStats(1).toJson(false) : link.stats(method).toJson(reset);
    return json.substring(0, json.length() - 1) + ",\"fallbacks\":" + getFallbackCount()
        + ",\"failures\":" + getPolicyFailureCount() + "}";
  }

  // ----------------------------------------------------------------- events

  @Override
  public void handle(SchedulerEvent event) {
    try {
      dispatch(event);
    } catch (Exception e) {
      // A bug here must not take the RM down with it.
      LOG.error("Slotwise: error while handling {}", event.getType(), e);
    }
  }

  private void dispatch(SchedulerEvent event) {
    switch (event.getType()) {
      case NODE_ADDED: {
        NodeAddedSchedulerEvent e = (NodeAddedSchedulerEvent) event;
        addNode(e.getAddedRMNode(), e);
        break;
      }
      case NODE_REMOVED:
        removeNode(((NodeRemovedSchedulerEvent) event).getRemovedRMNode());
        break;
      case NODE_UPDATE:
        nodeUpdate(((NodeUpdateSchedulerEvent) event).getRMNode());
        break;
      case NODE_RESOURCE_UPDATE: {
        NodeResourceUpdateSchedulerEvent e = (NodeResourceUpdateSchedulerEvent) event;
        updateNodeResource(e.getRMNode(), e.getResourceOption());
        break;
      }
      case APP_ADDED:
        addApplication((AppAddedSchedulerEvent) event);
        break;
      case APP_REMOVED: {
        AppRemovedSchedulerEvent e = (AppRemovedSchedulerEvent) event;
        removeApplication(e.getApplicationID(), e.getFinalState());
        break;
      }
      case APP_ATTEMPT_ADDED: {
        AppAttemptAddedSchedulerEvent e = (AppAttemptAddedSchedulerEvent) event;
        addAttempt(e.getApplicationAttemptId(), e.getTransferStateFromPreviousAttempt(),
            e.getIsAttemptRecovering());
        break;
      }
      case APP_ATTEMPT_REMOVED: {
        AppAttemptRemovedSchedulerEvent e = (AppAttemptRemovedSchedulerEvent) event;
        removeAttempt(e.getApplicationAttemptID(), e.getFinalAttemptState(),
            e.getKeepContainersAcrossAppAttempts());
        break;
      }
      case CONTAINER_EXPIRED: {
        ContainerId id = ((ContainerExpiredSchedulerEvent) event).getContainerId();
        completedContainer(getRMContainer(id),
            SchedulerUtils.createAbnormalContainerStatus(id, SchedulerUtils.EXPIRED_CONTAINER),
            RMContainerEventType.EXPIRE);
        break;
      }
      case RELEASE_CONTAINER: {
        RMContainer c = ((ReleaseContainerEvent) event).getContainer();
        completedContainer(c, SchedulerUtils.createAbnormalContainerStatus(
            c.getContainerId(), SchedulerUtils.RELEASED_CONTAINER),
            RMContainerEventType.RELEASED);
        break;
      }
      case MARK_CONTAINER_FOR_PREEMPTION: {
        ContainerPreemptEvent e = (ContainerPreemptEvent) event;
        SlotwiseAppAttempt attempt = getApplicationAttempt(e.getAppId());
        if (attempt != null) {
          attempt.warnPreemption(e.getContainer().getContainerId());
        }
        break;
      }
      case MARK_CONTAINER_FOR_KILLABLE:
        killPreempted(((ContainerPreemptEvent) event).getContainer());
        break;
      case MARK_CONTAINER_FOR_NONKILLABLE: {
        ContainerPreemptEvent e = (ContainerPreemptEvent) event;
        SlotwiseAppAttempt attempt = getApplicationAttempt(e.getAppId());
        if (attempt != null) {
          attempt.unwarnPreemption(e.getContainer().getContainerId());
        }
        break;
      }
      case KILL_RESERVED_CONTAINER:
        // Slotwise never reserves containers.
        LOG.debug("Slotwise: ignoring {}", event.getType());
        break;
      case NODE_LABELS_UPDATE:
      case NODE_ATTRIBUTES_UPDATE:
      case MANAGE_QUEUE:
      case AUTO_QUEUE_DELETION:
        // Node labels and attributes, CapacityScheduler queue management:
        // not meaningful for Python's pools.
        LOG.debug("Slotwise: ignoring {}", event.getType());
        break;
      default:
        LOG.warn("Slotwise: ignoring unknown scheduler event {}", event.getType());
    }
  }

  // ------------------------------------------------------------------ nodes

  private void addNode(RMNode nm, NodeAddedSchedulerEvent e) {
    writeLock.lock();
    try {
      FiCaSchedulerNode node = new FiCaSchedulerNode(nm, usePortForNodeName);
      nodeTracker.addNode(node);
      payload.nodeChanged(nodeRecord(node));
      recoverContainersOnNode(e.getContainerReports(), nm);
      for (RMContainer c : node.getCopiedListOfRunningContainers()) {
        payload.launched(launchedRecord(c, c.isAMContainer(), null));
      }
      updateRootQueueMetrics();
      LOG.info("Slotwise: added node {} ({}); cluster {}", nm.getNodeID(),
          nm.getTotalCapability(), getClusterResource());
    } finally {
      writeLock.unlock();
    }
  }

  private void removeNode(RMNode nm) {
    writeLock.lock();
    try {
      FiCaSchedulerNode node = nodeTracker.getNode(nm.getNodeID());
      if (node == null) {
        return;
      }
      for (RMContainer c : node.getCopiedListOfRunningContainers()) {
        completedContainer(c, SchedulerUtils.createAbnormalContainerStatus(
            c.getContainerId(), SchedulerUtils.LOST_CONTAINER), RMContainerEventType.KILL);
      }
      nodeTracker.removeNode(nm.getNodeID());
      payload.nodeRemoved(nm.getNodeID().toString());
      updateRootQueueMetrics();
      LOG.info("Slotwise: removed node {}; cluster {}", nm.getNodeID(), getClusterResource());
    } finally {
      writeLock.unlock();
    }
  }

  @Override
  public void updateNodeResource(RMNode nm, ResourceOption option) {
    writeLock.lock();
    try {
      super.updateNodeResource(nm, option);
      FiCaSchedulerNode node = nodeTracker.getNode(nm.getNodeID());
      if (node != null) {
        payload.nodeChanged(nodeRecord(node));
      }
      updateRootQueueMetrics();
    } finally {
      writeLock.unlock();
    }
  }

  @Override
  public void recoverContainersOnNode(
      List<org.apache.hadoop.yarn.server.api.protocolrecords.NMContainerStatus> reports,
      RMNode nm) {
    writeLock.lock();
    try {
      super.recoverContainersOnNode(reports, nm);
    } finally {
      writeLock.unlock();
    }
  }

  /**
   * One node heartbeat: YARN's bookkeeping, then one call to Python whose
   * assignments are checked and allocated; the built-in FIFO if that fails.
   */
  @Override
  protected void nodeUpdate(RMNode nm) {
    FiCaSchedulerNode node;
    writeLock.lock();
    try {
      super.nodeUpdate(nm);
      node = nodeTracker.getNode(nm.getNodeID());
      updateRootQueueMetrics();
    } finally {
      writeLock.unlock();
    }
    if (node == null || (rmContext.isWorkPreservingRecoveryEnabled()
        && !rmContext.isSchedulerReadyForAllocatingContainers())) {
      return;
    }
    String nodeId = node.getNodeID().toString();
    Answer.Heartbeat answer = null;
    if (!(link.hasPolicy() && link.isCold())) { // a new policy warms up on the update thread
      answer = link.call("heartbeat", () -> buildPayload(nodeId),
          PolicyServer::heartbeat, Answer::heartbeat);
    }
    writeLock.lock();
    try {
      if (answer != null) {
        applyAssignments(answer.assign);
        applyPreemptions(answer.preempt);
      } else {
        link.fallbackHeartbeat();
        if (nodeTracker.exists(node.getNodeID())) {
          fifoAssign(node);
        }
      }
      updateRootQueueMetrics();
    } finally {
      writeLock.unlock();
    }
  }

  /** The periodic call; AbstractYarnScheduler's update thread runs it. */
  @Override
  public void update() {
    try {
      if (link == null || !link.hasPolicy()) {
        return;
      }
      long deadline = link.isCold()
          ? Math.max(link.getTimeoutMs(), PolicyLink.WARMUP_MS) : link.getTimeoutMs();
      Answer.Update answer = link.call("update", deadline, () -> buildPayload(null),
          PolicyServer::update, Answer::update);
      if (answer == null) {
        return;
      }
      writeLock.lock();
      try {
        applyPreemptions(answer.preempt);
        for (Answer.QueueRow row : answer.queues) {
          String name = SlotwiseQueue.qualify(row.name);
          if (name != null) {
            queue(name).describe(row);
          }
        }
        updateRootQueueMetrics();
      } finally {
        writeLock.unlock();
      }
    } catch (Throwable t) {
      LOG.error("Slotwise: periodic update failed", t);
    }
  }

  // ------------------------------------------------------------------- apps

  private void addApplication(AppAddedSchedulerEvent e) {
    ApplicationId id = e.getApplicationId();
    String user = e.getUser();
    Priority priority = e.getApplicatonPriority() == null
        ? Priority.newInstance(0) : e.getApplicatonPriority();
    String requested = e.getQueue() == null || e.getQueue().isEmpty() ? "default" : e.getQueue();
    String target = SlotwiseQueue.qualify(requested);
    if (!e.getIsAppRecovering()) {
      Answer.Place answer = link.call("place",
          () -> Payload.encodePlace(id.toString(), user, requested, groups(user),
              priority.getPriority()),
          PolicyServer::place, Answer::place);
      if (answer != null && answer.reject != null) {
        reject(id, "Rejected by the Slotwise policy: " + answer.reject);
        return;
      }
      if (answer != null) {
        String chosen = SlotwiseQueue.qualify(answer.queue);
        if (chosen == null) {
          reject(id, "The Slotwise policy placed the app in an invalid queue '"
              + answer.queue + "'");
          return;
        }
        target = chosen;
      }
    }
    if (target == null) {
      target = DEFAULT_QUEUE;
    }
    writeLock.lock();
    try {
      SlotwiseQueue q = queue(target);
      SchedulerApplication<SlotwiseAppAttempt> app =
          new SchedulerApplication<>(q, user, priority, e.isUnmanagedAM());
      applications.put(id, app);
      q.getMetrics().submitApp(user, e.isUnmanagedAM());
      RMApp rmApp = rmContext.getRMApps().get(id);
      if (rmApp != null) {
        rmApp.setQueue(target);
        if (rmApp.getApplicationSubmissionContext() != null) {
          rmApp.getApplicationSubmissionContext().setQueue(target);
        }
      }
      payload.appChanged(id.toString());
      LOG.info("Slotwise: accepted {} from {} into {} ({} apps)", id, user, target,
          applications.size());
    } finally {
      writeLock.unlock();
    }
    if (!e.getIsAppRecovering()) {
      rmContext.getDispatcher().getEventHandler()
          .handle(new RMAppEvent(id, RMAppEventType.APP_ACCEPTED));
    }
  }

  private static List<String> groups(String user) {
    try {
      return UserGroupInformation.createRemoteUser(user).getGroups();
    } catch (RuntimeException e) {
      return Collections.emptyList();
    }
  }

  private void reject(ApplicationId id, String message) {
    LOG.info("Slotwise: {}: {}", id, message);
    rmContext.getDispatcher().getEventHandler()
        .handle(new RMAppEvent(id, RMAppEventType.APP_REJECTED, message));
  }

  private void removeApplication(ApplicationId id,
      org.apache.hadoop.yarn.server.resourcemanager.rmapp.RMAppState finalState) {
    writeLock.lock();
    try {
      SchedulerApplication<SlotwiseAppAttempt> app = applications.remove(id);
      if (app == null) {
        LOG.debug("Slotwise: {} ends without having been accepted", id); // e.g. rejected
        return;
      }
      app.getQueue().getAbstractUsersManager().deactivateApplication(app.getUser(), id);
      app.stop(finalState);
      payload.appRemoved(id.toString());
    } finally {
      writeLock.unlock();
    }
  }

  private void addAttempt(ApplicationAttemptId attemptId, boolean transfer,
      boolean recovering) {
    writeLock.lock();
    try {
      SchedulerApplication<SlotwiseAppAttempt> app =
          applications.get(attemptId.getApplicationId());
      if (app == null) {
        LOG.warn("Slotwise: attempt {} of an unknown application", attemptId);
        return;
      }
      SlotwiseAppAttempt attempt = new SlotwiseAppAttempt(attemptId, app.getUser(),
          (SlotwiseQueue) app.getQueue(), rmContext);
      attempt.setPriority(app.getPriority());
      if (transfer && app.getCurrentAppAttempt() != null) {
        attempt.transferStateFromPreviousAttempt(app.getCurrentAppAttempt());
      }
      app.setCurrentAppAttempt(attempt);
      app.getQueue().getMetrics().submitAppAttempt(app.getUser(), app.isUnmanagedAM());
      payload.appChanged(attemptId.getApplicationId().toString());
      LOG.info("Slotwise: added attempt {} of {}", attemptId, app.getUser());
    } finally {
      writeLock.unlock();
    }
    if (!recovering) {
      rmContext.getDispatcher().getEventHandler().handle(
          new RMAppAttemptEvent(attemptId, RMAppAttemptEventType.ATTEMPT_ADDED));
    }
  }

  private void removeAttempt(ApplicationAttemptId attemptId,
      org.apache.hadoop.yarn.server.resourcemanager.rmapp.attempt.RMAppAttemptState finalState,
      boolean keepContainers) {
    writeLock.lock();
    try {
      SlotwiseAppAttempt attempt = getApplicationAttempt(attemptId);
      if (attempt == null || !applications.containsKey(attemptId.getApplicationId())) {
        LOG.warn("Slotwise: unknown attempt {} has completed", attemptId);
        return;
      }
      for (RMContainer c : attempt.getLiveContainers()) {
        if (keepContainers && c.getState() == RMContainerState.RUNNING) {
          continue; // work-preserving AM restart
        }
        completedContainer(c, SchedulerUtils.createAbnormalContainerStatus(
            c.getContainerId(), SchedulerUtils.COMPLETED_APPLICATION),
            RMContainerEventType.KILL);
      }
      attempt.stop(finalState);
      payload.appChanged(attemptId.getApplicationId().toString());
    } finally {
      writeLock.unlock();
    }
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
      if (!ask.isEmpty()) {
        app.updateResourceRequests(ask);
      }
      app.updateBlacklist(blacklistAdditions, blacklistRemovals);
    } finally {
      app.getWriteLock().unlock();
    }
    if (!ask.isEmpty()) {
      payload.appChanged(attemptId.getApplicationId().toString());
    }
    Resource headroom = Resources.componentwiseMax(Resources.none(),
        Resources.subtract(getClusterResource(), root.getMetrics().getAllocatedResources()));
    app.setHeadroom(headroom);
    app.setApplicationHeadroomForMetrics(headroom);
    Set<ContainerId> warned = app.getWarnedContainers();
    return new Allocation(app.pullNewlyAllocatedContainers(), headroom,
        warned.isEmpty() ? null : warned, null, null, app.pullUpdatedNMTokens());
  }

  @Override
  public void preValidateMoveApplication(ApplicationId appId, String newQueue)
      throws YarnException {
    SchedulerApplication<SlotwiseAppAttempt> app = applications.get(appId);
    if (app == null) {
      throw new YarnException("App to be moved " + appId + " not found.");
    }
    if (SlotwiseQueue.qualify(newQueue) == null) {
      throw new YarnException("Invalid queue name '" + newQueue + "'");
    }
    SlotwiseAppAttempt attempt = app.getCurrentAppAttempt();
    if (attempt != null && attempt.isStopped()) {
      throw new YarnException("Application " + appId + " is stopped and can't be moved!");
    }
    if (!link.hasPolicy()) {
      throw new YarnException("Cannot move " + appId + ": no Slotwise policy is registered");
    }
  }

  /**
   * {@link GatewayEntryPoint#moveApplication}: {"queue": where the app is now}
   * or {"error": why not}. Never throws.
   */
  String adminMove(String appId, String queue) {
    try {
      ApplicationId id = ApplicationId.fromString(appId);
      if (rmContext.getRMApps().get(id) == null) {
        return adminError("unknown application " + appId);
      }
      // The client service's path, as `yarn application -movetoqueue` takes it.
      rmContext.getClientRMService().moveApplicationAcrossQueues(
          MoveApplicationAcrossQueuesRequest.newInstance(id, queue));
      return new Json.Out().beginObject().key("queue").value(rmContext.getRMApps().get(id).getQueue())
          .endObject().toString();
    } catch (Exception e) {
      return adminError(e.getMessage() == null ? e.toString() : e.getMessage());
    }
  }

  /**
   * {@link GatewayEntryPoint#updateApplicationPriority}: {"priority": the one
   * in force, capped by yarn.cluster.max-application-priority} or {"error"}.
   */
  String adminPriority(String appId, int priority) {
    try {
      ApplicationId id = ApplicationId.fromString(appId);
      if (rmContext.getRMApps().get(id) == null) {
        return adminError("unknown application " + appId);
      }
      Priority now = rmContext.getClientRMService().updateApplicationPriority(
          UpdateApplicationPriorityRequest.newInstance(id, Priority.newInstance(priority)))
          .getApplicationPriority();
      return new Json.Out().beginObject().key("priority").value(now.getPriority()).endObject().toString();
    } catch (Exception e) {
      return adminError(e.getMessage() == null ? e.toString() : e.getMessage());
    }
  }

  private static String adminError(String message) {
    return new Json.Out().beginObject().key("error").value(message).endObject().toString();
  }

  /** Python decides (and may rename) the target pool; then the app moves. */
  @Override
  public String moveApplication(ApplicationId appId, String newQueue) throws YarnException {
    if (!applications.containsKey(appId)) {
      throw new YarnException("App to be moved " + appId + " not found.");
    }
    Answer.Move answer = link.call("move", () -> "",
        (p, unused) -> p.move(appId.toString(), newQueue), Answer::move);
    if (answer == null) {
      throw new YarnException("Cannot move " + appId + ": the Slotwise policy did not answer ("
          + link.getLastFailure() + ")");
    }
    if (answer.error != null) {
      throw new YarnException("The Slotwise policy refused to move " + appId + " to "
          + newQueue + ": " + answer.error);
    }
    String target = SlotwiseQueue.qualify(answer.queue);
    if (target == null) {
      throw new YarnException("The Slotwise policy answered an invalid queue '"
          + answer.queue + "'");
    }
    writeLock.lock();
    try {
      SchedulerApplication<SlotwiseAppAttempt> app = applications.get(appId);
      if (app == null) {
        throw new YarnException("App to be moved " + appId + " not found.");
      }
      SlotwiseQueue to = queue(target);
      if (app.getQueue() == to) {
        return target;
      }
      SlotwiseAppAttempt attempt = app.getCurrentAppAttempt();
      if (attempt != null) {
        if (attempt.isStopped()) {
          throw new YarnException("Application " + appId + " is stopped and can't be moved!");
        }
        attempt.move(to); // live containers, pending asks, metrics, users
      }
      app.setQueue(to);
      payload.appChanged(appId.toString());
      LOG.info("Slotwise: moved {} to {}", appId, target);
      return target;
    } finally {
      writeLock.unlock();
    }
  }

  @Override
  public Priority checkAndGetApplicationPriority(Priority requested, UserGroupInformation user,
      String queuePath, ApplicationId applicationId) {
    int p = requested == null ? 0 : requested.getPriority();
    Priority max = getMaxClusterLevelAppPriority();
    if (max != null && p > max.getPriority()) {
      p = max.getPriority();
    }
    return Priority.newInstance(p);
  }

  @Override
  public Priority updateApplicationPriority(Priority newPriority, ApplicationId appId,
      SettableFuture<Object> future, UserGroupInformation user) throws YarnException {
    SchedulerApplication<SlotwiseAppAttempt> app = applications.get(appId);
    RMApp rmApp = rmContext.getRMApps().get(appId);
    if (app == null || rmApp == null) {
      throw new YarnException("Application '" + appId
          + "' is not present, hence could not change priority.");
    }
    Priority p = checkAndGetApplicationPriority(newPriority, user, rmApp.getQueue(), appId);
    if (p.equals(app.getPriority())) {
      future.set(null);
      return p;
    }
    rmApp.getApplicationSubmissionContext().setPriority(p);
    ApplicationStateData state = ApplicationStateData.newInstance(rmApp.getSubmitTime(),
        rmApp.getStartTime(), rmApp.getApplicationSubmissionContext(), rmApp.getUser(),
        rmApp.getCallerContext());
    state.setApplicationTimeouts(rmApp.getApplicationTimeouts());
    state.setLaunchTime(rmApp.getLaunchTime());
    rmContext.getStateStore().updateApplicationStateSynchronously(state, false, future);
    writeLock.lock();
    try {
      app.setPriority(p);
      SlotwiseAppAttempt attempt = app.getCurrentAppAttempt();
      if (attempt != null) {
        attempt.setPriority(p);
      }
      payload.appChanged(appId.toString());
    } finally {
      writeLock.unlock();
    }
    LOG.info("Slotwise: priority of {} is now {}", appId, p.getPriority());
    return p;
  }

  // ------------------------------------------------------------- containers

  /**
   * YARN puts the ask back when a container dies before the AM acquired it:
   * Python must then see the app's new ask.
   */
  @Override
  public void completedContainer(RMContainer rmContainer, ContainerStatus status,
      RMContainerEventType event) {
    boolean askComesBack = rmContainer != null && rmContainer.getContainerRequest() != null;
    super.completedContainer(rmContainer, status, event);
    if (askComesBack) {
      payload.appChanged(
          rmContainer.getApplicationAttemptId().getApplicationId().toString());
    }
  }

  @Override
  protected void completedContainerInternal(RMContainer rmContainer, ContainerStatus status,
      RMContainerEventType event) {
    writeLock.lock();
    try {
      Container container = rmContainer.getContainer();
      ContainerId id = container.getId();
      SlotwiseAppAttempt attempt = getCurrentAttemptForContainer(id);
      FiCaSchedulerNode node = nodeTracker.getNode(container.getNodeId());
      if (attempt == null) {
        LOG.info("Slotwise: container {} of an unknown application finished ({})", id, event);
        return;
      }
      String partition = node == null ? RMNodeLabelsManager.NO_LABEL : node.getPartition();
      boolean wasLive = attempt.containerCompleted(rmContainer, status, event, partition);
      if (node != null) {
        node.releaseContainer(id, false);
      }
      engineIds.remove(id);
      if (wasLive) {
        payload.finished(id.toString());
      }
      updateRootQueueMetrics();
      LOG.debug("Slotwise: {} released container {} ({})", attempt.getApplicationAttemptId(),
          id, event);
    } finally {
      writeLock.unlock();
    }
  }

  @Override
  public void killContainer(RMContainer container) {
    completedContainer(container, SchedulerUtils.createKilledContainerStatus(
        container.getContainerId(), "Killed by RM to simulate an AM container failure"),
        RMContainerEventType.KILL);
  }

  private void killPreempted(RMContainer c) {
    LOG.info("Slotwise: preempting container {} of {}", c.getContainerId(),
        c.getApplicationAttemptId());
    completedContainer(c, SchedulerUtils.createPreemptedContainerStatus(
        c.getContainerId(), SchedulerUtils.PREEMPTED_CONTAINER), RMContainerEventType.KILL);
  }

  /** kill=true kills as preempted; kill=false warns the AM. Under the write lock. */
  private void applyPreemptions(List<Answer.Preempt> preemptions) {
    for (Answer.Preempt p : preemptions) {
      try {
        ContainerId id = ContainerId.fromString(p.container);
        RMContainer c = getRMContainer(id);
        if (c == null) {
          continue; // already gone
        }
        if (p.kill) {
          killPreempted(c);
        } else {
          SlotwiseAppAttempt attempt = getCurrentAttemptForContainer(id);
          if (attempt != null) {
            attempt.warnPreemption(id);
          }
        }
      } catch (RuntimeException e) {
        LOG.warn("Slotwise: cannot preempt {}: {}", p.container, e.toString());
      }
    }
  }

  /** Checks and allocates Python's assignments; refused ones are reported. */
  private void applyAssignments(List<Answer.Assign> assignments) {
    for (Answer.Assign a : assignments) {
      String refusal;
      try {
        refusal = tryAssign(a);
      } catch (RuntimeException e) {
        refusal = e.toString();
        LOG.warn("Slotwise: error while allocating {}", a.engineId, e);
      }
      if (refusal != null) {
        payload.rejected(a.engineId);
        LOG.debug("Slotwise: refused assignment {} of {} on {}: {}", a.engineId, a.app,
            a.node, refusal);
      }
    }
  }

  /** Allocates one assignment; returns null when done, else why not. */
  private String tryAssign(Answer.Assign a) {
    ApplicationId appId;
    NodeId nodeId;
    try {
      appId = ApplicationId.fromString(a.app);
      nodeId = NodeId.fromString(a.node);
    } catch (IllegalArgumentException e) {
      return "malformed id";
    }
    SchedulerApplication<SlotwiseAppAttempt> app = applications.get(appId);
    SlotwiseAppAttempt attempt = app == null ? null : app.getCurrentAppAttempt();
    if (attempt == null || attempt.isStopped()) {
      return "no live attempt";
    }
    FiCaSchedulerNode node = nodeTracker.getNode(nodeId);
    if (node == null) {
      return "no such node";
    }
    if (SchedulerAppUtils.isPlaceBlacklisted(attempt, node, LOG)) {
      return "node blacklisted by the app";
    }
    for (SchedulerRequestKey key : attempt.getSchedulerKeys()) {
      if (key.getPriority().getPriority() == a.priority
          && a.locality.equals(locality(attempt, key, node, a.locality))) {
        Resource capability =
            attempt.getPendingAsk(key, ResourceRequest.ANY).getPerAllocationResource();
        if (!Resources.fitsIn(capability, node.getUnallocatedResource())) {
          return "does not fit";
        }
        return allocateOne(attempt, node, key, a.locality, a.engineId) ? null
            : "allocation refused";
      }
    }
    return "no outstanding request at priority " + a.priority + " allowing " + a.locality;
  }

  /**
   * The locality one container of this request may have on this node: the
   * wanted one if given and allowed, else the best allowed; null if none.
   */
  private static String locality(SlotwiseAppAttempt attempt, SchedulerRequestKey key,
      FiCaSchedulerNode node, String wanted) {
    int any = attempt.getOutstandingAsksCount(key, ResourceRequest.ANY);
    int rack = attempt.getOutstandingAsksCount(key, node.getRackName());
    int host = attempt.getOutstandingAsksCount(key, node.getNodeName());
    boolean rackRelax = attempt.getAppSchedulingInfo().canDelayTo(key, node.getRackName());
    boolean anyRelax = attempt.getAppSchedulingInfo().canDelayTo(key, ResourceRequest.ANY);
    if (wanted != null) {
      return FifoFallback.allows(wanted, any, rack, host, rackRelax, anyRelax) ? wanted : null;
    }
    return FifoFallback.locality(any, rack, host, rackRelax, anyRelax);
  }

  private static NodeType nodeType(String locality) {
    switch (locality) {
      case Answer.NODE_LOCAL: return NodeType.NODE_LOCAL;
      case Answer.RACK_LOCAL: return NodeType.RACK_LOCAL;
      default: return NodeType.OFF_SWITCH;
    }
  }

  /** Allocates one container the normal way; under the write lock. */
  private boolean allocateOne(SlotwiseAppAttempt attempt, FiCaSchedulerNode node,
      SchedulerRequestKey key, String locality, String engineId) {
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
    }
    payload.launched(launchedRecord(rmContainer, am, engineId));
    return true;
  }

  // --------------------------------------------------------------- fallback

  /** An app as the FIFO fallback orders it. */
  private static final class FifoApp implements FifoFallback.AppView {
    final SlotwiseAppAttempt attempt;
    final int priority;
    final long submit;

    FifoApp(SlotwiseAppAttempt attempt, int priority, long submit) {
      this.attempt = attempt;
      this.priority = priority;
      this.submit = submit;
    }

    @Override
    public String id() {
      return attempt.getApplicationId().toString();
    }

    @Override
    public int priority() {
      return priority;
    }

    @Override
    public long submitTime() {
      return submit;
    }
  }

  /** The built-in FIFO for one heartbeat; under the write lock. */
  private void fifoAssign(FiCaSchedulerNode node) {
    if (!Resources.fitsIn(minimumAllocation, node.getUnallocatedResource())) {
      return;
    }
    List<FifoApp> apps = new ArrayList<>();
    for (Map.Entry<ApplicationId, SchedulerApplication<SlotwiseAppAttempt>> e
        : applications.entrySet()) {
      SlotwiseAppAttempt attempt = e.getValue().getCurrentAppAttempt();
      if (attempt != null && !attempt.isStopped()) {
        apps.add(new FifoApp(attempt, priorityOf(e.getValue()), submitTime(e.getKey())));
      }
    }
    for (FifoApp app : FifoFallback.order(apps)) {
      SlotwiseAppAttempt attempt = app.attempt;
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
          String loc = locality(attempt, key, node, null);
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

  // ---------------------------------------------------------------- payload

  /** Builds the next heartbeat/update payload; called by PolicyLink.call. */
  private String buildPayload(String node) {
    readLock.lock();
    try {
      Payload.Delta d = payload.drain();
      long fallbacks = link.fallbacksToReport();
      if (d.full) {
        List<Payload.Node> nodes = new ArrayList<>();
        for (FiCaSchedulerNode n : nodeTracker.getAllNodes()) {
          nodes.add(nodeRecord(n));
        }
        List<Payload.App> apps = new ArrayList<>();
        List<Payload.Launched> live = new ArrayList<>();
        for (Map.Entry<ApplicationId, SchedulerApplication<SlotwiseAppAttempt>> e
            : applications.entrySet()) {
          apps.add(appRecord(e.getKey(), e.getValue()));
          SlotwiseAppAttempt attempt = e.getValue().getCurrentAppAttempt();
          if (attempt != null) {
            for (RMContainer c : attempt.getLiveContainers()) {
              live.add(launchedRecord(c, c.isAMContainer(), engineIds.get(c.getContainerId())));
            }
          }
        }
        List<String> none = Collections.emptyList();
        return Payload.encode(true, nodes, none, apps, none, live, none, none, fallbacks, node);
      }
      List<Payload.App> apps = new ArrayList<>();
      for (String id : d.appsChanged) {
        ApplicationId appId = ApplicationId.fromString(id);
        SchedulerApplication<SlotwiseAppAttempt> app = applications.get(appId);
        if (app != null) {
          apps.add(appRecord(appId, app));
        }
      }
      return Payload.encode(false, d.nodes, d.nodesRemoved, apps, d.appsRemoved, d.launched,
          d.rejected, d.finished, fallbacks, node);
    } finally {
      readLock.unlock();
    }
  }

  private static Payload.Node nodeRecord(FiCaSchedulerNode n) {
    Resource total = n.getTotalResource();
    return new Payload.Node(n.getNodeID().toString(), n.getNodeName(), n.getRackName(),
        total.getMemorySize(), total.getVirtualCores());
  }

  private static Payload.Launched launchedRecord(RMContainer c, boolean am, String engineId) {
    Resource r = c.getAllocatedResource();
    return new Payload.Launched(c.getContainerId().toString(),
        c.getApplicationAttemptId().getApplicationId().toString(),
        c.getAllocatedNode().toString(), r.getMemorySize(), r.getVirtualCores(), am,
        c.getAllocatedSchedulerKey().getPriority().getPriority(), engineId);
  }

  private Payload.App appRecord(ApplicationId id, SchedulerApplication<SlotwiseAppAttempt> app) {
    SlotwiseAppAttempt attempt = app.getCurrentAppAttempt();
    List<Payload.Req> reqs = attempt == null || attempt.isStopped()
        ? Collections.emptyList() : requests(attempt);
    RMApp rmApp = rmContext.getRMApps().get(id);
    boolean unmanaged = rmApp != null && rmApp.getApplicationSubmissionContext() != null
        && rmApp.getApplicationSubmissionContext().getUnmanagedAM();
    return new Payload.App(id.toString(), app.getUser(), app.getQueue().getQueueName(),
        priorityOf(app), submitTime(id), reqs, unmanaged);
  }

  /** An attempt's outstanding asks, one entry per request priority. */
  private static List<Payload.Req> requests(SlotwiseAppAttempt attempt) {
    final class Acc {
      long memory;
      long vcores;
      int total;
      boolean relax = true;
      final Map<String, Integer> hosts = new LinkedHashMap<>();
      final Map<String, Integer> racks = new LinkedHashMap<>();
    }
    Map<Integer, Acc> byPriority = new TreeMap<>();
    for (ResourceRequest r : attempt.getAppSchedulingInfo().getAllResourceRequests()) {
      Acc acc = byPriority.computeIfAbsent(r.getPriority().getPriority(), p -> new Acc());
      String name = r.getResourceName();
      int n = r.getNumContainers();
      if (ResourceRequest.ANY.equals(name)) {
        acc.total += n;
        acc.memory = r.getCapability().getMemorySize();
        acc.vcores = r.getCapability().getVirtualCores();
        acc.relax = r.getRelaxLocality();
      } else if (n > 0) {
        (name.startsWith("/") ? acc.racks : acc.hosts).merge(name, n, Integer::sum);
      }
    }
    List<Payload.Req> out = new ArrayList<>();
    for (Map.Entry<Integer, Acc> e : byPriority.entrySet()) {
      Acc a = e.getValue();
      if (a.total > 0) {
        out.add(new Payload.Req(e.getKey(), a.memory, a.vcores, a.total, a.hosts, a.racks,
            a.relax));
      }
    }
    return out;
  }

  private static int priorityOf(SchedulerApplication<?> app) {
    return app.getPriority() == null ? 0 : app.getPriority().getPriority();
  }

  private long submitTime(ApplicationId id) {
    RMApp rmApp = rmContext.getRMApps().get(id);
    return rmApp == null ? id.getClusterTimestamp() : rmApp.getSubmitTime();
  }

  // ----------------------------------------------------------------- queues

  /** The queue of this full name, made (with its parents) on first use. */
  SlotwiseQueue queue(String fullName) {
    SlotwiseQueue q = queues.get(fullName);
    if (q != null) {
      return q;
    }
    synchronized (queues) {
      q = queues.get(fullName);
      if (q == null) {
        int dot = fullName.lastIndexOf('.');
        SlotwiseQueue parent = dot < 0 ? null : queue(fullName.substring(0, dot));
        q = new SlotwiseQueue(fullName, parent, conf, this::getClusterResource);
        queues.put(fullName, q);
      }
      return q;
    }
  }

  private void updateRootQueueMetrics() {
    QueueMetrics m = root.getMetrics();
    m.setAvailableResourcesToQueue(Resources.componentwiseMax(Resources.none(),
        Resources.subtract(getClusterResource(), m.getAllocatedResources())));
  }

  @Override
  public QueueInfo getQueueInfo(String queueName, boolean includeChildQueues,
      boolean recursive) throws IOException {
    String name = SlotwiseQueue.qualify(queueName);
    SlotwiseQueue q = name == null ? null : queues.get(name);
    if (q == null) {
      throw new IOException("queue " + queueName + " does not exist");
    }
    return q.getQueueInfo(includeChildQueues, recursive);
  }

  @Override
  public List<QueueUserACLInfo> getQueueUserAclInfo() {
    try {
      return root.getQueueUserAclInfo(UserGroupInformation.getCurrentUser());
    } catch (IOException e) {
      return new ArrayList<>();
    }
  }

  @Override
  public QueueMetrics getRootQueueMetrics() {
    return root.getMetrics();
  }

  /** Access to pools is Python's business (place, move); YARN lets everyone in. */
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
      SlotwiseAppAttempt attempt = app.getCurrentAppAttempt();
      if (attempt != null && (q.equals(name) || q.startsWith(name + "."))) {
        out.add(attempt.getApplicationAttemptId());
      }
    }
    return out;
  }

  // ------------------------------------------------------------------- misc

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

  /** For tests and tools: the pools YARN currently knows, by full name. */
  Map<String, SlotwiseQueue> getQueues() {
    return new HashMap<>(queues);
  }
}
