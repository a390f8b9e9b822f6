package org.slotwise.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

class NodeBatcherTest {

  /** A batcher whose first "call to Python" holds until released, as a slow call does. */
  private static final class SlowFirstCall {
    final CountDownLatch inFirst = new CountDownLatch(1);
    final CountDownLatch release = new CountDownLatch(1);
    final BlockingQueue<List<String>> calls = new LinkedBlockingQueue<>();
    final NodeBatcher<String> batcher;

    SlowFirstCall(int maxPerCall) {
      batcher = new NodeBatcher<>("test-batcher", maxPerCall, batch -> {
        boolean first = calls.isEmpty();
        calls.add(batch);
        if (first) {
          inFirst.countDown();
          try {
            release.await();
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        }
      });
      batcher.start();
    }

    /** Offers {@code first}, waits until its call is under way, offers the rest, releases it. */
    void offerWhileTheFirstCallRuns(String first, Runnable meanwhile) throws InterruptedException {
      batcher.offer(first);
      assertTrue(inFirst.await(60, TimeUnit.SECONDS));
      meanwhile.run();
      release.countDown();
    }
  }

  @Test
  void nodesThatAskWhileACallRunsGoTogetherInTheNextOnceEach() throws Exception {
    SlowFirstCall t = new SlowFirstCall(100);
    NodeBatcher<String> b = t.batcher;
    try {
      // The "call" for n1 is under way: these gather, n2 twice.
      t.offerWhileTheFirstCallRuns("n1:1", () -> {
        b.offer("n2:1");
        b.offer("n3:1");
        b.offer("n2:1");
        b.offer("n1:1");
      });
      assertEquals(List.of("n1:1"), t.calls.poll(60, TimeUnit.SECONDS));
      assertEquals(List.of("n2:1", "n3:1", "n1:1"), t.calls.poll(60, TimeUnit.SECONDS));
      assertEquals(null, t.calls.poll(200, TimeUnit.MILLISECONDS));
      long[] counts = b.counts();
      assertEquals(2, counts[0]);
      assertEquals(4, counts[1]);
    } finally {
      b.stop();
    }
  }

  @Test
  void aBatchHoldsAtMostMaxNodesAndARemovedNodeIsNotSent() throws Exception {
    SlowFirstCall t = new SlowFirstCall(2);
    NodeBatcher<String> b = t.batcher;
    try {
      t.offerWhileTheFirstCallRuns("a:1", () -> {
        for (String n : List.of("b:1", "c:1", "gone:1", "d:1", "e:1")) {
          b.offer(n);
        }
        b.remove("gone:1");
      });
      assertEquals(List.of("a:1"), t.calls.poll(60, TimeUnit.SECONDS));
      assertEquals(List.of("b:1", "c:1"), t.calls.poll(60, TimeUnit.SECONDS));
      assertEquals(List.of("d:1", "e:1"), t.calls.poll(60, TimeUnit.SECONDS));
      assertEquals(null, t.calls.poll(100, TimeUnit.MILLISECONDS));
    } finally {
      b.stop();
    }
  }

  @Test
  void anErrorInOneCallDoesNotStopTheThread() throws Exception {
    BlockingQueue<List<String>> calls = new LinkedBlockingQueue<>();
    NodeBatcher<String> b = new NodeBatcher<>("test-batcher", 10, batch -> {
      calls.add(batch);
      if (batch.contains("bad:1")) {
        throw new IllegalStateException("boom");
      }
    });
    b.start();
    try {
      b.offer("bad:1");
      assertEquals(List.of("bad:1"), calls.poll(60, TimeUnit.SECONDS));
      b.offer("good:1");
      assertEquals(List.of("good:1"), calls.poll(60, TimeUnit.SECONDS));
    } finally {
      b.stop();
    }
  }
}
