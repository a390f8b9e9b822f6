"""Locality as a target (engine/target.py): the tuner on streams where the
needed wait is known, with a manual clock, and the queue's tuned rule in
the engine."""

from __future__ import annotations

import math
import random

import pytest

from slotwise.clock import ManualClock
from slotwise.config import parse_allocations
from slotwise.config.errors import ConfigErrors
from slotwise.engine import NODE_LOCAL, OFF_SWITCH, RACK_LOCAL, Engine, Request
from slotwise.engine.target import KEEP, Launches, TargetDelay, wait_for
from slotwise.resources import Resource
from slotwise.settings import EngineSettings


def stream(rule: TargetDelay, draw, seconds: float, per_second: int = 5, clock: float = 0.0,
           launches: Launches | None = None, trace: list | None = None):
    """Launches as an app sees them under ``rule``'s current wait: a
    node-local offer comes after ``draw()`` seconds; one that comes within
    T1 is taken (node-local, after that wait), else the app gives up at T1
    (rack-local, after T1). The update pass tunes once a second."""
    launches = launches or Launches()
    t = clock
    while t < clock + seconds:
        for _ in range(per_second):
            w = draw()
            if w <= rule.t1:
                launches.add(t, NODE_LOCAL, w)
            else:
                launches.add(t, RACK_LOCAL, rule.t1)
        t += 1.0
        rule.tune(launches, t)
        if trace is not None:
            trace.append(rule.t1)
    return launches, t


def exp(mean: float, seed: int = 1):
    rng = random.Random(seed)
    return lambda: rng.expovariate(1.0 / mean)


def quantile(mean: float, q: float) -> float:
    """The wait by which a fraction ``q`` of exponential(mean) waits is over."""
    return -mean * math.log(1.0 - q)


def test_kaplan_meier_reads_censored_launches_as_longer_waits():
    # Four node-local launches after 1, 2, 3, 4 s; four gave up at 2 s. Of the
    # eight, 1 s: 1/8 reached; at 2 s one more of the 7 still waiting (the four
    # gave up there too, so they count as still waiting at 2 s, not as reached).
    launches = [(0, NODE_LOCAL, w, NODE_LOCAL, 1) for w in (1.0, 2.0, 3.0, 4.0)] + [(0, RACK_LOCAL, 2.0, NODE_LOCAL, 1)] * 4
    assert wait_for(0.125, launches) == 1.0
    assert wait_for(0.25, launches) == 2.0
    # After 2 s only two are left at risk, both reached: 3 s makes it 1 - (7/8)(6/7)(1/2).
    assert wait_for(0.6, launches) == 3.0
    assert wait_for(0.0, launches) == 0.0
    # Counted as if the give-ups had been reached (the censoring flipped), 50% would read 2 s.
    assert wait_for(0.3, [(0, NODE_LOCAL, w, NODE_LOCAL, 1) for w in (1.0, 2.0, 3.0, 4.0)]) == 2.0
    assert wait_for(0.3, launches) == 3.0


def test_it_converges_to_the_shortest_wait_that_reaches_the_target():
    rule = TargetDelay(0.9, 1.5, 1.5, heartbeat=1.0, queue="root.q")
    need = quantile(2.0, 0.9)  # 4.6 s
    launches, t = stream(rule, exp(2.0), 900)
    assert need <= rule.t1 <= need * 1.35
    assert rule.t2 == rule.t1  # the engine's ratio of T2 to T1 kept
    window = list(launches.window(t))[-1000:]
    assert sum(1 for x in window if x[1] == NODE_LOCAL) / len(window) >= 0.88


def jobs(rule: TargetDelay, draw, seconds: float, maps: int = 10, p_local: float = 0.3, seed: int = 5):
    """Jobs of ``maps`` maps, launched one after another: while the job
    waits at node-local a map goes as in ``stream``; once one ran
    rack-local the next waits for no node-local offer (the paper's rule)
    and is node-local only when one comes first (``p_local``), which brings
    the job back to node-local."""
    rng = random.Random(seed)
    launches, t, level = Launches(), 0.0, NODE_LOCAL
    while t < seconds:
        for _ in range(maps):
            if level == NODE_LOCAL:
                w = draw()
                if w <= rule.t1:
                    launches.add(t, NODE_LOCAL, w, NODE_LOCAL)
                else:
                    launches.add(t, RACK_LOCAL, rule.t1, NODE_LOCAL)
                    level = RACK_LOCAL
            else:
                got = NODE_LOCAL if rng.random() < p_local else RACK_LOCAL
                launches.add(t, got, 0.0, RACK_LOCAL)
                level = got
        level = NODE_LOCAL  # the next job
        t += 1.0
        rule.tune(launches, t)
    return launches, t


def test_what_launches_that_wait_for_no_node_local_offer_miss_is_made_up_for():
    """A map after a rack-local one of its job waits for nothing: the
    estimate alone would stop at 90% of the maps that waited, and the job's
    later maps would pull the fraction reached below the target."""
    rule = TargetDelay(0.9, 1.5, 1.5, heartbeat=1.0, queue="root.q")
    launches, t = jobs(rule, exp(2.0), 1200)
    window = list(launches.window(t))
    got = sum(1 for x in window if x[1] == NODE_LOCAL) / len(window)
    assert got >= 0.88, (got, rule.t1)
    assert rule.t1 > quantile(2.0, 0.9)  # longer than the wait that serves 90% of the maps that waited


