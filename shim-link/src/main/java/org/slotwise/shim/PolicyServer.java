package org.slotwise.shim;

/**
 * What the Python policy server implements. Every argument and answer is one
 * JSON message of the protocol (docs/protocol.md; the schema names the
 * types), so each call is exactly one Py4J round trip.
 */
public interface PolicyServer {
  /** Payload to HeartbeatAnswer: decisions for the node(s) that heartbeated. */
  String heartbeat(String payload);

  /** Payload (with the RM's truth) to UpdateAnswer: preemptions, the queue table, moves. */
  String update(String payload);

  /** PlaceRequest to PlaceAnswer: the queue for a new app. */
  String place(String request);

  /** MoveRequest to MoveAnswer: where a moved app goes. */
  String move(String request);

  /** Ping to Pong: is this policy alive (asked when another one registers)? */
  String ping(String ping);
}
