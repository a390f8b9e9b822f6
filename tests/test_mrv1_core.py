"""An MRv1 JobTracker's messages on the one PolicyCore: map and reduce
slots are resource dimensions of one engine, each shared on its own (as the
MRv1 Fair Scheduler shares them), on a manual clock."""

import json

from slotwise.clock import ManualClock
from slotwise.config.loader import parse_allocations
from slotwise.core import PolicyCore

POOLS_XML = """<allocations>
  <pool name="prod"><weight>3</weight><minMaps>0</minMaps></pool>
  <pool name="research"><weight>1</weight></pool>
</allocations>"""


def tracker(i, maps=2, reduces=1):
    return {"id": f"tracker_t{i}:localhost/127.0.0.1:{5000 + i}", "host": "localhost", "rack": "/default-rack",
            "capacity": {"map_slots": maps, "reduce_slots": reduces}}


def job(n, queue, maps, reduces=0, priority=0):
    reqs = []
    if maps:
        reqs.append({"priority": 0, "resource": {"map_slots": 1}, "count": maps, "hosts": {"localhost": maps},
                     "racks": {"/default-rack": maps}})
    if reduces:
        reqs.append({"priority": 1, "resource": {"reduce_slots": 1}, "count": reduces})
    return {"id": f"job_202611230000_{n:04d}", "user": "ann", "queue": queue, "priority": priority,
            "submit_ms": 1_000_000 + n, "unmanaged": True, "requests": reqs}


def beat(node, maps, reduces):
    return {"node": node["id"], "free": {"map_slots": maps, "reduce_slots": reduces}}


def make(text=POOLS_XML):
    clock = ManualClock(1000.0)
    return PolicyCore(parse_allocations(text, "pools.xml"), clock=clock, kind="mrv1"), clock


def call(core, method, **payload):
    payload.setdefault("now_ms", 1_000_000)
    return json.loads(getattr(core, method)(json.dumps(payload)))


def test_a_tracker_offers_its_map_slots_and_its_reduce_slots():
    core, _ = make()
    t = tracker(0, maps=2, reduces=1)
    ans = call(core, "heartbeat", full=True, nodes=[t], apps=[job(1, "prod", 4, reduces=3)], beats=[beat(t, 2, 1)])
    kinds = sorted((a["priority"], tuple(sorted(a["resource"].items()))) for a in ans["assign"])
    # two maps and one reduce, each answer saying which by its resource: the free slots, no more
    assert kinds == [(0, (("map_slots", 1),))] * 2 + [(1, (("reduce_slots", 1),))]
    assert len({a["engine_id"] for a in ans["assign"]}) == 3
    assert all(a["node"] == t["id"] for a in ans["assign"])
    cluster = core.views.cluster()
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
    rows = {r["queue"]: r for r in core.views.queues()}
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


def test_a_rejected_reduce_frees_its_reduce_slot():
    core, _ = make()
    t = tracker(0, maps=1, reduces=1)
    ans = call(core, "heartbeat", full=True, nodes=[t], apps=[job(1, "prod", 1, reduces=1)], beats=[beat(t, 1, 1)])
    reduce_id = next(a["engine_id"] for a in ans["assign"] if a["priority"] == 1)
    assert reduce_id in core._engine.containers
    call(core, "heartbeat", rejected=[{"engine_id": reduce_id, "reason": "no_room"}],
         apps=[job(1, "prod", 0, reduces=1)])
    assert reduce_id not in core._engine.containers
    assert core.views.cluster()["usage"] == {"map_slots": 1, "reduce_slots": 0}
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
    assert core.views.cluster()["usage"] == {"map_slots": 1, "reduce_slots": 1}
    call(core, "heartbeat", finished=["attempt_202611230000_0001_r_000000_0"])
    assert core.views.cluster()["usage"] == {"map_slots": 1, "reduce_slots": 0}
    assert core.views.apps()[0]["running_containers"] == 1


def test_a_request_for_no_kind_of_slot_changes_nothing():
    core, _ = make()
    bad = job(1, "prod", 1)
    bad["requests"][0]["resource"] = {"memory_mb": 1024, "vcores": 1}
    ans = call(core, "heartbeat", full=True, nodes=[tracker(0)], apps=[bad])
    assert "map slots or reduce slots" in ans["error"]
    assert core.views.cluster()["nodes"] == 0 and core.views.apps() == []


