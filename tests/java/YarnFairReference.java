// In FairScheduler's own package: the queue's preemption settings and
// FSLeafQueue.addApp are package-private, as YARN's own tests find them.
package org.apache.hadoop.yarn.server.resourcemanager.scheduler.fair;

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import com.fasterxml.jackson.databind.ObjectMapper;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.metrics2.lib.DefaultMetricsSystem;
import org.apache.hadoop.net.NodeBase;
import org.apache.hadoop.security.Groups;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.yarn.api.records.ApplicationSubmissionContext;
import org.apache.hadoop.yarn.api.records.ApplicationAttemptId;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.api.records.NodeId;
import org.apache.hadoop.yarn.api.records.QueueACL;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.exceptions.YarnException;
import org.apache.hadoop.yarn.server.resourcemanager.RMContextImpl;
import org.apache.hadoop.yarn.server.resourcemanager.placement.ApplicationPlacementContext;
import org.apache.hadoop.yarn.server.resourcemanager.placement.FSPlacementRule;
import org.apache.hadoop.yarn.server.resourcemanager.placement.PlacementManager;
import org.apache.hadoop.yarn.server.resourcemanager.placement.PlacementRule;
import org.apache.hadoop.yarn.server.resourcemanager.rmnode.RMNodeImpl;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.QueueMetrics;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.event.NodeAddedSchedulerEvent;
import org.apache.hadoop.yarn.util.Records;
import org.apache.log4j.AppenderSkeleton;
import org.apache.log4j.Level;
import org.apache.log4j.LogManager;
import org.apache.log4j.Logger;
import org.apache.log4j.spi.LoggingEvent;

/**
 * Test helper, not product code: YARN's own FairScheduler (from Maven
 * Central) as the reference for Slotwise's allocation-file parser and fair
 * shares (tests/test_yarn_reference.py).
 *
 * <p>One JSON request per line on stdin: {"file": PATH, "memory_mb": N,
 * "vcores": N, "active": [leaf queues with one runnable app each]}. One JSON
 * answer per line on stdout: the verdict of a real FairScheduler
 * initialised with that allocation file (the exception chain, or the queues
 * as YARN holds them: weights, limits, policies, fair and steady shares after
 * one update on a single node of the given size), plus every warning YARN
 * logged while loading.
 *
 * <p>With "place": {"groups": {USER: [GROUP, ...]}, "apps": [{"user": U,
 * "queue": Q or null}, ...]} the answer has "placements" instead: each app
 * in turn goes through the RM's PlacementManager (the rules FairScheduler
 * set up from the file) and then, as FairScheduler.addApplication does,
 * into its leaf queue (created if missing) past the queue's ACLs; an
 * admitted app keeps its queue for the apps after it. Groups come only from
 * the given static mapping (hadoop.user.group.static.mapping.overrides).
 */
public final class YarnFairReference {
  private static final List<String> WARNINGS = new ArrayList<>();

