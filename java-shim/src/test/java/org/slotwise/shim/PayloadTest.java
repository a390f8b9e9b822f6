package org.slotwise.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

class PayloadTest {

  private static Payload.Node node(String id) {
    return new Payload.Node(id, id.split(":")[0], "/default-rack", 8192, 8);
  }

  private static Payload.Launched launched(String id, String engineId) {
    return new Payload.Launched(id, "application_1_0001", "host1:45454", 1024, 1, false, 20,
        engineId);
  }

  @Test
  void startsWithAFullResyncAndKeepsNoDeltasMeanwhile() {
    Payload p = new Payload();
    assertTrue(p.isFullNeeded());
    p.nodeChanged(node("host1:1"));
    p.launched(launched("c1", null));
    Payload.Delta d = p.drain();
    assertTrue(d.full);
    assertTrue(d.nodes.isEmpty());
    assertTrue(d.launched.isEmpty());
    assertFalse(p.isFullNeeded());
    assertFalse(p.drain().full);
  }

  @Test
  void collectsDeltasUntilDrained() {
    Payload p = new Payload();
    p.drain();
    p.nodeChanged(node("host1:1"));
    p.nodeChanged(node("host2:1"));
    p.nodeRemoved("host2:1");
    p.appChanged("application_1_0001");
    p.appChanged("application_1_0002");
    p.appChanged("application_1_0001");
    p.appRemoved("application_1_0002");
    p.appChanged("application_1_0002"); // stale event after removal: ignored
    p.launched(launched("c1", "e1"));
    p.rejected("e2");
    p.rejected(null);
    p.finished("c0");
    Payload.Delta d = p.drain();
    assertFalse(d.full);
    assertEquals(1, d.nodes.size());
    assertEquals("host1:1", d.nodes.get(0).id);
    assertEquals(Collections.singletonList("host2:1"), d.nodesRemoved);
    assertEquals(Collections.singletonList("application_1_0001"), d.appsChanged);
    assertEquals(Collections.singletonList("application_1_0002"), d.appsRemoved);
    assertEquals("e1", d.launched.get(0).engineId);
    assertEquals(Collections.singletonList("e2"), d.rejected);
    assertEquals(Collections.singletonList("c0"), d.finished);
    Payload.Delta empty = p.drain();
    assertTrue(empty.nodes.isEmpty() && empty.launched.isEmpty() && empty.finished.isEmpty());
  }

  @Test
  void aNodeThatComesBackIsNotRemoved() {
    Payload p = new Payload();
    p.drain();
    p.nodeRemoved("host1:1");
    p.nodeChanged(node("host1:1"));
    Payload.Delta d = p.drain();
    assertTrue(d.nodesRemoved.isEmpty());
    assertEquals(1, d.nodes.size());
  }

  @Test
  void requireFullDropsPendingDeltas() {
    Payload p = new Payload();
    p.drain();
    p.launched(launched("c1", null));
    p.requireFull();
    Payload.Delta d = p.drain();
    assertTrue(d.full);
    assertTrue(d.launched.isEmpty());
  }

  @Test
  void tooManyPendingDeltasTurnIntoAFullResync() {
    Payload p = new Payload();
    p.drain();
    for (int i = 0; i <= Payload.MAX_PENDING; i++) {
      p.finished("c" + i);
    }
    assertTrue(p.isFullNeeded());
    assertTrue(p.drain().finished.isEmpty());
  }

