package org.slotwise.shim;

/**
 * What the Python policy server implements (docs/protocol.md). Every argument
 * and every answer is one compact JSON string, so each call is exactly one
 * Py4J round trip.
 */
public interface PolicyServer {
  /** Decisions for one node heartbeat: {"assign": [...], "preempt": [...]}. */
  String heartbeat(String payload);

  /** Periodic call: {"preempt": [...], "queues": [...]}. */
  String update(String payload);

  /** Pool for a new app: {"queue": "root.x"} or {"reject": "reason"}. */
  String place(String app);

  /** yarn application -movetoqueue: {"queue": "root.y"} or {"error": "reason"}. */
  String move(String appId, String queue);
}
