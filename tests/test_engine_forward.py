"""The live state played forward (engine/forward.py) and the run times it
goes by (engine/durations.py), with a manual clock."""

from __future__ import annotations

import pytest

from slotwise.clock import ManualClock
from slotwise.config import parse_allocations
from slotwise.engine import Engine, Request
from slotwise.engine.durations import KEEP, NAMES, Durations
from slotwise.engine.forward import AM_NOT_ASKED, NO_RUN_TIME, PAST_HORIZON, QUANTILES, forecast, play, run_times
from slotwise.resources import Resource
from slotwise.settings import EngineSettings
from slotwise.views import dry_run

FILE = """<?xml version="1.0"?>
<allocations>
  <queue name="a"/>
  <queue name="b"/>
</allocations>
"""
ONE = Resource.units(1)


def engine(slots: int = 2, nodes: int = 1) -> tuple[Engine, ManualClock]:
    clock = ManualClock()
    e = Engine(parse_allocations(FILE, "alloc.xml"), clock, EngineSettings(preemption=False))
    for n in range(nodes):
        e.add_node(f"n{n}", f"h{n}", "/r1", Resource.units(slots))
    return e, clock


def job(e: Engine, app_id: str, tasks: int, queue: str = "root.a", name: str = "etl", prio: int = 1) -> None:
    """An app with no AM (as an MRv1 job) asking for ``tasks`` containers anywhere."""
    e.add_app(app_id, "u", queue, name=name)
    e.mark_unmanaged(app_id)
    e.update_requests(app_id, [Request(prio, ONE, tasks)])


def once(e: Engine, now: float, **kw) -> dict:
    """One play of ``e``'s state at ``now`` with its apps' median run times."""
    return play(e.fork(ManualClock(now)), run_times(e, e.durations, 0.5), now, **kw)


def predict(e: Engine, now: float) -> dict:
    """A forecast as the views make it: one copy of the engine, the run
    times at each quantile, a play each."""
    copies = dry_run.fork(e)
    times = {q: run_times(e, e.durations, q) for q in QUANTILES}
    return forecast(copies, times, now, heartbeat=1.0)


def run(e: Engine, clock: ManualClock, until: float, lengths: dict) -> dict:
    """Heartbeat every node each second until ``until``, each container
    running ``lengths[app]`` seconds: when each app's last container ended."""
    running: list = []
    last: dict = {}
    while clock.now() < until:
        for t, cid in [x for x in running if x[0] <= clock.now()]:
            last[e.containers[cid].app_id] = clock.now()
            e.container_finished(cid)
            running.remove((t, cid))
        e.update()
        for node in list(e.nodes):
            for a in e.heartbeat(node):
                running.append((clock.now() + lengths[a.app_id], a.container_id))
        clock.advance(1.0)
    return last


def test_a_queue_with_known_run_times_is_forecast_exactly():
    e, clock = engine(slots=2)
    job(e, "first", 1)
    job(e, "firstb", 1, queue="root.b")
    run(e, clock, 11, {"first": 10.0, "firstb": 10.0})  # etl's run time in both queues: 10 s
    e.remove_app("first")
    e.remove_app("firstb")
    job(e, "x", 4)
    job(e, "y", 2, queue="root.b")
    e.update()
    out = once(e, clock.now(), heartbeat=1.0)
    now = clock.now()
    # One slot each while both run (fair shares): y's two take 20 s; then x has both.
    assert (out["y"].start, out["y"].finish) == (now, now + 20)
    assert (out["x"].start, out["x"].finish) == (now, now + 30)
    # ... which is what happens when it is run for real.
    assert run(e, clock, now + 40, {"x": 10.0, "y": 10.0}) == {"y": now + 20, "x": now + 30}


def test_the_live_engine_is_untouched_by_a_forecast():
    e, clock = engine(slots=2)
    job(e, "first", 1)
    run(e, clock, 6, {"first": 5.0})
    job(e, "x", 4)
    e.update()
    before = (sorted(e.containers), {a: (x.pending, len(x.containers), x.ran) for a, x in e.apps.items()},
              clock.now(), len(e.durations.cluster[1]))
    predict(e, clock.now())
    after = (sorted(e.containers), {a: (x.pending, len(x.containers), x.ran) for a, x in e.apps.items()},
             clock.now(), len(e.durations.cluster[1]))
    assert before == after