def test_it_lowers_waits_when_the_target_is_met_with_room():
    rule = TargetDelay(0.9, 20.0, 20.0, heartbeat=1.0, queue="root.q")
    stream(rule, exp(0.5), 900)
    assert rule.t1 <= quantile(0.5, 0.9) * 1.35  # 1.15 s needed, from 20 s


def test_it_settles_on_a_steady_stream():
    rule = TargetDelay(0.9, 1.5, 1.5, heartbeat=1.0, queue="root.q")
    launches, t = stream(rule, exp(2.0, seed=3), 600)
    trace: list[float] = []
    stream(rule, exp(2.0, seed=4), 3600, clock=t, launches=launches, trace=trace)
    moves = [b - a for a, b in zip(trace, trace[1:]) if b != a]
    turns = sum(1 for a, b in zip(moves, moves[1:]) if (a > 0) != (b > 0))
    assert len(moves) <= 4 and turns <= 2, trace


def test_a_target_of_zero_means_no_wait():
    rule = TargetDelay(0.0, 3.0, 3.0, heartbeat=1.0, queue="root.q")
    assert (rule.t1, rule.t2) == (0.0, 0.0)
    stream(rule, exp(2.0), 120)
    assert (rule.t1, rule.t2) == (0.0, 0.0)


def test_an_unreachable_target_rises_to_the_ceiling_and_stays():
    rule = TargetDelay(0.9, 1.0, 1.0, heartbeat=1.0, queue="root.q")
    stream(rule, lambda: 1000.0, 600)
    assert rule.t1 == rule.ceiling == 60.0  # 20 heartbeats for data on three nodes


def test_from_no_wait_a_rise_starts_at_half_a_heartbeat():
    rule = TargetDelay(0.9, 0.0, 0.0, heartbeat=2.0, queue="root.q")
    assert rule.t1 == 0.0
    stream(rule, exp(2.0), 3)
    assert rule.t1 == 3.0  # per host: half a heartbeat for data on three nodes


def test_it_moves_only_on_fresh_launches():
    rule = TargetDelay(0.9, 1.5, 1.5, heartbeat=1.0, queue="root.q")
    launches, t = stream(rule, exp(2.0), 2, per_second=5)  # 10 launches: one move up
    assert rule.changes == 1
    for k in range(1, 30):
        rule.tune(launches, t + k)  # nothing new: the waits stand
    assert rule.changes == 1


def test_launches_keep_ten_minutes_and_at_most_keep():
    ls = Launches()
    for i in range(KEEP + 50):
        ls.add(i * 0.1, NODE_LOCAL if i % 2 else OFF_SWITCH, 0.0)
    assert len(ls.recent) == KEEP
    assert ls.data_local(KEEP * 0.1) == pytest.approx(0.5)
    assert ls.data_local(10_000.0) is None


# ------------------------------------------------------------ in the engine
FILE = """<?xml version="1.0"?>
<allocations>
  <queue name="etl"><localityTarget>0</localityTarget></queue>
  <queue name="adhoc"/>
  <queue name="prod"><localityTarget>0.9</localityTarget><queue name="a"/></queue>
</allocations>
"""


def engine(text: str = FILE) -> tuple[Engine, ManualClock]:
    clock = ManualClock()
    e = Engine(parse_allocations(text, "alloc.xml"), clock,
               EngineSettings(node_locality_delay=3.0, rack_locality_delay=3.0, preemption=False))
    e.add_node("n1", "h1", "/r1", Resource.units(4))
    e.add_node("n2", "h2", "/r2", Resource.units(4))
    return e, clock


def test_a_queue_target_is_inherited_and_gives_its_apps_their_own_rule():
    e, _ = engine()
    q = e.queues
    assert q["root.etl"].locality_target == 0.0 and q["root.adhoc"].locality_target is None
    assert q["root.prod.a"].locality_target == 0.9
    assert q["root.adhoc"].delay is None and q["root.prod"].delay is None  # a parent has no apps
    # The engine's waits as the start for data on three nodes: 9 s per host.
    assert q["root.prod.a"].delay.t1 == 9.0
    e.add_app("x", "u", "root.etl")
    e.add_app("y", "u", "root.adhoc")
    assert e.apps["x"].delay is q["root.etl"].delay and e.apps["y"].delay is e.delay


def test_the_walk_follows_the_queues_tuned_waits():
    e, clock = engine()
    for app_id, queue in (("x", "root.etl"), ("y", "root.adhoc")):
        e.add_app(app_id, "u", queue)
        e.update_requests(app_id, [Request(1, Resource.units(1), 1, {"h1": 1}, {"/r1": 1})])
    e.update()
    clock.advance(1.0)
    got = {a.app_id: a.locality for a in e.heartbeat("n2")}
    # etl's target 0 means no wait: off-switch at once; adhoc waits its fixed 3 s.
    assert got == {"x": "off_switch"}


