"""The one delay-scheduling rule, on the app it is about (as YARN's
FSAppAttempt.getAllowedLocalityLevel[ByTime]), in both modes."""

from __future__ import annotations

from slotwise.engine import NODE_LOCAL, OFF_SWITCH, RACK_LOCAL, App, Request
from slotwise.engine.app import CountDelay, TimeDelay
from slotwise.engine.queue import Queue
from slotwise.resources import Resource


def app_with(rule, hosts=None, racks=None) -> App:
    a = App("app_1", "ann", 0, 0.0)
    a.queue = Queue("root.q", None, 0.0)
    a.delay = rule
    a.set_requests([Request(1, Resource(512, 1), 2, hosts or {"h1": 2}, racks or {"/r1": 2})])
    return a


def test_time_rule_waits_t1_for_node_local_then_t2_more_for_rack_local():
    a = app_with(TimeDelay(t1=3.0, t2=5.0))
    for waited, level in [(0.0, NODE_LOCAL), (2.9, NODE_LOCAL), (3.0, RACK_LOCAL), (7.9, RACK_LOCAL),
                          (8.0, OFF_SWITCH)]:
        a.locality_wait = waited
        assert a.allowed_level() == level, waited


def test_after_a_rack_local_launch_only_t2_is_waited_and_any_launch_restarts_the_wait():
    a = app_with(TimeDelay(t1=3.0, t2=5.0))
    a.locality_wait = 4.0
    a.launched(RACK_LOCAL, local_ask=True, now=0.0)
    assert (a.locality_level, a.locality_wait) == (RACK_LOCAL, 0.0)
    a.locality_wait = 4.9
    assert a.allowed_level() == RACK_LOCAL
    a.locality_wait = 5.0
    assert a.allowed_level() == OFF_SWITCH


def test_an_offer_names_the_level_only_where_the_app_has_something_to_run():
    a = app_with(TimeDelay(t1=3.0, t2=5.0))
    assert a.offered("h1", "/r1") == NODE_LOCAL
    assert a.offered("h2", "/r1") is None  # rack-local not yet allowed
    a.locality_wait = 3.0
    assert a.offered("h2", "/r1") == RACK_LOCAL
    assert a.offered("h3", "/r2") is None
    a.locality_wait = 8.0
    assert a.offered("h3", "/r2") == OFF_SWITCH


def test_count_rule_moves_on_after_threshold_times_nodes_missed_offers_and_a_withdrawn_offer_is_not_counted():
    nodes = {f"n{i}": None for i in range(4)}
    a = app_with(CountDelay(node_threshold=0.5, rack_threshold=1.0, nodes=nodes))
    assert a.offered("h9", "/r9") is None
    assert a.missed_opportunities == 1 and a.allowed_level() == NODE_LOCAL
    a.withdrawn()  # the node went to an app ordered before it after all
    assert a.missed_opportunities == 0
    assert a.offered("h9", "/r9") is None and a.allowed_level() == NODE_LOCAL
    assert a.offered("h2", "/r1") == RACK_LOCAL  # the 2nd counted miss of 0.5 x 4 nodes
    assert a.missed_opportunities == 0
    for _ in range(3):
        assert a.offered("h9", "/r9") is None
    assert a.offered("h9", "/r9") == OFF_SWITCH  # 1.0 x 4 nodes at rack level
    nodes["n4"] = None  # thresholds scale with the cluster
    b = app_with(CountDelay(0.5, 1.0, nodes))
    for _ in range(2):
        b.offered("h9", "/r9")
    assert b.allowed_level() == NODE_LOCAL  # 2 < 0.5 x 5


def test_progress_says_how_far_to_the_next_level_in_each_mode():
    a = app_with(TimeDelay(3.0, 5.0))
    a.locality_wait = 1.0
    assert a.delay.progress(a) == (1.0, 3.0, "s")
    a.locality_wait = 4.0
    assert a.delay.progress(a) == (4.0, 8.0, "s")
    b = app_with(CountDelay(1.0, 2.0, {"n1": None, "n2": None}))
    b.offered("h9", "/r9")
    assert b.delay.progress(b) == (1, 2.0, "offers")


def test_the_heartbeats_written_out_common_case_decides_as_the_rule_does():
    """The engine writes TimeDelay's node-local case out in its hot loop;
    an engine whose rule is a subclass (so never written out) must place
    the same containers, at the same levels, over a delay-bound workload."""
    import random

    from slotwise.engine import Engine
    from slotwise.settings import EngineSettings
    from support import make_config

    class SameRule(TimeDelay):
        pass

    def run(rule_class):
        from slotwise.clock import ManualClock

        clock = ManualClock()
        e = Engine(make_config({"a": {}, "b": {}}), clock,
                   EngineSettings(node_locality_delay=1.0, rack_locality_delay=1.0))
        e.delay = rule_class(e.delay.t1, e.delay.t2)
        rng = random.Random(7)
        for i in range(12):
            e.add_node(f"n{i}", f"host{i}", f"/rack{i % 3}", Resource(2048, 2))
        for j in range(20):
            hosts = {f"host{rng.randrange(12)}": 1 for _ in range(3)}
            racks = {f"/rack{rng.randrange(3)}": 1}
            app = f"app{j}"
            e.add_app(app, f"u{j % 4}", queue="ab"[j % 2])
            e.apps[app].delay = e.delay
            e.update_requests(app, [Request(1, Resource(512, 1), 3, hosts, racks)])
            e.apps[app].has_am = True
        out = []
        for step in range(200):
            clock.advance(0.3)
            out += [(a.app_id, a.node_id, a.locality) for a in e.heartbeat(f"n{rng.randrange(12)}")]
            if step % 5 == 0:
                e.update()
        return out

    inline, generic = run(TimeDelay), run(SameRule)
    assert len(inline) > 20 and {lv for _, _, lv in inline} >= {"node_local", "rack_local"}
    assert inline == generic
