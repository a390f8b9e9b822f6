"""Dynamic Priority on the engine, with a manual clock: price, shares,
charging, budget exhaustion, work conservation, FIFO without budgets,
preemption of unpaid slots, the store, and placement by the ACL."""

import os

import pytest

from slotwise.clock import ManualClock
from slotwise.engine import Request
from slotwise.engine import Engine, PlacementRejected
from slotwise.market import Market, MarketError, MarketSettings, SqliteStore
from slotwise.market.acl import Acl
from slotwise.resources import Resource
from slotwise.settings import EngineSettings
from support import SLOT, make_config, running

DP = "dynamic-priority"


def dp_engine(queues=("alice", "bob", "sam"), nodes=3, slots=5, market=None, preemption=False, **msettings):
    """Queues under root.dp (dynamic-priority); one slot = Resource(1, 1)."""
    clock = ManualClock()
    market = market or Market(MarketSettings(slot_memory_mb=1, slot_vcores=1, **msettings))
    cfg = make_config({"dp": {"scheduling_policy": DP, "children": {q: {} for q in queues}}})
    e = Engine(cfg, clock, EngineSettings(node_locality_delay=0, rack_locality_delay=0, preemption=preemption),
               services={"market": market})
    for i in range(nodes):
        e.add_node(f"n{i}", f"host{i}", "/r", Resource.units(slots))
    return e, clock, market


def job(e, app_id, queue, tasks=100, user=None):
    e.add_app(app_id, user or queue, queue=f"root.dp.{queue}")
    e.update_requests(app_id, [Request(1, SLOT, tasks)])
    e.apps[app_id].has_am = True


def fund(market, **rates_budgets):
    market.ensure(f"root.dp.{q}" for q in rates_budgets)
    for q, (rate, budget) in rates_budgets.items():
        market.set_spending(q, rate)
        market.add_budget(q, budget)
        market.accounts[f"root.dp.{q}"].rate = rate  # in force now, not from the next interval


def fill(e):
    out = []
    for n in list(e.nodes):
        out += e.heartbeat(n)
    return out


def test_figure_1_shares_follow_spending_rates():
    """The paper's Figure 1: $4, $1.5 and $2 bids over 15 slots give 8, 3, 4."""
    e, clock, m = dp_engine()
    fund(m, alice=(4, 1000), bob=(1.5, 1000), sam=(2, 1000))
    for q in ("alice", "bob", "sam"):
        job(e, q, q)
    e.update()
    assert m.price() == pytest.approx(7.5)
    shares = {q: e.queues[f"root.dp.{q}"].fair_share.memory_mb for q in ("alice", "bob", "sam")}
    assert shares == pytest.approx({"alice": 8, "bob": 3, "sam": 4})
    assert m.share("root.dp.alice") == pytest.approx(4 / 7.5)
    fill(e)
    assert {q: running(e, f"root.dp.{q}") for q in ("alice", "bob", "sam")} == {"alice": 8, "bob": 3, "sam": 4}


def test_charges_are_rate_times_slots_used_exact_to_the_interval():
    e, clock, m = dp_engine(interval=10)
    fund(m, alice=(4, 1000), bob=(1.5, 1000), sam=(2, 1000))
    for q in ("alice", "bob", "sam"):
        job(e, q, q)
    e.update()
    fill(e)
    e.update()  # usage 8 / 3 / 4 from t=0
    clock.advance(5)
    e.update()
    assert m.accounts["root.dp.alice"].budget == 1000  # nothing charged mid-interval
    clock.advance(7)  # t=12: the interval [0, 10) closes
    e.update()
    assert m.last_interval.interval_id == 1 and m.last_interval.end == 10
    charged = {c.queue.rsplit(".", 1)[1]: c.amount for c in m.last_interval.charges}
    assert charged == pytest.approx({"alice": 4 * 8, "bob": 1.5 * 3, "sam": 2 * 4})
    assert m.accounts["root.dp.alice"].budget == pytest.approx(1000 - 32)


