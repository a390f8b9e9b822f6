package org.slotwise.shim;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.function.ToIntFunction;

/**
 * The built-in FIFO that schedules a heartbeat when Python cannot: apps by
 * priority (higher first), then submit time, then id; inside an app, its
 * requests by request priority (lower number first, as YARN orders them);
 * for each request node-local, then rack-local, then off-switch, as
 * FifoScheduler does (which level a request allows on a node is Hadoop's own
 * check, made by the scheduler). Pure decisions on plain data; the scheduler
 * applies them.
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
}
