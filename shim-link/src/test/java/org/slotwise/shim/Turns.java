package org.slotwise.shim;

import java.util.function.Consumer;

/** One call as a master makes it, for tests: take the line, send, carry out, give the line back. */
public final class Turns {
  private Turns() {
  }

  /** {@code payload} sent as a heartbeat with that deadline; the answer read as {@code type} and given to {@code apply}. */
  public static <A> A call(PolicyLink link, long deadlineMs, String payload, Class<A> type, Consumer<A> apply) {
    try (PolicyLink.Turn turn = link.turn("heartbeat", deadlineMs)) {
      A a = turn == null ? null : turn.send(payload, type);
      if (a != null) {
        apply.accept(a);
      }
      return a;
    }
  }

  /** A heartbeat of "{}" with the link's deadline, its answer not carried out. */
  public static Messages.HeartbeatAnswer heartbeat(PolicyLink link) {
    return call(link, link.getTimeoutMs(), "{}", Messages.HeartbeatAnswer.class, a -> { });
  }
}
