"""Each object of the tree tested on its own rule, directly (no engine
around it): the offers, a request, a node, an app's choice of ask, a
queue's walk, the delay rule's levels and the walk's passed-over count."""

from __future__ import annotations

import math

import pytest

from slotwise.engine import App, Node, Queue, Request
from slotwise.engine.app import ANYWHERE, NODE_LOCAL, OFF_SWITCH, RACK_LOCAL, CountDelay, TimeDelay
from slotwise.engine.node import Container
from slotwise.engine.queue import Skipped, Walk
from slotwise.policies import get_policy
from slotwise.resources import OFFERS, ZERO, ContainerOffer, Resource, SlotOffer

YARN = OFFERS["yarn"][0]
MAPS, REDUCES = OFFERS["mrv1"]


# ------------------------------------------------------------------ offers
def test_a_container_offer_needs_memory_and_vcores_and_refuses_a_container_of_no_size():
    free = Resource(1024, 1)
    assert YARN.has_room(free) and not YARN.has_room(Resource(1024, 0)) and not YARN.has_room(Resource(0, 4))
    assert YARN.fits(Resource(1024, 1), free) and not YARN.fits(Resource(1025, 1), free)
    assert not YARN.fits(Resource(0, 0), free), "a container of no size would fit forever"
    assert YARN.at_max(Resource(10, 1), Resource(10, 100)) and YARN.at_max(Resource(1, 5), Resource(100, 5))
    assert not YARN.at_max(Resource(9, 4), Resource(10, 5))


def test_a_slot_offer_is_one_kind_of_slot_and_only_maps_wait_for_locality():
    assert (MAPS.key, MAPS.local, REDUCES.key, REDUCES.local) == ("map_slots", True, "reduce_slots", False)
    free = Resource(map_slots=0, reduce_slots=2)
    assert not MAPS.has_room(free) and REDUCES.has_room(free)
    assert REDUCES.fits(Resource(reduce_slots=1), free) and not MAPS.fits(Resource(reduce_slots=1), free)
    assert MAPS.asked(Resource(map_slots=3)) and not REDUCES.asked(Resource(map_slots=3))
    assert MAPS.at_max(Resource(map_slots=4, reduce_slots=0), Resource(map_slots=4, reduce_slots=9))
    assert not REDUCES.at_max(Resource(map_slots=4, reduce_slots=0), Resource(map_slots=4, reduce_slots=9))


def test_a_slot_offer_asks_a_policy_for_its_kind_and_a_container_offer_asks_as_a_yarn_plugin_would():
    seen = []

    class Policy:
        def order(self, items, cluster, *key):
            seen.append(key)
            return items

    ContainerOffer().order(Policy(), [1], ZERO)
    SlotOffer("map_slots", True).order(Policy(), [1], ZERO)
    assert seen == [(), ("map_slots",)]


# --------------------------------------------------------------- request
def node(host="h1", rack="/r1", size=8):
    return Node(host, host, rack, Resource.units(size))


def test_a_request_is_node_local_only_where_it_also_asks_for_the_nodes_rack():
    r = Request(1, Resource.units(1), 2, hosts={"h1": 1}, racks={"/r2": 1})
    assert r.locality_on(node("h1", "/r1")) == OFF_SWITCH  # host named, rack not: YARN gives no node-local
    assert r.locality_on(node("h1", "/r2")) == NODE_LOCAL
    assert r.locality_on(node("h9", "/r2")) == RACK_LOCAL


def test_a_request_that_may_not_relax_runs_only_where_it_names():
    r = Request(1, Resource.units(1), 1, hosts={"h1": 1}, relax_locality=False)
    assert r.locality_on(node("h1")) == NODE_LOCAL and r.locality_on(node("h2")) is None


def test_a_request_counts_down_where_it_was_placed():
    r = Request(1, Resource.units(1), 2, hosts={"h1": 2}, racks={"/r1": 2})
    r.take(node("h1", "/r1"), NODE_LOCAL)
    assert (r.num_containers, r.hosts, r.racks) == (1, {"h1": 1}, {"/r1": 1})
    r.take(node("h7", "/r1"), RACK_LOCAL)
    assert (r.num_containers, r.hosts, r.racks) == (0, {"h1": 1}, {})


# ------------------------------------------------------------------- node
def test_a_node_counts_its_containers_and_what_the_driver_says_it_still_holds():
    n = node(size=8)
    c = Container("c1", "a", n.node_id, Resource.units(3), 0.0)
    n.add(c)
    assert n.free == Resource.units(5) and n.held_back(None) == ZERO
    assert n.held_back(Resource.units(4)) == Resource.units(1)  # a killed container not yet reported gone
    n.rename("c1", "real")
    assert n.containers == {"real"}
    c.container_id = "real"
    n.remove(c)
    assert n.free == Resource.units(8) and not n.containers


