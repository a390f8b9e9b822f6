package org.apache.hadoop.mapred;

import java.io.IOException;
import java.util.*;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.mapreduce.TaskType;
import org.apache.hadoop.mapreduce.server.jobtracker.TaskTracker;
import org.apache.hadoop.net.Node;
import org.slotwise.shim.Deltas;
import org.slotwise.shim.FifoFallback;
import org.slotwise.shim.Messages;
import org.slotwise.shim.Wire;
import org.slotwise.shim.PolicyLink;
import org.slotwise.shim.ShimRuntime;

/**
 * The MRv1 JobTracker's scheduler, with its policy in Python (docs/mrv1.md).
 *
 * <p>Each {@link #assignTasks} (a TaskTracker heartbeat, inside the
 * JobTracker's lock) is one call to Python, top to bottom: it takes the line
 * ({@link PolicyLink#turn}), builds the payload ({@link #payload}: what
 * changed since the last call, from {@link Deltas}, and the tracker's free
 * slots), sends it, and carries out the answer ({@link #carryOut}): which
 * jobs get a map or a reduce there and at which locality level, each by the
 * JobInProgress method of that level. Its deadline bounds the call and the
 * carrying out; a slow heartbeat is logged with where its time went. Every {@code slotwise.update.interval-ms}
 * an update call brings preemptions (the tasks to kill) and the pool table.
 * When Python cannot answer within the deadline, a FIFO (priority, then
 * submit time) schedules the heartbeat.
 *
 * <p>Locking: the JobTracker's listeners only queue events (they can be called
 * under a job's lock); {@code this} guards the shim's own view and is taken
 * under PolicyLink's call lock, never around a call to the JobTracker's
 * synchronized methods from the update thread.
 */
public class SlotwiseTaskScheduler extends TaskScheduler implements ShimRuntime.Master {
  private static final Log LOG = LogFactory.getLog(SlotwiseTaskScheduler.class);
  /** Which job property names the pool when the job names none (the Fair Scheduler's; default user.name). */
  public static final String POOL_NAME_PROPERTY = "mapred.fairscheduler.poolnameproperty";
  /** The original Fair Scheduler's switch, passed to Python at registration (default: off). */
  public static final String PREEMPTION = "mapred.fairscheduler.preemption";
  /** A job's own choice of pool, which wins over the property above (Hadoop 1's FairScheduler). */
  static final String EXPLICIT_POOL = "mapred.fairscheduler.pool";
  /** A tight deadline: assignTasks holds the JobTracker's lock. */
  public static final long DEFAULT_TIMEOUT_MS = 100;
  /** Threads that initialise jobs at once (the Fair Scheduler's JobInitializer reads the same; 4). */
  static final String INIT_THREADS = "mapred.jobinit.threads";
  /**
   * The request keys of a job's two asks (one key per ask, as the protocol
   * has it). Which kind of task an answer starts is its resource: a map slot
   * or a reduce slot.
   */
  static final int MAP_ASK = 0;
  static final int REDUCE_ASK = 1;

  /**
   * What the shim knows of a job: its pool, and the two states that change
   * its asks with no event (its tasks' launches and ends go to {@link
   * Deltas} as they happen): whether it may run, and whether it schedules
   * reduces, as Python last heard them.
   */
  private static final class JobState {
    final JobInProgress job;
    String pool; // an operator's move changes it
    final String rejected; // why Python's place refused it; null: placed
    boolean known; // sent to Python at least once
    boolean init; // its initialisation was asked for
    boolean runnable; // as last sent
    boolean reduces; // as last sent

    JobState(JobInProgress job, String pool, String rejected) {
      this.job = job;
      this.pool = pool;
      this.rejected = rejected;
    }
  }

  /** A task this shim launched (Python's or the FIFO's), until it ends. */
  private record Launch(JobID job, String tracker, boolean map) {}

