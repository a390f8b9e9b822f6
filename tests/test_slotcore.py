"""SlotCore: an MRv1 JobTracker's messages (slots) split into a map and a
reduce engine and joined again, on a manual clock."""

import json

from slotwise.clock import ManualClock
from slotwise.config.loader import parse_allocations
from slotwise.slotcore import SlotCore

POOLS = """<allocations>
  <pool name="prod"><weight>3</weight><minMaps>0</minMaps></pool>
  <pool name="research"><weight>1</weight></pool>
</allocations>"""


def tracker(i, maps=2, reduces=1):
    return {"id": f"tracker_t{i}:localhost/127.0.0.1:{5000 + i}", "host": "localhost", "rack": "/default-rack",
            "capacity": {"map_slots": maps, "reduce_slots": reduces}}


def job(n, pool, maps, reduces=0, priority=0):
    reqs = []
    if maps:
        reqs.append({"priority": 0, "resource": {"map_slots": 1}, "count": maps, "hosts": {"localhost": maps},
                     "racks": {"/default-rack": maps}})
    if reduces:
        reqs.append({"priority": 1, "resource": {"reduce_slots": 1}, "count": reduces})
    return {"id": f"job_202611230000_{n:04d}", "user": "ann", "queue": pool, "priority": priority,
            "submit_ms": 1_000_000 + n, "unmanaged": True, "requests": reqs}


def beat(node, maps, reduces):
    return {"node": node["id"], "free": {"map_slots": maps, "reduce_slots": reduces}}


def make(text=POOLS):
    clock = ManualClock(1000.0)
    return SlotCore(parse_allocations(text, "pools.xml"), clock=clock), clock


def call(core, method, **payload):
    payload.setdefault("now_ms", 1_000_000)
    return json.loads(getattr(core, method)(json.dumps(payload)))


def test_maps_and_reduces_are_decided_by_their_own_engines():
    core, _ = make()
    t = tracker(0, maps=2, reduces=1)
    ans = call(core, "heartbeat", full=True, nodes=[t], apps=[job(1, "prod", 4, reduces=3)], beats=[beat(t, 2, 1)])
    kinds = sorted((a["priority"], a["engine_id"].split("#")[1][0]) for a in ans["assign"])
    # two maps (priority 0, map engine) and one reduce (priority 1, reduce engine): the free slots, no more
    assert kinds == [(0, "m"), (0, "m"), (1, "r")]
    assert len({a["engine_id"] for a in ans["assign"]}) == 3
    assert all(a["node"] == t["id"] for a in ans["assign"])
    cluster = core.cluster()
    assert cluster["capacity"] == {"map_slots": 2, "reduce_slots": 1}
    assert cluster["usage"] == {"map_slots": 2, "reduce_slots": 1}


def test_no_free_slot_no_assignment():
    core, _ = make()
    t = tracker(0)
    ans = call(core, "heartbeat", full=True, nodes=[t], apps=[job(1, "prod", 4, reduces=3)], beats=[beat(t, 0, 0)])
    assert ans == {}


def test_weights_split_each_kind_three_to_one():
    nodes = [tracker(i, maps=2, reduces=2) for i in range(4)]
    held = {"map": {}, "reduce": {}}
    core, _ = make()
    call(core, "heartbeat", full=True, nodes=nodes, apps=[job(1, "prod", 50, 50), job(2, "research", 50, 50)])
    for t in nodes:
        for a in call(core, "heartbeat", beats=[beat(t, 2, 2)]).get("assign", []):
            kind = "map" if a["priority"] == 0 else "reduce"
            held[kind][a["app"]] = held[kind].get(a["app"], 0) + 1
    prod, research = "job_202611230000_0001", "job_202611230000_0002"
    assert held["map"] == {prod: 6, research: 2}
    assert held["reduce"] == {prod: 6, research: 2}
    call(core, "update")  # fair shares are computed in the periodic pass
    rows = {r["pool"]: r for r in core.pools()}
    assert rows["root.prod"]["fair_share"] == {"map_slots": 6.0, "reduce_slots": 6.0}
    assert rows["root.research"]["usage"] == {"map_slots": 2, "reduce_slots": 2}


def test_queue_table_carries_slots():
    core, _ = make()
    t = tracker(0, maps=4, reduces=4)
    call(core, "heartbeat", full=True, nodes=[t], apps=[job(1, "prod", 8), job(2, "research", 8)])
    ans = call(core, "update")
    rows = {q["name"]: q for q in ans["queues"]}
    assert rows["root.prod"]["fair"]["map_slots"] == 3.0
    assert rows["root.research"]["fair"]["map_slots"] == 1.0
    assert "memory_mb" not in rows["root.prod"]["fair"]


