package org.slotwise.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentSkipListSet;

import org.apache.hadoop.yarn.api.records.Priority;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.api.records.ResourceRequest;
import org.apache.hadoop.yarn.server.scheduler.SchedulerRequestKey;

import org.junit.jupiter.api.Test;

class FifoFallbackTest {

  private static FifoFallback.App<String> app(String id, int priority, long submit) {
    return new FifoFallback.App<>(id, id, priority, submit);
  }

  @Test
  void ordersAppsByPriorityThenSubmitTimeThenId() {
    List<FifoFallback.App<String>> apps = Arrays.asList(
        app("application_1_0004", 0, 300),
        app("application_1_0001", 0, 100),
        app("application_1_0003", 5, 400),
        app("application_1_0002", 0, 100),
        app("application_1_0005", -1, 50));
    List<String> ids = new ArrayList<>();
    for (FifoFallback.App<String> a : FifoFallback.order(apps)) {
      ids.add(a.id());
    }
    assertEquals(Arrays.asList("application_1_0003", "application_1_0001",
        "application_1_0002", "application_1_0004", "application_1_0005"), ids);
  }

  /** The YARN shim's FIFO serves an app's requests in the order YARN keeps its scheduler keys. */
  @Test
  void yarnKeepsAnAppsRequestsLowestPriorityNumberFirst() {
    // MapReduce: AM 0, failed maps 5, reduces 10, maps 20.
    Set<SchedulerRequestKey> keys = new ConcurrentSkipListSet<>();
    for (int p : new int[] {20, 0, 10, 5}) {
      keys.add(SchedulerRequestKey.create(ResourceRequest.newInstance(Priority.newInstance(p), ResourceRequest.ANY,
          Resource.newInstance(1024, 1), 1)));
    }
    assertEquals(Arrays.asList(0, 5, 10, 20), keys.stream().map(k -> k.getPriority().getPriority()).toList());
  }
}