  public static void main(String[] args) throws Exception {
    PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
    System.setOut(System.err); // nothing Hadoop prints may land among the answers
    Logger root = LogManager.getRootLogger();
    root.removeAllAppenders();
    root.setLevel(Level.WARN);
    root.addAppender(new AppenderSkeleton() {
      @Override
      protected void append(LoggingEvent e) {
        if (e.getLevel().isGreaterOrEqual(Level.WARN)) {
          WARNINGS.add(e.getLevel() + " " + e.getRenderedMessage());
        }
      }

      @Override
      public void close() {
      }

      @Override
      public boolean requiresLayout() {
        return false;
      }
    });
    DefaultMetricsSystem.setMiniClusterMode(true);
    ObjectMapper json = new ObjectMapper();
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    for (String line; (line = in.readLine()) != null; ) {
      if (line.isBlank()) {
        continue;
      }
      Map<String, Object> answer;
      try {
        answer = answer(json.readValue(line, Map.class));
      } catch (Throwable t) {
        t.printStackTrace();
        answer = new LinkedHashMap<>();
        answer.put("helper_error", chain(t));
      }
      out.println(json.writeValueAsString(answer));
    }
    out.flush();
    System.exit(0); // FairScheduler leaves non-daemon timers behind
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> answer(Map<String, Object> req) throws Exception {
    WARNINGS.clear();
    QueueMetrics.clearQueueMetrics();
    Configuration conf = new YarnConfiguration();
    conf.set("yarn.scheduler.fair.allocation.file", (String) req.get("file"));
    conf.setBoolean("yarn.scheduler.fair.preemption", false);
    conf.setLong("yarn.scheduler.fair.allocation.file.reload-interval-ms", Long.MAX_VALUE);
    Map<String, Object> place = (Map<String, Object>) req.get("place");
    useGroups(conf, place == null ? Map.of() : (Map<String, List<String>>) place.get("groups"));
    FairScheduler fs = new FairScheduler();
    RMContextImpl context = new RMContextImpl();
    context.setYarnConfiguration(conf);
    context.setQueuePlacementManager(new PlacementManager());
    context.setScheduler(fs);
    fs.setRMContext(context);
    Map<String, Object> answer = new LinkedHashMap<>();
    try {
      fs.init(conf);
    } catch (Exception e) {
      answer.put("ok", false);
      answer.put("error", chain(e));
      answer.put("warnings", new ArrayList<>(WARNINGS));
      return answer;
    }
    answer.put("ok", true);
    answer.put("warnings", new ArrayList<>(WARNINGS));
    if (place != null) {
      answer.put("placements", place(fs, context, (List<Map<String, Object>>) place.get("apps")));
      answer.put("groups_seen", groupsSeen(fs, (Map<String, List<String>>) place.get("groups")));
      fs.stop();
      return answer;
    }
    long mb = ((Number) req.getOrDefault("memory_mb", 0)).longValue();
    int vcores = ((Number) req.getOrDefault("vcores", 0)).intValue();
    if (mb > 0) {
      NodeId id = NodeId.newInstance("reference-node", 1);
      fs.handle(new NodeAddedSchedulerEvent(new RMNodeImpl(id, context, "reference-node", 2, 3,
          new NodeBase("reference-node", "/default-rack"), Resource.newInstance(mb, vcores), "3.5.0")));
    }
    int n = 0;
    List<String> refused = new ArrayList<>();
    for (String pool : (List<String>) req.getOrDefault("active", List.of())) {
      FSLeafQueue leaf = fs.getQueueManager().getLeafQueue(pool, true);
      if (leaf == null) {
        refused.add(pool);
        continue;
      }
      ApplicationAttemptId id = ApplicationAttemptId.newInstance(ApplicationId.newInstance(1, ++n), 1);
      FSAppAttempt app = new FSAppAttempt(fs, id, "reference-user", leaf, leaf.getAbstractUsersManager(), context);
      // As FairScheduler.addApplicationAttempt: runnable unless a maxRunningApps says no.
      boolean runnable = fs.maxRunningEnforcer.canAppBeRunnable(leaf, app);
      leaf.addApp(app, runnable);
      if (runnable) {
        fs.maxRunningEnforcer.trackRunnableApp(app);
      } else {
        fs.maxRunningEnforcer.trackNonRunnableApp(app);
      }
    }
    answer.put("not_created", refused);
    fs.update();
    Map<String, Object> queues = new TreeMap<>();
    for (FSQueue q : fs.getQueueManager().getQueues()) {
      Map<String, Object> row = new LinkedHashMap<>();
      row.put("leaf", q instanceof FSLeafQueue);
      row.put("weight", q.getWeight());
      row.put("policy", q.getPolicy().getName());
      row.put("min", pair(q.getMinShare()));
      row.put("max", pair(q.getMaxShare()));
      row.put("fair", pair(q.getFairShare()));
      row.put("steady", pair(q.getSteadyFairShare()));
      row.put("max_running_apps", q.getMaxRunningApps());
      row.put("min_share_preemption_timeout_ms", q.getMinSharePreemptionTimeout());
      row.put("fair_share_preemption_timeout_ms", q.getFairSharePreemptionTimeout());
      row.put("fair_share_preemption_threshold", q.getFairSharePreemptionThreshold());
      row.put("preemptable", q.isPreemptable());
      if (q instanceof FSLeafQueue) {
        row.put("max_am_share", ((FSLeafQueue) q).getMaxAMShare());
      }
      queues.put(q.getName(), row);
    }
    answer.put("queues", queues);
    AllocationConfiguration alloc = fs.getAllocationConfiguration();
    answer.put("user_max_apps_default", alloc.getUserMaxApps("a-user-nobody-declares"));
    List<Map<String, Object>> rules = new ArrayList<>();
    for (PlacementRule rule : context.getQueuePlacementManager().getPlacementRules()) {
      Map<String, Object> r = new LinkedHashMap<>();
      r.put("rule", rule.getName());
      if (rule instanceof FSPlacementRule) {
        r.put("create", ((FSPlacementRule) rule).getCreateFlag());
      }
      rules.add(r);
    }
    answer.put("placement", rules);
    fs.stop();
    return answer;
  }

  /**
   * Groups from a static mapping only: the mapping service is a static
   * singleton (placement rules fetch it at initialisation, UGI at its own),
   * so it is rebuilt from this configuration and UGI pointed at it again.
   */
  private static void useGroups(Configuration conf, Map<String, List<String>> groups) {
    StringBuilder mapping = new StringBuilder("dr.who=");
    groups.forEach((user, gs) -> mapping.append(';').append(user).append('=').append(String.join(",", gs)));
    conf.set("hadoop.security.group.mapping", "org.apache.hadoop.security.NullGroupsMapping");
    conf.set("hadoop.user.group.static.mapping.overrides", mapping.toString());
    Groups.getUserToGroupsMappingServiceWithLoadedConfiguration(conf);
    UserGroupInformation.setConfiguration(conf);
  }

  /** The groups the placement rules (the service) and the ACL check (UGI) see. */
  private static Map<String, Object> groupsSeen(FairScheduler fs, Map<String, List<String>> groups) {
    Map<String, Object> out = new TreeMap<>();
    Groups service = Groups.getUserToGroupsMappingService(fs.getConfig());
    for (String user : groups.keySet()) {
      List<Object> seen = new ArrayList<>();
      try {
        seen.add(new ArrayList<>(service.getGroupsSet(user)));
      } catch (Exception e) {
        seen.add(e.getMessage());
      }
      seen.add(UserGroupInformation.createRemoteUser(user).getGroups());
      out.put(user, seen);
    }
    return out;
  }

  private static List<Map<String, Object>> place(FairScheduler fs, RMContextImpl context,
                                                 List<Map<String, Object>> apps) {
    QueueManager queues = fs.getQueueManager();
    List<Map<String, Object>> out = new ArrayList<>();
    int n = 0;
    for (Map<String, Object> app : apps) {
      String user = (String) app.get("user");
      String asked = (String) app.get("queue");
      ApplicationId id = ApplicationId.newInstance(2, ++n);
      ApplicationSubmissionContext asc = Records.newRecord(ApplicationSubmissionContext.class);
      asc.setApplicationId(id);
      asc.setQueue(asked == null ? "default" : asked); // as ClientRMService fills in a missing queue
      Map<String, Object> row = new LinkedHashMap<>();
      out.add(row);
      ApplicationPlacementContext placed;
      try {
        placed = context.getQueuePlacementManager().placeApplication(asc, user);
      } catch (YarnException e) {
        row.put("rejected", e.getMessage());
        continue;
      }
      if (placed == null) {
        row.put("rejected", "application rejected by placement rules");
        continue;
      }
      String name = placed.getFullQueuePath();
      row.put("queue", name);
      FSQueue before = queues.getQueue(name);
      row.put("existed", before != null);
      row.put("configured", before != null && !before.isDynamic());
      // FairScheduler.addApplication from here: the leaf (made if missing), then the ACLs.
      FSLeafQueue leaf;
      try {
        leaf = queues.getLeafQueue(name, true, id);
      } catch (RuntimeException e) {
        row.put("rejected", "creating the queue fails: " + chain(e));
        continue;
      }
      if (leaf == null) {
        row.put("rejected", name + " is not a leaf queue");
      } else {
        UserGroupInformation ugi = UserGroupInformation.createRemoteUser(user);
        if (!leaf.hasAccess(QueueACL.SUBMIT_APPLICATIONS, ugi)
            && !leaf.hasAccess(QueueACL.ADMINISTER_QUEUE, ugi)) {
          row.put("rejected", "User " + user + " does not have permission to submit to queue " + name);
          leaf.removeAssignedApp(id);
        }
      }
      queues.removeEmptyDynamicQueues(); // as the update thread would: a rejected app leaves no queue
    }
    return out;
  }

  private static List<Long> pair(Resource r) {
    return List.of(r.getMemorySize(), (long) r.getVirtualCores());
  }

  private static List<String> chain(Throwable t) {
    List<String> out = new ArrayList<>();
    for (Throwable c = t; c != null && out.size() < 10; c = c.getCause()) {
      out.add(c.getClass().getSimpleName() + ": " + c.getMessage());
    }
    return out;
  }
}
