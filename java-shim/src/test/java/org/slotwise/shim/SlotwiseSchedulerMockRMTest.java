package org.slotwise.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.api.records.ApplicationAttemptId;
import org.apache.hadoop.yarn.api.records.Priority;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.api.records.ResourceRequest;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.resourcemanager.MockAM;
import org.apache.hadoop.yarn.server.resourcemanager.MockNM;
import org.apache.hadoop.yarn.server.resourcemanager.MockRM;
import org.apache.hadoop.yarn.server.resourcemanager.MockRMAppSubmitter;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.RMApp;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.RMAppState;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.SchedulerNodeReport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

/**
 * {@link SlotwiseScheduler} inside Hadoop's own RM test scaffolding (MockRM,
 * MockNM, MockAM), in this JVM: with no Python the FIFO fallback schedules;
 * with a scripted policy registered, the payload it is sent names the node
 * and the app's asks, and its assignments are carried out (or refused, with
 * the reason, when the node cannot take them), and an app that ends is
 * removed with its final state.
 */
class SlotwiseSchedulerMockRMTest {
  private static final Pattern APP_ID = Pattern.compile("\"id\":\\s*\"(application_\\d+_\\d+)\"");

  @TempDir
  Path dir;
  private MockRM rm;
  /** What placesTheAm left: the payloads Python was sent, its node, its app and AM. */
  private final List<String> payloads = Collections.synchronizedList(new ArrayList<>());
  private MockNM nm;
  private RMApp app;
  private MockAM am;

  @BeforeEach
  void start() {
    Configuration conf = new YarnConfiguration();
    conf.set(YarnConfiguration.RM_SCHEDULER, SlotwiseScheduler.class.getName());
    conf.set(ShimRuntime.TOKEN_FILE, dir.resolve("gateway.token").toString());
    conf.set(ShimRuntime.INFO_FILE, dir.resolve("gateway.json").toString());
    conf.setBoolean(SlotwiseScheduler.ASYNC, false); // each NODE_UPDATE calls Python itself: deterministic here
    conf.setBoolean(SlotwiseScheduler.SCHEDULER_INFO, false);
    conf.setLong(ShimRuntime.TIMEOUT_MS, 30_000);
    rm = new MockRM(conf);
    rm.start();
  }

  @AfterEach
  void stop() {
    if (rm != null) {
      rm.stop();
    }
  }

  private SlotwiseScheduler scheduler() {
    return (SlotwiseScheduler) rm.getResourceScheduler();
  }

  /**
   * Asks are rounded up as YARN's FairScheduler rounds them, to a multiple
   * of its increment allocation (1,024 MB by default; the min allocation's
   * step would give 512 MB containers where it gives 1,024 MB ones).
   */
  @Test
  void asksAreRoundedAsTheFairSchedulerRoundsThem() {
    Configuration base = rm.getConfig();
    rm.stop(); // one RM at a time in this directory
    rm = null;
    for (String increment : new String[] {null, "256", "200"}) {
      long[] got = new long[2];
      String[] schedulers = {SlotwiseScheduler.class.getName(),
          org.apache.hadoop.yarn.server.resourcemanager.scheduler.fair.FairScheduler.class.getName()};
      for (int i = 0; i < 2; i++) {
        Configuration conf = new YarnConfiguration(base);
        conf.set(YarnConfiguration.RM_SCHEDULER, schedulers[i]);
        conf.setInt(YarnConfiguration.RM_SCHEDULER_MINIMUM_ALLOCATION_MB, 128);
        if (increment != null) {
          conf.set("yarn.resource-types.memory-mb.increment-allocation", increment);
        }
        MockRM other = new MockRM(conf);
        other.start();
        try {
          got[i] = other.getResourceScheduler().getNormalizedResource(Resource.newInstance(600, 1),
              Resource.newInstance(8192, 8)).getMemorySize();
        } finally {
          other.stop();
        }
      }
      assertEquals(got[1], got[0], "increment " + increment);
      assertEquals(increment == null ? 1024 : increment.equals("256") ? 768 : 600, got[0], "increment " + increment);
    }
  }

