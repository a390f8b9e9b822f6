"""Property tests of PolicyCore over random message sequences: a model RM
(nodes, apps, containers, the shim's delta rules) talks to a core; bad
messages are mixed in.  After every step the engine's invariants hold; a
bad message changes nothing; Python's view matches the RM's truth at every
check; and a full resync from wherever the core got to gives the state a
fresh core gets from the same truth."""

from __future__ import annotations

import copy
import json

from hypothesis import HealthCheck, given, settings, strategies as st

from enginecheck import check_invariants, truth_state
from slotwise import protocol as wire
from slotwise.clock import ManualClock
from slotwise.config import parse_allocations
from slotwise.core import PolicyCore
from slotwise.settings import EngineSettings

ALLOC = """<allocations>
  <queue name="a"><maxRunningApps>2</maxRunningApps></queue>
  <queue name="b"><weight>2</weight><minResources>2048 mb, 2 vcores</minResources></queue>
  <queue name="p" type="parent"><queue name="c"/></queue>
  <userMaxAppsDefault>3</userMaxAppsDefault>
  <queuePlacementPolicy>
    <rule name="specified" create="false"/>
    <rule name="default" queue="b"/>
  </queuePlacementPolicy>
</allocations>"""
QUEUES = ["root.a", "root.b", "root.p.c", "root.p", "root", "root.a.x", "root.new"]


