package org.slotwise.shim;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.function.ToIntFunction;

import org.slotwise.shim.Messages.Locality;

/**
 * The built-in FIFO that schedules a heartbeat when Python cannot: apps by
 * priority (higher first), then submit time, then id; inside an app, its
 * requests by request priority (lower number first, as YARN orders them);
 * for each request node-local, then rack-local, then off-switch, as
 * FifoScheduler does. Pure decisions on plain data; the scheduler applies
 * them.
 */
public final class FifoFallback {
  private FifoFallback() {
  }

  /** What the ordering needs to know about an app; {@code attempt} is the caller's. */
  public record App<T>(T attempt, String id, int priority, long submitTime) {
  }

  public static final Comparator<App<?>> APP_ORDER = Comparator
      .comparingInt((App<?> a) -> -a.priority())
      .thenComparingLong(App::submitTime)
      .thenComparing(App::id);

  public static <T> List<App<T>> order(Collection<App<T>> apps) {
    List<App<T>> out = new ArrayList<>(apps);
    out.sort(APP_ORDER);
    return out;
  }

  /**
   * An app's requests in the order they are served: lower request priority
   * number first (stable for equal priorities).
   */
  public static <K> List<K> byRequestPriority(Collection<K> requests, ToIntFunction<K> priority) {
    List<K> out = new ArrayList<>(requests);
    out.sort(Comparator.comparingInt(priority));
    return out;
  }

  /**
   * Whether one container of a request may go on a node at this locality
   * (YARN's relaxLocality rules): node_local needs asks for the node's host
   * and rack; rack_local an ask for the rack, and the rack must not forbid
   * relaxing to it; off_switch an ANY ask that may be relaxed, on a rack that
   * does not forbid it.
   *
   * @param any outstanding containers at ANY
   * @param rack outstanding containers on the node's rack (0 if no ask)
   * @param host outstanding containers on the node's host (0 if no ask)
   * @param rackRelax the rack ask's relaxLocality (true if there is no rack ask)
   * @param anyRelax the ANY ask's relaxLocality
   */
  public static boolean allows(Locality locality, int any, int rack, int host,
      boolean rackRelax, boolean anyRelax) {
    if (any <= 0) {
      return false;
    }
    switch (locality) {
      case NODE_LOCAL: return host > 0 && rack > 0;
      case RACK_LOCAL: return rack > 0 && rackRelax;
      default: return rackRelax && anyRelax;
    }
  }

  /** The best locality {@link #allows} for one container, or null. */
  public static Locality locality(int any, int rack, int host, boolean rackRelax, boolean anyRelax) {
    for (Locality level : Locality.values()) {
      if (allows(level, any, rack, host, rackRelax, anyRelax)) {
        return level;
      }
    }
    return null;
  }
}
