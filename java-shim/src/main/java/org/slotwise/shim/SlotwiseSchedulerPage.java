package org.slotwise.shim;

import org.apache.hadoop.yarn.server.resourcemanager.ResourceManager;
import org.apache.hadoop.yarn.server.resourcemanager.webapp.MetricsOverviewTable;
import org.apache.hadoop.yarn.server.resourcemanager.webapp.RmView;
import org.apache.hadoop.yarn.webapp.SubView;
import org.apache.hadoop.yarn.webapp.hamlet2.HamletSpec.__;
import org.apache.hadoop.yarn.webapp.view.HtmlBlock;
import org.apache.hadoop.yarn.webapp.view.HtmlPage.Page;

import com.google.inject.Inject;

/**
 * The RM web UI's scheduler page (/cluster/scheduler) for Slotwise: set
 * yarn.http.rmwebapp.scheduler.page.class to this class (without it the RM
 * fails to render that page for any scheduler other than its own three).
 * YARN's cluster metrics, the link's part ({@link ServeWeb#linkHtml}), and the
 * queues {@code slotwise serve} draws from its own tree
 * (python/slotwise/web/rm_scheduler.py), or why they are missing.
 */
public class SlotwiseSchedulerPage extends RmView {

  /**
   * RmView's head without its applications table: RmView sets up a DataTable
   * whose data ({@code appsTableData}) only its apps block writes, which this
   * page does not show (the console said "appsTableData is not defined").
   */
  @Override
  protected void preHead(Page.HTML<__> html) {
    commonPreHead(html);
    setTitle("Slotwise Scheduler");
  }

  @Override
  protected Class<? extends SubView> content() {
    return QueuesBlock.class;
  }

  /** The cluster metrics, the link's part and serve's queues. */
  public static class QueuesBlock extends HtmlBlock {
    private final ResourceManager rm;

    @Inject
    public QueuesBlock(ViewContext ctx, ResourceManager rm) {
      super(ctx);
      this.rm = rm;
    }

    @Override
    protected void render(Block html) {
      html.__(MetricsOverviewTable.class);
      if (!(rm.getResourceScheduler() instanceof SlotwiseScheduler s)) {
        html.p().__("The scheduler is not Slotwise.").__();
        return;
      }
      ShimRuntime rt = s.runtime();
      html.div("#slotwise")._r(ServeWeb.linkHtml(rt),
          ServeWeb.body(ServeWeb.call(rt, "/rm/scheduler", null, null, null, "text/html"))).__();
    }
  }
}
