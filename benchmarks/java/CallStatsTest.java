package org.slotwise.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;

import org.junit.jupiter.api.Test;

class CallStatsTest {

  @SuppressWarnings("unchecked")
  private static Map<String, Object> parse(String json) {
    try {
      return PolicyLink.MAPPER.readValue(json, Map.class);
    } catch (java.io.IOException e) {
      throw new AssertionError(e);
    }
  }

  @SuppressWarnings("unchecked")
  private static long get(Map<String, Object> m, String key, String field) {
    return ((Number) ((Map<String, Object>) m.get(key)).get(field)).longValue();
  }

  @Test
  void nearestRankPercentiles() {
    long[] hundred = new long[100];
    for (int i = 0; i < 100; i++) {
      hundred[i] = i + 1;
    }
    assertEquals(50, CallStats.percentile(hundred, 0.50));
    assertEquals(90, CallStats.percentile(hundred, 0.90));
    assertEquals(99, CallStats.percentile(hundred, 0.99));
    assertEquals(100, CallStats.percentile(hundred, 0.999));
    assertEquals(1, CallStats.percentile(hundred, 0.0));
    assertEquals(7, CallStats.percentile(new long[] {7}, 0.99));
    assertEquals(0, CallStats.percentile(new long[0], 0.5));
  }

  @Test
  @SuppressWarnings("unchecked")
  void givesEverySamplesTotalInMicrosecondsSortedOnlyWhenAsked() {
    CallStats s = new CallStats(1000);
    s.record(1, 1, 1, 3_500, 1, 1);
    s.record(1, 1, 1, 1_999, 1, 1);
    s.record(1, 1, 1, 2_000_000, 1, 1);
    assertTrue(!parse(s.toJson(false)).containsKey("total_us"));
    java.util.List<Number> us = (java.util.List<Number>) parse(s.toJson(false, true)).get("total_us");
    assertEquals(java.util.List.of(1L, 3L, 2000L), us.stream().map(Number::longValue).toList());
  }

  @Test
  void summarisesTheSamples() {
    CallStats s = new CallStats(1000);
    for (int i = 1; i <= 200; i++) {
      // recorded out of order: the summary sorts
      long v = (i * 37L) % 200 + 1;
      s.record(v, 10 * v, 2 * v, 3 * v, 100, i <= 100 ? 10 : 30);
    }
    Map<String, Object> m = parse(s.toJson(false));
    assertEquals(200L, ((Number) m.get("count")).longValue());
    assertEquals(200L, ((Number) m.get("samples")).longValue());
    assertEquals(3 * 100L, get(m, "total_ns", "p50"));
    assertEquals(3 * 180L, get(m, "total_ns", "p90"));
    assertEquals(3 * 198L, get(m, "total_ns", "p99"));
    assertEquals(3 * 200L, get(m, "total_ns", "p999"));
    assertEquals(3 * 200L, get(m, "total_ns", "max"));
    assertEquals(3 * 201 / 2, get(m, "total_ns", "mean")); // 3 * 100.5, truncated
    assertEquals(2 * 198L, get(m, "invoke_ns", "p99"));
    assertEquals(10 * 100L, get(m, "build_ns", "p50"));
    assertEquals(200L, get(m, "wait_ns", "max"));
    assertEquals(100L, get(m, "payload_chars", "mean"));
    assertEquals(20L, get(m, "answer_chars", "mean"));
    assertEquals(30L, get(m, "answer_chars", "max"));
  }

  @Test
  void keepsOnlyTheLastSamplesButCountsAll() {
    CallStats s = new CallStats(4);
    for (long v = 1; v <= 10; v++) {
      s.record(0, 0, 0, v, 0, 0);
    }
    Map<String, Object> m = parse(s.toJson(false));
    assertEquals(10L, ((Number) m.get("count")).longValue());
    assertEquals(4L, ((Number) m.get("samples")).longValue());
    assertEquals(8L, get(m, "total_ns", "p50")); // the last four: 7, 8, 9, 10
    assertEquals(10L, get(m, "total_ns", "max"));
    assertEquals((7 + 8 + 9 + 10) / 4L, get(m, "total_ns", "mean"));
  }

  @Test
  void resetStartsAfresh() {
    CallStats s = new CallStats(8);
    s.record(1, 1, 1, 500, 1, 1);
    Map<String, Object> before = parse(s.toJson(true));
    assertEquals(500L, get(before, "total_ns", "max"));
    Map<String, Object> empty = parse(s.toJson(false));
    assertEquals(0L, ((Number) empty.get("count")).longValue());
    assertEquals(0L, ((Number) empty.get("samples")).longValue());
    assertEquals(0L, get(empty, "total_ns", "p99"));
    assertEquals(0L, get(empty, "payload_chars", "mean"));
    s.record(1, 1, 1, 3, 1, 1);
    assertEquals(3L, get(parse(s.toJson(false)), "total_ns", "max"));
  }

  @Test
  void policyLinkReportsSuccessfulCallsOnlyToItsObserver() {
    CallStats observer = new CallStats();
    PolicyLink link = new PolicyLink(30_000, () -> { }, new PolicyLink.Callbacks(1000), observer);
    try {
      Turns.heartbeat(link); // no policy
      assertEquals(0, CallStats.of("heartbeat").count());
      link.register(PolicyLinkTest.policy(
          payload -> payload.equals("bad") ? "not json" : "{\"assign\": []}"),
          new Messages.Register(Messages.PROTOCOL, 40000, "t".repeat(64), true,
              new Messages.ServerInfo(1, "h", "a", 0, "v", null)),
          new Messages.ShimInfo("t", Messages.Kind.YARN, 1, 200, 500, java.util.List.of(), false));
      for (int i = 0; i < 3; i++) {
        Turns.call(link, 30_000, "{\"now_ms\":1}", Messages.HeartbeatAnswer.class, a -> { });
      }
      Turns.call(link, 30_000, "bad", Messages.HeartbeatAnswer.class, a -> { });
      Map<String, Object> m = parse(CallStats.json("heartbeat", false));
      assertEquals(3L, ((Number) m.get("count")).longValue());
      assertEquals(12L, get(m, "payload_chars", "mean"));
      assertEquals(14L, get(m, "answer_chars", "max")); // {"assign": []}
      assertTrue(get(m, "total_ns", "p50") >= get(m, "invoke_ns", "p50"));
      assertTrue(get(m, "invoke_ns", "p50") > 0);
      assertEquals(0, CallStats.of("update").count());
    } finally {
      link.stop();
    }
  }
}