  private final Deltas deltas = new Deltas();
  private final java.util.Queue<Object[]> events = new ConcurrentLinkedQueue<>(); // {"add"|"remove"|"update", job}
  private final Map<JobID, JobState> jobs = new LinkedHashMap<>(); // guarded by this
  private final Map<TaskAttemptID, Launch> live = new HashMap<>(); // guarded by this
  private final Map<String, Messages.Node> trackers = new HashMap<>(); // guarded by this
  private ExecutorService initializer;
  private long lastSlowLogMs;
  private final Listener listener = new Listener();
  private ShimRuntime runtime;
  private PolicyLink link;
  private long updateInterval;
  private Thread updater;
  private volatile boolean running;
  private final Object wake = new Object();
  private boolean woken; // guarded by wake: an update is due now (a wake-up is never lost)

  // -------------------------------------------------------------- lifecycle

  @Override
  public synchronized void start() throws IOException {
    Configuration c = getConf();
    initializer = Executors.newFixedThreadPool(Math.max(1, c.getInt(INIT_THREADS, 4)), r -> {
      Thread t = new Thread(r, "slotwise-init");
      t.setDaemon(true);
      return t;
    });
    taskTrackerManager.addJobInProgressListener(listener);
    runtime = new ShimRuntime(c::get, Messages.Kind.MRV1,
        () -> c.getBoolean(PREEMPTION, false), DEFAULT_TIMEOUT_MS, deltas::requireFull, null, this);
    link = runtime.link();
    updateInterval = runtime.updateInterval();
    runtime.start(c.get("hadoop.tmp.dir", System.getProperty("java.io.tmpdir")));
    if (taskTrackerManager instanceof JobTracker jt && jt.infoServer != null) {
      jt.infoServer.setAttribute(SlotwiseSchedulerServlet.ATTRIBUTE, this);
      jt.infoServer.addServlet("slotwise", "/scheduler", SlotwiseSchedulerServlet.class);
    }
    running = true;
    updater = new Thread(this::updateLoop, "slotwise-update");
    updater.setDaemon(true);
    updater.start();
  }

  /**
   * Not under {@code this}: stopping the link takes its call lock, which an
   * update under way holds while it waits for {@code this} (the lock order).
   */
  @Override
  public void terminate() throws IOException {
    Thread u;
    ShimRuntime rt;
    ExecutorService init;
    synchronized (this) {
      running = false;
      u = updater;
      rt = runtime;
      init = initializer;
    }
    if (u != null) {
      u.interrupt();
    }
    if (rt != null) {
      rt.stop();
    }
    if (init != null) {
      init.shutdownNow();
    }
    taskTrackerManager.removeJobInProgressListener(listener);
    super.terminate();
  }

  /**
   * Only queues (the JobTracker may call these holding a job's lock), but for
   * a new job's place call; a new job wakes the update thread, whose call
   * carries it to Python and whose answer lets it be initialised at once.
   */
  private final class Listener extends JobInProgressListener {
    @Override
    public void jobAdded(JobInProgress job) {
      String asked = poolOf(job);
      Messages.PlaceAnswer a = null;
      try (PolicyLink.Turn turn = link.turn("place")) {
        a = turn == null ? null : turn.send(Wire.write(new Messages.PlaceRequest(job.getJobID().toString(),
            job.getProfile().getUser(), asked, List.of(), priorityOf(job))), Messages.PlaceAnswer.class);
      }
      events.add(new Object[] {"add", job, a == null || a.queue() == null ? asked : pool(a.queue()),
          a == null ? null : a.reject()});
      if (link.hasPolicy()) {
        registered(); // without one, the next heartbeat initialises it (initJobs(null))
      }
    }

    @Override
    public void jobRemoved(JobInProgress job) {
      events.add(new Object[] {"remove", job, null});
    }

    @Override
    public void jobUpdated(JobChangeEvent event) {
      events.add(new Object[] {event.getJobInProgress().isComplete() ? "remove" : "update",
          event.getJobInProgress(), null});
    }
  }

