package org.slotwise.shim;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Map;

import javax.servlet.*;
import javax.servlet.http.*;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.ha.HAServiceProtocol.HAServiceState;
import org.apache.hadoop.http.*;
import org.apache.hadoop.http.lib.StaticUserWebFilter;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.server.resourcemanager.*;
import org.apache.hadoop.yarn.server.security.http.RMAuthenticationFilterInitializer;

/**
 * The RM's two views of its scheduler, drawn by {@code slotwise serve}
 * (python/slotwise/web/rm_scheduler.py) and forwarded by {@link ServeWeb}:
 * {@code GET /ws/v1/cluster/scheduler} in the FairScheduler's JSON shape
 * (RMWebServices knows only YARN's own schedulers) and the {@code
 * /cluster/scheduler} page. A filter in front of every path of the RM's web
 * server, added after the configured ones (so authentication runs first): it
 * answers those two GETs on an active RM and passes all else on. With serve
 * gone the REST view is 503 in YARN's error shape, the page says why.
 */
public class SchedulerInfoFilter extends FilterInitializer implements Filter {
  static final String PATH = "/ws/v1/cluster/scheduler";
  static final String PAGE = "/cluster/scheduler";
  static final String INITIALIZERS = "hadoop.http.filter.initializers";

  /**
   * Adds this filter after the configured ones. Without security YARN adds its
   * simple-auth filter only to an empty list or to StaticUserWebFilter alone
   * (RMWebAppUtil); ours would make it skip that, so it is added here as YARN would.
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
    String uri = http.getRequestURI().replaceAll("(.)/$", "$1");
    Object rm = "GET".equals(http.getMethod()) && (PATH.equals(uri) || PAGE.equals(uri))
        ? http.getServletContext().getAttribute(IsResourceManagerActiveServlet.RM_ATTRIBUTE) : null;
    if (!(rm instanceof ResourceManager r && r.getResourceScheduler() instanceof SlotwiseScheduler s
        && r.getRMContext().getHAServiceState() == HAServiceState.ACTIVE)) {
      chain.doFilter(req, res); // not ours: YARN answers (a standby RM redirects)
      return;
    }
    HttpServletResponse out = (HttpServletResponse) res;
    out.setHeader("Cache-Control", "no-cache");
    String body;
    if (PAGE.equals(uri)) {
      ServeWeb.Answer a = ServeWeb.call(s.runtime(), "/rm/scheduler", null, null, null, "text/html");
      body = ServeWeb.page(s.runtime(), "Slotwise Scheduler", "<a href=\"/cluster\">ResourceManager</a> "
          + "scheduler: Slotwise (policy in Python)", "/static/yarn.css", a);
      out.setContentType("text/html;charset=utf-8");
    } else {
      Resource max = s.getMaximumResourceCapability();
      ServeWeb.Answer a = ServeWeb.call(s.runtime(), "/rm/ws/scheduler?max_mb=" + max.getMemorySize()
          + "&max_vcores=" + max.getVirtualCores(), http.getHeader("Accept"), null, null, "application/json");
      boolean drawn = a.body() != null && a.status() != 404; // 404: a serve older than this view
      body = drawn ? a.body() : error("ServiceUnavailableException", "Slotwise: " + (a.why() != null ? a.why()
          : "slotwise serve has no " + PATH + " view: is it an older build?"));
      out.setStatus(drawn ? a.status() : 503);
      out.setContentType("application/json;charset=utf-8");
    }
    out.getOutputStream().write(body.getBytes(StandardCharsets.UTF_8));
  }

  /** YARN's shape of a REST error. */
  static String error(String exception, String message) {
    return PolicyLink.write(Map.of("RemoteException", Map.of("exception", exception, "message", message,
        "javaClassName", "javax.ws.rs." + exception)));
  }
}
