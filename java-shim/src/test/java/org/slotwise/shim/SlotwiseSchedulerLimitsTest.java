package org.slotwise.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The YARN shim's side of the limits: its heartbeat and update answers come
 * back from {@link PolicyLink.Turn#send} checked whole ({@link PolicyLink#read}),
 * as {@link SlotwiseScheduler} receives them, so an answer outside the
 * schema's limits is never applied (the scheduler's apply step, which allocates and preempts, does
 * not run; the heartbeat goes to the FIFO as for any failed call) and is
 * counted where the scheduler page shows it. Queue names past the schema's
 * bound are refused before they reach Python or a queue.
 */
class SlotwiseSchedulerLimitsTest {
  private final PolicyLink link = new PolicyLink(30_000, () -> { }, new PolicyLink.Callbacks(1000), null);

  @AfterEach
  void stop() {
    link.stop();
  }

  private void answer(String heartbeat) {
    link.register(PolicyLinkTest.policy(p -> heartbeat),
        new Messages.Register(Messages.PROTOCOL, 40003, "t".repeat(64), true,
            new Messages.ServerInfo(3, "host", "/a.xml", 0, "test", null)),
        new Messages.ShimInfo("t", Messages.Kind.YARN, 1, 500, 500, List.of(), false));
  }

  private static String assign(String node, int priority, String locality) {
    return "{\"app\": \"application_1_0001\", \"node\": \"" + node + "\", \"priority\": " + priority
        + ", \"locality\": \"" + locality + "\", \"engine_id\": \"e1\"}";
  }

  private <A> A call(Class<A> type, List<A> applied) {
    return Turns.call(link, link.getTimeoutMs(), "{}", type, applied::add);
  }

  @Test
  void aHeartbeatAnswerOutOfRangeIsNotCarriedOutAndIsCounted() {
    List<Messages.HeartbeatAnswer> applied = new ArrayList<>();
    answer("{\"assign\": [" + assign("h:1", 1, "node_local") + "], \"preempt\": [{\"container\": \""
        + "c".repeat(1025) + "\", \"kill\": true}]}");
    assertNull(call(Messages.HeartbeatAnswer.class, applied));
    assertTrue(applied.isEmpty(), "not carried out");
    assertEquals(1, link.refusedAnswers());
    assertTrue(link.lastRefusal().contains("$.preempt[0].container: has 1,025 characters"),
        link.lastRefusal());
    assertTrue(link.status(null).inFallback());

    StringBuilder many = new StringBuilder();
    for (int i = 0; i <= PolicyLink.MAX_ASSIGN_PER_NODE; i++) {
      many.append(i == 0 ? "" : ",").append(assign("h:1", 1, "off_switch"));
    }
    answer("{\"assign\": [" + many + "]}");
    assertNull(call(Messages.HeartbeatAnswer.class, applied));
    assertTrue(applied.isEmpty(), "1,025 assignments for one node: none carried out");
    assertEquals(2, link.refusedAnswers());

    answer("{\"assign\": [" + assign("h:1", 1, "node_local") + "]}");
    assertNotNull(call(Messages.HeartbeatAnswer.class, applied));
    assertEquals(1, applied.size(), "a good answer is carried out");
    assertEquals(2, link.refusedAnswers());
  }

  @Test
  void anUpdateAnswerOutOfRangeIsNotCarriedOutAndIsCounted() {
    List<Messages.UpdateAnswer> applied = new ArrayList<>();
    answer("{\"move\": [{\"app\": \"application_1_0001\", \"queue\": \"root.a\", \"reason\": \""
        + "r".repeat(4097) + "\"}]}");
    assertNull(call(Messages.UpdateAnswer.class, applied));
    assertTrue(applied.isEmpty());
    assertEquals(1, link.refusedAnswers());
    assertTrue(link.lastRefusal().startsWith("UpdateAnswer: $.move[0].reason"), link.lastRefusal());
  }

  @Test
  void pythonsOwnRefusalIsAFailedCallButNoBadAnswer() {
    List<Messages.HeartbeatAnswer> applied = new ArrayList<>();
    answer("{\"error\": \"two requests at one priority\"}");
    assertNull(call(Messages.HeartbeatAnswer.class, applied));
    assertEquals(0, link.refusedAnswers());
    assertEquals(1, link.status(null).failures());
  }

  @Test
  void queueNamesPastTheSchemasBoundAreNoQueue() {
    int max = Messages.NAME_MAX;
    String fits = "q".repeat(max - "root.".length());
    assertEquals("root." + fits, SlotwiseQueue.qualify(fits));
    assertNull(SlotwiseQueue.tooLong(fits));
    assertNull(SlotwiseQueue.qualify(fits + "q"));
    assertEquals("the queue name has 1,025 characters (with \"root.\"); at most 1,024 are allowed",
        SlotwiseQueue.tooLong(fits + "q"));
    assertNull(SlotwiseQueue.tooLong("root." + fits));
    String rockets = "\uD83D\uDE80".repeat(max - "root.".length()); // counted in characters, as Python does
    assertEquals("root." + rockets, SlotwiseQueue.qualify(rockets));
    assertNull(SlotwiseQueue.tooLong(rockets));
  }

  @Test
  void theNodeRoomOfAnOvercommittedNodeIsSentAsNone() {
    Messages.Resource room = SlotwiseScheduler.res(
        org.apache.hadoop.yarn.api.records.Resource.newInstance(-1024, -2));
    assertEquals(new Messages.Resource(0, 0, 0, 0), PolicyLink.read(PolicyLink.write(room), Messages.Resource.class));
    assertThrows(PolicyLink.BadMessage.class,
        () -> PolicyLink.read("{\"memory_mb\": -1024}", Messages.Resource.class), "what Python would refuse");
  }
}
