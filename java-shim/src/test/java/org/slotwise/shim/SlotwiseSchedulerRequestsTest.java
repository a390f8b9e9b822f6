package org.slotwise.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;

import org.apache.hadoop.yarn.api.records.Priority;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.api.records.ResourceRequest;
import org.junit.jupiter.api.Test;

/**
 * What the shim tells Python of an app's asks: enough for Python's
 * locality rule to be the shim's own (FifoFallback.allows), so Python never
 * offers what the shim must refuse.
 */
class SlotwiseSchedulerRequestsTest {
  private static ResourceRequest ask(int priority, String name, int count, boolean relax) {
    return ResourceRequest.newInstance(Priority.newInstance(priority), name, Resource.newInstance(1024, 1),
        count, relax);
  }

  @Test
  void aStrictNodeRequestCarriesItsInferredRacksAsStrict() {
    // As AMRMClient asks for host1 with relaxLocality false: the node ask
    // relaxable, its rack's ask and ANY's strict.
    List<Messages.Request> out = SlotwiseScheduler.requests(List.of(
        ask(20, "host1", 1, true), ask(20, "/rack1", 1, false), ask(20, ResourceRequest.ANY, 1, false)));
    assertEquals(1, out.size());
    Messages.Request r = out.get(0);
    assertEquals(Map.of("host1", 1), r.hosts());
    assertEquals(Map.of("/rack1", 1), r.racks());
    assertEquals(false, r.relaxLocality());
    assertEquals(List.of("/rack1"), r.strictRacks());
  }

  @Test
  void aStrictRackWithNoContainersLeftIsStillStrictAndRelaxableOnesAreNotListed() {
    List<Messages.Request> out = SlotwiseScheduler.requests(List.of(
        ask(1, "/rack2", 0, false), ask(1, "/rack1", 2, true), ask(1, "h1", 2, true),
        ask(1, ResourceRequest.ANY, 2, true), ask(5, ResourceRequest.ANY, 0, true)));
    assertEquals(1, out.size(), "a priority with no containers left at ANY is no request");
    Messages.Request r = out.get(0);
    assertEquals(List.of("/rack2"), r.strictRacks());
    assertEquals(Map.of("/rack1", 2), r.racks(), "racks of no container left out");
    assertTrue(r.relaxLocality());
  }

  @Test
  void aRequestWithNoStrictRackSendsNone() {
    Messages.Request r = SlotwiseScheduler.requests(List.of(ask(1, ResourceRequest.ANY, 3, true))).get(0);
    assertEquals(List.of(), r.strictRacks());
    assertTrue(!PolicyLink.write(r).contains("strict_racks"), PolicyLink.write(r));
  }
}
