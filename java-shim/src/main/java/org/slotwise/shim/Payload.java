package org.slotwise.shim;

import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The deltas the shim owes Python since its last successful call, and the
 * JSON encoding of a payload (docs/protocol.md, "Deltas").
 *
 * <p>Thread-safe: every method is synchronized on this object, which is a
 * leaf lock (nothing else is locked while it is held). While a full resync is
 * pending, deltas are not kept at all: the next payload carries the whole
 * state anyway, and nothing piles up while Python is away.
 */
final class Payload {

  /** A node: id (host:port), host, rack, memory MB, vcores. */
  static final class Node {
    final String id;
    final String host;
    final String rack;
    final long memory;
    final long vcores;

    Node(String id, String host, String rack, long memory, long vcores) {
      this.id = id;
      this.host = host;
      this.rack = rack;
      this.memory = memory;
      this.vcores = vcores;
    }
  }

  /** An app's outstanding ask at one request priority. */
  static final class Req {
    final int priority;
    final long memory;
    final long vcores;
    final int total;
    final Map<String, Integer> hosts;
    final Map<String, Integer> racks;
    final boolean relaxLocality;

    Req(int priority, long memory, long vcores, int total,
        Map<String, Integer> hosts, Map<String, Integer> racks, boolean relaxLocality) {
      this.priority = priority;
      this.memory = memory;
      this.vcores = vcores;
      this.total = total;
      this.hosts = hosts;
      this.racks = racks;
      this.relaxLocality = relaxLocality;
    }
  }

  /** An app as Python sees it. */
  static final class App {
    final String id;
    final String user;
    final String queue;
    final int priority;
    final long submitTime;
    final List<Req> requests;
    /** Its AM runs outside the cluster: none of its containers is an AM. */
    final boolean unmanaged;

    App(String id, String user, String queue, int priority, long submitTime, List<Req> requests) {
      this(id, user, queue, priority, submitTime, requests, false);
    }

    App(String id, String user, String queue, int priority, long submitTime, List<Req> requests,
        boolean unmanaged) {
      this.id = id;
      this.user = user;
      this.queue = queue;
      this.priority = priority;
      this.submitTime = submitTime;
      this.requests = requests;
      this.unmanaged = unmanaged;
    }
  }

  /** A container that was allocated (by Python's assignment or the fallback). */
  static final class Launched {
    final String id;
    final String app;
    final String node;
    final long memory;
    final long vcores;
    final boolean am;
    final int priority;
    final String engineId; // null when the FIFO fallback placed it

    Launched(String id, String app, String node, long memory, long vcores,
        boolean am, int priority, String engineId) {
      this.id = id;
      this.app = app;
      this.node = node;
      this.memory = memory;
      this.vcores = vcores;
      this.am = am;
      this.priority = priority;
      this.engineId = engineId;
    }
  }

  /** What one call carries, taken out of the pending deltas. */
  static final class Delta {
    final boolean full;
    final List<Node> nodes;
    final List<String> nodesRemoved;
    final List<String> appsChanged;
    final List<String> appsRemoved;
    final List<Launched> launched;
    final List<String> rejected;
    final List<String> finished;

    Delta(boolean full, List<Node> nodes, List<String> nodesRemoved,
        List<String> appsChanged, List<String> appsRemoved, List<Launched> launched,
        List<String> rejected, List<String> finished) {
      this.full = full;
      this.nodes = nodes;
      this.nodesRemoved = nodesRemoved;
      this.appsChanged = appsChanged;
      this.appsRemoved = appsRemoved;
      this.launched = launched;
      this.rejected = rejected;
      this.finished = finished;
    }
  }

  /** Past this many pending entries, a full resync is cheaper than the deltas. */
  static final int MAX_PENDING = 100_000;

  private boolean fullNeeded = true;
  private final Map<String, Node> nodes = new LinkedHashMap<>();
  private final Set<String> nodesRemoved = new LinkedHashSet<>();
  private final Set<String> appsChanged = new LinkedHashSet<>();
  private final Set<String> appsRemoved = new LinkedHashSet<>();
  private final List<Launched> launched = new ArrayList<>();
  private final List<String> rejected = new ArrayList<>();
  private final List<String> finished = new ArrayList<>();

  /** The next payload must carry the whole state; pending deltas are dropped. */
  synchronized void requireFull() {
    fullNeeded = true;
    clear();
  }