  /**
   * The pool a job asks for, as Hadoop 1's FairScheduler reads it: its
   * {@code mapred.fairscheduler.pool}, else the job property the pool-name
   * property names ({@code user.name} by default), else "default". Python's
   * place decides where it goes (its rules and ACLs); this stands only when
   * Python does not answer.
   */
  String poolOf(JobInProgress job) {
    JobConf jc = job.getJobConf();
    String p = jc.get(EXPLICIT_POOL, jc.get(getConf().get(POOL_NAME_PROPERTY, "user.name"), "default"));
    return pool(p.isBlank() ? "default" : p.trim());
  }

  /**
   * A pool name within the protocol's Name bound: a longer one is cut (and
   * logged once) rather than sent, which Python would refuse with every
   * payload while the job lives; Python places the job by the cut name.
   */
  static String pool(String name) {
    if (name.length() > Messages.NAME_MAX
        && name.codePointCount(0, name.length()) > Messages.NAME_MAX) {
      String cut = Messages.cut(name, Messages.NAME_MAX);
      if (LOGGED_LONG_POOL.compareAndSet(false, true)) {
        LOG.warn("Slotwise: a job's pool name of " + name.length() + " characters is cut to "
            + Messages.NAME_MAX + " (the protocol's bound); later ones are not logged");
      }
      return cut;
    }
    return name;
  }

  private static final java.util.concurrent.atomic.AtomicBoolean LOGGED_LONG_POOL =
      new java.util.concurrent.atomic.AtomicBoolean();

  @Override
  public synchronized Collection<JobInProgress> getJobs(String queue) {
    drainEvents();
    List<JobInProgress> out = new ArrayList<>();
    for (JobState s : jobs.values()) {
      out.add(s.job);
    }
    return out;
  }

  // ---------------------------------------------------------- the heartbeat

  /**
   * One TaskTracker heartbeat, top to bottom, inside the JobTracker's lock:
   * the payload, the call and Python's assignments carried out, all within
   * the deadline ({@code slotwise.policy.timeout-ms}, from entry); or, if the
   * call fails, the FIFO. A heartbeat past its deadline is logged (once a
   * minute at most) with where its time went.
   */
  @Override
  public List<Task> assignTasks(TaskTracker tracker) throws IOException {
    long entered = System.nanoTime();
    long deadline = entered + TimeUnit.MILLISECONDS.toNanos(link.getTimeoutMs());
    TaskTrackerStatus st = tracker.getStatus();
    Messages.Node node = nodeOf(st);
    link.heartbeat();
    List<Task> out = new ArrayList<>();
    long[] at = new long[4]; // line taken, payload built, answered, carried out
    Messages.HeartbeatAnswer answer = null;
    // A new policy warms up on the update thread, which holds the line up to PolicyLink.WARMUP_MS:
    // the FIFO schedules meanwhile rather than wait for it inside the JobTracker's lock.
    try (PolicyLink.Turn turn = link.hasPolicy() && link.isCold() ? null : link.turn("heartbeat")) {
      at[0] = System.nanoTime();
      if (turn != null) {
        String payload = payload(List.of(node), null, List.of(new Messages.Beat(node.id(),
            new Messages.Resource(0, 0, st.getAvailableMapSlots(), st.getAvailableReduceSlots()))));
        at[1] = System.nanoTime();
        answer = turn.send(payload, Messages.HeartbeatAnswer.class);
        at[2] = System.nanoTime();
        if (answer != null && answer.resync()) {
          deltas.requireFull(); // the JobTracker's state whole next time; the FIFO takes this one
          answer = null;
        }
        if (answer != null) {
          carryOut(answer, st, out, deadline);
        }
        at[3] = System.nanoTime();
      }
    }
    if (answer == null) {
      link.fallbackHeartbeat();
      initJobs(null);
      fifo(st, out);
    }
    long done = System.nanoTime();
    if (done > deadline) {
      slow(entered, at, done, answer == null);
    }
    return out;
  }

