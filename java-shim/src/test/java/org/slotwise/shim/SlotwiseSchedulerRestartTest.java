package org.slotwise.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.function.BooleanSupplier;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.api.records.ApplicationAttemptId;
import org.apache.hadoop.yarn.api.records.Container;
import org.apache.hadoop.yarn.api.records.ContainerId;
import org.apache.hadoop.yarn.api.records.ContainerState;
import org.apache.hadoop.yarn.api.records.Priority;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.api.protocolrecords.NMContainerStatus;
import org.apache.hadoop.yarn.server.resourcemanager.MockAM;
import org.apache.hadoop.yarn.server.resourcemanager.MockNM;
import org.apache.hadoop.yarn.server.resourcemanager.MockRM;
import org.apache.hadoop.yarn.server.resourcemanager.MockRMAppSubmissionData;
import org.apache.hadoop.yarn.server.resourcemanager.MockRMAppSubmitter;
import org.apache.hadoop.yarn.server.resourcemanager.recovery.MemoryRMStateStore;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.RMApp;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.RMAppState;
import org.apache.hadoop.yarn.server.resourcemanager.rmcontainer.RMContainer;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.QueueMetrics;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.SchedulerNodeReport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A work-preserving ResourceManager restart under {@link SlotwiseScheduler},
 * in Hadoop's own scaffolding (MockRM over one MemoryRMStateStore, a MockNM
 * that re-registers with its running containers). What the scheduler knew
 * before it must know after, as TestWorkPreservingRMRestart checks it for
 * YARN's schedulers: each node's used and available resources, the queue's
 * and the user's metrics, the app's queue and live containers; new
 * containers carry the new epoch; and a policy that registers with the new
 * RM is sent the recovered containers.
 */
class SlotwiseSchedulerRestartTest {
  private static final String NODE = "127.0.0.1:1234";

  @TempDir
  Path dir;
  private final List<MockRM> rms = new ArrayList<>();

  private MockRM start(MemoryRMStateStore store) {
    Configuration conf = new YarnConfiguration();
    conf.set(YarnConfiguration.RM_SCHEDULER, SlotwiseScheduler.class.getName());
    conf.set(ShimRuntime.TOKEN_FILE, dir.resolve("gateway.token").toString());
    conf.set(ShimRuntime.INFO_FILE, dir.resolve("gateway.json").toString());
    conf.setBoolean(SlotwiseScheduler.ASYNC, false);
    conf.setBoolean(SlotwiseScheduler.SCHEDULER_INFO, false);
    conf.setLong(ShimRuntime.TIMEOUT_MS, 30_000);
    conf.setBoolean(YarnConfiguration.RECOVERY_ENABLED, true);
    conf.setBoolean(YarnConfiguration.RM_WORK_PRESERVING_RECOVERY_ENABLED, true);
    conf.setLong(YarnConfiguration.RM_WORK_PRESERVING_RECOVERY_SCHEDULING_WAIT_MS, 0);
    conf.set(YarnConfiguration.RM_STORE, MemoryRMStateStore.class.getName());
    MockRM rm = store == null ? new MockRM(conf) : new MockRM(conf, store);
    rm.start();
    rms.add(rm);
    return rm;
  }

  @AfterEach
  void stop() {
    for (MockRM rm : rms) {
      rm.stop();
    }
  }

  private static SlotwiseScheduler scheduler(MockRM rm) {
    return (SlotwiseScheduler) rm.getResourceScheduler();
  }

  private static void await(MockRM rm, MockNM nm, String what, BooleanSupplier done) throws Exception {
    long deadline = System.currentTimeMillis() + 30_000;
    while (!done.getAsBoolean()) {
      assertTrue(System.currentTimeMillis() < deadline, "timed out waiting for " + what);
      nm.nodeHeartbeat(true);
      rm.drainEvents();
      Thread.sleep(20);
    }
  }

  /** Registers a scripted policy with the RM's shim; its session. */
  private static String register(MockRM rm, PolicyServer policy) {
    Messages.Registered reg = scheduler(rm).runtime().registerPolicy(policy,
        PolicyLink.write(new Messages.Register(Messages.PROTOCOL, 40005, "t".repeat(64), true,
            new Messages.ServerInfo(5, "host", "/a.xml", 0, "test", null))));
    assertNotNull(reg.session(), String.valueOf(reg.refused()));
    return reg.session();
  }

  /** What TestWorkPreservingRMRestart compares across a restart, as one string per figure. */
  private static List<String> figures(MockRM rm, MockNM nm, ApplicationAttemptId attempt) {
    SlotwiseScheduler s = scheduler(rm);
    SchedulerNodeReport node = s.getNodeReport(nm.getNodeId());
    QueueMetrics root = s.getRootQueueMetrics();
    SlotwiseQueue prod = s.queue("root.prod");
    QueueMetrics user = prod.getMetrics().getUserMetrics("user");
    return List.of(
        "node used " + node.getUsedResource(), "node available " + node.getAvailableResource(),
        "node containers " + node.getNumContainers(),
        "root allocated " + root.getAllocatedMB() + " MB " + root.getAllocatedVirtualCores() + " vcores "
            + root.getAllocatedContainers() + " containers",
        "root available " + root.getAvailableMB() + " MB " + root.getAvailableVirtualCores() + " vcores",
        "prod allocated " + prod.getMetrics().getAllocatedMB() + " MB "
            + prod.getMetrics().getAllocatedContainers() + " containers",
        "user allocated " + (user == null ? "none" : user.getAllocatedMB() + " MB"),
        "app queue " + s.getApplicationAttempt(attempt).getQueue().getQueueName(),
        "app live containers " + s.getApplicationAttempt(attempt).getLiveContainers().size());
  }