  @Test
  void withoutPythonTheFifoFallbackLaunchesTheAm() throws Exception {
    MockNM nm = rm.registerNode("127.0.0.1:1234", 4096);
    RMApp app = MockRMAppSubmitter.submitWithMemory(1024, rm);
    MockAM am = MockRM.launchAndRegisterAM(app, rm, nm);
    SchedulerNodeReport report = scheduler().getNodeReport(nm.getNodeId());
    assertEquals(1024, report.getUsedResource().getMemorySize());
    assertEquals(3072, report.getAvailableResource().getMemorySize());
    assertTrue(am.getApplicationAttemptId() != null);
  }

  /**
   * Which level a request allows on a node is Hadoop's own rule
   * (AppSchedulingInfo's asks, relaxLocality as FSAppAttempt reads it):
   * a container asked on a host of another rack, ANY not to be relaxed,
   * never lands here, even from the FIFO; once ANY may be relaxed it does.
   */
  @Test
  void onlyWhatHadoopsLocalityRuleAllowsIsPlaced() throws Exception {
    MockNM nm = rm.registerNode("127.0.0.1:1234", 8192);
    RMApp app = MockRMAppSubmitter.submitWithMemory(1024, rm);
    MockAM am = MockRM.launchAndRegisterAM(app, rm, nm);
    am.allocate(asks("elsewhere", false), List.of());
    for (int i = 0; i < 5; i++) {
      nm.nodeHeartbeat(true);
      rm.drainEvents();
    }
    assertEquals(1024, used(nm), "only the AM: the strict ask may not run on this node");
    am.allocate(asks("elsewhere", true), List.of());
    long deadline = System.currentTimeMillis() + 30_000;
    while (used(nm) < 2048 && System.currentTimeMillis() < deadline) {
      nm.nodeHeartbeat(true);
      rm.drainEvents();
      Thread.sleep(50);
    }
    assertEquals(2048, used(nm), "relaxed, it runs off-switch here");
  }

  /**
   * The RM's truth Python checks its view against: an app's pending is what
   * its ANY asks still count (the asks Python is sent, summed) as the AM asks,
   * containers are placed, it asks again and its attempt stops.
   */
  @Test
  void theTruthsPendingIsTheSumOfTheAnyAsks() throws Exception {
    MockNM nm = rm.registerNode("127.0.0.1:1234", 8192);
    RMApp app = MockRMAppSubmitter.submitWithMemory(1024, rm);
    MockAM am = MockRM.launchAndRegisterAM(app, rm, nm);
    SlotwiseAppAttempt attempt = scheduler().getApplicationAttempt(am.getApplicationAttemptId());
    Resource size = Resource.newInstance(1024, 1);
    am.allocate(List.of(ResourceRequest.newInstance(Priority.newInstance(1), ResourceRequest.ANY, size, 3)), List.of());
    assertTruthMatchesAsks(attempt, 3072);
    for (int i = 0; i < 5 && used(nm) < 4096; i++) {
      nm.nodeHeartbeat(true);
      rm.drainEvents();
    }
    assertEquals(4096, used(nm), "the AM and three containers");
    assertTruthMatchesAsks(attempt, 0);
    am.allocate(List.of(ResourceRequest.newInstance(Priority.newInstance(2), ResourceRequest.ANY, size, 2)), List.of());
    assertTruthMatchesAsks(attempt, 2048);
    assertEquals(4, SlotwiseScheduler.appCheck("a", attempt).containers());
    attempt.stop(org.apache.hadoop.yarn.server.resourcemanager.rmapp.attempt.RMAppAttemptState.KILLED);
    assertTruthMatchesAsks(attempt, 0);
  }

  private static void assertTruthMatchesAsks(SlotwiseAppAttempt attempt, long mb) {
    long asked = 0;
    for (Messages.Ask a : SlotwiseScheduler.asks(attempt)) {
      asked += ResourceRequest.ANY.equals(a.name()) ? a.resource().memoryMb() * a.count() : 0;
    }
    assertEquals(mb, asked, "the ANY asks");
    assertEquals(mb, SlotwiseScheduler.appCheck("a", attempt).pending().memoryMb(), "the truth's pending");
  }

  /** One 1 GB container on {@code host} of rack /other: ANY relaxable or not. */
  private static List<ResourceRequest> asks(String host, boolean relax) {
    Priority p = Priority.newInstance(1);
    Resource size = Resource.newInstance(1024, 1);
    return List.of(ResourceRequest.newInstance(p, host, size, 1, true),
        ResourceRequest.newInstance(p, "/other", size, 1, true),
        ResourceRequest.newInstance(p, ResourceRequest.ANY, size, 1, relax));
  }

