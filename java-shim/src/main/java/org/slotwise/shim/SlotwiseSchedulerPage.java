package org.slotwise.shim;

import java.util.Map;
import java.util.TreeMap;

import org.apache.hadoop.yarn.api.records.QueueInfo;
import org.apache.hadoop.yarn.server.resourcemanager.ResourceManager;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.QueueMetrics;
import org.apache.hadoop.yarn.server.resourcemanager.webapp.MetricsOverviewTable;
import org.apache.hadoop.yarn.server.resourcemanager.webapp.RmView;
import org.apache.hadoop.yarn.webapp.SubView;
import org.apache.hadoop.yarn.webapp.hamlet2.HamletSpec.__;
import org.apache.hadoop.yarn.webapp.view.HtmlPage.Page;
import org.apache.hadoop.yarn.webapp.hamlet2.Hamlet;
import org.apache.hadoop.yarn.webapp.hamlet2.Hamlet.TABLE;
import org.apache.hadoop.yarn.webapp.hamlet2.Hamlet.TBODY;
import org.apache.hadoop.yarn.webapp.view.HtmlBlock;

import com.google.inject.Inject;

/**
 * The RM web UI's scheduler page (/cluster/scheduler) for Slotwise: set
 * yarn.http.rmwebapp.scheduler.page.class to this class. Without it the RM
 * fails to render that page for any scheduler other than its own three.
 */
public class SlotwiseSchedulerPage extends RmView {

  @Override
  protected void preHead(Page.HTML<__> html) {
    super.preHead(html);
    setTitle("Slotwise Scheduler"); // RmView titles it after an app-state filter
  }

  @Override
  protected Class<? extends SubView> content() {
    return QueuesBlock.class;
  }

  /** The cluster metrics, the policy's state and one row per queue. */
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
      if (!(rm.getResourceScheduler() instanceof SlotwiseScheduler)) {
        html.p().__("The scheduler is not Slotwise.").__();
        return;
      }
      SlotwiseScheduler s = (SlotwiseScheduler) rm.getResourceScheduler();
      Messages.ShimStatus link = s.runtime().linkStatus(null);
      html.p().__("Slotwise: " + (link.holder() == null ? "no Python policy registered"
          : "policy server pid " + link.holder().pid() + " on " + link.holder().host())
          + (link.inFallback() ? "; scheduling by the built-in FIFO: " + link.reason() : "")
          + "; heartbeats scheduled by the built-in FIFO: " + link.fallbackHeartbeats() + " of "
          + link.heartbeats() + "; failed calls to Python: " + link.failures()
          + "; answers refused for breaking the protocol's limits: " + s.refusedAnswers()
          + (s.lastRefusal() == null ? "" : " (last: " + s.lastRefusal() + ")")).__();
      TBODY<TABLE<Hamlet>> rows = html.table("#queues").thead().tr()
          .th("Queue").th("Weight").th("Fair share").th("Steady share").th("Max")
          .th("Used MB").th("Used vcores").th("Pending MB").th("Apps running").th("Apps pending")
          .__().__().tbody();
      Map<String, SlotwiseQueue> queues = new TreeMap<>(s.getQueues());
      for (SlotwiseQueue q : queues.values()) {
        QueueInfo info = q.getQueueInfo(false, false);
        QueueMetrics m = q.getMetrics();
        rows.tr()
            .td(q.getQueueName())
            .td(String.valueOf(info.getWeight()))
            .td(percent(info.getCapacity()))
            .td(info.getSteadyFairShareMemory() + " MB")
            .td(percent(info.getMaximumCapacity()))
            .td(String.valueOf(m.getAllocatedMB()))
            .td(String.valueOf(m.getAllocatedVirtualCores()))
            .td(String.valueOf(m.getPendingMB()))
            .td(String.valueOf(m.getAppsRunning()))
            .td(String.valueOf(m.getAppsPending()))
            .__();
      }
      rows.__().__();
    }

    private static String percent(float f) {
      return String.format("%.1f%%", f * 100);
    }
  }
}
