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
import org.slotwise.shim.PolicyLink;
import org.slotwise.shim.ShimRuntime;

/**
 * The JobTracker's /scheduler page in Hadoop 1's own web server (Jetty 6):
 * the link's state and counts above serve's page; a form forwarded as JSON
 * with the operator's token as a Bearer header, never echoed; bounded when
 * serve is gone or none is registered. serve is a stand-in here that calls
 * the shim's gateway entries as serve's admin service does, so the shim's
 * half of a move runs for real: Python's move answer over the PolicyLink,
 * the job's priority, and what the next payload tells Python.
 */
class SlotwiseSchedulerServletTest {
  private static final String TOKEN = "the-admin-token-of-serve-0123456789";
  private static final HttpClient CLIENT = HttpClient.newHttpClient();

  @TempDir
  Path dir;
  private final SlotwiseTaskSchedulerTest.FakeManager manager = new SlotwiseTaskSchedulerTest.FakeManager();
  private final SlotwiseTaskSchedulerTest.FakePython python = new SlotwiseTaskSchedulerTest.FakePython();
  private final List<String> restCalls = new CopyOnWriteArrayList<>(); // method, Authorization, body
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
    rest.createContext("/jobtracker/scheduler", this::serveApi);
    rest.start();
    jetty = new Server();
    SelectChannelConnector http = new SelectChannelConnector();
    http.setHost("127.0.0.1");
    http.setPort(0);
    jetty.addConnector(http);
    Context root = new Context(jetty, "/");
    root.setAttribute(SlotwiseSchedulerServlet.ATTRIBUTE, scheduler.runtime());
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

  /**
   * What serve does for this page (python/slotwise/web/jobtracker.py, tested
   * with the real service in tests/test_jobtracker_page.py): its page on GET;
   * on POST, the Bearer token checked before the body is read, then the move
   * and the priority through the shim's gateway entries, as serve's admin
   * service does, and its page with what was done.
   */
  private void serveApi(HttpExchange x) throws IOException {
    String auth = x.getRequestHeaders().getFirst("Authorization");
    int status = 200;
    String body = "<table id=\"jobs\"><tr><td>serve's rows</td></tr></table>";
    if (x.getRequestMethod().equals("POST")) {
      if (!("Bearer " + TOKEN).equals(auth)) {
        restCalls.add("POST " + auth);
        status = 401;
        body = "<p id=\"outcome\" class=\"refused\"><b>refused</b></p>";
      } else {
        JsonNode in = new com.fasterxml.jackson.databind.ObjectMapper().readTree(x.getRequestBody());
        restCalls.add("POST " + auth + " " + in);
        String job = in.get("job").asText();
        Messages.MoveAnswer m = scheduler.adminMove(job, in.get("queue").asText());
        status = m.error() == null ? 200 : 409;
        if (m.error() == null) {
          scheduler.adminPriority(job, 2); // VERY_HIGH
        }
        body = "<p id=\"outcome\"><b>" + (m.error() == null ? "moved to " + m.queue() : m.error()) + "</b></p>";
      }
    } else {
      restCalls.add("GET " + auth);
    }
    byte[] out = body.getBytes(StandardCharsets.UTF_8);
    x.getResponseHeaders().set("Content-Type", "text/html; charset=utf-8");
    x.sendResponseHeaders(status, out.length);
    try (OutputStream o = x.getResponseBody()) {
      o.write(out);
    }
  }

  private void register(String web) {
    scheduler.runtime().registerPolicy(python, PolicyLink.write(new Messages.Register(Messages.PROTOCOL, 40004,
        "t".repeat(64), false, new Messages.ServerInfo(4, "host", "/pools.xml", 0, "test", web))));
  }

  private String serve() {
    return "http://127.0.0.1:" + rest.getAddress().getPort();
  }

