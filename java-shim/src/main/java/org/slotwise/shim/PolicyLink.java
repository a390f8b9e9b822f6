package org.slotwise.shim;

import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BiFunction;
import java.util.function.Function;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Every call from the shim to Python goes through here: one call at a time,
 * on a dedicated thread, with a deadline. A call that fails for any reason
 * (no policy, an exception, an unparsable answer, the deadline) returns null
 * and opens a fallback episode, logged once: WARN when it starts, INFO with
 * the number of fallback heartbeats when Python answers again. If the failed
 * call had taken the pending deltas (its payload was built), the next call
 * must send the full state: {@code onResync} says so. A call that is not
 * made because another one is still under way takes nothing and needs no
 * resync.
 *
 * <p>Locking: {@link #call} holds {@code callLock} while it builds the payload
 * and waits for the answer, so payloads reach Python in the order they were
 * built. Callers must not hold the scheduler's lock when they call (the
 * payload builder may take the scheduler's read lock; lock order is always
 * callLock, then the scheduler lock).
 */
final class PolicyLink {
  private static final Logger LOG = LoggerFactory.getLogger(PolicyLink.class);

  /** The first call after a registration opens Py4J's callback connection. */
  static final long WARMUP_MS = 2000;

  private final long timeoutMs;
  private final Runnable onResync;
  private final ReentrantLock callLock = new ReentrantLock();

  private volatile PolicyServer policy;
  private volatile boolean cold = true; // no call has reached this policy yet
  private ExecutorService executor; // guarded by callLock
  private Future<?> inFlight; // guarded by callLock
  private long reportedFallbacks; // guarded by callLock

  /** Timings of successful calls, per method name (for benchmarks). */
  private final ConcurrentHashMap<String, CallStats> stats = new ConcurrentHashMap<>();

  private final AtomicLong totalFallbacks = new AtomicLong();
  private final AtomicLong unreportedFallbacks = new AtomicLong();
  private final AtomicLong failures = new AtomicLong();
  private boolean inEpisode; // guarded by this
  private long episodeFallbacks; // guarded by this
  private String lastReason = "";

  /**
   * @param timeoutMs deadline of one call, from entry to answer
   * @param onResync run after every failure: the next payload must be full
   */
  PolicyLink(long timeoutMs, Runnable onResync) {
    this.timeoutMs = Math.max(1, timeoutMs);
    this.onResync = onResync;
    this.executor = newExecutor();
  }

  private static ExecutorService newExecutor() {
    return Executors.newSingleThreadExecutor(r -> {
      Thread t = new Thread(r, "slotwise-policy-call");
      t.setDaemon(true);
      return t;
    });
  }

  /** Installs a (new) policy; it replaces the old one and gets a full resync. */
  void register(PolicyServer p) {
    callLock.lock();
    try {
      PolicyServer old = policy;
      policy = p;
      cold = true;
      if (inFlight != null && !inFlight.isDone()) {
        // The old policy is stuck in a call: leave its thread behind.
        executor.shutdownNow();
        executor = newExecutor();
      }
      inFlight = null;
      onResync.run();
      if (p == null) {
        LOG.info("Slotwise: Python policy unregistered");
      } else {
        LOG.info("Slotwise: Python policy registered{}; next call sends the full state",
            old == null ? "" : " (replacing the previous one)");
      }
    } finally {
      callLock.unlock();
    }
  }

  boolean hasPolicy() {
    return policy != null;
  }

  /**
   * No call has reached the current policy yet: the first one opens Py4J's
   * callback connection and may be slow.
   */
  boolean isCold() {
    return cold;
  }

  /** The deadline of one call (ms). */
  long getTimeoutMs() {
    return timeoutMs;
  }

  /** One call to Python with the configured deadline; see the full form. */
  <A> A call(String what, Callable<String> build,
      BiFunction<PolicyServer, String, String> invoke, Function<String, A> parse) {
    return call(what, timeoutMs, build, invoke, parse);
  }

