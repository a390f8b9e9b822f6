package org.slotwise.shim;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;

/**
 * Python's answers (docs/protocol.md, "Answers"), parsed and type-checked.
 * Any deviation from the fixed shapes throws IllegalArgumentException, which
 * the shim treats like a failed call.
 */
final class Answer {
  private Answer() {
  }

  static final String NODE_LOCAL = "node_local";
  static final String RACK_LOCAL = "rack_local";
  static final String OFF_SWITCH = "off_switch";

  /** One assignment: app, node, request priority, locality, engine id. */
  static final class Assign {
    final String app;
    final String node;
    final int priority;
    final String locality;
    final String engineId;

    Assign(String app, String node, int priority, String locality, String engineId) {
      this.app = app;
      this.node = node;
      this.priority = priority;
      this.locality = locality;
      this.engineId = engineId;
    }
  }

  /** A container to preempt: kill now, or only warn the AM. */
  static final class Preempt {
    final String container;
    final boolean kill;

    Preempt(String container, boolean kill) {
      this.container = container;
      this.kill = kill;
    }
  }

  /** One row of the pool table; resources are {memory MB, vcores}. */
  static final class QueueRow {
    final String name;
    final String parent;
    final double weight;
    final long[] min;
    final long[] max; // null: unlimited
    final long[] fair;
    final long[] steady;
    final long[] usage;
    final long[] demand;
    final int runningApps;
    final int apps;

    QueueRow(String name, String parent, double weight, long[] min, long[] max,
        long[] fair, long[] steady, long[] usage, long[] demand,
        int runningApps, int apps) {
      this.name = name;
      this.parent = parent;
      this.weight = weight;
      this.min = min;
      this.max = max;
      this.fair = fair;
      this.steady = steady;
      this.usage = usage;
      this.demand = demand;
      this.runningApps = runningApps;
      this.apps = apps;
    }
  }

  static final class Heartbeat {
    final List<Assign> assign;
    final List<Preempt> preempt;

    Heartbeat(List<Assign> assign, List<Preempt> preempt) {
      this.assign = assign;
      this.preempt = preempt;
    }
  }

  static final class Update {
    final List<Preempt> preempt;
    final List<QueueRow> queues;

    Update(List<Preempt> preempt, List<QueueRow> queues) {
      this.preempt = preempt;
      this.queues = queues;
    }
  }

  /** place: exactly one of queue and reject is set. */
  static final class Place {
    final String queue;
    final String reject;

    Place(String queue, String reject) {
      this.queue = queue;
      this.reject = reject;
    }
  }

  /** move: exactly one of queue and error is set. */
  static final class Move {
    final String queue;
    final String error;

    Move(String queue, String error) {
      this.queue = queue;
      this.error = error;
    }
  }

  static Heartbeat heartbeat(String json) {
    Map<String, Object> m = object(Json.parse(json), "answer");
    List<Assign> assign = new ArrayList<>();
    for (Object o : list(m.get("assign"), "assign")) {
      List<Object> a = list(o, "assignment");
      if (a.size() != 5) {
        throw new IllegalArgumentException("an assignment has 5 fields, got " + a.size());
      }
      String locality = string(a.get(3), "locality");
      if (!NODE_LOCAL.equals(locality) && !RACK_LOCAL.equals(locality)
          && !OFF_SWITCH.equals(locality)) {
        throw new IllegalArgumentException("unknown locality " + locality);
      }
      assign.add(new Assign(string(a.get(0), "app"), string(a.get(1), "node"),
          (int) number(a.get(2), "priority"), locality,
          a.get(4) == null ? null : string(a.get(4), "engine id")));
    }
    return new Heartbeat(assign, preempts(m.get("preempt")));
  }

  static Update update(String json) {
    Map<String, Object> m = object(Json.parse(json), "answer");
    List<QueueRow> queues = new ArrayList<>();
    for (Object o : list(m.get("queues"), "queues")) {
      Map<String, Object> q = object(o, "queue");
      String name = string(q.get("name"), "name");
      Object parent = q.get("parent");
      queues.add(new QueueRow(name,
          parent == null ? null : string(parent, "parent"),
          q.get("weight") == null ? 1.0 : decimal(q.get("weight"), "weight"),
          resource(q.get("min")), q.get("max") == null ? null : resource(q.get("max")),
          resource(q.get("fair")), resource(q.get("steady")),
          resource(q.get("usage")), resource(q.get("demand")),
          q.get("running_apps") == null ? 0 : (int) number(q.get("running_apps"), "running_apps"),
          q.get("apps") == null ? 0 : (int) number(q.get("apps"), "apps")));
    }
    return new Update(preempts(m.get("preempt")), queues);
  }

  static Place place(String json) {
    Map<String, Object> m = object(Json.parse(json), "answer");
    if (m.get("reject") != null) {
      return new Place(null, string(m.get("reject"), "reject"));
    }
    return new Place(string(m.get("queue"), "queue"), null);
  }

  static Move move(String json) {
    Map<String, Object> m = object(Json.parse(json), "answer");
    if (m.get("error") != null) {
      return new Move(null, string(m.get("error"), "error"));
    }
    return new Move(string(m.get("queue"), "queue"), null);
  }

  private static List<Preempt> preempts(Object o) {
    List<Preempt> out = new ArrayList<>();
    for (Object p : list(o, "preempt")) {
      List<Object> e = list(p, "preemption");
      if (e.size() != 2 || !(e.get(1) instanceof Boolean)) {
        throw new IllegalArgumentException("a preemption is [container, kill]");
      }
      out.add(new Preempt(string(e.get(0), "container"), (Boolean) e.get(1)));
    }
    return out;
  }

  /** [mb, vcores]; absent means zero. */
  private static long[] resource(Object o) {
    if (o == null) {
      return new long[] {0, 0};
    }
    List<Object> l = list(o, "resource");
    if (l.size() != 2) {
      throw new IllegalArgumentException("a resource is [mb, vcores]");
    }
    return new long[] {Math.round(decimal(l.get(0), "mb")),
        Math.round(decimal(l.get(1), "vcores"))};
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> object(Object o, String what) {
    if (!(o instanceof Map)) {
      throw new IllegalArgumentException(what + " is not a JSON object");
    }
    return (Map<String, Object>) o;
  }

  /** A list; absent (null) reads as empty. */
  @SuppressWarnings("unchecked")
  private static List<Object> list(Object o, String what) {
    if (o == null) {
      return Collections.emptyList();
    }
    if (!(o instanceof List)) {
      throw new IllegalArgumentException(what + " is not a JSON array");
    }
    return (List<Object>) o;
  }

  private static String string(Object o, String what) {
    if (!(o instanceof String)) {
      throw new IllegalArgumentException(what + " is not a string");
    }
    return (String) o;
  }

  private static long number(Object o, String what) {
    if (o instanceof Long) {
      return (Long) o;
    }
    if (o instanceof Double && (Double) o == Math.rint((Double) o)) {
      return ((Double) o).longValue();
    }
    throw new IllegalArgumentException(what + " is not an integer");
  }

  private static double decimal(Object o, String what) {
    if (o instanceof Number) {
      return ((Number) o).doubleValue();
    }
    throw new IllegalArgumentException(what + " is not a number");
  }
}