def test_running_containers_end_by_their_launch_plus_their_run_time():
    e, clock = engine(slots=1)
    job(e, "first", 1)
    run(e, clock, 9, {"first": 8.0})  # 8 s
    job(e, "x", 2)
    run(e, clock, 12, {"x": 8.0})  # x's first launched at 9, ends at 17; now 12
    out = once(e, clock.now(), heartbeat=1.0)
    assert out["x"].start == 9.0 and out["x"].finish == 25.0  # 17, then 8 s more


def test_without_a_run_time_or_before_the_am_asks_it_says_why_not_a_number():
    e, clock = engine(slots=2)
    job(e, "x", 2)  # nothing of its kind has ended yet
    e.add_app("am", "u", "root.b", name="other")  # a YARN app: its AM first
    e.update_requests("am", [Request(0, ONE, 1)])
    e.update()
    out = once(e, clock.now(), heartbeat=1.0, horizon=60)
    assert out["x"].finish is None and out["x"].why == NO_RUN_TIME and out["x"].start == 0.0
    assert out["am"].start == 0.0 and out["am"].finish is None and out["am"].why == AM_NOT_ASKED


def test_nothing_past_the_horizon():
    e, clock = engine(slots=1)
    job(e, "first", 1)
    run(e, clock, 31, {"first": 30.0})
    job(e, "x", 3)
    e.update()
    out = once(e, clock.now(), heartbeat=1.0, horizon=60)
    assert out["x"].finish is None and out["x"].why == PAST_HORIZON


def test_run_times_come_from_the_app_then_its_name_then_the_cluster():
    e, clock = engine(slots=4)
    d = e.durations
    job(e, "a1", 1, name="etl")
    job(e, "b1", 1, name="adhoc", queue="root.b")
    run(e, clock, 20, {"a1": 4.0, "b1": 16.0})
    job(e, "a2", 2, name="etl")
    job(e, "c", 1, name="new")
    e.update()
    assert d.estimate(e.apps["a2"], 1).source == "name" and d.estimate(e.apps["a2"], 1).quantile(0.5) == 4.0
    assert d.estimate(e.apps["c"], 1) is None  # the cluster has seen two: three are needed
    job(e, "b2", 1, name="adhoc2", queue="root.b")
    run(e, clock, 40, {"a2": 6.0, "c": 1.0, "b2": 2.0})
    assert d.estimate(e.apps["a2"], 1).source == "app" and d.estimate(e.apps["a2"], 1).quantile(0.5) == 6.0
    assert d.estimate(e.apps["c"], 1).source == "app"
    e.add_app("z", "u", "root.a", name="zzz")
    assert d.estimate(e.apps["z"], 1).source == "cluster"
    e.remove_app("a2")
    assert "a2" not in d.apps


def test_ams_and_containers_taken_back_teach_nothing():
    e, clock = engine(slots=2)
    e.add_app("x", "u", "root.a", name="etl")
    e.update_requests("x", [Request(1, ONE, 1)])
    e.update()
    (am,) = e.heartbeat("n0")
    assert am.is_am
    clock.advance(50)
    e.container_finished(am.container_id)
    assert not e.durations.cluster
    e.update_requests("x", [Request(1, ONE, 1)])
    e.update()
    (task,) = e.heartbeat("n0")
    e.containers[task.container_id].preempt_time = clock.now()
    clock.advance(3)
    e.container_finished(task.container_id)
    assert not e.durations.cluster


def test_a_sample_keeps_the_last_runs_in_order_and_names_are_bounded():
    d = Durations()

    class App:
        def __init__(self, i):
            self.app_id, self.user, self.app_name, self.queue = f"a{i}", "u", f"n{i}", None

    class C:
        is_am, preempt_time, kill_sent, priority, resource = False, None, False, 1, ONE

        def __init__(self, t):
            self.launch_time = t

    one = App(0)
    for k in range(KEEP + 10):
        d.ended(one, C(0.0), float(k))
    s = d.apps["a0"][1]
    assert len(s) == KEEP and s.ordered[0] == 10.0 and s.quantile(1.0) == KEEP + 9
    assert s.quantile(0.5) == pytest.approx(10 + KEEP / 2 - 1, abs=1)
    for i in range(1, NAMES + 5):
        d.ended(App(i), C(0.0), 1.0)
    assert len(d.names) == NAMES


