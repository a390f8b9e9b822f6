package org.slotwise.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

/**
 * What Java sends keeps to the schema's limits however odd the master's
 * values: every message built here from out-of-range values is written and
 * read back through the same checks Python applies (PolicyLink.read validates
 * against schema.json), so Python never gets a payload it must refuse whole,
 * again and again, which would keep the master on its FIFO.
 */
class OutgoingLimitsTest {
  private static final long MAX_SAFE = 9007199254740991L; // the schema's bound on amounts

  private static <T> T roundTrip(T message, Class<T> type) {
    return PolicyLink.read(PolicyLink.write(message), type); // throws if Python would refuse it
  }

  @Test
  void amountsAreClampedIntoTheSchemasRange() {
    // A node resized below its running containers has a negative room in YARN.
    Messages.Resource room = new Messages.Resource(-2048, -1, 0, 0);
    assertEquals(new Messages.Resource(0, 0, 0, 0), roundTrip(room, Messages.Resource.class));
    Messages.Resource sum = new Messages.Resource(Long.MAX_VALUE, MAX_SAFE + 1, 3, 0);
    assertEquals(new Messages.Resource(MAX_SAFE, MAX_SAFE, 3, 0), roundTrip(sum, Messages.Resource.class));
  }

  @Test
  void countsAreClampedAndHostsOfNoContainerLeftOut() {
    Map<String, Integer> hosts = new LinkedHashMap<>();
    hosts.put("h1", 3);
    hosts.put("h2", 0);
    hosts.put("h3", -7);
    Messages.Request r = new Messages.Request(1, new Messages.Resource(1024, 1, 0, 0), -5, hosts,
        Map.of("/r", Integer.MAX_VALUE), true, java.util.Arrays.asList("/r", "", null, "/x".repeat(600)));
    Messages.Request back = roundTrip(r, Messages.Request.class);
    assertEquals(0, back.count());
    assertEquals(Map.of("h1", 3), back.hosts());
    assertEquals(Map.of("/r", Integer.MAX_VALUE), back.racks());
    assertEquals(List.of("/r"), back.strictRacks()); // no Name could be a rack's: left out
    assertEquals(0, roundTrip(new Messages.AppCheck("a", room(), room(), -1),
        Messages.AppCheck.class).containers());
  }

  private static Messages.Resource room() {
    return new Messages.Resource(0, 0, 0, 0);
  }

  @Test
  void namesAndTextAreCutNeverInsideACharacter() {
    String rocket = "\uD83D\uDE80";
    String user = "u".repeat(Messages.NAME_MAX - 1) + rocket + "tail";
    Messages.App app = new Messages.App("application_1_0001", user, "n".repeat(5000), "q".repeat(2000),
        0, -1, false, null, null);
    Messages.App back = roundTrip(app, Messages.App.class);
    assertEquals("u".repeat(Messages.NAME_MAX - 1), back.user(), "the pair is not split");
    assertEquals(1024, back.name().length());
    assertEquals(1024, back.queue().length());
    assertEquals(0, back.submitMs());
    Messages.Node node = new Messages.Node("h:1", "h".repeat(3000), "/" + "r".repeat(3000),
        new Messages.Resource(1, 1, 0, 0));
    assertEquals(1024, roundTrip(node, Messages.Node.class).rack().length());
  }

  @Test
  void groupsThatAreNoNameAreLeftOutOfAPlaceRequest() {
    Messages.PlaceRequest p = new Messages.PlaceRequest("application_1_0001", "ann", "root.a",
        List.of("eng", "", "g".repeat(1025), "ops"), 0);
    assertEquals(List.of("eng", "ops"), roundTrip(p, Messages.PlaceRequest.class).groups());
  }

  @Test
  void aConfiguredDeadlinePastInt32StillLetsPythonRegister() {
    assertEquals(Integer.MAX_VALUE, ShimRuntime.int32(3_000_000_000L));
    assertEquals(1, ShimRuntime.int32(0));
    Messages.ShimInfo shim = new Messages.ShimInfo("0.2.0", Messages.Kind.YARN, 1,
        ShimRuntime.int32(3_000_000_000L), ShimRuntime.int32(0), List.of("memory_mb", "vcores"), false);
    Messages.ShimInfo back = roundTrip(shim, Messages.ShimInfo.class);
    assertEquals(Integer.MAX_VALUE, back.deadlineMs());
    assertEquals(1, back.updateIntervalMs());
    Messages.Registered refused = new Messages.Registered(null, "why ".repeat(2000), null, shim);
    assertEquals(Messages.TEXT_MAX, roundTrip(refused, Messages.Registered.class).refused().length());
  }

  /**
   * The regression: Python's refusal may be 4,096 characters, and the shim's
   * reason adds its own words; the fallback episode carrying it went past the
   * schema's 4,096, so every later payload (which reports the episode until
   * Python hears of it) was refused whole, and the RM stayed on its FIFO.
   */
  @Test
  void aLongFailureReasonNeverMakesTheNextPayloadsRefusable() {
    PolicyLink link = new PolicyLink(30_000, () -> { }, new PolicyLink.Callbacks(1000), null);
    try {
      String error = "e".repeat(Messages.TEXT_MAX);
      link.register(PolicyLinkTest.policy(p -> "{\"error\": \"" + error + "\"}"),
          new Messages.Register(Messages.PROTOCOL, 40001, "t".repeat(64), true,
              new Messages.ServerInfo(1, "host", "/a.xml", 0, "test", null)),
          new Messages.ShimInfo("t", Messages.Kind.YARN, 1, 200, 500, List.of(), false));
      assertNull(Turns.heartbeat(link));
      Messages.ShimStatus status = roundTrip(link.status(null), Messages.ShimStatus.class);
      assertEquals(Messages.TEXT_MAX, status.reason().length());
      link.fallbackHeartbeat();
      assertEquals(0, link.refusedAnswers(), "Python's own refusal is a failed call, not a bad answer");
      link.register(PolicyLinkTest.policy(p -> "{}"),
          new Messages.Register(Messages.PROTOCOL, 40002, "t".repeat(64), true,
              new Messages.ServerInfo(2, "host", "/a.xml", 0, "test", null)),
          new Messages.ShimInfo("t", Messages.Kind.YARN, 1, 200, 500, List.of(), false));
      Turns.heartbeat(link);
      List<Messages.FallbackEpisode> episodes = link.episodesToReport();
      assertEquals(1, episodes.size());
      Messages.Payload payload = new Messages.Payload(false, 1, null, null, null, null, null, null,
          null, null, episodes, null, null);
      assertTrue(roundTrip(payload, Messages.Payload.class).fallbacks().get(0).reason()
          .startsWith("heartbeat: Python refused the payload: eee"));
    } finally {
      link.stop();
    }
  }
}
