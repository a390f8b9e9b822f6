import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.security.PrivilegedExceptionAction;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.hadoop.ipc.RPC;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.yarn.api.ApplicationMasterProtocol;
import org.apache.hadoop.yarn.api.protocolrecords.AllocateRequest;
import org.apache.hadoop.yarn.api.protocolrecords.AllocateResponse;
import org.apache.hadoop.yarn.api.protocolrecords.FinishApplicationMasterRequest;
import org.apache.hadoop.yarn.api.protocolrecords.RegisterApplicationMasterRequest;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.api.records.ApplicationReport;
import org.apache.hadoop.yarn.api.records.ApplicationSubmissionContext;
import org.apache.hadoop.yarn.api.records.Container;
import org.apache.hadoop.yarn.api.records.ContainerId;
import org.apache.hadoop.yarn.api.records.ContainerLaunchContext;
import org.apache.hadoop.yarn.api.records.FinalApplicationStatus;
import org.apache.hadoop.yarn.api.records.Priority;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.api.records.ResourceRequest;
import org.apache.hadoop.yarn.api.records.YarnApplicationState;
import org.apache.hadoop.yarn.client.ClientRMProxy;
import org.apache.hadoop.yarn.client.api.YarnClient;
import org.apache.hadoop.yarn.client.api.YarnClientApplication;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.security.AMRMTokenIdentifier;

/**
 * Load for benchmarks/bench_roundtrip.py: N running applications with
 * outstanding container requests in the real ResourceManager, without an
 * ApplicationMaster JVM per app. Each app is an unmanaged AM
 * ({@code setUnmanagedAM(true)}): this process submits it, takes its AMRM
 * token, and acts as its AM (a UGI holding the token) over the
 * ApplicationMasterProtocol: register, ask for {@code --asks} containers at
 * priority 1 ({@code --mb} MB, 1 vcore; every other app also asks for them on
 * host {@code --host} and rack {@code --rack}), then heartbeat every
 * {@code --am-interval-ms} (first at a random offset, so the calls spread
 * evenly). A heartbeat that brings containers releases them at once and asks
 * for as many again. So every app always wants containers, a container lives
 * about half an AM interval (from its allocation to the AM's next heartbeat),
 * and nothing is ever launched.
 *
 * <p>Commands on stdin, one per line; answers on stdout:
 * <pre>
 *   grow N   -> "ready N SECONDS"   submit apps until N run and have asked
 *   counts   -> "counts apps=.. allocates=.. received=.. released=.. errors=.."
 *   stop     -> "stopped SECONDS"   unregister every app (kill what will not), exit
 * </pre>
 * The configuration (yarn-site.xml) comes from the classpath.
 */
public final class RoundTripLoad {
  private static final Priority PRIORITY = Priority.newInstance(1);

  private final YarnConfiguration conf = new YarnConfiguration();
  private final YarnClient client = YarnClient.createYarnClient();
  private final List<Am> apps = Collections.synchronizedList(new ArrayList<>());
  private final int queues;
  private final int asks;
  private final int mb;
  private final long amIntervalMs;
  private final String host;
  private final String rack;
  private final ExecutorService setup;
  private final ScheduledExecutorService beats;

  private final AtomicLong allocates = new AtomicLong();
  private final AtomicLong received = new AtomicLong();
  private final AtomicLong released = new AtomicLong();
  private final AtomicLong errors = new AtomicLong();

  private RoundTripLoad(int queues, int asks, int mb, long amIntervalMs, String host, String rack,
      int threads) {
    this.queues = queues;
    this.asks = asks;
    this.mb = mb;
    this.amIntervalMs = amIntervalMs;
    this.host = host;
    this.rack = rack;
    this.setup = Executors.newFixedThreadPool(threads);
    this.beats = Executors.newScheduledThreadPool(threads);
    client.init(conf);
    client.start();
  }

