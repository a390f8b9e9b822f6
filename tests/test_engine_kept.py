"""What the heartbeat's walk keeps between heartbeats, checked against the
rule it stands for: a fair parent's order of its children
(``Queue.kept_order``: only the children whose key moved are placed again)
and a leaf's summary of what its asking apps want (``Queue.keep_asking``,
``queue.wants_of``, read by the delay rule to pass a leaf without reading its apps one by
one). Each test fails if what is kept goes stale."""

from __future__ import annotations

import math
import random

import pytest

from slotwise.clock import ManualClock
from slotwise.config.model import AllocationConfig, QueueConfig, ResourceSpec, default_placement_rules
from slotwise.engine import Engine, Queue, Request
from slotwise.engine.app import App
from slotwise.engine.app import NODE_LOCAL, OFF_SWITCH, RACK_LOCAL, offered_by_wait
from slotwise.engine.queue import wants_of
from slotwise.policies import get_policy
from slotwise.resources import OFFERS, ZERO, Resource
from slotwise.settings import EngineSettings

YARN = OFFERS["yarn"][0]
MAPS, REDUCES = OFFERS["mrv1"]


def fair_tree(n: int):
    root = Queue("root", None, 0.0)
    root.policy = get_policy("fair")
    kids = []
    for i in range(n):
        q = Queue(f"root.q{i}", root, 0.0)
        root.children.append(q)
        kids.append(q)
    return root, kids


def fresh(root, offer):
    return offer.order(root.policy, list(root.children), ZERO)


@pytest.mark.parametrize("offer", [YARN, MAPS], ids=["container", "map-slot"])
def test_a_kept_order_follows_every_change_of_the_childrens_keys(offer):
    rng = random.Random(5)
    root, kids = fair_tree(12)
    assert root.kept_order(offer) == fresh(root, offer)
    units = (lambda k: Resource.units(k)) if offer is YARN else (lambda k: Resource(map_slots=k, reduce_slots=k))
    for step in range(400):
        q = rng.choice(kids)
        what = rng.randrange(6)
        if what == 0:  # a container starts or ends beneath (the engine's path)
            k = rng.randint(1, 3)
            held = getattr(q.usage, offer.key)
            q.charge(units(k), False, -1 if held >= k and rng.random() < 0.4 else +1)
        elif what == 1:  # any other way the usage is set
            q.usage = units(rng.randint(0, 20))
        elif what == 2:
            q.weight = rng.choice((0.0, 0.5, 1.0, 2.0, 4.0))
        elif what == 3:
            q.min_share = units(rng.choice((0, 0, 4, 8)))
        elif what == 4:
            q.demand = units(rng.randint(0, 30))
        else:  # the update pass: demand made again, the order forgotten
            root.update_demand()
        if step % 3 == 0:  # several changes between two heartbeats, too
            assert root.kept_order(offer) == fresh(root, offer), step


def test_a_usage_change_between_heartbeats_reorders_the_walk_at_once():
    root, (qa, qb) = fair_tree(2)
    order = root.kept_order(YARN)
    assert order == [qa, qb]  # ties: in the children's order
    qa.charge(Resource.units(2), False, +1)
    assert root.kept_order(YARN) == [qb, qa]
    qb.charge(Resource.units(3), False, +1)
    assert root.kept_order(YARN) == [qa, qb]


def test_a_reload_or_a_new_child_forgets_the_kept_order():
    root, (qa, qb) = fair_tree(2)
    qa.charge(Resource.units(1), False, +1)
    assert root.kept_order(YARN) == [qb, qa]
    qc = Queue("root.q2", root, 0.0)
    root.children.append(qc)
    root.forget_order()  # what QueueTree.ensure does
    assert root.kept_order(YARN) == [qb, qc, qa]


