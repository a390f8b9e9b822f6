package org.slotwise.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.ConnectException;
import java.net.SocketTimeoutException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import py4j.Py4JException;
import py4j.Py4JNetworkException;

class PolicyLinkTest {
  private static final int TIMEOUT_MS = 200;
  private static final Messages.ShimInfo SHIM =
      new Messages.ShimInfo("t", Messages.Kind.YARN, Messages.PROTOCOL, TIMEOUT_MS, 500, List.of(), false);

  private final AtomicInteger resyncs = new AtomicInteger();
  private final PolicyLink.Callbacks callbacks = new PolicyLink.Callbacks(1000);
  private final PolicyLink link = new PolicyLink(TIMEOUT_MS, resyncs::incrementAndGet, callbacks,
      null);

  @AfterEach
  void stop() {
    link.stop();
  }

  /** A policy whose heartbeat answer is computed by a function; it answers pings. */
  static PolicyServer policy(Function<String, String> heartbeat) {
    return policy(heartbeat, p -> "{\"pid\": 1}");
  }

  /** A policy whose heartbeat and ping answers are computed by functions. */
  static PolicyServer policy(Function<String, String> heartbeat, Function<String, String> ping) {
    return policy(heartbeat, ping, "root.default");
  }

  /** The same, placing every app in {@code queue}. */
  static PolicyServer policy(Function<String, String> heartbeat, Function<String, String> ping, String queue) {
    return new PolicyServer() {
      @Override
      public String heartbeat(String payload) {
        return heartbeat.apply(payload);
      }

      @Override
      public String update(String payload) {
        return heartbeat.apply(payload);
      }

      @Override
      public String place(String app) {
        return "{\"queue\": \"" + queue + "\"}";
      }

      @Override
      public String move(String request) {
        return "{\"error\": \"no\"}";
      }

      @Override
      public String ping(String p) {
        return ping.apply(p);
      }
    };
  }

  private static Messages.Register registration(long pid, boolean takeover) {
    return new Messages.Register(Messages.PROTOCOL, 40000 + (int) pid, "t".repeat(64), takeover,
        new Messages.ServerInfo(pid, "host", "/alloc.xml", 0, "test", null));
  }

  private String register(PolicyServer p) {
    return register(p, 1, true);
  }

  private String register(PolicyServer p, long pid, boolean takeover) {
    Messages.Registered r = link.register(p, registration(pid, takeover), SHIM);
    return r.session();
  }

  private Messages.HeartbeatAnswer heartbeat() {
    return Turns.heartbeat(link);
  }

  /** A heartbeat the test expects answered: a deadline no slow machine misses. */
  private Messages.HeartbeatAnswer answered() {
    return Turns.call(link, 30_000, "{}", Messages.HeartbeatAnswer.class, a -> { });
  }

  /** A policy whose heartbeat and update answers are computed by functions of their own. */
  static PolicyServer policy(Function<String, String> heartbeat, Function<String, String> update,
      Function<String, String> ping) {
    PolicyServer both = policy(heartbeat, ping);
    return new PolicyServer() {
      @Override
      public String heartbeat(String payload) {
        return both.heartbeat(payload);
      }

      @Override
      public String update(String payload) {
        return update.apply(payload);
      }

      @Override
      public String place(String app) {
        return both.place(app);
      }

      @Override
      public String move(String request) {
        return both.move(request);
      }

      @Override
      public String ping(String p) {
        return both.ping(p);
      }
    };
  }

