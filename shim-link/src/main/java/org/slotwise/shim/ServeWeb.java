package org.slotwise.shim;

import static org.apache.hadoop.http.HtmlQuoting.quoteHtmlChars;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.*;
import java.nio.charset.StandardCharsets;
import java.text.SimpleDateFormat;
import java.util.Date;

/**
 * The one forwarder of both masters' scheduler views (the JobTracker's
 * servlet, the RM's SchedulerInfoFilter) to {@code slotwise serve}, which
 * draws them (python/slotwise/web/jobtracker.py, rm_scheduler.py); Java draws
 * only the link's part, which must show when serve is gone, and the page
 * around it. Each call is bounded (1 s to connect, 2 s for a view, 10 s for an
 * action, 16 MiB), on the web server's thread, never under the master's
 * lock; an admin token goes only as a Bearer header, never kept or logged.
 */
public final class ServeWeb {
  /** The most of serve's answer read for one view (about 400 bytes a job). */
  public static final int MAX_BODY = 16 << 20;
  private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(java.time.Duration.ofSeconds(1)).build(); // serve speaks HTTP/1.1: no h2c upgrade

  private ServeWeb() {
  }

  /** serve's answer: its status and body, or (body null) why there is none, in words. */
  public record Answer(int status, String body, String why) {}

  /** serve's web address as the master reaches it, from its registration; null with none registered. */
  public static String address(ShimRuntime rt) {
    Messages.ShimStatus st = rt.link().status(null);
    String web = st.holder() == null ? null : st.holder().web();
    return web == null || !web.startsWith("http://") ? null : web.replaceAll("/+$", "");
  }

  /**
   * GETs serve's {@code path} ({@code form} null) or POSTs the JSON form with
   * the token; {@code type}: a usable answer's content type (another is an
   * older serve's); {@code accept} is passed on when given.
   */
  public static Answer call(ShimRuntime rt, String path, String accept, String form, String token, String type) {
    String nothing = form == null ? "." : "; nothing was changed.";
    String web = address(rt);
    if (web == null) {
      return new Answer(form == null ? 200 : 503, null, "No policy server is registered: this view's queues, "
          + "shares and actions are slotwise serve's" + nothing);
    }
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(web + path))
        .timeout(java.time.Duration.ofSeconds(form == null ? 2 : 10));
    try {
      if (accept != null) {
        b.header("Accept", accept);
      }
      if (form != null) {
        b.header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(form));
        if (token != null && !token.isBlank()) {
          b.header("Authorization", "Bearer " + token.trim());
        }
      }
      HttpResponse<InputStream> r = HTTP.send(b.build(), HttpResponse.BodyHandlers.ofInputStream());
      byte[] body;
      try (InputStream in = r.body()) {
        body = in.readNBytes(MAX_BODY + 1);
      }
      boolean typed = r.headers().firstValue("Content-Type").orElse("").startsWith(type);
      if (!typed || body.length > MAX_BODY) {
        return new Answer(502, null, "slotwise serve at " + web + " answered " + r.statusCode() + (typed
            ? " with more than " + (MAX_BODY >> 20) + " MiB" : " with no " + type + ": is it an older build?")
            + nothing);
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

  /** The link's part of a scheduler page: who decides (or since when the FIFO does, why), the counts, each with what it counts. */
  public static String linkHtml(ShimRuntime rt) {
    Messages.ShimStatus st = rt.link().status(null);
    String master = rt.master();
    String who = st.holder() == null ? "none registered" : "pid " + st.holder().pid() + " on " + st.holder().host();
    String web = address(rt);
    StringBuilder out = new StringBuilder("<p id=\"link\">").append(quoteHtmlChars("Python policy: " + who
        + (!st.inFallback() ? ", deciding." : "; the " + master + " schedules by its FIFO since "
            + new SimpleDateFormat("yyyy-MM-dd HH:mm:ss").format(new Date(st.sinceMs())) + " (" + st.reason()
            + ").")));
    if (web != null) {
      out.append(" Its console: <a href=\"").append(quoteHtmlChars(web)).append("/\">")
          .append(quoteHtmlChars(web)).append("</a>.");
    }
    out.append("</p>\n<table border=\"1\" id=\"counts\">\n");
    String beats = master.equals("JobTracker") ? "TaskTracker" : "NodeManager";
    String last = rt.link().lastRefusal();
    String[][] rows = {
        {"heartbeats", "Heartbeats", Long.toString(st.heartbeats()),
            beats + " heartbeats since the " + master + " started"},
        {"fifo-heartbeats", "Scheduled by the FIFO", Long.toString(st.fallbackHeartbeats()),
            "heartbeats the " + master + "'s built-in FIFO scheduled: each one whose call to Python failed, "
                + "and each while no policy server was registered or a new one was warming up"},
        {"failures", "Failed calls to Python", Long.toString(st.failures()),
            "calls of every kind (heartbeats, updates, placements, moves) that found no policy server, "
                + "missed their deadline, broke or got an unusable answer; a failed heartbeat call sends its "
                + "heartbeat(s) to the FIFO, a failed update or placement none, so the two counts differ"},
        {"refused", "Answers refused", Long.toString(rt.link().refusedAnswers()),
            "answers refused whole for breaking the protocol's limits, each also a failed call"
                + (last == null ? "" : " (last: " + last + ")")}};
    for (String[] c : rows) {
      out.append("<tr><th>").append(c[1]).append("</th><td id=\"").append(c[0]).append("\">").append(c[2])
          .append("</td><td>").append(quoteHtmlChars(c[3])).append("</td></tr>\n");
    }
    return out.append("</table>").toString();
  }

  /** A master's whole scheduler page: title, heading (HTML), the link's part, serve's view or why there is none. */
  public static String page(ShimRuntime rt, String title, String heading, String css, Answer a) {
    return "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>" + quoteHtmlChars(title) + "</title>"
        + "<link rel=\"stylesheet\" type=\"text/css\" href=\"" + css + "\"></head><body>\n<h1>" + heading
        + "</h1>\n" + linkHtml(rt) + "\n" + (a.body() != null ? a.body() : "<p id=\"outcome\" class=\"refused\"><b>"
        + quoteHtmlChars(a.why()) + "</b></p>") + "\n</body></html>\n";
  }
}