def test_a_forecast_gives_the_range_the_spread_of_run_times_gives():
    e, clock = engine(slots=3)
    job(e, "first", 3)
    lengths = iter([5.0, 10.0, 15.0])
    running = []
    e.update()
    for a in e.heartbeat("n0"):
        running.append((next(lengths), a.container_id))
    for t, cid in sorted(running):
        clock.set(t)
        e.container_finished(cid)
    e.remove_app("first")
    e.add_node("n0b", "h0b", "/r1", Resource.units(0))  # a node with no room changes nothing
    job(e, "x", 6)  # two rounds of three on three slots
    e.update()
    now = clock.now()
    f = predict(e, now)["x"]
    assert (f.start, f.start_low, f.start_high) == (now, now, now)
    assert (f.finish_low, f.finish, f.finish_high) == (now + 10, now + 20, now + 30)
    assert f.why is None and f.to_dict()["finish"] == now + 20


def test_in_the_simulator_a_forecast_made_mid_run_foretells_the_finishes():
    """The simulator plays the shim's part to a PolicyCore: a forecast
    taken through its views mid-run (the maps of the first job ended, so
    run times are known; every job has arrived and asked for its tasks)
    against the starts and finishes the run then has: within a heartbeat
    (the engine sees a container end at its node's next heartbeat, as it
    does behind a real master; a simulator that held those ends back while
    nothing waited taught it run times 30% too long). The workload is
    closed (no job arrives after 16 s), so the forecast is taken without
    the apps the queues' rates would bring."""
    from slotwise.sim.simulator import Simulation
    from slotwise.sim.results import SimSettings
    from slotwise.sim.workload import ClusterSpec, JobSpec, Workload

    jobs = [JobSpec("j0", 0.0, [10.0] * 4, io=0.0, user="u", queue="a"),
            *[JobSpec(f"j{i}", 12.0 + i, [10.0] * (2 + i), io=0.0, user="u", queue="ab"[i % 2]) for i in range(1, 5)]]
    cluster = ClusterSpec(racks=1, nodes_per_rack=2, map_slots=2, reduce_slots=0)
    sim = Simulation(Workload(cluster, jobs), EngineSettings(heartbeat_interval=1.0, preemption=False),
                     config=parse_allocations(FILE, "alloc.xml"), sim=SimSettings(heartbeat_interval=1.0))
    taken = {}
    sim.at(20.0, lambda s: taken.update(s.feeds[0].core.views.forecasts(arrivals=False)))
    result = sim.run()
    assert taken["at"] == 20.0
    starts = {}
    for t in result.tasks:
        starts[t.job] = min(starts.get(t.job, t.start), t.start)
    for job_id in ("j1", "j2", "j3", "j4"):
        f = taken["apps"][job_id]
        real = result.jobs[job_id].finish
        assert f.finish is not None and abs(f.finish - real) <= 1.0, (job_id, f.to_dict(), real)
        assert abs(f.start - starts[job_id]) <= 1.0, (job_id, f.to_dict(), starts[job_id])


def whatif_of(e: Engine, now: float, change):
    from slotwise.engine.whatif import whatif

    copies = dry_run.fork(e)
    times = {q: run_times(e, e.durations, q) for q in QUANTILES}
    return whatif(copies, times, now, change, horizon=120.0, heartbeat=1.0)


def scene_two_queues():
    e, clock = engine(slots=4)
    job(e, "first", 1)
    job(e, "firstb", 1, queue="root.b")
    run(e, clock, 11, {"first": 10.0, "firstb": 10.0})
    e.remove_app("first")
    e.remove_app("firstb")
    job(e, "x", 6)
    job(e, "y", 6, queue="root.b")
    e.update()
    return e, clock