  /** A heartbeat past its deadline: where the time went, once a minute at most. */
  private void slow(long entered, long[] at, long done, boolean fifo) {
    long now = System.currentTimeMillis();
    synchronized (this) {
      if (now - lastSlowLogMs < 60_000) {
        return;
      }
      lastSlowLogMs = now;
    }
    long line = at[0] - entered;
    LOG.warn(String.format("Slotwise: assignTasks took %.1f ms, past its %d ms deadline, inside the "
        + "JobTracker's lock: waiting for the line to Python %.1f ms, building the payload %.1f ms, "
        + "the call %.1f ms, carrying out the answer %.1f ms%s (later ones are logged a minute on)",
        (done - entered) / 1e6, link.getTimeoutMs(), line / 1e6,
        at[1] == 0 ? 0 : (at[1] - at[0]) / 1e6, at[2] == 0 ? 0 : (at[2] - at[1]) / 1e6,
        at[3] == 0 || at[2] == 0 ? 0 : (at[3] - at[2]) / 1e6,
        fifo ? String.format(", the FIFO (the call failed: %s) %.1f ms", link.getLastFailure(),
            (done - Math.max(at[0], at[3])) / 1e6) : ""));
  }

  /**
   * Python's assignments for this tracker, checked against its free slots,
   * each by the level Python chose; past the deadline the rest go back to
   * Python ({@code error}), as the heartbeat holds the JobTracker's lock.
   */
  private void carryOut(Messages.HeartbeatAnswer a, TaskTrackerStatus st, List<Task> out, long deadline) {
    int numTrackers = taskTrackerManager.getClusterStatus().getTaskTrackers();
    int hosts = taskTrackerManager.getNumberOfUniqueHosts();
    int freeMaps = st.getAvailableMapSlots();
    int freeReduces = st.getAvailableReduceSlots();
    int late = 0;
    for (Messages.Assignment as : a.assign()) {
      JobState s;
      synchronized (this) {
        s = jobs.get(JobID.forName(as.app()));
      }
      Task t = null;
      boolean map = as.resource() != null && as.resource().mapSlots() > 0;
      Messages.Reason refused = as.resource() == null ? Messages.Reason.ERROR
          : s == null || !runnable(s.job) ? Messages.Reason.NO_ATTEMPT
          : !as.node().equals(st.getTrackerName()) ? Messages.Reason.NO_NODE
          : (map ? freeMaps <= 0 : freeReduces <= 0) ? Messages.Reason.NO_ROOM : null;
      if (refused == null && System.nanoTime() > deadline) {
        refused = Messages.Reason.ERROR;
        late++;
      }
      try {
        if (refused == null) {
          t = !map ? s.job.obtainNewReduceTask(st, numTrackers, hosts) : switch (as.locality()) {
            case NODE_LOCAL -> s.job.obtainNewNodeLocalMapTask(st, numTrackers, hosts);
            case RACK_LOCAL -> s.job.obtainNewNodeOrRackLocalMapTask(st, numTrackers, hosts);
            case OFF_SWITCH -> s.job.obtainNewMapTask(st, numTrackers, hosts);
          };
          refused = t == null ? Messages.Reason.NO_TASK : null;
        }
      } catch (IOException e) {
        LOG.warn("Slotwise: " + as.app() + " could not give a task: " + e);
        refused = Messages.Reason.ERROR;
      }
      if (t == null) {
        deltas.rejected(as.engineId(), refused == null ? Messages.Reason.ERROR : refused);
        deltas.appChanged(as.app()); // re-sent with the refusal: Python took the ask when it assigned
        continue;
      }
      if (map) {
        freeMaps--;
      } else {
        freeReduces--;
      }
      launched(t, s.job, st.getTrackerName(), as.engineId());
      out.add(t);
    }
    if (late > 0) {
      LOG.info("Slotwise: " + late + " of Python's assignments for " + st.getTrackerName()
          + " went back to it: the heartbeat was past its deadline");
    }
  }