def test_partial_use_pays_only_for_the_slot_seconds_used():
    e, clock, m = dp_engine(queues=("alice",), nodes=1, slots=4, interval=10)
    fund(m, alice=(2, 100))
    job(e, "a", "alice", tasks=4)
    e.update()
    fill(e)
    e.update()
    clock.advance(2.5)
    for cid in list(e.apps["a"].containers)[:2]:
        e.container_finished(cid)
    e.update()
    clock.advance(7.5)
    e.update()
    # 4 slots for 2.5 s, then 2 slots for 7.5 s: 25 slot-seconds = 2.5 slots on average.
    (c,) = m.last_interval.charges
    assert c.slots == pytest.approx(2.5) and c.amount == pytest.approx(5.0)


def test_new_rate_comes_into_force_at_the_next_interval():
    e, clock, m = dp_engine(queues=("alice", "bob"), nodes=2, slots=4, interval=10)
    fund(m, alice=(1, 1000), bob=(1, 1000))
    job(e, "a", "alice")
    job(e, "b", "bob")
    e.update()
    m.set_spending("alice", 3)
    e.update()
    assert e.queues["root.dp.alice"].fair_share.memory_mb == 4  # still 1:1 this interval
    clock.advance(10)
    e.update()
    assert e.queues["root.dp.alice"].fair_share.memory_mb == 6  # 3:1 of 8 slots
    assert m.price() == 4


def test_an_interval_is_charged_at_the_rate_in_force_not_the_rate_asked_during_it():
    """The paper: a queue pays, for an interval, the rate that was in force
    during it; a new spending rate asked mid-interval is charged from the
    next interval on. Alice holds 4 slots throughout and asks for 3 instead
    of 1 at t=5: [0, 10) costs her 1 x 4, [10, 20) 3 x 4. Fails if an
    interval is charged at the rate asked during it (12 for the first)."""
    e, clock, m = dp_engine(queues=("alice",), nodes=1, slots=4, interval=10, initial_budget=1000)
    job(e, "a", "alice")
    e.update()  # opens alice's account: budget 1000, spending rate 1 in force
    assert m.rate_of("root.dp.alice") == 1
    fill(e)
    e.update()
    assert running(e, "root.dp.alice") == 4
    clock.advance(5)
    m.set_spending("alice", 3)
    e.update()
    assert m.rate_of("root.dp.alice") == 1  # asked, not yet in force
    clock.advance(5)
    e.update()  # t=10: [0, 10) closes
    (c,) = m.last_interval.charges
    assert (c.slots, c.rate, c.amount) == pytest.approx((4, 1, 4))
    assert m.accounts["root.dp.alice"].budget == pytest.approx(996)
    assert m.rate_of("root.dp.alice") == 3  # in force from this interval
    clock.advance(10)
    e.update()  # t=20: [10, 20) closes
    (c,) = m.last_interval.charges
    assert (c.slots, c.rate, c.amount) == pytest.approx((4, 3, 12))
    assert m.accounts["root.dp.alice"].budget == pytest.approx(984)


def test_out_of_budget_drops_out_and_runs_on_what_others_leave():
    e, clock, m = dp_engine(queues=("alice", "bob"), nodes=2, slots=4, interval=10)
    fund(m, alice=(2, 8), bob=(1, 1000))
    job(e, "a", "alice")
    job(e, "b", "bob")
    e.update()
    fill(e)
    assert running(e, "root.dp.alice") == 5 or running(e, "root.dp.alice") == 6
    e.update()
    clock.advance(10)
    e.update()
    assert m.accounts["root.dp.alice"].budget == 0  # 2 x 5 slots is more than it had: charged all of it
    assert m.rate_of("root.dp.alice") == 0 and m.price() == 1
    assert e.queues["root.dp.alice"].fair_share.memory_mb == 0
    assert e.queues["root.dp.bob"].fair_share.memory_mb == 8
    # Work conserving: once bob wants no more, alice gets the free slots all the same.
    e.update_requests("b", [Request(1, SLOT, 0)])
    for cid in list(e.apps["a"].containers):
        e.container_finished(cid)
    e.update()
    fill(e)
    assert running(e, "root.dp.alice") == 8 - running(e, "root.dp.bob")
    assert running(e, "root.dp.alice") > 0


