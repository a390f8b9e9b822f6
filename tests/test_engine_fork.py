"""Engine.fork: an independent engine in the same state. What the fork does
never reaches the live engine, and from the same state the fork decides as
the live engine does (a dry run, a forecast or a shadow reads the truth)."""

from __future__ import annotations

import pickle

import pytest

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
    """Everything the engine holds, as bytes (the clock and services aside,
    and the copies its forks keep: a cache of it, not its state)."""
    services, e.ctx.services = e.ctx.services, {}
    clock, e.clock = e.clock, None
    kept, e._kept = e._kept, None
    marks = {a: a.kept for a in e.apps.values()}
    for a in marks:
        a.kept = None
    try:
        return pickle.dumps(e)
    finally:
        e.ctx.services, e.clock, e._kept = services, clock, kept
        for a, k in marks.items():
            a.kept = k


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


def _whole(e) -> dict:
    """Every slot of every app, request and container of ``e`` (its links by
    name), comparable across engines."""
    def plain(obj, skip=()):
        return {k: getattr(obj, k) for k in type(obj).__slots__ if k not in skip}
    apps = {}
    for app_id, a in e.apps.items():
        row = plain(a, ("queue", "delay", "kept", "passed", "joined_at", "waited", "containers", "requests"))
        row["queue"], row["wait"] = a.queue.name, a.locality_wait
        row["containers"] = {cid: plain(c) for cid, c in a.containers.items()}
        row["requests"] = {p: plain(r) for p, r in a.requests.items()}
        apps[app_id] = row
    queues = {n: (q.usage, q.demand, q.fair_share, [a.app_id for a in q.apps], dict(q.wanting), q.active_apps,
                  q.running_apps) for n, q in e.queues.items()}
    nodes = {n: (x.used, sorted(x.containers), dict(x.held)) for n, x in e.nodes.items()}
    containers = {cid: plain(c) for cid, c in e.containers.items()}
    return {"apps": apps, "queues": queues, "nodes": nodes, "containers": containers,
            "order": (list(e.apps), list(e.containers), {i: list(a.containers) for i, a in e.apps.items()}), "skipped": sorted(e._skipped.app_ids()),
            "refused": sorted(e._refused_apps), "users": dict(e.limits.user_running)}


@pytest.mark.parametrize("mode", ["time", "count"])
def test_a_fork_from_kept_copies_equals_a_fork_that_copies_everything(mode):
    """A snapshot copies again only the apps changed since the last one
    (``fork.Kept``, ``App.touch``). After every kind of change, a fork made
    so equals a fork that copies every app: a write that forgets its touch
    fails here."""
    import random

    from slotwise.engine import fork as F

    settings = EngineSettings(node_locality_delay=1.5, rack_locality_delay=1.5, preemption=True,
                              preemption_warn_time=2, locality_mode=mode, node_locality_threshold=0.5,
                              rack_locality_threshold=0.5)
    e, clock = make_engine({"a": {"weight": 2.0, "min_resources": Resource.units(4),
                                  "min_share_preemption_timeout": 2, "max_running_apps": 3},
                            "b": {}, "c": {"scheduling_policy": "fifo"}}, nodes=6, slots=4, racks=2,
                           settings=settings)
    rng = random.Random(17)
    ids = 0
    e.fork()  # from here on the engine keeps its copies
    for step in range(600):
        clock.advance(rng.choice((0.2, 0.7, 1.5)))
        apps = list(e.apps)
        what = rng.randrange(13)
        if what == 0 or not apps:
            ids += 1
            host = f"host{rng.randrange(6)}"
            submit(e, f"x{ids}", rng.choice("abc"), tasks=rng.randint(1, 6),
                   hosts={host: 2} if rng.random() < 0.6 else None,
                   racks={f"/rack{rng.randrange(2)}": 2} if rng.random() < 0.6 else None,
                   needs_am=rng.random() < 0.3)
        elif what in (1, 2, 3):
            e.heartbeat(f"n{rng.randrange(6)}")
        elif what == 4:
            host = f"host{rng.randrange(6)}"
            e.update_requests(rng.choice(apps), [Request(1, Resource.units(1), rng.randint(0, 5), {host: 1},
                                                         {"/rack0": 1}, relax_locality=rng.random() < 0.8)])
        elif what == 5 and e.containers:
            e.container_finished(rng.choice(sorted(e.containers)))
        elif what == 6 and e.containers:
            e.container_refused(rng.choice(sorted(e.containers)), remember=True)
        elif what == 7 and e.containers:
            cid = rng.choice(sorted(e.containers))
            e.confirm_container(cid, f"real-{cid}", is_am=rng.random() < 0.2)
        elif what == 8:
            e.update()
        elif what == 9:
            e.move_app(rng.choice(apps), f"root.{rng.choice('abc')}", force=True)
        elif what == 10:
            e.set_app_priority(rng.choice(apps), rng.randint(0, 3))
        elif what == 11:
            e.remove_app(rng.choice(apps)) if rng.random() < 0.5 else e.mark_unmanaged(rng.choice(apps))
        elif rng.random() < 0.2:
            n = f"n{rng.randrange(6)}"
            e.remove_node(n) if n in e.nodes and rng.random() < 0.5 else e.add_node(
                n, f"host{n[1:]}", f"/rack{int(n[1:]) % 2}", Resource.units(4))
        if step % 3 == 0 or what == 8:
            kept = e.fork(ManualClock(clock.now()))
            saved = e._kept
            # nothing gone is kept (the copies would grow without end)
            assert set(saved.apps) == set(saved.waits) == set(saved.shares) == set(e.apps), step
            assert set(saved.containers) == set(e.containers), step
            F.forget(e)
            whole = e.fork(ManualClock(clock.now()))
            assert _whole(kept) == _whole(whole), step
            e._kept = saved  # keep the old copies (and marks) going: the next check tests them again
            for a in e.apps.values():
                a.kept = saved
    assert len(e.apps) > 5 and e.containers


def test_a_view_catches_the_kept_copies_up_in_short_holds_of_its_lock():
    """``views.dry_run.catch_up`` lets the lock go between turns of at most
    CATCH_UP units, and what is left for the snapshot's own hold fits in
    one turn; the fork it makes then equals the live engine's state."""
    import threading

    from slotwise.engine import fork as F
    from slotwise.views import dry_run

    e, clock = busy_engine()
    for i in range(300):
        submit(e, f"many{i}", "b", tasks=2)
    work = []

    class Lock:
        """Counts the work each hold did (``fork.keep``'s units left)."""
        inner = threading.Lock()

        def __enter__(self):
            self.inner.acquire()
            self.before = (e._kept.pending() if e._kept is not None
                           else F.APP_COPY * len(e.apps) + len(e.containers))

        def __exit__(self, *exc):
            work.append(self.before - e._kept.pending())
            self.inner.release()

    dry_run.catch_up(Lock(), e)
    assert len(work) > 1, "one hold did it all"
    assert max(work) < dry_run.CATCH_UP + F.APP_COPY  # (the last app copied may pass it)
    assert e._kept.pending() <= dry_run.CATCH_UP // 4
    f = F.build(F.snapshot(e), ManualClock(clock.now()))
    assert _whole(f) == _whole(e)
