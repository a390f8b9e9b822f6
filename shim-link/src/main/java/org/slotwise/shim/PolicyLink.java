package org.slotwise.shim;

import java.io.IOException;
import java.net.InetAddress;
import java.net.Socket;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.*;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongSupplier;

import javax.net.SocketFactory;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import py4j.CallbackClient;
import py4j.Py4JNetworkException;
import py4j.Py4JPythonClient;

/**
 * The link to the Python policy: who is registered, and every call to it.
 *
 * <p>Calls go one at a time, on a dedicated thread, with a deadline. A call
 * that fails for any reason (no policy, an exception, an unusable or refusing
 * answer, the deadline) returns null and opens a fallback episode (WARN when
 * it starts, INFO when Python answers again; reported to Python in the next
 * payload). If its payload was built, its deltas may be lost: the next call
 * sends the full state ({@code onResync}). A call whose connection to Python
 * breaks drops the policy and its callback client at once: that Python must
 * register again, with a fresh token, and nothing goes to its old port. A
 * busy Python is not a dead one: a call that finds no answer within the
 * socket's read timeout is a failed call, and only {@code maxTimeouts} of
 * them in a row drop the policy.
 *
 * <p>An answer that breaks the protocol's limits ({@link Wire.BadMessage}
 * from {@link #read}) is refused whole: not applied, counted as a failed call
 * and as a refused answer ({@link #refusedAnswers}), logged with the field it
 * breaks (WARN, again when the reason changes or a minute later).
 *
 * <p>One policy at a time, holding a lease that its status calls renew: a
 * new one is refused while the lease runs (unless the holder's connection is
 * refused: it is dead) and takes over once it lapses, or at once with
 * takeover.
 *
 * <p>One call is one {@link Turn}, which the master drives top to bottom:
 * {@link #turn} takes the line ({@code callLock}), the master builds its
 * payload, {@link Turn#send} calls Python and returns the answer checked and
 * bound, the master carries it out, and closing the turn gives the line
 * back; so each answer is carried out before the next payload is read.
 * Order: callLock, then the scheduler lock; callers must not hold the
 * scheduler lock. Registration state and the
 * episode are guarded by {@code this}, a leaf.
 */
public final class PolicyLink {
  private static final Logger LOG = LoggerFactory.getLogger(PolicyLink.class);

  /** The first call after a registration opens Py4J's callback connection. */
  public static final long WARMUP_MS = 2000;
  /** How long a registered policy has to answer a ping when another one registers. */
  static final long PROBE_MS = 500;
  /** Read timeouts in a row that drop a policy (slotwise.policy.max-timeouts). */
  public static final int MAX_TIMEOUTS = 3;
  /** How long a holder's lease runs without a status call (slotwise.policy.lease-ms). */
  public static final long LEASE_MS = 10_000;

  /** Benchmarks time calls through this (slotwise.call-observer.class); null otherwise. */
  public interface CallObserver {
    void observe(String method, long waitNs, long buildNs, long invokeNs, long totalNs,
        int argChars, int answerChars);
  }

  private final long timeoutMs;
  private final int maxTimeouts;
  private final long leaseMs;
  private final LongSupplier clock;
  private final Runnable onResync;
  private final Callbacks callbacks;
  private final CallObserver observer;
  private final ReentrantLock callLock = new ReentrantLock();
  private volatile String master = "ResourceManager"; // as messages name the master
  private final Object registration = new Object();
  private ExecutorService executor = newExecutor(); // guarded by callLock
  private Future<?> inFlight; // guarded by callLock

  private PolicyServer policy; // guarded by this, as are the fields below
  private String session;
  private Messages.ServerInfo holder;
  private long renewedMs; // the holder's lease, renewed by its status calls
  private boolean cold = true; // no call has reached this policy yet
  private boolean inEpisode;
  private long episodeStartMs;
  private long episodeFallbacks;
  private String lastReason = "";
  private final List<Messages.FallbackEpisode> ended = new ArrayList<>();
  private int reportedEpisodes; // how many of `ended` the payload being sent carries

