package org.slotwise.shim;

import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.hadoop.yarn.api.records.FinalApplicationStatus;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.api.records.ResourceRequest;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.RMApp;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.RMAppState;
import org.apache.hadoop.yarn.server.resourcemanager.rmcontainer.RMContainer;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.common.fica.FiCaSchedulerNode;
import org.apache.hadoop.yarn.util.resource.Resources;

/**
 * YARN's objects as the protocol's records: a node, its room, a container,
 * an attempt's asks, an app's truth for Python to check. Pure functions;
 * the scheduler puts them in its payloads.
 */
final class YarnRecords {
  private YarnRecords() {
  }

  /**
   * How an app ended, from the state the RM removes it in: FAILED and KILLED
   * as they are; FINISHED as its AM reported it (SUCCEEDED, FAILED or KILLED);
   * anything else, or an AM that said nothing, UNDEFINED. Null: no state given.
   */
  static Messages.FinalState finalState(RMAppState state, RMApp app) {
    FinalApplicationStatus s = app == null ? null : app.getFinalApplicationStatus();
    return state == null ? null : switch (state) {
      case FAILED -> Messages.FinalState.FAILED;
      case KILLED -> Messages.FinalState.KILLED;
      case FINISHED -> s == FinalApplicationStatus.SUCCEEDED ? Messages.FinalState.SUCCEEDED
          : s == FinalApplicationStatus.FAILED ? Messages.FinalState.FAILED
          : s == FinalApplicationStatus.KILLED ? Messages.FinalState.KILLED : Messages.FinalState.UNDEFINED;
      default -> Messages.FinalState.UNDEFINED;
    };
  }

  static List<Messages.Beat> beats(Collection<FiCaSchedulerNode> beating) {
    if (beating == null) {
      return null;
    }
    List<Messages.Beat> beats = new ArrayList<>(beating.size());
    for (FiCaSchedulerNode n : beating) {
      beats.add(new Messages.Beat(n.getNodeID().toString(), res(n.getUnallocatedResource())));
    }
    return beats;
  }

  static Messages.Node nodeRecord(FiCaSchedulerNode n) {
    return new Messages.Node(n.getNodeID().toString(), n.getNodeName(), n.getRackName(),
        res(n.getTotalResource()));
  }

  static Messages.Container containerRecord(RMContainer c, String engineId, boolean am) {
    return new Messages.Container(c.getContainerId().toString(),
        c.getApplicationAttemptId().getApplicationId().toString(),
        c.getAllocatedNode().toString(), res(c.getAllocatedResource()), am,
        c.getAllocatedSchedulerKey().getPriority().getPriority(), engineId);
  }

  /** A YARN resource as the protocol's (Messages.Resource clamps a negative room to 0). */
  static Messages.Resource res(org.apache.hadoop.yarn.api.records.Resource r) {
    return new Messages.Resource(r.getMemorySize(), r.getVirtualCores(), 0, 0);
  }

  /** An attempt's outstanding asks, one Request per request priority (none if stopped). */
  static List<Messages.Request> requests(SlotwiseAppAttempt attempt) {
    if (attempt == null || attempt.isStopped()) {
      return new ArrayList<>();
    }
    return requests(attempt.getAppSchedulingInfo().getAllResourceRequests());
  }

  /**
   * YARN's resource requests as the protocol's: per request priority, the
   * ANY ask's count, size and relaxLocality, the hosts' and racks' counts,
   * and the racks whose own ask forbids relaxing (what canDelayTo reads).
   */
  static List<Messages.Request> requests(Collection<ResourceRequest> asks) {
    List<Messages.Request> out = new ArrayList<>();
    Map<Integer, List<ResourceRequest>> byPriority = new TreeMap<>();
    for (ResourceRequest r : asks) {
      byPriority.computeIfAbsent(r.getPriority().getPriority(), p -> new ArrayList<>()).add(r);
    }
    for (Map.Entry<Integer, List<ResourceRequest>> e : byPriority.entrySet()) {
      long total = 0;
      boolean relax = true;
      Resource size = Resources.none();
      Map<String, Integer> hosts = new LinkedHashMap<>();
      Map<String, Integer> racks = new LinkedHashMap<>();
      List<String> strictRacks = new ArrayList<>(); // canDelayTo(rack) is false there, asks or not
      for (ResourceRequest r : e.getValue()) {
        String name = r.getResourceName();
        if (ResourceRequest.ANY.equals(name)) {
          total += r.getNumContainers();
          size = r.getCapability();
          relax = r.getRelaxLocality();
          continue;
        }
        boolean rack = name.startsWith("/");
        if (rack && !r.getRelaxLocality()) {
          strictRacks.add(name);
        }
        if (r.getNumContainers() > 0) {
          (rack ? racks : hosts).merge(name, r.getNumContainers(),
              (x, y) -> (int) Math.min(Integer.MAX_VALUE, (long) x + y));
        }
      }
      if (total > 0) {
        out.add(new Messages.Request(e.getKey(), res(size),
            (int) Math.min(Integer.MAX_VALUE, total), hosts, racks, relax, strictRacks));
      }
    }
    return out;
  }

  /** The RM's truth about one app: its pending asks and live containers, summed. */
  static Messages.AppCheck appCheck(String id, SlotwiseAppAttempt attempt) {
    long mb = 0;
    long vc = 0;
    for (Messages.Request r : requests(attempt)) { // saturating: Resource clamps to 2^53 - 1
      mb = saturatedAdd(mb, saturatedMultiply(r.resource().memoryMb(), r.count()));
      vc = saturatedAdd(vc, saturatedMultiply(r.resource().vcores(), r.count()));
    }
    if (attempt == null) {
      return new Messages.AppCheck(id, new Messages.Resource(mb, vc, 0, 0),
          res(Resources.none()), 0);
    }
    return new Messages.AppCheck(id, new Messages.Resource(mb, vc, 0, 0),
        res(attempt.getCurrentConsumption()), attempt.getLiveContainers().size());
  }

  static long saturatedMultiply(long a, long b) {
    long hi = Math.multiplyHigh(a, b);
    long lo = a * b;
    return (hi == 0 && lo >= 0) || (hi == -1 && lo < 0) ? lo : Long.MAX_VALUE;
  }

  static long saturatedAdd(long a, long b) {
    long r = a + b;
    return ((a ^ r) & (b ^ r)) < 0 ? Long.MAX_VALUE : r;
  }
}
