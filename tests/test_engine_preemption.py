"""Min-share and fair-share preemption with timeouts, and victim choice."""

import math

import pytest

from slotwise.engine import Request
from slotwise.resources import Resource
from slotwise.settings import EngineSettings
from support import fill, make_engine, running, submit


def hog_then_starve(queues, hog_tasks=16, **kw):
    e, clock = make_engine(queues, nodes=4, slots=4, **kw)
    submit(e, "hog", "hog", tasks=hog_tasks)
    e.update()
    fill(e)
    assert running(e, "root.hog") == 16
    clock.advance(10)
    e.update()  # the periodic pass: prod, idle, is not starved
    submit(e, "victim_of_nothing", "prod", tasks=16)
    e.update()
    return e, clock


def test_min_share_preemption_after_timeout():
    e, clock = hog_then_starve({"prod": {"min_resources": Resource.units(6), "min_share_preemption_timeout": 30},
                                "hog": {}})
    clock.advance(30)
    assert e.update() == []  # not yet: needs to be starved for more than the timeout
    clock.advance(1)
    got = e.update()
    assert len(got) == 6
    assert all(p.kill and p.queue == "root.hog" and p.reason == "min_share" for p in got)
    assert {p.container_id for p in got} <= set(e.apps["hog"].containers)
    # Which ones (the newest): test_victims_are_the_newest_containers_...


def test_queue_with_demand_met_is_not_starved():
    e, clock = make_engine({"prod": {"min_resources": Resource.units(6), "min_share_preemption_timeout": 5},
                            "hog": {}}, nodes=4, slots=4)
    submit(e, "hog", "hog", tasks=16)
    e.update()
    fill(e)
    submit(e, "small", "prod", tasks=0)  # active but wants nothing
    clock.advance(60)
    e.update()
    assert e.update() == []


def test_fair_share_preemption_below_threshold():
    queues = {"prod": {"fair_share_preemption_timeout": 20, "fair_share_preemption_threshold": 0.5}, "hog": {}}
    e, clock = hog_then_starve(queues)
    clock.advance(21)
    got = e.update()
    # Fair share 8; the queue gets back up to its whole fair share.
    assert len(got) == 8
    assert {p.reason for p in got} == {"fair_share"}


def test_no_preemption_while_above_threshold():
    queues = {"prod": {"fair_share_preemption_timeout": 20, "fair_share_preemption_threshold": 0.5}, "hog": {}}
    e, clock = hog_then_starve(queues)
    # Give prod 4 of its 8: exactly half, so it is not starved.
    for c in list(e.apps["hog"].containers)[:4]:
        e.container_finished(c)
    fill(e)
    assert running(e, "root.prod") == 4
    clock.advance(100)
    assert e.update() == []


def test_victims_never_push_a_queue_below_its_fair_share():
    queues = {"prod": {"min_resources": Resource.units(16), "min_share_preemption_timeout": 1}, "hog": {}}
    e, clock = hog_then_starve(queues)
    clock.advance(2)
    got = e.update()
    # prod's min share covers the cluster, but hog's fair share is 0 here? No: both active,
    # min share 16 of 16 leaves hog a fair share of 0, so all 16 may go.
    assert e.queues["root.hog"].fair_share.memory_mb == pytest.approx(0)
    assert len(got) == 16
    queues = {"prod": {"min_resources": Resource.units(6), "min_share_preemption_timeout": 1,
                      "fair_share_preemption_timeout": 1, "fair_share_preemption_threshold": 1.0},
             "mid": {}, "hog": {}}
    e, clock = make_engine(queues, nodes=4, slots=4)
    submit(e, "hog", "hog", tasks=20)
    submit(e, "mid", "mid", tasks=4)
    e.update()
    fill(e)
    clock.advance(5)
    e.update()
    submit(e, "p", "prod", tasks=20)
    e.update()
    clock.advance(5)
    got = e.update()
    assert got and all(p.queue == "root.hog" for p in got)  # mid is at its share: untouched
    assert running(e, "root.hog") - len(got) >= e.queues["root.hog"].fair_share.memory_mb - 1e-9


def test_allow_preemption_from_false_protects_a_queue():
    queues = {"prod": {"min_resources": Resource.units(6), "min_share_preemption_timeout": 1},
             "hog": {"allow_preemption_from": False}}
    e, clock = hog_then_starve(queues)
    clock.advance(5)
    assert e.update() == []