  /** One unmanaged application and this process acting as its AM. */
  private final class Am {
    final int index;
    ApplicationId appId;
    UserGroupInformation ugi;
    ApplicationMasterProtocol rm;
    int responseId;
    List<ContainerId> toRelease = new ArrayList<>();
    boolean reask = true;

    Am(int index) {
      this.index = index;
    }

    void start() throws Exception {
      YarnClientApplication app = client.createApplication();
      ApplicationSubmissionContext ctx = app.getApplicationSubmissionContext();
      appId = ctx.getApplicationId();
      ctx.setApplicationName("roundtrip-" + index);
      ctx.setApplicationType("SLOTWISE-BENCH");
      ctx.setQueue("root.p" + (index % queues));
      ctx.setUnmanagedAM(true);
      ctx.setMaxAppAttempts(1);
      ctx.setResource(Resource.newInstance(mb, 1));
      ctx.setAMContainerSpec(ContainerLaunchContext.newInstance(
          null, null, null, null, null, null));
      client.submitApplication(ctx);
      Token<AMRMTokenIdentifier> token = null;
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
      while (token == null) {
        ApplicationReport r = client.getApplicationReport(appId);
        YarnApplicationState s = r.getYarnApplicationState();
        if (s == YarnApplicationState.FAILED || s == YarnApplicationState.KILLED
            || s == YarnApplicationState.FINISHED) {
          throw new IllegalStateException(appId + " ended before it ran: " + s + " "
              + r.getDiagnostics());
        }
        if (s == YarnApplicationState.ACCEPTED || s == YarnApplicationState.RUNNING) {
          token = client.getAMRMToken(appId);
        }
        if (token == null) {
          if (System.nanoTime() > deadline) {
            throw new IllegalStateException(appId + " got no AMRM token within 120 s (" + s + ")");
          }
          Thread.sleep(50);
        }
      }
      ugi = UserGroupInformation.createRemoteUser(appId.toString());
      ugi.addToken(token);
      rm = ugi.doAs((PrivilegedExceptionAction<ApplicationMasterProtocol>)
          () -> ClientRMProxy.createRMProxy(conf, ApplicationMasterProtocol.class));
      ugi.doAs((PrivilegedExceptionAction<Object>) () -> rm.registerApplicationMaster(
          RegisterApplicationMasterRequest.newInstance("localhost", -1, "")));
      beat(); // the first ask
    }

    List<ResourceRequest> requests() {
      Resource r = Resource.newInstance(mb, 1);
      List<ResourceRequest> out = new ArrayList<>();
      if (index % 2 == 0) {
        out.add(ResourceRequest.newInstance(PRIORITY, host, r, asks, true));
        out.add(ResourceRequest.newInstance(PRIORITY, rack, r, asks, true));
      }
      out.add(ResourceRequest.newInstance(PRIORITY, ResourceRequest.ANY, r, asks, true));
      return out;
    }

    /**
     * One AM heartbeat: an allocate (asking again if the last one had to);
     * if it brought containers, a second allocate at once releases them and
     * asks for as many again (what it brings waits for the next heartbeat).
     */
    synchronized void beat() throws Exception {
      if (rm == null) {
        return;
      }
      for (int round = 0; round < 2; round++) {
        List<ResourceRequest> ask = reask ? requests() : Collections.emptyList();
        List<ContainerId> release = toRelease;
        AllocateRequest req = AllocateRequest.newInstance(responseId, 0.5f, ask, release, null);
        AllocateResponse resp = ugi.doAs((PrivilegedExceptionAction<AllocateResponse>)
            () -> rm.allocate(req));
        allocates.incrementAndGet();
        released.addAndGet(release.size());
        responseId = resp.getResponseId();
        List<Container> got = resp.getAllocatedContainers();
        received.addAndGet(got.size());
        toRelease = new ArrayList<>(got.size());
        for (Container c : got) {
          toRelease.add(c.getId());
        }
        reask = !got.isEmpty();
        if (!reask) {
          return;
        }
      }
    }

