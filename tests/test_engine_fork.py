"""Engine.fork: an independent engine in the same state. What the fork does
never reaches the live engine, and from the same state the fork decides as
the live engine does (a dry run, a forecast or a shadow reads the truth)."""

from __future__ import annotations

import pickle

from enginecheck import check_invariants
from support import fill, make_engine

from slotwise.clock import ManualClock
from slotwise.engine import Request
from slotwise.resources import Resource
from slotwise.settings import EngineSettings


def submit(e, app_id, queue, tasks, hosts=None, racks=None, needs_am=False):
    e.add_app(app_id, app_id, queue=queue)
    e.update_requests(app_id, [Request(1, Resource.units(1), tasks, hosts, racks)])
    if not needs_am:
        e.mark_unmanaged(app_id)


def busy_engine(settings=None):
    """Three queues, apps with locality and without, preemption on, some
    containers running, some apps passed over (delay scheduling)."""
    settings = settings or EngineSettings(node_locality_delay=2, rack_locality_delay=2, preemption=True,
                                          preemption_warn_time=5)
    e, clock = make_engine({"a": {"weight": 2.0, "min_resources": Resource.units(4),
                                  "min_share_preemption_timeout": 5},
                            "b": {}, "c": {"scheduling_policy": "fifo"}}, nodes=6, slots=4, racks=2,
                           settings=settings)
    submit(e, "b1", "b", tasks=30)
    submit(e, "c1", "c", tasks=8, hosts={"host1": 8}, racks={"/rack1": 8})
    fill(e)
    clock.advance(1)
    e.update()
    submit(e, "a1", "a", tasks=12, hosts={"host0": 6, "host2": 6}, racks={"/rack0": 12})
    submit(e, "a2", "a", tasks=3, needs_am=True)
    for _ in range(3):
        clock.advance(3)
        e.update()
        fill(e)
    return e, clock


def state(e) -> bytes:
    """Everything the engine holds, as bytes (the clock and services aside)."""
    services, e.ctx.services = e.ctx.services, {}
    clock, e.clock = e.clock, None
    try:
        return pickle.dumps(e)
    finally:
        e.ctx.services, e.clock = services, clock


def drive(e, clock, steps: int = 12) -> list:
    """Heartbeats, updates, finishes and a new app: the decisions made."""
    out = []
    for i in range(steps):
        clock.advance(1.5)
        out += [("preempt", p.container_id, p.kill) for p in e.update()]
        for node in sorted(e.nodes):
            out += [("assign", a.app_id, a.node_id, a.locality) for a in e.heartbeat(node)]
        done = sorted(e.containers)[: 2]
        for cid in done:
            e.container_finished(cid)
        if i == 4:
            submit(e, "late", "b", tasks=5)
    return out


def test_the_fork_is_independent_of_the_live_engine():
    e, clock = busy_engine()
    before = state(e)
    f = e.fork(ManualClock(clock.now()))
    check_invariants(f)
    drive(f, f.clock)
    f.remove_app("b1")
    f.set_app_priority("a1", 5)
    assert state(e) == before, "driving the fork changed the live engine"
    check_invariants(e)
    check_invariants(f)


def test_from_the_same_state_the_fork_decides_as_the_live_engine():
    e, clock = busy_engine()
    fclock = ManualClock(clock.now())
    f = e.fork(fclock)
    assert drive(f, fclock) == drive(e, clock)
    check_invariants(f)


def test_a_fork_of_a_count_rule_engine_counts_its_own_nodes():
    e, clock = busy_engine(EngineSettings(locality_mode="count", node_locality_threshold=0.5,
                                          rack_locality_threshold=0.5))
    f = e.fork(ManualClock(clock.now()))
    f.add_node("extra", "hostX", "/rack9", Resource.units(4))
    assert len(e.nodes) == 6 and f.delay.nodes is f.nodes and e.delay.nodes is e.nodes
    fclock = f.clock
    e.remove_node("extra") if "extra" in e.nodes else None
    f.remove_node("extra")
    assert drive(f, fclock) == drive(e, clock)


def test_a_fork_keeps_what_preemption_holds_and_the_shims_refusals():
    e, clock = busy_engine()
    node = next(iter(e.nodes.values()))
    node.held["root.a"] = (Resource.units(2), clock.now() + 10)
    app = e.apps["a1"]
    app.refuse("n3", 0, clock.now())
    e._refused_apps.add("a1")
    f = e.fork()
    assert f.nodes[node.node_id].held == node.held and f.nodes[node.node_id].held is not node.held
    assert f.apps["a1"].refused == app.refused and f.apps["a1"].refused is not app.refused
    f.update_requests("a1", [Request(1, Resource.units(1), 1)])
    assert app.refused, "the live app's refusals went with the fork's new asks"