def test_am_containers_go_last():
    queues = {"prod": {"min_resources": Resource.units(16), "min_share_preemption_timeout": 1}, "hog": {}}
    e, clock = make_engine(queues, nodes=1, slots=4)
    submit(e, "hog", "hog", tasks=4, needs_am=True)
    e.update()
    fill(e)
    am = [c for c in e.apps["hog"].containers.values() if c.is_am]
    assert len(am) == 1 and am[0].launch_time == 0
    clock.advance(5)
    e.update()
    submit(e, "p", "prod", tasks=3)
    e.update()
    clock.advance(5)
    got = e.update()
    assert len(got) == 3 and am[0].container_id not in {p.container_id for p in got}


def test_warning_then_kill_after_grace_time():
    queues = {"prod": {"min_resources": Resource.units(2), "min_share_preemption_timeout": 1}, "hog": {}}
    e, clock = hog_then_starve(queues, settings=EngineSettings(preemption_warn_time=15, node_locality_delay=0,
                                                              rack_locality_delay=0))
    clock.advance(2)
    warned = e.update()
    assert len(warned) == 2 and not any(p.kill for p in warned)
    clock.advance(5)
    assert e.update() == []  # in flight: not asked again, not killed yet
    clock.advance(10)
    killed = e.update()
    assert {p.container_id for p in killed} == {p.container_id for p in warned}
    assert all(p.kill for p in killed)


def test_preemption_can_be_turned_off():
    queues = {"prod": {"min_resources": Resource.units(6), "min_share_preemption_timeout": 1}, "hog": {}}
    e, clock = hog_then_starve(queues, settings=EngineSettings(preemption=False))
    clock.advance(5)
    assert e.update() == []


def test_timeouts_inherit_from_parent_and_defaults():
    e, _ = make_engine({"p": {"min_share_preemption_timeout": 7, "children": {"c": {}}}, "q": {}},
                       default_fair_share_preemption_timeout=99)
    assert e.queues["root.p.c"].min_share_timeout == 7
    assert e.queues["root.q"].min_share_timeout == math.inf
    assert e.queues["root.q"].fair_share_timeout == 99


def test_victims_are_the_newest_containers_whatever_app_or_node_holds_them():
    """The design's rule (Fair Scheduler, "kill the most recently launched
    tasks": they have lost the least work). Hog's 16 containers launch one
    second apart over two apps and four nodes; prod, starved of 6, gets back
    exactly the 6 launched last. Fails if the order flips to oldest first."""
    e, clock = make_engine({"prod": {"min_resources": Resource.units(6), "min_share_preemption_timeout": 5},
                            "hog": {}}, nodes=4, slots=4,
                           settings=EngineSettings(node_locality_delay=0, rack_locality_delay=0, max_assign=1))
    submit(e, "hog-a", "hog", tasks=8)
    submit(e, "hog-b", "hog", tasks=8)
    e.update()
    for i in range(16):  # one container a second, round the nodes
        clock.advance(1)
        e.heartbeat(f"n{i % 4}")
        e.update()  # the periodic pass: prod, idle, is not starved
    launched = sorted((c for a in ("hog-a", "hog-b") for c in e.apps[a].containers.values()),
                      key=lambda c: c.launch_time)
    assert len(launched) == 16
    assert len({c.launch_time for c in launched}) == 16
    submit(e, "prod-job", "prod", tasks=6)
    e.update()
    clock.advance(6)
    got = e.update()
    assert len(got) == 6 and {p.reason for p in got} == {"min_share"}
    newest = launched[-6:]
    assert {p.container_id for p in got} == {c.container_id for c in newest}
    assert min(c.launch_time for c in newest) >= max(c.launch_time for c in launched[:-6])


def starved_prod_beside_adhoc():
    """Hog fills the cluster (16 slots), adhoc asks too (anywhere), then
    prod, 7 short of its min share for longer than its timeout, has 7
    taken back. Prod's data is on host0 and it waits for it (delay
    scheduling, 1.5 s a level), so on any other node adhoc would come
    first if the freed slots were free for all."""
    e, clock = make_engine({"prod": {"min_resources": Resource.units(7), "min_share_preemption_timeout": 5},
                            "hog": {}, "adhoc": {}}, nodes=4, slots=4, racks=2,
                           settings=EngineSettings(node_locality_delay=1.5, rack_locality_delay=1.5))
    submit(e, "hog", "hog", tasks=16)
    e.update()
    fill(e)
    assert running(e, "root.hog") == 16
    submit(e, "adhoc-job", "adhoc", tasks=16)
    submit(e, "prod-job", "prod", tasks=7, hosts={"host0": 7}, racks={"/rack0": 7})
    e.update()
    clock.advance(6)
    got = e.update()
    assert len(got) == 7 and {p.reason for p in got} == {"min_share"}
    assert {p.queue for p in got} == {"root.hog"}
    return e, clock, got