  /** The fallback: jobs by priority then submit time, maps then reduces, while slots are free. */
  private void fifo(TaskTrackerStatus st, List<Task> out) throws IOException {
    int numTrackers = taskTrackerManager.getClusterStatus().getTaskTrackers();
    int hosts = taskTrackerManager.getNumberOfUniqueHosts();
    List<FifoFallback.App<JobInProgress>> order = new ArrayList<>();
    synchronized (this) {
      drainEvents();
      for (JobState s : jobs.values()) {
        order.add(new FifoFallback.App<>(s.job, s.job.getJobID().toString(),
            priorityOf(s.job), s.job.getStartTime()));
      }
    }
    int[] free = {st.getAvailableMapSlots(), st.getAvailableReduceSlots()};
    for (int kind : new int[] {MAP_ASK, REDUCE_ASK}) {
      for (FifoFallback.App<JobInProgress> app : FifoFallback.order(order)) {
        JobInProgress job = app.attempt();
        while (free[kind] > 0 && runnable(job)) {
          Task t = kind == MAP_ASK ? job.obtainNewMapTask(st, numTrackers, hosts)
              : job.obtainNewReduceTask(st, numTrackers, hosts);
          if (t == null) {
            break;
          }
          free[kind]--;
          launched(t, job, st.getTrackerName(), null);
          out.add(t);
        }
      }
    }
  }

  private synchronized void launched(Task t, JobInProgress job, String tracker, String engineId) {
    boolean map = t.isMapTask();
    live.put(t.getTaskID(), new Launch(job.getJobID(), tracker, map));
    deltas.launched(container(t.getTaskID(), job.getJobID(), tracker, map, engineId));
    deltas.appChanged(job.getJobID().toString()); // its pending counts changed
  }

  private static Messages.Container container(TaskAttemptID id, JobID job, String tracker,
      boolean map, String engineId) {
    return new Messages.Container(id.toString(), job.toString(), tracker,
        map ? new Messages.Resource(0, 0, 1, 0) : new Messages.Resource(0, 0, 0, 1), false,
        map ? MAP_ASK : REDUCE_ASK, engineId);
  }

  private static boolean runnable(JobInProgress job) {
    return job.getStatus().getRunState() == JobStatus.RUNNING && job.inited() && job.isSetupFinished();
  }

  /** How a job ended, by its run state (a job removed before it ended: UNDEFINED). */
  static Messages.FinalState finalState(JobInProgress job) {
    int run = job.getStatus().getRunState();
    return run == JobStatus.SUCCEEDED ? Messages.FinalState.SUCCEEDED : run == JobStatus.FAILED
        ? Messages.FinalState.FAILED : run == JobStatus.KILLED ? Messages.FinalState.KILLED : Messages.FinalState.UNDEFINED;
  }

  /** Hadoop's five priorities as the protocol's: NORMAL 0, each step up or down one. */
  static int priorityOf(JobInProgress job) {
    return switch (job.getPriority()) {
      case VERY_HIGH -> 2;
      case HIGH -> 1;
      case NORMAL -> 0;
      case LOW -> -1;
      case VERY_LOW -> -2;
    };
  }

  private Messages.Node nodeOf(TaskTrackerStatus st) {
    String rack = "/default-rack";
    if (taskTrackerManager instanceof JobTracker jt) {
      Node n = jt.getNode(st.getHost());
      if (n != null && n.getNetworkLocation() != null) {
        rack = n.getNetworkLocation();
      }
    }
    return new Messages.Node(st.getTrackerName(), st.getHost(), rack,
        new Messages.Resource(0, 0, st.getMaxMapSlots(), st.getMaxReduceSlots()));
  }

  // ----------------------------------------------------------- the payload

