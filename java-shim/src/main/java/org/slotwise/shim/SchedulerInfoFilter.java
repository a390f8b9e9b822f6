package org.slotwise.shim;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import javax.servlet.*;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.ha.HAServiceProtocol.HAServiceState;
import org.apache.hadoop.http.FilterContainer;
import org.apache.hadoop.http.FilterInitializer;
import org.apache.hadoop.http.lib.StaticUserWebFilter;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.server.resourcemanager.IsResourceManagerActiveServlet;
import org.apache.hadoop.yarn.server.resourcemanager.ResourceManager;
import org.apache.hadoop.yarn.server.resourcemanager.rmcontainer.RMContainer;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.*;
import org.apache.hadoop.yarn.server.security.http.RMAuthenticationFilterInitializer;
import org.apache.hadoop.yarn.util.resource.Resources;

/**
 * YARN's {@code GET /ws/v1/cluster/scheduler} for an RM scheduled by Slotwise,
 * in the FairScheduler's JSON shape (RMWebServices knows only YARN's own
 * schedulers). A filter in front of every path of the RM's web server (the
 * shim adds this initializer to {@code hadoop.http.filter.initializers}, after
 * the configured ones, so authentication runs first): it answers that one GET
 * on an active RM and passes everything else on. The numbers are Python's last
 * queue table (shares, min, max, demand, apps, policy) and YARN's queue metrics
 * (used, containers); no scheduler lock is taken. JSON only (406 otherwise); a
 * failure answers 503, never reaching the RM.
 */
public class SchedulerInfoFilter extends FilterInitializer implements Filter {
  static final String PATH = "/ws/v1/cluster/scheduler";
  static final String INITIALIZERS = "hadoop.http.filter.initializers";

  /**
   * Adds this filter after the configured ones. Without security YARN adds
   * its own simple-auth filter (user.name=) only to an empty list or to
   * StaticUserWebFilter alone (RMWebAppUtil); ours would make it skip that,
   * so it is added here exactly as YARN would.
   */
  static void install(Configuration conf) {
    String filters = conf.getTrimmed(INITIALIZERS, "");
    String mine = SchedulerInfoFilter.class.getName();
    if (filters.contains(mine)) {
      return;
    }
    if (!UserGroupInformation.isSecurityEnabled()
        && (filters.isEmpty() || filters.equals(StaticUserWebFilter.class.getName()))) {
      filters = RMAuthenticationFilterInitializer.class.getName() + (filters.isEmpty() ? "" : "," + filters);
      conf.set("hadoop.http.authentication.type", "simple");
    }
    conf.set(INITIALIZERS, filters + "," + mine);
  }

  @Override
  public void initFilter(FilterContainer container, Configuration conf) {
    container.addFilter("slotwise-scheduler-info", SchedulerInfoFilter.class.getName(), Map.of());
  }

  @Override
  public void init(FilterConfig config) {
  }

  @Override
  public void destroy() {
  }

  @Override
  public void doFilter(ServletRequest req, ServletResponse res, FilterChain chain)
      throws IOException, ServletException {
    HttpServletRequest http = (HttpServletRequest) req;
    String uri = http.getRequestURI();
    Object rm = "GET".equals(http.getMethod()) && (PATH.equals(uri) || (PATH + "/").equals(uri))
        ? http.getServletContext().getAttribute(IsResourceManagerActiveServlet.RM_ATTRIBUTE) : null;
    if (!(rm instanceof ResourceManager r && r.getResourceScheduler() instanceof SlotwiseScheduler s
        && r.getRMContext().getHAServiceState() == HAServiceState.ACTIVE)) {
      chain.doFilter(req, res); // not ours: YARN answers (a standby RM redirects)
      return;
    }
    String accept = http.getHeader("Accept");
    int status = 200;
    String body;
    if (accept != null && !accept.isBlank() && !accept.matches("(?s).*(json|\\*/\\*|application/\\*).*")) {
      status = 406;
      body = error("NotAcceptableException", "Slotwise answers " + PATH
          + " in JSON only: ask with Accept: application/json");
    } else {
      try {
        body = Wire.write(describe(s));
      } catch (RuntimeException e) {
        status = 503;
        body = error("ServiceUnavailableException", "Slotwise could not describe its queues: " + e);
      }
    }
    HttpServletResponse out = (HttpServletResponse) res;
    out.setStatus(status);
    out.setHeader("Cache-Control", "no-cache");
    out.setContentType("application/json;charset=utf-8");
    out.getOutputStream().write(body.getBytes(StandardCharsets.UTF_8));
  }

  /** YARN's shape of a REST error. */
  static String error(String exception, String message) {
    ObjectNode n = Wire.MAPPER.createObjectNode();
    n.putObject("RemoteException").put("exception", exception).put("message", message)
        .put("javaClassName", "javax.ws.rs." + exception);
    return Wire.write(n);
  }