class Model:
    """The RM as the shim sees it, sending deltas the way the shim does."""

    def __init__(self, clock: ManualClock) -> None:
        self.clock = clock
        self.nodes: dict[str, dict] = {}
        self.apps: dict[str, dict] = {}
        self.containers: dict[str, dict] = {}
        self.seq = 0
        self.gone: set[str] = set()  # YARN never reuses an app id
        self.full = True
        self.reset_deltas()

    def reset_deltas(self) -> None:
        self.d = {"nodes": {}, "nodes_removed": [], "apps": set(), "apps_removed": [], "launched": [],
                  "rejected": [], "finished": []}

    def now_ms(self) -> int:
        return round(self.clock.now() * 1000)

    def message(self, beat: str | None = None, check: bool = False) -> dict:
        if self.full:
            msg = {"full": True, "now_ms": self.now_ms(), "nodes": list(self.nodes.values()),
                   "apps": [copy.deepcopy(a) for a in self.apps.values()],
                   "launched": list(self.containers.values())}
        else:
            d = self.d
            msg = {"now_ms": self.now_ms(), "nodes": list(d["nodes"].values()), "nodes_removed": d["nodes_removed"],
                   "apps": [copy.deepcopy(self.apps[a]) for a in sorted(d["apps"]) if a in self.apps],
                   "apps_removed": d["apps_removed"], "launched": d["launched"], "rejected": d["rejected"],
                   "finished": d["finished"]}
        if beat:
            msg["beats"] = [{"node": beat}]
        if check:
            msg["check"] = [self.truth(a) for a in self.apps]
        return msg

    def sent(self) -> None:
        self.full = False
        self.reset_deltas()

    def truth(self, app_id: str) -> dict:
        app = self.apps[app_id]
        mine = [c for c in self.containers.values() if c["app"] == app_id]
        pending = [r["resource"]["memory_mb"] * r["count"] for r in app["requests"]]
        return {"app": app_id, "pending": {"memory_mb": sum(pending), "vcores": sum(r["count"] for r in app["requests"])},
                "allocated": {"memory_mb": sum(c["resource"]["memory_mb"] for c in mine),
                              "vcores": sum(c["resource"]["vcores"] for c in mine)},
                "containers": len(mine)}

    # -------------------------------------------------------------- changes
    def add_node(self, k: int, mb: int) -> None:
        nid = f"n{k}:1"
        self.nodes[nid] = {"id": nid, "host": f"n{k}", "rack": f"/r{k % 2}",
                           "capacity": {"memory_mb": mb, "vcores": mb // 1024}}
        if nid in self.d["nodes_removed"]:
            self.d["nodes_removed"].remove(nid)
        self.d["nodes"][nid] = self.nodes[nid]

    def remove_node(self, k: int) -> None:
        nid = f"n{k}:1"
        if nid not in self.nodes:
            return
        for cid in [c for c, v in self.containers.items() if v["node"] == nid]:
            self.finish(cid)
        del self.nodes[nid]
        self.d["nodes"].pop(nid, None)
        self.d["nodes_removed"].append(nid)

    def add_app(self, k: int, queue: str, priority: int, count: int) -> None:
        aid = f"app{k}"
        if aid in self.apps or aid in self.gone:
            return
        self.apps[aid] = {"id": aid, "user": f"u{k % 3}", "queue": queue, "priority": priority,
                          "submit_ms": self.now_ms(), "unmanaged": k % 2 == 0,
                          "requests": [{"priority": 1, "resource": {"memory_mb": 1024, "vcores": 1}, "count": count}]}
        self.d["apps"].add(aid)

    def change_app(self, k: int, count: int) -> None:
        aid = f"app{k}"
        if aid in self.apps:
            self.apps[aid]["requests"][0]["count"] = count
            self.d["apps"].add(aid)

    def remove_app(self, k: int) -> None:
        aid = f"app{k}"
        if aid not in self.apps:
            return
        for cid in [c for c, v in self.containers.items() if v["app"] == aid]:
            self.finish(cid)
        del self.apps[aid]
        self.gone.add(aid)
        self.d["apps"].discard(aid)
        self.d["apps_removed"].append(aid)

    def finish(self, cid: str) -> None:
        if self.containers.pop(cid, None) is not None:
            self.d["finished"].append(cid)

    def launch(self, app_id: str, node_id: str, engine_id: str | None) -> bool:
        """The shim's check and allocation; a refused engine assignment is
        reported with its app."""
        app, node = self.apps.get(app_id), self.nodes.get(node_id)
        used = sum(c["resource"]["memory_mb"] for c in self.containers.values() if c["node"] == node_id)
        req = app["requests"][0] if app else None
        if not app or not node or req["count"] <= 0 or used + 1024 > node["capacity"]["memory_mb"]:
            if engine_id:
                self.d["rejected"].append({"engine_id": engine_id, "reason": "no_room"})
                if app:
                    self.d["apps"].add(app_id)
            return False
        self.seq += 1
        cid = f"container_{self.seq}"
        am = not app["unmanaged"] and not any(c["app"] == app_id for c in self.containers.values())
        self.containers[cid] = {"id": cid, "app": app_id, "node": node_id, "resource": {"memory_mb": 1024, "vcores": 1},
                                "am": am, "priority": 1, "engine_id": engine_id}
        self.d["launched"].append(self.containers[cid])
        req["count"] -= 1
        if engine_id is None:
            self.d["apps"].add(app_id)  # the FIFO took an ask Python did not
        return True

    def move(self, app_id: str, queue: str) -> None:
        if app_id in self.apps:
            self.apps[app_id]["queue"] = queue
            self.d["apps"].add(app_id)


heartbeats = st.tuples(st.just("heartbeat"), st.integers(0, 3), st.lists(st.booleans(), max_size=4))
updates = st.tuples(st.just("update"),)
ops = st.lists(st.one_of(
    heartbeats, updates, heartbeats, updates,  # weighted: calls are what most sequences are made of
    st.tuples(st.just("add_node"), st.integers(0, 3), st.sampled_from([2048, 4096])),
    st.tuples(st.just("remove_node"), st.integers(0, 3)),
    st.tuples(st.just("add_app"), st.integers(0, 7), st.sampled_from(QUEUES), st.integers(0, 3), st.integers(0, 4)),
    st.tuples(st.just("change_app"), st.integers(0, 7), st.integers(0, 4)),
    st.tuples(st.just("remove_app"), st.integers(0, 7)),
    st.tuples(st.just("finish"), st.integers(0, 20)),
    st.tuples(st.just("fallback"), st.integers(0, 7), st.integers(0, 3)),
    st.tuples(st.just("tick"), st.integers(1, 5000)),
    st.tuples(st.just("garbage"), st.integers(0, 5)),
    st.tuples(st.just("resync"),),
), max_size=50)


def corrupt(msg: dict, how: int) -> str:
    msg = copy.deepcopy(msg)
    if how == 0:
        msg["surprise"] = 1
    elif how == 1:
        msg["now_ms"] = "soon"
    elif how == 2:
        msg.setdefault("nodes", []).extend([{"id": "dup:1", "host": "d", "rack": "/r",
                                             "capacity": {"memory_mb": 1024}}] * 2)
    elif how == 3:
        msg.setdefault("launched", []).append({"id": "ghost", "app": "nobody", "node": "dup:1",
                                               "resource": {"memory_mb": 1}, "priority": 0})
    elif how == 4:
        msg.setdefault("apps", []).append({"id": "appX", "user": "u", "queue": "root.a", "priority": 0,
                                           "submit_ms": 0, "requests": [{"priority": 1, "resource": {}, "count": -1}]})
    else:
        return json.dumps(msg)[:-3]
    return json.dumps(msg)


def make_core(clock):
    return PolicyCore(parse_allocations(ALLOC, "p.xml"),
                      EngineSettings(node_locality_delay=0, rack_locality_delay=0, preemption=False), clock)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops)
def test_random_message_sequences_keep_the_engine_whole_and_in_step_with_the_rm(steps):
    clock = ManualClock(1000.0)
    core = make_core(clock)
    model = Model(clock)
    model.add_node(0, 4096)
    for step in steps:
        kind = step[0]
        if kind in ("add_node", "remove_node", "add_app", "change_app", "remove_app"):
            getattr(model, kind)(*step[1:])
        elif kind == "finish":
            ids = sorted(model.containers)
            if ids:
                model.finish(ids[step[1] % len(ids)])
        elif kind == "tick":
            clock.advance(step[1] / 1000.0)
        elif kind == "fallback":  # the shim's FIFO placed one
            apps, nodes = sorted(model.apps), sorted(model.nodes)
            if apps and nodes:
                model.launch(apps[step[1] % len(apps)], nodes[step[2] % len(nodes)], None)
        elif kind == "heartbeat":
            nodes = sorted(model.nodes)
            node = nodes[step[1] % len(nodes)] if nodes else "n9:1"
            answer = json.loads(core.heartbeat(json.dumps(model.message(beat=node))))
            assert "error" not in answer, answer
            model.sent()
            refuse = step[2]
            for i, a in enumerate(answer.get("assign", [])):
                if i < len(refuse) and refuse[i]:
                    # refused anyway (say, the node filled up)
                    model.d["rejected"].append({"engine_id": a["engine_id"], "reason": "no_room"})
                    model.d["apps"].add(a["app"])
                else:
                    model.launch(a["app"], a["node"], a["engine_id"])
        elif kind == "update":
            answer = json.loads(core.update(json.dumps(model.message(check=True))))
            assert "error" not in answer, answer
            model.sent()
            assert not answer.get("resync"), "Python's view differs from the RM's"
            for m in answer.get("move", []):
                model.move(m["app"], m["queue"])
            wire.convert("UpdateAnswer", answer)
        elif kind == "garbage":
            before = truth_state(core._engine)
            answer = json.loads(core.heartbeat(corrupt(model.message(beat="n0:1"), step[1])))
            assert answer["error"].startswith("Payload: "), answer
            assert truth_state(core._engine) == before, "a bad message changed the engine"
            model.full = True  # the shim resyncs after a refused payload
            model.reset_deltas()
        elif kind == "resync":
            model.full = True
            model.reset_deltas()
        check_invariants(core._engine)
    # Moves Python asked for are the RM's to make first (they are history).
    answer = json.loads(core.update(json.dumps(model.message())))
    model.sent()
    for m in answer.get("move", []):
        model.move(m["app"], m["queue"])
    # From wherever it got to: the RM's whole truth, as a fresh core would get it.
    model.full = True
    truth = json.dumps(model.message())
    assert "error" not in json.loads(core.update(truth))
    fresh = make_core(clock)
    assert "error" not in json.loads(fresh.update(truth))
    check_invariants(core._engine)
    assert truth_state(core._engine) == truth_state(fresh._engine)
