"""A forecast made cheaper decides the same (issue 41): the heartbeat's
walk with a pure delay rule and a keyed policy reads each app's level as it
reaches it and keeps its leaves' order of apps between heartbeats
(``Queue.assign_apps``, ``app_order.kept_app_order``). With the rules' ``pure``
flag off, the walk reads every app and sorts them on every heartbeat, as it
always did: both must place every container alike, live and in a forecast's
plays, to the last start and finish."""

from __future__ import annotations

import random

import pytest

from slotwise.clock import ManualClock
from slotwise.config import parse_allocations
from slotwise.engine import Engine, Request
from slotwise.engine.app import Anywhere, TimeDelay
from slotwise.engine.forward import QUANTILES, forecast, run_times
from slotwise.resources import Resource
from slotwise.settings import EngineSettings
from slotwise.views import dry_run


def allocations(queues: int, mixed: bool) -> str:
    out = []
    for i in range(queues):
        extra = ""
        if mixed and i % 5 == 1:
            extra = "<minResources>4096 mb, 4 vcores</minResources>"
        elif mixed and i % 5 == 2:
            extra = "<localityTarget>0.9</localityTarget>"
        elif mixed and i % 5 == 3:
            extra = "<schedulingPolicy>fifo</schedulingPolicy>"
        elif mixed and i % 5 == 4:
            extra = "<weight>3</weight>"
        out.append(f'<queue name="q{i}">{extra}</queue>')
    return f'<?xml version="1.0"?><allocations>{"".join(out)}</allocations>'