  private final AtomicLong heartbeats = new AtomicLong();
  private final AtomicLong totalFallbacks = new AtomicLong();
  private final AtomicLong failures = new AtomicLong();
  private final AtomicLong refused = new AtomicLong();
  private final AtomicInteger timeoutsInARow = new AtomicInteger();
  private volatile String lastRefusal; // guarded by this for writes
  private long lastRefusalLogMs;

  public PolicyLink(long timeoutMs, Runnable onResync, Callbacks callbacks, CallObserver observer) {
    this(timeoutMs, MAX_TIMEOUTS, LEASE_MS, System::currentTimeMillis, onResync, callbacks, observer);
  }

  /** @param clock the lease's clock (ms) */
  public PolicyLink(long timeoutMs, int maxTimeouts, long leaseMs, LongSupplier clock, Runnable onResync,
      Callbacks callbacks, CallObserver observer) {
    this.timeoutMs = Math.max(1, timeoutMs);
    this.maxTimeouts = Math.max(1, maxTimeouts);
    this.leaseMs = Math.max(1, leaseMs);
    this.clock = clock;
    this.onResync = onResync;
    this.callbacks = callbacks;
    this.observer = observer;
  }

  private static ExecutorService newExecutor() {
    return Executors.newSingleThreadExecutor(r -> {
      Thread t = new Thread(r, "slotwise-policy-call");
      t.setDaemon(true);
      return t;
    });
  }

  // ------------------------------------------------------------ registration

  /** A policy offers itself; it replaces a current one whose lease lapsed or that is dead, or any with takeover. */
  public Messages.Registered register(PolicyServer p, Messages.Register r, Messages.ShimInfo shim) {
    synchronized (registration) {
      if (r.protocol() != Messages.PROTOCOL) {
        return new Messages.Registered(null, "this shim speaks protocol version " + Messages.PROTOCOL
            + ", the policy server " + r.protocol(), null, shim);
      }
      PolicyServer old;
      Messages.ServerInfo oldHolder;
      long leaseAge;
      synchronized (this) {
        old = policy;
        oldHolder = holder;
        leaseAge = clock.getAsLong() - renewedMs;
      }
      if (old != null && !r.takeover() && leaseAge < leaseMs && !isDead(old)) {
        return new Messages.Registered(null, "the " + master + " already has a live policy server: "
            + describe(oldHolder) + ", whose lease it renewed " + leaseAge + " ms ago (it lapses after "
            + leaseMs + " ms without renewal); stop it first, or start this one with --takeover",
            oldHolder, shim);
      }
      callLock.lock();
      try {
        if (inFlight != null && !inFlight.isDone()) {
          executor.shutdownNow(); // the old policy is stuck in a call: leave its thread behind
          executor = newExecutor();
        }
        inFlight = null;
        callbacks.connect(r.callbackPort(), r.callbackToken());
        String id = UUID.randomUUID().toString();
        synchronized (this) {
          policy = p;
          session = id;
          holder = r.server();
          renewedMs = clock.getAsLong();
          cold = true;
        }
        timeoutsInARow.set(0);
        onResync.run();
        LOG.info("Slotwise: Python policy registered: {}{}", describe(r.server()),
            old == null ? "" : " (replacing " + describe(oldHolder) + ")");
        return new Messages.Registered(id, null, null, shim);
      } finally {
        callLock.unlock();
      }
    }
  }

  /** A clean exit; false if that session is not the registered one. */
  public boolean unregister(String s) {
    synchronized (registration) {
      PolicyServer p;
      synchronized (this) {
        if (s == null || !s.equals(session)) {
          return false;
        }
        p = policy;
      }
      drop(p, "unregistered");
      return true;
    }
  }

