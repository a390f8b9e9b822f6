package org.slotwise.shim;

import java.util.Arrays;

/**
 * Timings of the successful calls of one kind (heartbeat, update...) to
 * Python, for benchmarks: the last {@code capacity} samples in a ring, plus a
 * count since the last reset. Recording is a few array stores under this
 * object's monitor; {@link #toJson} copies the ring under the monitor and
 * sorts the copy outside it, so reading the figures never holds up a call.
 *
 * <p>One sample: {@code wait} (from entering the call to taking the line:
 * chiefly waiting for a call under way, such as the periodic update, to end),
 * {@code build} (making the payload, scheduler read lock included),
 * {@code invoke} (the Py4J call on the call thread: transport both ways and
 * Python's work), {@code total} (from handing the built payload to the call
 * thread to the parsed answer: {@code invoke} plus the thread hand-offs and
 * Java's parsing), and the payload's and answer's sizes in characters (bytes,
 * for the ASCII JSON of the protocol).
 */
final class CallStats {
  static final int DEFAULT_CAPACITY = 1 << 16;

  private final int capacity;
  private final long[] wait;
  private final long[] build;
  private final long[] invoke;
  private final long[] total;
  private final int[] payloadChars;
  private final int[] answerChars;
  private long count; // since the last reset
  private int next; // ring position of the next sample

  CallStats() {
    this(DEFAULT_CAPACITY);
  }

  CallStats(int capacity) {
    if (capacity < 1) {
      throw new IllegalArgumentException("capacity must be positive");
    }
    this.capacity = capacity;
    wait = new long[capacity];
    build = new long[capacity];
    invoke = new long[capacity];
    total = new long[capacity];
    payloadChars = new int[capacity];
    answerChars = new int[capacity];
  }

  synchronized void record(long waitNs, long buildNs, long invokeNs, long totalNs, int payload,
      int answer) {
    int i = next;
    wait[i] = waitNs;
    build[i] = buildNs;
    invoke[i] = invokeNs;
    total[i] = totalNs;
    payloadChars[i] = payload;
    answerChars[i] = answer;
    next = i + 1 == capacity ? 0 : i + 1;
    count++;
  }

  synchronized long count() {
    return count;
  }

  synchronized void reset() {
    count = 0;
    next = 0;
  }

  /**
   * Compact JSON: {@code count} (calls since the last reset), {@code samples}
   * (how many of them the figures cover: the last {@code capacity}), and for
   * {@code total_ns}, {@code invoke_ns}, {@code build_ns}, {@code wait_ns}:
   * {@code p50, p90, p99, p999, max, mean} in nanoseconds (nearest-rank
   * percentiles; zeros when there are no samples); for {@code payload_chars}
   * and {@code answer_chars}: {@code mean, max}.
   */
  String toJson(boolean reset) {
    long n;
    int held;
    long[] w;
    long[] b;
    long[] v;
    long[] t;
    int[] p;
    int[] a;
    synchronized (this) {
      n = count;
      held = (int) Math.min(count, capacity);
      // The newest 'held' samples are the first 'held' slots until the ring
      // wraps, then all of them: either way indexes 0..held-1.
      w = Arrays.copyOf(wait, held);
      b = Arrays.copyOf(build, held);
      v = Arrays.copyOf(invoke, held);
      t = Arrays.copyOf(total, held);
      p = Arrays.copyOf(payloadChars, held);
      a = Arrays.copyOf(answerChars, held);
      if (reset) {
        reset();
      }
    }
    Json.Out out = new Json.Out().beginObject()
        .key("count").value(n)
        .key("samples").value(held)
        .key("capacity").value(capacity);
    summary(out.key("total_ns"), t);
    summary(out.key("invoke_ns"), v);
    summary(out.key("build_ns"), b);
    summary(out.key("wait_ns"), w);
    sizes(out.key("payload_chars"), p);
    sizes(out.key("answer_chars"), a);
    return out.endObject().toString();
  }

  private static void summary(Json.Out out, long[] samples) {
    Arrays.sort(samples);
    long sum = 0;
    for (long s : samples) {
      sum += s;
    }
    out.beginObject()
        .key("p50").value(percentile(samples, 0.50))
        .key("p90").value(percentile(samples, 0.90))
        .key("p99").value(percentile(samples, 0.99))
        .key("p999").value(percentile(samples, 0.999))
        .key("max").value(samples.length == 0 ? 0 : samples[samples.length - 1])
        .key("mean").value(samples.length == 0 ? 0 : sum / samples.length)
        .endObject();
  }

  private static void sizes(Json.Out out, int[] samples) {
    long sum = 0;
    int max = 0;
    for (int s : samples) {
      sum += s;
      max = Math.max(max, s);
    }
    out.beginObject()
        .key("mean").value(samples.length == 0 ? 0 : sum / samples.length)
        .key("max").value(max)
        .endObject();
  }

  /**
   * The nearest-rank percentile of sorted samples: the smallest sample with
   * at least a fraction {@code q} of all samples at or below it; 0 if empty.
   */
  static long percentile(long[] sorted, double q) {
    if (sorted.length == 0) {
      return 0;
    }
    // 1-based; the epsilon keeps 0.99 * 100 (99.00000000000001) at rank 99
    int rank = (int) Math.ceil(q * sorted.length - 1e-9);
    return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
  }
}
