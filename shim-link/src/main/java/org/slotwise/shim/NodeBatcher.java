package org.slotwise.shim;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.function.Consumer;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The asynchronous scheduling thread: node heartbeats only say "this node has
 * room" ({@link #offer}) and return; one thread takes every node that asked
 * since its last call, up to {@code maxPerCall}, and schedules them together
 * in one call to Python (the YARN-5139 pattern: Python proposes assignments
 * for many nodes, Java checks and commits them). While a call is under way
 * more nodes gather, so the batch grows with the load by itself and a quiet
 * cluster still sees one node per call at once.
 *
 * <p>Nodes are named by any key with equals and hashCode ({@code K}: the
 * RM's NodeId). A node offered twice before it is taken goes once; its room is read when
 * the payload is built. The consumer must not throw; if it does, the error is
 * logged and the thread goes on.
 */
public final class NodeBatcher<K> {
  private static final Logger LOG = LoggerFactory.getLogger(NodeBatcher.class);

  private final int maxPerCall;
  private final Consumer<List<K>> schedule;
  private final LinkedHashSet<K> pending = new LinkedHashSet<>(); // guarded by this
  private final Thread thread;
  private volatile boolean running = true;
  private long batches; // guarded by this, as is the next
  private long nodes;

  public NodeBatcher(String name, int maxPerCall, Consumer<List<K>> schedule) {
    this.maxPerCall = Math.max(1, maxPerCall);
    this.schedule = schedule;
    this.thread = new Thread(this::loop, name);
    this.thread.setDaemon(true);
  }

  public void start() {
    thread.start();
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

  /** Batches sent and nodes in them since the start: {batches, nodes}. */
  public synchronized long[] counts() {
    return new long[] {batches, nodes};
  }

  private List<K> take() throws InterruptedException {
    synchronized (this) {
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

  private void loop() {
    while (running) {
      List<K> batch;
      try {
        batch = take();
      } catch (InterruptedException e) {
        return;
      }
      try {
        schedule.accept(batch);
      } catch (Throwable t) {
        LOG.error("Slotwise: error while scheduling {} node(s)", batch.size(), t);
      }
    }
  }

  public void stop() {
    running = false;
    thread.interrupt();
    try {
      thread.join(5000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
