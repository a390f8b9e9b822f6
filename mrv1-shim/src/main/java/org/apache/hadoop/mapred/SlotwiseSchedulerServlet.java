package org.apache.hadoop.mapred;

import java.io.IOException;

import javax.servlet.http.HttpServlet;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;

import com.fasterxml.jackson.databind.ObjectMapper;
import org.slotwise.shim.ServeWeb;
import org.slotwise.shim.ShimRuntime;

/**
 * The JobTracker's /scheduler page: this shim's link to Python (its state and
 * counts, {@link ServeWeb#linkHtml}) and below it the page {@code slotwise
 * serve} draws for the JobTracker: queues, running jobs with their fair
 * shares, and the form that moves a job or sets its priority
 * (python/slotwise/web/jobtracker.py). A form is forwarded as JSON to serve,
 * the operator's token as a Bearer header that serve checks before it reads
 * the rest ({@link ServeWeb#call}: bounded, never under the JobTracker's lock).
 */
public class SlotwiseSchedulerServlet extends HttpServlet {
  /** The servlet context's attribute holding the shim's {@link ShimRuntime} (set before the servlet is added). */
  static final String ATTRIBUTE = "slotwise.scheduler";
  /** An action's form: four short fields (serve's /ui/login allows 4 KiB for the same token). */
  static final int MAX_FORM = 4096;
  private static final long serialVersionUID = 1L;
  private static final String PATH = "/jobtracker/scheduler";
  private static final ObjectMapper JSON = new ObjectMapper();

  @Override
  protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
    ShimRuntime rt = (ShimRuntime) getServletContext().getAttribute(ATTRIBUTE);
    page(resp, rt, ServeWeb.call(rt, PATH, null, null, null, "text/html"));
  }

  /** An action: checked for size before its form is read; serve checks the token. */
  @Override
  protected void doPost(HttpServletRequest req, HttpServletResponse resp) throws IOException {
    ShimRuntime rt = (ShimRuntime) getServletContext().getAttribute(ATTRIBUTE);
    int len = req.getContentLength();
    if (len < 0 || len > MAX_FORM) {
      resp.setHeader("Connection", "close");
      page(resp, rt, new ServeWeb.Answer(len < 0 ? 411 : 413, null, len < 0
          ? "An action needs a Content-Length; nothing was changed."
          : "An action's form is at most " + MAX_FORM + " bytes; nothing was changed."));
      return;
    }
    req.setCharacterEncoding("UTF-8"); // as browsers send a UTF-8 page's form
    String form = JSON.createObjectNode().put("job", req.getParameter("job")).put("queue", req.getParameter("queue"))
        .put("priority", req.getParameter("priority")).toString();
    page(resp, rt, ServeWeb.call(rt, PATH, null, form, req.getParameter("token"), "text/html"));
  }

  /** The whole page: the link's part, then serve's (or why there is none). */
  private static void page(HttpServletResponse resp, ShimRuntime rt, ServeWeb.Answer a) throws IOException {
    resp.setStatus(a.status());
    resp.setContentType("text/html; charset=utf-8");
    resp.setHeader("Cache-Control", "no-store");
    resp.getWriter().print(ServeWeb.page(rt, "JobTracker scheduler: Slotwise",
        "<a href=\"/jobtracker.jsp\">JobTracker</a> scheduler: Slotwise (policy in Python)", "/static/hadoop.css", a));
  }
}
