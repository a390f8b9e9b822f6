package org.apache.hadoop.mapred;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.*;

import javax.servlet.http.HttpServlet;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.slotwise.shim.Messages;
import org.slotwise.shim.ShimRuntime;

/**
 * The JobTracker's /scheduler page, as useful as Hadoop 1's Fair Scheduler
 * page: the link to Python, the pools (min, max, fair share, running and
 * demanded maps and reduces), the running jobs with their fair shares, and a
 * form that moves a job or sets its priority.
 *
 * <p>The job rows are the shim's own; their fair shares come from {@code
 * slotwise serve}'s REST API (the address it gave at registration), one GET
 * per page view. An action goes to that API with the admin token the operator
 * typed, as a Bearer token: serve checks it and carries the action out
 * through its admin service, the door of its own UI (which comes back here
 * through the gateway). The token is neither kept nor echoed nor logged.
 * Every call to serve is bounded (1 s to connect, 2 s for the shares, 10 s
 * for an action) and made on the web server's thread, never under the
 * JobTracker's lock: a dead serve costs a page view at most that.
 */
public class SlotwiseSchedulerServlet extends HttpServlet {
  static final String ATTRIBUTE = "slotwise.scheduler";
  /** An action's form: four short fields (serve's /ui/login allows 4 KiB for the same token). */
  static final int MAX_FORM = 4096;
  /** The most of serve's job list read for one page (about 400 bytes a job). */
  static final int MAX_APPS_BYTES = 64 << 20;
  private static final long serialVersionUID = 1L;
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(1)).build(); // serve speaks HTTP/1.1: no h2c upgrade
  private static final String[] PRIORITIES = {"VERY_HIGH", "HIGH", "NORMAL", "LOW", "VERY_LOW"};

  @Override
  protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
    page(resp, HttpServletResponse.SC_OK, null);
  }

  /** An action: checked for size before its form is read; serve checks the token. */
  @Override
  protected void doPost(HttpServletRequest req, HttpServletResponse resp) throws IOException {
    int len = req.getContentLength();
    if (len < 0 || len > MAX_FORM) {
      resp.setHeader("Connection", "close");
      page(resp, len < 0 ? 411 : 413, len < 0 ? "An action needs a Content-Length; nothing was changed."
          : "An action's form is at most " + MAX_FORM + " bytes; nothing was changed.");
      return;
    }
    req.setCharacterEncoding("UTF-8"); // as browsers send a UTF-8 page's form
    Outcome o = act(scheduler(), req.getParameter("job"), req.getParameter("queue"),
        req.getParameter("priority"), req.getParameter("token"));
    page(resp, o.status, o.message);
  }

  private SlotwiseTaskScheduler scheduler() {
    return (SlotwiseTaskScheduler) getServletContext().getAttribute(ATTRIBUTE);
  }

  record Outcome(int status, String message) {}

  /** Moves the job and/or sets its priority through serve's API; what happened, in words. */
  static Outcome act(SlotwiseTaskScheduler s, String job, String queue, String priority, String token) {
    if (s == null) {
      return new Outcome(503, "The Slotwise scheduler is not running on this JobTracker.");
    }
    String web = webOf(s);
    boolean move = queue != null && !queue.isBlank();
    boolean prio = priority != null && !priority.isBlank();
    if (token == null || token.isBlank()) {
      return new Outcome(401, "An action needs slotwise serve's admin token; nothing was changed.");
    }
    if (!move && !prio) {
      return new Outcome(400, "Choose a queue, a priority or both; nothing was changed.");
    }
    SlotwiseTaskScheduler.Shown shown = null;
    for (SlotwiseTaskScheduler.Shown x : s.shownJobs()) {
      shown = x.job().getJobID().toString().equals(job) ? x : shown;
    }
    if (shown == null) {
      return new Outcome(404, "The JobTracker has no running job " + job + "; nothing was changed.");
    }
    int p = prio ? Arrays.asList(PRIORITIES).indexOf(priority) : 0;
    if (p < 0) {
      return new Outcome(400, "A priority is one of " + String.join(", ", PRIORITIES) + "; nothing was changed.");
    }
    if (web == null) {
      return new Outcome(503, "No policy server is registered with the JobTracker: an action goes through "
          + "slotwise serve's API, which checks the admin token; nothing was changed.");
    }
    List<String> done = new ArrayList<>();
    Outcome failed = null;
    String base = web + "/api/v1/apps/" + URLEncoder.encode(job, StandardCharsets.UTF_8);
    if (move) {
      failed = post(base + "/queue", JSON.createObjectNode().put("queue", queue.trim()), token, web,
          "moving " + job + " to " + queue.trim(), done, a -> "moved " + job + " to " + a.path("queue").asText());
    }
    if (prio && failed == null) {
      failed = post(base + "/priority", JSON.createObjectNode().put("priority", 2 - p), token, web,
          "setting " + job + "'s priority", done, a -> "set " + job + "'s priority to " + priority);
    }
    if (failed == null) {
      return new Outcome(200, "Done: " + String.join("; ", done) + ".");
    }
    String before = done.isEmpty() ? "" : "Done: " + done.get(0) + ". But ";
    String after = failed.status == 504 ? "." // it may have been done: no word on it
        : done.isEmpty() ? "; nothing was changed." : "; the priority stays as it was.";
    return new Outcome(failed.status, before + failed.message + after);
  }

  /** One action on serve's API: null if done (and said in {@code done}), else why not. */
  private static Outcome post(String url, JsonNode body, String token, String web, String what,
      List<String> done, java.util.function.Function<JsonNode, String> said) {
    HttpResponse<String> r;
    try {
      r = HTTP.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(10))
          .header("Authorization", "Bearer " + token.trim()).header("Content-Type", "application/json")
          .POST(HttpRequest.BodyPublishers.ofString(body.toString())).build(),
          HttpResponse.BodyHandlers.ofString());
    } catch (IllegalArgumentException e) { // a token with a line break, say: not echoed
      return new Outcome(400, "an admin token is one line of printable characters");
    } catch (IOException | InterruptedException e) {
      if (e instanceof InterruptedException) {
        Thread.currentThread().interrupt();
      }
      return new Outcome(504, "slotwise serve's API at " + web + " did not answer " + what + " (" + e
          + "): if it got the request, reload this page to see whether it took effect");
    }
    JsonNode a;
    try {
      a = JSON.readTree(r.body());
    } catch (IOException e) {
      a = JSON.createObjectNode();
    }
    if (r.statusCode() == 200) {
      done.add(said.apply(a));
      return null;
    }
    String detail = Messages.cut(a.path("detail").asText(r.body()), 500);
    return new Outcome(r.statusCode(), r.statusCode() == 401 ? "slotwise serve refused the admin token"
        : "slotwise serve refused " + what + " (" + r.statusCode() + "): " + detail);
  }

  /** serve's API as the JobTracker reaches it, from its registration; null with none registered. */
  private static String webOf(SlotwiseTaskScheduler s) {
    Messages.ShimStatus st = s.status();
    String web = st.holder() == null ? null : st.holder().web();
    return web == null || !web.startsWith("http://") ? null : web.replaceAll("/+$", "");
  }

  /** Each job's fair maps and reduces from serve's API (one GET), or why there are none. */
  private static Object fairShares(String web) {
    if (web == null) {
      return "no policy server is registered";
    }
    try {
      HttpResponse<InputStream> r = HTTP.send(HttpRequest.newBuilder(URI.create(web + "/api/v1/apps"))
          .timeout(Duration.ofSeconds(2)).build(), HttpResponse.BodyHandlers.ofInputStream());
      byte[] body;
      try (InputStream in = r.body()) {
        body = in.readNBytes(MAX_APPS_BYTES + 1);
      }
      if (r.statusCode() != 200 || body.length > MAX_APPS_BYTES) {
        return "slotwise serve's API at " + web + " answered " + r.statusCode()
            + (body.length > MAX_APPS_BYTES ? " with more than " + (MAX_APPS_BYTES >> 20) + " MiB" : "");
      }
      Map<String, double[]> out = new HashMap<>();
      for (JsonNode app : JSON.readTree(body)) {
        JsonNode f = app.path("fair_share");
        out.put(app.path("id").asText(), new double[] {f.path("map_slots").asDouble(),
            f.path("reduce_slots").asDouble()});
      }
      return out;
    } catch (IOException | RuntimeException e) {
      return "slotwise serve's API at " + web + " did not answer (" + e + ")";
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "interrupted";
    }
  }

  // ------------------------------------------------------------- the page

  private void page(HttpServletResponse resp, int status, String outcome) throws IOException {
    resp.setStatus(status);
    resp.setContentType("text/html; charset=utf-8");
    resp.setHeader("Cache-Control", "no-store");
    render(scheduler(), resp.getWriter(), outcome, status);
  }

  /** The whole page; {@code outcome}: what an action did, or null. */
  static void render(SlotwiseTaskScheduler s, PrintWriter out, String outcome, int status) {
    out.println("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>JobTracker scheduler: Slotwise</title>"
        + "<link rel=\"stylesheet\" type=\"text/css\" href=\"/static/hadoop.css\"></head><body>");
    out.println("<h1><a href=\"/jobtracker.jsp\">JobTracker</a> scheduler: Slotwise (policy in Python)</h1>");
    if (s == null) {
      out.println("<p id=\"link\">The Slotwise scheduler is not running on this JobTracker.</p></body></html>");
      return;
    }
    if (outcome != null) {
      out.println("<p id=\"outcome\" class=\"" + (status == 200 ? "done" : "refused") + "\"><b>" + esc(outcome)
          + "</b></p>");
    }
    ShimRuntime rt = s.runtime();
    Messages.ShimStatus st = s.status();
    String web = webOf(s);
    out.println("<p id=\"link\">" + esc(rt.describe(st)) + (web == null ? ""
        : " Its web UI and API: <a href=\"" + esc(web) + "/\">" + esc(web) + "</a>.") + "</p>");
    out.println("<table border=\"1\" id=\"counts\">");
    for (String[] c : rt.counts(st)) {
      out.println("<tr><th>" + c[1] + "</th><td id=\"" + c[0] + "\">" + c[2] + "</td><td>" + esc(c[3])
          + "</td></tr>");
    }
    out.println("</table>");
    List<Messages.QueueRow> rows = s.queueTable();
    out.println("<h2>Queues</h2><table border=\"1\" id=\"queues\"><tr><th>queue</th><th>weight</th>"
        + "<th>running jobs</th><th>jobs</th><th>min maps</th><th>max maps</th><th>fair maps</th>"
        + "<th>running maps</th><th>demand maps</th><th>min reduces</th><th>max reduces</th>"
        + "<th>fair reduces</th><th>running reduces</th><th>demand reduces</th></tr>");
    Set<String> parents = new HashSet<>();
    rows.forEach(r -> parents.add(r.parent()));
    Set<String> leaves = new TreeSet<>(); // where a job may be moved
    for (Messages.QueueRow r : rows) {
      if (!r.isParent() && r.parent() != null && !parents.contains(r.name())) {
        leaves.add(r.name());
      }
      Messages.Amount max = r.max();
      out.println("<tr><td>" + esc(r.name()) + "</td><td>" + num(r.weight()) + "</td><td>" + r.runningApps()
          + "</td><td>" + r.apps() + "</td><td>" + num(r.min().mapSlots()) + "</td><td>"
          + (max == null ? "-" : num(max.mapSlots())) + "</td><td>" + num(r.fair().mapSlots()) + "</td><td>"
          + num(r.usage().mapSlots()) + "</td><td>" + num(r.demand().mapSlots()) + "</td><td>"
          + num(r.min().reduceSlots()) + "</td><td>" + (max == null ? "-" : num(max.reduceSlots()))
          + "</td><td>" + num(r.fair().reduceSlots()) + "</td><td>" + num(r.usage().reduceSlots())
          + "</td><td>" + num(r.demand().reduceSlots()) + "</td></tr>");
    }
    out.println("</table><p>Python's queue table of " + (s.lastUpdateMs() == 0 ? "no update yet"
        : "the update at " + new Date(s.lastUpdateMs())) + "; max \"-\": no limit.</p>");
    jobs(s, out, web, leaves);
    out.println("</body></html>");
  }

  private static void jobs(SlotwiseTaskScheduler s, PrintWriter out, String web, Set<String> leaves) {
    List<SlotwiseTaskScheduler.Shown> jobs = s.shownJobs();
    Object shares = jobs.isEmpty() ? Map.of() : fairShares(web);
    @SuppressWarnings("unchecked")
    Map<String, double[]> fair = shares instanceof Map ? (Map<String, double[]>) shares : Map.of();
    out.println("<h2>Running jobs</h2><table border=\"1\" id=\"jobs\"><tr><th>submitted</th><th>job</th>"
        + "<th>user</th><th>name</th><th>queue</th><th>priority</th><th>maps done</th><th>running maps</th>"
        + "<th>fair maps</th><th>reduces done</th><th>running reduces</th><th>fair reduces</th></tr>");
    java.text.SimpleDateFormat when = new java.text.SimpleDateFormat("MMM dd, HH:mm:ss");
    StringBuilder options = new StringBuilder();
    for (SlotwiseTaskScheduler.Shown x : jobs) {
      JobInProgress j = x.job();
      String id = j.getJobID().toString();
      double[] f = fair.get(id);
      out.println("<tr><td>" + when.format(new Date(j.getStartTime())) + "</td><td><a href=\"/jobdetails.jsp?jobid="
          + id + "\">" + id + "</a></td><td>" + esc(j.getProfile().getUser()) + "</td><td>"
          + esc(j.getProfile().getJobName()) + "</td><td>" + esc(x.pool()) + "</td><td>" + j.getPriority()
          + "</td><td>" + j.finishedMaps() + " / " + j.desiredMaps() + "</td><td>" + j.runningMaps()
          + "</td><td>" + (f == null ? "?" : num(f[0])) + "</td><td>" + j.finishedReduces() + " / "
          + j.desiredReduces() + "</td><td>" + j.runningReduces() + "</td><td>"
          + (f == null ? "?" : num(f[1])) + "</td></tr>");
      options.append("<option>").append(id).append("</option>");
    }
    out.println("</table>");
    if (!(shares instanceof Map)) {
      out.println("<p id=\"shares\">Fair shares unknown (\"?\"): " + esc((String) shares)
          + ". The JobTracker schedules on regardless.</p>");
    }
    if (jobs.isEmpty()) {
      out.println("<p>No running jobs.</p>");
      return;
    }
    out.println("<h2>Move a job or set its priority</h2><form id=\"admin\" method=\"post\" action=\"/scheduler\" "
        + "autocomplete=\"off\"><label>Job <select name=\"job\">" + options + "</select></label> "
        + "<label>to queue <input name=\"queue\" list=\"leaf-queues\" placeholder=\"(keep)\"></label>"
        + "<datalist id=\"leaf-queues\">");
    for (String q : leaves) {
      out.print("<option value=\"" + esc(q) + "\">");
    }
    out.print("</datalist> <label>priority <select name=\"priority\"><option value=\"\">(keep)</option>");
    for (String p : PRIORITIES) {
      out.print("<option>" + p + "</option>");
    }
    out.println("</select></label> <label>admin token <input type=\"password\" name=\"token\" required></label> "
        + "<button>Apply</button></form><p>The admin token is <code>slotwise serve</code>'s "
        + "(<code>--admin-token-file</code>); serve checks it and carries the action out, as its own UI does. "
        + "It is not kept here, but it crosses the network as this page does: over plain HTTP unless the "
        + "JobTracker's web server is behind TLS.</p>");
  }

  private static String num(double x) {
    return x == Math.rint(x) ? Long.toString((long) x) : String.format("%.2f", x);
  }

  private static String esc(String s) {
    return s == null ? "" : s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        .replace("\"", "&quot;");
  }
}
