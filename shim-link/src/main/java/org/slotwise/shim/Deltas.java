package org.slotwise.shim;

import java.util.*;

/**
 * What the shim owes Python since its last call that reached it: the
 * "Payload" of docs/protocol.md, before the changed apps are read.
 *
 * <p>Thread-safe, a leaf lock (nothing else is locked while it is held).
 * While a full resync is pending no deltas are kept: the next payload
 * carries the whole state anyway, and nothing piles up while Python is away.
 */
public final class Deltas {
  /** Past this many pending entries, a full resync is cheaper than the deltas. */
  static final int MAX_PENDING = 100_000;

  /** What one call carries, taken out of the pending deltas. */
  public record Taken(boolean full, List<Messages.Node> nodes, List<String> nodesRemoved,
      List<String> appsChanged, List<String> appsRemoved, List<Messages.Container> launched,
      List<Messages.Refusal> rejected, List<String> finished, List<Messages.AppEnd> appsFinished) {
    /**
     * The Payload of one call, built the same way by both masters: what was
     * taken, with the master's own records: {@code nodes}, {@code apps} and
     * {@code launched} are the whole state when {@link #full} (nothing was
     * taken then), else the nodes and containers taken and the apps whose
     * ids were; {@code beats} null for an update, {@code check} null unless
     * this call carries the truth. The schema's records read a null list as
     * empty.
     */
    public Messages.Payload payload(List<Messages.Node> nodes, List<Messages.App> apps,
        List<Messages.Container> launched, List<Messages.Beat> beats,
        List<Messages.FallbackEpisode> episodes, List<Messages.AppCheck> check) {
      return new Messages.Payload(full, System.currentTimeMillis(), nodes, nodesRemoved, apps, appsRemoved,
          launched, rejected, finished, beats, episodes, check, appsFinished);
    }
  }

  private boolean fullNeeded = true;
  private final Map<String, Messages.Node> nodes = new LinkedHashMap<>();
  private final Set<String> nodesRemoved = new LinkedHashSet<>();
  private final Set<String> appsChanged = new LinkedHashSet<>();
  private final Set<String> appsRemoved = new LinkedHashSet<>();
  /** How the removed apps ended, for those whose master said (a subset of appsRemoved). */
  private final Map<String, Messages.FinalState> appsFinished = new LinkedHashMap<>();
  private final List<Messages.Container> launched = new ArrayList<>();
  private final List<Messages.Refusal> rejected = new ArrayList<>();
  private final List<String> finished = new ArrayList<>();

  /** The next payload must carry the whole state; pending deltas are dropped. */
  public synchronized void requireFull() {
    fullNeeded = true;
    clear();
  }

  public synchronized void nodeChanged(Messages.Node n) {
    if (!fullNeeded) {
      nodesRemoved.remove(n.id()); // a node back before its removal was sent
      nodes.put(n.id(), n);
      capPending();
    }
  }

  public synchronized void nodeRemoved(String id) {
    if (!fullNeeded) {
      nodes.remove(id);
      nodesRemoved.add(id);
    }
  }

  /** The app's whole record goes in the next payload, read when it is built. */
  public synchronized void appChanged(String id) {
    if (!fullNeeded && !appsRemoved.contains(id)) {
      appsChanged.add(id);
      capPending();
    }
  }

  /** The app left; {@code end} is how it ended as the master says (null: not known). */
  public synchronized void appRemoved(String id, Messages.FinalState end) {
    if (!fullNeeded) {
      appsChanged.remove(id);
      appsRemoved.add(id);
      if (end != null) {
        appsFinished.put(id, end);
      } else {
        appsFinished.remove(id);
      }
    }
  }

  public synchronized void launched(Messages.Container c) {
    if (!fullNeeded) {
      launched.add(c);
      capPending();
    }
  }

  public synchronized void rejected(String engineId, Messages.Reason reason) {
    if (!fullNeeded && engineId != null) {
      rejected.add(new Messages.Refusal(engineId, reason));
      capPending();
    }
  }

  public synchronized void finished(String containerId) {
    if (!fullNeeded) {
      finished.add(containerId);
      capPending();
    }
  }

  /** Takes everything pending; if a full resync was due, says so (the lists are then empty). */
  public synchronized Taken take() {
    Taken t = new Taken(fullNeeded, new ArrayList<>(nodes.values()), new ArrayList<>(nodesRemoved),
        new ArrayList<>(appsChanged), new ArrayList<>(appsRemoved), new ArrayList<>(launched),
        new ArrayList<>(rejected), new ArrayList<>(finished), ends());
    fullNeeded = false;
    clear();
    return t;
  }

  private List<Messages.AppEnd> ends() {
    List<Messages.AppEnd> out = new ArrayList<>(appsFinished.size());
    appsFinished.forEach((id, end) -> out.add(new Messages.AppEnd(id, end)));
    return out;
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
    appsFinished.clear();
    launched.clear();
    rejected.clear();
    finished.clear();
  }
}