def test_what_if_a_weight_changed_plays_both_and_changes_nothing_live():
    from slotwise.engine.whatif import parse_set

    e, clock = scene_two_queues()
    now = clock.now()
    live = (e.config, sorted(e.containers), e.queues["root.b"].weight)
    out = whatif_of(e, now, parse_set("b.weight=3"))
    assert out["error"] is None
    x, y = out["apps"]["x"], out["apps"]["y"]
    # 1:1, two slots each: both end after three rounds of 10 s; at 3:1 b has three and is done in two.
    assert x["before"].finish == y["before"].finish == now + 30
    assert y["after"].finish == now + 20 and x["after"].finish >= x["before"].finish
    assert (e.config, sorted(e.containers), e.queues["root.b"].weight) == live
    # Each queue's share over the horizon, per play: b holds half the slots while both run, three
    # quarters with weight 3, and nothing once its app is done.
    before, after = out["traces"]["before"], out["traces"]["after"]
    share = {tr: dict(zip(tr.t, tr.queues["root.b"])) for tr in (before, after)}
    assert share[before][5.0] == 0.5 and share[after][5.0] == 0.75
    assert share[after][25.0] == 0.0 and share[before][25.0] == 0.5
    assert abs(after.mean()["root.b"] - before.mean()["root.b"]) < 0.01  # the same work, done sooner


def test_what_if_an_app_moved_or_its_priority_set():
    from slotwise.engine.whatif import Change

    e, clock = scene_two_queues()
    job(e, "z", 2)  # a second app in a: a's one slot is shared
    e.update()
    now = clock.now()
    moved = whatif_of(e, now, Change("move", "z", value="root.c", said="--move z root.c"))
    assert moved["error"] is None  # root.c made on the copy, as the RM's move would
    assert moved["apps"]["x"]["after"].finish < moved["apps"]["x"]["before"].finish
    bad = whatif_of(e, now, Change("move", "nope", value="root.b", said="--move nope root.b"))
    assert bad["apps"] == {} and bad["error"]


def test_a_bad_set_is_one_line_naming_what_is_wrong():
    from slotwise.engine.whatif import parse_set

    for text, says in (("b.weight", "expected QUEUE.SETTING=VALUE"), ("b.colour=3", "colour cannot be set"),
                       ("b.weight=heavy", "weight 'heavy'"), ("b.localityTarget=1.5", "localityTarget '1.5'")):
        with pytest.raises(ValueError) as err:
            parse_set(text)
        assert says in str(err.value) and "\n" not in str(err.value)
    e, clock = scene_two_queues()
    out = whatif_of(e, clock.now(), parse_set("root.nope.weight=2"))
    assert out["error"] == "--set root.nope.weight=2: no queue root.nope in the allocation file"
    # A value the file's reader takes adjusted (a warning, not an error) is taken so here too, and said.
    negative = parse_set("b.weight=-1")
    assert negative.value == -1 and negative.said.startswith("--set b.weight=-1 (weight is negative")


def test_a_forecast_charges_no_live_budget(tmp_path):
    """A Dynamic Priority queue's market is charged as time passes: the play's
    time must charge a copy, never the live budgets nor their store."""
    from slotwise.core import PolicyCore
    from slotwise.market import Market, MarketSettings
    from slotwise.market.store import SqliteStore
    from wiretools import app, node, payload, req

    config = parse_allocations("""<?xml version="1.0"?>
<allocations>
  <queue name="dp"><schedulingPolicy>dynamic-priority</schedulingPolicy>
    <queue name="alice"/><queue name="bob"/></queue>
</allocations>
""", "alloc.xml")
    market = Market(MarketSettings(interval=10), SqliteStore(str(tmp_path / "market.sqlite")))
    clock = ManualClock(100.0)
    core = PolicyCore(config, EngineSettings(preemption=False), clock, services={"market": market})
    core.handle_heartbeat(payload(nodes=[node("n1", "h1", "/r1", 4096, 4)],
                                  apps=[app("a1", "root.dp.alice", [req(0, 1024, 1, 6)], user="alice"),
                                        app("a2", "root.dp.bob", [req(0, 1024, 1, 6)], user="bob")], node="n1"))
    core.handle_update(payload())
    market.add_budget("root.dp.alice", 250)
    before = (market.accounts["root.dp.alice"].budget, market.store.load()[0])
    for _ in range(3):
        core.views.forecasts(horizon=600)
    assert (market.accounts["root.dp.alice"].budget, market.store.load()[0]) == before


