package org.slotwise.shim;

import java.io.IOException;
import java.net.InetAddress;
import java.net.Socket;
import java.util.*;
import java.util.concurrent.*;
import java.util.concurrent.atomic.*;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongSupplier;

import javax.net.SocketFactory;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.*;
import com.fasterxml.jackson.databind.json.JsonMapper;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import py4j.*;

/**
 * The link to the Python policy: who is registered, what Python has not
 * seen ({@link Deltas}), the messages ({@link #read}, {@link #write}) and
 * every call to it (docs/shim.md, "Two lines" and "When Python is away").
 *
 * <p>Two lines, each one call at a time on its own thread (so its own Py4J
 * connection), each call with a deadline: the line ({@link #turn}) carries
 * heartbeats, place, move and every payload with deltas; the update line
 * ({@link #updateTurn}) only the update pass. So no heartbeat waits in Java
 * behind a pass, and Python still applies the deltas in the order they were
 * taken: deltas on both lines could reach it out of order, as the two Py4J
 * calls race.
 *
 * <p>A failed call returns null and opens a fallback episode; if it carried
 * deltas they may be lost, so the next payload is full ({@code onResync}). A
 * broken connection drops the policy at once, a busy one only after {@code
 * maxTimeouts} read timeouts in a row. One policy at a time, holding a lease
 * its status calls renew.
 *
 * <p>Order: a line's lock, then the master's lock. {@code this} (the
 * registration, the episode) and {@link Deltas} are leaves.
 */
public final class PolicyLink {
  private static final Logger LOG = LoggerFactory.getLogger(PolicyLink.class);

  /** The deadline of a line's first call after a registration, which opens its Py4J connection. */
  public static final long WARMUP_MS = 2000;
  /** A full payload's deadline (under the 5 s read timeout): a failed resync only asks for another (docs/shim.md). */
  public static final long RESYNC_MS = 4_000;
  /** How long a registered policy has to answer a ping when another one registers. */
  static final long PROBE_MS = 500;
  /** Read timeouts in a row that drop a policy (slotwise.policy.max-timeouts). */
  public static final int MAX_TIMEOUTS = 3;
  /** How long a holder's lease runs without a status call (slotwise.policy.lease-ms). */
  public static final long LEASE_MS = 10_000;
  /** The most assignments a shim carries out for one node from one answer; more refuse the answer. */
  public static final int MAX_ASSIGN_PER_NODE = 1024; // Python: engine.MAX_ASSIGN_PER_HEARTBEAT
  /** The update's deltas on the line: Python's heartbeat with no beats, timed apart. */
  public static final String DELTAS = "deltas";

  /** Benchmarks time calls through this (slotwise.call-observer.class); null otherwise. */
  public interface CallObserver {
    void observe(String method, long waitNs, long buildNs, long invokeNs, long totalNs, int argChars, int answerChars);
  }

  private final long timeoutMs;
  private final int maxTimeouts;
  private final long leaseMs;
  private final LongSupplier clock;
  private final Runnable onResync;
  private final Callbacks callbacks;
  private final CallObserver observer;
  private final Line line = new Line("slotwise-policy-call", true);
  private final Line updates = new Line("slotwise-policy-update", false);
  private volatile String master = "ResourceManager"; // as messages name the master
  private final Object registration = new Object();