# -------------------------------------------------------------------- app
def leaf(name="root.q", max_share=None):
    q = Queue(name, None, 0.0)
    if max_share is not None:
        q.max_share = max_share
    return q


def app(app_id="a", queue=None, requests=(), start=0.0, rule=None):
    a = App(app_id, "u", 0, start)
    a.queue = queue or leaf()
    a.queue.apps.append(a)
    a.delay = rule or TimeDelay(3.0, 3.0)
    a.runnable = True
    a.has_am = True
    a.set_requests(list(requests))
    return a


def walk(n, free=None, offer=YARN, rule=None, now=0.0):
    return Walk(offer, n, n.free if free is None else free, now, rule or ANYWHERE, Skipped(), Resource.units(100), 1)


def test_an_app_takes_its_first_request_by_priority_that_fits():
    big = Request(1, Resource.units(6), 1)
    small = Request(2, Resource.units(1), 1)
    a = app(requests=[small, big])
    n = node(size=8)
    assert a.assign(walk(n, Resource.units(8)), OFF_SWITCH)[1] is big
    assert a.assign(walk(n, Resource.units(4)), OFF_SWITCH)[1] is small


def test_an_app_waits_for_a_better_level_only_where_its_ask_may_relax():
    a = app(requests=[Request(1, Resource.units(1), 1, hosts={"h1": 1}, racks={"/r1": 1})])
    assert a.assign(walk(node("h2", "/r1")), NODE_LOCAL) is None  # rack-local, not yet allowed
    assert a.assign(walk(node("h2", "/r1")), RACK_LOCAL)[2] == RACK_LOCAL


def test_an_app_is_refused_where_the_shim_refused_it_until_its_asks_change():
    n = node("h1", "/r1")
    a = app(requests=[Request(1, Resource.units(1), 1, hosts={"h1": 1}, racks={"/r1": 1})])
    a.refuse(n.node_id, NODE_LOCAL, 0.0)
    assert a.assign(walk(n), OFF_SWITCH)[2] == RACK_LOCAL  # the next level this node allows
    a.set_requests([Request(1, Resource.units(1), 2, hosts={"h1": 2}, racks={"/r1": 2})])
    assert a.assign(walk(n), OFF_SWITCH)[2] == NODE_LOCAL


def test_an_app_stays_within_its_queues_max_share():
    a = app(queue=leaf(max_share=Resource.units(2)), requests=[Request(1, Resource.units(3), 1)])
    assert a.assign(walk(node()), OFF_SWITCH) is None


def test_a_launch_restarts_the_wait_from_its_level_when_the_ask_named_places():
    a = app()
    a.locality_wait, a.missed_opportunities = 7.0, 4
    a.launched(RACK_LOCAL, local_ask=True, now=0.0)
    assert (a.locality_level, a.locality_wait, a.missed_opportunities) == (RACK_LOCAL, 0.0, 0)
    a.locality_wait = 2.0
    a.launched(OFF_SWITCH, local_ask=False, now=0.0)  # an ask with no preference says nothing of locality
    assert (a.locality_level, a.locality_wait) == (RACK_LOCAL, 0.0)


# ------------------------------------------------------------ delay rule
@pytest.mark.parametrize("waited, level", [(0.0, NODE_LOCAL), (2.9, NODE_LOCAL), (3.0, RACK_LOCAL),
                                           (4.9, RACK_LOCAL), (5.0, OFF_SWITCH)])
def test_the_time_rule_waits_t1_for_node_local_then_t2_more_for_rack_local(waited, level):
    a = app(rule=TimeDelay(3.0, 2.0))  # T1 != T2: a rule that swaps them fails
    a.locality_wait = waited
    assert a.allowed_level() == level


def test_the_time_rule_offers_a_node_only_to_apps_with_something_they_may_run_there():
    rule = TimeDelay(3.0, 3.0)
    near = app("near", requests=[Request(1, Resource.units(1), 1, hosts={"h1": 1}, racks={"/r1": 1})], rule=rule)
    far = app("far", requests=[Request(1, Resource.units(1), 1, hosts={"h5": 1}, racks={"/r5": 1})], rule=rule)
    free = app("free", requests=[Request(1, Resource.units(1), 1)], rule=rule)
    assert rule.offered_all([near, far, free], "h1", "/r1") == {"near": NODE_LOCAL, "free": NODE_LOCAL}
    far.locality_wait = 6.0
    assert rule.offered_all([far], "h1", "/r1") == {"far": OFF_SWITCH}


def test_the_count_rule_moves_on_after_its_threshold_of_missed_offers_and_a_withdrawn_one_does_not_count():
    nodes = {f"n{i}": None for i in range(4)}
    rule = CountDelay(0.5, 0.5, nodes)  # two missed offers of four nodes each level
    a = app(requests=[Request(1, Resource.units(1), 1, hosts={"h1": 1}, racks={"/r1": 1})], rule=rule)
    assert rule.offered(a, "h9", "/r1") is None
    rule.withdrawn(a)
    assert rule.offered(a, "h9", "/r1") is None and a.allowed_level() == NODE_LOCAL
    assert rule.offered(a, "h9", "/r1") == RACK_LOCAL