  /** {"scheduler": {"schedulerInfo": {"type": "fairScheduler", "rootQueue": ...}}}. */
  static ObjectNode describe(SlotwiseScheduler s) {
    Map<String, Resource> am = new HashMap<>(); // AM containers' resources, per queue and its parents
    for (SchedulerApplication<SlotwiseAppAttempt> app : s.getSchedulerApplications().values()) {
      SlotwiseAppAttempt attempt = app.getCurrentAppAttempt();
      String q = app.getQueue().getQueueName();
      for (RMContainer c : attempt == null ? List.<RMContainer>of() : attempt.getLiveContainers()) {
        for (int i = c.isAMContainer() ? q.length() : -1; i > 0; i = q.lastIndexOf('.', i - 1)) {
          am.merge(q.substring(0, i), c.getAllocatedResource(), Resources::add);
        }
      }
    }
    ObjectNode top = Wire.MAPPER.createObjectNode();
    top.putObject("scheduler").putObject("schedulerInfo").put("type", "fairScheduler")
        .set("rootQueue", queue(s.queue(SlotwiseQueue.ROOT), am, s.getClusterResource(),
            s.getMaximumResourceCapability()));
    return top;
  }

  /** One queue as FairSchedulerQueueInfo (a parent) or FairSchedulerLeafQueueInfo. */
  static ObjectNode queue(SlotwiseQueue q, Map<String, Resource> am, Resource cluster,
      Resource maxAllocation) {
    Messages.QueueRow r = q.row();
    Messages.Amount zero = new Messages.Amount(0, 0, 0, 0);
    Messages.Amount max = r == null ? null : r.max();
    QueueMetrics m = q.getMetrics();
    Resource used = m.getAllocatedResources();
    boolean leaf = q.children().isEmpty() && !SlotwiseQueue.ROOT.equals(q.getQueueName())
        && (r == null || !r.isParent());
    ObjectNode n = Wire.MAPPER.createObjectNode();
    if (leaf) {
      n.put("type", "fairSchedulerLeafQueueInfo");
    }
    n.put("maxApps", r == null || r.maxRunningApps() == null ? Integer.MAX_VALUE : r.maxRunningApps());
    n.set("minResources", res(r == null ? zero : r.min()));
    n.set("maxResources", max == null ? res(cluster) : res(new Messages.Amount(
        Math.min(max.memoryMb(), cluster.getMemorySize()), Math.min(max.vcores(), cluster.getVirtualCores()), 0, 0)));
    n.set("usedResources", res(used));
    n.set("amUsedResources", res(am.getOrDefault(q.getQueueName(), Resources.none())));
    n.set("amMaxResources", res(r == null || r.amMax() == null ? zero : r.amMax()));
    n.set("demandResources", r == null ? res(Resources.add(used, m.getPendingResources())) : res(r.demand()));
    n.set("steadyFairResources", res(r == null ? zero : r.steady()));
    n.set("fairResources", res(r == null ? zero : r.fair()));
    n.set("clusterResources", res(cluster));
    n.set("reservedResources", res(m.getReservedResources()));
    n.set("maxContainerAllocation", res(maxAllocation));
    n.put("pendingContainers", m.getPendingContainers());
    n.put("allocatedContainers", m.getAllocatedContainers());
    n.put("reservedContainers", m.getReservedContainers());
    n.put("queueName", q.getQueueName());
    String policy = r == null || r.policy() == null ? "fair" : r.policy();
    n.put("schedulingPolicy", switch (policy) { // YARN's names
      case "drf" -> "DRF";
      case "fifo" -> "FIFO";
      default -> policy;
    });
    n.put("preemptable", r == null || r.preemptable() == null || r.preemptable());
    if (leaf) {
      n.put("numPendingApps", r == null ? m.getAppsPending() : Math.max(0, r.apps() - r.runningApps()));
      n.put("numActiveApps", r == null ? m.getAppsRunning() : r.runningApps());
    } else if (!q.children().isEmpty()) { // YARN leaves it out when empty
      ArrayNode kids = n.putObject("childQueues").putArray("queue");
      for (SlotwiseQueue child : q.children()) {
        kids.add(queue(child, am, cluster, maxAllocation));
      }
    }
    return n;
  }

  private static ObjectNode res(Resource r) {
    return res(new Messages.Amount(r.getMemorySize(), r.getVirtualCores(), 0, 0));
  }

  /** YARN's ResourceInfo: memory, vCores, and the same again per resource type. */
  private static ObjectNode res(Messages.Amount a) {
    long mb = Math.round(a.memoryMb());
    long vcores = Math.round(a.vcores());
    ObjectNode n = Wire.MAPPER.createObjectNode().put("memory", mb).put("vCores", vcores);
    ArrayNode types = n.putObject("resourceInformations").putArray("resourceInformation");
    for (Object[] t : new Object[][] {{"memory-mb", "Mi", mb}, {"vcores", "", vcores}}) {
      types.addObject().put("maximumAllocation", Long.MAX_VALUE).put("minimumAllocation", 0)
          .put("name", (String) t[0]).put("resourceType", "COUNTABLE").put("units", (String) t[1])
          .put("value", (Long) t[2]);
    }
    return n;
  }
}
