package org.slotwise.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.api.records.Resource;
import org.junit.jupiter.api.Test;

/**
 * The FairScheduler-shaped tree the filter answers GET /ws/v1/cluster/scheduler
 * with, built from Python's queue rows; its keys against the answer of a real
 * YARN 3.5 FairScheduler recorded in tests/data (see the file for how).
 */
class SchedulerInfoFilterTest {
  private static final Resource CLUSTER = Resource.newInstance(8192, 16);
  private static final Resource MAX_ALLOCATION = Resource.newInstance(4096, 8);

  private static Messages.Amount mb(double mb, double vcores) {
    return new Messages.Amount(mb, vcores, 0, 0);
  }

  private static Messages.QueueRow row(String name, String parent, Messages.Amount max, Integer maxApps,
      String policy) {
    return row(name, parent, max, maxApps, policy, null, null, false);
  }

  private static Messages.QueueRow row(String name, String parent, Messages.Amount max, Integer maxApps,
      String policy, Messages.Amount amMax, Boolean preemptable, boolean isParent) {
    return new Messages.QueueRow(name, parent, 1.0, mb(1024, 1), max, mb(2730.67, 5.33),
        mb(2048, 4), mb(0, 0), mb(512, 1), 1, 3, maxApps, policy, false, amMax, preemptable, isParent);
  }

  /** root, root.eng (a parent) with root.eng.web, and root.prod, described by Python. */
  private static JsonNode tree() {
    Configuration conf = new Configuration(false);
    SlotwiseQueue root = new SlotwiseQueue("root", null, conf, () -> CLUSTER);
    SlotwiseQueue eng = new SlotwiseQueue("root.eng", root, conf, () -> CLUSTER);
    SlotwiseQueue web = new SlotwiseQueue("root.eng.web", eng, conf, () -> CLUSTER);
    SlotwiseQueue prod = new SlotwiseQueue("root.prod", root, conf, () -> CLUSTER);
    root.describe(row("root", null, null, null, null));
    eng.describe(row("root.eng", "root", null, null, "drf"));
    web.describe(row("root.eng.web", "root.eng", mb(100000, 2), 2, "fifo"));
    prod.describe(row("root.prod", "root", null, null, "fair", mb(1365.33, 0), false, false));
    SlotwiseQueue users = new SlotwiseQueue("root.users", root, conf, () -> CLUSTER);
    users.describe(row("root.users", "root", null, null, "fair", null, null, true));
    return SchedulerInfoFilter.queue(root, Map.of("root", Resource.newInstance(512, 1)), CLUSTER,
        MAX_ALLOCATION);
  }

  private static JsonNode child(JsonNode q, String name) {
    for (JsonNode c : q.path("childQueues").path("queue")) {
      if (c.path("queueName").asText().equals(name)) {
        return c;
      }
    }
    throw new AssertionError("no child " + name + " in " + q.path("queueName"));
  }

  /** Every key path of a queue, its children's left out (resources' nested keys in). */
  private static Set<String> keys(JsonNode n, String prefix) {
    Set<String> out = new TreeSet<>();
    if (n.isArray()) {
      n.forEach(e -> out.addAll(keys(e, prefix + "[].")));
    }
    for (Iterator<Map.Entry<String, JsonNode>> it = n.fields(); it.hasNext();) {
      Map.Entry<String, JsonNode> e = it.next();
      out.add(prefix + e.getKey());
      if (!e.getKey().equals("childQueues")) {
        out.addAll(keys(e.getValue(), prefix + e.getKey() + "."));
      }
    }
    return out;
  }

  @Test
  void queuesBecomeFairSchedulerQueuesWithPythonsNumbers() {
    JsonNode root = tree();
    assertEquals("root", root.path("queueName").asText());
    assertFalse(root.has("type"), "YARN marks only leaves");
    List<String> children = new ArrayList<>();
    root.path("childQueues").path("queue").forEach(c -> children.add(c.path("queueName").asText()));
    assertEquals(List.of("root.eng", "root.prod", "root.users"), children);
    // Python's AM limit and allowPreemptionFrom; a declared parent with no children yet is no leaf.
    assertEquals(1365, child(root, "root.prod").path("amMaxResources").path("memory").asLong());
    assertFalse(child(root, "root.prod").path("preemptable").asBoolean());
    assertTrue(child(root, "root.eng").path("preemptable").asBoolean());
    assertEquals(0, child(root, "root.eng").path("amMaxResources").path("memory").asLong());
    assertFalse(child(root, "root.users").has("type"));
    JsonNode eng = child(root, "root.eng");
    JsonNode web = child(eng, "root.eng.web");
    JsonNode prod = child(root, "root.prod");
    assertFalse(eng.has("type") || eng.has("numActiveApps"));
    assertEquals("fairSchedulerLeafQueueInfo", web.path("type").asText());
    assertFalse(web.has("childQueues"), "YARN leaves childQueues out when empty");
    assertEquals(2731, prod.path("fairResources").path("memory").asLong());
    assertEquals(5, prod.path("fairResources").path("vCores").asInt());
    assertEquals(2048, prod.path("steadyFairResources").path("memory").asLong());
    assertEquals(1024, prod.path("minResources").path("memory").asLong());
    assertEquals(512, prod.path("demandResources").path("memory").asLong());
    assertEquals(8192, prod.path("clusterResources").path("memory").asLong());
    assertEquals(4096, prod.path("maxContainerAllocation").path("memory").asLong());
    assertEquals(512, root.path("amUsedResources").path("memory").asLong());
    assertEquals(1, prod.path("numActiveApps").asInt());
    assertEquals(2, prod.path("numPendingApps").asInt());
    // No max: the cluster; a max over the cluster: the cluster's, per resource.
    assertEquals(8192, prod.path("maxResources").path("memory").asLong());
    assertEquals(8192, web.path("maxResources").path("memory").asLong());
    assertEquals(2, web.path("maxResources").path("vCores").asInt());
    assertEquals(Integer.MAX_VALUE, prod.path("maxApps").asInt());
    assertEquals(2, web.path("maxApps").asInt());
    assertEquals(List.of("fair", "DRF", "FIFO", "fair"), List.of(root.path("schedulingPolicy").asText(),
        eng.path("schedulingPolicy").asText(), web.path("schedulingPolicy").asText(),
        prod.path("schedulingPolicy").asText()));
  }

