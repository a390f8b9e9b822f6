package org.slotwise.shim;

/**
 * What Python sees as {@code gateway.entry_point}: every method takes and
 * answers one JSON message of the protocol (docs/protocol.md) and never
 * throws; a message that does not bind is answered as refused.
 */
public final class GatewayEntryPoint {
  private final ShimRuntime scheduler; // the ResourceManager's or the JobTracker's shim

  GatewayEntryPoint(ShimRuntime scheduler) {
    this.scheduler = scheduler;
  }

  /** Register: Python offers {@code policy}, with its callback port and a fresh token. */
  public String register(PolicyServer policy, String register) {
    return Wire.write(scheduler.registerPolicy(policy, register));
  }

  /** Unregister: a clean exit. */
  public String unregister(String unregister) {
    try {
      String session = Wire.read(unregister, Messages.Unregister.class).session();
      return Wire.write(new Messages.Unregistered(scheduler.unregisterPolicy(session)));
    } catch (IllegalArgumentException e) {
      return Wire.write(new Messages.Unregistered(false));
    }
  }

  /** StatusRequest to ShimStatus: liveness, and whether the RM schedules without Python. */
  public String status(String request) {
    String session;
    try {
      session = Wire.read(request, Messages.StatusRequest.class).session();
    } catch (IllegalArgumentException e) {
      session = null;
    }
    return Wire.write(scheduler.linkStatus(session));
  }

  /** MoveRequest to MoveAnswer: an operator's move, carried out as the RM's own move. */
  public String moveApplication(String request) {
    try {
      Messages.MoveRequest r = Wire.read(request, Messages.MoveRequest.class);
      return Wire.write(scheduler.adminMove(r.app(), r.queue()));
    } catch (IllegalArgumentException e) {
      return Wire.write(new Messages.MoveAnswer(null, e.getMessage()));
    }
  }

  /** PriorityRequest to PriorityAnswer, through the RM (capped by its maximum). */
  public String updateApplicationPriority(String request) {
    try {
      Messages.PriorityRequest r = Wire.read(request, Messages.PriorityRequest.class);
      return Wire.write(scheduler.adminPriority(r.app(), r.priority()));
    } catch (IllegalArgumentException e) {
      return Wire.write(new Messages.PriorityAnswer(null, e.getMessage()));
    }
  }
}
