package org.slotwise.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

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

  @Test
  void servesRequestsLowestPriorityNumberFirst() {
    // MapReduce: AM 0, failed maps 5, reduces 10, maps 20.
    assertEquals(Arrays.asList(0, 5, 10, 20),
        FifoFallback.byRequestPriority(Arrays.asList(20, 0, 10, 5), Integer::intValue));
  }
}