  /** Whether a ping finds the policy's connection broken (a slow or paused one is not dead). */
  private boolean isDead(PolicyServer p) {
    FutureTask<String> ping = new FutureTask<>(() -> p.ping(Wire.write(new Messages.Ping())));
    Thread t = new Thread(ping, "slotwise-ping");
    t.setDaemon(true);
    t.start();
    try {
      ping.get(PROBE_MS, TimeUnit.MILLISECONDS);
      return false;
    } catch (ExecutionException e) {
      return isLinkFailure(e.getCause()) && !isTimeout(e.getCause());
    } catch (Exception e) {
      ping.cancel(true);
      return false;
    }
  }

  /** Forgets the policy (if it is still {@code expected}) and cuts its callback client. */
  private void drop(PolicyServer expected, String why) {
    synchronized (this) {
      if (policy != expected || policy == null) {
        return;
      }
      LOG.warn("Slotwise: Python policy {} dropped ({}); the built-in FIFO schedules until a "
          + "policy server registers again", describe(holder), why);
      policy = null;
      session = null;
      holder = null;
    }
    callbacks.disconnect();
    onResync.run();
  }

  private static String describe(Messages.ServerInfo s) {
    return s == null ? "(unknown)" : "pid " + s.pid() + " on " + s.host() + " (allocations "
        + s.allocations() + ", version " + s.version() + ")";
  }

  /** The master's name in the messages Python shows ("ResourceManager", "JobTracker"). */
  public void setMaster(String name) {
    master = name;
  }

  public synchronized boolean hasPolicy() {
    return policy != null;
  }

  public synchronized boolean isCold() {
    return cold;
  }

  public long getTimeoutMs() {
    return timeoutMs;
  }

  /** The link as {@code status} answers it to the policy server with this session, whose lease it renews. */
  public synchronized Messages.ShimStatus status(String s) {
    if (s != null && s.equals(session)) {
      renewedMs = clock.getAsLong();
    }
    return new Messages.ShimStatus(s != null && s.equals(session), holder, inEpisode,
        inEpisode ? lastReason : null, inEpisode ? episodeStartMs : null,
        inEpisode ? episodeFallbacks : 0, heartbeats.get(), totalFallbacks.get(), failures.get(),
        System.currentTimeMillis());
  }

  // ------------------------------------------------------------------- calls

  /** Takes the line with the configured deadline; see {@link #turn(String, long)}. */
  public Turn turn(String what) {
    return turn(what, timeoutMs);
  }

