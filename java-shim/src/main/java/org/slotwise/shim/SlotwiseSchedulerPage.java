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
      ShimRuntime rt = s.runtime();
      Messages.ShimStatus link = rt.linkStatus(null);
      html.p("#link").__(rt.describe(link)).__();
      TBODY<TABLE<Hamlet>> counts = html.table("#counts").tbody();
      for (String[] c : rt.counts(link)) {
        counts.tr().th(c[1]).td().$id(c[0]).__(c[2]).__().td(c[3]).__();
      }
      counts.__().__();
      long clusterMb = s.getClusterResource().getMemorySize();
      html.p().__("Shares are of memory, in MB and as a share of the cluster's " + clusterMb + " MB: YARN's "
          + "fair policy shares memory only (a DRF queue's vcores are in /ws/v1/cluster/scheduler).").__();
      TBODY<TABLE<Hamlet>> rows = html.table("#queues").thead().tr()
          .th("Queue").th("Weight").th("Min share").th("Steady fair share").th("Fair share").th("Max share")
          .th("Used MB").th("Used vcores").th("Pending MB").th("Apps running").th("Apps pending")
          .__().__().tbody();
      Map<String, SlotwiseQueue> queues = new TreeMap<>(s.getQueues());
      for (SlotwiseQueue q : queues.values()) {
        QueueInfo info = q.getQueueInfo(false, false);
        QueueMetrics m = q.getMetrics();
        Messages.QueueRow r = q.row();
        rows.tr()
            .td(q.getQueueName())
            .td(String.valueOf(info.getWeight()))
            .td(mb(info.getMinResourceMemory(), clusterMb))
            .td(mb(info.getSteadyFairShareMemory(), clusterMb))
            .td(mb(r == null ? 0 : Math.round(r.fair().memoryMb()), clusterMb))
            .td(r == null || r.max() == null ? "unlimited" : mb(info.getMaxResourceMemory(), clusterMb))
            .td(String.valueOf(m.getAllocatedMB()))
            .td(String.valueOf(m.getAllocatedVirtualCores()))
            .td(String.valueOf(m.getPendingMB()))
            .td(String.valueOf(m.getAppsRunning()))
            .td(String.valueOf(m.getAppsPending()))
            .__();
      }
      rows.__().__();
    }

    /** An amount of memory in MB and as a share of the cluster's. */
    static String mb(long mb, long clusterMb) {
      return mb + " MB" + (clusterMb <= 0 ? "" : String.format(" (%.1f%%)", 100.0 * mb / clusterMb));
    }
  }
}