def test_the_smallest_change_that_starts_a_waiting_app_within_a_minute():
    from slotwise.engine.whatif import candidates, counterfactual

    clock = ManualClock()
    e = Engine(parse_allocations("""<?xml version="1.0"?>
<allocations>
  <queue name="a"><maxRunningApps>1</maxRunningApps></queue>
  <queue name="b"/>
</allocations>
""", "alloc.xml"), clock, EngineSettings(preemption=False))
    e.add_node("n0", "h0", "/r1", Resource.units(2))
    job(e, "first", 1)
    run(e, clock, 11, {"first": 10.0})
    e.remove_app("first")
    job(e, "x", 30)  # 150 s on two slots
    clock.advance(1)
    job(e, "z", 1)  # a's one running app is x: z waits for it
    e.update()
    run(e, clock, 13, {"x": 10.0})
    now = clock.now()
    changes = candidates(e, "z")
    assert [c.said for c in changes][:2] == ["priority 1 for z", "weight 2 on root.a"]
    copies = dry_run.fork(e)
    got = counterfactual(copies, {0.5: run_times(e, e.durations, 0.5)}, now, "z", changes, heartbeat=1.0)
    assert got["change"] == "a move to root.b" and got["start_in_s"] <= 10 and got["start_in_s_without"] > 100
    assert got["tried"] == 3  # priority and weight would not do it
    # x itself runs now: nothing to find for it.
    assert counterfactual(dry_run.fork(e), {0.5: run_times(e, e.durations, 0.5)}, now, "x", changes) is None


def one_app_at_a_time(slots: int) -> tuple[Engine, ManualClock]:
    """Queue a (maxRunningApps 1) on one node of ``slots``."""
    clock = ManualClock()
    e = Engine(parse_allocations("""<?xml version="1.0"?>
<allocations>
  <queue name="a"><maxRunningApps>1</maxRunningApps></queue>
</allocations>
""", "alloc.xml"), clock, EngineSettings(preemption=False))
    e.add_node("n0", "h0", "/r1", Resource.units(slots))
    return e, clock


def limited_scene(first_name: str):
    """Queue a runs one app at a time: ``x`` (named ``first_name``) runs,
    ``z`` waits for it; an app named etl ran 10 s before."""
    e, clock = one_app_at_a_time(slots=2)
    job(e, "first", 1)
    run(e, clock, 11, {"first": 10.0})
    e.remove_app("first")
    job(e, "x", 1, name=first_name)
    job(e, "z", 1)
    e.update()
    e.heartbeat("n0")
    return e, clock


def test_an_app_held_by_a_running_app_limit_behind_an_app_of_unknown_length_says_so():
    from slotwise.engine.forward import AT_LIMIT, NO_RUN_TIME

    e, clock = limited_scene("never-ran")  # nothing of x's kind ever ended: its end cannot be told
    out = once(e, clock.now(), heartbeat=1.0, horizon=120)
    assert out["x"].why == NO_RUN_TIME
    assert out["z"].start is None and out["z"].why == AT_LIMIT  # not "past the horizon": it cannot be told
    e, clock = limited_scene("etl")  # x's kind known: z starts when x ends
    out = once(e, clock.now(), heartbeat=1.0, horizon=120)
    assert out["x"].finish == clock.now() + 10 and out["z"].start is not None and out["z"].why is None
    # Asked only for z's start (a counterfactual), the play stops there: z's own end is not played.
    until = once(e, clock.now(), heartbeat=1.0, horizon=120, until_started="z")
    assert until["z"].start == out["z"].start and until["z"].finish is None and out["z"].finish is not None


def test_a_play_out_of_cpu_stops_and_says_so():
    from slotwise.engine.forward import OVER_BUDGET

    e, clock = scene_two_queues()
    out = play(e.fork(ManualClock(clock.now())), run_times(e, e.durations, 0.5), clock.now(), budget=0.0)
    assert {o.why for o in out.values()} == {OVER_BUDGET} and all(o.finish is None for o in out.values())
    assert once(e, clock.now(), heartbeat=1.0)["x"].finish is not None  # unbounded, the same play ends


# ---------------------------------------------------------------- preemption in the play

PREEMPTING = """<?xml version="1.0"?>
<allocations>
  <queue name="a">%s<minSharePreemptionTimeout>5</minSharePreemptionTimeout></queue>
  <queue name="b"/>
</allocations>
"""