# ----------------------------------------------------- what a leaf's apps want
def _random_app(rng, i):
    a = App(f"a{i}", "u", 0, float(i))
    hosts = {f"h{h}": 1 for h in rng.sample(range(8), rng.randint(0, 2))}
    racks = {f"/r{int(h[1:]) % 3}": 1 for h in hosts}
    a.set_requests([Request(1, Resource.units(1), 2, hosts, racks)])
    a.locality_level = rng.choice((NODE_LOCAL, NODE_LOCAL, RACK_LOCAL, OFF_SWITCH))
    a.locality_wait = rng.choice((0.0, 1.0, 2.9, 3.0, 5.0, 6.0, 9.0))
    return a


@pytest.mark.parametrize("t1, t2", [(3.0, 3.0), (3.0, 5.0), (0.0, 2.0), (0.1, 0.2), (math.inf, math.inf)])
def test_the_delay_rule_answers_the_same_from_what_a_leaf_kept_of_its_apps_while_they_waited(t1, t2):
    rng = random.Random(11)
    for trial in range(500):
        apps = [_random_app(rng, i) for i in range(rng.randint(1, 5))]
        since = rng.choice((0.0, 0.3, 7.0))
        wants = wants_of(apps, since)
        now = since
        for _ in range(rng.randint(0, 40)):  # heartbeats: each passes over some of the apps
            dt = rng.choice((0.0, 0.01, 0.1, 0.3, 1.0))
            now += dt
            for a in apps:
                if rng.random() < 0.7:
                    a.locality_wait += dt
        host = f"h{rng.randrange(10)}"
        rack = f"/r{rng.randrange(4)}"
        assert (offered_by_wait(apps, host, rack, t1, t2, wants, now)
                == offered_by_wait(apps, host, rack, t1, t2)), trial


def engine_with(nodes):
    cfg = AllocationConfig(placement_rules=default_placement_rules())
    cfg.root.children.append(QueueConfig("root.q"))
    e = Engine(cfg, ManualClock(), EngineSettings(heartbeat_interval=1000.0, preemption=False,
                                                  assign_multiple=False))
    for host, rack in nodes:
        e.add_node(host, host, rack, Resource.units(4))
    e.add_app("a", "u", queue="q", placed=True)
    e.apps["a"].has_am = True
    return e


def test_new_asks_reach_the_kept_wants_of_the_leaf():
    e = engine_with([("h1", "/r1"), ("h2", "/r2")])
    e.update_requests("a", [Request(1, Resource.units(1), 1, {"h1": 1}, {"/r1": 1})])
    assert e.heartbeat("h2") == []  # it waits for h1; the leaf keeps that it wants h1 only
    e.update_requests("a", [Request(1, Resource.units(1), 1, {"h2": 1}, {"/r2": 1})])
    got = e.heartbeat("h2")
    assert [(g.app_id, g.locality) for g in got] == [("a", "node_local")]


def test_a_launch_that_uses_up_the_preferences_lets_the_rest_run_anywhere_at_once():
    e = engine_with([("h1", "/r1"), ("h2", "/r2")])
    e.update_requests("a", [Request(1, Resource.units(1), 2, {"h1": 1}, {"/r1": 1})])
    assert e.heartbeat("h2") == []
    assert [g.locality for g in e.heartbeat("h1")] == ["node_local"]
    assert e.apps["a"].want_anywhere == 1  # the second container has no preference left
    assert [g.locality for g in e.heartbeat("h2")] == ["off_switch"]


def test_a_launch_that_moves_the_apps_level_reaches_the_kept_wants():
    from slotwise.engine import Node
    from slotwise.engine.app import TimeDelay
    from slotwise.engine.queue import Skipped, Walk

    q = Queue("root.q", None, 0.0)
    rule = TimeDelay(3.0, 3.0)
    a = App("a", "u", 0, 0.0)
    a.queue, a.delay, a.runnable, a.has_am = q, rule, True, True
    q.apps.append(a)
    a.set_requests([Request(1, Resource.units(1), 5, {"h1": 5}, {"/r1": 5})])
    a.refresh_asking(OFFERS["yarn"])
    n = Node("h2", "h2", "/r2", Resource.units(4))

    def offer():
        return q.assign(Walk(YARN, n, n.free, 0.0, rule, Skipped(), Resource.units(100), 1))

    assert offer() is None  # node-local only, and h2 is not asked for
    a.launched(OFF_SWITCH, local_ask=True, now=0.0)  # (as after an off-switch launch elsewhere)
    assert offer()[2] == OFF_SWITCH