def test_launches_from_asks_with_places_count_towards_the_fraction_and_the_update_tunes():
    e, clock = engine()
    e.add_app("x", "u", "root.prod.a")
    rule = e.queues["root.prod.a"].delay
    e.update_requests("x", [Request(1, Resource.units(1), 40, {"h1": 40}, {"/r1": 40})])
    for _ in range(12):
        clock.advance(1.0)
        for a in e.heartbeat("n1"):
            e.container_finished(a.container_id)
    e.update()
    launches = e.queues["root.prod.a"].launches
    assert launches.count >= 12 and launches.data_local(clock.now()) == 1.0
    assert rule.t1 < 9.0  # every launch node-local at once: the wait came down


def test_a_reload_keeps_the_waits_learned_and_a_fork_tunes_apart():
    e, clock = engine()
    rule = e.queues["root.prod.a"].delay
    rule._set(1.25)
    e.set_config(parse_allocations(FILE.replace("<queue name=\"adhoc\"/>", "<queue name=\"adhoc2\"/>"), "alloc.xml"))
    assert e.queues["root.prod.a"].delay is rule and rule.t1 == 1.25
    f = e.fork()
    f.queues["root.prod.a"].delay._set(5.0)
    f.queues["root.prod.a"].launches.add(0.0, NODE_LOCAL, 0.0)
    assert rule.t1 == 1.25 and e.queues["root.prod.a"].launches.count == 0


@pytest.mark.parametrize("value", ["1.5", "-0.1", "high"])
def test_a_bad_target_is_an_error_naming_the_file_and_line(value):
    with pytest.raises(ConfigErrors) as e:
        parse_allocations(f'<?xml version="1.0"?>\n<allocations>\n<queue name="a">\n'
                          f'<localityTarget>{value}</localityTarget></queue>\n</allocations>\n', "alloc.xml")
    assert "alloc.xml:4" in str(e.value) and "localityTarget" in str(e.value)


def test_a_default_target_reaches_every_queue_without_its_own():
    e, _ = engine(FILE.replace("<allocations>", "<allocations><defaultLocalityTarget>0.8</defaultLocalityTarget>"))
    assert e.queues["root.adhoc"].locality_target == 0.8 and e.queues["root.etl"].locality_target == 0.0


def spread_stream(rule: TargetDelay, seconds: float, spreads=(4, 4, 4, 4, 1), mean_one_host: float = 2.0,
                  seed: int = 3):
    """Launches of apps whose data is on k hosts (``spreads``, one launch
    each per second): a node-local offer comes after an exponential wait of
    mean ``mean_one_host``/k (k nodes heartbeat with room k times as often),
    taken if it comes within the app's wait, T1/k."""
    rng, launches, t = random.Random(seed), Launches(), 0.0
    while t < seconds:
        for k in spreads:
            w, give_up = rng.expovariate(k / mean_one_host), rule.t1 / k
            launches.add(t, NODE_LOCAL if w <= give_up else RACK_LOCAL, min(w, give_up), NODE_LOCAL, k)
        t += 1.0
        rule.tune(launches, t)
    return launches, t


def test_apps_with_data_on_few_hosts_reach_the_target_beside_apps_with_data_everywhere():
    """Per-host waits: the tuner reads a launch's wait times its hosts, and
    an app on k hosts waits T1/k, so the small jobs of a queue full of large
    ones reach the target too (with one wait for all, tuned on the large
    jobs' quick launches, they would fall far short)."""
    rule = TargetDelay(0.9, 1.5, 1.5, heartbeat=1.0, queue="root.q")
    launches, t = spread_stream(rule, 900)
    window = list(launches.window(t))
    for k in (1, 4):
        mine = [x for x in window if x[4] == k]
        got = sum(1 for x in mine if x[1] == NODE_LOCAL) / len(mine)
        assert got >= 0.86, (k, got, rule.t1)
    assert rule.t1 <= quantile(2.0, 0.9) * 1.35


def test_the_walk_divides_the_waits_by_the_hosts_an_app_names():
    """An app whose asks name two hosts gives up node-local after half the
    per-host wait; one naming one host waits it all."""
    e, clock = engine()
    rule = e.queues["root.prod.a"].delay
    rule._set(4.0)
    e.add_node("n3", "h3", "/r1", Resource.units(4))
    e.add_app("two", "u", "root.prod.a")
    e.update_requests("two", [Request(1, Resource.units(1), 1, {"h1": 1, "h3": 1}, {"/r1": 1})])
    e.add_app("one", "u", "root.prod.a")
    e.update_requests("one", [Request(1, Resource.units(1), 1, {"h1": 1}, {"/r1": 1})])
    e.update()
    placed = {}
    for _ in range(5):  # n2 (rack /r2) heartbeats each second: neither's data is there
        clock.advance(1.0)
        for a in e.heartbeat("n2"):
            placed[a.app_id] = clock.now()
    # Off its rack: T1/2 + T2/2 = 4 s of waiting for "two", 8 s for "one".
    assert placed == {"two": 5.0}
