package org.apache.hadoop.mapred;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.fasterxml.jackson.databind.JsonNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mortbay.jetty.Server;
import org.mortbay.jetty.nio.SelectChannelConnector;
import org.mortbay.jetty.servlet.Context;
import org.slotwise.shim.Messages;
import org.slotwise.shim.ShimRuntime;
import org.slotwise.shim.Wire;

/**
 * The JobTracker's /scheduler page in Hadoop 1's own web server (Jetty 6):
 * the job rows with their fair shares, the pools' max shares, and moves and
 * priorities behind serve's admin token. serve's REST API is a stand-in here
 * that does what serve's admin service does (checks the Bearer token, then
 * calls the shim's gateway entry for the move or the priority), so the shim's
 * half runs for real: Python's move answer over the PolicyLink, the job's
 * pool, its priority, and what the next payload tells Python.
 */
class SlotwiseSchedulerServletTest {
  private static final String TOKEN = "the-admin-token-of-serve-0123456789";
  private static final HttpClient CLIENT = HttpClient.newHttpClient();

  @TempDir
  Path dir;
  private final SlotwiseTaskSchedulerTest.FakeManager manager = new SlotwiseTaskSchedulerTest.FakeManager();
  private final SlotwiseTaskSchedulerTest.FakePython python = new SlotwiseTaskSchedulerTest.FakePython();
  private final List<String> restCalls = new CopyOnWriteArrayList<>();
  private SlotwiseTaskScheduler scheduler;
  private HttpServer rest;
  private Server jetty;
  private String page;

  @BeforeAll
  static void jobTracker(@TempDir Path tmp) throws Exception {
    if (SlotwiseTaskSchedulerTest.jobTracker == null) {
      SlotwiseTaskSchedulerTest.jobTracker(tmp);
    }
  }

  @BeforeEach
  void start() throws Exception {
    Configuration c = new Configuration(false);
    c.set(ShimRuntime.GATEWAY_PORT, "0");
    c.set(ShimRuntime.TOKEN_FILE, dir.resolve("gateway.token").toString());
    c.set(ShimRuntime.INFO_FILE, dir.resolve("gateway.json").toString());
    c.set(ShimRuntime.TIMEOUT_MS, "10000");
    c.set(ShimRuntime.UPDATE_INTERVAL_MS, "3600000");
    scheduler = new SlotwiseTaskScheduler();
    scheduler.setConf(c);
    scheduler.setTaskTrackerManager(manager);
    scheduler.start();
    rest = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    rest.createContext("/api/v1/apps", this::serveApi);
    rest.start();
    jetty = new Server();
    SelectChannelConnector http = new SelectChannelConnector();
    http.setHost("127.0.0.1");
    http.setPort(0);
    jetty.addConnector(http);
    Context root = new Context(jetty, "/");
    root.setAttribute(SlotwiseSchedulerServlet.ATTRIBUTE, scheduler);
    root.addServlet(SlotwiseSchedulerServlet.class, "/scheduler");
    jetty.start();
    page = "http://127.0.0.1:" + http.getLocalPort() + "/scheduler";
  }

  @AfterEach
  void stop() throws Exception {
    jetty.stop();
    rest.stop(0);
    scheduler.terminate();
  }