  @Test
  @SuppressWarnings("unchecked")
  void encodesTheProtocolsShape() {
    Map<String, Integer> hosts = new LinkedHashMap<>();
    hosts.put("host1", 2);
    Map<String, Integer> racks = new LinkedHashMap<>();
    racks.put("/default-rack", 5);
    Payload.App app = new Payload.App("application_1_0001", "ann", "root.prod", 0,
        1700000000123L, Collections.singletonList(
            new Payload.Req(20, 1024, 1, 5, hosts, racks, true)));
    String json = Payload.encode(false, Collections.singletonList(node("host1:45454")),
        Collections.singletonList("host2:45454"), Collections.singletonList(app),
        Collections.singletonList("application_1_0002"),
        Collections.singletonList(launched("container_1_0001_01_000002",
            "application_1_0001#17")),
        Collections.singletonList("application_1_0001#18"),
        Collections.singletonList("container_1_0001_01_000003"), 3, "host1:45454");
    Map<String, Object> m = (Map<String, Object>) Json.parse(json);
    assertEquals(Arrays.asList("full", "nodes", "nodes_removed", "apps", "apps_removed",
        "launched", "rejected", "finished", "fallbacks", "node"), Arrays.asList(
            m.keySet().toArray()));
    assertEquals(false, m.get("full"));
    assertEquals(Arrays.asList("host1:45454", "host1", "/default-rack", 8192L, 8L),
        ((List<Object>) m.get("nodes")).get(0));
    Map<String, Object> a = (Map<String, Object>) ((List<Object>) m.get("apps")).get(0);
    assertEquals("ann", a.get("user"));
    assertEquals("root.prod", a.get("queue"));
    assertEquals(0L, a.get("prio"));
    assertEquals(1700000000123L, a.get("submit"));
    List<Object> req = (List<Object>) ((List<Object>) a.get("req")).get(0);
    assertEquals(Arrays.asList(20L, 1024L, 1L, 5L), req.subList(0, 4));
    assertEquals(Collections.singletonMap("host1", 2L), req.get(4));
    assertEquals(Collections.singletonMap("/default-rack", 5L), req.get(5));
    assertEquals(true, req.get(6));
    assertEquals(Arrays.asList("container_1_0001_01_000002", "application_1_0001",
        "host1:45454", 1024L, 1L, false, 20L, "application_1_0001#17"),
        ((List<Object>) m.get("launched")).get(0));
    assertEquals(Collections.singletonList("application_1_0001#18"), m.get("rejected"));
    assertEquals(3L, m.get("fallbacks"));
    assertEquals("host1:45454", m.get("node"));
    assertFalse(a.containsKey("unmanaged")); // only sent when true
  }

  @Test
  void marksAnAppWhoseAmRunsOutsideTheCluster() {
    Payload.App app = new Payload.App("application_1_0003", "ann", "root.prod", 0, 1L,
        Collections.emptyList(), true);
    String json = Payload.encode(false, Collections.emptyList(), Collections.emptyList(),
        Collections.singletonList(app), Collections.emptyList(), Collections.emptyList(),
        Collections.emptyList(), Collections.emptyList(), 0, null);
    Map<String, Object> m = (Map<String, Object>) Json.parse(json);
    Map<String, Object> a = (Map<String, Object>) ((List<Object>) m.get("apps")).get(0);
    assertEquals(true, a.get("unmanaged"));
  }

  @Test
  void updatePayloadHasNoNodeAndFallbackContainersHaveNullEngineIds() {
    String json = Payload.encode(true, Collections.emptyList(), Collections.emptyList(),
        Collections.emptyList(), Collections.emptyList(),
        Collections.singletonList(launched("c1", null)), Collections.emptyList(),
        Collections.emptyList(), 0, null);
    assertEquals("{\"full\":true,\"nodes\":[],\"nodes_removed\":[],\"apps\":[],"
        + "\"apps_removed\":[],\"launched\":[[\"c1\",\"application_1_0001\",\"host1:45454\","
        + "1024,1,false,20,null]],\"rejected\":[],\"finished\":[],\"fallbacks\":0}", json);
  }

  @Test
  void encodesPlace() {
    assertEquals("{\"id\":\"application_1_0001\",\"user\":\"ann\",\"queue\":\"default\","
        + "\"groups\":[\"staff\"],\"prio\":3}",
        Payload.encodePlace("application_1_0001", "ann", "default",
            Collections.singletonList("staff"), 3));
  }
}
