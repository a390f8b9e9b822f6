package org.slotwise.sls;

import org.slotwise.shim.PolicyLink;

/**
 * Times Slotwise's heartbeat calls to Python inside SLS (slotwise.call-observer.class):
 * with async scheduling a NODE_UPDATE no longer waits on Python, so the round trip is
 * measured where it happens, on the scheduling thread.
 */
public final class SlsCallObserver implements PolicyLink.CallObserver {
  @Override
  public void observe(String method, long waitNs, long buildNs, long invokeNs, long totalNs,
      int argChars, int answerChars) {
    if ("heartbeat".equals(method)) {
      SlsTimings.call(buildNs, totalNs);
    }
  }
}