def scene(nodes: int, apps: int, tasks: int, seed: int, locality: bool, mixed: bool, **settings):
    """Build and run a scene for a minute (every node each second, the update
    pass each second, containers of 5-30 s), then forecast it: (each live
    assignment, each play's outcomes per quantile)."""
    e = Engine(parse_allocations(allocations(10, mixed), "a.xml"), ManualClock(1000.25),
               EngineSettings(preemption=False, **settings))
    racks = max(1, nodes // 10)
    for n in range(nodes):
        e.add_node(f"n{n}", f"h{n}", f"/r{n % racks}", Resource(8 * 1024, 8))
    rng = random.Random(seed)
    for a in range(apps):
        app = f"a{a}"
        e.add_app(app, f"u{a % 7}", f"root.q{a % 10}", priority=rng.choice([0, 0, 1]), name=f"job{a % 13}")
        e.mark_unmanaged(app)
        reqs = []
        for prio in ((1,) if a % 3 else (1, 2)):
            k = rng.randint(1, tasks)
            if locality and rng.random() < 0.8:
                hosts = {f"h{h}": k for h in rng.sample(range(nodes), 3)}
                rk = {f"/r{int(h[1:]) % racks}": k for h in hosts}
                reqs.append(Request(prio, Resource(1024, 1), k, hosts, rk))
            else:
                reqs.append(Request(prio, Resource(1024 * rng.choice([1, 1, 2]), 1), k))
        e.update_requests(app, reqs)
    clock = e.clock
    log, running = [], []
    for _ in range(60):
        now = clock.now()
        for item in [x for x in running if x[0] <= now]:
            e.container_finished(item[1])
            running.remove(item)
        e.update()
        for n in range(nodes):
            for asg in e.heartbeat(f"n{n}"):
                log.append((now, asg.node_id, asg.app_id, asg.priority, asg.locality))
                running.append((now + rng.uniform(5, 30), asg.container_id))
        clock.advance(1.0 + rng.random() * 1e-3)  # times that do not add up exactly
    copies = dry_run.fork(e)
    times = {q: run_times(e, e.durations, q) for q in QUANTILES}
    out = forecast(copies, times, clock.now(), horizon=3600, heartbeat=1.0, budget=float("inf"))
    plays = {k: (f.start, f.start_low, f.start_high, f.finish, f.finish_low, f.finish_high, f.why)
             for k, f in out.items()}
    return log, plays


def both(monkeypatch, **kw):
    """The scene with the cheaper walk, then with the walk that reads every app."""
    fast = scene(**kw)
    monkeypatch.setattr(TimeDelay, "pure", False)
    monkeypatch.setattr(Anywhere, "pure", False)
    slow = scene(**kw)
    return fast, slow


@pytest.mark.parametrize("locality,mixed,settings", [
    (False, False, {}),  # the benchmark's scene (benchmarks/bench_forecast_cost.py), smaller
    (True, False, {}),
    (True, True, {}),
    (True, True, {"assign_multiple": False}),
    (True, True, {"node_locality_delay": 3.0, "rack_locality_delay": 2.0}),
    (True, True, {"locality_mode": "count", "node_locality_threshold": 0.5, "rack_locality_threshold": 0.5}),
])
def test_the_cheaper_walk_places_every_container_and_forecasts_every_app_alike(monkeypatch, locality, mixed,
                                                                                settings):
    (fast_log, fast), (slow_log, slow) = both(monkeypatch, nodes=100, apps=100, tasks=60, seed=3,
                                              locality=locality, mixed=mixed, **settings)
    assert len(fast_log) > 1000
    assert fast_log == slow_log
    assert sum(1 for p in fast.values() if p[3] is not None) > 50
    assert fast == slow


def test_the_walk_reads_fewer_apps(monkeypatch):
    """What makes it cheaper, seen: far fewer fair-share keys computed."""
    from slotwise.policies import fair

    calls = {"n": 0}
    real = fair.share_key

    def counted(s):
        calls["n"] += 1
        return real(s)

    monkeypatch.setattr(fair, "share_key", counted)
    scene(nodes=50, apps=60, tasks=40, seed=1, locality=False, mixed=False)
    fast = calls["n"]
    calls["n"] = 0
    monkeypatch.setattr(TimeDelay, "pure", False)
    monkeypatch.setattr(Anywhere, "pure", False)
    scene(nodes=50, apps=60, tasks=40, seed=1, locality=False, mixed=False)
    assert fast < 0.75 * calls["n"]


def test_quantiles_with_the_same_run_times_are_played_once():
    """Every container of a kind ran as long: the three quantiles' run times
    are the same, one play stands for all three, and the forecast is the
    one three plays give."""
    from slotwise.engine import forward

    e = Engine(parse_allocations(allocations(2, False), "a.xml"), ManualClock(0.0), EngineSettings(preemption=False))
    e.add_node("n0", "h0", "/r0", Resource(2048, 2))
    for a in range(4):
        e.add_app(f"a{a}", "u", "root.q0", name="etl")
        e.mark_unmanaged(f"a{a}")
        e.update_requests(f"a{a}", [Request(1, Resource(1024, 1), 3)])
    for _ in range(2):
        for asg in e.heartbeat("n0"):
            e.clock.advance(0.0)
        e.clock.advance(10.0)
        for cid in list(e.containers):
            e.container_finished(cid)
    now = e.clock.now()
    times = {q: run_times(e, e.durations, q) for q in QUANTILES}
    assert times[0.1] == times[0.5] == times[0.9] and times[0.5]

    class Counting:
        def __init__(self, copies):
            self.copies, self.n = copies, 0

        def engine(self, at, **kw):
            self.n += 1
            return self.copies.engine(at, **kw)

    once = Counting(dry_run.fork(e))
    out = forward.forecast(once, times, now, heartbeat=1.0, budget=None)
    assert once.n == 1
    copies = dry_run.fork(e)
    plays = [forward.play(copies.engine(now), times[q], now, heartbeat=1.0) for q in QUANTILES]
    for app_id, f in out.items():
        ref = forward.Forecast(plays[1][app_id], plays[0][app_id], plays[2][app_id])
        assert f.to_dict() == ref.to_dict()
        assert f.finish is not None