def test_what_is_taken_back_for_a_starved_queue_goes_to_it_not_to_a_third_queue():
    e, clock, got = starved_prod_beside_adhoc()
    assert e.update() == []  # asked back, not yet gone: nothing more is taken for the same shortfall
    for p in got:
        e.container_finished(p.container_id)
    assert e.update() == []  # freed, held for prod: still nothing more
    placed = fill(e)
    assert {a.queue for a in placed} == {"root.prod"} and len(placed) == 7
    assert running(e, "root.prod") == 7 and running(e, "root.adhoc") == 0
    # The victims were the newest containers, wherever they ran; prod takes
    # the capacity it was given there without waiting out its locality delay.
    assert {a.locality for a in placed} > {"node_local"}
    clock.advance(30)
    assert e.update() == []  # prod is at its min share: no second round of kills


def test_a_hold_lapses_when_the_queue_stops_asking_or_after_its_time():
    e, clock, got = starved_prod_beside_adhoc()
    for p in got:
        e.container_finished(p.container_id)
    e.remove_app("prod-job")  # prod no longer wants them
    placed = fill(e, rounds=2)
    assert len(placed) == 7 and {a.queue for a in placed} == {"root.adhoc"}

    e2, clock2, got2 = starved_prod_beside_adhoc()
    for p in got2:
        e2.container_finished(p.container_id)
    held = lambda: sum(e2.preemption.held_on(n, clock2.now()).memory_mb for n in e2.nodes.values())
    assert held() == 7
    clock2.advance(9.9)
    assert held() == 7
    clock2.advance(0.2)  # past the hold: a node is not kept idle for a queue that does not come
    assert held() == 0


def starved_through_a_round(settings=None):
    """prod (min share 6, timeout 30) asks for one container while hog holds
    the cluster: at t=31 a round takes one back and prod places it, which is
    all it asks for then (an AM, say); at t=34 it asks for 5 more. Update
    passes every second; victims finish as soon as they are asked back."""
    e, clock = make_engine({"prod": {"min_resources": Resource.units(6), "min_share_preemption_timeout": 30},
                            "hog": {}}, nodes=4, slots=4, settings=settings)
    submit(e, "hog", "hog", tasks=16)
    e.update()
    fill(e)
    submit(e, "p", "prod", tasks=1)
    rounds = []

    def second(t):
        clock.set(t)
        got = e.update()
        if got:
            rounds.append((t, len(got)))
        for p in got:
            e.container_finished(p.container_id)
        fill(e)

    for t in range(1, 34):
        second(t)
    assert rounds == [(31, 1)] and running(e, "root.prod") == 1
    e.update_requests("p", [Request(2, Resource.units(1), 5)])
    return e, clock, second, rounds


def test_the_starvation_clock_runs_on_across_a_round():
    """The rule: a queue below its min share since t=0 reads 35 s at t=35,
    though the round at t=31 met all it asked for then. Fails if the clock
    restarts per round (it would read 1 s)."""
    e, clock, second, _rounds = starved_through_a_round()
    for t in (34, 35):
        second(t)
    since_min, _since_fair = e.preemption.starvation(e.queues["root.prod"], e.clock.now())
    row = next(r for r in e.describe_queues() if r["queue"] == "root.prod")
    assert row["below_min_share"] is True
    assert since_min == 35 and row["min_share_starved_for"] == 35


def test_rounds_stay_spaced_when_the_clock_runs_on():
    """The clock past the timeout does not fire a round at once: the last
    round met prod's shortfall then, so the next acts once prod has been
    short again for the timeout (it was last at its share at the t=33 pass):
    at t=64, as before the clock ran on, for exactly the 5 it lacks."""
    e, clock, second, rounds = starved_through_a_round()
    for t in range(34, 64):
        second(t)
    assert rounds == [(31, 1)], "a second round fired before prod had been short again for its timeout"
    second(64)
    assert rounds == [(31, 1), (64, 5)] and running(e, "root.prod") == 6
    for t in range(65, 120):
        second(t)
    assert rounds == [(31, 1), (64, 5)]  # at its min share: no round more


def test_a_queue_that_stays_at_its_share_ends_its_wait():
    """Back at its share and staying there past the settle time (warn time,
    the hold and RELAPSE after the round), prod's wait is over: a shortfall
    after that counts from then."""
    from slotwise.engine.preemption import HOLD, RELAPSE

    e, clock, second, rounds = starved_through_a_round()
    e.update_requests("p", [])  # it asks for nothing more after all
    end = 31 + HOLD + RELAPSE
    for t in range(34, int(end) + 2):
        second(t)
    assert e.queues["root.prod"].min_starved_since is None
    e.update_requests("p", [Request(2, Resource.units(1), 5)])
    second(int(end) + 5)
    assert e.preemption.starvation(e.queues["root.prod"], e.clock.now())[0] == 4  # since the pass at end + 1, the last at its share


