package org.slotwise.shim;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class AnswerTest {

  @Test
  void parsesTheProtocolsHeartbeatExample() {
    Answer.Heartbeat h = Answer.heartbeat(
        "{\"assign\": [[\"application_1_0001\", \"host1:45454\", 20, \"node_local\","
        + " \"application_1_0001#17\"]],"
        + " \"preempt\": [[\"container_1_0003_01_000009\", true]]}");
    assertEquals(1, h.assign.size());
    Answer.Assign a = h.assign.get(0);
    assertEquals("application_1_0001", a.app);
    assertEquals("host1:45454", a.node);
    assertEquals(20, a.priority);
    assertEquals(Answer.NODE_LOCAL, a.locality);
    assertEquals("application_1_0001#17", a.engineId);
    assertEquals(1, h.preempt.size());
    assertEquals("container_1_0003_01_000009", h.preempt.get(0).container);
    assertTrue(h.preempt.get(0).kill);
  }

  @Test
  void missingListsAreEmpty() {
    Answer.Heartbeat h = Answer.heartbeat("{}");
    assertTrue(h.assign.isEmpty());
    assertTrue(h.preempt.isEmpty());
    Answer.Update u = Answer.update("{\"preempt\": []}");
    assertTrue(u.queues.isEmpty());
  }

  @Test
  void rejectsWrongShapes() {
    for (String bad : new String[] {
        "[]",
        "{\"assign\": {}}",
        "{\"assign\": [[\"a\", \"n\", 1, \"node_local\"]]}",
        "{\"assign\": [[\"a\", \"n\", 1.5, \"node_local\", \"e\"]]}",
        "{\"assign\": [[\"a\", \"n\", 1, \"somewhere\", \"e\"]]}",
        "{\"assign\": [[1, \"n\", 1, \"node_local\", \"e\"]]}",
        "{\"preempt\": [[\"c\", \"yes\"]]}",
        "not json"}) {
      assertThrows(IllegalArgumentException.class, () -> Answer.heartbeat(bad), bad);
    }
  }

  @Test
  void parsesTheQueueTable() {
    Answer.Update u = Answer.update("{\"preempt\": [[\"container_1_0001_01_000002\", false]],"
        + " \"queues\": [{\"name\": \"root.prod\", \"parent\": \"root\", \"weight\": 2.0,"
        + " \"min\": [1024, 1], \"max\": null, \"fair\": [4096.4, 4], \"steady\": [2048, 2],"
        + " \"usage\": [1024, 1], \"demand\": [8192, 8], \"running_apps\": 1, \"apps\": 2},"
        + " {\"name\": \"root\", \"parent\": null, \"max\": [65536, 64]}]}");
    assertFalse(u.preempt.get(0).kill);
    Answer.QueueRow prod = u.queues.get(0);
    assertEquals("root.prod", prod.name);
    assertEquals("root", prod.parent);
    assertEquals(2.0, prod.weight);
    assertArrayEquals(new long[] {1024, 1}, prod.min);
    assertNull(prod.max);
    assertArrayEquals(new long[] {4096, 4}, prod.fair);
    assertArrayEquals(new long[] {8192, 8}, prod.demand);
    assertEquals(1, prod.runningApps);
    assertEquals(2, prod.apps);
    Answer.QueueRow root = u.queues.get(1);
    assertNull(root.parent);
    assertEquals(1.0, root.weight);
    assertArrayEquals(new long[] {65536, 64}, root.max);
    assertArrayEquals(new long[] {0, 0}, root.fair);
  }

  @Test
  void parsesPlaceAndMove() {
    assertEquals("root.x", Answer.place("{\"queue\": \"root.x\"}").queue);
    Answer.Place r = Answer.place("{\"reject\": \"no such pool\"}");
    assertNull(r.queue);
    assertEquals("no such pool", r.reject);
    assertEquals("root.y", Answer.move("{\"queue\": \"root.y\"}").queue);
    assertEquals("full", Answer.move("{\"error\": \"full\"}").error);
    assertThrows(IllegalArgumentException.class, () -> Answer.place("{}"));
    assertThrows(IllegalArgumentException.class, () -> Answer.move("{\"queue\": 3}"));
  }
}