def test_unused_share_goes_to_the_others_by_rate():
    e, clock, m = dp_engine(queues=("alice", "bob", "sam"), nodes=2, slots=5)
    fund(m, alice=(4, 1000), bob=(1, 1000), sam=(3, 1000))
    job(e, "a", "alice", tasks=2)  # would be granted 5 of 10, wants 2
    job(e, "b", "bob")
    job(e, "s", "sam")
    e.update()
    shares = {q: e.queues[f"root.dp.{q}"].fair_share.memory_mb for q in ("alice", "bob", "sam")}
    assert shares == pytest.approx({"alice": 2, "bob": 2, "sam": 6})


def test_queues_without_work_do_not_count_in_the_price():
    e, clock, m = dp_engine(queues=("alice", "bob"))
    fund(m, alice=(4, 1000), bob=(1, 1000))
    job(e, "b", "bob")
    e.update()
    assert m.price() == 1 and m.share("root.dp.bob") == 1 and m.share("root.dp.alice") == 0


def test_no_budget_anywhere_is_fifo():
    e, clock, m = dp_engine(queues=("alice", "bob"), nodes=1, slots=4)
    job(e, "b1", "bob", tasks=3)
    clock.advance(1)
    job(e, "a1", "alice", tasks=3)
    e.update()
    assert m.price() == 0
    fill(e)
    assert running(e, "root.dp.bob") == 3 and running(e, "root.dp.alice") == 1


def test_unpaid_slots_are_preempted_after_the_grace_time():
    e, clock, m = dp_engine(queues=("alice", "bob"), nodes=2, slots=4, grace=30, interval=10)
    fund(m, alice=(1, 1000), bob=(3, 1000))
    job(e, "a", "alice")
    e.update()
    fill(e)
    assert running(e, "root.dp.alice") == 8
    job(e, "b", "bob")
    e.update()
    assert e.queues["root.dp.bob"].fair_share.memory_mb == 6
    clock.advance(30)
    assert e.update() == []  # within the grace time
    clock.advance(1)
    got = e.update()
    assert len(got) == 6 and {p.queue for p in got} == {"root.dp.alice"}
    newest = sorted(e.apps["a"].containers.values(), key=lambda c: -c.launch_time)[:6]
    assert {p.container_id for p in got} == {c.container_id for c in newest}


def test_preemption_off_takes_nothing_back():
    e, clock, m = dp_engine(queues=("alice", "bob"), nodes=2, slots=4, grace=30, preemption=False)
    m.settings.preemption = False
    fund(m, alice=(1, 1000), bob=(3, 1000))
    job(e, "a", "alice")
    e.update()
    fill(e)
    job(e, "b", "bob")
    clock.advance(100)
    assert e.update() == [] and e.update() == []


def test_map_and_reduce_engines_pay_from_one_budget():
    m = Market(MarketSettings(slot_memory_mb=1, slot_vcores=1, interval=10))
    e1, clock, _ = dp_engine(queues=("alice",), nodes=1, slots=2, market=m)
    cfg = make_config({"dp": {"scheduling_policy": DP, "children": {"alice": {}}}})
    e2 = Engine(cfg, clock, EngineSettings(preemption=False), services={"market": m})
    e2.ctx.stream = "reduce"  # the market tells its sources apart by their context's name
    e2.add_node("n0", "host0", "/r", Resource.units(1))
    fund(m, alice=(1, 100))
    for e in (e1, e2):
        job(e, "a", "alice")
        e.update()
        fill(e)
        e.update()
    clock.advance(10)
    e1.update()
    (c,) = m.last_interval.charges
    assert c.slots == pytest.approx(3)  # 2 map slots + 1 reduce slot


