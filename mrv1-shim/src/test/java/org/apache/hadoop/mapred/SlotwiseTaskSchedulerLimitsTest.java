package org.apache.hadoop.mapred;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slotwise.shim.Messages;
import org.slotwise.shim.ShimRuntime;
import org.slotwise.shim.PolicyLink;
import org.slotwise.shim.PolicyServer;

/**
 * The MRv1 shim's side of the limits (it binds with the same Messages and
 * Schema, compiled from shim-link into its jar): a heartbeat or update answer
 * outside the schema's limits comes back from {@link PolicyLink.Turn#send}
 * refused ({@link PolicyLink#read}), as {@link SlotwiseTaskScheduler} receives
 * it, so none of it is carried out (no task obtained, no task killed; the FIFO schedules the
 * tracker) and it is counted, as the /scheduler page shows. The schema comes
 * from the jar's copy of schema.json, as in the JobTracker.
 */
class SlotwiseTaskSchedulerLimitsTest {
  private final PolicyLink link = new PolicyLink(30_000, () -> { }, new PolicyLink.Callbacks(1000), null);

  @AfterEach
  void stop() {
    link.stop();
  }

  private void answer(String json) {
    SlotwiseTaskSchedulerTest.FakePython p = new SlotwiseTaskSchedulerTest.FakePython();
    p.heartbeat = payload -> json;
    p.update = payload -> json;
    link.register(p, new Messages.Register(Messages.PROTOCOL, 40004, "t".repeat(64), true,
        new Messages.ServerInfo(4, "host", "/pools.xml", 0, "test", null)),
        new Messages.ShimInfo("t", Messages.Kind.MRV1, 1, 500, 500, List.of("map_slots", "reduce_slots"), false));
  }

  /** One call as the scheduler makes it: the answer checked whole, then carried out. */
  private <A> A call(Class<A> type, List<A> applied) {
    try (PolicyLink.Turn turn = link.turn("heartbeat")) {
      A a = turn == null ? null : turn.send("{}", type);
      if (a != null) {
        applied.add(a);
      }
      return a;
    }
  }

  private static String assign(String tracker, String priority) {
    return "{\"app\": \"job_202401010000_0001\", \"node\": \"" + tracker + "\", \"priority\": "
        + priority + ", \"locality\": \"node_local\", \"engine_id\": \"e1\"}";
  }

  @Test
  void aHeartbeatAnswerOutOfRangeIsNotCarriedOutAndIsCounted() {
    List<Messages.HeartbeatAnswer> applied = new ArrayList<>();
    String tracker = "tracker_h1:localhost/127.0.0.1:4000";
    answer("{\"assign\": [" + assign(tracker, "0") + ", " + assign(tracker, "-2147483649") + "]}");
    assertNull(call(Messages.HeartbeatAnswer.class, applied));
    assertTrue(applied.isEmpty(), "no task obtained for either assignment");
    assertEquals(1, link.refusedAnswers());
    assertEquals("HeartbeatAnswer: $.assign[1].priority: -2147483649 is below the minimum "
        + "-2147483648", link.lastRefusal());
    assertEquals(1, link.status(null).failures());

    StringBuilder many = new StringBuilder();
    for (int i = 0; i <= PolicyLink.MAX_ASSIGN_PER_NODE; i++) {
      many.append(i == 0 ? "" : ",").append(assign(tracker, "0"));
    }
    answer("{\"assign\": [" + many + "]}");
    assertNull(call(Messages.HeartbeatAnswer.class, applied));
    assertTrue(applied.isEmpty());
    assertEquals(2, link.refusedAnswers());

    answer("{\"assign\": [" + assign(tracker, "0") + "]}");
    assertNotNull(call(Messages.HeartbeatAnswer.class, applied));
    assertEquals(1, applied.size());
  }

  @Test
  void anUpdateAnswerOutOfRangeKillsNothingAndIsCounted() {
    List<Messages.UpdateAnswer> applied = new ArrayList<>();
    answer("{\"preempt\": [{\"container\": \"attempt_202401010000_0001_m_000001_0\", \"kill\": true}],"
        + " \"queues\": [{\"name\": \"production\", \"weight\": -1, \"min\": {}, \"fair\": {},"
        + " \"steady\": {}, \"usage\": {}, \"demand\": {}, \"running_apps\": 0, \"apps\": 0}]}");
    assertNull(call(Messages.UpdateAnswer.class, applied));
    assertTrue(applied.isEmpty(), "the preemption is not carried out either");
    assertEquals(1, link.refusedAnswers());
    assertTrue(link.lastRefusal().startsWith("UpdateAnswer: $.queues[0].weight: -1 is below"),
        link.lastRefusal());
  }
}
