package org.slotwise.shim;

import java.util.*;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.function.Supplier;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.yarn.api.records.*;
import org.apache.hadoop.yarn.server.resourcemanager.rmcontainer.RMContainer;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.*;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.Queue;
import org.apache.hadoop.yarn.util.Records;

/**
 * One of Python's queues as a YARN queue, by full name (root.x.y), made on
 * demand: its numbers from Python's last queue table, its usage from YARN's
 * queue metrics. Nothing here takes the scheduler's lock (getQueueInfo is
 * called under attempt locks): it reads only volatile data and the metrics.
 */
final class SlotwiseQueue implements Queue {
  static final String ROOT = "root";

  private final String name;
  private final QueueMetrics metrics;
  private final ActiveUsersManager users;
  private final Supplier<Resource> cluster;
  final Map<String, SlotwiseQueue> children = new ConcurrentSkipListMap<>();
  volatile Messages.QueueRow row; // Python's; until then, weight 1 and nothing else

  SlotwiseQueue(String name, SlotwiseQueue parent, Configuration conf, Supplier<Resource> cluster) {
    Messages.Amount none = new Messages.Amount(0, 0, 0, 0);
    this.row = new Messages.QueueRow(name, null, 1, none, null, none, none, none, none, 0, 0, null, null, false,
        null, null, false);
    this.name = name;
    this.cluster = cluster;
    this.metrics = QueueMetrics.forQueue(name, parent, true, conf); // per-user metrics too, as YARN's queues
    this.users = new ActiveUsersManager(metrics);
    if (parent != null) {
      parent.children.put(name, this);
    }
  }

  /** The full name for what a client or Python wrote ("prod" and "root.prod" are one queue); null if unusable. */
  static String qualify(String queue) {
    if (queue == null || queue.isBlank() || tooLong(queue) != null) {
      return null;
    }
    String q = rooted(queue.trim());
    for (String part : q.split("\\.", -1)) {
      if (part.isEmpty() || !part.trim().equals(part)) {
        return null;
      }
    }
    return q;
  }

  /** Why a queue name is too long once qualified (the protocol's Name bound, and validate's); null if not. */
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

  @Override
  public String getQueueName() {
    return name;
  }

  @Override
  public QueueMetrics getMetrics() {
    return metrics;
  }

  private static float ratio(long part, long whole) {
    return whole <= 0 ? 0f : Math.min(1f, Math.max(0f, (float) part / whole));
  }

  private static int toInt(long v) {
    return (int) Math.max(Integer.MIN_VALUE, Math.min(Integer.MAX_VALUE, v));
  }

  @Override
  public QueueInfo getQueueInfo(boolean includeChildQueues, boolean recursive) {
    Messages.QueueRow r = row;
    Resource total = cluster.get();
    long clusterMb = total.getMemorySize();
    Messages.Amount max = r.max();
    QueueInfo info = Records.newRecord(QueueInfo.class);
    info.setQueueName(name);
    info.setQueuePath(name);
    info.setSchedulerType("SlotwiseScheduler");
    info.setQueueState(QueueState.RUNNING);
    info.setWeight((float) r.weight());
    info.setCapacity(ratio(Math.round(r.fair().memoryMb()), clusterMb));
    info.setCurrentCapacity(ratio(metrics.getAllocatedMB(), clusterMb));
    info.setMaximumCapacity(max == null ? 1f : ratio(Math.round(max.memoryMb()), clusterMb));
    info.setMinResourceMemory(Math.round(r.min().memoryMb()));
    info.setMinResourceVCore(toInt(Math.round(r.min().vcores())));
    info.setMaxResourceMemory(max == null ? clusterMb : Math.min(Math.round(max.memoryMb()), clusterMb));
    info.setMaxResourceVCore(toInt(max == null ? total.getVirtualCores()
        : Math.min(Math.round(max.vcores()), total.getVirtualCores())));
    info.setSteadyFairShareMemory(Math.round(r.steady().memoryMb()));
    info.setSteadyFairShareVCore(toInt(Math.round(r.steady().vcores())));
    info.setMaxParallelApps(r.maxRunningApps() == null ? -1 : r.maxRunningApps());
    info.setPreemptionDisabled(false);
    List<QueueInfo> kids = new ArrayList<>();
    if (includeChildQueues) {
      for (SlotwiseQueue child : children.values()) {
        kids.add(child.getQueueInfo(recursive, recursive));
      }
    }
    info.setChildQueues(kids);
    return info;
  }

  /** Who may use a queue is Python's business (place, move): YARN sees open queues. */
  @Override
  public boolean hasAccess(QueueACL acl, UserGroupInformation user) {
    return true;
  }

  @Override
  public List<QueueUserACLInfo> getQueueUserAclInfo(UserGroupInformation user) {
    List<QueueUserACLInfo> out = new ArrayList<>();
    out.add(QueueUserACLInfo.newInstance(name, Arrays.asList(QueueACL.values())));
    for (SlotwiseQueue child : children.values()) {
      out.addAll(child.getQueueUserAclInfo(user));
    }
    return out;
  }

  @Override
  public AbstractUsersManager getAbstractUsersManager() {
    return users;
  }

  /** Usage is in the queue metrics, which the attempt's recovery updates. */
  @Override
  public void recoverContainer(Resource cluster, SchedulerApplicationAttempt attempt, RMContainer container) {
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
