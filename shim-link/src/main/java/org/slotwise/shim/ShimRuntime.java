package org.slotwise.shim;

import java.io.*;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.nio.file.attribute.*;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
import java.util.concurrent.FutureTask;
import java.util.function.*;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import py4j.GatewayServer;
import py4j.commands.*;

/**
 * What both shims (the ResourceManager's and the JobTracker's) run around
 * their master, from its configuration: the Py4J gateway, the link to Python
 * and its registration. The master keeps the payload, carrying out answers,
 * moves and priorities ({@link Master}).
 *
 * <p>The gateway listens on 127.0.0.1 only, guarded by a fresh 32-byte token
 * written (mode 0600) first, and outlives every Python ({@link KeepRunning}).
 * Calls to Python go through {@link PolicyLink.Callbacks}, pointed by each
 * registration at that Python's own port and token: the gateway's token
 * never leaves the master.
 */
public final class ShimRuntime {
  /** Both shims' version, told to Python at registration. */
  public static final String VERSION = "0.2.0";
  public static final String GATEWAY_PORT = "slotwise.gateway.port";
  public static final String TOKEN_FILE = "slotwise.gateway.token-file";
  public static final String INFO_FILE = "slotwise.gateway.info-file";
  public static final String TIMEOUT_MS = "slotwise.policy.timeout-ms";
  public static final String READ_TIMEOUT_MS = "slotwise.policy.read-timeout-ms";
  public static final String MAX_TIMEOUTS = "slotwise.policy.max-timeouts";
  public static final String LEASE_MS = "slotwise.policy.lease-ms";
  public static final String UPDATE_INTERVAL_MS = "slotwise.update.interval-ms";

  private static final Logger LOG = LoggerFactory.getLogger(ShimRuntime.class);
  private static final Set<PosixFilePermission> FILE_0600 = PosixFilePermissions.fromString("rw-------");
  static final InetAddress LOOPBACK = InetAddress.getLoopbackAddress();

  /** The master's side of the gateway's calls. */
  public interface Master {
    /** An operator's move, carried out as the master's own move. */
    Messages.MoveAnswer adminMove(String app, String queue);

    Messages.PriorityAnswer adminPriority(String app, int priority);

    /** A policy registered: its first call (a full update) is due at once. */
    void registered();
  }

  private final Function<String, String> conf;
  private final Master master;
  private final Messages.Kind kind;
  private final BooleanSupplier preemption;
  private final PolicyLink.Callbacks callbacks;
  private final PolicyLink link;
  private final long updateInterval;
  private GatewayServer server;
  private Path tokenFile;
  private Path infoFile;

  /**
   * @param conf the master's configuration ({@code conf::get})
   * @param kind YARN (memory and vcores) or MRV1 (map and reduce slots)
   * @param preemption what the master's configuration says of preemption (read at each registration)
   */
  public ShimRuntime(Function<String, String> conf, Messages.Kind kind, BooleanSupplier preemption,
      long defaultTimeoutMs, Runnable onResync, PolicyLink.CallObserver observer, Master master) {
    this.conf = conf;
    this.master = master;
    this.kind = kind;
    this.preemption = preemption;
    this.callbacks = new PolicyLink.Callbacks((int) number(READ_TIMEOUT_MS, 5000));
    this.link = new PolicyLink(number(TIMEOUT_MS, defaultTimeoutMs),
        (int) number(MAX_TIMEOUTS, PolicyLink.MAX_TIMEOUTS), number(LEASE_MS, PolicyLink.LEASE_MS),
        System::currentTimeMillis, onResync, callbacks, observer);
    this.updateInterval = Math.max(10, number(UPDATE_INTERVAL_MS, 500));
    link.setMaster(master());
  }

  private long number(String key, long otherwise) {
    String v = conf.apply(key);
    return v == null || v.isBlank() ? otherwise : Long.parseLong(v.trim());
  }

  public PolicyLink link() {
    return link;
  }

  public long updateInterval() {
    return updateInterval;
  }

  /**
   * Opens the gateway, its files by default in {@code tmpDir/slotwise/}; the
   * port it listens on, or 0 if it did not start (logged: the FIFO schedules).
   */
  public int start(String tmpDir) {
    tokenFile = Path.of(conf.apply(TOKEN_FILE) != null ? conf.apply(TOKEN_FILE) : tmpDir + "/slotwise/gateway.token");
    infoFile = Path.of(conf.apply(INFO_FILE) != null ? conf.apply(INFO_FILE) : tmpDir + "/slotwise/gateway.json");
    int port = (int) number(GATEWAY_PORT, 0);
    try {
      String secret = newToken();
      writePrivate(tokenFile, secret);
      server = new GatewayServer.GatewayServerBuilder().gateway(new py4j.Gateway(new EntryPoint(), callbacks))
          .javaAddress(LOOPBACK).javaPort(port).authToken(secret).customCommands(List.of(KeepRunning.class))
          .build();
      FutureTask<Void> starting = new FutureTask<>(() -> server.start(true), null);
      Thread starter = new Thread(starting, "slotwise-gateway-start"); // Py4J's threads inherit its daemon status
      starter.setDaemon(true);
      starter.start();
      starting.get(); // a failure to bind, as the cause
      int listening = server.getListeningPort();
      writePrivate(infoFile, "{\"port\": " + listening + ", \"pid\": "
          + ProcessHandle.current().pid() + ", \"pid_ns\": \"" + pidNamespace() + "\"}");
      LOG.info("Slotwise: Py4J gateway listening on 127.0.0.1:{} (token {}, info {})", listening, tokenFile, infoFile);
      return listening;
    } catch (Throwable t) {
      LOG.error("Slotwise: the Py4J gateway did not start on 127.0.0.1:{}; the built-in FIFO schedules until the "
          + "master restarts with a working gateway", port, t);
      server = null;
      return 0;
    }
  }