  private volatile PolicyServer policy; // written under this, as are the fields below
  private String session;
  private Messages.ServerInfo holder;
  private long renewedMs; // the holder's lease, renewed by its status calls
  private boolean inEpisode;
  private long episodeStartMs;
  private long episodeFallbacks;
  private String lastReason = "";
  private final List<Messages.FallbackEpisode> ended = new ArrayList<>();
  private int reportedEpisodes; // how many of `ended` the line's payload being sent carries

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
      line.lock.lock();
      updates.lock.lock();
      try {
        line.reset();
        updates.reset();
        callbacks.connect(r.callbackPort(), r.callbackToken());
        String id = UUID.randomUUID().toString();
        synchronized (this) {
          policy = p;
          session = id;
          holder = r.server();
          renewedMs = clock.getAsLong();
        }
        timeoutsInARow.set(0);
        onResync.run();
        LOG.info("Slotwise: Python policy registered: {}{}", describe(r.server()),
            old == null ? "" : " (replacing " + describe(oldHolder) + ")");
        return new Messages.Registered(id, null, null, shim);
      } finally {
        updates.lock.unlock();
        line.lock.unlock();
      }
    }
  }

  /** A clean exit; false if that session is not the one registered. */
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
    FutureTask<String> ping = new FutureTask<>(() -> p.ping(write(new Messages.Ping())));
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

  public void setMaster(String name) {
    master = name;
  }

  public boolean hasPolicy() {
    return policy != null;
  }

  /** No call has reached the registered policy on the line yet (heartbeats go to the FIFO meanwhile). */
  public boolean isCold() {
    return line.cold;
  }

  public long getTimeoutMs() {
    return timeoutMs;
  }

  /** The link as {@code status} answers it to the policy server with this session, whose lease it renews. */
  public synchronized Messages.ShimStatus status(String s) {
    boolean mine = s != null && s.equals(session);
    if (mine) {
      renewedMs = clock.getAsLong();
    }
    return new Messages.ShimStatus(mine, holder, inEpisode, inEpisode ? lastReason : null,
        inEpisode ? episodeStartMs : null, inEpisode ? episodeFallbacks : 0, heartbeats.get(),
        totalFallbacks.get(), failures.get(), System.currentTimeMillis());
  }

  /** One line to Python: one call at a time, on its own thread. */
  private static final class Line {
    private final String thread;
    private final boolean deltas; // its payloads carry deltas, which a failed call may lose
    private final ReentrantLock lock = new ReentrantLock();
    private ExecutorService executor; // guarded by lock, as is inFlight
    private Future<?> inFlight;
    private volatile boolean cold = true; // no call has reached the registered policy on it yet

    Line(String thread, boolean deltas) {
      this.thread = thread;
      this.deltas = deltas;
      executor = newExecutor();
    }

    private ExecutorService newExecutor() {
      return Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, thread);
        t.setDaemon(true);
        return t;
      });
    }

    /** For a new policy (under lock): a call of the old one still stuck is left behind with its thread. */
    void reset() {
      if (inFlight != null && !inFlight.isDone()) {
        executor.shutdownNow();
        executor = newExecutor();
      }
      inFlight = null;
      cold = true;
    }
  }

  public Turn turn(String what) {
    return turn(what, timeoutMs);
  }

  /**
   * Takes the line for one call within {@code deadlineMs}, which also bounds
   * the call; null when none can be made (a failed call). The caller builds
   * its payload, {@link Turn#send sends} it, carries out the answer and closes
   * the turn: each answer is carried out before the next payload is built.
   */
  public Turn turn(String what, long deadlineMs) {
    return turn(line, what, deadlineMs);
  }

  /** The update line, for a pass whose payload carries no deltas; the first call's deadline is WARMUP_MS. */
  public Turn updateTurn() {
    return turn(updates, "update", updates.cold ? Math.max(timeoutMs, WARMUP_MS) : timeoutMs);
  }

  private Turn turn(Line l, String what, long deadlineMs) {
    long entered = System.nanoTime();
    long deadline = entered + TimeUnit.MILLISECONDS.toNanos(Math.max(1, deadlineMs));
    try {
      if (!l.lock.tryLock(remaining(deadline), TimeUnit.NANOSECONDS)) {
        busy(l, what, "another call to Python holds the line past the deadline");
        return null;
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return failed(l, what, "interrupted", false);
    }
    PolicyServer target = policy;
    if (l.inFlight != null && !l.inFlight.isDone()) {
      l.lock.unlock();
      busy(l, what, "the previous call to Python is still running");
      return null;
    }
    if (target == null) {
      l.lock.unlock();
      return failed(l, what, "no policy registered", true);
    }
    return new Turn(l, what, target, deadlineMs, entered, deadline);
  }

  /** One call's hold on a line, from {@link #turn} to {@link #close}. */
  public final class Turn implements AutoCloseable {
    private final Line on;
    private final String what;
    private final PolicyServer target;
    private final long deadlineMs;
    private final long entered;
    private final long deadline;
    private final long opened = System.nanoTime();
    private boolean sent;

    private Turn(Line on, String what, PolicyServer target, long deadlineMs, long entered, long deadline) {
      this.on = on;
      this.what = what;
      this.target = target;
      this.deadlineMs = deadlineMs;
      this.entered = entered;
      this.deadline = deadline;
    }

    /** The answer by the deadline, checked whole ({@link #read}), or null: the call failed, in an episode. */
    public <A> A send(String payload, Class<A> type) {
      sent = true;
      long start = System.nanoTime();
      long[] invokeNs = new long[1];
      String call = what.equals(DELTAS) ? "heartbeat" : what;
      Future<String> f = on.executor.submit(() -> invoke(target, call, payload, invokeNs));
      on.inFlight = f;
      long until = on.deltas && payload.startsWith("{\"full\":true") ? Math.max(deadline, start + RESYNC_MS * 1_000_000) : deadline;
      String answer;
      A parsed;
      try {
        answer = f.get(remaining(until), TimeUnit.NANOSECONDS);
        parsed = read(answer, type);
        String error = parsed instanceof Messages.HeartbeatAnswer h ? h.error()
            : parsed instanceof Messages.UpdateAnswer u ? u.error() : null;
        if (error != null) {
          throw new IllegalArgumentException("Python refused the payload: " + error);
        }
      } catch (TimeoutException e) {
        return failed(on, what, "no answer within " + (until > deadline ? RESYNC_MS + " ms (full)" : deadlineMs + " ms"), true);
      } catch (ExecutionException e) {
        return failed(on, what, "Python failed: " + (e.getCause() == null ? e : e.getCause()), true);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return failed(on, what, "interrupted", true);
      } catch (RuntimeException e) {
        if (e instanceof BadMessage) {
          refused(what, e.getMessage());
        }
        return failed(on, what, e.getMessage(), true);
      } finally {
        on.cold = false; // the line's connection has been tried
      }
      succeeded(on);
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
        failed(on, what, "the payload could not be built (see the master's log)", true);
      }
      on.lock.unlock();
    }
  }

  /** The policy's method of that name, on a line's thread; a broken link drops the policy. */
  private String invoke(PolicyServer target, String call, String payload, long[] invokeNs) {
    long start = System.nanoTime();
    try {
      String answer = PolicyServer.call(target, call, payload);
      timeoutsInARow.set(0);
      return answer;
    } catch (RuntimeException e) {
      if (isTimeout(e)) {
        int n = timeoutsInARow.incrementAndGet();
        if (n >= maxTimeouts) {
          drop(target, n + " calls in a row got no answer within the read timeout");
        }
      } else if (isLinkFailure(e)) {
        drop(target, "the call '" + call + "' could not reach it: " + e);
      }
      throw e;
    } finally {
      invokeNs[0] = System.nanoTime() - start;
    }
  }

  /** The socket's read timeout ran out: Python is slow or paused, its connection may be whole. */
  static boolean isTimeout(Throwable e) {
    return caused(e, t -> t instanceof java.net.SocketTimeoutException);
  }

  /** The callback connection failed (as opposed to Python raising); a timeout is one too, see isTimeout. */
  static boolean isLinkFailure(Throwable e) {
    return caused(e, t -> t instanceof Py4JNetworkException || t instanceof IOException
        || String.valueOf(t.getMessage()).contains("communication channel"));
  }

  private static boolean caused(Throwable e, java.util.function.Predicate<Throwable> such) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (such.test(t)) {
        return true;
      }
    }
    return false;
  }

  private static long remaining(long deadline) {
    return Math.max(0, deadline - System.nanoTime());
  }

  /** Strict: no unknown fields, no coerced types; nulls left out when writing. */
  static final ObjectMapper MAPPER = JsonMapper.builder().propertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
      .serializationInclusion(JsonInclude.Include.NON_NULL)
      .enable(DeserializationFeature.FAIL_ON_NUMBERS_FOR_ENUMS)
      .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
      .disable(DeserializationFeature.ACCEPT_FLOAT_AS_INT)
      .disable(MapperFeature.ALLOW_COERCION_OF_SCALARS)
      .build();
  private static final Map<Class<?>, ObjectReader> READERS = new ConcurrentHashMap<>();

  /** A message that does not bind or breaks the protocol's limits; one line, naming the field. */
  public static final class BadMessage extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    BadMessage(String message) {
      super(message);
    }
  }

  /** A message checked whole (the schema, MAX_ASSIGN_PER_NODE) before any of it is used; else BadMessage. */
  public static <T> T read(String json, Class<T> type) {
    String name = type.getSimpleName();
    T message;
    try {
      JsonNode tree = MAPPER.readTree(json); // empty: a MissingNode, which the checker refuses
      Messages.check(name, tree);
      message = READERS.computeIfAbsent(type, MAPPER::readerFor).readValue(tree);
    } catch (IOException | RuntimeException e) {
      String why = e instanceof JsonProcessingException j ? j.getOriginalMessage() : e.getMessage();
      for (Throwable t = e; t != null; t = t.getCause()) {
        if (t instanceof Messages.Violation) {
          why = t.getMessage();
          break;
        }
      }
      throw new BadMessage(name + ": " + String.valueOf(why).replaceAll("\\s+", " "));
    }
    if (message instanceof Messages.HeartbeatAnswer h && h.assign().size() > MAX_ASSIGN_PER_NODE) {
      Map<String, Integer> perNode = new HashMap<>();
      for (Messages.Assignment x : h.assign()) {
        if (perNode.merge(x.node(), 1, Integer::sum) > MAX_ASSIGN_PER_NODE) {
          throw new BadMessage(String.format("HeartbeatAnswer: $.assign: more than %,d assignments for node "
              + "%s in one answer (%,d in all)", MAX_ASSIGN_PER_NODE, Messages.cut(x.node(), 64), h.assign().size()));
        }
      }
    }
    return message;
  }

  public static String write(Object message) {
    try {
      return MAPPER.writeValueAsString(message);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Fallback episodes that ended, for the line's payload being built (under its turn). */
  public synchronized List<Messages.FallbackEpisode> episodesToReport() {
    reportedEpisodes = ended.size();
    return ended.isEmpty() ? null : new ArrayList<>(ended);
  }

  public void heartbeat() {
    heartbeats.incrementAndGet();
  }

  /** A heartbeat the FIFO scheduled, in an episode (one opens for a policy warming up: no call failed). */
  public void fallbackHeartbeat() {
    totalFallbacks.incrementAndGet();
    synchronized (this) {
      if (!inEpisode) {
        openEpisode("a newly registered policy server is warming up (its first call is under way)");
      }
      if (episodeFallbacks++ == 0) {
        LOG.warn("Slotwise: the built-in FIFO schedules heartbeats until Python answers again ({})", lastReason);
      }
    }
  }

  /** Python answered on {@code l}: the episode ends; the episodes the line's payload carried are delivered. */
  private synchronized void succeeded(Line l) {
    if (l == line) {
      ended.subList(0, reportedEpisodes).clear();
      reportedEpisodes = 0;
    }
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
  private void busy(Line l, String what, String reason) {
    if (l.cold) {
      failures.incrementAndGet();
    } else {
      failed(l, what, reason, false);
    }
  }

  /** A failed call (null, for send); {@code built}: its payload was (or no policy): the line's full state next. */
  private <A> A failed(Line l, String what, String reason, boolean built) {
    failures.incrementAndGet();
    if (built && l.deltas) {
      onResync.run();
    }
    synchronized (this) {
      if (l == line) {
        reportedEpisodes = 0; // not delivered: sent again with the next payload
      }
      lastReason = what + ": " + reason;
      if (!inEpisode) {
        openEpisode(lastReason);
      }
    }
    return null;
  }

  /** Starts an episode (under this monitor); the FIFO is logged at its first heartbeat, if one comes. */
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
    for (Line l : List.of(line, updates)) {
      l.lock.lock();
      try {
        l.executor.shutdownNow();
      } finally {
        l.lock.unlock();
      }
    }
  }

  /**
   * What the shim owes Python since its last payload that reached it, before
   * the changed apps are read. While a full resync is pending none are kept:
   * nothing piles up while Python is away.
   */
  public static final class Deltas {
    /** Past this many pending entries, a full resync is cheaper than the deltas. */
    static final int MAX_PENDING = 100_000;

    /** What one call carries, taken out of the pending deltas. */
    public record Taken(boolean full, List<Messages.Node> nodes, List<String> nodesRemoved,
        List<String> appsChanged, List<String> appsRemoved, List<Messages.Container> launched,
        List<Messages.Refusal> rejected, List<String> finished, List<Messages.AppEnd> appsFinished) {
      /** The Payload of one call, both masters': their records of everything when full, else of what was taken. */
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

    public synchronized void requireFull() {
      fullNeeded = true;
      clear();
    }

    public synchronized void nodeChanged(Messages.Node n) {
      keep(() -> {
        nodesRemoved.remove(n.id()); // a node back before its removal was sent
        nodes.put(n.id(), n);
      });
    }

    public synchronized void nodeRemoved(String id) {
      keep(() -> {
        nodes.remove(id);
        nodesRemoved.add(id);
      });
    }

    /** The app's whole record goes in the next payload, read when it is built. */
    public synchronized void appChanged(String id) {
      keep(() -> {
        if (!appsRemoved.contains(id)) {
          appsChanged.add(id);
        }
      });
    }

    /** The app left; {@code end} is how it ended as the master says (null: not known). */
    public synchronized void appRemoved(String id, Messages.FinalState end) {
      keep(() -> {
        appsChanged.remove(id);
        appsRemoved.add(id);
        appsFinished.remove(id);
        if (end != null) {
          appsFinished.put(id, end);
        }
      });
    }

    public synchronized void launched(Messages.Container c) {
      keep(() -> launched.add(c));
    }

    public synchronized void rejected(String engineId, Messages.Reason reason) {
      if (engineId != null) { // a refusal must name Python's assignment (the schema's required engine_id)
        keep(() -> rejected.add(new Messages.Refusal(engineId, reason)));
      }
    }

    public synchronized void finished(String containerId) {
      keep(() -> finished.add(containerId));
    }

    /** A change kept unless a full resync is pending (it will carry the whole state); too many make one. */
    private void keep(Runnable change) {
      if (!fullNeeded) {
        change.run();
        if (launched.size() + rejected.size() + finished.size() + appsChanged.size() + nodes.size() > MAX_PENDING) {
          requireFull();
        }
      }
    }

    /** Takes everything pending; if a full resync was due, says so (the lists are then empty). */
    public synchronized Taken take() {
      Taken t = new Taken(fullNeeded, new ArrayList<>(nodes.values()), new ArrayList<>(nodesRemoved),
          new ArrayList<>(appsChanged), new ArrayList<>(appsRemoved), new ArrayList<>(launched),
          new ArrayList<>(rejected), new ArrayList<>(finished),
          appsFinished.entrySet().stream().map(e -> new Messages.AppEnd(e.getKey(), e.getValue())).toList());
      fullNeeded = false;
      clear();
      return t;
    }

    private void clear() {
      for (Collection<?> c : List.of(nodes.values(), nodesRemoved, appsChanged, appsRemoved,
          appsFinished.values(), launched, rejected, finished)) {
        c.clear();
      }
    }
  }

  /**
   * The gateway's way to Python: the callback port and token of the policy
   * registered now, or nothing (a call then fails at once, never reaching a
   * port another process may hold by now). Py4J's own client, never connected
   * itself (memory management off: an old Python's finalized proxy never
   * reaches the new one); calls go to the registration's client, which keeps
   * a connection per call under way (one per line).
   */
  public static final class Callbacks extends CallbackClient {
    /**
     * Py4J writes a command in 8 KB pieces: without TCP_NODELAY the last piece
     * of a larger payload waits for the first one's delayed ACK (40 ms).
     * Py4J's CallbackConnection opens its sockets with the first method only.
     */
    private static final SocketFactory NO_DELAY = new SocketFactory() {
      @Override
      public Socket createSocket(InetAddress host, int port) throws IOException {
        Socket s = new Socket(host, port);
        s.setTcpNoDelay(true);
        return s;
      }

      @Override
      public Socket createSocket(String host, int port) throws IOException {
        return createSocket(InetAddress.getByName(host), port);
      }

      @Override
      public Socket createSocket(String host, int port, InetAddress local, int localPort) {
        throw new UnsupportedOperationException("no local address is chosen");
      }

      @Override
      public Socket createSocket(InetAddress host, int port, InetAddress local, int localPort) {
        throw new UnsupportedOperationException("no local address is chosen");
      }
    };

    private volatile CallbackClient client;

    /** @param readTimeoutMs socket read timeout of calls: a hung Python is cut off (0 = never) */
    public Callbacks(int readTimeoutMs) {
      super(0, ShimRuntime.LOOPBACK, 0, TimeUnit.SECONDS, NO_DELAY, false, readTimeoutMs);
    }

    void connect(int pythonPort, String token) {
      use(new CallbackClient(pythonPort, ShimRuntime.LOOPBACK, token, 30, TimeUnit.SECONDS, NO_DELAY, false,
          readTimeout));
    }

    void disconnect() {
      use(null);
    }

    private synchronized void use(CallbackClient next) {
      CallbackClient old = client;
      client = next;
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
