package org.apache.hadoop.mapred;

import static org.apache.hadoop.http.HtmlQuoting.quoteHtmlChars;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

import javax.servlet.http.HttpServlet;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;

import com.fasterxml.jackson.databind.ObjectMapper;
import org.slotwise.shim.Messages;
import org.slotwise.shim.ShimRuntime;

/**
 * The JobTracker's /scheduler page: this shim's link to Python (its state and
 * counts) and below it the page {@code slotwise serve} draws for the
 * JobTracker: queues, running jobs with their fair shares, and the form that
 * moves a job or sets its priority (python/slotwise/web/jobtracker.py). The
 * shares and the actions are Python's, so they are not written again here.
 *
 * <p>A form is forwarded as JSON to serve (the address it gave at
 * registration), the operator's token as a Bearer header that serve checks
 * before it reads the rest; the token is neither kept nor echoed nor logged.
 * Each call is bounded (1 s to connect, 2 s for the page, 10 s for an action)
 * and made on the web server's thread, never under the JobTracker's lock: a
 * dead serve costs a page view at most that, and the link's part still shows.
 */
public class SlotwiseSchedulerServlet extends HttpServlet {
  static final String ATTRIBUTE = "slotwise.scheduler";
  /** An action's form: four short fields (serve's /ui/login allows 4 KiB for the same token). */
  static final int MAX_FORM = 4096;
  /** The most of serve's page read for one view (about 400 bytes a job). */
  static final int MAX_PAGE = 16 << 20;
  private static final long serialVersionUID = 1L;
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(1)).build(); // serve speaks HTTP/1.1: no h2c upgrade

  /** serve's answer: its status and page, or (page null) why there is none. */
  record Answer(int status, String page, String why) {}

  @Override
  protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
    page(resp, call(scheduler(), null, null));
  }

  /** An action: checked for size before its form is read; serve checks the token. */
  @Override
  protected void doPost(HttpServletRequest req, HttpServletResponse resp) throws IOException {
    int len = req.getContentLength();
    if (len < 0 || len > MAX_FORM) {
      resp.setHeader("Connection", "close");
      page(resp, new Answer(len < 0 ? 411 : 413, null, len < 0 ? "An action needs a Content-Length; nothing "
          + "was changed." : "An action's form is at most " + MAX_FORM + " bytes; nothing was changed."));
      return;
    }
    req.setCharacterEncoding("UTF-8"); // as browsers send a UTF-8 page's form
    String form = JSON.createObjectNode().put("job", req.getParameter("job")).put("queue", req.getParameter("queue"))
        .put("priority", req.getParameter("priority")).toString();
    page(resp, call(scheduler(), form, req.getParameter("token")));
  }

  private SlotwiseTaskScheduler scheduler() {
    return (SlotwiseTaskScheduler) getServletContext().getAttribute(ATTRIBUTE);
  }

  /** GETs serve's page ({@code form} null) or POSTs the form to it. */
  static Answer call(SlotwiseTaskScheduler s, String form, String token) {
    String nothing = form == null ? "." : "; nothing was changed.";
    String web = s == null ? null : webOf(s);
    if (web == null) {
      return new Answer(form == null ? 200 : 503, null, "No policy server is registered: the queues, the "
          + "jobs' fair shares and the actions of this page are slotwise serve's" + nothing);
    }
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(web + "/jobtracker/scheduler"));
    try {
      if (form != null) {
        b.timeout(Duration.ofSeconds(10)).header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(form));
        if (token != null && !token.isBlank()) {
          b.header("Authorization", "Bearer " + token.trim());
        }
      } else {
        b.timeout(Duration.ofSeconds(2));
      }
      HttpResponse<InputStream> r = HTTP.send(b.build(), HttpResponse.BodyHandlers.ofInputStream());
      byte[] body;
      try (InputStream in = r.body()) {
        body = in.readNBytes(MAX_PAGE + 1);
      }
      boolean html = r.headers().firstValue("Content-Type").orElse("").startsWith("text/html");
      if (!html || body.length > MAX_PAGE) {
        return new Answer(502, null, "slotwise serve at " + web + " answered " + r.statusCode() + (html
            ? " with more than " + (MAX_PAGE >> 20) + " MiB" : " with no page: is it an older build?") + nothing);
      }
      return new Answer(r.statusCode(), new String(body, StandardCharsets.UTF_8), null);
    } catch (IllegalArgumentException e) { // a token with a line break, say: not echoed
      return new Answer(400, null, "An admin token is one line of printable characters" + nothing);
    } catch (IOException e) {
      return new Answer(form == null ? 200 : 504, null, "slotwise serve at " + web + " did not answer (" + e
          + (form == null ? ")." : "): if it got the form, reload this page to see whether it took effect."));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return new Answer(503, null, "Interrupted" + nothing);
    }
  }

  /** serve's web address as the JobTracker reaches it, from its registration; null with none registered. */
  private static String webOf(SlotwiseTaskScheduler s) {
    Messages.ShimStatus st = s.status();
    String web = st.holder() == null ? null : st.holder().web();
    return web == null || !web.startsWith("http://") ? null : web.replaceAll("/+$", "");
  }

  private void page(HttpServletResponse resp, Answer a) throws IOException {
    resp.setStatus(a.status());
    resp.setContentType("text/html; charset=utf-8");
    resp.setHeader("Cache-Control", "no-store");
    render(scheduler(), resp.getWriter(), a);
  }

  /** The whole page: the link's part, then serve's (or why there is none). */
  static void render(SlotwiseTaskScheduler s, PrintWriter out, Answer a) {
    out.println("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>JobTracker scheduler: Slotwise</title>"
        + "<link rel=\"stylesheet\" type=\"text/css\" href=\"/static/hadoop.css\"></head><body>");
    out.println("<h1><a href=\"/jobtracker.jsp\">JobTracker</a> scheduler: Slotwise (policy in Python)</h1>");
    if (s == null) {
      out.println("<p id=\"link\">The Slotwise scheduler is not running on this JobTracker.</p></body></html>");
      return;
    }
    ShimRuntime rt = s.runtime();
    Messages.ShimStatus st = s.status();
    String web = webOf(s);
    out.println("<p id=\"link\">" + quoteHtmlChars(rt.describe(st)) + (web == null ? ""
        : " Its console: <a href=\"" + quoteHtmlChars(web) + "/\">" + quoteHtmlChars(web) + "</a>.") + "</p>");
    out.println("<table border=\"1\" id=\"counts\">");
    for (String[] c : rt.counts(st)) {
      out.println("<tr><th>" + c[1] + "</th><td id=\"" + c[0] + "\">" + c[2] + "</td><td>" + quoteHtmlChars(c[3])
          + "</td></tr>");
    }
    out.println("</table>");
    out.println(a.page() != null ? a.page()
        : "<p id=\"outcome\" class=\"refused\"><b>" + quoteHtmlChars(a.why()) + "</b></p>");
    out.println("</body></html>");
  }
}