  private SlotwiseTaskSchedulerTest.FakeJob job() throws IOException {
    JobConf conf = new JobConf(false);
    conf.setUser("ann");
    conf.set("user.name", "ann");
    conf.set("mapred.fairscheduler.pool", "prod");
    return manager.add(new SlotwiseTaskSchedulerTest.FakeJob(1, conf, 4, 1, true));
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

  private static String outcome(String html) {
    Matcher m = Pattern.compile("<p id=\"outcome\"[^>]*><b>(.*?)</b></p>").matcher(html);
    return m.find() ? m.group(1) : null;
  }

  // ------------------------------------------------------------------ tests

  @Test
  void thePageIsTheLinksStateAndCountsAboveServesPage() throws Exception {
    register(serve());
    HttpResponse<String> r = get();
    assertEquals(200, r.statusCode());
    String html = r.body();
    assertTrue(html.contains("<p id=\"link\">Python policy: pid 4 on host, deciding."), html);
    assertTrue(html.contains("<td id=\"heartbeats\">"), html);
    assertTrue(html.contains("<table id=\"jobs\"><tr><td>serve's rows</td></tr></table>"), html);
    assertTrue(html.contains("Its console: <a href=\"" + serve() + "/\">"), html);
    assertFalse(html.contains("ResourceManager"), html);
    assertEquals(List.of("GET null"), restCalls); // one call to serve per page view, no token on a read
  }

  @Test
  void aFormGoesToServeAsJsonWithTheTokenAsBearerAndTheShimCarriesItOut() throws Exception {
    register(serve());
    SlotwiseTaskSchedulerTest.FakeJob job = job();
    String id = job.getJobID().toString();
    python.move = m -> "{\"queue\": \"root.research\"}";
    HttpResponse<String> r = post(form(id, "research", "VERY_HIGH", TOKEN));
    assertEquals(200, r.statusCode(), r.body());
    assertEquals("moved to root.research", outcome(r.body()));
    assertEquals(List.of("POST Bearer " + TOKEN + " {\"job\":\"" + id + "\",\"queue\":\"research\","
        + "\"priority\":\"VERY_HIGH\"}"), restCalls); // the token in the header only
    assertFalse(r.body().contains(TOKEN), "the token is never echoed");
    assertEquals("{\"app\":\"" + id + "\",\"queue\":\"research\"}", python.calls("move").get(0).toString());
    assertEquals(JobPriority.VERY_HIGH, job.getPriority());
    scheduler.update();
    JsonNode app = python.last("update").get("apps").get(0);
    assertEquals("root.research", app.get("queue").asText());
    assertEquals(2, app.get("priority").asInt());
  }

  @Test
  void serveRefusingTheTokenIsShownWithItsStatusAndNothingChanges() throws Exception {
    register(serve());
    SlotwiseTaskSchedulerTest.FakeJob job = job();
    HttpResponse<String> r = post(form(job.getJobID().toString(), "root.research", "HIGH", "guess"));
    assertEquals(401, r.statusCode());
    assertEquals("refused", outcome(r.body()));
    assertFalse(r.body().contains("guess"), "the token is never echoed");
    assertTrue(python.calls("move").isEmpty());
    assertEquals(JobPriority.NORMAL, job.getPriority());
    r = post(form(job.getJobID().toString(), "root.research", "", "guess\r\nX-Forged: 1"));
    assertEquals(400, r.statusCode());
    assertEquals("An admin token is one line of printable characters; nothing was changed.", outcome(r.body()));
    assertEquals(List.of("POST Bearer guess"), restCalls); // the forged header never left
  }

  @Test
  void withServeGoneThePageStillRendersAndSaysSo() throws Exception {
    register(serve());
    SlotwiseTaskSchedulerTest.FakeJob job = job();
    rest.stop(0); // its port refuses connections now
    HttpResponse<String> r = get();
    assertEquals(200, r.statusCode());
    assertTrue(r.body().contains("<p id=\"link\">Python policy: pid 4 on host"), r.body());
    assertTrue(outcome(r.body()).startsWith("slotwise serve at http://127.0.0.1:"), r.body());
    r = post(form(job.getJobID().toString(), "root.research", "", TOKEN));
    assertEquals(504, r.statusCode());
    assertTrue(outcome(r.body()).endsWith("reload this page to see whether it took effect."), r.body());
  }

  @Test
  void withNoPolicyServerThePageSaysTheJobTrackerSchedulesByItsFifo() throws Exception {
    SlotwiseTaskSchedulerTest.FakeJob job = job(); // no Python registered: the heartbeat's call fails
    String tracker = "tracker_h1:h1/127.0.0.1:4000";
    org.apache.hadoop.mapreduce.server.jobtracker.TaskTracker t =
        new org.apache.hadoop.mapreduce.server.jobtracker.TaskTracker(tracker);
    t.setStatus(new TaskTrackerStatus(tracker, "h1", 50060, new ArrayList<>(), 0, 0, 0, 0));
    scheduler.assignTasks(t);
    HttpResponse<String> r = get();
    String html = r.body();
    assertEquals(200, r.statusCode());
    assertTrue(html.contains("Python policy: none registered; the JobTracker schedules by its FIFO since "), html);
    assertTrue(html.contains("<td id=\"fifo-heartbeats\">1</td>"), html);
    assertTrue(outcome(html).startsWith("No policy server is registered"), html);
    r = post(form(job.getJobID().toString(), "root.research", "", TOKEN));
    assertEquals(503, r.statusCode());
    assertTrue(outcome(r.body()).endsWith("; nothing was changed."), r.body());
    assertTrue(restCalls.isEmpty(), restCalls.toString());
  }

  @Test
  void anOversizedFormIsRefusedBeforeItIsRead() throws Exception {
    register(serve());
    job();
    HttpResponse<String> r = post("token=" + "x".repeat(SlotwiseSchedulerServlet.MAX_FORM));
    assertEquals(413, r.statusCode());
    assertTrue(restCalls.isEmpty(), restCalls.toString());
  }
}
