package org.apache.hadoop.mapred;

import java.io.IOException;
import java.util.*;
import java.util.concurrent.*;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.mapreduce.TaskType;
import org.apache.hadoop.mapreduce.server.jobtracker.TaskTracker;
import org.apache.hadoop.net.NetworkTopology;
import org.apache.hadoop.net.Node;
import org.slotwise.shim.FifoFallback;
import org.slotwise.shim.Messages;
import org.slotwise.shim.Messages.Reason;
import org.slotwise.shim.PolicyLink;
import org.slotwise.shim.PolicyLink.Deltas;
import org.slotwise.shim.ShimRuntime;

/**
 * The MRv1 JobTracker's scheduler, with its policy in Python: one call per
 * TaskTracker heartbeat ({@link #assignTasks}), an update call every {@code
 * slotwise.update.interval-ms} ({@link #update}), and a FIFO when Python does
 * not answer in time. docs/mrv1.md follows a heartbeat through it.
 *
 * <p>Locking: the JobTracker's listeners (it may call them under a job's
 * lock) never take {@code this}: they change only the concurrent maps of
 * jobs and tasks and {@link Deltas} (a leaf lock). {@code this} guards the
 * rest of the shim's view and is taken under PolicyLink's call lock, never
 * around a call to the JobTracker's synchronized methods from the update
 * thread.
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
  /** The request keys of a job's two asks; which kind of task an answer starts is its resource. */
  static final int MAP_ASK = 0;
  static final int REDUCE_ASK = 1;

  /** A job Python placed; runnable and reduces change its asks with no event, so are compared with what was sent. */
  private static final class JobState {
    final JobInProgress job;
    final String id;
    volatile String pool; // an operator's move changes it
    boolean known; // sent to Python at least once
    boolean init; // its initialisation was asked for
    boolean runnable; // as last sent
    boolean reduces; // as last sent

    JobState(JobInProgress job, String pool) {
      this.job = job;
      this.id = job.getJobID().toString();
      this.pool = pool;
    }
  }

  /** A task this shim launched (Python's or the FIFO's), until it ends. */
  private record Launch(TaskAttemptID id, JobState job, String tracker) {
    Messages.Container container(String engineId) {
      boolean map = id.getTaskID().isMap();
      return new Messages.Container(id.toString(), job.id, tracker, slots(map ? 1 : 0, map ? 0 : 1), false,
          map ? MAP_ASK : REDUCE_ASK, engineId);
    }
  }

  private final Deltas deltas = new Deltas();
  private final Map<String, JobState> jobs = new ConcurrentSkipListMap<>(); // by id: in submission order
  private final Map<String, Launch> live = new ConcurrentHashMap<>(); // by task attempt id
  private final Map<String, Messages.Node> trackers = new HashMap<>(); // guarded by this
  private final AtomicBoolean updateDue = new AtomicBoolean(); // one queued: another would add nothing
  private final ScheduledExecutorService updater = Executors.newSingleThreadScheduledExecutor(daemon("slotwise-update"));
  private volatile ExecutorService initializer;
  private volatile ShimRuntime runtime;
  private PolicyLink link;
  private final AtomicLong lastSlowLogMs = new AtomicLong();
  private final AtomicLong slowHeartbeats = new AtomicLong(); // past the deadline since the last slow line
  private final Listener listener = new Listener();

  @Override
  public synchronized void start() throws IOException {
    Configuration c = getConf();
    initializer = Executors.newFixedThreadPool(Math.max(1, c.getInt(INIT_THREADS, 4)), daemon("slotwise-init"));
    runtime = new ShimRuntime(c::get, Messages.Kind.MRV1,
        () -> c.getBoolean(PREEMPTION, false), DEFAULT_TIMEOUT_MS, deltas::requireFull, null, this);
    link = runtime.link();
    taskTrackerManager.addJobInProgressListener(listener);
    warmUp(Integer.getInteger("slotwise.warm-up.rounds", 1000));
    runtime.start(c.get("hadoop.tmp.dir", System.getProperty("java.io.tmpdir")));
    if (taskTrackerManager instanceof JobTracker jt && jt.infoServer != null) {
      jt.infoServer.setAttribute(SlotwiseSchedulerServlet.ATTRIBUTE, runtime);
      jt.infoServer.addServlet("slotwise", "/scheduler", SlotwiseSchedulerServlet.class);
    }
    long every = runtime.updateInterval();
    updater.scheduleWithFixedDelay(this::update, every, every, TimeUnit.MILLISECONDS);
  }

  private static ThreadFactory daemon(String name) {
    return r -> {
      Thread t = new Thread(r, name);
      t.setDaemon(true);
      return t;
    };
  }

  /**
   * Every record a heartbeat or an update writes or reads, {@code rounds} times: Jackson's (de)serializers, the
   * JVM's reflection accessors and JIT compilations of that code are made here, not inside the JobTracker's lock.
   */
  static void warmUp(int rounds) {
    Messages.Resource one = slots(1, 0);
    Messages.Payload p = new Messages.Payload(true, 1, List.of(new Messages.Node("t", "h", "/r", one)), List.of("t"),
        List.of(new Messages.App("j", "u", "n", "q", 0, 0, true, List.of(new Messages.Request(MAP_ASK, one, 1,
            Map.of("h", 1), Map.of("/r", 1), true, null)), null)), List.of("j"), List.of(new Messages.Container("c", "j",
            "t", one, false, MAP_ASK, "e")), List.of(new Messages.Refusal("e", Reason.NO_TASK)), List.of("c"),
        List.of(new Messages.Beat("t", one)), null, null, List.of(new Messages.AppEnd("j", Messages.FinalState.FAILED)));
    for (int i = 0; i < rounds; i++) {
      PolicyLink.write(p);
      PolicyLink.read("{\"assign\": [{\"app\": \"j\", \"node\": \"t\", \"priority\": 0, \"locality\": \"node_local\", "
          + "\"engine_id\": \"e\", \"resource\": {\"map_slots\": 1}}]}", Messages.HeartbeatAnswer.class);
      PolicyLink.read("{\"preempt\": [{\"container\": \"c\", \"kill\": true}], \"waiting\": [\"j\"]}", Messages.UpdateAnswer.class);
    }
  }

  /**
   * Not under {@code this}: stopping the link takes its call lock, which an
   * update under way holds while it waits for {@code this} (the lock order).
   */
  @Override
  public void terminate() throws IOException {
    updater.shutdownNow();
    if (runtime != null) {
      runtime.stop();
      initializer.shutdownNow();
    }
    taskTrackerManager.removeJobInProgressListener(listener);
    super.terminate();
  }

  /**
   * A new job's place call (Python's rules and ACLs) wakes the update thread,
   * whose call carries the job to Python and whose answer lets it be
   * initialised at once; a job Python refuses fails, and Python never hears of it.
   */
  private final class Listener extends JobInProgressListener {
    @Override
    public void jobAdded(JobInProgress job) {
      String asked = poolOf(job);
      String id = job.getJobID().toString();
      Messages.PlaceAnswer a = null;
      try (PolicyLink.Turn turn = link.turn("place")) {
        a = turn == null ? null : turn.send(PolicyLink.write(new Messages.PlaceRequest(id, job.getProfile().getUser(),
            asked, List.of(), priorityOf(job))), Messages.PlaceAnswer.class);
      }
      if (a != null && a.reject() != null) {
        String why = "Rejected by the Slotwise policy: " + a.reject();
        LOG.info("Slotwise: " + id + ": " + why);
        initializer.execute(() -> {
          job.getStatus().setFailureInfo(why);
          taskTrackerManager.failJob(job);
        });
        return;
      }
      jobs.put(id, new JobState(job, a == null ? asked : a.queue()));
      deltas.appChanged(id);
      if (link.hasPolicy()) {
        registered(); // without one, the next heartbeat initialises it (initJobs(null))
      }
    }

    @Override
    public void jobRemoved(JobInProgress job) {
      String id = job.getJobID().toString();
      live.values().removeIf(l -> l.job().id.equals(id)); // first: no payload lists a task of a job it left out
      if (jobs.remove(id) != null) {
        deltas.appRemoved(id, finalState(job));
      }
    }

    @Override
    public void jobUpdated(JobChangeEvent event) {
      JobInProgress job = event.getJobInProgress();
      if (job.isComplete()) {
        jobRemoved(job);
      } else {
        deltas.appChanged(job.getJobID().toString()); // its priority or run state
      }
    }
  }

  /**
   * The pool a job asks for, as Hadoop 1's FairScheduler reads it (Python's
   * place decides where it goes). A name past the protocol's bound is cut by
   * the records that carry it.
   */
  String poolOf(JobInProgress job) {
    JobConf jc = job.getJobConf();
    String p = jc.get(EXPLICIT_POOL, jc.get(getConf().get(POOL_NAME_PROPERTY, "user.name"), "default"));
    return p.isBlank() ? "default" : p.trim();
  }

  @Override
  public Collection<JobInProgress> getJobs(String queue) {
    return jobs.values().stream().map(s -> s.job).toList();
  }

  /**
   * One TaskTracker heartbeat, top to bottom, inside the JobTracker's lock:
   * the payload, the call and Python's assignments carried out, all within
   * the deadline ({@code slotwise.policy.timeout-ms}, from entry); or, if the
   * call fails, the FIFO.
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
    // A new policy's warm-up update holds the line up to PolicyLink.WARMUP_MS: the FIFO meanwhile.
    try (PolicyLink.Turn turn = link.hasPolicy() && link.isCold() ? null : link.turn("heartbeat")) {
      at[0] = System.nanoTime();
      if (turn != null) {
        String payload = payload(List.of(node), false,
            new Messages.Beat(node.id(), slots(st.getAvailableMapSlots(), st.getAvailableReduceSlots())));
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

  /** A heartbeat past its deadline: where the time went and how many since the last line, once a minute at most. */
  private void slow(long entered, long[] at, long done, boolean fifo) {
    long now = System.currentTimeMillis();
    long last = lastSlowLogMs.get();
    long n = slowHeartbeats.incrementAndGet();
    if (now - last < 60_000 || !lastSlowLogMs.compareAndSet(last, now)) {
      return;
    }
    slowHeartbeats.addAndGet(-n);
    LOG.warn(String.format("Slotwise: assignTasks took %.1f ms, past its %d ms deadline, inside the "
        + "JobTracker's lock (%d past it since the last such line, this one included): waiting for the line "
        + "to Python %.1f ms, building the payload %.1f ms, the call %.1f ms, carrying out the answer %.1f ms%s "
        + "(later ones are logged a minute on)", (done - entered) / 1e6, link.getTimeoutMs(), n,
        (at[0] - entered) / 1e6,
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
    int[] free = {st.getAvailableMapSlots(), st.getAvailableReduceSlots()};
    for (Messages.Assignment as : a.assign()) {
      JobState s = jobs.get(as.app());
      int kind = as.resource() != null && as.resource().mapSlots() > 0 ? MAP_ASK : REDUCE_ASK;
      Reason refused = as.resource() == null || System.nanoTime() > deadline ? Reason.ERROR
          : s == null || !runnable(s.job) ? Reason.NO_ATTEMPT
          : !as.node().equals(st.getTrackerName()) ? Reason.NO_NODE : free[kind] <= 0 ? Reason.NO_ROOM : null;
      Task t = null;
      try {
        t = refused == null ? obtain(s.job, st, kind, as.locality()) : null;
      } catch (IOException e) {
        LOG.warn("Slotwise: " + as.app() + " could not give a task: " + e);
        refused = Reason.ERROR;
      }
      if (t == null) {
        deltas.rejected(as.engineId(), refused == null ? Reason.NO_TASK : refused);
        deltas.appChanged(as.app()); // re-sent with the refusal: Python took the ask when it assigned
        continue;
      }
      free[kind]--;
      launched(t, s, st.getTrackerName(), as.engineId());
      out.add(t);
    }
  }

  /** A task of this kind from the job, by the JobInProgress method of the locality level. */
  private Task obtain(JobInProgress job, TaskTrackerStatus st, int kind, Messages.Locality level)
      throws IOException {
    int n = taskTrackerManager.getClusterStatus().getTaskTrackers();
    int hosts = taskTrackerManager.getNumberOfUniqueHosts();
    return kind == REDUCE_ASK ? job.obtainNewReduceTask(st, n, hosts) : switch (level) {
      case NODE_LOCAL -> job.obtainNewNodeLocalMapTask(st, n, hosts);
      case RACK_LOCAL -> job.obtainNewNodeOrRackLocalMapTask(st, n, hosts);
      case OFF_SWITCH -> job.obtainNewMapTask(st, n, hosts);
    };
  }

  /** The fallback: jobs by priority then submit time, maps then reduces, while slots are free. */
  private void fifo(TaskTrackerStatus st, List<Task> out) throws IOException {
    List<FifoFallback.App<JobState>> order = new ArrayList<>();
    for (JobState s : jobs.values()) {
      order.add(new FifoFallback.App<>(s, s.id, priorityOf(s.job), s.job.getStartTime()));
    }
    order = FifoFallback.order(order);
    int[] free = {st.getAvailableMapSlots(), st.getAvailableReduceSlots()};
    for (int kind : new int[] {MAP_ASK, REDUCE_ASK}) {
      for (FifoFallback.App<JobState> app : order) {
        Task t;
        while (free[kind] > 0 && runnable(app.attempt().job)
            && (t = obtain(app.attempt().job, st, kind, Messages.Locality.OFF_SWITCH)) != null) {
          free[kind]--;
          launched(t, app.attempt(), st.getTrackerName(), null);
          out.add(t);
        }
      }
    }
  }

  private synchronized void launched(Task t, JobState s, String tracker, String engineId) {
    Launch l = new Launch(t.getTaskID(), s, tracker);
    live.put(t.getTaskID().toString(), l);
    deltas.launched(l.container(engineId));
    deltas.appChanged(s.id); // its pending counts changed
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

  /** Hadoop's five priorities (VERY_HIGH first) as the protocol's: NORMAL 0, each step up or down one. */
  static int priorityOf(JobInProgress job) {
    return 2 - job.getPriority().ordinal();
  }

  private static Messages.Resource slots(int maps, int reduces) {
    return new Messages.Resource(0, 0, maps, reduces);
  }

  private String rackOf(String host) {
    Node n = taskTrackerManager instanceof JobTracker jt ? jt.getNode(host) : null;
    return n == null || n.getNetworkLocation() == null ? NetworkTopology.DEFAULT_RACK : n.getNetworkLocation();
  }

  private Messages.Node nodeOf(TaskTrackerStatus st) {
    return new Messages.Node(st.getTrackerName(), st.getHost(), rackOf(st.getHost()),
        slots(st.getMaxMapSlots(), st.getMaxReduceSlots()));
  }

  /**
   * What Python must hear since the last call ({@link Deltas}), or everything
   * if a full payload is due. With {@code all} (the update thread), {@code
   * nodes} is every tracker the JobTracker lists: the others are gone.
   */
  private synchronized String payload(List<Messages.Node> nodes, boolean all, Messages.Beat beat) {
    sweepFinished(beat == null ? null : beat.node());
    if (all) {
      Set<String> ids = new HashSet<>(nodes.stream().map(Messages.Node::id).toList());
      trackers.keySet().stream().filter(id -> !ids.contains(id)).forEach(deltas::nodeRemoved);
      trackers.keySet().retainAll(ids);
    }
    for (Messages.Node n : nodes) {
      if (!n.equals(trackers.put(n.id(), n))) {
        deltas.nodeChanged(n);
      }
    }
    for (JobState s : jobs.values()) { // no event says a job may now run, or now schedules reduces
      boolean r = runnable(s.job);
      if (r != s.runnable || (r && s.job.scheduleReduces()) != s.reduces) {
        deltas.appChanged(s.id);
      }
    }
    Deltas.Taken t = deltas.take();
    Set<String> changed = new HashSet<>(t.appsChanged());
    List<Messages.App> apps = new ArrayList<>();
    for (JobState s : jobs.values()) {
      if (t.full() || changed.contains(s.id)) {
        apps.add(app(s));
      }
    }
    return PolicyLink.write(t.payload(t.full() ? new ArrayList<>(trackers.values()) : t.nodes(), apps,
        t.full() ? live.values().stream().map(l -> l.container(null)).toList() : t.launched(),
        beat == null ? null : List.of(beat), link.episodesToReport(), null));
  }

  /** Tasks that ended (on one tracker, or all): finished for Python. */
  private void sweepFinished(String tracker) {
    for (Iterator<Launch> it = live.values().iterator(); it.hasNext();) {
      Launch l = it.next();
      if (tracker != null && !tracker.equals(l.tracker())) {
        continue;
      }
      TaskInProgress tip = l.job().job.getTaskInProgress(l.id().getTaskID());
      // Active from its launch (before the tracker first reports a status) until it ends.
      boolean active = tip != null && tip.getActiveTasks().containsKey(l.id());
      TaskStatus ts = active ? tip.getTaskStatus(l.id()) : null;
      if (!active || (ts != null && !OCCUPY_SLOT.contains(ts.getRunState()))) {
        it.remove();
        deltas.finished(l.id().toString());
        deltas.appChanged(l.job().id);
      }
    }
  }

  private static final Set<TaskStatus.State> OCCUPY_SLOT = EnumSet.of(TaskStatus.State.RUNNING,
      TaskStatus.State.UNASSIGNED, TaskStatus.State.COMMIT_PENDING, TaskStatus.State.FAILED_UNCLEAN,
      TaskStatus.State.KILLED_UNCLEAN);

  /** A job as the protocol's App: a map request (with its splits' hosts and racks) and a reduce one. */
  private Messages.App app(JobState s) {
    JobInProgress job = s.job;
    List<Messages.Request> requests = new ArrayList<>();
    s.known = true;
    s.runnable = runnable(job);
    s.reduces = s.runnable && job.scheduleReduces();
    int maps = s.runnable ? job.pendingMaps() : 0;
    if (maps > 0) {
      Map<String, Integer> hosts = new HashMap<>();
      Map<String, Integer> racks = new HashMap<>();
      for (TaskInProgress tip : job.getTasks(TaskType.MAP)) {
        if (!tip.isRunning() && !tip.isComplete() && !tip.isFailed()) {
          for (String h : tip.getSplitLocations()) {
            hosts.merge(h, 1, Integer::sum);
            racks.merge(rackOf(h), 1, Integer::sum);
          }
        }
      }
      requests.add(new Messages.Request(MAP_ASK, slots(1, 0), maps, hosts, racks, true, null));
    }
    int reduces = s.reduces ? job.pendingReduces() : 0;
    if (reduces > 0) {
      requests.add(new Messages.Request(REDUCE_ASK, slots(0, 1), reduces, null, null, true, null));
    }
    return new Messages.App(s.id, job.getProfile().getUser(), job.getProfile().getJobName(), s.pool,
        priorityOf(job), job.getStartTime(), true, requests, null);
  }

  /** One update call (the trackers' snapshot first, outside the call lock), and what its answer says. */
  void update() {
    updateDue.set(false);
    try {
      List<Messages.Node> nodes = taskTrackerManager.taskTrackers().stream().map(this::nodeOf).toList();
      Messages.UpdateAnswer a = null;
      try (PolicyLink.Turn turn = link.turn("update", link.isCold() ? PolicyLink.WARMUP_MS : link.getTimeoutMs())) {
        a = turn == null ? null : turn.send(payload(nodes, true, null), Messages.UpdateAnswer.class);
        if (a != null) {
          if (a.resync()) {
            deltas.requireFull();
          }
          initJobs(new HashSet<>(a.waiting()));
        }
      }
      if (a != null) {
        preempt(a.preempt()); // after the turn: killTask takes the JobTracker's lock, which heartbeats hold
      } else if (!link.hasPolicy()) {
        initJobs(null);
      }
    } catch (Throwable t) { // the thread goes on: a bug must not stop the updates
      LOG.warn("Slotwise: update failed", t);
    }
  }

  /**
   * Starts initialising the jobs that may run, as the original Fair
   * Scheduler does: those Python knows and does not hold back ({@code
   * waiting}: its running-job limits), or every job when Python is not there
   * to say (null).
   */
  private synchronized void initJobs(Set<String> waiting) {
    for (JobState s : jobs.values()) {
      if (!s.init && !s.job.inited() && (waiting == null || (s.known && !waiting.contains(s.id)))) {
        s.init = true;
        initializer.execute(() -> taskTrackerManager.initJob(s.job));
      }
    }
  }

  /**
   * Kills the tasks Python names, as {@code hadoop job -kill-task} does (the
   * JobTracker's lock, then the task's); a warning-only preemption has no
   * MRv1 meaning and is skipped.
   */
  private void preempt(List<Messages.Preemption> victims) throws IOException {
    for (Messages.Preemption p : victims) {
      Launch l = p.kill() ? live.get(p.container()) : null;
      if (l != null && taskTrackerManager.killTask(l.id(), false)) {
        LOG.info("Slotwise: preempted " + l.id() + " (pool " + l.job().pool + ")");
      }
    }
  }

  public ShimRuntime runtime() {
    return runtime;
  }

  /** A policy registered, or a job came: an update call at once (one already queued serves both). */
  @Override
  public void registered() {
    if (updateDue.compareAndSet(false, true)) {
      updater.execute(this::update);
    }
  }

  /**
   * An operator's move. The JobTracker has no pools, so, as in Hadoop 1's
   * Fair Scheduler, the move is the scheduler's: Python's move decides and
   * the job's pool follows its answer before another payload is built.
   */
  @Override
  public Messages.MoveAnswer adminMove(String app, String queue) {
    JobState s = jobs.get(app);
    if (s == null) {
      return new Messages.MoveAnswer(null, "the JobTracker has no running job " + app);
    }
    Messages.MoveAnswer a;
    try (PolicyLink.Turn turn = link.turn("move")) {
      a = turn == null ? null : turn.send(PolicyLink.write(new Messages.MoveRequest(app, queue)), Messages.MoveAnswer.class);
      if (a != null && a.queue() != null) {
        s.pool = a.queue();
        deltas.appChanged(app);
        LOG.info("Slotwise: " + app + " moved to " + a.queue() + " by an operator");
      }
    }
    return a != null ? a
        : new Messages.MoveAnswer(null, "the Slotwise policy did not answer (" + link.getLastFailure() + ")");
  }

  /** An operator's priority, -2 (VERY_LOW) to 2 (VERY_HIGH), set as {@code hadoop job -set-priority} sets it. */
  @Override
  public Messages.PriorityAnswer adminPriority(String app, int priority) {
    JobState s = jobs.get(app);
    if (s == null || priority < -2 || priority > 2) {
      return new Messages.PriorityAnswer(null, s == null ? "the JobTracker has no running job " + app
          : "an MRv1 priority is -2 (VERY_LOW) to 2 (VERY_HIGH), not " + priority);
    }
    JobPriority p = JobPriority.values()[2 - priority];
    try {
      if (taskTrackerManager instanceof JobTracker jt) {
        jt.setJobPriority(s.job.getJobID(), p);
      } else {
        s.job.setPriority(p); // a test's TaskTrackerManager
      }
    } catch (IOException e) {
      return new Messages.PriorityAnswer(null, "the JobTracker refused: " + e.getMessage());
    }
    deltas.appChanged(app); // as the JobTracker's PRIORITY_CHANGED event would say
    return new Messages.PriorityAnswer(priorityOf(s.job), null);
  }
}