  /** What serve's API does for this page: the jobs' fair shares; a move or a priority behind the token. */
  private void serveApi(HttpExchange x) throws IOException {
    String path = x.getRequestURI().getPath();
    restCalls.add(x.getRequestMethod() + " " + path);
    int status = 200;
    String body;
    if (x.getRequestMethod().equals("GET")) {
      StringBuilder apps = new StringBuilder("[");
      for (SlotwiseTaskScheduler.Shown s : scheduler.shownJobs()) {
        apps.append(apps.length() > 1 ? "," : "").append("{\"id\": \"").append(s.job().getJobID())
            .append("\", \"fair_share\": {\"map_slots\": 2.5, \"reduce_slots\": 1}}");
      }
      body = apps + "]";
    } else if (!("Bearer " + TOKEN).equals(x.getRequestHeaders().getFirst("Authorization"))) {
      status = 401; // serve reads no byte of the body without the token
      body = "{\"detail\": \"admin token required\"}";
    } else {
      String[] parts = path.split("/"); // /api/v1/apps/{id}/{queue|priority}
      JsonNode in = new com.fasterxml.jackson.databind.ObjectMapper().readTree(x.getRequestBody());
      ShimRuntime rt = scheduler.runtime();
      if (parts[5].equals("queue")) {
        Messages.MoveAnswer a = rt.adminMove(parts[4], in.get("queue").asText());
        status = a.error() == null ? 200 : 409;
        body = a.error() == null ? "{\"id\": \"" + parts[4] + "\", \"queue\": \"" + a.queue() + "\"}"
            : "{\"detail\": \"the JobTracker refused: " + a.error() + "\"}";
      } else {
        Messages.PriorityAnswer a = rt.adminPriority(parts[4], in.get("priority").asInt());
        status = a.error() == null ? 200 : 409;
        body = "{\"id\": \"" + parts[4] + "\", \"priority\": " + a.priority() + "}";
      }
    }
    byte[] out = body.getBytes(StandardCharsets.UTF_8);
    x.sendResponseHeaders(status, out.length);
    try (OutputStream o = x.getResponseBody()) {
      o.write(out);
    }
  }

  private void register(String web) {
    scheduler.runtime().registerPolicy(python, Wire.write(new Messages.Register(Messages.PROTOCOL, 40004,
        "t".repeat(64), false, new Messages.ServerInfo(4, "host", "/pools.xml", 0, "test", web))));
  }

  /** Python's queue table: prod with max shares, research with none. */
  private void queueTable() {
    python.update = p -> "{\"queues_full\": true, \"queues\": ["
        + row("root", null, "null", 0) + "," + row("root.prod", "root", "{\"map_slots\": 6, \"reduce_slots\": 2}", 1)
        + "," + row("root.research", "root", "null", 0) + "]}";
    scheduler.update();
  }

  private static String row(String name, String parent, String max, int apps) {
    return "{\"name\": \"" + name + "\", " + (parent == null ? "" : "\"parent\": \"" + parent + "\", ")
        + "\"weight\": 1, \"min\": {\"map_slots\": 1}, \"max\": " + max + ", \"fair\": {\"map_slots\": 4},"
        + " \"steady\": {}, \"usage\": {}, \"demand\": {}, \"running_apps\": " + apps + ", \"apps\": " + apps + "}";
  }

  private SlotwiseTaskSchedulerTest.FakeJob job() throws IOException {
    JobConf conf = new JobConf(false);
    conf.setUser("ann");
    conf.set("user.name", "ann");
    conf.set("mapred.fairscheduler.pool", "prod");
    SlotwiseTaskSchedulerTest.FakeJob job = manager.add(new SlotwiseTaskSchedulerTest.FakeJob(1, conf, 4, 1, true));
    job.numMapTasks = 4;
    job.finishedMapTasks = 1;
    job.runningMapTasks = 2;
    job.numReduceTasks = 1;
    return job;
  }

  private HttpResponse<String> get() throws Exception {
    return CLIENT.send(HttpRequest.newBuilder(URI.create(page)).build(), HttpResponse.BodyHandlers.ofString());
  }

  private HttpResponse<String> post(String form) throws Exception {
    return CLIENT.send(HttpRequest.newBuilder(URI.create(page))
        .header("Content-Type", "application/x-www-form-urlencoded")
        .POST(HttpRequest.BodyPublishers.ofString(form)).build(), HttpResponse.BodyHandlers.ofString());
  }

  private static String form(String job, String queue, String priority, String token) {
    return "job=" + job + "&queue=" + URLEncoder.encode(queue, StandardCharsets.UTF_8) + "&priority=" + priority
        + "&token=" + URLEncoder.encode(token, StandardCharsets.UTF_8);
  }

