package org.slotwise.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

class NodeBatcherTest {

  @Test
  void nodesThatAskBetweenTwoTakesGoTogetherInTheNextOnceEach() throws Exception {
    SlotwiseScheduler.NodeBatcher<String> b = new SlotwiseScheduler.NodeBatcher<>(100);
    b.offer("n1:1");
    assertEquals(List.of("n1:1"), b.take());
    // The "call" for n1 is under way: these gather, n2 twice.
    b.offer("n2:1");
    b.offer("n3:1");
    b.offer("n2:1");
    b.offer("n1:1");
    assertEquals(List.of("n2:1", "n3:1", "n1:1"), b.take());
    long[] counts = b.counts();
    assertEquals(2, counts[0]);
    assertEquals(4, counts[1]);
  }

  @Test
  void aBatchHoldsAtMostMaxNodesAndARemovedNodeIsNotSent() throws Exception {
    SlotwiseScheduler.NodeBatcher<String> b = new SlotwiseScheduler.NodeBatcher<>(2);
    for (String n : List.of("a:1", "b:1", "c:1", "gone:1", "d:1", "e:1")) {
      b.offer(n);
    }
    b.remove("gone:1");
    assertEquals(List.of("a:1", "b:1"), b.take());
    assertEquals(List.of("c:1", "d:1"), b.take());
    assertEquals(List.of("e:1"), b.take());
  }

  @Test
  void takeWaitsForAnOffer() throws Exception {
    SlotwiseScheduler.NodeBatcher<String> b = new SlotwiseScheduler.NodeBatcher<>(10);
    BlockingQueue<List<String>> taken = new LinkedBlockingQueue<>();
    Thread t = new Thread(() -> {
      try {
        taken.add(b.take());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    });
    t.start();
    assertEquals(null, taken.poll(100, TimeUnit.MILLISECONDS));
    b.offer("late:1");
    assertEquals(List.of("late:1"), taken.poll(60, TimeUnit.SECONDS));
    t.join(5000);
  }
}