  static String newToken() {
    byte[] b = new byte[32];
    new SecureRandom().nextBytes(b);
    return HexFormat.of().formatHex(b);
  }

  /** Writes a file only the master's user may read: a temporary one made 0600 (never wider) replaces it. */
  static void writePrivate(Path file, String content) throws IOException {
    Path abs = file.toAbsolutePath();
    Files.createDirectories(abs.getParent(), // made 0700 if missing; an existing one is left as it is
        PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
    Path tmp = abs.resolveSibling(abs.getFileName() + ".tmp");
    Files.deleteIfExists(tmp);
    Files.createFile(tmp, PosixFilePermissions.asFileAttribute(FILE_0600)); // new, never wider than 0600
    Files.setPosixFilePermissions(tmp, FILE_0600); // in case of an odd umask
    Files.writeString(tmp, content, StandardCharsets.UTF_8);
    Files.move(tmp, abs, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
  }

  /** This process's pid namespace, so a reader in another (a container) takes the pid for none of its own. */
  static String pidNamespace() {
    try {
      String ns = Files.readSymbolicLink(Path.of("/proc/self/ns/pid")).toString();
      return ns.matches("[a-z]+:\\[[0-9]+\\]") ? ns : "";
    } catch (IOException | UnsupportedOperationException | SecurityException e) {
      return "";
    }
  }

  public void stop() {
    callbacks.disconnect();
    if (server != null) {
      try {
        server.shutdown();
      } catch (Throwable t) {
        LOG.warn("Slotwise: error while stopping the Py4J gateway", t);
      }
      server = null;
    }
    for (Path p : new Path[] {infoFile, tokenFile}) {
      try {
        if (p != null) {
          Files.deleteIfExists(p);
        }
      } catch (IOException e) {
        LOG.warn("Slotwise: could not delete {}", p, e);
      }
    }
    link.stop();
  }

  /** Py4J's shutdown command, ignored: Python sends it on exit, and the next policy server needs the gateway. */
  public static final class KeepRunning extends AbstractCommand {
    public KeepRunning() {
      commandName = ShutdownGatewayServerCommand.SHUTDOWN_GATEWAY_SERVER_COMMAND_NAME;
    }

    @Override
    public void execute(String name, BufferedReader reader, BufferedWriter writer) {
      LOG.info("Slotwise: ignored a Python's request to stop the gateway; it stays up");
    }
  }

  /** A configured time past Int32 would keep every policy server from registering: clamped. */
  static int int32(long ms) {
    return (int) Math.max(1, Math.min(ms, Integer.MAX_VALUE));
  }

  public String master() {
    return kind == Messages.Kind.YARN ? "ResourceManager" : "JobTracker";
  }

  /** A policy offers itself; once registered, the master's update thread makes its first call at once. */
  public Messages.Registered registerPolicy(PolicyServer policy, String json) {
    Messages.ShimInfo shim = new Messages.ShimInfo(VERSION, kind, Messages.PROTOCOL,
        int32(link.getTimeoutMs()), int32(updateInterval), kind == Messages.Kind.YARN
            ? List.of("memory_mb", "vcores") : List.of("map_slots", "reduce_slots"), preemption.getAsBoolean());
    Messages.Registered answer;
    try {
      answer = link.register(policy, PolicyLink.read(json, Messages.Register.class), shim);
    } catch (IllegalArgumentException e) {
      answer = new Messages.Registered(null, e.getMessage(), null, shim);
    }
    if (answer.session() != null) {
      master.registered();
    }
    return answer;
  }

  /** Python's {@code gateway.entry_point}: one protocol message in and out; one that does not bind is refused. */
  public final class EntryPoint {
    /** Register: Python offers {@code policy}, with its callback port and a fresh token. */
    public String register(PolicyServer policy, String register) {
      return PolicyLink.write(registerPolicy(policy, register));
    }

    /** Unregister to Unregistered: a clean exit. */
    public String unregister(String request) {
      return answer(request, Messages.Unregister.class, r -> new Messages.Unregistered(link.unregister(r.session())),
          why -> new Messages.Unregistered(false));
    }

    /** StatusRequest to ShimStatus: liveness, and whether the master schedules without Python. */
    public String status(String request) {
      return answer(request, Messages.StatusRequest.class, r -> link.status(r.session()), why -> link.status(null));
    }

    /** MoveRequest to MoveAnswer: an operator's move, carried out as the master's own move. */
    public String moveApplication(String request) {
      return answer(request, Messages.MoveRequest.class, r -> master.adminMove(r.app(), r.queue()),
          why -> new Messages.MoveAnswer(null, why));
    }

    /** PriorityRequest to PriorityAnswer, through the master (capped by its maximum). */
    public String updateApplicationPriority(String request) {
      return answer(request, Messages.PriorityRequest.class, r -> master.adminPriority(r.app(), r.priority()),
          why -> new Messages.PriorityAnswer(null, why));
    }

    private <R> String answer(String json, Class<R> type, Function<R, Object> handle,
        Function<String, Object> refused) {
      try {
        return PolicyLink.write(handle.apply(PolicyLink.read(json, type)));
      } catch (IllegalArgumentException e) {
        return PolicyLink.write(refused.apply(e.getMessage()));
      }
    }
  }
}