  /** Waits on a latch the test counts down, however slow the machine. */
  private static String await(CountDownLatch latch, String answer) {
    try {
      latch.await(60, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return answer;
  }

  /**
   * The update goes on a line of its own: while an update call is stuck in
   * Python, heartbeats are made and answered, none waiting for the line, and
   * the update is answered after them.
   */
  @Test
  void aSlowUpdateInFlightDoesNotDelayAHeartbeat() throws Exception {
    CountDownLatch inPython = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    List<Long> waits = new java.util.concurrent.CopyOnWriteArrayList<>();
    PolicyLink timed = new PolicyLink(60_000, 3, 10_000, System::currentTimeMillis, resyncs::incrementAndGet,
        callbacks, (method, waitNs, buildNs, invokeNs, totalNs, arg, answer) -> {
          if (method.equals("heartbeat")) {
            waits.add(waitNs);
          }
        });
    try {
      timed.register(policy(p -> "{}", p -> {
        inPython.countDown();
        return await(release, "{}");
      }, p -> "{\"pid\": 1}"), registration(1, true), SHIM);
      AtomicReference<Messages.UpdateAnswer> update = new AtomicReference<>();
      Thread updater = new Thread(() -> {
        try (PolicyLink.Turn turn = timed.updateTurn()) {
          update.set(turn.send("{\"now_ms\": 1}", Messages.UpdateAnswer.class));
        }
      });
      updater.start();
      assertTrue(inPython.await(60, TimeUnit.SECONDS), "the update reached Python");
      for (int i = 0; i < 5; i++) {
        assertNotNull(Turns.call(timed, 10_000, "{}", Messages.HeartbeatAnswer.class, a -> { }),
            "a heartbeat is answered while the update is in flight");
      }
      assertTrue(updater.isAlive() && update.get() == null, "the update is still in Python");
      assertEquals(5, waits.size());
      release.countDown();
      updater.join(60_000);
      assertNotNull(update.get(), "and answered after the heartbeats");
      assertEquals(1, resyncs.get(), "no call failed: no resync but the registration's");
      assertFalse(timed.status(null).inFallback());
    } finally {
      release.countDown();
      timed.stop();
    }
  }

  /**
   * Ordering: the deltas go on the line only, so however the calls of the
   * two lines interleave (updates held in Python while heartbeats come and
   * go, answers coming back out of order), Python applies every delta once,
   * in the order the master took them; the update line's payloads carry none.
   */
  @Test
  void reorderedCallsLoseNoDeltaAndApplyNoneTwice() throws Exception {
    PolicyLink.Deltas deltas = new PolicyLink.Deltas();
    List<String> applied = new java.util.concurrent.CopyOnWriteArrayList<>();
    List<String> onTheUpdateLine = new java.util.concurrent.CopyOnWriteArrayList<>();
    AtomicInteger heartbeatsAnswered = new AtomicInteger();
    AtomicInteger overtaken = new AtomicInteger(); // heartbeats answered while an update was in Python
    Function<String, List<String>> removed = payload -> {
      try {
        return PolicyLink.read(payload, Messages.Payload.class).appsRemoved();
      } catch (IllegalArgumentException e) {
        throw new AssertionError(payload, e);
      }
    };
    PolicyLink ordered = new PolicyLink(30_000, deltas::requireFull, callbacks, null);
    try {
      ordered.register(policy(p -> {
        applied.addAll(removed.apply(p));
        heartbeatsAnswered.incrementAndGet();
        return "{}";
      }, p -> {
        onTheUpdateLine.addAll(removed.apply(p));
        int seen = heartbeatsAnswered.get();
        long until = System.currentTimeMillis() + 5_000;
        while (heartbeatsAnswered.get() < seen + 2 && System.currentTimeMillis() < until) {
          Thread.onSpinWait(); // held until two heartbeats went past it
        }
        if (heartbeatsAnswered.get() >= seen + 2) {
          overtaken.incrementAndGet();
        }
        return "{}";
      }, p -> "{\"pid\": 1}"), registration(1, true), SHIM);
      deltas.take(); // the registration's full resync, as if sent
      java.util.function.Consumer<String> onTheLine = what -> {
        try (PolicyLink.Turn turn = ordered.turn(what)) {
          assertNotNull(turn);
          PolicyLink.Deltas.Taken t = deltas.take();
          assertFalse(t.full(), "no call failed: no resync");
          assertNotNull(turn.send(PolicyLink.write(t.payload(null, null, null, null, null, null)),
              Messages.HeartbeatAnswer.class));
        }
      };
      int events = 400;
      Thread updates = new Thread(() -> {
        for (int i = 0; i < 5; i++) {
          onTheLine.accept(PolicyLink.DELTAS); // what the update owes first, on the line
          try (PolicyLink.Turn turn = ordered.updateTurn()) {
            assertNotNull(turn.send("{\"now_ms\": 1}", Messages.UpdateAnswer.class));
          }
        }
      });
      Thread heartbeats = new Thread(() -> {
        while (updates.isAlive() || applied.size() < events) {
          onTheLine.accept("heartbeat");
        }
      });
      updates.start();
      heartbeats.start();
      List<String> produced = new ArrayList<>();
      for (int i = 0; i < events; i++) {
        String id = String.format("application_1_%04d", i);
        produced.add(id);
        deltas.appRemoved(id, null);
        if (i % 10 == 0) {
          Thread.sleep(2);
        }
      }
      updates.join(120_000);
      heartbeats.join(120_000);
      assertEquals(events, applied.size(), "every delta once");
      assertTrue(produced.equals(applied), "in the order taken");
      assertEquals(List.of(), onTheUpdateLine, "the update line carries no deltas");
      assertTrue(overtaken.get() > 0, "heartbeats did overtake an update in flight");
    } finally {
      ordered.stop();
    }
  }

  @Test
  void noPolicyFailsAtOnceAndAsksForAResync() {
    assertFalse(link.hasPolicy());
    assertNull(heartbeat());
    assertEquals(1, resyncs.get());
    assertTrue(link.status(null).inFallback());
  }

  @Test
  void answersAreParsedAppliedAndEndTheEpisodeWhichIsReportedNext() {
    assertNull(heartbeat());
    link.fallbackHeartbeat();
    link.fallbackHeartbeat();
    register(policy(p -> "{\"assign\": [{\"app\": \"application_1_0001\", \"node\": \"h:1\","
        + " \"priority\": 1, \"locality\": \"off_switch\", \"engine_id\": \"e1\"}]}"));
    AtomicReference<Messages.HeartbeatAnswer> applied = new AtomicReference<>();
    Messages.HeartbeatAnswer h = Turns.call(link, TIMEOUT_MS, "{}", Messages.HeartbeatAnswer.class,
        applied::set);
    assertEquals("e1", h.assign().get(0).engineId());
    assertEquals(h, applied.get());
    assertFalse(link.status(null).inFallback());
    List<Messages.FallbackEpisode> episodes = link.episodesToReport();
    assertEquals(1, episodes.size());
    assertEquals(2, episodes.get(0).heartbeats());
    assertTrue(episodes.get(0).reason().contains("no policy registered"));
    assertNotNull(answered()); // it reached Python: reported, gone
    assertNull(link.episodesToReport());
  }

  /**
   * The shim skips a policy that has just registered until its warm-up call
   * answers; the heartbeats its FIFO scheduled meanwhile are in an episode
   * Python hears of, though no call failed.
   */
  @Test
  void heartbeatsWhileANewPolicyWarmsUpAreInAReportedEpisode() {
    register(policy(p -> "{}"));
    assertTrue(link.isCold());
    assertFalse(link.status(null).inFallback());
    link.fallbackHeartbeat();
    link.fallbackHeartbeat();
    assertTrue(link.status(null).inFallback());
    assertNotNull(answered());
    List<Messages.FallbackEpisode> episodes = link.episodesToReport();
    assertEquals(1, episodes.size());
    assertEquals(2, episodes.get(0).heartbeats());
    assertTrue(episodes.get(0).reason().contains("warming up"), episodes.get(0).reason());
  }

  @Test
  void exceptionsAndBadAnswersAreFailuresButKeepThePolicy() {
    register(policy(p -> {
      throw new IllegalStateException("boom");
    }));
    int before = resyncs.get();
    assertNull(heartbeat());
    assertEquals(before + 1, resyncs.get());
    assertTrue(link.hasPolicy(), "Python raising is not a broken link");
    register(policy(p -> "{\"assign\": 7}"));
    assertNull(heartbeat());
    register(policy(p -> "[[\"positional\"]]"));
    assertNull(heartbeat());
    assertEquals(3, link.status(null).failures());
  }

  @Test
  void anAnswerOutsideTheLimitsIsRefusedWholeNotAppliedAndCounted() {
    String good = "{\"app\": \"application_1_0001\", \"node\": \"h:1\", \"priority\": 1,"
        + " \"locality\": \"off_switch\", \"engine_id\": \"e1\"}";
    String bad = good.replace("\"priority\": 1", "\"priority\": 2147483648");
    register(policy(p -> "{\"assign\": [" + good + ", " + bad + "], \"preempt\": [{\"container\":"
        + " \"container_1_0001_01_000002\", \"kill\": true}]}"));
    int resyncsBefore = resyncs.get();
    AtomicInteger applied = new AtomicInteger();
    assertNull(Turns.call(link, 30_000, "{}", Messages.HeartbeatAnswer.class, a -> applied.incrementAndGet()));
    assertEquals(0, applied.get(), "nothing of it is carried out: not the good assignment, not the preemption");
    assertEquals(1, link.refusedAnswers());
    assertEquals(1, link.status(null).failures(), "a failed call: that heartbeat goes to the FIFO");
    assertEquals(resyncsBefore + 1, resyncs.get(), "its payload's deltas may be lost: full next");
    String why = "HeartbeatAnswer: $.assign[1].priority: 2147483648 is above the maximum 2147483647";
    assertEquals(why, link.lastRefusal());
    assertTrue(link.status(null).inFallback());
    assertEquals("heartbeat: " + why, link.status(null).reason());
    assertTrue(link.hasPolicy(), "a bad answer is not a broken link");

    register(policy(p -> "{\"assign\": [" + good + "]}"));
    assertNotNull(Turns.call(link, 30_000, "{}", Messages.HeartbeatAnswer.class, a -> applied.incrementAndGet()));
    assertEquals(1, applied.get());
    assertEquals(1, link.refusedAnswers());
  }

  @Test
  void aBrokenCallbackConnectionDropsThePolicyAndItsClient() {
    String session = register(policy(p -> {
      throw new Py4JException("Error while sending a command.",
          new Py4JNetworkException("Connection refused"));
    }));
    assertNotEquals(0, callbacks.getPort());
    // A deadline no loaded machine misses: the call must have failed, not timed out, when it returns.
    assertNull(Turns.call(link, 30_000, "{}", Messages.HeartbeatAnswer.class, a -> { }));
    assertFalse(link.hasPolicy());
    assertEquals(0, callbacks.getPort(), "nothing more goes to the old port");
    assertFalse(link.status(session).registered());
    assertNull(link.status(session).holder());
  }

  @Test
  void aSecondPolicyIsRefusedWhileTheFirstAnswersUnlessItTakesOver() {
    String first = register(policy(p -> "{}"), 1, false);
    assertNotNull(first);
    Messages.Registered refused = link.register(policy(p -> "{}"), registration(2, false), SHIM);
    assertNull(refused.session());
    assertTrue(refused.refused().contains("pid 1 on host"), refused.refused());
    assertEquals(1, refused.holder().pid());
    assertTrue(link.status(first).registered());
    String second = link.register(policy(p -> "{}"), registration(2, true), SHIM).session();
    assertNotNull(second);
    assertFalse(link.status(first).registered());
    assertEquals(2, link.status(first).holder().pid(), "the first one learns who replaced it");
  }

  /** A call whose socket read timed out, as Py4J's CallbackClient throws it. */
  private static Py4JException readTimeout() {
    return new Py4JException("Error while sending a command.", new Py4JNetworkException(
        "Error while receiving a command", new SocketTimeoutException("Read timed out"),
        Py4JNetworkException.ErrorTime.ERROR_ON_RECEIVE));
  }

  @Test
  void aBusyPythonIsNotDroppedUntilItsReadTimeoutsComeThreeInARow() {
    AtomicInteger slow = new AtomicInteger(2);
    String session = register(policy(p -> {
      if (slow.getAndDecrement() > 0) {
        throw readTimeout();
      }
      return "{}";
    }));
    assertNull(answered());
    assertNull(answered());
    assertTrue(link.hasPolicy(), "two read timeouts are two failed calls, not a dead Python");
    assertNotEquals(0, callbacks.getPort());
    assertNotNull(answered(), "it answers again, still registered");
    assertTrue(link.status(session).registered());

    slow.set(PolicyLink.MAX_TIMEOUTS);
    for (int i = 1; i < PolicyLink.MAX_TIMEOUTS; i++) {
      assertNull(answered());
      assertTrue(link.hasPolicy(), "an answer in between starts the count again");
    }
    assertNull(answered());
    assertFalse(link.hasPolicy(), PolicyLink.MAX_TIMEOUTS + " read timeouts in a row drop it");
    assertEquals(0, callbacks.getPort());
  }

  @Test
  void aPausedHolderKeepsItsLeaseUntilItLapsesThenAnotherTakesOver() {
    AtomicLong now = new AtomicLong(1_000_000);
    PolicyLink leased = new PolicyLink(TIMEOUT_MS, 3, 10_000, now::get, () -> { }, callbacks, null);
    CountDownLatch never = new CountDownLatch(1);
    Function<String, String> hang = p -> {
      try {
        never.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      return "{}";
    };
    try {
      String first = leased.register(policy(hang, hang), registration(1, false), SHIM).session();
      assertNotNull(first);
      now.addAndGet(9_000);
      leased.status(first); // its poll renews the lease
      now.addAndGet(9_999);
      Messages.Registered refused = leased.register(policy(p -> "{}"), registration(2, false), SHIM);
      assertNull(refused.session(), "a holder that misses a ping keeps the RM while its lease runs");
      assertTrue(refused.refused().contains("lease"), refused.refused());
      assertTrue(leased.status(null).holder().pid() == 1);
      now.addAndGet(1);
      assertNotNull(leased.register(policy(p -> "{}"), registration(2, false), SHIM).session(),
          "once the lease lapsed");
      assertFalse(leased.status(first).registered());
    } finally {
      never.countDown();
      leased.stop();
    }
  }

  @Test
  void aDeadHolderIsReplacedAtOnceWhileItsLeaseRuns() {
    PolicyServer dead = policy(p -> "{}", p -> {
      throw new Py4JException("Error while obtaining a new communication channel",
          new ConnectException("Connection refused"));
    });
    register(dead, 1, false);
    assertNotNull(register(policy(p -> "{}"), 2, false));
    PolicyServer paused = policy(p -> "{}", p -> {
      throw readTimeout();
    });
    register(paused, 3, true);
    assertNull(register(policy(p -> "{}"), 4, false), "a ping that times out is no proof of death");
  }

  @Test
  void unregisterNeedsTheSessionAndDropsThePolicy() {
    String session = register(policy(p -> "{}"));
    assertFalse(link.unregister("someone-else"));
    assertTrue(link.hasPolicy());
    assertTrue(link.unregister(session));
    assertFalse(link.hasPolicy());
    assertEquals(0, callbacks.getPort());
    assertNull(heartbeat());
  }

  @Test
  void anotherProtocolVersionIsRefused() {
    Messages.Register old = new Messages.Register(Messages.PROTOCOL + 1, 40000, "t".repeat(64), true,
        new Messages.ServerInfo(9, "h", "a", 0, "v", null));
    Messages.Registered r = link.register(policy(p -> "{}"), old, SHIM);
    assertTrue(r.refused().contains("protocol version"), r.refused());
    assertFalse(link.hasPolicy());
  }

  @Test
  void aHungCallMissesTheDeadlineAndTheNextCallFallsBackAtOnce() throws Exception {
    CountDownLatch release = new CountDownLatch(1);
    AtomicInteger calls = new AtomicInteger();
    register(policy(p -> {
      calls.incrementAndGet();
      try {
        release.await(); // stuck until the test lets it go, however slow the machine
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      return "{}";
    }));
    try {
      long t0 = System.nanoTime();
      assertNull(heartbeat());
      long first = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
      assertTrue(first >= TIMEOUT_MS - 20, "first call took " + first);

      int resyncsAfterTimeout = resyncs.get();
      assertNull(heartbeat());
      assertEquals(resyncsAfterTimeout, resyncs.get(), "a call not made loses no deltas");
      assertEquals(1, calls.get(), "calls must not pile up behind a hung one");
      assertTrue(link.hasPolicy(), "a slow Python is not dropped");
    } finally {
      release.countDown();
    }
    long until = System.currentTimeMillis() + 30_000;
    Messages.HeartbeatAnswer h = null;
    while (h == null && System.currentTimeMillis() < until) {
      Thread.sleep(20);
      h = heartbeat();
    }
    assertNotNull(h, "Python answers again once the hung call is over");
    assertFalse(link.status(null).inFallback());
  }

  @Test
  void aFullPayloadMayOutlastAHeartbeatsDeadlineAndEndsTheEpisode() {
    AtomicInteger calls = new AtomicInteger();
    register(policy(p -> {
      calls.incrementAndGet();
      try {
        Thread.sleep(TIMEOUT_MS + 300); // a resync of a large cluster: longer than a heartbeat's deadline
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      return "{}";
    }));
    answered(); // the line's first call warms it up
    int resyncsBefore = resyncs.get();
    String full = PolicyLink.write(new Messages.Payload(true, 1L, List.of(), List.of(), List.of(), List.of(),
        List.of(), List.of(), List.of(), List.of(), List.of(), null, List.of()));
    assertTrue(full.startsWith("{\"full\":true"), full);
    assertNotNull(Turns.call(link, TIMEOUT_MS, full, Messages.HeartbeatAnswer.class, a -> { }),
        "a resync is given RESYNC_MS, not the heartbeat's deadline");
    assertEquals(resyncsBefore, resyncs.get(), "an answered resync asks for no other");
    // The same slow call with deltas only is a failure (and asks for the full state next).
    assertNull(Turns.call(link, TIMEOUT_MS, "{\"now_ms\":1}", Messages.HeartbeatAnswer.class, a -> { }));
    assertEquals(resyncsBefore + 1, resyncs.get());
  }

  @Test
  void theFirstCallOfANewPolicyMayHaveALongerDeadline() {
    register(policy(p -> {
      try {
        Thread.sleep(TIMEOUT_MS + 100);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      return "{}";
    }));
    assertTrue(link.isCold());
    assertNotNull(Turns.call(link, PolicyLink.WARMUP_MS, "{}", Messages.HeartbeatAnswer.class, a -> { }));
    assertFalse(link.isCold());
  }

  @Test
  void theStatusCountsHeartbeatsAndFallbacks() {
    link.heartbeat();
    link.heartbeat();
    assertNull(heartbeat());
    link.fallbackHeartbeat();
    Messages.ShimStatus s = link.status(null);
    assertEquals(2, s.heartbeats());
    assertEquals(1, s.fallbackHeartbeats());
    assertEquals(1, s.episodeHeartbeats());
    assertTrue(s.inFallback() && s.reason().contains("no policy registered") && s.sinceMs() > 0);
  }
}