def run_preempting(e: Engine, clock: ManualClock, until: float, lengths: dict) -> tuple[dict, dict]:
    """``run``, with the update pass's kills carried out as the simulator
    does (the container ends; its task is asked for again): when each app
    first started and when its last container ended."""
    running: list = []
    first: dict = {}
    last: dict = {}
    while clock.now() < until:
        for t, cid in [x for x in running if x[0] <= clock.now()]:
            last[e.containers[cid].app_id] = clock.now()
            e.container_finished(cid)
            running.remove((t, cid))
        for p in e.update():
            c = e.containers.get(p.container_id)
            if p.kill and c is not None:
                e.container_finished(c.container_id)
                running = [x for x in running if x[1] != c.container_id]
                r = e.apps[c.app_id].requests.get(c.priority)
                e.update_requests(c.app_id, [Request(c.priority, c.resource, (r.num_containers if r else 0) + 1)])
        for node in list(e.nodes):
            for a in e.heartbeat(node):
                first.setdefault(a.app_id, clock.now())
                running.append((clock.now() + lengths[a.app_id], a.container_id))
        clock.advance(1.0)
    return first, last


def scene_starved(min_resources: str = "<minResources>2 mb, 2 vcores</minResources>"):
    """Queue b holds the whole node (4 slots) with four 100 s tasks; then
    queue a, with a min share of 2 slots and a 5 s timeout, asks for two
    10 s tasks. Preemption is on, no warning."""
    clock = ManualClock()
    e = Engine(parse_allocations(PREEMPTING % min_resources, "alloc.xml"), clock,
               EngineSettings(preemption=True, preemption_warn_time=0.0, update_interval=1.0))
    e.add_node("n0", "h0", "/r1", Resource.units(4))
    job(e, "a0", 1)
    job(e, "b0", 1, queue="root.b", name="long")
    run_preempting(e, clock, 101, {"a0": 10.0, "b0": 100.0})  # run times: etl 10 s, long 100 s
    e.remove_app("a0")
    e.remove_app("b0")
    job(e, "y", 4, queue="root.b", name="long")
    run_preempting(e, clock, 103, {"y": 100.0})  # y holds all four slots since 101
    job(e, "x", 2)
    e.update()
    return e, clock


def test_a_starved_queue_gets_its_share_back_in_the_play_by_preemption():
    e, clock = scene_starved()
    now = clock.now()
    assert len(e.apps["y"].containers) == 4 and not e.apps["x"].containers
    out = once(e, now, heartbeat=1.0, update=1.0)
    x, y = out["x"], out["y"]
    # a was last at its min share at the pass at 102 (no demand then): the first pass more than
    # 5 s on (108) takes two of y's containers back, x runs on them at once and is done 10 s
    # later; y's two asks come back (their 100 s run again) once x is done.
    assert (x.start, x.finish) == (108.0, 118.0)
    assert y.finish == 118.0 + 100
    assert out.preemptions == {"root.b": 2}
    # ... which is what happens when it is run with the kills carried out.
    first, last = run_preempting(e, clock, now + 130, {"x": 10.0, "y": 100.0})
    assert (first["x"], last["x"], last["y"]) == (x.start, x.finish, y.finish)


def test_without_preemption_the_play_waits_for_the_victims_to_end():
    e, clock = scene_starved()
    e.settings = EngineSettings(preemption=False, update_interval=1.0)
    now = clock.now()
    out = once(e, now, heartbeat=1.0, update=1.0)
    assert out["x"].start == 201.0 and out.preemptions == {}


def test_what_if_a_min_share_is_raised_it_preempts_after_but_not_before():
    from slotwise.engine.whatif import parse_set

    e, clock = scene_starved(min_resources="")
    now = clock.now()
    out = whatif_of(e, now, parse_set("a.minResources=2 mb, 2 vcores"))
    assert out["error"] is None
    assert out["preemptions"] == {"before": {}, "after": {"root.b": 2}}
    x = out["apps"]["x"]
    # Without a min share a was at it at the live pass at 103: with one, the round comes 5 s on.
    assert x["before"].start == 201.0 and x["after"].start == 109.0


# ------------------------------------------------ the tasks an AM has not asked for yet

def yarn_app(e: Engine, clock: ManualClock, app_id: str, name: str, maps: int, length: float, delay: float,
             queue: str = "root.a") -> None:
    """A YARN app run to its end on node n0 from now: its AM, its ``maps``
    tasks of ``length`` s asked ``delay`` s after the AM started, the AM's
    end a second after theirs; then it goes."""
    e.add_app(app_id, "u", queue, name=name)
    e.update_requests(app_id, [Request(0, ONE, 1)])
    e.update()
    (am,) = e.heartbeat("n0")
    assert am.is_am
    clock.advance(delay)
    e.update_requests(app_id, [Request(0, ONE, 0), Request(1, ONE, maps)])
    e.update()
    tasks = [a for _ in range(maps) for a in e.heartbeat("n0")]
    assert len(tasks) == maps
    clock.advance(length)
    for a in tasks:
        e.container_finished(a.container_id)
    clock.advance(1)
    e.container_finished(am.container_id)
    e.remove_app(app_id)


