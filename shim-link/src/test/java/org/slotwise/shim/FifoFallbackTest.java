package org.slotwise.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.slotwise.shim.Messages.Locality;

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

  @Test
  void prefersNodeLocalThenRackLocalThenOffSwitch() {
    assertEquals(Locality.NODE_LOCAL, FifoFallback.locality(3, 2, 1, true, true));
    assertEquals(Locality.RACK_LOCAL, FifoFallback.locality(3, 2, 0, true, true));
    assertEquals(Locality.OFF_SWITCH, FifoFallback.locality(3, 0, 0, true, true));
    assertNull(FifoFallback.locality(0, 2, 1, true, true));
  }

  @Test
  void honoursRelaxLocality() {
    // ANY may not be relaxed: only nodes or racks that were asked for.
    assertNull(FifoFallback.locality(3, 0, 0, true, false));
    assertEquals(Locality.RACK_LOCAL, FifoFallback.locality(3, 2, 0, true, false));
    // The rack may not be relaxed: only the hosts asked for on it.
    assertNull(FifoFallback.locality(3, 2, 0, false, true));
    assertEquals(Locality.NODE_LOCAL, FifoFallback.locality(3, 2, 1, false, false));
  }

  @Test
  void checksAnAssignedLocality() {
    assertTrue(FifoFallback.allows(Locality.NODE_LOCAL, 1, 1, 1, true, true));
    assertFalse(FifoFallback.allows(Locality.NODE_LOCAL, 1, 1, 0, true, true));
    assertFalse(FifoFallback.allows(Locality.NODE_LOCAL, 1, 0, 1, true, true));
    assertTrue(FifoFallback.allows(Locality.RACK_LOCAL, 1, 1, 0, true, true));
    assertFalse(FifoFallback.allows(Locality.RACK_LOCAL, 1, 0, 0, true, true));
    // An off-switch container is fine on a node that was also asked for.
    assertTrue(FifoFallback.allows(Locality.OFF_SWITCH, 1, 1, 1, true, true));
    assertFalse(FifoFallback.allows(Locality.OFF_SWITCH, 1, 0, 0, true, false));
    assertFalse(FifoFallback.allows(Locality.OFF_SWITCH, 0, 0, 0, true, true));
  }
}
