package org.slotwise.shim;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.function.Supplier;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.yarn.api.records.Priority;
import org.apache.hadoop.yarn.api.records.QueueACL;
import org.apache.hadoop.yarn.api.records.QueueInfo;
import org.apache.hadoop.yarn.api.records.QueueState;
import org.apache.hadoop.yarn.api.records.QueueStatistics;
import org.apache.hadoop.yarn.api.records.QueueUserACLInfo;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.factories.RecordFactory;
import org.apache.hadoop.yarn.factory.providers.RecordFactoryProvider;
import org.apache.hadoop.yarn.server.resourcemanager.rmcontainer.RMContainer;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.AbstractUsersManager;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.ActiveUsersManager;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.Queue;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.QueueMetrics;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.SchedulerApplicationAttempt;

/**
 * One of Python's pools, as a YARN queue, by full name (root.x.y). Queues are
 * made on demand; the numbers come from the pool table of Python's last
 * update answer, the usage from YARN's own queue metrics.
 *
 * <p>Nothing here takes the scheduler's lock: getQueueInfo is called under
 * app attempt locks (resource usage reports), so it reads only volatile data
 * and thread-safe metrics.
 */
final class SlotwiseQueue implements Queue {
  static final String ROOT = "root";
  private static final RecordFactory RECORDS = RecordFactoryProvider.getRecordFactory(null);
  private static final long[] ZERO = {0, 0};

  private final String name;
  private final SlotwiseQueue parent;
  private final QueueMetrics metrics;
  private final ActiveUsersManager users;
  private final Supplier<Resource> cluster;
  private final Map<String, SlotwiseQueue> children = new ConcurrentSkipListMap<>();
  private volatile Answer.QueueRow row; // null until Python describes the pool

  SlotwiseQueue(String name, SlotwiseQueue parent, Configuration conf,
      Supplier<Resource> cluster) {
    this.name = name;
    this.parent = parent;
    this.cluster = cluster;
    this.metrics = QueueMetrics.forQueue(name, parent, false, conf);
    this.users = new ActiveUsersManager(metrics);
    if (parent != null) {
      parent.children.put(name, this);
    }
  }

  /**
   * The full name for what a client or Python wrote: "prod" and "root.prod"
   * are the same pool; null if the name is not usable.
   */
  static String qualify(String queue) {
    if (queue == null) {
      return null;
    }
    String q = queue.trim();
    if (q.isEmpty()) {
      return null;
    }
    if (!q.equals(ROOT) && !q.startsWith(ROOT + ".")) {
      q = ROOT + "." + q;
    }
    for (String part : q.split("\\.", -1)) {
      if (part.isEmpty() || !part.trim().equals(part)) {
        return null;
      }
    }
    return q;
  }

  String getParentName() {
    return parent == null ? null : parent.name;
  }

  SlotwiseQueue getParent() {
    return parent;
  }

  Collection<SlotwiseQueue> getChildren() {
    return children.values();
  }

  /** Whether Python's pool table lists this queue. */
  boolean isDescribed() {
    return row != null;
  }

  void describe(Answer.QueueRow r) {
    this.row = r;
  }

  @Override
  public String getQueueName() {
    return name;
  }

  @Override
  public QueueMetrics getMetrics() {
    return metrics;
  }

  private static float ratio(long part, long whole) {
    if (whole <= 0) {
      return 0f;
    }
    return Math.min(1f, Math.max(0f, (float) part / whole));
  }

  private static int toInt(long v) {
    return (int) Math.max(Integer.MIN_VALUE, Math.min(Integer.MAX_VALUE, v));
  }

