package org.slotwise.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

class NodeBatcherTest {

  @Test
  void nodesThatAskWhileACallRunsGoTogetherInTheNextOnceEach() throws Exception {
    CountDownLatch inFirst = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    BlockingQueue<List<String>> calls = new LinkedBlockingQueue<>();
    NodeBatcher b = new NodeBatcher("test-batcher", 100, batch -> {
      calls.add(batch);
      if (calls.size() == 1) {
        inFirst.countDown();
        try {
          release.await();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    });
    b.start();
    try {
      b.offer("n1:1");
      assertTrue(inFirst.await(5, TimeUnit.SECONDS));
      // The "call" for n1 is under way: these gather, n2 twice.
      b.offer("n2:1");
      b.offer("n3:1");
      b.offer("n2:1");
      b.offer("n1:1");
      release.countDown();
      assertEquals(List.of("n1:1"), calls.poll(5, TimeUnit.SECONDS));
      assertEquals(List.of("n2:1", "n3:1", "n1:1"), calls.poll(5, TimeUnit.SECONDS));
      assertEquals(null, calls.poll(200, TimeUnit.MILLISECONDS));
      long[] counts = b.counts();
      assertEquals(2, counts[0]);
      assertEquals(4, counts[1]);
    } finally {
      b.stop();
    }
  }

  @Test
  void aBatchHoldsAtMostMaxNodesAndARemovedNodeIsNotSent() throws Exception {
    CountDownLatch inFirst = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    List<List<String>> calls = Collections.synchronizedList(new ArrayList<>());
    CountDownLatch three = new CountDownLatch(3);
    NodeBatcher b = new NodeBatcher("test-batcher", 2, batch -> {
      calls.add(batch);
      three.countDown();
      if (calls.size() == 1) {
        inFirst.countDown();
        try {
          release.await();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    });
    b.start();
    try {
      b.offer("a:1");
      assertTrue(inFirst.await(5, TimeUnit.SECONDS));
      for (String n : List.of("b:1", "c:1", "gone:1", "d:1", "e:1")) {
        b.offer(n);
      }
      b.remove("gone:1");
      release.countDown();
      assertTrue(three.await(5, TimeUnit.SECONDS));
      Thread.sleep(100);
      assertEquals(List.of(List.of("a:1"), List.of("b:1", "c:1"), List.of("d:1", "e:1")), calls);
    } finally {
      b.stop();
    }
  }

  @Test
  void anErrorInOneCallDoesNotStopTheThread() throws Exception {
    BlockingQueue<List<String>> calls = new LinkedBlockingQueue<>();
    NodeBatcher b = new NodeBatcher("test-batcher", 10, batch -> {
      calls.add(batch);
      if (batch.contains("bad:1")) {
        throw new IllegalStateException("boom");
      }
    });
    b.start();
    try {
      b.offer("bad:1");
      assertEquals(List.of("bad:1"), calls.poll(5, TimeUnit.SECONDS));
      b.offer("good:1");
      assertEquals(List.of("good:1"), calls.poll(5, TimeUnit.SECONDS));
    } finally {
      b.stop();
    }
  }
}
