package org.slotwise.shim;

import java.util.*;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.function.Supplier;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.yarn.api.records.*;
import org.apache.hadoop.yarn.factories.RecordFactory;
import org.apache.hadoop.yarn.factory.providers.RecordFactoryProvider;
import org.apache.hadoop.yarn.server.resourcemanager.rmcontainer.RMContainer;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.*;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.Queue;

/**
 * One of Python's queues, as a YARN queue, by full name (root.x.y). Queues are
 * made on demand; the numbers come from the queue table of Python's last
 * update answer, the usage from YARN's own queue metrics.
 *
 * <p>Nothing here takes the scheduler's lock: getQueueInfo is called under
 * app attempt locks (resource usage reports), so it reads only volatile data
 * and thread-safe metrics.
 */
final class SlotwiseQueue implements Queue {
  static final String ROOT = "root";
  private static final RecordFactory RECORDS = RecordFactoryProvider.getRecordFactory(null);

  private final String name;
  private final QueueMetrics metrics;
  private final ActiveUsersManager users;
  private final Supplier<Resource> cluster;
  private final Map<String, SlotwiseQueue> children = new ConcurrentSkipListMap<>();
  private volatile Messages.QueueRow row; // null until Python describes the queue

  SlotwiseQueue(String name, SlotwiseQueue parent, Configuration conf,
      Supplier<Resource> cluster) {
    this.name = name;
    this.cluster = cluster;
    this.metrics = QueueMetrics.forQueue(name, parent, true, conf); // per-user metrics too, as YARN's queues
    this.users = new ActiveUsersManager(metrics);
    if (parent != null) {
      parent.children.put(name, this);
    }
  }

  /**
   * The full name for what a client or Python wrote: "prod" and "root.prod"
   * are the same queue; null if the name is not usable.
   */
  static String qualify(String queue) {
    if (queue == null || queue.trim().isEmpty()) {
      return null;
    }
    String q = rooted(queue.trim());
    if (q.length() > Messages.NAME_MAX && q.codePointCount(0, q.length()) > Messages.NAME_MAX) {
      return null; // no queue can have it: the protocol's bound, and validate's
    }
    for (String part : q.split("\\.", -1)) {
      if (part.isEmpty() || !part.trim().equals(part)) {
        return null;
      }
    }
    return q;
  }

  /** Why a queue name is too long once qualified (the protocol's Name bound); null if it is not. */
  static String tooLong(String queue) {
    if (queue == null || queue.length() + ROOT.length() + 1 <= Messages.NAME_MAX) {
      return null;
    }
    String q = rooted(queue.trim());
    int n = q.codePointCount(0, q.length());
    return n <= Messages.NAME_MAX ? null : String.format("the queue name has %,d characters "
        + "(with \"root.\"); at most %,d are allowed", n, Messages.NAME_MAX);
  }

  private static String rooted(String q) {
    return q.equals(ROOT) || q.startsWith(ROOT + ".") ? q : ROOT + "." + q;
  }

  void describe(Messages.QueueRow r) {
    this.row = r;
  }

  /** A child Python no longer has (an empty dynamic queue it removed). */
  void forgetChild(String childName) {
    children.remove(childName);
  }

  Collection<SlotwiseQueue> children() {
    return children.values();
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
    Messages.QueueRow r = row;
    Resource total = cluster.get();
    long clusterMb = total.getMemorySize();
    Messages.Amount none = new Messages.Amount(0, 0, 0, 0);
    Messages.Amount min = r == null ? none : r.min();
    Messages.Amount steady = r == null ? none : r.steady();
    Messages.Amount max = r == null ? null : r.max();
    QueueInfo info = RECORDS.newRecordInstance(QueueInfo.class);
    info.setQueueName(name);
    info.setQueuePath(name);
    info.setSchedulerType("SlotwiseScheduler");
    info.setQueueState(QueueState.RUNNING);
    info.setWeight(r == null ? 1f : (float) r.weight());
    info.setCapacity(ratio(r == null ? 0 : Math.round(r.fair().memoryMb()), clusterMb));
    info.setCurrentCapacity(ratio(metrics.getAllocatedMB(), clusterMb));
    info.setMaximumCapacity(max == null ? 1f : ratio(Math.round(max.memoryMb()), clusterMb));
    info.setMinResourceMemory(Math.round(min.memoryMb()));
    info.setMinResourceVCore(toInt(Math.round(min.vcores())));
    info.setMaxResourceMemory(max == null ? clusterMb : Math.min(Math.round(max.memoryMb()), clusterMb));
    info.setMaxResourceVCore(toInt(max == null ? total.getVirtualCores()
        : Math.min(Math.round(max.vcores()), total.getVirtualCores())));
    info.setSteadyFairShareMemory(Math.round(steady.memoryMb()));
    info.setSteadyFairShareVCore(toInt(Math.round(steady.vcores())));
    info.setMaxParallelApps(r == null || r.maxRunningApps() == null ? -1 : r.maxRunningApps());
    info.setReservedResourceMemory(0);
    info.setReservedResourceVCore(0);
    info.setPreemptionDisabled(false);
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

  /** Queues' access rules live in Python (place/move); YARN sees open queues. */
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