def test_a_fork_keeps_its_own_order_and_leaves_the_live_one_untouched():
    cfg = AllocationConfig(placement_rules=default_placement_rules())
    for name in ("a", "b", "c"):
        cfg.root.children.append(QueueConfig(f"root.{name}"))
    e = Engine(cfg, ManualClock(), EngineSettings(preemption=False))
    e.add_node("n1", "h1", "/r1", Resource.units(8))
    for i, q in enumerate(("a", "b", "c")):
        e.add_app(f"app{i}", "u", queue=q, placed=True)
        e.apps[f"app{i}"].has_am = True
        e.update_requests(f"app{i}", [Request(1, Resource.units(1), 3)])
    e.heartbeat("n1")
    live = list(e.root.kept_order(YARN))
    assert not e.root.moved
    f = e.fork()
    assert not e.root.moved, "copying a queue's usage must not touch the live parent"
    assert [q.name for q in f.root.kept_order(YARN)] == [q.name for q in live]
    assert all(q is f.queues[q.name] for q in f.root.kept_order(YARN))
    assert e.root.kept_order(YARN) == live


def _full_pass_of(engine):
    """A copy of ``engine`` whose update pass reads every app again, as a
    pass with nothing kept would."""
    other = engine.fork()
    for q in other.queues.values():
        q.stale, q.split_of = True, None
    other.update()
    return other


def _shares(engine):
    qs = {n: (q.demand, q.fair_share, q.steady_fair_share) for n, q in engine.queues.items()}
    apps = {a: (x.demand, x.fair_share) for a, x in engine.apps.items()}
    return qs, apps


@pytest.mark.parametrize("share_rule", ["yarn", "design"])
def test_the_incremental_update_pass_gives_what_a_full_pass_gives(share_rule):
    """The pass reads again only the queues whose apps changed
    (``Queue.stale``) and splits again only the shares whose inputs moved
    (``Queue.split_of``); after every kind of change its demands and fair
    shares equal those of a pass that reads everything."""
    rng = random.Random(11)
    # Two running apps per user: an app waits and becomes runnable when
    # another app of its user, in another queue, ends.
    cfg = AllocationConfig(placement_rules=default_placement_rules(), user_max_apps_default=2)
    for i in range(6):
        cfg.root.children.append(QueueConfig(f"root.q{i}", weight=float(1 + i % 3),
                                             min_resources=Resource.units(4 if i % 2 else 0),
                                             max_resources=ResourceSpec(memory_pct=25.0) if i == 5 else None))
    clock = ManualClock()
    e = Engine(cfg, clock, EngineSettings(preemption=False, share_rule=share_rule))
    for n in range(8):
        e.add_node(f"n{n}", f"host{n}", f"/rack{n % 2}", Resource.units(8))
    ids = 0
    for step in range(300):
        clock.advance(0.5)
        what = rng.randrange(7)
        apps = list(e.apps)
        if what == 0 or not apps:
            ids += 1
            e.add_app(f"a{ids}", f"u{ids % 3}", queue=f"q{rng.randrange(6)}", placed=True)
            e.apps[f"a{ids}"].has_am = True
        elif what == 1:
            e.update_requests(rng.choice(apps), [Request(1, Resource.units(rng.randint(1, 2)), rng.randint(0, 6))])
        elif what == 2:
            e.heartbeat(f"n{rng.randrange(8)}")
        elif what == 3 and e.containers:
            e.container_finished(rng.choice(list(e.containers)))
        elif what == 4:
            e.move_app(rng.choice(apps), f"root.q{rng.randrange(6)}", force=True)
        elif what == 5:
            e.set_app_priority(rng.choice(apps), rng.randint(0, 3))
        elif rng.random() < 0.3:
            e.remove_app(rng.choice(apps))
        if step % 4 == 0:
            e.update()
            assert _shares(e) == _shares(_full_pass_of(e)), step