def test_sqlite_store_survives_a_restart_and_numbers_on(tmp_path):
    path = str(tmp_path / "market.db")
    m = Market(MarketSettings(slot_memory_mb=1, slot_vcores=1, interval=10), SqliteStore(path))
    e, clock, _ = dp_engine(queues=("alice",), nodes=1, slots=2, market=m)
    fund(m, alice=(2, 100))
    job(e, "a", "alice")
    e.update()
    fill(e)
    e.update()
    clock.advance(25)
    e.update()  # closes [0,10) and [10,20)
    assert oct(os.stat(path).st_mode & 0o777) == "0o600"
    m.store.close()
    m2 = Market(MarketSettings(), SqliteStore(path))
    assert m2.accounts["root.dp.alice"].budget == pytest.approx(100 - 2 * 2 * 2)
    assert m2.accounts["root.dp.alice"].spending == 2
    assert m2.interval_id == 3
    hist = m2.history()
    assert [h["interval"] for h in hist] == [1, 2]
    assert [c["amount"] for h in hist for c in h["charges"]] == pytest.approx([4, 4])


def test_market_refuses_bad_requests_and_changes_nothing():
    m = Market()
    m.add_queue("root.dp.alice")
    with pytest.raises(MarketError, match="not a number"):
        m.add_budget("alice", "lots")
    with pytest.raises(MarketError, match="finite"):
        m.set_spending("alice", "nan")
    with pytest.raises(MarketError, match=">= 0"):
        m.set_spending("alice", -1)
    with pytest.raises(MarketError, match="no queue"):
        m.add_budget("carol", 5)
    with pytest.raises(MarketError, match="cannot take"):
        m.add_budget("alice", -1)
    with pytest.raises(MarketError, match="already"):
        m.add_queue("dp.alice")
    a = m.accounts["root.dp.alice"]
    assert (a.budget, a.spending) == (0, 1)


def test_placement_under_a_dp_queue_needs_the_acl(tmp_path):
    acl_file = tmp_path / "acl"
    acl_file.write_text("alice user alice-secret-key\nroot admin root-secret-key\ncarol user carol-secret-key bob\n")
    acl_file.chmod(0o600)
    e, clock, m = dp_engine(queues=("alice", "bob"))
    e.ctx.services["dp_acl"] = Acl(str(acl_file))
    assert e.place_app("alice", "root.dp.alice") == "root.dp.alice"
    assert e.place_app("root", "root.dp.alice") == "root.dp.alice"
    assert e.place_app("carol", "root.dp.bob") == "root.dp.bob"
    with pytest.raises(PlacementRejected, match="root.dp.bob is a dynamic-priority queue and alice may not"):
        e.place_app("alice", "root.dp.bob")
    with pytest.raises(PlacementRejected, match="mallory"):
        e.place_app("mallory", "root.dp.alice")


def test_explain_says_what_the_market_says():
    from slotwise.views.explain import explain_app

    e, clock, m = dp_engine(queues=("alice", "bob"), nodes=1, slots=2)
    fund(m, alice=(3, 100))
    job(e, "a", "alice")
    job(e, "b", "bob")
    e.update()
    fill(e)
    text = " ".join(h["message"] for h in explain_app(e, "b")["holds"])
    assert "root.dp.bob is out of budget" in text
    text = " ".join(h["message"] for h in explain_app(e, "a")["holds"])
    assert "root.dp.alice pays 3 per slot" in text and "granted 100% of root.dp" in text


def test_time_without_reports_goes_uncharged():
    """Python away for an hour (the cluster ran on the shim's FIFO): only what
    was reported is charged, once; intervals start again on the next report."""
    m = Market(MarketSettings(interval=10, slot_memory_mb=1, slot_vcores=1))
    fund(m, alice=(1, 10_000))
    m.observe("s", 0.0, {"root.dp.alice": 4}, {"root.dp.alice": 1})
    m.observe("s", 3600.0, {"root.dp.alice": 4}, {"root.dp.alice": 1})
    assert len(m.store.intervals) == 1 and m.store.intervals[0].charges[0].amount == pytest.approx(4)
    assert m.interval_start == 3600.0
    m.observe("s", 3610.0, {"root.dp.alice": 2}, {})
    assert [i.interval_id for i in m.store.intervals] == [1, 2]
    assert m.store.intervals[1].charges[0].amount == pytest.approx(4)  # 4 slots over [3600, 3610)
    assert m.accounts["root.dp.alice"].budget == pytest.approx(10_000 - 8)