def test_an_app_whose_am_has_not_asked_asks_for_what_its_name_ran_before():
    e, clock = engine(slots=5)
    yarn_app(e, clock, "w1", "wordcount", maps=4, length=10.0, delay=2.0)
    yarn_app(e, clock, "o1", "other", maps=1, length=5.0, delay=2.0)  # the queue's latest, smaller
    work = e.durations.work_for(type("A", (), {"app_name": "wordcount", "user": "u", "queue": e.queues["root.a"]})())
    assert (work.tasks, work.am, work.delay, work.tail) == (((1, ONE, 4, 10.0),), (0, ONE), 2.0, 1.0)
    e.add_app("w2", "u", "root.a", name="wordcount")
    e.update_requests("w2", [Request(0, ONE, 1)])
    e.update()
    now = clock.now()
    out = once(e, now, heartbeat=1.0)
    # Its AM starts now, asks 2 s later for four 10 s maps, which run at once on the four free slots.
    assert out["w2"].start == now and out["w2"].finish == now + 2 + 10 and out["w2"].why is None
    # Its AM already running when the forecast is made: the same, from the AM's start.
    (am,) = e.heartbeat("n0")
    clock.advance(1)
    assert once(e, clock.now(), heartbeat=1.0)["w2"].finish == now + 2 + 10
    # Nothing of its name: its queue's typical app (the middle one by size, of two the smaller),
    # its task's run time its own, not the cluster's (10 s for most tasks of priority 1 here).
    e.remove_app("w2")
    e.add_app("n2", "u", "root.a", name="never-seen")
    e.update_requests("n2", [Request(0, ONE, 1)])
    e.update()
    o = once(e, clock.now(), heartbeat=1.0)["n2"]
    assert (o.start, o.finish) == (clock.now(), clock.now() + 2 + 5)


def test_an_ams_learned_tail_holds_its_place_after_its_work_is_done():
    """A MapReduce AM commits, unregisters and lingers after its last task:
    the app is done (its finish) when its tasks are, but the next app held
    by the queue's running-app limit starts only when the AM has gone."""
    e, clock = one_app_at_a_time(slots=5)
    yarn_app(e, clock, "w1", "wordcount", maps=2, length=10.0, delay=2.0)  # its AM ended 1 s after its maps
    for app_id in ("w2", "w3"):
        e.add_app(app_id, "u", "root.a", name="wordcount")
        e.update_requests(app_id, [Request(0, ONE, 1)])
    e.update()
    now = clock.now()
    out = once(e, now, heartbeat=1.0)
    assert out["w2"].start == now and out["w2"].finish == now + 2 + 10
    # w3 runnable once w2's AM has gone (a second later), placed at the pass and heartbeat after.
    assert now + 2 + 10 + 1 <= out["w3"].start <= now + 2 + 10 + 1 + 1.5
    assert out["w3"].finish == out["w3"].start + 2 + 10


def test_an_app_with_nothing_learned_still_cannot_be_told():
    e, clock = engine(slots=5)
    e.add_app("w2", "u", "root.a", name="wordcount")
    e.update_requests("w2", [Request(0, ONE, 1)])
    e.update()
    out = once(e, clock.now(), heartbeat=1.0, horizon=60)
    assert out["w2"].start == 0.0 and out["w2"].finish is None and out["w2"].why == AM_NOT_ASKED


def test_an_app_that_ran_nothing_beside_its_am_teaches_nothing():
    e, clock = engine(slots=5)
    e.add_app("k", "u", "root.a", name="wordcount")
    e.update_requests("k", [Request(0, ONE, 1)])
    e.update()
    (am,) = e.heartbeat("n0")
    clock.advance(3)
    e.remove_app("k")  # killed before it asked
    assert e.durations.work_cluster.maxlen and not e.durations.work_cluster and not e.durations.tallies


# ------------------------------------------------------------ apps still to arrive

