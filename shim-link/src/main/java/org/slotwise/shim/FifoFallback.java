package org.slotwise.shim;

import java.util.Collection;
import java.util.Comparator;
import java.util.List;

/**
 * The order of the built-in FIFO that schedules a heartbeat when Python
 * cannot: apps by priority (higher first), then submit time, then id. Inside
 * an app its requests go lower request priority number first, then
 * node-local, rack-local, off-switch, as FifoScheduler does; the masters
 * apply those rules and Hadoop's own locality check.
 */
public final class FifoFallback {
  private FifoFallback() {
  }

  /** What the ordering needs to know about an app; {@code attempt} is the caller's. */
  public record App<T>(T attempt, String id, int priority, long submitTime) {
  }

  public static final Comparator<App<?>> APP_ORDER = Comparator.comparingInt((App<?> a) -> -a.priority())
      .thenComparingLong(App::submitTime)
      .thenComparing(App::id);

  public static <T> List<App<T>> order(Collection<App<T>> apps) {
    return apps.stream().sorted(APP_ORDER).toList();
  }
}