  /**
   * Takes the line for one call to Python ({@code what}: heartbeat, update,
   * place or move), waiting at most {@code deadlineMs}, which also bounds the
   * call itself. Null when no call can be made (no policy, the line busy past
   * the deadline, the previous call still running): that is a failed call,
   * already counted. Otherwise the caller builds its payload, {@link
   * Turn#send sends} it, carries out the answer and closes the turn, in that
   * order, so each answer is carried out before the next payload is built.
   */
  public Turn turn(String what, long deadlineMs) {
    long entered = System.nanoTime();
    long deadline = entered + TimeUnit.MILLISECONDS.toNanos(Math.max(1, deadlineMs));
    try {
      if (!callLock.tryLock(remaining(deadline), TimeUnit.NANOSECONDS)) {
        busy(what, "another call to Python holds the line past the deadline");
        return null;
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      failed(what, "interrupted", false);
      return null;
    }
    PolicyServer target;
    synchronized (this) {
      target = policy;
    }
    if (inFlight != null && !inFlight.isDone()) {
      callLock.unlock();
      busy(what, "the previous call to Python is still running");
      return null;
    }
    if (target == null) {
      callLock.unlock();
      failed(what, "no policy registered", true);
      return null;
    }
    return new Turn(what, target, deadlineMs, entered, deadline);
  }

  /** One call's hold on the line (callLock), from {@link #turn} to {@link #close}. */
  public final class Turn implements AutoCloseable {
    private final String what;
    private final PolicyServer target;
    private final long deadlineMs;
    private final long entered;
    private final long deadline;
    private final long opened = System.nanoTime();
    private boolean sent;

    private Turn(String what, PolicyServer target, long deadlineMs, long entered, long deadline) {
      this.what = what;
      this.target = target;
      this.deadlineMs = deadlineMs;
      this.entered = entered;
      this.deadline = deadline;
    }

    /**
     * Sends the payload on the call thread and waits for the answer until the
     * deadline; the answer checked whole and bound ({@link #read}). Null if
     * the call failed (counted, a fallback episode opened, a full payload
     * asked for next, as its deltas may be lost).
     */
    public <A> A send(String payload, Class<A> type) {
      sent = true;
      long start = System.nanoTime();
      long[] invokeNs = new long[1];
      Future<String> f = executor.submit(() -> invoke(target, what, payload, invokeNs));
      inFlight = f;
      String answer;
      A parsed;
      try {
        answer = f.get(remaining(deadline), TimeUnit.NANOSECONDS);
        parsed = read(answer, type);
      } catch (TimeoutException e) {
        failed(what, "no answer within " + deadlineMs + " ms", true);
        return null;
      } catch (ExecutionException e) {
        failed(what, "Python failed: " + (e.getCause() == null ? e : e.getCause()), true);
        return null;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        failed(what, "interrupted", true);
        return null;
      } catch (RuntimeException e) {
        if (e instanceof Wire.BadMessage) {
          refused(what, e.getMessage());
        }
        failed(what, e.getMessage(), true);
        return null;
      } finally {
        synchronized (PolicyLink.this) {
          cold = false; // the callback connection has been tried
        }
      }
      succeeded();
      if (observer != null) {
        observer.observe(what, opened - entered, start - opened, invokeNs[0], System.nanoTime() - start,
            payload.length(), answer.length());
      }
      return parsed;
    }

    /** Gives the line back; a turn that sent nothing (its payload failed to build) is a failed call. */
    @Override
    public void close() {
      if (!sent) {
        failed(what, "the payload could not be built (see the master's log)", true);
      }
      callLock.unlock();
    }
  }

  /** The policy's method of that name, on the call thread; a broken link drops the policy. */
  private String invoke(PolicyServer target, String what, String payload, long[] invokeNs) {
    long start = System.nanoTime();
    try {
      String answer = PolicyServer.call(target, what, payload);
      timeoutsInARow.set(0);
      return answer;
    } catch (RuntimeException e) {
      if (isTimeout(e)) {
        int n = timeoutsInARow.incrementAndGet();
        if (n >= maxTimeouts) {
          drop(target, n + " calls in a row got no answer within the read timeout");
        }
      } else if (isLinkFailure(e)) {
        drop(target, "the call '" + what + "' could not reach it: " + e);
      }
      throw e;
    } finally {
      invokeNs[0] = System.nanoTime() - start;
    }
  }

  /** The most assignments a shim carries out for one node from one answer; more refuse the answer. */
  public static final int MAX_ASSIGN_PER_NODE = 1024; // Python: engine.MAX_ASSIGN_PER_HEARTBEAT

  /**
   * An answer from Python, checked whole (the schema's limits, and at most
   * MAX_ASSIGN_PER_NODE assignments per node) before any of it is carried
   * out: throwing refuses it (a failed call), as does an answer whose
   * {@code error} refuses the payload.
   */
  public static <A> A read(String json, Class<A> type) {
    A a = Wire.read(json, type);
    if (a instanceof Messages.HeartbeatAnswer h && h.assign().size() > MAX_ASSIGN_PER_NODE) {
      Map<String, Integer> perNode = new HashMap<>();
      for (Messages.Assignment x : h.assign()) {
        if (perNode.merge(x.node(), 1, Integer::sum) > MAX_ASSIGN_PER_NODE) {
          throw new Wire.BadMessage("HeartbeatAnswer: $.assign: more than " + String.format("%,d",
              MAX_ASSIGN_PER_NODE) + " assignments for node " + Messages.cut(x.node(), 64)
              + " in one answer (" + String.format("%,d", h.assign().size()) + " in all)");
        }
      }
    }
    String error = a instanceof Messages.HeartbeatAnswer h ? h.error()
        : a instanceof Messages.UpdateAnswer u ? u.error() : null;
    if (error != null) {
      throw new IllegalArgumentException("Python refused the payload: " + error);
    }
    return a;
  }

  /** The socket's read timeout ran out: Python is slow or paused, its connection may be whole. */
  static boolean isTimeout(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof java.net.SocketTimeoutException) {
        return true;
      }
    }
    return false;
  }

  /** The callback connection failed (as opposed to Python raising); a timeout is one too, see isTimeout. */
  static boolean isLinkFailure(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof Py4JNetworkException || t instanceof IOException
          || String.valueOf(t.getMessage()).contains("communication channel")) {
        return true;
      }
    }
    return false;
  }

  private static long remaining(long deadline) {
    return Math.max(0, deadline - System.nanoTime());
  }

  /** Fallback episodes that ended, for the payload being built (under callLock). */
  public synchronized List<Messages.FallbackEpisode> episodesToReport() {
    reportedEpisodes = ended.size();
    return ended.isEmpty() ? null : new ArrayList<>(ended);
  }

  public void heartbeat() {
    heartbeats.incrementAndGet();
  }

  /**
   * Counts one heartbeat that the built-in FIFO scheduled, always inside an
   * episode: a policy that has just registered is skipped until its first
   * call (the warm-up) answers, with no call failed to open one.
   */
  public void fallbackHeartbeat() {
    totalFallbacks.incrementAndGet();
    synchronized (this) {
      if (!inEpisode) {
        openEpisode("a newly registered policy server is warming up (its first call is under way)");
      }
      if (episodeFallbacks++ == 0) {
        LOG.warn("Slotwise: the built-in FIFO schedules heartbeats until Python answers again ({})",
            lastReason);
      }
    }
  }

  private synchronized void succeeded() {
    ended.subList(0, reportedEpisodes).clear();
    reportedEpisodes = 0;
    if (inEpisode) {
      inEpisode = false;
      long now = System.currentTimeMillis();
      LOG.info("Slotwise: Python policy answering again after {} ms; {}", now - episodeStartMs,
          episodeFallbacks == 0 ? "no heartbeat went to the built-in FIFO meanwhile"
              : "the built-in FIFO scheduled " + episodeFallbacks + " heartbeat(s) meanwhile");
      if (ended.size() >= 100) {
        ended.remove(0); // Python has not heard of them for long: keep the recent ones
      }
      ended.add(new Messages.FallbackEpisode(lastReason, episodeStartMs, now, episodeFallbacks));
    }
  }

  /** No call was made (another is under way): no deltas taken, no resync; expected while warming up. */
  private void busy(String what, String reason) {
    if (isCold()) {
      failures.incrementAndGet();
    } else {
      failed(what, reason, false);
    }
  }

  /** @param resync the payload was built (its deltas may be lost), or there is no policy */
  private void failed(String what, String reason, boolean resync) {
    failures.incrementAndGet();
    if (resync) {
      onResync.run();
    }
    synchronized (this) {
      lastReason = what + ": " + reason;
      if (!inEpisode) {
        openEpisode(lastReason);
      }
    }
  }

  /**
   * Starts an episode without Python (caller holds this monitor); what it
   * logs is what happened: a failed call, or a policy warming up. The first
   * heartbeat the FIFO schedules in it is logged then, so a failed update
   * that no heartbeat followed says nothing of the FIFO.
   */
  private void openEpisode(String reason) {
    lastReason = reason;
    inEpisode = true;
    episodeStartMs = System.currentTimeMillis();
    episodeFallbacks = 0;
    LOG.warn("Slotwise: Python policy unavailable: {}", reason);
  }

  /** An answer outside the protocol: counted, and logged when its reason is new or a minute on. */
  private void refused(String what, String reason) {
    refused.incrementAndGet();
    boolean log;
    synchronized (this) {
      long now = System.currentTimeMillis();
      log = !reason.equals(lastRefusal) || now - lastRefusalLogMs >= 60_000;
      lastRefusal = reason;
      if (log) {
        lastRefusalLogMs = now;
      }
    }
    if (log) {
      LOG.warn("Slotwise: refused Python's answer to '{}' whole, nothing of it carried out "
          + "(answers refused so far: {}): {}", what, refused.get(), reason);
    }
  }

  /** Answers from Python refused whole for breaking the protocol (its limits included) since the start. */
  public long refusedAnswers() {
    return refused.get();
  }

  /** Why the last refused answer was refused (one line, naming the field); null if none was. */
  public String lastRefusal() {
    return lastRefusal;
  }

  public synchronized String getLastFailure() {
    return lastReason;
  }

  public void stop() {
    synchronized (this) {
      policy = null;
      session = null;
    }
    callLock.lock();
    try {
      executor.shutdownNow();
    } finally {
      callLock.unlock();
    }
  }

  /**
   * The gateway's way to Python: the callback port and token of the policy
   * registered now, or nothing. A call with nothing connected fails at once
   * (and so never reaches a port some other process may hold by now).
   *
   * <p>It is Py4J's own client, never connected itself (port 0, no cleaner
   * thread, memory management off so a finalized proxy of an old Python never
   * reaches the new one), so what the gateway asks of it that holds for every
   * registration (the address, the read timeout, the entry point's proxy) is
   * Py4J's; calls go to the client of the registration in force.
   */
  public static final class Callbacks extends CallbackClient {
    /**
     * Py4J writes a command in 8 KB pieces: without TCP_NODELAY the last piece
     * of a larger payload waits for the first one's delayed ACK (40 ms).
     */
    private static final SocketFactory NO_DELAY = new SocketFactory() {
      private Socket noDelay(Socket s) throws IOException {
        s.setTcpNoDelay(true);
        return s;
      }

      @Override
      public Socket createSocket(String host, int port) throws IOException {
        return noDelay(new Socket(host, port));
      }

      @Override
      public Socket createSocket(String host, int port, InetAddress local, int localPort)
          throws IOException {
        return noDelay(new Socket(host, port, local, localPort));
      }

      @Override
      public Socket createSocket(InetAddress host, int port) throws IOException {
        return noDelay(new Socket(host, port));
      }

      @Override
      public Socket createSocket(InetAddress host, int port, InetAddress local, int localPort)
          throws IOException {
        return noDelay(new Socket(host, port, local, localPort));
      }
    };

    private volatile CallbackClient client;

    /** @param readTimeoutMs socket read timeout of calls: a hung Python is cut off (0 = never) */
    public Callbacks(int readTimeoutMs) {
      super(0, ShimRuntime.LOOPBACK, 0, TimeUnit.SECONDS, NO_DELAY, false, readTimeoutMs);
    }

    /** Calls go to this port, authenticated with this (per-registration) token. */
    synchronized void connect(int pythonPort, String token) {
      CallbackClient old = client;
      client = new CallbackClient(pythonPort, ShimRuntime.LOOPBACK, token, 30, TimeUnit.SECONDS, NO_DELAY, false,
          readTimeout);
      if (old != null) {
        old.shutdown();
      }
    }

    synchronized void disconnect() {
      CallbackClient old = client;
      client = null;
      if (old != null) {
        old.shutdown();
      }
    }

    @Override
    public String sendCommand(String command, boolean blocking) {
      CallbackClient c = client;
      if (c == null) {
        throw new Py4JNetworkException("no Python policy is registered");
      }
      return c.sendCommand(command, blocking);
    }

    /** Only {@link #disconnect} ends a connection (Py4J calls this on resets). */
    @Override
    public void shutdown() {
    }

    /** Python registers its port with the entry point, not with resetCallbackClient. */
    @Override
    public Py4JPythonClient copyWith(InetAddress pythonAddress, int pythonPort) {
      return this;
    }

    @Override
    public int getPort() {
      CallbackClient c = client;
      return c == null ? 0 : c.getPort();
    }
  }
}