  synchronized boolean isFullNeeded() {
    return fullNeeded;
  }

  synchronized void nodeChanged(Node n) {
    if (!fullNeeded) {
      nodesRemoved.remove(n.id);
      nodes.put(n.id, n);
      capPending();
    }
  }

  synchronized void nodeRemoved(String id) {
    if (!fullNeeded) {
      nodes.remove(id);
      nodesRemoved.add(id);
    }
  }

  synchronized void appChanged(String id) {
    if (!fullNeeded && !appsRemoved.contains(id)) {
      appsChanged.add(id);
      capPending();
    }
  }

  synchronized void appRemoved(String id) {
    if (!fullNeeded) {
      appsChanged.remove(id);
      appsRemoved.add(id);
    }
  }

  synchronized void launched(Launched c) {
    if (!fullNeeded) {
      launched.add(c);
      capPending();
    }
  }

  synchronized void rejected(String engineId) {
    if (!fullNeeded && engineId != null) {
      rejected.add(engineId);
      capPending();
    }
  }

  synchronized void finished(String containerId) {
    if (!fullNeeded) {
      finished.add(containerId);
      capPending();
    }
  }

  /**
   * Takes everything pending. If a full resync was due, the result says so
   * (its lists are empty: the caller reads the whole state instead).
   */
  synchronized Delta drain() {
    Delta d = new Delta(fullNeeded, new ArrayList<>(nodes.values()),
        new ArrayList<>(nodesRemoved), new ArrayList<>(appsChanged),
        new ArrayList<>(appsRemoved), new ArrayList<>(launched),
        new ArrayList<>(rejected), new ArrayList<>(finished));
    fullNeeded = false;
    clear();
    return d;
  }

  private void capPending() {
    if (launched.size() + rejected.size() + finished.size() + appsChanged.size()
        + nodes.size() > MAX_PENDING) {
      requireFull();
    }
  }

  private void clear() {
    nodes.clear();
    nodesRemoved.clear();
    appsChanged.clear();
    appsRemoved.clear();
    launched.clear();
    rejected.clear();
    finished.clear();
  }

  /** The heartbeat / update payload; node is omitted when null. */
  static String encode(boolean full, Collection<Node> nodes, Collection<String> nodesRemoved,
      Collection<App> apps, Collection<String> appsRemoved, Collection<Launched> launched,
      Collection<String> rejected, Collection<String> finished, long fallbacks, String node) {
    Json.Out o = new Json.Out().beginObject();
    o.key("full").value(full);
    o.key("nodes").beginArray();
    for (Node n : nodes) {
      o.beginArray().value(n.id).value(n.host).value(n.rack).value(n.memory)
          .value(n.vcores).endArray();
    }
    o.endArray();
    o.key("nodes_removed").strings(nodesRemoved);
    o.key("apps").beginArray();
    for (App a : apps) {
      o.beginObject().key("id").value(a.id).key("user").value(a.user)
          .key("queue").value(a.queue).key("prio").value(a.priority)
          .key("submit").value(a.submitTime);
      if (a.unmanaged) {
        o.key("unmanaged").value(true);
      }
      o.key("req").beginArray();
      for (Req r : a.requests) {
        o.beginArray().value(r.priority).value(r.memory).value(r.vcores).value(r.total)
            .counts(r.hosts).counts(r.racks).value(r.relaxLocality).endArray();
      }
      o.endArray().endObject();
    }
    o.endArray();
    o.key("apps_removed").strings(appsRemoved);
    o.key("launched").beginArray();
    for (Launched c : launched) {
      o.beginArray().value(c.id).value(c.app).value(c.node).value(c.memory).value(c.vcores)
          .value(c.am).value(c.priority).value(c.engineId).endArray();
    }
    o.endArray();
    o.key("rejected").strings(rejected);
    o.key("finished").strings(finished);
    o.key("fallbacks").value(fallbacks);
    if (node != null) {
      o.key("node").value(node);
    }
    return o.endObject().toString();
  }

  /** The argument of place: {"id", "user", "queue", "groups", "prio"}. */
  static String encodePlace(String id, String user, String queue, List<String> groups,
      int priority) {
    return new Json.Out().beginObject().key("id").value(id).key("user").value(user)
        .key("queue").value(queue).key("groups").strings(groups)
        .key("prio").value(priority).endObject().toString();
  }
}