  /**
   * What Python must hear ({@link Deltas}, as the ResourceManager's shim
   * keeps it): the queued job events, tasks that ended, jobs whose asks
   * changed, the given trackers if new or changed; everything if a full
   * payload is due. {@code liveTrackers}, when given (the update thread),
   * removes trackers the JobTracker no longer lists.
   */
  private synchronized String payload(List<Messages.Node> seen, Collection<Messages.Node> liveTrackers,
      List<Messages.Beat> beats) {
    drainEvents();
    sweepFinished(beats == null ? null : beats.get(0).node());
    List<Messages.Node> nodes = new ArrayList<>(seen);
    if (liveTrackers != null) {
      Set<String> ids = new HashSet<>();
      for (Messages.Node n : liveTrackers) {
        ids.add(n.id());
        nodes.add(n);
      }
      for (Iterator<String> it = trackers.keySet().iterator(); it.hasNext();) {
        String id = it.next();
        if (!ids.contains(id)) {
          it.remove();
          deltas.nodeRemoved(id);
        }
      }
    }
    for (Messages.Node n : nodes) {
      if (!n.equals(trackers.put(n.id(), n))) {
        deltas.nodeChanged(n);
      }
    }
    for (JobState s : jobs.values()) { // no event says a job may now run, or now schedules reduces
      boolean r = runnable(s.job);
      boolean reduces = r && s.job.scheduleReduces();
      if (r != s.runnable || reduces != s.reduces) {
        deltas.appChanged(s.job.getJobID().toString());
      }
    }
    Deltas.Taken t = deltas.take();
    List<Messages.App> apps = new ArrayList<>();
    Set<String> changed = new HashSet<>(t.appsChanged());
    for (JobState s : jobs.values()) {
      if (s.rejected == null && (t.full() || changed.contains(s.job.getJobID().toString()))) {
        apps.add(app(s));
      }
    }
    List<Messages.Container> launched = t.launched();
    if (t.full()) {
      launched = new ArrayList<>();
      for (Map.Entry<TaskAttemptID, Launch> e : live.entrySet()) {
        Launch l = e.getValue();
        launched.add(container(e.getKey(), l.job(), l.tracker(), l.map(), null));
      }
    }
    return Wire.write(t.payload(t.full() ? new ArrayList<>(trackers.values()) : t.nodes(), apps, launched,
        beats, link.episodesToReport(), null));
  }

  /** Job events from the listeners, in order (under this). */
  private void drainEvents() {
    for (Object[] e; (e = events.poll()) != null;) {
      JobInProgress job = (JobInProgress) e[1];
      if (e[0].equals("add")) {
        JobState s = new JobState(job, (String) e[2], (String) e[3]);
        jobs.put(job.getJobID(), s);
        if (s.rejected == null) {
          deltas.appChanged(job.getJobID().toString());
        }
      } else if (e[0].equals("update")) {
        if (jobs.containsKey(job.getJobID())) {
          deltas.appChanged(job.getJobID().toString()); // its priority or run state
        }
      } else if (jobs.remove(job.getJobID()) != null) {
        deltas.appRemoved(job.getJobID().toString(), finalState(job));
        live.values().removeIf(l -> l.job().equals(job.getJobID()));
      }
    }
  }

  /** Tasks that ended (on one tracker, or all): finished for Python. */
  private void sweepFinished(String trackerOnly) {
    for (Iterator<Map.Entry<TaskAttemptID, Launch>> it = live.entrySet().iterator(); it.hasNext();) {
      Map.Entry<TaskAttemptID, Launch> e = it.next();
      Launch l = e.getValue();
      if (trackerOnly != null && !trackerOnly.equals(l.tracker())) {
        continue;
      }
      JobState s = jobs.get(l.job());
      TaskInProgress tip = s == null ? null : s.job.getTaskInProgress(e.getKey().getTaskID());
      // Active from its launch (before the tracker first reports a status) until it ends.
      boolean active = tip != null && tip.getActiveTasks().containsKey(e.getKey());
      TaskStatus ts = active ? tip.getTaskStatus(e.getKey()) : null;
      if (!active || (ts != null && !occupiesSlot(ts.getRunState()))) {
        it.remove();
        deltas.finished(e.getKey().toString());
        deltas.appChanged(l.job().toString());
      }
    }
  }

  private static boolean occupiesSlot(TaskStatus.State state) {
    return switch (state) {
      case RUNNING, UNASSIGNED, COMMIT_PENDING, FAILED_UNCLEAN, KILLED_UNCLEAN -> true;
      default -> false;
    };
  }