  @Test
  void aQueuePythonHasNotDescribedShowsWhatYarnKnows() {
    Configuration conf = new Configuration(false);
    SlotwiseQueue root = new SlotwiseQueue("root", null, conf, () -> CLUSTER);
    new SlotwiseQueue("root.default", root, conf, () -> CLUSTER);
    JsonNode q = child(SchedulerInfoFilter.queue(root, Map.of(), CLUSTER, MAX_ALLOCATION), "root.default");
    assertEquals(0, q.path("fairResources").path("memory").asLong());
    assertEquals(8192, q.path("maxResources").path("memory").asLong());
    assertEquals("fair", q.path("schedulingPolicy").asText());
    assertEquals(0, q.path("numActiveApps").asInt());
  }

  @Test
  void theKeysAreThoseOfARealFairScheduler() throws IOException {
    JsonNode recorded = new ObjectMapper().readTree(
        Paths.get("..", "tests", "data", "fairscheduler-3.5.0-ws-scheduler.json").toFile());
    JsonNode yarnRoot = recorded.path("answer").path("scheduler").path("schedulerInfo").path("rootQueue");
    JsonNode root = tree();
    assertEquals(keys(yarnRoot, ""), keys(root, ""));
    assertEquals(keys(child(yarnRoot, "root.eng"), ""), keys(child(root, "root.eng"), ""));
    assertEquals(keys(child(yarnRoot, "root.prod"), ""), keys(child(root, "root.prod"), ""));
    assertEquals(keys(child(child(yarnRoot, "root.eng"), "root.eng.web"), ""),
        keys(child(child(root, "root.eng"), "root.eng.web"), ""));
  }

  @Test
  void errorsTakeYarnsShape() throws IOException {
    JsonNode e = new ObjectMapper().readTree(SchedulerInfoFilter.error("NotAcceptableException", "why"));
    Set<String> fields = new TreeSet<>();
    e.path("RemoteException").fieldNames().forEachRemaining(fields::add);
    assertEquals(Set.of("exception", "message", "javaClassName"), fields);
    assertEquals("why", e.path("RemoteException").path("message").asText());
    assertTrue(e.path("RemoteException").path("javaClassName").asText().endsWith("NotAcceptableException"));
  }

  @Test
  void installKeepsYarnsSimpleAuthFilterWhereYarnWouldAddIt() {
    String auth = "org.apache.hadoop.yarn.server.security.http.RMAuthenticationFilterInitializer";
    String staticUser = "org.apache.hadoop.http.lib.StaticUserWebFilter";
    String mine = SchedulerInfoFilter.class.getName();
    // Hadoop's default: StaticUserWebFilter alone; YARN would put its auth filter first.
    Configuration conf = new Configuration(false);
    conf.set(SchedulerInfoFilter.INITIALIZERS, staticUser);
    SchedulerInfoFilter.install(conf);
    assertEquals(auth + "," + staticUser + "," + mine, conf.get(SchedulerInfoFilter.INITIALIZERS));
    assertEquals("simple", conf.get("hadoop.http.authentication.type"));
    // Nothing configured: as YARN, its auth filter alone, then ours.
    conf = new Configuration(false);
    SchedulerInfoFilter.install(conf);
    assertEquals(auth + "," + mine, conf.get(SchedulerInfoFilter.INITIALIZERS));
    // An operator's own list is kept as it is (YARN leaves it alone too), ours after it; twice is once.
    conf = new Configuration(false);
    conf.set(SchedulerInfoFilter.INITIALIZERS, "org.example.Sso," + staticUser);
    SchedulerInfoFilter.install(conf);
    SchedulerInfoFilter.install(conf);
    assertEquals("org.example.Sso," + staticUser + "," + mine, conf.get(SchedulerInfoFilter.INITIALIZERS));
    assertEquals(null, conf.get("hadoop.http.authentication.type"));
  }
}