def test_apps_arriving_in_a_competing_queue_take_their_fair_share_in_the_play():
    e, clock = engine(slots=2)
    job(e, "a0", 1)
    for i, t0 in enumerate((0, 20, 40)):  # one app of one 10 s task in b every 20 s
        job(e, f"b{i}", 1, queue="root.b", name="small")
        run(e, clock, t0 + 20, {"a0": 10.0, f"b{i}": 10.0})
        e.remove_app(f"b{i}")
    e.remove_app("a0")
    job(e, "b3", 1, queue="root.b", name="small")  # at 60, on time
    job(e, "x", 7)  # seven 10 s tasks in a
    e.update()
    now = clock.now()
    assert now == 60.0
    closed = once(e, now, heartbeat=1.0, arrivals=False)
    opened = once(e, now, heartbeat=1.0)  # on, as the settings say by default
    assert set(opened) == {"b3", "x"}  # the apps it imagines are not forecast
    # Without arrivals: x has one slot while b3 runs (60-70), then both: 1 + 2 + 2 + 2 tasks by 100.
    assert closed["x"].finish == now + 40
    # With one app in b at 80 and at 100 (every 20 s from the last), each takes a slot for 10 s
    # under fair share: 1 + 2 + 1 + 2 by 100, the seventh 100-110.
    assert opened["x"].finish == now + 50
    # serve --forecast-arrivals off: the engine's settings turn them off for every play.
    import dataclasses

    e.settings = dataclasses.replace(e.settings, forecast_arrivals=False)
    assert once(e, now, heartbeat=1.0)["x"].finish == closed["x"].finish != opened["x"].finish


def test_arrival_rates_are_bounded_and_a_quiet_queue_slows_down():
    from slotwise.engine.durations import MIN_SUBMITS, SUBMITS, WINDOW

    d = Durations()
    for k in range(SUBMITS + 50):
        d.submitted("root.b", 10.0 * k)
    assert len(d.submits["root.b"]) == SUBMITS
    last = 10.0 * (SUBMITS + 49)
    assert d.arrivals(last + 4) == [("root.b", last + 10, 10.0)]
    assert d.arrivals(last + 25) == [("root.b", last + 50, 25.0)]  # quiet for 25 s: one every 25 s
    assert d.arrivals(last + WINDOW + 1) == []  # none in the last ten minutes
    for k in range(MIN_SUBMITS - 1):
        d.submitted("root.c", float(k))
    assert d.arrivals(MIN_SUBMITS - 2.0) == []  # too few to be a rate
    d.submitted("root.c", MIN_SUBMITS - 1.0)
    assert d.arrivals(MIN_SUBMITS - 1.0) == [("root.c", float(MIN_SUBMITS), 1.0)]


def test_a_warned_victim_runs_until_its_kill_and_an_am_taken_ends_its_attempt():
    clock = ManualClock()
    e = Engine(parse_allocations(PREEMPTING % "<minResources>4 mb, 4 vcores</minResources>", "alloc.xml"), clock,
               EngineSettings(preemption=True, preemption_warn_time=2.0, update_interval=1.0))
    e.add_node("n0", "h0", "/r1", Resource.units(4))
    job(e, "a0", 1)
    job(e, "b0", 1, queue="root.b", name="long")
    run_preempting(e, clock, 101, {"a0": 10.0, "b0": 100.0})
    e.remove_app("a0")
    e.remove_app("b0")
    e.add_app("y", "u", "root.b", name="long")  # a YARN app: its AM and three 100 s tasks fill the node
    e.update_requests("y", [Request(0, ONE, 1)])
    e.update()
    e.heartbeat("n0")
    e.update_requests("y", [Request(0, ONE, 0), Request(1, ONE, 3)])
    e.update()
    assert len(e.heartbeat("n0")) == 3
    clock.advance(1)
    job(e, "x", 4)  # a's min share is the whole node: all four of y's go, its AM last
    e.update()
    out = once(e, clock.now(), heartbeat=1.0, update=1.0)
    # a last at its share at 101: warned at the pass at 107, killed 2 s later; x has the node.
    assert (out["x"].start, out["x"].finish) == (109.0, 119.0)
    # y's attempt ended with its AM: the AM and its three tasks run again once x is done.
    assert out["y"].finish == 119.0 + 100
    assert out.preemptions == {"root.b": 4}