  private long used(MockNM nm) {
    return scheduler().getNodeReport(nm.getNodeId()).getUsedResource().getMemorySize();
  }

  @Test
  void aRegisteredPolicyIsSentTheNodeAndTheAsksAndItsAssignmentIsCarriedOut() throws Exception {
    placesTheAm(false);
  }

  /**
   * Python offers the AM node-local first, which its ask (ANY only) does not
   * allow: the shim refuses it, says why in the next payload, and the same
   * heartbeat path carries out the off-switch offer that follows.
   */
  @Test
  void anAssignmentTheAskDoesNotAllowIsRefusedWithItsReasonAndTheNextOfferTaken() throws Exception {
    String sent = placesTheAm(true);
    assertTrue(sent.contains("\"rejected\"") && sent.contains("locality"), "the refusal and its reason are sent");
  }

  /**
   * An app that finishes is removed with how it ended: its AM said
   * SUCCEEDED; an app killed before it ran, KILLED (the RM's final state).
   */
  @Test
  void anAppThatEndsIsRemovedWithItsFinalState() throws Exception {
    placesTheAm(false);
    String done = app.getApplicationId().toString();
    MockRM.finishAMAndVerifyAppState(app, rm, nm, am);
    RMApp other = MockRMAppSubmitter.submitWithMemory(1024, rm);
    rm.killApp(other.getApplicationId());
    rm.waitForState(other.getApplicationId(), RMAppState.KILLED);
    String succeeded = "{\"id\":\"" + done + "\",\"final_state\":\"SUCCEEDED\"}";
    String killed = "{\"id\":\"" + other.getApplicationId() + "\",\"final_state\":\"KILLED\"}";
    long deadline = System.currentTimeMillis() + 30_000;
    while (!(sent().contains(succeeded) && sent().contains(killed)) && System.currentTimeMillis() < deadline) {
      nm.nodeHeartbeat(true);
      rm.drainEvents();
      Thread.sleep(50);
    }
    String sent = sent();
    assertTrue(sent.contains(succeeded), "the finished app's final state is sent");
    assertTrue(sent.contains(killed), "the killed app's final state is sent");
    assertTrue(sent.contains("\"apps_removed\":[\"" + done + "\""), "with its removal");
  }

