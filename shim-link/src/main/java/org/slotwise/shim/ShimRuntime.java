package org.slotwise.shim;

import java.nio.file.Paths;
import java.util.List;
import java.util.function.Function;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What both shims (the ResourceManager's and the JobTracker's) run around
 * their master: the Py4J gateway, the link to Python and its registration,
 * from the master's configuration. A shim keeps only what is its master's:
 * the payload, carrying out answers, moves and priorities ({@link Master}).
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
  private final List<String> resourceTypes;
  private final java.util.function.BooleanSupplier preemption;
  private final PolicyLink.Callbacks callbacks;
  private final PolicyLink link;
  private final long updateInterval;
  private Gateway gateway;

  /**
   * @param conf the master's configuration ({@code conf::get})
   * @param kind YARN (memory and vcores) or MRV1 (map and reduce slots)
   * @param preemption what the master's configuration says of preemption (read at each registration)
   */
  public ShimRuntime(Function<String, String> conf, Messages.Kind kind,
      java.util.function.BooleanSupplier preemption,
      long defaultTimeoutMs, Runnable onResync, PolicyLink.CallObserver observer, Master master) {
    this.conf = conf;
    this.master = master;
    this.kind = kind;
    this.resourceTypes = kind == Messages.Kind.YARN ? List.of("memory_mb", "vcores")
        : List.of("map_slots", "reduce_slots");
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
   */
  public void start(String tmpDir) {
    String dir = tmpDir + "/slotwise/";
    String token = conf.apply(TOKEN_FILE);
    String info = conf.apply(INFO_FILE);
    gateway = new Gateway(new EntryPoint(), (int) number(GATEWAY_PORT, 0),
        Paths.get(token != null ? token : dir + "gateway.token"),
        Paths.get(info != null ? info : dir + "gateway.json"), callbacks);
    try {
      gateway.start();
    } catch (Throwable t) {
      LOG.error("Slotwise: the Py4J gateway did not start; the built-in FIFO schedules until the master "
          + "restarts with a working gateway", t);
    }
  }

  public void stop() {
    if (gateway != null) {
      gateway.stop();
    }
    link.stop();
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
   * Py4J's callback connection) is a full update, made at once by the
   * master's update thread with a longer deadline; heartbeats use the FIFO
   * until then.
   */
  public Messages.Registered registerPolicy(PolicyServer policy, String json) {
    Messages.ShimInfo shim = new Messages.ShimInfo(VERSION, kind, Messages.PROTOCOL,
        int32(link.getTimeoutMs()), int32(updateInterval), resourceTypes, preemption.getAsBoolean());
    Messages.Registered answer;
    try {
      answer = link.register(policy, Wire.read(json, Messages.Register.class), shim);
    } catch (IllegalArgumentException e) {
      answer = new Messages.Registered(null, e.getMessage(), null, shim);
    }
    if (answer.session() != null) {
      master.registered();
    }
    return answer;
  }

  /** A clean exit; false if that session is not the registered one. */
  public boolean unregisterPolicy(String session) {
    return link.unregister(session);
  }

  /** The link's status, as answered to the policy server with this session, whose lease it renews. */
  public Messages.ShimStatus linkStatus(String session) {
    return link.status(session);
  }

  /**
   * What Python sees as {@code gateway.entry_point}: every method takes and
   * answers one JSON message of the protocol (docs/protocol.md) and never
   * throws; a message that does not bind is answered as refused.
   */
  public final class EntryPoint {
    /** Register: Python offers {@code policy}, with its callback port and a fresh token. */
    public String register(PolicyServer policy, String register) {
      return Wire.write(registerPolicy(policy, register));
    }

    /** Unregister to Unregistered: a clean exit. */
    public String unregister(String unregister) {
      try {
        return Wire.write(new Messages.Unregistered(
            unregisterPolicy(Wire.read(unregister, Messages.Unregister.class).session())));
      } catch (IllegalArgumentException e) {
        return Wire.write(new Messages.Unregistered(false));
      }
    }

    /** StatusRequest to ShimStatus: liveness, and whether the master schedules without Python. */
    public String status(String request) {
      String session;
      try {
        session = Wire.read(request, Messages.StatusRequest.class).session();
      } catch (IllegalArgumentException e) {
        session = null;
      }
      return Wire.write(link.status(session));
    }

    /** MoveRequest to MoveAnswer: an operator's move, carried out as the master's own move. */
    public String moveApplication(String request) {
      try {
        Messages.MoveRequest r = Wire.read(request, Messages.MoveRequest.class);
        return Wire.write(master.adminMove(r.app(), r.queue()));
      } catch (IllegalArgumentException e) {
        return Wire.write(new Messages.MoveAnswer(null, e.getMessage()));
      }
    }

    /** PriorityRequest to PriorityAnswer, through the master (capped by its maximum). */
    public String updateApplicationPriority(String request) {
      try {
        Messages.PriorityRequest r = Wire.read(request, Messages.PriorityRequest.class);
        return Wire.write(master.adminPriority(r.app(), r.priority()));
      } catch (IllegalArgumentException e) {
        return Wire.write(new Messages.PriorityAnswer(null, e.getMessage()));
      }
    }
  }
}
