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
}
