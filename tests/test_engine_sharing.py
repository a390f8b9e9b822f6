"""Fair sharing between and inside queues, driven through heartbeats."""

from collections import Counter

import pytest

from slotwise.resources import Resource
from slotwise.settings import EngineSettings
from support import fill, make_engine, running, submit


def test_two_queues_split_the_cluster_evenly():
    e, _ = make_engine(nodes=4, slots=4)
    submit(e, "a", "root.a", tasks=50)
    submit(e, "b", "root.b", tasks=50)
    fill(e)
    assert running(e, "root.a") == 8
    assert running(e, "root.b") == 8


def test_queue_weight_two_gets_twice_the_slots():
    e, _ = make_engine({"heavy": {"weight": 2.0}, "light": {}}, nodes=3, slots=4)
    submit(e, "h", "heavy", tasks=50)
    submit(e, "l", "light", tasks=50)
    fill(e)
    assert running(e, "root.heavy") == 8
    assert running(e, "root.light") == 4
    e.update()
    assert e.queues["root.heavy"].fair_share.memory_mb == pytest.approx(8)


def test_queue_below_min_share_is_served_first():
    e, _ = make_engine({"prod": {"min_resources": Resource.units(12)}, "dev": {}}, nodes=4, slots=4)
    submit(e, "d", "dev", tasks=50)
    submit(e, "p", "prod", tasks=50)
    e.update()  # demand, which the min-share rule caps by, comes from the update pass
    fill(e)
    assert running(e, "root.prod") == 12
    assert running(e, "root.dev") == 4


def test_inactive_queue_reserves_nothing():
    e, _ = make_engine({"prod": {"min_resources": Resource.units(12)}, "dev": {}}, nodes=4, slots=4)
    submit(e, "d", "dev", tasks=50)
    fill(e)
    e.update()
    assert running(e, "root.dev") == 16
    assert e.queues["root.prod"].fair_share.memory_mb == 0
    assert e.queues["root.dev"].fair_share.memory_mb == 16
    # The steady share still counts the idle queue.
    assert e.queues["root.prod"].steady_fair_share.memory_mb == pytest.approx(12)


def _overcommitted_mins(rule: str):
    e, _ = make_engine({"a": {"min_resources": Resource.units(30)}, "b": {"min_resources": Resource.units(10)}},
                       nodes=4, slots=5, settings=EngineSettings(share_rule=rule))
    submit(e, "x", "a", tasks=100)
    submit(e, "y", "b", tasks=100)
    e.update()
    return e.queues["root.a"].fair_share.memory_mb, e.queues["root.b"].fair_share.memory_mb


def test_min_shares_larger_than_cluster_are_scaled_by_the_design_rule():
    assert _overcommitted_mins("design") == pytest.approx((15, 5))


def test_min_shares_larger_than_cluster_are_granted_in_full_by_yarns_rule():
    assert _overcommitted_mins("yarn") == pytest.approx((30, 10))


def test_yarn_rule_does_not_cap_a_share_at_demand_and_auto_follows_the_file_format():
    def shares(rule: str, fmt: str = "yarn"):
        e, _ = make_engine({"small": {}, "big": {}}, nodes=4, slots=4, format=fmt,
                           settings=EngineSettings(share_rule=rule))
        submit(e, "s", "small", tasks=2)
        submit(e, "b", "big", tasks=100)
        e.update()
        return e.queues["root.small"].fair_share.memory_mb, e.queues["root.big"].fair_share.memory_mb

    assert shares("design") == pytest.approx((2, 14))  # capped at demand, the rest to big
    assert shares("yarn") == pytest.approx((8, 8))  # demand only makes a queue active
    assert shares("auto", "yarn") == shares("yarn")
    assert shares("auto", "mrv1") == shares("design")


def test_yarn_rule_raises_a_max_below_the_min_and_the_design_rule_clips_the_min():
    from slotwise.config.model import ResourceSpec
    queues = {"a": {"min_resources": Resource.units(10), "max_resources": ResourceSpec.of(Resource.units(4))}, "b": {}}
    out = {}
    for rule in ("yarn", "design"):
        e, _ = make_engine(queues, nodes=4, slots=4, settings=EngineSettings(share_rule=rule))
        submit(e, "x", "a", tasks=100)
        submit(e, "y", "b", tasks=100)
        e.update()
        out[rule] = e.queues["root.a"].fair_share.memory_mb
    assert out == {"yarn": pytest.approx(10), "design": pytest.approx(4)}


def test_max_resources_caps_a_queue():
    from slotwise.config.model import ResourceSpec
    e, _ = make_engine({"capped": {"max_resources": ResourceSpec.of(Resource.units(3))}}, nodes=2, slots=4)
    submit(e, "c", "capped", tasks=50)
    fill(e)
    assert running(e, "root.capped") == 3
    e.update()
    assert e.queues["root.capped"].demand.memory_mb == 3


def test_max_resources_percentage_follows_cluster_size():
    from slotwise.config.model import ResourceSpec
    e, _ = make_engine({"half": {"max_resources": ResourceSpec(memory_pct=50, vcores_pct=50)}}, nodes=2, slots=4)
    assert e.queues["root.half"].max_share.memory_mb == 4
    e.add_node("n9", "host9", "/rack0", Resource.units(4))
    assert e.queues["root.half"].max_share.memory_mb == 6


