package org.apache.hadoop.mapred;

import java.io.IOException;
import java.io.PrintWriter;
import java.util.List;

import javax.servlet.http.HttpServlet;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;

import org.slotwise.shim.Messages;

/**
 * The JobTracker's /scheduler page: the link to Python and the queue table of
 * Python's last update answer (read only; the policy's own UI is on
 * {@code slotwise serve}'s HTTP port).
 */
public class SlotwiseSchedulerServlet extends HttpServlet {
  static final String ATTRIBUTE = "slotwise.scheduler";
  private static final long serialVersionUID = 1L;

  @Override
  protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
    SlotwiseTaskScheduler s = (SlotwiseTaskScheduler) getServletContext().getAttribute(ATTRIBUTE);
    resp.setContentType("text/html; charset=utf-8");
    PrintWriter out = resp.getWriter();
    out.println("<!DOCTYPE html><html><head><title>Slotwise scheduler</title></head><body>");
    out.println("<h1>Slotwise scheduler (policy in Python)</h1>");
    if (s == null) {
      out.println("<p>not running</p></body></html>");
      return;
    }
    Messages.ShimStatus st = s.status();
    out.println("<p id=\"link\">Python policy: " + (st.holder() == null ? "none registered"
        : "pid " + st.holder().pid() + " on " + esc(st.holder().host())) + "; "
        + (st.inFallback() ? "FIFO fallback since " + st.sinceMs() + " (" + esc(st.reason()) + ")"
            : "deciding") + ". Heartbeats: " + st.heartbeats() + ", by the FIFO: "
        + st.fallbackHeartbeats() + ". Jobs: " + s.jobCount() + ". Failed calls to Python: "
        + st.failures() + "; answers refused for breaking the protocol's limits: "
        + s.refusedAnswers() + (s.lastRefusal() == null ? ""
            : " (last: " + esc(s.lastRefusal()) + ")") + ".</p>");
    List<Messages.QueueRow> rows = s.queueTable();
    out.println("<table border=\"1\" id=\"queues\"><tr><th>queue</th><th>weight</th>"
        + "<th>min maps</th><th>min reduces</th><th>running maps</th><th>running reduces</th>"
        + "<th>fair maps</th><th>fair reduces</th><th>demand maps</th><th>demand reduces</th>"
        + "<th>running jobs</th><th>jobs</th></tr>");
    for (Messages.QueueRow r : rows) {
      out.println("<tr><td>" + esc(r.name()) + "</td><td>" + r.weight() + "</td><td>"
          + num(r.min().mapSlots()) + "</td><td>" + num(r.min().reduceSlots()) + "</td><td>"
          + num(r.usage().mapSlots()) + "</td><td>" + num(r.usage().reduceSlots()) + "</td><td>"
          + num(r.fair().mapSlots()) + "</td><td>" + num(r.fair().reduceSlots()) + "</td><td>"
          + num(r.demand().mapSlots()) + "</td><td>" + num(r.demand().reduceSlots()) + "</td><td>"
          + r.runningApps() + "</td><td>" + r.apps() + "</td></tr>");
    }
    out.println("</table><p>Queue table of " + (s.lastUpdateMs() == 0 ? "no update yet"
        : "the update at " + new java.util.Date(s.lastUpdateMs())) + ".</p></body></html>");
  }

  private static String num(double x) {
    return x == Math.rint(x) ? Long.toString((long) x) : String.format("%.2f", x);
  }

  private static String esc(String s) {
    return s == null ? "" : s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;");
  }
}