def test_queues_are_timed_with_preemption_off():
    """How long a queue waits is known without preemption (explain tells an
    operator so), and nothing is taken."""
    e, clock = make_engine({"prod": {"min_resources": Resource.units(6), "min_share_preemption_timeout": 30},
                            "hog": {}}, nodes=4, slots=4, settings=EngineSettings(preemption=False))
    submit(e, "hog", "hog", tasks=16)
    e.update()
    fill(e)
    clock.set(5)
    e.update()
    submit(e, "p", "prod", tasks=6)
    for t in range(6, 60):
        clock.set(t)
        assert e.update() == []
    assert e.preemption.starvation(e.queues["root.prod"], e.clock.now())[0] == 54


def test_the_clock_runs_on_over_several_rounds():
    """Each round gives prod all it asks for then and it soon asks for one
    more (at t=33 and t=67, after that second's pass): rounds at t=31, 64
    and 98, each a timeout after the last pass that found prod at its share,
    and its clock reads 101 s at t=101. Fails if it restarts at any of them."""
    e, clock, second, rounds = starved_through_a_round()
    e.update_requests("p", [Request(2, Resource.units(1), 1)])
    for t in range(34, 101):
        second(t)
        if t == 67:
            e.update_requests("p", [Request(2, Resource.units(1), 1)])
    assert rounds == [(31, 1), (64, 1), (98, 1)] and running(e, "root.prod") == 3
    e.update_requests("p", [Request(2, Resource.units(1), 1)])
    second(101)
    assert e.preemption.starvation(e.queues["root.prod"], e.clock.now())[0] == 101


def test_room_held_for_a_starved_queue_stays_idle_while_that_queue_cannot_use_it_yet():
    """The hold (YARN-6432) keeps what a victim freed for the queue it was
    taken for even on a heartbeat where that queue cannot place there (its
    container needs two slots and only one victim has finished): the slot
    stays idle, a third queue asking anywhere does not get it, and prod takes
    both once the second victim ends. Fails if the walk offers held room to
    everyone when the starved queue cannot use it (drops ``held_on`` from
    the room it offers)."""
    e, clock = make_engine({"prod": {"min_resources": Resource.units(2), "min_share_preemption_timeout": 5},
                            "hog": {}, "adhoc": {}}, nodes=1, slots=4)
    submit(e, "hog", "hog", tasks=4)
    e.update()
    fill(e)
    assert running(e, "root.hog") == 4
    e.add_app("prod-job", "prod", queue="prod")
    e.mark_unmanaged("prod-job")
    e.update_requests("prod-job", [Request(1, Resource.units(2), 1)])  # one container of two slots
    submit(e, "adhoc-job", "adhoc", tasks=4)
    e.update()
    clock.advance(6)
    got = e.update()
    assert len(got) == 2 and {p.queue for p in got} == {"root.hog"}
    e.container_finished(got[0].container_id)  # one slot free, held for prod; the other victim still runs
    clock.advance(1)
    assert e.heartbeat("n0") == []  # prod cannot place two slots in one; adhoc may not have prod's slot
    assert running(e, "root.adhoc") == 0
    e.container_finished(got[1].container_id)
    [a] = e.heartbeat("n0")
    assert a.queue == "root.prod" and a.resource == Resource.units(2)
    assert running(e, "root.adhoc") == 0


def test_victims_stop_at_the_victim_queues_fair_share_when_the_starved_queue_wants_more():
    """Three queues sharing 18 slots, fair shares 6 each: hog runs 10, mid 6,
    and prod, starved of its whole fair share (6), may take back only hog's
    4 over its share: mid is at its share, and hog is never pushed below its
    own. Fails if a victim may push its queue below its fair share (6 taken,
    hog left at 4)."""
    queues = {"prod": {"fair_share_preemption_timeout": 5, "fair_share_preemption_threshold": 1.0},
              "mid": {}, "hog": {}}
    e, clock = make_engine(queues, nodes=3, slots=6)
    submit(e, "hog", "hog", tasks=10)
    submit(e, "mid", "mid", tasks=6)
    e.update()
    fill(e)
    assert running(e, "root.hog") == 10 and running(e, "root.mid") == 6  # two slots idle
    submit(e, "prod-job", "prod", tasks=12)
    e.update()
    assert {q: e.queues[f"root.{q}"].fair_share.memory_mb for q in ("prod", "mid", "hog")} == \
        pytest.approx({"prod": 6, "mid": 6, "hog": 6})
    clock.advance(6)  # past prod's timeout with no heartbeat meanwhile
    got = e.update()
    assert len(got) == 4 and {p.queue for p in got} == {"root.hog"}
    assert running(e, "root.hog") - len(got) == 6
