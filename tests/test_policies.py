"""Policies: the registry, and each policy's fast ordering agreeing with its
sort key (the rule the engine relies on)."""

import random
from types import SimpleNamespace

import pytest

from slotwise.policies import get_policy, known_policy_names, register_policy
from slotwise.policies.base import SchedulingPolicy
from slotwise.resources import Resource


def fake(name, used, min_share, demand, weight, start=0.0, priority=0):
    return SimpleNamespace(name=name, usage=Resource.units(used), min_share=Resource.units(min_share),
                           demand=Resource.units(demand), weight=weight, start_time=start,
                           priority=priority, max_share=Resource.units(float("inf")))


@pytest.mark.parametrize("policy", ["fair", "fifo", "drf"])
def test_order_agrees_with_sort_key(policy):
    p = get_policy(policy)
    rng = random.Random(7)
    cluster = Resource(1000, 1000)
    for _ in range(200):
        kids = [fake(f"q{i:02d}", rng.choice([0, 1, 2, 5, 8]), rng.choice([0, 0, 4]), rng.choice([0, 3, 10]),
                     rng.choice([0.5, 1.0, 2.0]), start=float(rng.randrange(3)), priority=rng.randrange(2))
                for i in range(rng.randrange(1, 12))]
        kids.sort(key=lambda s: (s.start_time, s.name))
        assert [k.name for k in p.order(kids, cluster)] == [
            k.name for k in sorted(kids, key=lambda s: p.sort_key(s, cluster))]


def test_fair_key_puts_needy_first_then_least_used_per_weight():
    p = get_policy("fair")
    kids = [fake("busy", 9, 0, 20, 1.0), fake("needy", 3, 5, 20, 1.0), fake("heavy", 9, 0, 20, 3.0)]
    assert [k.name for k in p.order(kids, Resource(100, 100))] == ["needy", "heavy", "busy"]


@pytest.fixture
def registry(monkeypatch):
    """Plugins registered by a test leave with it (other tests list the registry)."""
    from slotwise.policies import base

    monkeypatch.setattr(base, "_REGISTRY", dict(base._REGISTRY))
    monkeypatch.setattr(base, "_INSTANCES", dict(base._INSTANCES))


def test_registry_has_builtins_and_accepts_plugins(registry):
    assert {"fair", "fifo", "drf"} <= set(known_policy_names())

    class Reverse(SchedulingPolicy):
        name = "reverse-test"

        def sort_key(self, s, cluster):
            return (-s.usage.memory_mb, s.name)

    register_policy("reverse-test", Reverse)
    assert isinstance(get_policy("reverse-test"), Reverse)
    with pytest.raises(KeyError, match="unknown scheduling policy"):
        get_policy("no-such-policy")


def test_fifo_as_root_policy_is_the_baseline_scheduler():
    from slotwise.settings import EngineSettings
    from support import fill, make_engine, submit

    e, clock = make_engine({"a": {}, "b": {}}, nodes=1, slots=4,
                           settings=EngineSettings(root_policy="fifo", node_locality_delay=0,
                                                   rack_locality_delay=0))
    submit(e, "first", "b", tasks=10)
    clock.advance(1)
    submit(e, "second", "a", tasks=10)
    # One queue for the whole cluster: the older job takes every slot.
    assert {a.app_id for a in fill(e)} == {"first"}


def test_a_plugin_written_before_share_rules_still_shares(registry):
    """compute_shares(children, total, steady) without ``rule``: the engine calls it as before."""
    from slotwise.resources import Resource as R
    from support import fill, make_engine, submit

    class Halves(SchedulingPolicy):
        name = "halves-test"

        def sort_key(self, s, cluster):
            return (s.usage.memory_mb, s.name)

        def compute_shares(self, children, total, steady=False):
            return [R(total.memory_mb / len(children), total.vcores / len(children))] * len(children)

    register_policy("halves-test", Halves)
    e, _ = make_engine({"a": {}, "b": {}}, nodes=1, slots=8, default_queue_scheduling_policy="halves-test")
    submit(e, "x", "a", tasks=10)
    submit(e, "y", "b", tasks=10)
    fill(e)
    e.update()
    assert e.queues["root.a"].fair_share == e.queues["root.b"].fair_share == R(4, 4)
