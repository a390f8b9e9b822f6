package org.slotwise.shim;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SeekableByteChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.EnumSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
import java.util.function.BooleanSupplier;
import java.util.function.Function;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import py4j.GatewayServer;
import py4j.commands.AbstractCommand;
import py4j.commands.ShutdownGatewayServerCommand;

/**
 * What both shims (the ResourceManager's and the JobTracker's) run around
 * their master: the Py4J gateway, the link to Python and its registration,
 * from the master's configuration. A shim keeps only what is its master's:
 * the payload, carrying out answers, moves and priorities ({@link Master}).
 *
 * <p>The gateway is bound to 127.0.0.1, guarded by a fresh 32-byte token
 * written (mode 0600) before it listens. It outlives every Python: a Python's
 * request to shut it down is ignored ({@link KeepRunning}). Calls to Python go
 * through {@link PolicyLink.Callbacks}, which each registration points at that
 * Python's own callback port and token, and which is cut the moment the link
 * drops it: the gateway's token never leaves the master.
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
   * Opens the gateway (loopback, a 0600 token file); its files default to
   * {@code tmpDir/slotwise/}. A gateway that does not start is logged: the
   * master schedules by its FIFO until it restarts with a working one.
   *
   * @return the port it listens on; 0 if it did not start
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
      // Py4J's threads inherit daemon status from the thread that starts them.
      Throwable[] failure = new Throwable[1];
      Thread starter = new Thread(() -> {
        try {
          server.start(true);
        } catch (Throwable t) {
          failure[0] = t;
        }
      }, "slotwise-gateway-start");
      starter.setDaemon(true);
      starter.start();
      starter.join();
      if (failure[0] != null) {
        server = null;
        throw new IOException("Py4J gateway did not start on 127.0.0.1:" + port, failure[0]);
      }
      int listening = server.getListeningPort();
      writePrivate(infoFile, "{\"port\": " + listening + ", \"pid\": "
          + ProcessHandle.current().pid() + ", \"pid_ns\": \"" + pidNamespace() + "\"}");
      LOG.info("Slotwise: Py4J gateway listening on 127.0.0.1:{} (token {}, info {})", listening, tokenFile,
          infoFile);
      return listening;
    } catch (Throwable t) {
      LOG.error("Slotwise: the Py4J gateway did not start; the built-in FIFO schedules until the master "
          + "restarts with a working gateway", t);
      return 0;
    }
  }

  /** 32 random bytes from SecureRandom, as 64 hex digits. */
  static String newToken() {
    byte[] b = new byte[32];
    new SecureRandom().nextBytes(b);
    return HexFormat.of().formatHex(b);
  }

  /**
   * Writes a file only the master's user may read: a temporary file created
   * with mode 0600 (never wider, not even for an instant) replaces the target.
   */
  static void writePrivate(Path file, String content) throws IOException {
    Path abs = file.toAbsolutePath();
    Path dir = abs.getParent();
    if (dir != null && !Files.isDirectory(dir)) {
      Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
    }
    Path tmp = abs.resolveSibling(abs.getFileName() + ".tmp");
    Files.deleteIfExists(tmp);
    try (SeekableByteChannel ch = Files.newByteChannel(tmp,
        EnumSet.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE),
        PosixFilePermissions.asFileAttribute(FILE_0600))) {
      ch.write(ByteBuffer.wrap(content.getBytes(StandardCharsets.UTF_8)));
    }
    Files.setPosixFilePermissions(tmp, FILE_0600); // in case of an odd umask
    Files.move(tmp, abs, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
  }

  /**
   * This process's pid namespace (as /proc/self/ns/pid names it), so that a
   * reader in another one (the policy container) does not take the pid for
   * one of its own; empty where there is none to read.
   */
  static String pidNamespace() {
    try {
      String ns = Files.readSymbolicLink(Path.of("/proc/self/ns/pid")).toString();
      return ns.matches("[a-z]+:\\[[0-9]+\\]") ? ns : "";
    } catch (IOException | UnsupportedOperationException | SecurityException e) {
      return "";
    }
  }

  /** Stops the gateway and the link; the gateway's files are deleted. */
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

  /**
   * Py4J's shutdown command, replaced: Python's {@code JavaGateway.shutdown()}
   * sends it on exit, and the next policy server needs the gateway.
   */
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

  /** "ResourceManager" or "JobTracker": the master this shim runs in, as its pages name it. */
  public String master() {
    return kind == Messages.Kind.YARN ? "ResourceManager" : "JobTracker";
  }

  // ---------------------------------------------------------- the gateway

  /**
   * A policy offers itself. Once registered, its first call (which opens
   * Py4J's callback connection) is made at once by the master's update
   * thread with a longer deadline; heartbeats use the FIFO until then.
   */
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

  /**
   * What Python sees as {@code gateway.entry_point}: every method takes and
   * answers one JSON message of the protocol (docs/protocol.md) and never
   * throws; a message that does not bind is answered as refused.
   */
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

    /** The request bound and handled; one that does not bind (or is refused) is answered by {@code refused}. */
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