  /**
   * One call to Python.
   *
   * @param what the method's name, for the log
   * @param deadlineMs how long the caller may wait, lock and answer included
   * @param build makes the argument; runs under callLock, only if a call is made
   *        (it takes the pending deltas: once it ran, a failed call means a
   *        full resync)
   * @param invoke calls the policy with the argument (runs on the call thread)
   * @param parse turns the answer into a value; throwing means a bad answer
   * @return the parsed answer, or null if the call failed
   */
  <A> A call(String what, long deadlineMs, Callable<String> build,
      BiFunction<PolicyServer, String, String> invoke, Function<String, A> parse) {
    long entered = System.nanoTime();
    long deadline = entered + TimeUnit.MILLISECONDS.toNanos(Math.max(1, deadlineMs));
    PolicyServer p = policy;
    if (p == null) {
      failed(what, "no policy registered", true);
      return null;
    }
    boolean locked = false;
    boolean built = false;
    try {
      locked = callLock.tryLock(remaining(deadline), TimeUnit.NANOSECONDS);
      if (!locked) {
        busy(what, "another call to Python holds the line past the deadline");
        return null;
      }
      if (inFlight != null && !inFlight.isDone()) {
        busy(what, "the previous call to Python is still running");
        return null;
      }
      p = policy; // register() may have replaced it while we waited
      if (p == null) {
        failed(what, "no policy registered", true);
        return null;
      }
      final PolicyServer target = p;
      built = true;
      long buildStart = System.nanoTime();
      final String arg = build.call();
      long sent = System.nanoTime();
      final long[] invokeNs = new long[1];
      Future<String> f = executor.submit(() -> {
        long start = System.nanoTime();
        String r = invoke.apply(target, arg);
        invokeNs[0] = System.nanoTime() - start;
        return r;
      });
      inFlight = f;
      String answer;
      try {
        answer = f.get(remaining(deadline), TimeUnit.NANOSECONDS);
      } catch (TimeoutException e) {
        failed(what, "no answer within " + deadlineMs + " ms", true);
        return null;
      } catch (ExecutionException e) {
        Throwable cause = e.getCause() == null ? e : e.getCause();
        failed(what, "Python raised " + cause, true);
        return null;
      } finally {
        cold = false; // the callback connection has been tried
      }
      A parsed;
      try {
        parsed = parse.apply(answer);
      } catch (RuntimeException e) {
        failed(what, "unusable answer: " + e.getMessage(), true);
        return null;
      }
      long done = System.nanoTime();
      // invokeNs was written before the future completed: get() made it visible.
      stats(what).record(buildStart - entered, sent - buildStart, invokeNs[0], done - sent,
          arg == null ? 0 : arg.length(), answer == null ? 0 : answer.length());
      succeeded();
      return parsed;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      failed(what, "interrupted", built);
      return null;
    } catch (Throwable t) {
      failed(what, t.toString(), built);
      return null;
    } finally {
      if (locked) {
        callLock.unlock();
      }
    }
  }

  private static long remaining(long deadline) {
    return Math.max(0, deadline - System.nanoTime());
  }

  /**
   * The number of fallback heartbeats to report in the payload being built
   * (call from the builder passed to {@link #call}, under callLock).
   */
  long fallbacksToReport() {
    reportedFallbacks = unreportedFallbacks.get();
    return reportedFallbacks;
  }

  /** Counts one heartbeat that the built-in FIFO scheduled. */
  void fallbackHeartbeat() {
    totalFallbacks.incrementAndGet();
    unreportedFallbacks.incrementAndGet();
    synchronized (this) {
      episodeFallbacks++;
    }
  }

  private void succeeded() {
    // under callLock
    unreportedFallbacks.addAndGet(-reportedFallbacks);
    reportedFallbacks = 0;
    synchronized (this) {
      if (inEpisode) {
        inEpisode = false;
        LOG.info("Slotwise: Python policy answering again after {} fallback heartbeat(s)",
            episodeFallbacks);
      }
    }
  }

  /**
   * No call was made because another one is under way. Nothing was taken
   * from the pending deltas, so no resync; while a new policy warms up this
   * is expected and not worth a warning.
   */
  private void busy(String what, String reason) {
    if (cold) {
      failures.incrementAndGet();
      LOG.debug("Slotwise: call {} skipped while the policy warms up: {}", what, reason);
    } else {
      failed(what, reason, false);
    }
  }

  /**
   * @param resync whether deltas may have been lost (the payload was built),
   *        or are not worth keeping (no policy): the next call sends it all
   */
  private void failed(String what, String reason, boolean resync) {
    failures.incrementAndGet();
    if (resync) {
      try {
        onResync.run();
      } catch (Throwable t) {
        LOG.error("Slotwise: resync request failed", t);
      }
    }
    synchronized (this) {
      lastReason = what + ": " + reason;
      if (!inEpisode) {
        inEpisode = true;
        episodeFallbacks = 0;
        LOG.warn("Slotwise: Python policy unavailable ({}: {}); the built-in FIFO "
            + "schedules until it answers again", what, reason);
      } else {
        LOG.debug("Slotwise: call {} failed: {}", what, reason);
      }
    }
  }

  /**
   * The timings of the successful calls of one method ({@code heartbeat},
   * {@code update}, ...): build, round trip, sizes; see {@link CallStats}.
   */
  CallStats stats(String what) {
    // 65,536 samples (3 MB) for heartbeats, fewer for the rarer calls.
    return stats.computeIfAbsent(what,
        k -> new CallStats("heartbeat".equals(k) ? CallStats.DEFAULT_CAPACITY : 4096));
  }

  /** Heartbeats scheduled by the FIFO fallback since the RM started. */
  long getFallbackCount() {
    return totalFallbacks.get();
  }

  /** Failed calls (any method) since the RM started. */
  long getFailureCount() {
    return failures.get();
  }

  synchronized boolean isInFallback() {
    return inEpisode;
  }

  synchronized String getLastFailure() {
    return lastReason;
  }

  void stop() {
    callLock.lock();
    try {
      policy = null;
      executor.shutdownNow();
    } finally {
      callLock.unlock();
    }
  }
}