  /** The cells' texts of the row of table {@code id} whose cells include {@code key}. */
  private static List<String> row(String html, String id, String key) {
    Matcher t = Pattern.compile("<table[^>]*id=\"" + id + "\"[^>]*>(.*?)</table>", Pattern.DOTALL).matcher(html);
    assertTrue(t.find(), "no table " + id + " in " + html);
    for (String tr : t.group(1).split("<tr>")) {
      List<String> cells = new ArrayList<>();
      Matcher td = Pattern.compile("<td[^>]*>(.*?)</td>", Pattern.DOTALL).matcher(tr);
      while (td.find()) {
        cells.add(td.group(1).replaceAll("<[^>]+>", ""));
      }
      if (cells.contains(key)) {
        return cells;
      }
    }
    throw new AssertionError("no row " + key + " in table " + id + ": " + t.group(1));
  }

  private static String outcome(String html) {
    Matcher m = Pattern.compile("<p id=\"outcome\"[^>]*><b>(.*?)</b></p>").matcher(html);
    return m.find() ? m.group(1) : null;
  }

  // ------------------------------------------------------------------ tests

  @Test
  void thePageListsTheJobsWithTheirFairSharesAndThePoolsWithTheirMaxShares() throws Exception {
    register("http://127.0.0.1:" + rest.getAddress().getPort());
    SlotwiseTaskSchedulerTest.FakeJob job = job();
    queueTable();
    HttpResponse<String> r = get();
    assertEquals(200, r.statusCode());
    String html = r.body();
    String id = job.getJobID().toString();
    List<String> cells = row(html, "jobs", id);
    assertEquals(List.of(id, "ann", "fake", "root.prod", "NORMAL", "1 / 4", "2", "2.50", "0 / 1", "0", "1"),
        cells.subList(1, cells.size()), html);
    assertEquals(List.of("root.prod", "1", "1", "1", "1", "6", "4", "0", "0", "0", "2", "0", "0", "0"),
        row(html, "queues", "root.prod"));
    assertEquals("-", row(html, "queues", "root.research").get(5)); // no max share
    assertTrue(html.contains("<p id=\"link\">Python policy: pid 4 on host, deciding."), html);
    assertTrue(html.contains("<form id=\"admin\" method=\"post\""), html);
    assertTrue(html.contains("<option value=\"root.research\">"), html); // a leaf to move to
    assertFalse(html.contains("<option value=\"root\">"), html);
    assertFalse(html.contains("ResourceManager"), html);
    assertEquals(List.of("GET /api/v1/apps"), restCalls); // one call to serve per page view
  }

  @Test
  void aWrongTokenIsRefusedAndChangesNothing() throws Exception {
    register("http://127.0.0.1:" + rest.getAddress().getPort());
    SlotwiseTaskSchedulerTest.FakeJob job = job();
    queueTable();
    HttpResponse<String> r = post(form(job.getJobID().toString(), "root.research", "HIGH", "guess"));
    assertEquals(401, r.statusCode());
    assertEquals("slotwise serve refused the admin token; nothing was changed.", outcome(r.body()));
    assertEquals("root.prod", scheduler.shownJobs().get(0).pool());
    assertEquals(JobPriority.NORMAL, job.getPriority());
    assertTrue(python.calls("move").isEmpty());
    assertFalse(r.body().contains("guess"), "the token is never echoed");
    r = post(form(job.getJobID().toString(), "root.research", "", "guess\r\nX-Forged: 1"));
    assertEquals(400, r.statusCode());
    assertEquals("an admin token is one line of printable characters; nothing was changed.", outcome(r.body()));
    assertTrue(restCalls.stream().noneMatch(c -> c.startsWith("POST") && c.contains("Forged")), restCalls.toString());
  }