    synchronized void finish() {
      if (rm == null) {
        return;
      }
      try {
        boolean done = false;
        for (int i = 0; i < 20 && !done; i++) {
          done = ugi.doAs((PrivilegedExceptionAction<Boolean>) () -> rm.finishApplicationMaster(
              FinishApplicationMasterRequest.newInstance(FinalApplicationStatus.SUCCEEDED,
                  "benchmark over", null)).getIsUnregistered());
          if (!done) {
            Thread.sleep(100);
          }
        }
        if (!done) {
          client.killApplication(appId);
        }
      } catch (Exception e) {
        try {
          client.killApplication(appId);
        } catch (Exception ignored) {
          // the cluster goes down next anyway
        }
      } finally {
        RPC.stopProxy(rm);
        rm = null;
      }
    }
  }

  private void grow(int target) throws Exception {
    List<Future<Am>> started = new ArrayList<>();
    for (int i = apps.size(); i < target; i++) {
      final Am am = new Am(i);
      started.add(setup.submit(() -> {
        am.start();
        return am;
      }));
    }
    for (Future<Am> f : started) {
      Am am = f.get();
      apps.add(am);
      long offset = ThreadLocalRandom.current().nextLong(amIntervalMs);
      beats.scheduleWithFixedDelay(() -> {
        try {
          am.beat();
        } catch (Exception e) {
          if (errors.incrementAndGet() <= 20) {
            System.err.println("allocate of " + am.appId + " failed: " + e);
          }
        }
      }, offset, amIntervalMs, TimeUnit.MILLISECONDS);
    }
  }

  private void stop() throws Exception {
    beats.shutdownNow();
    beats.awaitTermination(10, TimeUnit.SECONDS);
    List<Future<?>> done = new ArrayList<>();
    synchronized (apps) {
      for (Am am : apps) {
        done.add(setup.submit(am::finish));
      }
    }
    for (Future<?> f : done) {
      f.get();
    }
    setup.shutdown();
    client.stop();
  }

  private static String arg(String[] args, String name, String dflt) {
    for (int i = 0; i + 1 < args.length; i++) {
      if (args[i].equals(name)) {
        return args[i + 1];
      }
    }
    return dflt;
  }

  public static void main(String[] args) throws Exception {
    RoundTripLoad load = new RoundTripLoad(
        Integer.parseInt(arg(args, "--queues", "10")),
        Integer.parseInt(arg(args, "--asks", "20")),
        Integer.parseInt(arg(args, "--mb", "256")),
        Long.parseLong(arg(args, "--am-interval-ms", "5000")),
        arg(args, "--host", "localhost"),
        arg(args, "--rack", "/default-rack"),
        Integer.parseInt(arg(args, "--threads", "8")));
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String line;
    try {
      while ((line = in.readLine()) != null) {
        String[] cmd = line.trim().split("\\s+");
        long t0 = System.nanoTime();
        switch (cmd[0]) {
          case "grow":
            load.grow(Integer.parseInt(cmd[1]));
            System.out.printf("ready %d %.1f%n", load.apps.size(), (System.nanoTime() - t0) / 1e9);
            break;
          case "counts":
            System.out.printf("counts apps=%d allocates=%d received=%d released=%d errors=%d%n",
                load.apps.size(), load.allocates.get(), load.received.get(), load.released.get(),
                load.errors.get());
            break;
          case "stop":
            load.stop();
            System.out.printf("stopped %.1f%n", (System.nanoTime() - t0) / 1e9);
            System.out.flush();
            System.exit(0);
            break;
          case "":
            break;
          default:
            System.out.println("error unknown command " + cmd[0]);
        }
        System.out.flush();
      }
    } catch (Exception e) {
      e.printStackTrace();
      System.out.println("error " + e.toString().replace('\n', ' '));
      System.out.flush();
      System.exit(1);
    }
    // stdin closed: the benchmark went away; leave nothing behind.
    load.stop();
    System.exit(0);
  }
}