  /**
   * The update's two calls: what Python has not seen goes first on the line,
   * as a heartbeat with no beats (the full state, first); the pass follows on
   * the update line with no deltas. While that pass is held in Python, an
   * app is placed and its AM assigned and carried out on the line.
   */
  @Test
  void whileTheUpdatePassIsHeldInPythonHeartbeatsAreAnsweredAndCarriedOut() throws Exception {
    nm = rm.registerNode("127.0.0.1:1234", 4096);
    List<String> passes = Collections.synchronizedList(new ArrayList<>());
    java.util.concurrent.CountDownLatch held = new java.util.concurrent.CountDownLatch(1);
    java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
    Set<String> apps = ConcurrentHashMap.newKeySet();
    Set<String> placed = ConcurrentHashMap.newKeySet();
    PolicyServer policy = PolicyLinkTest.policy(payload -> {
      payloads.add(payload);
      for (Matcher m = APP_ID.matcher(payload); m.find(); ) {
        apps.add(m.group(1));
      }
      for (String id : apps) {
        if (payload.contains("\"beats\"") && placed.add(id)) {
          return "{\"assign\": [{\"app\": \"" + id + "\", \"node\": \"127.0.0.1:1234\", \"priority\": 0, "
              + "\"locality\": \"off_switch\", \"engine_id\": \"e-" + id + "\"}]}";
        }
      }
      return "{}";
    }, payload -> {
      passes.add(payload);
      held.countDown();
      try {
        release.await(60, java.util.concurrent.TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      return "{}";
    }, p -> "{\"pid\": 3}");
    // Submitted first: MockRM's submission runs an update itself, which would wait for the held one.
    app = MockRMAppSubmitter.submitWithMemory(1024, rm);
    try {
      Messages.Registered answer = scheduler().runtime().registerPolicy(policy, PolicyLink.write(
          new Messages.Register(Messages.PROTOCOL, 40003, "t".repeat(64), true,
              new Messages.ServerInfo(3, "host", "/a.xml", 0, "test", null))));
      assertTrue(answer.session() != null, String.valueOf(answer.refused()));
      assertTrue(held.await(60, java.util.concurrent.TimeUnit.SECONDS), "the first pass is in Python");
      assertTrue(sent().startsWith("{\"full\":true") && !sent().contains("\"beats\""),
          "the full state went first, on the line, with no beats: " + sent());
      long until = System.currentTimeMillis() + 30_000; // MockRM's launchAM would run an update itself
      while (used(nm) < 1024 && System.currentTimeMillis() < until) {
        nm.nodeHeartbeat(true);
        rm.drainEvents();
        Thread.sleep(50);
      }
      assertEquals(1024, used(nm), "the AM placed");
      assertEquals(Set.of(app.getApplicationId().toString()), placed, "by Python, meanwhile");
      assertEquals(1, passes.size(), "and the pass is still held");
    } finally {
      release.countDown();
    }
    long deadline = System.currentTimeMillis() + 30_000;
    while (passes.size() < 2 && System.currentTimeMillis() < deadline) {
      Thread.sleep(50);
    }
    assertTrue(passes.size() >= 2, "the update goes on");
    for (String pass : passes) {
      assertTrue(pass.matches("\\{\"now_ms\": \\d+\\}"), "a pass carries no deltas: " + pass);
    }
  }

  private String sent() {
    synchronized (payloads) {
      return String.join("\n", payloads);
    }
  }

  private String placesTheAm(boolean nodeLocalFirst) throws Exception {
    nm = rm.registerNode("127.0.0.1:1234", 4096);
    Set<String> apps = ConcurrentHashMap.newKeySet();
    Set<String> placed = ConcurrentHashMap.newKeySet();
    Set<String> triedLocal = ConcurrentHashMap.newKeySet();
    Function<String, String> policy = payload -> {
      payloads.add(payload);
      Matcher m = APP_ID.matcher(payload);
      while (m.find()) {
        apps.add(m.group(1));
      }
      if (!payload.contains("\"beats\"")) {
        return "{}";
      }
      // Each app's AM on the node that beats, once, as Python would.
      for (String app : apps) {
        String level = nodeLocalFirst && triedLocal.add(app) ? "node_local" : "off_switch";
        if (level.equals("node_local") || placed.add(app)) {
          return "{\"assign\": [{\"app\": \"" + app + "\", \"node\": \"127.0.0.1:1234\", \"priority\": 0, "
              + "\"locality\": \"" + level + "\", \"engine_id\": \"e-" + level + "-" + app + "\"}]}";
        }
      }
      return "{}";
    };
    Messages.Registered answer = scheduler().runtime().registerPolicy(PolicyLinkTest.policy(policy),
        PolicyLink.write(new Messages.Register(Messages.PROTOCOL, 40003, "t".repeat(64), true,
            new Messages.ServerInfo(3, "host", "/a.xml", 0, "test", null))));
    assertTrue(answer.session() != null, String.valueOf(answer.refused()));
    assertEquals(false, answer.shim().preemption(), "Hadoop's default: off");

    // Its first call (the full update that opens the callback connection) has been answered.
    long deadline = System.currentTimeMillis() + 30_000;
    while (scheduler().runtime().link().status(answer.session()).inFallback() && System.currentTimeMillis() < deadline) {
      nm.nodeHeartbeat(true);
      Thread.sleep(50);
    }
    Messages.ShimStatus before = scheduler().runtime().link().status(answer.session());
    assertEquals(false, before.inFallback(), String.valueOf(before.reason()));

    app = MockRMAppSubmitter.submitWithMemory(1024, rm);
    am = MockRM.launchAndRegisterAM(app, rm, nm);
    ApplicationAttemptId attempt = am.getApplicationAttemptId();
    Messages.ShimStatus after = scheduler().runtime().link().status(answer.session());
    assertEquals(before.fallbackHeartbeats(), after.fallbackHeartbeats(), "no heartbeat went to the FIFO");
    assertTrue(after.heartbeats() > before.heartbeats());
    assertEquals(1024, scheduler().getNodeReport(nm.getNodeId()).getUsedResource().getMemorySize());
    String sent = sent();
    assertTrue(sent.contains("127.0.0.1:1234"), "the node is in the payload");
    assertTrue(sent.contains(attempt.getApplicationId().toString()), "the app is in the payload");
    assertEquals(Set.of(attempt.getApplicationId().toString()), placed, "Python placed its AM");
    return sent;
  }
}