  @Test
  void theRightTokenMovesTheJobAndSetsItsPriorityAndPythonHearsOfBoth() throws Exception {
    register("http://127.0.0.1:" + rest.getAddress().getPort());
    SlotwiseTaskSchedulerTest.FakeJob job = job();
    queueTable();
    String id = job.getJobID().toString();
    python.move = m -> "{\"queue\": \"root.research\"}";
    HttpResponse<String> r = post(form(id, "research", "VERY_HIGH", TOKEN));
    assertEquals(200, r.statusCode(), r.body());
    assertEquals("Done: moved " + id + " to root.research; set " + id + "'s priority to VERY_HIGH.",
        outcome(r.body()));
    List<String> cells = row(r.body(), "jobs", id);
    assertEquals(List.of("root.research", "VERY_HIGH"), cells.subList(4, 6));
    assertEquals("{\"app\":\"" + id + "\",\"queue\":\"research\"}", python.calls("move").get(0).toString());
    assertFalse(r.body().contains(TOKEN), "the token is never echoed");
    scheduler.update();
    JsonNode app = python.last("update").get("apps").get(0);
    assertEquals("root.research", app.get("queue").asText());
    assertEquals(2, app.get("priority").asInt());
  }

  @Test
  void aMovePythonRefusesSaysWhyAndTheJobStays() throws Exception {
    register("http://127.0.0.1:" + rest.getAddress().getPort());
    SlotwiseTaskSchedulerTest.FakeJob job = job();
    python.move = m -> "{\"error\": \"root is a parent queue\"}";
    HttpResponse<String> r = post(form(job.getJobID().toString(), "root", "", TOKEN));
    assertEquals(409, r.statusCode());
    assertEquals("slotwise serve refused moving " + job.getJobID() + " to root (409): the JobTracker refused: "
        + "root is a parent queue; nothing was changed.", outcome(r.body()));
    assertEquals("root.prod", scheduler.shownJobs().get(0).pool());
  }

  @Test
  void withServeGoneThePageStillRendersAndSaysSo() throws Exception {
    register("http://127.0.0.1:" + rest.getAddress().getPort());
    SlotwiseTaskSchedulerTest.FakeJob job = job();
    rest.stop(0); // its port refuses connections now
    HttpResponse<String> r = get();
    assertEquals(200, r.statusCode());
    assertEquals("?", row(r.body(), "jobs", job.getJobID().toString()).get(8));
    assertTrue(r.body().contains("Fair shares unknown (\"?\"): slotwise serve's API at http://127.0.0.1:"), r.body());
    r = post(form(job.getJobID().toString(), "root.research", "", TOKEN));
    assertEquals(504, r.statusCode());
    assertTrue(outcome(r.body()).startsWith("slotwise serve's API at http://127.0.0.1:"), r.body());
    assertEquals("root.prod", scheduler.shownJobs().get(0).pool());
  }

  @Test
  void withNoPolicyServerThePageSaysTheJobTrackerSchedulesByItsFifo() throws Exception {
    job(); // no Python registered: its place call fails, and so does the heartbeat's
    String tracker = "tracker_h1:h1/127.0.0.1:4000";
    org.apache.hadoop.mapreduce.server.jobtracker.TaskTracker t =
        new org.apache.hadoop.mapreduce.server.jobtracker.TaskTracker(tracker);
    t.setStatus(new TaskTrackerStatus(tracker, "h1", 50060, new ArrayList<>(), 0, 0, 0, 0));
    scheduler.assignTasks(t);
    HttpResponse<String> r = get();
    String html = r.body();
    assertTrue(html.contains("Python policy: none registered; the JobTracker schedules by its FIFO since "), html);
    assertTrue(html.contains("<td id=\"fifo-heartbeats\">1</td>"), html);
    assertTrue(html.contains("no policy server is registered"), html);
    r = post(form(scheduler.shownJobs().get(0).job().getJobID().toString(), "root.research", "", TOKEN));
    assertEquals(503, r.statusCode());
    assertTrue(outcome(r.body()).startsWith("No policy server is registered with the JobTracker"), r.body());
  }

  @Test
  void anOversizedFormIsRefusedBeforeItIsRead() throws Exception {
    register("http://127.0.0.1:" + rest.getAddress().getPort());
    job();
    HttpResponse<String> r = post("token=" + "x".repeat(SlotwiseSchedulerServlet.MAX_FORM));
    assertEquals(413, r.statusCode());
    assertTrue(restCalls.stream().noneMatch(c -> c.startsWith("POST")), restCalls.toString());
  }
}
