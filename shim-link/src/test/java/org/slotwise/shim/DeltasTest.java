package org.slotwise.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;

import org.junit.jupiter.api.Test;
import org.slotwise.shim.PolicyLink.Deltas;

class DeltasTest {

  private static Messages.Node node(String id) {
    return new Messages.Node(id, id.split(":")[0], "/default-rack",
        new Messages.Resource(8192, 8, 0, 0));
  }

  private static Messages.Container container(String id, String engineId) {
    return new Messages.Container(id, "application_1_0001", "host1:45454",
        new Messages.Resource(1024, 1, 0, 0), false, 20, engineId);
  }

  @Test
  void startsWithAFullResyncAndKeepsNoDeltasMeanwhile() {
    Deltas p = new Deltas();
    p.nodeChanged(node("host1:1"));
    p.launched(container("c1", null));
    Deltas.Taken d = p.take();
    assertTrue(d.full());
    assertTrue(d.nodes().isEmpty());
    assertTrue(d.launched().isEmpty());
    assertFalse(p.take().full());
  }

  @Test
  void collectsDeltasUntilTaken() {
    Deltas p = new Deltas();
    p.take();
    p.nodeChanged(node("host1:1"));
    p.nodeChanged(node("host2:1"));
    p.nodeRemoved("host2:1");
    p.appChanged("application_1_0001");
    p.appChanged("application_1_0002");
    p.appChanged("application_1_0001");
    p.appRemoved("application_1_0002", Messages.FinalState.FAILED);
    p.appChanged("application_1_0003");
    p.appRemoved("application_1_0003", null); // how it ended not known: no word on it
    p.appChanged("application_1_0002"); // stale event after removal: ignored
    p.launched(container("c1", "e1"));
    p.rejected("e2", Messages.Reason.BLACKLISTED);
    p.rejected(null, Messages.Reason.ERROR);
    p.finished("c0");
    Deltas.Taken d = p.take();
    assertFalse(d.full());
    assertEquals(List.of("host1:1"), d.nodes().stream().map(Messages.Node::id).toList());
    assertEquals(List.of("host2:1"), d.nodesRemoved());
    assertEquals(List.of("application_1_0001"), d.appsChanged());
    assertEquals(List.of("application_1_0002", "application_1_0003"), d.appsRemoved());
    assertEquals(List.of(new Messages.AppEnd("application_1_0002", Messages.FinalState.FAILED)),
        d.appsFinished());
    assertEquals("e1", d.launched().get(0).engineId());
    assertEquals(List.of(new Messages.Refusal("e2", Messages.Reason.BLACKLISTED)), d.rejected());
    assertEquals(List.of("c0"), d.finished());
    Deltas.Taken empty = p.take();
    assertTrue(empty.nodes().isEmpty() && empty.launched().isEmpty() && empty.finished().isEmpty()
        && empty.appsFinished().isEmpty());
  }

  @Test
  void aNodeThatComesBackIsNotRemoved() {
    Deltas p = new Deltas();
    p.take();
    p.nodeRemoved("host1:1");
    p.nodeChanged(node("host1:1"));
    Deltas.Taken d = p.take();
    assertTrue(d.nodesRemoved().isEmpty());
    assertEquals(1, d.nodes().size());
  }

  @Test
  void requireFullDropsPendingDeltas() {
    Deltas p = new Deltas();
    p.take();
    p.launched(container("c1", null));
    p.requireFull();
    Deltas.Taken d = p.take();
    assertTrue(d.full());
    assertTrue(d.launched().isEmpty());
  }

  @Test
  void tooManyPendingDeltasTurnIntoAFullResync() {
    Deltas p = new Deltas();
    p.take();
    for (int i = 0; i <= Deltas.MAX_PENDING; i++) {
      p.finished("c" + i);
    }
    Deltas.Taken t = p.take();
    assertTrue(t.full());
    assertTrue(t.finished().isEmpty());
  }
}
