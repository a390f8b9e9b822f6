package org.apache.hadoop.mapred;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.mapreduce.TaskType;
import org.apache.hadoop.mapreduce.server.jobtracker.TaskTracker;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slotwise.shim.Messages;
import org.slotwise.shim.PolicyLink;
import org.slotwise.shim.PolicyServer;
import org.slotwise.shim.ShimRuntime;

/**
 * SlotwiseTaskScheduler on a fake TaskTrackerManager and fake jobs (the
 * scaffolding Hadoop 1's own scheduler tests use), with a fake Python
 * answering over the real PolicyLink: what a heartbeat sends, which
 * JobInProgress method each locality level calls, what a refusal carries
 * back, where a job's pool comes from, which jobs are initialised, and the
 * FIFO with no Python.
 */
class SlotwiseTaskSchedulerTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String TRACKER = "tracker_h1:h1/127.0.0.1:4000";

  /** Hadoop 1's own fake JobTracker (hadoop-test): JobInProgress reads its queues. */
  static JobTracker jobTracker;

  @TempDir
  Path dir;
  private final FakeManager manager = new FakeManager();
  private final FakePython python = new FakePython();
  private SlotwiseTaskScheduler scheduler;

  @BeforeAll
  static void jobTracker(@TempDir Path tmp) throws Exception {
    JobConf c = new JobConf();
    c.set("mapred.job.tracker", "localhost:0");
    c.set("mapred.job.tracker.http.address", "127.0.0.1:0");
    c.set("hadoop.tmp.dir", tmp.toString());
    jobTracker = new FakeObjectUtilities.FakeJobTracker(c, new Clock(), new String[] {TRACKER});
  }

  @BeforeEach
  void start() throws IOException {
    Configuration c = new Configuration(false);
    c.set(ShimRuntime.GATEWAY_PORT, "0");
    c.set(ShimRuntime.TOKEN_FILE, dir.resolve("gateway.token").toString());
    c.set(ShimRuntime.INFO_FILE, dir.resolve("gateway.json").toString());
    c.set(ShimRuntime.TIMEOUT_MS, "10000");
    c.set(ShimRuntime.UPDATE_INTERVAL_MS, "3600000"); // the test calls update() itself
    scheduler = new SlotwiseTaskScheduler();
    scheduler.setConf(c);
    scheduler.setTaskTrackerManager(manager);
    scheduler.start();
  }

  @AfterEach
  void stop() throws IOException {
    scheduler.terminate();
  }

  /** A policy registered and warm: its first call (the update it wakes) answered; heartbeats use the FIFO until then. */
  private void register() throws InterruptedException {
    scheduler.runtime().registerPolicy(python, PolicyLink.write(new Messages.Register(Messages.PROTOCOL, 40004,
        "t".repeat(64), false, new Messages.ServerInfo(4, "host", "/pools.xml", 0, "test", null))));
    waitFor("the warm-up update", () -> !scheduler.runtime().link().isCold());
  }

  private static String assign(FakeJob job, String locality, boolean map, String engineId) {
    return "{\"app\": \"" + job.getJobID() + "\", \"node\": \"" + TRACKER + "\", \"priority\": 0, "
        + "\"locality\": \"" + locality + "\", \"engine_id\": \"" + engineId + "\", \"resource\": "
        + (map ? "{\"map_slots\": 1}" : "{\"reduce_slots\": 1}") + "}";
  }

  private List<Task> beat(int freeMaps, int freeReduces) throws IOException {
    TaskTracker t = new TaskTracker(TRACKER);
    t.setStatus(new TaskTrackerStatus(TRACKER, "h1", 50060, new ArrayList<>(), 0, 0, freeMaps, freeReduces));
    return scheduler.assignTasks(t);
  }

  private static void waitFor(String what, java.util.function.BooleanSupplier done) throws InterruptedException {
    long end = System.nanoTime() + 10_000_000_000L;
    while (!done.getAsBoolean()) {
      assertTrue(System.nanoTime() < end, "timed out waiting for " + what);
      Thread.sleep(10);
    }
  }

  // ------------------------------------------------------------------ tests

  @Test
  void eachLocalityLevelCallsItsOwnObtainMethodAndTheResourceSaysMapOrReduce() throws Exception {
    register();
    FakeJob job = manager.add(new FakeJob(1, conf("ann"), 3, 1, true));
    python.heartbeat = p -> "{\"assign\": [" + assign(job, "node_local", true, "e1") + ", "
        + assign(job, "rack_local", true, "e2") + ", " + assign(job, "off_switch", true, "e3") + ", "
        + assign(job, "off_switch", false, "e4") + "]}";
    List<Task> got = beat(3, 1);
    assertEquals(List.of("node-local map", "node-or-rack-local map", "any map", "reduce"), job.calls);
    assertEquals(4, got.size());
    assertEquals(List.of(true, true, true, false), got.stream().map(Task::isMapTask).toList());
  }

  @Test
  void aHeartbeatSendsTheJobsAsksByResourceAndTheTrackersFreeSlots() throws Exception {
    register();
    FakeJob job = manager.add(new FakeJob(1, conf("ann"), 3, 2, true));
    python.heartbeat = p -> "{}";
    beat(2, 1);
    JsonNode payload = python.last("heartbeat");
    JsonNode app = null; // in this call or in the full update that followed the registration
    for (String call : List.of("update", "heartbeat")) {
      for (JsonNode p : python.calls(call)) {
        for (JsonNode a : p.path("apps")) {
          app = a;
        }
      }
    }
    assertTrue(app != null, python.seen.toString());
    assertEquals(job.getJobID().toString(), app.get("id").asText());
    assertEquals("root.ann", app.get("queue").asText()); // Python's place answered it
    assertEquals("{\"map_slots\":1}", app.get("requests").get(0).get("resource").toString());
    assertEquals(3, app.get("requests").get(0).get("count").asInt());
    assertEquals("{\"reduce_slots\":1}", app.get("requests").get(1).get("resource").toString());
    assertEquals(2, app.get("requests").get(1).get("count").asInt());
    assertEquals("{\"node\":\"" + TRACKER + "\",\"free\":{\"map_slots\":2,\"reduce_slots\":1}}",
        payload.get("beats").get(0).toString());
  }

  @Test
  void anAssignmentThatCannotBeCarriedOutGoesBackWithItsReason() throws Exception {
    register();
    FakeJob job = manager.add(new FakeJob(1, conf("ann"), 3, 0, true));
    job.noTasks = true;
    python.heartbeat = p -> "{\"assign\": [" + assign(job, "node_local", true, "e1")
        + ", {\"app\": \"job_201401010000_0099\", \"node\": \"" + TRACKER + "\", \"priority\": 0,"
        + " \"locality\": \"node_local\", \"engine_id\": \"e2\", \"resource\": {\"map_slots\": 1}}]}";
    assertTrue(beat(2, 0).isEmpty());
    python.heartbeat = p -> "{}";
    beat(2, 0);
    // The refusals go with the next call that carries deltas: this heartbeat,
    // or the link's background update if it ran between the two.
    List<String> rejected = new ArrayList<>();
    for (String call : List.of("update", "heartbeat")) {
      for (JsonNode p : python.calls(call)) {
        for (JsonNode r : p.path("rejected")) {
          rejected.add(r.toString());
        }
      }
    }
    assertEquals(List.of("{\"engine_id\":\"e1\",\"reason\":\"no_task\"}",
        "{\"engine_id\":\"e2\",\"reason\":\"no_attempt\"}"), rejected);
  }

  @Test
  void thePoolAskedForIsHadoop1sAndPythonsPlaceDecides() throws Exception {
    register();
    JobConf named = conf("carol");
    named.set("pool.name", "prod"); // not read on its own: the pool-name property is user.name
    manager.add(new FakeJob(1, named, 1, 0, true));
    JobConf explicit = conf("carol");
    explicit.set("pool.name", "prod");
    explicit.set("mapred.fairscheduler.pool", "etl");
    manager.add(new FakeJob(2, explicit, 1, 0, true));
    List<String> asked = python.calls("place").stream().map(p -> p.get("queue").asText()).toList();
    assertEquals(List.of("carol", "etl"), asked);
  }

  /**
   * A pool name past the protocol's bound is cut by the messages that carry
   * it (the records' constructors), not sent whole: Python would refuse every
   * payload while the job lives.
   */
  @Test
  void aPoolNamePastTheBoundIsCutNotSent() throws Exception {
    register();
    String fits = "p".repeat(Messages.NAME_MAX);
    JobConf c = conf("ann");
    c.set("mapred.fairscheduler.pool", fits + "more");
    FakeJob job = manager.add(new FakeJob(1, c, 1, 0, true));
    assertEquals(fits, python.last("place").get("queue").asText());
    // The fake Python's answer, root.<that name>, is past the bound too: refused, so the asked pool stands.
    scheduler.update(); // this update, or the one the new job woke, carries it
    List<String> queues = new ArrayList<>();
    for (JsonNode p : python.calls("update")) {
      for (JsonNode a : p.path("apps")) {
        assertEquals(job.getJobID().toString(), a.get("id").asText());
        queues.add(a.get("queue").asText());
      }
    }
    assertEquals(List.of(fits), queues);
  }

  /**
   * An operator's priority reaches the shim as the gateway's PriorityRequest:
   * VERY_LOW (-2) and LOW (-1) must pass its schema as VERY_HIGH (2) does.
   */
  @Test
  void anOperatorsPriorityFromVeryLowToVeryHighIsSetOnTheJob() throws Exception {
    register();
    FakeJob job = manager.add(new FakeJob(1, conf("ann"), 1, 0, true));
    for (int p : new int[] {-2, -1, 2}) {
      Messages.PriorityRequest r = PolicyLink.read("{\"app\": \"" + job.getJobID() + "\", \"priority\": " + p + "}",
          Messages.PriorityRequest.class);
      assertEquals(p, scheduler.adminPriority(r.app(), r.priority()).priority());
      assertEquals(JobPriority.values()[2 - p], job.getPriority());
    }
  }

  /** A job the JobTracker removes goes to Python with how it ended: its run state. */
  @Test
  void aRemovedJobIsSentWithItsFinalState() throws Exception {
    register();
    FakeJob won = manager.add(new FakeJob(1, conf("ann"), 1, 0, true));
    FakeJob lost = manager.add(new FakeJob(2, conf("ann"), 1, 0, true));
    FakeJob gone = manager.add(new FakeJob(3, conf("ann"), 1, 0, true));
    scheduler.update(); // the full update: all three are known
    won.end(JobStatus.SUCCEEDED);
    lost.end(JobStatus.FAILED);
    manager.remove(won);
    manager.remove(lost);
    manager.remove(gone); // retired while it still ran: how it ended is not known
    scheduler.update();
    // This update, or one the new jobs woke the update thread for, carries them.
    JsonNode p = python.calls("update").stream().filter(u -> u.has("apps_removed")).reduce((a, b) -> b)
        .orElseThrow();
    assertEquals(List.of(won.getJobID().toString(), lost.getJobID().toString(), gone.getJobID().toString()),
        JSON.convertValue(p.get("apps_removed"), List.class));
    assertEquals("[{\"id\":\"" + won.getJobID() + "\",\"final_state\":\"SUCCEEDED\"},"
        + "{\"id\":\"" + lost.getJobID() + "\",\"final_state\":\"FAILED\"},"
        + "{\"id\":\"" + gone.getJobID() + "\",\"final_state\":\"UNDEFINED\"}]",
        p.get("apps_finished").toString());
  }

  @Test
  void aJobPythonRefusesToPlaceFailsWithTheReason() throws Exception {
    register();
    python.place = p -> "{\"reject\": \"carol may not spend root.dp.prod's budget\"}";
    FakeJob job = manager.add(new FakeJob(1, conf("carol"), 1, 0, false));
    python.update = p -> "{}";
    scheduler.update();
    waitFor("the job to fail", () -> manager.failed.contains(job));
    assertEquals("Rejected by the Slotwise policy: carol may not spend root.dp.prod's budget",
        job.getStatus().getFailureInfo());
    assertFalse(manager.inited.contains(job));
    assertFalse(python.last("update").path("apps").toString().contains(job.getJobID().toString()));
  }

  @Test
  void aJobPythonHoldsBackStaysUninitialisedUntilItMayRun() throws Exception {
    register();
    FakeJob first = new FakeJob(1, conf("ann"), 2, 0, false);
    FakeJob second = new FakeJob(2, conf("ann"), 2, 0, false);
    // Python's answer is set before the jobs come: each new job wakes the update thread at once.
    python.update = p -> "{\"waiting\": [\"" + second.getJobID() + "\"]}";
    manager.add(first);
    manager.add(second);
    scheduler.update();
    waitFor("the first job's initialisation", () -> manager.inited.contains(first));
    scheduler.update();
    Thread.sleep(200); // the initialiser is one thread: it had the time to start a second init
    assertFalse(manager.inited.contains(second), "held back by the running-job limit");
    python.update = p -> "{}";
    scheduler.update();
    waitFor("the second job's initialisation", () -> manager.inited.contains(second));
  }

  /**
   * Issue 39: a heartbeat inside the JobTracker's lock waited up to the
   * deadline for the line a new policy's warm-up update holds (up to
   * PolicyLink.WARMUP_MS), then went to the FIFO anyway: now it goes to the
   * FIFO at once, as the ResourceManager's shim does.
   */
  @Test
  void whileANewPolicyWarmsUpAHeartbeatGoesToTheFifoWithoutWaitingForTheLine() throws Exception {
    CountDownLatch release = new CountDownLatch(1);
    python.update = p -> {
      try {
        release.await(30, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      return "{}";
    };
    scheduler.runtime().registerPolicy(python, PolicyLink.write(new Messages.Register(Messages.PROTOCOL, 40004,
        "t".repeat(64), false, new Messages.ServerInfo(4, "host", "/pools.xml", 0, "test", null))));
    try {
      waitFor("the warm-up update to reach Python", () -> !python.calls("update").isEmpty());
      long start = System.nanoTime();
      beat(1, 0);
      long ms = (System.nanoTime() - start) / 1_000_000;
      assertTrue(ms < 1000, "the heartbeat took " + ms + " ms");
      assertEquals(1, scheduler.runtime().link().status(null).fallbackHeartbeats());
      assertTrue(python.calls("heartbeat").isEmpty());
    } finally {
      release.countDown();
    }
  }

  /**
   * Issue 39: jobs were initialised one at a time from the 500 ms update
   * thread, so a tracker's first heartbeat gave all its slots to whichever
   * job was ready first. A new job now wakes the update thread, whose answer
   * lets it be initialised at once (here the periodic update is an hour away).
   */
  @Test
  void newJobsAreInitialisedAtOnceWhenPythonLetsThemRun() throws Exception {
    register();
    python.update = p -> "{}";
    FakeJob ann = manager.add(new FakeJob(1, conf("ann"), 2, 0, false));
    FakeJob bob = manager.add(new FakeJob(2, conf("bob"), 2, 0, false));
    waitFor("both jobs' initialisation", () -> manager.inited.containsAll(List.of(ann, bob)));
  }

  /**
   * Issue 39: heartbeats past the deadline with no fallback logged. The slow
   * line (once a minute) says how many passed it since the last such line.
   */
  @Test
  void theSlowHeartbeatLineCountsEveryHeartbeatPastTheDeadline() throws Exception {
    scheduler.terminate();
    Configuration c = new Configuration(false);
    c.set(ShimRuntime.GATEWAY_PORT, "0");
    c.set(ShimRuntime.TOKEN_FILE, dir.resolve("slow.token").toString());
    c.set(ShimRuntime.INFO_FILE, dir.resolve("slow.json").toString());
    c.set(ShimRuntime.TIMEOUT_MS, "50");
    c.set(ShimRuntime.UPDATE_INTERVAL_MS, "3600000");
    scheduler = new SlotwiseTaskScheduler();
    scheduler.setConf(c);
    scheduler.setTaskTrackerManager(manager);
    scheduler.start();
    register();
    List<String> said = new CopyOnWriteArrayList<>();
    org.apache.log4j.AppenderSkeleton capture = new org.apache.log4j.AppenderSkeleton() {
      @Override
      protected void append(org.apache.log4j.spi.LoggingEvent e) {
        said.add(e.getRenderedMessage());
      }

      @Override
      public void close() {
      }

      @Override
      public boolean requiresLayout() {
        return false;
      }
    };
    org.apache.log4j.Logger.getLogger(SlotwiseTaskScheduler.class).addAppender(capture);
    java.util.concurrent.atomic.AtomicInteger answered = new java.util.concurrent.atomic.AtomicInteger();
    try {
      python.heartbeat = p -> {
        try {
          Thread.sleep(150); // past the 50 ms deadline: the FIFO schedules the heartbeat
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        answered.incrementAndGet();
        return "{}";
      };
      for (int i = 0; i < 3; i++) {
        if (i == 2) { // a minute on: the next slow heartbeat is logged again
          java.lang.reflect.Field f = SlotwiseTaskScheduler.class.getDeclaredField("lastSlowLogMs");
          f.setAccessible(true);
          ((java.util.concurrent.atomic.AtomicLong) f.get(scheduler)).set(0);
        }
        beat(1, 0);
        int calls = i + 1;
        waitFor("Python's slow answer", () -> answered.get() == calls);
        Thread.sleep(50); // the call in flight ends before the next heartbeat, which would not call Python
      }
      List<String> slow = said.stream().filter(m -> m.contains("past its 50 ms deadline")).toList();
      assertEquals(2, slow.size(), said.toString());
      assertTrue(slow.get(0).contains("(1 past it since the last such line, this one included)"), slow.get(0));
      assertTrue(slow.get(1).contains("(2 past it since the last such line, this one included)"), slow.get(1));
      assertTrue(slow.get(1).contains("the FIFO (the call failed: heartbeat: no answer within 50 ms)"), slow.get(1));
    } finally {
      org.apache.log4j.Logger.getLogger(SlotwiseTaskScheduler.class).removeAppender(capture);
    }
  }

  @Test
  void withoutPythonTheFifoRunsJobsByPriorityThenSubmitTimeAndInitialisesThem() throws Exception {
    FakeJob normal = manager.add(new FakeJob(1, conf("ann"), 2, 0, false));
    FakeJob high = manager.add(new FakeJob(2, conf("bob"), 2, 0, false));
    high.priority = JobPriority.VERY_HIGH;
    manager.initGate = new CountDownLatch(1); // the JobTracker's init ends when the test says
    List<Task> got = beat(1, 0); // starts their initialisation; nothing runs before it ends
    assertTrue(got.isEmpty(), "no task of a job still initialising");
    manager.initGate.countDown();
    waitFor("both jobs' initialisation", () -> manager.inited.containsAll(List.of(normal, high)));
    for (int i = 0; got.isEmpty() && i < 100; i++) {
      got = beat(1, 0);
    }
    assertEquals(1, got.size());
    assertEquals(high.getJobID(), got.get(0).getTaskID().getJobID());
    assertEquals(List.of("any map"), high.calls);
    assertTrue(normal.calls.isEmpty());
  }

  // --------------------------------------------------------------- fakes

  private static JobConf conf(String user) {
    JobConf c = new JobConf(false);
    c.setUser(user);
    c.set("user.name", user);
    c.setJobName("fake");
    return c;
  }

  /** A job whose tasks are made on demand; records which obtain method was called. */
  static final class FakeJob extends JobInProgress {
    final List<String> calls = new CopyOnWriteArrayList<>();
    int maps;
    int reduces;
    boolean noTasks;
    volatile boolean isInited;
    JobPriority priority = JobPriority.NORMAL;

    @Override
    public void setPriority(JobPriority p) {
      priority = p;
    }
    private int made;

    /** The job ends in {@code runState} (JobStatus.SUCCEEDED, FAILED, KILLED). */
    void end(int runState) {
      status = new JobStatus(getJobID(), 1f, 1f, runState);
    }

    FakeJob(int n, JobConf conf, int maps, int reduces, boolean inited) throws IOException {
      super(new JobID("201401010000", n), conf, jobTracker);
      this.maps = maps;
      this.reduces = reduces;
      this.isInited = inited;
      this.startTime = n;
      this.status = new JobStatus(getJobID(), 0f, 0f, JobStatus.RUNNING);
      this.profile = new JobProfile(conf.getUser(), getJobID(), "", "", "fake");
    }

    private Task task(String how, boolean map) {
      calls.add(how);
      if (noTasks) {
        return null;
      }
      TaskAttemptID id = new TaskAttemptID(new TaskID(getJobID(), map, made++), 0);
      if (map) {
        maps--;
        return new MapTask("job.xml", id, 0, null, 1);
      }
      reduces--;
      return new ReduceTask("job.xml", id, 0, 1, 1);
    }

    @Override
    public boolean inited() {
      return isInited;
    }

    @Override
    boolean isSetupFinished() {
      return true;
    }

    @Override
    public JobPriority getPriority() {
      return priority;
    }

    @Override
    public synchronized int pendingMaps() {
      return isInited ? maps : 0;
    }

    @Override
    public synchronized int pendingReduces() {
      return isInited ? reduces : 0;
    }

    @Override
    public synchronized boolean scheduleReduces() {
      return true;
    }

    @Override
    TaskInProgress[] getTasks(TaskType type) {
      return new TaskInProgress[0];
    }

    @Override
    public synchronized Task obtainNewNodeLocalMapTask(TaskTrackerStatus t, int n, int h) {
      return task("node-local map", true);
    }

    @Override
    public synchronized Task obtainNewNodeOrRackLocalMapTask(TaskTrackerStatus t, int n, int h) {
      return task("node-or-rack-local map", true);
    }

    @Override
    public synchronized Task obtainNewMapTask(TaskTrackerStatus t, int n, int h) {
      return maps > 0 ? task("any map", true) : null;
    }

    @Override
    public synchronized Task obtainNewReduceTask(TaskTrackerStatus t, int n, int h) {
      return reduces > 0 ? task("reduce", false) : null;
    }
  }

  /** The JobTracker's side: listeners, and what the scheduler asks of jobs. */
  static final class FakeManager implements TaskTrackerManager {
    final List<JobInProgressListener> listeners = new CopyOnWriteArrayList<>();
    final List<JobInProgress> inited = new CopyOnWriteArrayList<>();
    final List<JobInProgress> failed = new CopyOnWriteArrayList<>();
    volatile CountDownLatch initGate; // when set, initJob waits for it (a slow JobTracker init)

    FakeJob add(FakeJob job) throws IOException {
      for (JobInProgressListener l : listeners) {
        l.jobAdded(job);
      }
      return job;
    }

    void remove(FakeJob job) {
      for (JobInProgressListener l : listeners) {
        l.jobRemoved(job);
      }
    }

    @Override
    public Collection<TaskTrackerStatus> taskTrackers() {
      return List.of(new TaskTrackerStatus(TRACKER, "h1", 50060, new ArrayList<>(), 0, 0, 4, 2));
    }

    @Override
    public int getNumberOfUniqueHosts() {
      return 1;
    }

    @Override
    public ClusterStatus getClusterStatus() {
      return new ClusterStatus(1, 0, 0, 0, 0, 4, 2, 0, JobTracker.State.RUNNING);
    }

    @Override
    public void addJobInProgressListener(JobInProgressListener l) {
      listeners.add(l);
    }

    @Override
    public void removeJobInProgressListener(JobInProgressListener l) {
      listeners.remove(l);
    }

    @Override
    public QueueManager getQueueManager() {
      return null;
    }

    @Override
    public int getNextHeartbeatInterval() {
      return 3000;
    }

    @Override
    public void killJob(JobID id) {
    }

    @Override
    public JobInProgress getJob(JobID id) {
      return null;
    }

    @Override
    public boolean killTask(TaskAttemptID id, boolean fail) {
      return false;
    }

    @Override
    public void initJob(JobInProgress job) {
      CountDownLatch gate = initGate;
      try {
        if (gate != null && !gate.await(30, TimeUnit.SECONDS)) {
          return;
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
      ((FakeJob) job).isInited = true;
      inited.add(job);
    }

    @Override
    public void failJob(JobInProgress job) {
      failed.add(job);
    }

    @Override
    public boolean isInSafeMode() {
      return false;
    }
  }

  /** Python: canned answers, and every call's argument kept. */
  static final class FakePython implements PolicyServer {
    final List<Map.Entry<String, String>> seen = new CopyOnWriteArrayList<>();
    volatile Function<String, String> heartbeat = p -> "{}";
    volatile Function<String, String> update = p -> "{}";
    volatile Function<String, String> move = p -> "{\"error\": \"no\"}";
    volatile Function<String, String> place = p -> {
      try {
        return "{\"queue\": \"root." + JSON.readTree(p).get("queue").asText() + "\"}";
      } catch (IOException e) {
        throw new IllegalStateException(e);
      }
    };

    List<JsonNode> calls(String what) {
      List<JsonNode> out = new ArrayList<>();
      for (Map.Entry<String, String> e : seen) {
        if (e.getKey().equals(what)) {
          try {
            out.add(JSON.readTree(e.getValue()));
          } catch (IOException x) {
            throw new IllegalStateException(x);
          }
        }
      }
      return out;
    }

    JsonNode last(String what) {
      List<JsonNode> all = calls(what);
      return all.get(all.size() - 1);
    }

    @Override
    public String heartbeat(String payload) {
      seen.add(Map.entry("heartbeat", payload));
      return heartbeat.apply(payload);
    }

    @Override
    public String update(String payload) {
      seen.add(Map.entry("update", payload));
      return update.apply(payload);
    }

    @Override
    public String place(String request) {
      seen.add(Map.entry("place", request));
      return place.apply(request);
    }

    @Override
    public String move(String request) {
      seen.add(Map.entry("move", request));
      return move.apply(request);
    }

    @Override
    public String ping(String ping) {
      return "{\"pid\": 1}";
    }
  }
}