  @Test
  void afterAWorkPreservingRestartTheSchedulerKnowsWhatItKnewAndPythonIsToldIt() throws Exception {
    MockRM rm1 = start(null);
    MockNM nm = new MockNM(NODE, 8192, rm1.getResourceTrackerService());
    nm.registerNode();
    RMApp app = MockRMAppSubmitter.submit(rm1,
        MockRMAppSubmissionData.Builder.createWithMemory(1024, rm1).withQueue("prod").withUser("user").build());
    MockAM am = MockRM.launchAndRegisterAM(app, rm1, nm);
    ApplicationAttemptId attempt = am.getApplicationAttemptId();
    am.allocate(NODE.split(":")[0], 1024, 2, List.of());
    List<Container> got = new ArrayList<>();
    await(rm1, nm, "two containers from the FIFO", () -> {
      try {
        got.addAll(am.allocate(List.of(), List.of()).getAllocatedContainers());
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
      return got.size() >= 2;
    });
    List<NMContainerStatus> running = new ArrayList<>();
    for (RMContainer c : scheduler(rm1).getApplicationAttempt(attempt).getLiveContainers()) {
      nm.nodeHeartbeat(attempt, c.getContainerId().getContainerId(), ContainerState.RUNNING);
      running.add(NMContainerStatus.newInstance(c.getContainerId(), 0, ContainerState.RUNNING,
          c.getAllocatedResource(), "", 0, Priority.newInstance(0), c.getCreationTime()));
    }
    rm1.drainEvents();
    assertEquals(3, running.size(), "the AM and two containers run");
    List<String> before = figures(rm1, nm, attempt);
    assertTrue(before.contains("prod allocated 3072 MB 3 containers") && before.contains("user allocated 3072 MB")
        && before.contains("node containers 3") && before.contains("app queue root.prod"), before.toString());

    MockRM rm2 = start((MemoryRMStateStore) rm1.getRMStateStore());
    nm.setResourceTrackerService(rm2.getResourceTrackerService());
    nm.registerNode(running, null);
    await(rm2, nm, "the app and its containers to be recovered", () ->
        scheduler(rm2).getApplicationAttempt(attempt) != null
            && scheduler(rm2).getApplicationAttempt(attempt).getLiveContainers().size() == 3);
    // The root's available figure is refreshed on the node's events, the
    // heartbeat after the recovery at the latest: wait for that, not a race.
    try {
      await(rm2, nm, "the figures of before the restart", () -> before.equals(figures(rm2, nm, attempt)));
    } catch (AssertionError timedOut) {
      assertEquals(before, figures(rm2, nm, attempt));
    }

    // A policy that registers now is sent what was recovered, in its first (full) call.
    List<String> payloads = Collections.synchronizedList(new ArrayList<>());
    String session = register(rm2, PolicyLinkTest.policy(p -> {
      payloads.add(p);
      return "{}";
    }));
    await(rm2, nm, "the policy's first call", () -> !payloads.isEmpty());
    String full = payloads.get(0);
    assertTrue(full.contains("\"full\":true") || full.contains("\"full\": true"), full);
    for (NMContainerStatus c : running) {
      assertTrue(full.contains(c.getContainerId().toString()), c.getContainerId() + " in " + full);
    }
    assertTrue(full.contains("root.prod"), full);
    scheduler(rm2).runtime().link().unregister(session);

    // New containers carry the new RM's epoch; the old ones keep theirs.
    am.setAMRMProtocol(rm2.getApplicationMasterService(), rm2.getRMContext());
    am.registerAppAttempt(true);
    am.allocate(NODE.split(":")[0], 1024, 1, List.of());
    List<Container> more = new ArrayList<>();
    await(rm2, nm, "a container from the new RM", () -> {
      try {
        more.addAll(am.allocate(List.of(), List.of()).getAllocatedContainers());
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
      return !more.isEmpty();
    });
    long epoch = rm2.getRMContext().getEpoch();
    assertTrue(epoch >= 1, "the restart began a new epoch");
    ContainerId fresh = more.get(0).getId();
    assertEquals(epoch, fresh.getContainerId() >> 40, fresh.toString());
    assertEquals(0, running.get(0).getContainerId().getContainerId() >> 40);
  }

  /** Python's placement is the app's queue in the state store: a restarted RM recovers it there. */
  @Test
  void anAppIsRecoveredInTheQueuePythonPlacedIt() throws Exception {
    MockRM rm1 = start(null);
    PolicyServer placing = PolicyLinkTest.policy(p -> "{}", p -> "{}", "root.placed");
    register(rm1, placing);
    RMApp app = MockRMAppSubmitter.submit(rm1,
        MockRMAppSubmissionData.Builder.createWithMemory(1024, rm1).withQueue("default").withUser("user").build());
    rm1.waitForState(app.getApplicationId(), RMAppState.ACCEPTED);
    assertEquals("root.placed", app.getQueue());
    rm1.drainEvents();

    MockRM rm2 = start((MemoryRMStateStore) rm1.getRMStateStore());
    rm2.waitForState(app.getApplicationId(), RMAppState.ACCEPTED);
    assertEquals("root.placed", rm2.getRMContext().getRMApps().get(app.getApplicationId()).getQueue());
    assertEquals(List.of(app.getCurrentAppAttempt().getAppAttemptId()),
        scheduler(rm2).getAppsInQueue("root.placed"));
  }
}