  /** A job as the protocol's App: a map request (with its splits' hosts and racks) and a reduce one. */
  private Messages.App app(JobState s) {
    JobInProgress job = s.job;
    List<Messages.Request> requests = new ArrayList<>();
    s.known = true;
    s.runnable = runnable(job);
    s.reduces = s.runnable && job.scheduleReduces();
    if (s.runnable) {
      int maps = job.pendingMaps();
      if (maps > 0) {
        Map<String, Integer> hosts = new HashMap<>();
        Map<String, Integer> racks = new HashMap<>();
        for (TaskInProgress tip : job.getTasks(TaskType.MAP)) {
          if (tip.isRunning() || tip.isComplete() || tip.isFailed()) {
            continue;
          }
          for (String h : tip.getSplitLocations()) {
            hosts.merge(h, 1, Integer::sum);
            Node n = taskTrackerManager instanceof JobTracker jt ? jt.getNode(h) : null;
            racks.merge(n == null ? "/default-rack" : n.getNetworkLocation(), 1, Integer::sum);
          }
        }
        requests.add(new Messages.Request(MAP_ASK, new Messages.Resource(0, 0, 1, 0), maps,
            hosts.isEmpty() ? null : hosts, racks.isEmpty() ? null : racks, true, null));
      }
      int reduces = s.reduces ? job.pendingReduces() : 0;
      if (reduces > 0) {
        requests.add(new Messages.Request(REDUCE_ASK, new Messages.Resource(0, 0, 0, 1), reduces, null, null,
            true, null));
      }
    }
    return new Messages.App(job.getJobID().toString(), job.getProfile().getUser(),
        job.getProfile().getJobName(), s.pool, priorityOf(job), job.getStartTime(),
        true, requests);
  }

  // --------------------------------------------------------- the update loop

  private void updateLoop() {
    while (running) {
      try {
        synchronized (wake) {
          if (!woken) {
            wake.wait(updateInterval);
          }
          woken = false;
        }
        update();
      } catch (InterruptedException e) {
        return;
      } catch (Throwable t) {
        LOG.warn("Slotwise: update failed", t);
      }
    }
  }

  /** One update call: the trackers' snapshot is taken first, outside the call lock. */
  void update() {
    List<Messages.Node> nodes = new ArrayList<>();
    for (TaskTrackerStatus st : taskTrackerManager.taskTrackers()) {
      nodes.add(nodeOf(st));
    }
    long deadline = link.isCold() ? PolicyLink.WARMUP_MS : link.getTimeoutMs();
    Messages.UpdateAnswer a = null;
    try (PolicyLink.Turn turn = link.turn("update", deadline)) {
      a = turn == null ? null : turn.send(payload(List.of(), nodes, null), Messages.UpdateAnswer.class);
      if (a != null) {
        if (a.resync()) {
          deltas.requireFull();
        }
        initJobs(new HashSet<>(a.waiting()));
      }
    }
    if (a == null && !link.hasPolicy()) {
      initJobs(null);
    }
    if (a != null && !a.preempt().isEmpty()) {
      preempt(a.preempt());
    }
  }

  /**
   * Starts initialising the jobs that may run, as the original Fair
   * Scheduler does: those Python knows and does not hold back ({@code
   * waiting}: its running-job limits), or every job when Python is not there
   * to say (null). A job Python's place refused fails with its reason.
   */
  private synchronized void initJobs(Set<String> waiting) {
    drainEvents();
    for (JobState s : jobs.values()) {
      if (s.init || s.job.inited()) {
        continue;
      }
      if (s.rejected != null) {
        s.init = true;
        JobInProgress job = s.job;
        String why = "Rejected by the Slotwise policy: " + s.rejected;
        LOG.info("Slotwise: " + job.getJobID() + ": " + why);
        initializer.execute(() -> {
          job.getStatus().setFailureInfo(why);
          taskTrackerManager.failJob(job);
        });
      } else if (waiting == null || (s.known && !waiting.contains(s.job.getJobID().toString()))) {
        s.init = true;
        JobInProgress job = s.job;
        initializer.execute(() -> taskTrackerManager.initJob(job));
      }
    }
  }

