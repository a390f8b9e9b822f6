package org.slotwise.shim;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;

/**
 * The nodes waiting for the asynchronous scheduling thread: node heartbeats
 * only say "this node has room" ({@link #offer}) and return; the scheduler's
 * scheduling thread {@link #take takes} every node that asked since its last
 * call, up to {@code maxPerCall}, and sends them to Python in one call (the
 * YARN-5139 pattern: Python proposes assignments for many nodes, Java checks
 * and commits them). While a call is under way more nodes gather, so the
 * batch grows with the load by itself and a quiet cluster still sees one
 * node per call at once.
 *
 * <p>Nodes are named by any key with equals and hashCode ({@code K}: the
 * RM's NodeId). A node offered twice before it is taken goes once; its room
 * is read when the payload is built. A leaf monitor; it calls nothing.
 */
public final class NodeBatcher<K> {
  private final int maxPerCall;
  private final LinkedHashSet<K> pending = new LinkedHashSet<>(); // guarded by this
  private long batches; // guarded by this, as is the next
  private long nodes;

  public NodeBatcher(int maxPerCall) {
    this.maxPerCall = Math.max(1, maxPerCall);
  }

  /** The node heartbeated with room: schedule it soon. Never blocks on Python. */
  public synchronized void offer(K nodeId) {
    if (pending.add(nodeId)) {
      notifyAll();
    }
  }

  /** Forgets a node that left the cluster. */
  public synchronized void remove(K nodeId) {
    pending.remove(nodeId);
  }

  /** Batches taken and nodes in them since the start: {batches, nodes}. */
  public synchronized long[] counts() {
    return new long[] {batches, nodes};
  }

  /** The next batch, oldest offers first, at most maxPerCall; waits while there is none. */
  public synchronized List<K> take() throws InterruptedException {
    while (pending.isEmpty()) {
      wait();
    }
    List<K> batch = new ArrayList<>(Math.min(pending.size(), maxPerCall));
    for (Iterator<K> it = pending.iterator(); it.hasNext() && batch.size() < maxPerCall; ) {
      batch.add(it.next());
      it.remove();
    }
    batches++;
    nodes += batch.size();
    return batch;
  }
}
