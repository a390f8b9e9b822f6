package org.slotwise.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class PolicyLinkTest {
  private static final long TIMEOUT_MS = 200;

  private final AtomicInteger resyncs = new AtomicInteger();
  private final PolicyLink link = new PolicyLink(TIMEOUT_MS, resyncs::incrementAndGet);

  @AfterEach
  void stop() {
    link.stop();
  }

  /** A policy whose heartbeat answer is computed by a function. */
  private static PolicyServer policy(Function<String, String> heartbeat) {
    return new PolicyServer() {
      @Override
      public String heartbeat(String payload) {
        return heartbeat.apply(payload);
      }

      @Override
      public String update(String payload) {
        return "{}";
      }

      @Override
      public String place(String app) {
        return "{\"queue\": \"root.default\"}";
      }

      @Override
      public String move(String appId, String queue) {
        return "{\"queue\": \"" + queue + "\"}";
      }
    };
  }

  private Answer.Heartbeat heartbeat() {
    return link.call("heartbeat", () -> "{}", PolicyServer::heartbeat, Answer::heartbeat);
  }

  @Test
  void noPolicyFailsAtOnceAndAsksForAResync() {
    assertFalse(link.hasPolicy());
    assertNull(heartbeat());
    assertEquals(1, resyncs.get());
    assertTrue(link.isInFallback());
  }

  @Test
  void answersAreParsedAndEndTheEpisode() {
    assertNull(heartbeat());
    link.register(policy(p -> "{\"assign\": [[\"application_1_0001\", \"h:1\", 1,"
        + " \"off_switch\", \"e1\"]]}"));
    Answer.Heartbeat h = heartbeat();
    assertEquals("e1", h.assign.get(0).engineId);
    assertFalse(link.isInFallback());
  }

  @Test
  void exceptionsAndBadAnswersAreFailures() {
    link.register(policy(p -> {
      throw new IllegalStateException("boom");
    }));
    int before = resyncs.get();
    assertNull(heartbeat());
    assertEquals(before + 1, resyncs.get());
    link.register(policy(p -> "{\"assign\": 7}"));
    assertNull(heartbeat());
    link.register(policy(p -> null));
    assertNull(heartbeat());
    assertEquals(3, link.getFailureCount());
  }

  @Test
  void aHungCallMissesTheDeadlineAndTheNextCallFallsBackAtOnce() throws Exception {
    CountDownLatch release = new CountDownLatch(1);
    AtomicInteger calls = new AtomicInteger();
    link.register(policy(p -> {
      calls.incrementAndGet();
      try {
        release.await(10, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      return "{}";
    }));
    long t0 = System.nanoTime();
    assertNull(heartbeat());
    long first = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
    assertTrue(first >= TIMEOUT_MS - 20 && first < TIMEOUT_MS + 1000, "first call took " + first);

    int resyncsAfterTimeout = resyncs.get();
    t0 = System.nanoTime();
    assertNull(heartbeat());
    long second = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
    assertEquals(resyncsAfterTimeout, resyncs.get(), "a call not made loses no deltas");
    assertTrue(second < TIMEOUT_MS / 2, "second call took " + second);
    assertEquals(1, calls.get(), "calls must not pile up behind a hung one");

    release.countDown();
    long until = System.currentTimeMillis() + 5000;
    Answer.Heartbeat h = null;
    while (h == null && System.currentTimeMillis() < until) {
      Thread.sleep(20);
      h = heartbeat();
    }
    assertTrue(h != null, "Python answers again once the hung call is over");
    assertFalse(link.isInFallback());
  }

  @Test
  void theFirstCallOfANewPolicyMayHaveALongerDeadline() {
    link.register(policy(p -> {
      try {
        Thread.sleep(TIMEOUT_MS + 100);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      return "{}";
    }));
    assertTrue(link.isCold());
    assertTrue(link.call("heartbeat", PolicyLink.WARMUP_MS, () -> "{}", PolicyServer::heartbeat,
        Answer::heartbeat) != null);
    assertFalse(link.isCold());
  }

  @Test
  void aNewPolicyReplacesAHungOne() {
    CountDownLatch never = new CountDownLatch(1);
    link.register(policy(p -> {
      try {
        never.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      return "{}";
    }));
    assertNull(heartbeat());
    link.register(policy(p -> "{}"));
    assertTrue(heartbeat() != null);
  }

  @Test
  void fallbackHeartbeatsAreReportedOnceDelivered() {
    AtomicLong seen = new AtomicLong(-1);
    link.fallbackHeartbeat();
    link.fallbackHeartbeat();
    link.register(policy(p -> {
      throw new IllegalStateException("down");
    }));
    assertNull(link.call("heartbeat", () -> {
      seen.set(link.fallbacksToReport());
      return "{}";
    }, PolicyServer::heartbeat, Answer::heartbeat));
    assertEquals(2, seen.get());
    link.fallbackHeartbeat();
    link.register(policy(p -> "{}"));
    link.call("heartbeat", () -> {
      seen.set(link.fallbacksToReport());
      return "{}";
    }, PolicyServer::heartbeat, Answer::heartbeat);
    assertEquals(3, seen.get(), "a failed call reports its count again");
    link.call("heartbeat", () -> {
      seen.set(link.fallbacksToReport());
      return "{}";
    }, PolicyServer::heartbeat, Answer::heartbeat);
    assertEquals(0, seen.get());
    assertEquals(3, link.getFallbackCount());
  }
}