  /** Kills the tasks Python names (a warning-only preemption has no MRv1 meaning: skipped). */
  private void preempt(List<Messages.Preemption> victims) {
    synchronized (taskTrackerManager) {
      for (Messages.Preemption p : victims) {
        if (!p.kill()) {
          continue;
        }
        TaskAttemptID id;
        try {
          id = TaskAttemptID.forName(p.container());
        } catch (IllegalArgumentException e) {
          continue;
        }
        JobState s;
        synchronized (this) {
          s = jobs.get(id.getJobID());
        }
        TaskInProgress tip = s == null ? null : s.job.getTaskInProgress(id.getTaskID());
        if (tip != null && tip.isRunningTask(id)) {
          LOG.info("Slotwise: preempting " + id + " of " + id.getJobID() + " (pool " + s.pool + ")");
          tip.killTask(id, false);
        }
      }
    }
  }

  // --------------------------------------------------------------- Python side

  /** The gateway and the link to Python (registration, status). */
  public ShimRuntime runtime() {
    return runtime;
  }

  /** A policy registered: its first call (a full update, which opens the callback connection) at once. */
  @Override
  public void registered() {
    synchronized (wake) {
      woken = true;
      wake.notifyAll();
    }
  }

  /**
   * An operator's move (serve's API, UI or this JobTracker's /scheduler page,
   * through the gateway). The JobTracker has no pools of its own, so, as in
   * Hadoop 1's Fair Scheduler, the move is the scheduler's: Python's move
   * decides and the job's pool here follows its answer before another
   * payload is built.
   */
  @Override
  public Messages.MoveAnswer adminMove(String app, String queue) {
    JobState s = running(app);
    if (s == null) {
      return new Messages.MoveAnswer(null, "the JobTracker has no running job " + app);
    }
    Messages.MoveAnswer a;
    try (PolicyLink.Turn turn = link.turn("move")) {
      a = turn == null ? null : turn.send(Wire.write(new Messages.MoveRequest(app, queue)), Messages.MoveAnswer.class);
      if (a != null && a.queue() != null) {
        synchronized (this) {
          s.pool = pool(a.queue());
          deltas.appChanged(app);
        }
        LOG.info("Slotwise: " + app + " moved to " + a.queue() + " by an operator");
      }
    }
    return a != null ? a
        : new Messages.MoveAnswer(null, "the Slotwise policy did not answer (" + link.getLastFailure() + ")");
  }

  /** An operator's priority, -2 (VERY_LOW) to 2 (VERY_HIGH), set as {@code hadoop job -set-priority} sets it. */
  @Override
  public Messages.PriorityAnswer adminPriority(String app, int priority) {
    JobState s = running(app);
    if (s == null) {
      return new Messages.PriorityAnswer(null, "the JobTracker has no running job " + app);
    }
    if (priority < -2 || priority > 2) {
      return new Messages.PriorityAnswer(null, "an MRv1 priority is -2 (VERY_LOW) to 2 (VERY_HIGH), not " + priority);
    }
    JobPriority p = JobPriority.values()[2 - priority]; // VERY_HIGH, HIGH, NORMAL, LOW, VERY_LOW
    try {
      if (taskTrackerManager instanceof JobTracker jt) {
        jt.setJobPriority(s.job.getJobID(), p);
      } else {
        s.job.setPriority(p);
      }
    } catch (IOException e) {
      return new Messages.PriorityAnswer(null, "the JobTracker refused: " + e.getMessage());
    }
    deltas.appChanged(app); // as the JobTracker's PRIORITY_CHANGED event would say
    return new Messages.PriorityAnswer(priorityOf(s.job), null);
  }

  /** The job of that id the shim schedules, or null (also for an id that is not a job's). */
  private synchronized JobState running(String app) {
    drainEvents();
    try {
      return jobs.get(JobID.forName(app));
    } catch (IllegalArgumentException e) {
      return null;
    }
  }
}