def test_a_message_refused_for_a_reduce_changes_nothing_of_its_maps():
    """Applied whole or not at all: a reduce task on a tracker nobody told
    Python about refuses the message, and the rest (a new job, a beat with
    free map slots) is not applied or decided either."""
    t = tracker(0, maps=2, reduces=1)
    for method in ("heartbeat", "update"):
        core, _ = make()
        call(core, "heartbeat", full=True, nodes=[t], apps=[job(1, "prod", 0)])
        before = (core.views.apps(), core.views.cluster(), core.views.queues())
        ans = call(core, method, apps=[job(2, "research", 2)], beats=[beat(t, 2, 0)], launched=[
            {"id": "attempt_202611230000_0001_r_000000_0", "app": "job_202611230000_0001",
             "node": "tracker_nobody:localhost/127.0.0.1:1", "resource": {"reduce_slots": 1}, "priority": 1}])
        assert "tracker_nobody" in ans["error"], ans
        assert not ans.get("assign")
        assert (core.views.apps(), core.views.cluster(), core.views.queues()) == before, method
        # and the next good message is decided as if the bad one never came
        good = call(core, "heartbeat", apps=[job(2, "research", 2)], beats=[beat(t, 2, 0)])
        assert [a["app"] for a in good["assign"]] == ["job_202611230000_0002"] * 2


def test_reload_changes_both_kinds():
    core, _ = make()
    nodes = [tracker(i, maps=2, reduces=2) for i in range(2)]
    call(core, "heartbeat", full=True, nodes=nodes, apps=[job(1, "prod", 50, 50), job(2, "research", 50, 50)])
    call(core, "update")
    core.set_config(parse_allocations(POOLS_XML.replace("<weight>3</weight>", "<weight>1</weight>"), "pools.xml"))
    call(core, "update")
    rows = {r["queue"]: r for r in core.views.queues()}
    assert rows["root.prod"]["fair_share"] == {"map_slots": 2.0, "reduce_slots": 2.0}
    assert rows["root.research"]["fair_share"] == {"map_slots": 2.0, "reduce_slots": 2.0}


def test_min_maps_and_reduces_come_from_the_mrv1_file():
    core, _ = make("""<allocations><pool name="prod"><minMaps>3</minMaps><minReduces>1</minReduces></pool>
      <pool name="research"/></allocations>""")
    rows = {r["queue"]: r for r in core.views.queues()}
    assert rows["root.prod"]["min_share"] == {"map_slots": 3, "reduce_slots": 1}


def test_each_kind_is_shared_by_its_own_usage():
    """A queue holding every reduce slot is still first for map slots while
    it holds fewer maps: the order on a map offer reads map slots only (with
    the order read from all slots, research would win both)."""
    core, _ = make(POOLS_XML.replace("<weight>3</weight>", "<weight>1</weight>"))
    t = tracker(0, maps=2, reduces=2)
    prod, research = "job_202611230000_0001", "job_202611230000_0002"
    call(core, "heartbeat", full=True, nodes=[t], apps=[job(1, "prod", 0, reduces=2)], beats=[beat(t, 0, 2)])
    call(core, "heartbeat", apps=[job(1, "prod", 4, reduces=0), job(2, "research", 4, reduces=0)])
    call(core, "update")
    got = call(core, "heartbeat", beats=[beat(t, 1, 0)])["assign"]
    # equal weights, no maps running: the first submitted (prod) gets the map slot,
    # its two reduces notwithstanding
    assert [a["app"] for a in got] == [prod]
    got = call(core, "heartbeat", beats=[beat(t, 1, 0)])["assign"]
    assert [a["app"] for a in got] == [research]


def test_a_reduce_launch_does_not_restart_the_maps_locality_wait():
    """Delay scheduling holds maps only (a reduce reads no split): a job's
    reduce launching on a far node leaves its maps' wait where it was."""
    from slotwise.settings import EngineSettings
    clock = ManualClock(1000.0)
    core = PolicyCore(parse_allocations(POOLS_XML, "pools.xml"), EngineSettings(node_locality_delay=5.0, rack_locality_delay=5.0), clock=clock,
                      kind="mrv1")
    near = tracker(0)
    far = {**tracker(1), "host": "elsewhere", "rack": "/other"}
    call(core, "heartbeat", full=True, nodes=[near, far], apps=[job(1, "prod", 2, reduces=1)])
    assert call(core, "heartbeat", beats=[beat(far, 2, 0)]) == {}  # its maps wait for "localhost"
    clock.advance(4.0)
    got = call(core, "heartbeat", beats=[beat(far, 2, 1)])["assign"]
    assert [a["resource"] for a in got] == [{"reduce_slots": 1}]  # the reduce goes anywhere at once
    clock.advance(7.0)  # 11 s passed over since the start: off-switch allowed, had the reduce not reset it
    got = call(core, "heartbeat", beats=[beat(far, 2, 0)])["assign"]
    assert [a["locality"] for a in got] == ["off_switch", "off_switch"]