def test_a_rejected_reduce_goes_back_to_the_reduce_engine():
    core, _ = make()
    t = tracker(0, maps=1, reduces=1)
    ans = call(core, "heartbeat", full=True, nodes=[t], apps=[job(1, "prod", 1, reduces=1)], beats=[beat(t, 1, 1)])
    reduce_id = next(a["engine_id"] for a in ans["assign"] if a["priority"] == 1)
    assert core.cores["reduce"].holds_container(reduce_id)
    call(core, "heartbeat", rejected=[{"engine_id": reduce_id, "reason": "no_room"}],
         apps=[job(1, "prod", 0, reduces=1)])
    assert not core.cores["reduce"].holds_container(reduce_id)
    again = call(core, "heartbeat", beats=[beat(t, 0, 1)])
    assert [a["priority"] for a in again["assign"]] == [1]


def test_launched_and_finished_tasks_are_counted_by_kind():
    core, _ = make()
    t = tracker(0, maps=2, reduces=2)
    call(core, "heartbeat", full=True, nodes=[t], apps=[job(1, "prod", 0)])
    call(core, "heartbeat", launched=[
        {"id": "attempt_202611230000_0001_m_000000_0", "app": "job_202611230000_0001", "node": t["id"],
         "resource": {"map_slots": 1}, "priority": 0},
        {"id": "attempt_202611230000_0001_r_000000_0", "app": "job_202611230000_0001", "node": t["id"],
         "resource": {"reduce_slots": 1}, "priority": 1}])
    assert core.cluster()["usage"] == {"map_slots": 1, "reduce_slots": 1}
    call(core, "heartbeat", finished=["attempt_202611230000_0001_r_000000_0"])
    assert core.cluster()["usage"] == {"map_slots": 1, "reduce_slots": 0}
    assert core.jobs()[0]["running_containers"] == 1


def test_a_request_for_no_kind_of_slot_changes_nothing():
    core, _ = make()
    bad = job(1, "prod", 1)
    bad["requests"][0]["resource"] = {"memory_mb": 1024, "vcores": 1}
    ans = call(core, "heartbeat", full=True, nodes=[tracker(0)], apps=[bad])
    assert "map slots or for reduce slots" in ans["error"]
    assert core.cluster()["nodes"] == 0 and core.jobs() == []


def test_a_message_the_reduce_half_refuses_changes_the_map_half_neither():
    """Applied whole or not at all: a reduce task on a tracker nobody told
    Python about refuses the message, and the map half (a new job, a beat
    with free map slots) is not applied or decided either."""
    t = tracker(0, maps=2, reduces=1)
    for method in ("heartbeat", "update"):
        core, _ = make()
        call(core, "heartbeat", full=True, nodes=[t], apps=[job(1, "prod", 0)])
        before = (core.jobs(), core.cluster(), core.pools())
        ans = call(core, method, apps=[job(2, "research", 2)], beats=[beat(t, 2, 0)], launched=[
            {"id": "attempt_202611230000_0001_r_000000_0", "app": "job_202611230000_0001",
             "node": "tracker_nobody:localhost/127.0.0.1:1", "resource": {"reduce_slots": 1}, "priority": 1}])
        assert "tracker_nobody" in ans["error"], ans
        assert not ans.get("assign")
        assert (core.jobs(), core.cluster(), core.pools()) == before, method
        # and the next good message is decided as if the bad one never came
        good = call(core, "heartbeat", apps=[job(2, "research", 2)], beats=[beat(t, 2, 0)])
        assert [a["app"] for a in good["assign"]] == ["job_202611230000_0002"] * 2


def test_reload_changes_both_kinds():
    core, _ = make()
    nodes = [tracker(i, maps=2, reduces=2) for i in range(2)]
    call(core, "heartbeat", full=True, nodes=nodes, apps=[job(1, "prod", 50, 50), job(2, "research", 50, 50)])
    call(core, "update")
    core.set_config(parse_allocations(POOLS.replace("<weight>3</weight>", "<weight>1</weight>"), "pools.xml"))
    call(core, "update")
    rows = {r["pool"]: r for r in core.pools()}
    assert rows["root.prod"]["fair_share"] == {"map_slots": 2.0, "reduce_slots": 2.0}
    assert rows["root.research"]["fair_share"] == {"map_slots": 2.0, "reduce_slots": 2.0}


def test_min_maps_and_reduces_come_from_the_mrv1_file():
    core, _ = make("""<allocations><pool name="prod"><minMaps>3</minMaps><minReduces>1</minReduces></pool>
      <pool name="research"/></allocations>""")
    rows = {r["pool"]: r for r in core.pools()}
    assert rows["root.prod"]["min_share"] == {"map_slots": 3, "reduce_slots": 1}
