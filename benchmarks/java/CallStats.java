package org.slotwise.shim;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Benchmark-only: the shim's {@link PolicyLink.CallObserver} when the RM runs
 * with {@code slotwise.call-observer.class=org.slotwise.shim.CallStats} and
 * this class on its classpath (benchmarks/bench_roundtrip.py compiles it and
 * reads the figures through the gateway with {@link #json}). Not in the shim
 * jar.
 *
 * <p>Timings of the successful calls of one kind (heartbeat, update...) to
 * Python: the last {@code capacity} samples in a ring, plus a count since the
 * last reset. Recording is a few array stores under this
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
public final class CallStats implements PolicyLink.CallObserver {
  static final int DEFAULT_CAPACITY = 1 << 16;
  private static final Map<String, CallStats> BY_METHOD = new ConcurrentHashMap<>();

  /** The observer the shim instantiates: records into the per-method rings below. */
  public CallStats() {
    this(1);
  }

  @Override
  public void observe(String method, long waitNs, long buildNs, long invokeNs, long totalNs,
      int argChars, int answerChars) {
    of(method).record(waitNs, buildNs, invokeNs, totalNs, argChars, answerChars);
  }

  /** The ring of one method: 65,536 samples for heartbeats, 4,096 for the rarer calls. */
  static CallStats of(String method) {
    return BY_METHOD.computeIfAbsent(method,
        k -> new CallStats("heartbeat".equals(k) ? DEFAULT_CAPACITY : 4096));
  }

  /** For the benchmark, through the gateway: one method's figures; reset starts a new sample. */
  public static String json(String method, boolean reset) {
    return of(method).toJson(reset, false);
  }

  /**
   * As {@link #json(String, boolean)}, with {@code total_us} too when asked: every
   * sample's total in microseconds, sorted, so that windows of one kind can be pooled.
   */
  public static String json(String method, boolean reset, boolean totals) {
    return of(method).toJson(reset, totals);
  }

  private final int capacity;
  private final long[] wait;
  private final long[] build;
  private final long[] invoke;
  private final long[] total;
  private final int[] payloadChars;
  private final int[] answerChars;
  private long count; // since the last reset
  private int next; // ring position of the next sample

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
    return toJson(reset, false);
  }

  String toJson(boolean reset, boolean totals) {
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
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("count", n);
    out.put("samples", held);
    out.put("capacity", capacity);
    out.put("total_ns", summary(t)); // sorts t
    if (totals) {
      long[] us = new long[t.length];
      for (int i = 0; i < t.length; i++) {
        us[i] = t[i] / 1000;
      }
      out.put("total_us", us);
    }
    out.put("invoke_ns", summary(v));
    out.put("build_ns", summary(b));
    out.put("wait_ns", summary(w));
    out.put("payload_chars", sizes(p));
    out.put("answer_chars", sizes(a));
    return PolicyLink.write(out);
  }

  private static Map<String, Long> summary(long[] samples) {
    Arrays.sort(samples);
    long sum = 0;
    for (long s : samples) {
      sum += s;
    }
    Map<String, Long> m = new LinkedHashMap<>();
    m.put("p50", percentile(samples, 0.50));
    m.put("p90", percentile(samples, 0.90));
    m.put("p99", percentile(samples, 0.99));
    m.put("p999", percentile(samples, 0.999));
    m.put("max", samples.length == 0 ? 0 : samples[samples.length - 1]);
    m.put("mean", samples.length == 0 ? 0 : sum / samples.length);
    return m;
  }

  private static Map<String, Long> sizes(int[] samples) {
    long sum = 0;
    long max = 0;
    for (int s : samples) {
      sum += s;
      max = Math.max(max, s);
    }
    return Map.of("mean", samples.length == 0 ? 0 : sum / samples.length, "max", max);
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