def test_a_queue_short_of_map_slots_preempts_maps_only():
    """Preemption for a min share of maps takes maps, newest first, and no
    reduce; what it frees goes to the starved queue."""
    from slotwise.settings import EngineSettings
    clock = ManualClock(1000.0)
    text = """<allocations><pool name="prod"><minMaps>2</minMaps><minSharePreemptionTimeout>5</minSharePreemptionTimeout>
      </pool><pool name="research"/></allocations>"""
    core = PolicyCore(parse_allocations(text, "pools.xml"), EngineSettings(preemption=True), clock=clock, kind="mrv1")
    t = tracker(0, maps=2, reduces=2)
    hog = "job_202611230000_0002"
    call(core, "heartbeat", full=True, nodes=[t], apps=[job(2, "research", 2, reduces=2)])
    first = call(core, "heartbeat", beats=[beat(t, 1, 2)])["assign"]
    clock.advance(1.0)
    second = call(core, "heartbeat", beats=[beat(t, 1, 0)])["assign"]
    newest_map = next(a["engine_id"] for a in second if "map_slots" in a["resource"])
    assert len(first) == 3 and len(second) == 1
    call(core, "heartbeat", apps=[job(2, "research", 0), job(1, "prod", 2)])
    call(core, "update")
    clock.advance(6.0)
    victims = [p["container"] for p in call(core, "update").get("preempt", [])]
    held = {c.container_id: c for c in core._engine.containers.values()}
    assert victims and all(held[v].resource.map_slots == 1 for v in victims), victims
    assert victims[0] == newest_map and len(victims) == 2
    assert all(held[v].app_id == hog for v in victims)


def test_the_jobtrackers_move_puts_a_job_in_another_queue_and_the_shares_follow():
    """The JobTracker has no pools: a move (from the /scheduler page or serve's
    API, through the gateway) is Python's, and the shim follows its answer."""
    core, _ = make()
    t = tracker(0, maps=4, reduces=4)
    prod, research = job(1, "root.prod", 8), job(2, "root.research", 8)
    call(core, "heartbeat", full=True, nodes=[t], apps=[prod, research])
    def move(app, queue):
        return json.loads(core.move(json.dumps({"app": app, "queue": queue})))

    assert move(research["id"], "prod") == {"queue": "root.prod"}
    refused = move(prod["id"], "root")
    assert set(refused) == {"error"} and core.views.app_queue(prod["id"]) == "root.prod", refused
    ans = call(core, "update", apps=[{**research, "queue": "root.prod"}])  # the shim's next payload
    assert not ans.get("resync")
    rows = {q["name"]: q for q in ans["queues"]}
    assert rows["root.prod"]["fair"]["map_slots"] == 4.0 and rows["root.prod"]["apps"] == 2
    assert rows["root.research"]["apps"] == 0


def test_an_operators_priority_on_mrv1_is_very_low_to_very_high_and_messages_name_the_jobtracker():
    import pytest

    from slotwise.admin import AdminError, SchedulerService
    from slotwise.config.watcher import ConfigStatus

    class JobTracker:  # what RMControl would reach through the gateway: here it refuses
        def connected(self):
            return True

        def seen(self):
            return True

        def status(self):
            return {}

        def move(self, app_id, queue):
            return {"error": "the JobTracker has no running job " + app_id}

        def priority(self, app_id, priority):
            self.asked = (app_id, priority)
            return {"priority": priority}

    core, _ = make()
    call(core, "heartbeat", full=True, nodes=[tracker(0)], apps=[job(1, "root.prod", 2)])
    jt = JobTracker()
    service = SchedulerService(core, ConfigStatus("pools.xml"), jt)
    app = "job_202611230000_0001"
    assert service.set_priority(app, -2) == -2 and jt.asked == (app, -2)
    for bad in (3, -3, 64):
        with pytest.raises(AdminError) as e:
            service.set_priority(app, bad)
        assert e.value.status == 422 and "from -2 to 2 is required (VERY_LOW to VERY_HIGH)" in e.value.message
    with pytest.raises(AdminError) as e:
        service.move_app(app, "research")
    assert e.value.status == 409 and e.value.message.startswith("the JobTracker refused to move")
    assert core.views.app_queue(app) == "root.prod"