  @Override
  public QueueInfo getQueueInfo(boolean includeChildQueues, boolean recursive) {
    Answer.QueueRow r = row;
    Resource total = cluster.get();
    long clusterMb = total.getMemorySize();
    long[] fair = r == null ? ZERO : r.fair;
    long[] min = r == null ? ZERO : r.min;
    long[] max = r == null ? null : r.max;
    long[] steady = r == null ? ZERO : r.steady;

    QueueInfo info = RECORDS.newRecordInstance(QueueInfo.class);
    info.setQueueName(name);
    info.setQueuePath(name);
    info.setSchedulerType("SlotwiseScheduler");
    info.setQueueState(QueueState.RUNNING);
    info.setWeight(r == null ? 1f : (float) r.weight);
    info.setCapacity(ratio(fair[0], clusterMb));
    info.setCurrentCapacity(ratio(metrics.getAllocatedMB(), clusterMb));
    info.setMaximumCapacity(max == null ? 1f : ratio(max[0], clusterMb));
    info.setMinResourceMemory(min[0]);
    info.setMinResourceVCore(toInt(min[1]));
    long[] cap = max == null ? new long[] {clusterMb, total.getVirtualCores()}
        : new long[] {Math.min(max[0], clusterMb), Math.min(max[1], total.getVirtualCores())};
    info.setMaxResourceMemory(cap[0]);
    info.setMaxResourceVCore(toInt(cap[1]));
    info.setSteadyFairShareMemory(steady[0]);
    info.setSteadyFairShareVCore(toInt(steady[1]));
    info.setReservedResourceMemory(0);
    info.setReservedResourceVCore(0);
    info.setPreemptionDisabled(false);
    info.setQueueStatistics(statistics());
    List<QueueInfo> kids = new ArrayList<>();
    if (includeChildQueues) {
      for (SlotwiseQueue child : children.values()) {
        kids.add(child.getQueueInfo(recursive, recursive));
      }
    }
    info.setChildQueues(kids);
    info.setApplications(Collections.emptyList());
    return info;
  }

  private QueueStatistics statistics() {
    QueueStatistics s = RECORDS.newRecordInstance(QueueStatistics.class);
    s.setNumAppsSubmitted(metrics.getAppsSubmitted());
    s.setNumAppsRunning(metrics.getAppsRunning());
    s.setNumAppsPending(metrics.getAppsPending());
    s.setNumAppsCompleted(metrics.getAppsCompleted());
    s.setNumAppsKilled(metrics.getAppsKilled());
    s.setNumAppsFailed(metrics.getAppsFailed());
    s.setNumActiveUsers(metrics.getActiveUsers());
    s.setAvailableMemoryMB(metrics.getAvailableMB());
    s.setAllocatedMemoryMB(metrics.getAllocatedMB());
    s.setPendingMemoryMB(metrics.getPendingMB());
    s.setReservedMemoryMB(metrics.getReservedMB());
    s.setAvailableVCores(metrics.getAvailableVirtualCores());
    s.setAllocatedVCores(metrics.getAllocatedVirtualCores());
    s.setPendingVCores(metrics.getPendingVirtualCores());
    s.setReservedVCores(metrics.getReservedVirtualCores());
    s.setAllocatedContainers(metrics.getAllocatedContainers());
    s.setPendingContainers(metrics.getPendingContainers());
    s.setReservedContainers(metrics.getReservedContainers());
    return s;
  }

  /** Pools' access rules live in Python (place/move); YARN sees open queues. */
  @Override
  public boolean hasAccess(QueueACL acl, UserGroupInformation user) {
    return true;
  }

  @Override
  public List<QueueUserACLInfo> getQueueUserAclInfo(UserGroupInformation user) {
    List<QueueUserACLInfo> out = new ArrayList<>();
    QueueUserACLInfo mine = RECORDS.newRecordInstance(QueueUserACLInfo.class);
    mine.setQueueName(name);
    mine.setUserAcls(Arrays.asList(QueueACL.values()));
    out.add(mine);
    for (SlotwiseQueue child : children.values()) {
      out.addAll(child.getQueueUserAclInfo(user));
    }
    return out;
  }

  @Override
  public AbstractUsersManager getAbstractUsersManager() {
    return users;
  }

  @Override
  public void recoverContainer(Resource clusterResource,
      SchedulerApplicationAttempt schedulerAttempt, RMContainer rmContainer) {
    // Usage is in the queue metrics, which the attempt's recovery updates.
  }

  @Override
  public Set<String> getAccessibleNodeLabels() {
    return null;
  }

  @Override
  public String getDefaultNodeLabelExpression() {
    return null;
  }

  @Override
  public void incPendingResource(String nodeLabel, Resource resourceToInc) {
  }

  @Override
  public void decPendingResource(String nodeLabel, Resource resourceToDec) {
  }

  @Override
  public Priority getDefaultApplicationPriority() {
    return Priority.newInstance(0);
  }

  @Override
  public void incReservedResource(String partition, Resource reservedRes) {
  }

  @Override
  public void decReservedResource(String partition, Resource reservedRes) {
  }

  @Override
  public String toString() {
    return name;
  }
}