def test_fifo_queue_runs_by_priority_then_submit_time():
    e, clock = make_engine({"q": {"scheduling_policy": "fifo"}}, nodes=1, slots=3)
    submit(e, "early", "q", tasks=5)
    clock.advance(1)
    submit(e, "late_high", "q", tasks=5, priority=1)
    clock.advance(1)
    submit(e, "later", "q", tasks=5)
    got = [a.app_id for a in fill(e)]
    assert got == ["late_high"] * 3
    for cid in list(e.apps["late_high"].containers):
        e.container_finished(cid)
    e.update_requests("late_high", [])
    got = [a.app_id for a in fill(e)]
    assert got == ["early"] * 3


def test_fair_queue_weights_jobs_by_priority():
    e, _ = make_engine({"q": {"scheduling_policy": "fair"}}, nodes=3, slots=4)
    submit(e, "normal", "q", tasks=50)
    submit(e, "high", "q", tasks=50, priority=1)  # weight 2
    fill(e)
    assert len(e.apps["high"].containers) == 8
    assert len(e.apps["normal"].containers) == 4
    e.update()
    assert e.apps["high"].fair_share.memory_mb == pytest.approx(8)


def test_hierarchical_queues_share_parent_share():
    queues = {"eng": {"weight": 3.0, "children": {"x": {}, "y": {}}}, "ops": {}}
    e, _ = make_engine(queues, nodes=4, slots=4)
    submit(e, "x1", "eng.x", tasks=50)
    submit(e, "y1", "eng.y", tasks=50)
    submit(e, "o1", "ops", tasks=50)
    fill(e)
    e.update()
    assert running(e, "root.eng") == 12
    assert running(e, "root.ops") == 4
    assert running(e, "root.eng.x") == 6
    assert e.queues["root.eng.y"].fair_share.memory_mb == pytest.approx(6)


def test_assign_multiple_off_places_one_container_per_heartbeat():
    e, _ = make_engine(nodes=1, slots=4, settings=EngineSettings(assign_multiple=False, node_locality_delay=0,
                                                                   rack_locality_delay=0))
    submit(e, "a", "p", tasks=10)
    assert len(e.heartbeat("n0")) == 1
    e2, _ = make_engine(nodes=1, slots=4, settings=EngineSettings(max_assign=2, node_locality_delay=0,
                                                                    rack_locality_delay=0))
    submit(e2, "a", "p", tasks=10)
    assert len(e2.heartbeat("n0")) == 2
    assert len(e2.heartbeat("n0")) == 2
    assert len(e2.heartbeat("n0")) == 0


def test_container_that_does_not_fit_is_not_placed():
    e, _ = make_engine(nodes=1, slots=4)
    submit(e, "big", "p", tasks=2, size=Resource(5, 1))
    assert e.heartbeat("n0") == []


def test_requests_are_consumed_by_placement():
    e, _ = make_engine(nodes=1, slots=8)
    submit(e, "a", "p", tasks=3, hosts={"host0": 2}, racks={"/rack0": 3})
    got = e.heartbeat("n0")
    assert len(got) == 3
    assert Counter(a.locality for a in got) == {"node_local": 2, "rack_local": 1}
    req = e.apps["a"].requests[1]
    assert req.num_containers == 0 and req.hosts == {} and req.racks == {}


def test_first_container_is_the_am_and_max_am_share_limits_ams():
    e, _ = make_engine({"q": {"max_am_share": 0.25}}, nodes=1, slots=8)
    for i in range(4):
        submit(e, f"app{i}", "q", tasks=1, needs_am=True, size=Resource.units(2))
    e.update()
    got = e.heartbeat("n0")
    # Fair share 8 slots * 0.25 = 2: one 2-slot AM fits, a second would not.
    assert [a.is_am for a in got] == [True]
    assert e.queues["root.q"].am_usage.memory_mb == 2


def test_cluster_capacity_tracks_nodes_and_node_loss_frees_containers():
    e, _ = make_engine(nodes=2, slots=4)
    submit(e, "a", "p", tasks=8)
    fill(e)
    assert e.cluster.memory_mb == 8
    lost = e.remove_node("n0")
    assert len(lost) == 4
    assert e.cluster.memory_mb == 4
    assert running(e, "root.p") == 4


def test_drf_serves_the_queue_with_the_smaller_dominant_share_not_the_smaller_memory_share():
    """Dominant Resource Fairness orders by the larger of a queue's memory
    and vcores shares. On a 100 MB, 100 vcore node, a holds 10 MB and 30
    vcores (dominant: vcores, 0.3), b 20 MB and 5 vcores (dominant: memory,
    0.2): b is below a, so it takes the next containers, until its dominant
    share passes a's. Fails if DRF orders by memory alone (a, at 0.1 of the
    memory, would come first)."""
    from slotwise.clock import ManualClock
    from slotwise.engine import Engine, Request
    from support import make_config

    cfg = make_config({"p": {"scheduling_policy": "drf", "children": {"a": {}, "b": {}}}})
    e = Engine(cfg, ManualClock(), EngineSettings(node_locality_delay=0, rack_locality_delay=0,
                                                  assign_multiple=False))
    e.add_node("n0", "host0", "/rack0", Resource(100, 100))
    for app, queue, held in (("a1", "root.p.a", Resource(10, 30)), ("b1", "root.p.b", Resource(20, 5))):
        e.add_app(app, app, queue=queue)
        e.mark_unmanaged(app)
        e.container_launched(f"{app}-c0", app, "n0", held)
        e.update_requests(app, [Request(1, Resource(1, 1), 50)])
    e.update()
    got = [a.queue for _ in range(10) for a in e.heartbeat("n0")]
    assert got == ["root.p.b"] * 10  # b's memory share 0.2 -> 0.3, a's vcores share stays 0.3
    assert e.heartbeat("n0")[0].queue == "root.p.a"  # b at 0.3 of the memory now, a's 0.3 first by submit
