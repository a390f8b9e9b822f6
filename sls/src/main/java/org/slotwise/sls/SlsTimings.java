package org.slotwise.sls;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.function.Consumer;

import org.apache.hadoop.yarn.server.resourcemanager.scheduler.event.SchedulerEvent;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.event.SchedulerEventType;

/**
 * What the harness measures inside the simulated ResourceManager, the same
 * way for every scheduler: the time the scheduler takes to handle each
 * NODE_UPDATE (on SLS's dispatcher, Python's round trip included for
 * Slotwise), and the containers handed to AMs by allocate(). Written as JSON
 * to the file named by {@code -Dslotwise.sls.summary} when the run ends.
 */
public final class SlsTimings {
  private static final int CAPACITY = 1 << 20;
  private static final long[] NODE_UPDATE_NS = new long[CAPACITY];
  private static final long[] CALL_NS = new long[CAPACITY];
  private static final long[] BUILD_NS = new long[CAPACITY];
  private static long calls;
  private static long[] batches; // {calls, nodes} from the scheduling thread, if async
  private static long nodeUpdates;
  private static long allocations;
  private static long firstAllocationNs;
  private static long lastAllocationNs;

  private SlsTimings() {}

  /**
   * Runs a scheduler's handling of {@code event}, timing it if it is a
   * NODE_UPDATE: both wrappers measure through this, so the figures compare.
   */
  public static void handle(SchedulerEvent event, Consumer<SchedulerEvent> handler) {
    if (event.getType() != SchedulerEventType.NODE_UPDATE) {
      handler.accept(event);
      return;
    }
    long t0 = System.nanoTime();
    handler.accept(event);
    nodeUpdate(System.nanoTime() - t0);
  }

  private static synchronized void nodeUpdate(long ns) {
    NODE_UPDATE_NS[(int) (nodeUpdates % CAPACITY)] = ns;
    nodeUpdates++;
  }

  /** One heartbeat call to Python: building its payload, and the round trip. */
  public static synchronized void call(long buildNs, long totalNs) {
    BUILD_NS[(int) (calls % CAPACITY)] = buildNs;
    CALL_NS[(int) (calls % CAPACITY)] = totalNs;
    calls++;
  }

  public static synchronized void batches(long[] counts) {
    batches = counts;
  }

  public static synchronized void allocated(int containers) {
    if (containers <= 0) {
      return;
    }
    long now = System.nanoTime();
    if (allocations == 0) {
      firstAllocationNs = now;
    }
    lastAllocationNs = now;
    allocations += containers;
  }

  public static synchronized String json() {
    long[] xs = sorted(NODE_UPDATE_NS, nodeUpdates);
    int n = xs.length;
    double span = (lastAllocationNs - firstAllocationNs) / 1e9;
    long[] cs = sorted(CALL_NS, calls);
    long[] bs = sorted(BUILD_NS, calls);
    return String.format(java.util.Locale.ROOT,
        "{\"node_updates\":%d,\"node_update_ms\":{\"median\":%.4f,\"p99\":%.4f,\"max\":%.4f,\"mean\":%.4f},"
            + "\"allocations\":%d,\"allocation_span_s\":%.3f,"
            + "\"calls\":%d,\"call_ms\":{\"median\":%.4f,\"p99\":%.4f},\"build_ms\":{\"median\":%.4f,\"p99\":%.4f},"
            + "\"batches\":%s}",
        nodeUpdates, pct(xs, 50) / 1e6, pct(xs, 99) / 1e6, n == 0 ? 0.0 : xs[n - 1] / 1e6,
        n == 0 ? 0.0 : Arrays.stream(xs).average().orElse(0) / 1e6, allocations, span,
        calls, pct(cs, 50) / 1e6, pct(cs, 99) / 1e6, pct(bs, 50) / 1e6, pct(bs, 99) / 1e6,
        batches == null ? "null" : "[" + batches[0] + "," + batches[1] + "]");
  }

  /** The samples a ring buffer holds after {@code count} writes, sorted. */
  private static long[] sorted(long[] ring, long count) {
    long[] xs = Arrays.copyOf(ring, (int) Math.min(count, CAPACITY));
    Arrays.sort(xs);
    return xs;
  }

  private static double pct(long[] sorted, double p) {
    if (sorted.length == 0) {
      return 0.0;
    }
    int k = (int) Math.min(sorted.length - 1, Math.round((sorted.length - 1) * p / 100.0));
    return sorted[k];
  }

  public static void write() {
    String path = System.getProperty("slotwise.sls.summary");
    if (path == null) {
      return;
    }
    try {
      Files.write(Path.of(path), json().getBytes(StandardCharsets.UTF_8));
    } catch (IOException e) {
      System.err.println("slotwise-sls: cannot write " + path + ": " + e);
    }
  }
}
