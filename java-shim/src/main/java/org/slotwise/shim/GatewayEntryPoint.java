package org.slotwise.shim;

/**
 * What Python sees as {@code gateway.entry_point}. Python registers its
 * {@link PolicyServer} here, after starting its callback server and pointing
 * the gateway's callback client at it (see docs/shim.md).
 */
public final class GatewayEntryPoint {
  private final SlotwiseScheduler scheduler;

  GatewayEntryPoint(SlotwiseScheduler scheduler) {
    this.scheduler = scheduler;
  }

  /** Installs the policy; it replaces any earlier one and gets full state next. */
  public void register(PolicyServer policy) {
    scheduler.registerPolicy(policy);
  }

  /** A liveness check for the Python side. */
  public String ping() {
    return "slotwise-shim " + SlotwiseScheduler.VERSION;
  }

  /** Heartbeats scheduled by the built-in FIFO since the RM started. */
  public long fallbackCount() {
    return scheduler.getFallbackCount();
  }

  /**
   * For benchmarks: the timings of the last (up to 65,536) successful
   * heartbeat calls as compact JSON (see {@link CallStats#toJson}), with
   * {@code fallbacks} and {@code failures} (the scheduler's counters since the
   * RM started) added; {@code reset} starts a new sample afterwards.
   */
  public String heartbeatStats(boolean reset) {
    return callStats("heartbeat", reset);
  }

  /** As {@link #heartbeatStats}, for any call: heartbeat, update, place, move. */
  public String callStats(String method, boolean reset) {
    return scheduler.getCallStats(method, reset);
  }

  /**
   * An operator's move from Slotwise's UI or API, carried out as the RM's own
   * move (state store, RMApp, this scheduler; which asks Python's {@code move}
   * in turn), so the RM and Python agree. Returns {"queue": ...} or {"error": ...}.
   */
  public String moveApplication(String appId, String queue) {
    return scheduler.adminMove(appId, queue);
  }

  /** As {@link #moveApplication}, for a priority: {"priority": in force} or {"error": ...}. */
  public String updateApplicationPriority(String appId, int priority) {
    return scheduler.adminPriority(appId, priority);
  }
}