def test_on_an_mrv1_cluster_each_kind_of_slot_is_split_by_the_rates():
    """Rates 3:1 split the map slots 3:1 although each queue holds one of the
    two reduce slots: a queue's standing on a map offer is its map share
    (taken over both kinds, research's reduce share would make it look as
    big as prod and the split would drift towards prod)."""
    clock = ManualClock()
    market = Market(MarketSettings(slot_memory_mb=1, slot_vcores=1))
    cfg = make_config({"dp": {"scheduling_policy": DP, "children": {q: {} for q in ("prod", "research")}}})
    e = Engine(cfg, clock, EngineSettings(node_locality_delay=0, rack_locality_delay=0),
               services={"market": market}, kind="mrv1")
    for i in range(2):
        e.add_node(f"n{i}", f"host{i}", "/r", Resource(map_slots=4, reduce_slots=1))
    fund(market, prod=(3, 10_000), research=(1, 10_000))
    for q in ("prod", "research"):
        e.add_app(q, q, queue=f"root.dp.{q}")
        e.update_requests(q, [Request(0, Resource(map_slots=1), 100), Request(1, Resource(reduce_slots=1), 1)])
        e.apps[q].has_am = True
    for _ in range(3):  # heartbeats, with the periodic pass between them, until the slots are full
        e.update()
        for n in list(e.nodes):
            e.heartbeat(n)
            clock.advance(0.5)
    reduces = {q: e.queues[f"root.dp.{q}"].usage.reduce_slots for q in ("prod", "research")}
    assert reduces == {"prod": 1, "research": 1}
    for _ in range(24):  # maps end one at a time, oldest first; the freed slot is offered again
        c = min((c for c in e.containers.values() if c.resource.map_slots), key=lambda c: c.launch_time)
        e.container_finished(c.container_id)
        e.update()
        e.heartbeat(c.node_id)
        clock.advance(1.0)
    maps = {q: e.queues[f"root.dp.{q}"].usage.map_slots for q in ("prod", "research")}
    assert maps == {"prod": 6, "research": 2}


def test_a_reload_keeps_the_markets_weights_until_the_next_pass():
    """The weights the market set on the last pass are the ones in force
    until the next: a reload of the file (which gives each child weight 1)
    keeps them, so the heartbeats between decide as before it, and a
    shadow's copy (a fork with a file set) decides as the live engine."""
    e, clock, m = dp_engine(slots=8)
    fund(m, alice=(4, 1000), bob=(1, 1000), sam=(1, 1000))
    for q in ("alice", "bob", "sam"):
        job(e, q, q)
    e.update()
    weights = {q: e.queues[f"root.dp.{q}"].weight for q in ("alice", "bob", "sam")}
    assert weights == {"alice": 4, "bob": 1, "sam": 1}
    twin = e.fork()
    twin.set_config(make_config({"dp": {"scheduling_policy": DP, "children": {q: {} for q in ("alice", "bob", "sam")}},
                                 "other": {}}))
    e.set_config(make_config({"dp": {"scheduling_policy": DP, "children": {q: {} for q in ("alice", "bob", "sam")}}}))
    assert {q: e.queues[f"root.dp.{q}"].weight for q in weights} == weights
    assert {q: twin.queues[f"root.dp.{q}"].weight for q in weights} == weights
    assert [(a.app_id, a.node_id) for a in fill(twin)] == [(a.app_id, a.node_id) for a in fill(e)]
    assert running(e, "root.dp.alice") == 16  # 4 of every 6 slots, before the next pass too
    # The parent's policy changed by the file: the file's weights.
    e.set_config(make_config({"dp": {"children": {q: {} for q in ("alice", "bob", "sam")}}}))
    assert {q: e.queues[f"root.dp.{q}"].weight for q in weights} == {"alice": 1, "bob": 1, "sam": 1}