# ------------------------------------------------------------------ queue
def tree(policy="fair"):
    root = Queue("root", None, 0.0)
    root.policy = get_policy(policy)
    root.max_share = Resource(math.inf, math.inf, math.inf, math.inf)
    kids = []
    for name in ("root.a", "root.b"):
        q = Queue(name, root, 0.0)
        root.children.append(q)
        kids.append(q)
    return root, kids


def ask(a):
    a.refresh_asking(OFFERS["yarn"])


def test_a_parent_offers_the_node_to_the_child_furthest_below_its_share_first():
    root, (qa, qb) = tree()
    a = app("a", qa, [Request(1, Resource.units(1), 5)])
    b = app("b", qb, [Request(1, Resource.units(1), 5)])
    ask(a), ask(b)
    qa.usage = root.usage = Resource.units(4)
    pick = root.assign(walk(node()))
    assert pick[0] is b
    qb.usage = Resource.units(6)
    assert root.assign(walk(node()))[0] is a


def test_a_queue_at_its_max_share_or_with_nobody_asking_is_passed():
    root, (qa, qb) = tree()
    a = app("a", qa, [Request(1, Resource.units(1), 5)])
    ask(a)
    qa.max_share = Resource.units(2)
    qa.usage = Resource.units(2)
    assert root.assign(walk(node())) is None
    qa.usage = Resource.units(1)
    assert root.assign(walk(node()))[0] is a
    a.set_requests([])
    ask(a)
    assert root.assign(walk(node())) is None


def test_a_leaf_counts_the_apps_it_walked_as_passed_over_and_not_those_after_the_one_that_took_it():
    root, (qa, _qb) = tree()
    rule = TimeDelay(3.0, 3.0)
    first = app("first", qa, [Request(1, Resource.units(1), 1, hosts={"h5": 1}, racks={"/r5": 1})], 0.0, rule)
    taker = app("taker", qa, [Request(1, Resource.units(1), 1)], 1.0, rule)
    after = app("after", qa, [Request(1, Resource.units(1), 1)], 2.0, rule)
    for a in (first, taker, after):
        ask(a)
    w = walk(node("h1", "/r1"), rule=rule)
    assert qa.assign(w)[0] is taker
    assert set(w.skipped) == {"first", "taker"}  # the engine drops the taker when it commits


def test_fifo_keeps_its_order_between_heartbeats_until_the_apps_change():
    root = Queue("root.f", None, 0.0)
    root.policy = get_policy("fifo")
    old = app("old", root, [Request(1, Resource.units(1), 1)], 0.0)
    new = app("new", root, [Request(1, Resource.units(1), 1)], 5.0)
    ask(old), ask(new)
    w = walk(node())
    assert root.ordered_apps(w) == [old, new]
    new.priority = 9  # what set_app_priority changes; the engine moves the version with it
    assert root.ordered_apps(w) == [old, new]
    w.version += 1
    assert root.ordered_apps(w) == [new, old]


def test_the_apps_passed_over_are_credited_once_each_as_a_group_or_alone():
    """``Skipped`` credits a whole queue's apps as one group (``Passed``);
    whatever way an app was passed over on a heartbeat, it waits the time to
    the next one exactly once, and an app taken back (it launched, or was
    never offered the node) waits nothing."""
    from slotwise.engine.queue import Passed

    apps = [App(f"a{i}", "u", 0, 0.0) for i in range(4)]
    g = Passed(apps[:3])
    for a in apps[:3]:
        a.join(g)
    s = Skipped()
    s.add_all(g)
    s.add_all(g)  # a second walk of the same heartbeat passes the group again
    s.add(apps[1])  # and a stable-order walk passes one of them alone
    s.add(apps[3])
    assert s.pop(apps[2]) and not s.pop(apps[2])  # taken back once
    assert sorted(s) == ["a0", "a1", "a3"]
    s.credit(2.0)
    assert [a.locality_wait for a in apps] == [2.0, 2.0, 0.0, 2.0]

    s = Skipped()
    s.add_all(g)
    s.pop(apps[0])
    s.add_all(g)  # passed again after it was taken back: it waits after all
    g2 = Passed(apps[:2])  # the queue's apps made again mid-heartbeat
    for a in apps[:2]:
        if s.has(a):
            s.add(a)
        a.join(g2)
    s.credit(1.0)
    assert [a.locality_wait for a in apps] == [3.0, 3.0, 1.0, 2.0]
    apps[0].locality_wait = 0.0  # a launch resets it, whatever the group gained
    s2 = Skipped()
    s2.add_all(g2)
    s2.credit(0.5)
    assert [a.locality_wait for a in apps[:2]] == [0.5, 3.5]
    assert not Skipped() and s2
