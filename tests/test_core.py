"""PolicyCore, the one door into the engine, driven with the protocol's
messages as the shim sends them (JSON text, and typed)."""

import io
import json
import logging
import threading

import pytest

from slotwise import protocol as wire
from slotwise.bridge.server import GatewayUnavailable, read_gateway_info
from slotwise.clock import ManualClock
from slotwise.config import parse_allocations
from slotwise.core import MOVE_RETRY, PolicyCore
from slotwise.engine import RECOVERY_QUEUE
from slotwise.eventlog import EventLog
from slotwise.settings import EngineSettings
from wiretools import app, container, node, payload, req

ALLOC = """<allocations>
  <queue name="prod"><weight>3</weight></queue>
  <queue name="dev"/>
  <queuePlacementPolicy>
    <rule name="specified" create="false"/>
    <rule name="reject"/>
  </queuePlacementPolicy>
</allocations>"""

NODES = [node("n1:1", "n1", "/r1", 4096, 4), node("n2:1", "n2", "/r2", 4096, 4)]


def job(app_id, queue, n=4, host=None, priority=0, user="ann"):
    return app(app_id, queue, [req(20, 1024, 1, n, {host: n} if host else {})], user=user, priority=priority)


def make_core(alloc=ALLOC, clock=None, **settings):
    out = io.StringIO()
    settings = {"node_locality_delay": 0, "rack_locality_delay": 0, **settings}
    c = PolicyCore(parse_allocations(alloc, "t.xml"), EngineSettings(**settings), clock or ManualClock(),
                   EventLog(stream=out))
    c.out = out
    return c


@pytest.fixture
def core():
    return make_core()


def call(core, method, **msg):
    msg.setdefault("now_ms", 0)
    if "node" in msg:
        msg["beats"] = [{"node": msg.pop("node")}]
    return json.loads(getattr(core, method)(json.dumps(msg)))


def events(core, kind=None):
    out = [json.loads(line) for line in core.out.getvalue().splitlines()]
    return [e for e in out if kind is None or e["event"] == kind]


def engine(core):
    return core._engine  # tests look inside; drivers use the views


def test_full_resync_then_heartbeat_assigns_and_logs(core):
    ans = call(core, "heartbeat", full=True, nodes=NODES, apps=[job("a1", "root.prod")], node="n1:1")
    assert [(a["app"], a["node"], a["priority"], a["locality"]) for a in ans["assign"]] == \
        [("a1", "n1:1", 20, "off_switch")] * 4
    assert "preempt" not in ans and "error" not in ans  # defaults are left out
    assigns = events(core, "assign")
    assert {(e["app"], e["queue"], e["node"], e["locality"]) for e in assigns} == {("a1", "root.prod", "n1:1",
                                                                                  "off_switch")}
    assert len(assigns) == 4


def test_launched_renames_and_finished_frees(core):
    ans = call(core, "heartbeat", full=True, nodes=NODES, apps=[job("a1", "root.prod", n=1)], node="n1:1")
    [a] = ans["assign"]
    call(core, "heartbeat", launched=[container("container_1", "a1", a["node"], 1024, 1, priority=20,
                                                engine_id=a["engine_id"])],
         apps=[job("a1", "root.prod", n=0)], node="n2:1")
    e = engine(core)
    assert "container_1" in e.containers and a["engine_id"] not in e.containers
    assert e.queues["root.prod"].usage.memory_mb == 1024
    call(core, "heartbeat", finished=["container_1"], node="n2:1")
    assert e.queues["root.prod"].usage.memory_mb == 0


def test_a_refused_assignment_gives_the_ask_back_with_the_app_the_shim_resends(core):
    """The starved-job divergence: Python took the ask when it assigned; the
    shim refused; the shim now re-sends the app, so the ask is Python's again."""
    ans = call(core, "heartbeat", full=True, nodes=NODES, apps=[job("a1", "root.prod", n=1)], node="n1:1")
    engine_id = ans["assign"][0]["engine_id"]
    assert engine(core).apps["a1"].pending.memory_mb == 0  # taken by the assignment
    call(core, "update", rejected=[{"engine_id": engine_id, "reason": "no_room"}], apps=[job("a1", "root.prod", n=1)])
    app_ = engine(core).apps["a1"]
    assert (app_.usage.memory_mb, app_.pending.memory_mb) == (0, 1024)
    assert call(core, "heartbeat", node="n2:1")["assign"][0]["app"] == "a1"  # offered again


def test_a_lasting_refusal_is_not_offered_again_until_the_asks_or_the_node_change(core):
    """The shim refused a node-local container for a reason that stays true
    (say, the app blacklisted the node): counted and logged with its reason,
    and the same node is not offered at that level again on every heartbeat
    (3 million offers in one SLS run); another node is. New asks, or the
    node resized, make the offer possible again."""
    one = [job("a1", "root.prod", n=1)]
    ans = call(core, "heartbeat", full=True, nodes=NODES, apps=one, node="n1:1")
    [a] = ans["assign"]
    call(core, "heartbeat", rejected=[{"engine_id": a["engine_id"], "reason": "blacklisted"}], apps=one,
         node="n1:1")
    for _ in range(3):
        assert call(core, "heartbeat", node="n1:1").get("assign", []) == []
    [refused] = events(core, "refused")
    assert (refused["app"], refused["node"], refused["reason"], refused["locality"]) == \
        ("a1", "n1:1", "blacklisted", "off_switch")
    assert core.counters["refused"] == 1 and core.refusals == {"blacklisted": 1}
    # The app's asks change (two containers now): n1 may be offered again.
    two = [job("a1", "root.prod", n=2)]
    assert [x["node"] for x in call(core, "heartbeat", apps=two, node="n1:1")["assign"]] == ["n1:1", "n1:1"]


def test_a_lasting_refusal_ends_when_the_node_changes_and_a_passing_one_does_not_last(core):
    one = [job("a1", "root.prod", n=1)]

    def refuse(assign, reason, **more):
        return call(core, "heartbeat", rejected=[{"engine_id": assign["engine_id"], "reason": reason}], apps=one,
                    **more)

    a = call(core, "heartbeat", full=True, nodes=NODES, apps=one, node="n1:1")["assign"][0]
    assert refuse(a, "locality", node="n1:1").get("assign", []) == []
    b = call(core, "heartbeat", node="n2:1")["assign"][0]  # another node: offered
    assert b["node"] == "n2:1"
    # Refused as a race that passes (no room): offered again at once.
    c = refuse(b, "no_room", node="n2:1")["assign"][0]
    assert c["node"] == "n2:1"
    d = refuse(c, "no_room", node="n1:1")
    assert d.get("assign", []) == []  # n1's locality refusal still holds
    # n1 resized: its refusal no longer holds.
    resized = node("n1:1", "n1", "/r1", 8192, 8)
    assert call(core, "heartbeat", nodes=[resized], node="n1:1")["assign"][0]["node"] == "n1:1"
    assert core.refusals == {"locality": 1, "no_room": 2}


def test_a_refusal_with_an_unknown_reason_is_refused_whole(core):
    call(core, "heartbeat", full=True, nodes=NODES, apps=[job("a1", "root.prod", n=1)], node="n1:1")
    ans = call(core, "heartbeat", rejected=[{"engine_id": "a1#1", "reason": "tired"}], node="n2:1")
    assert "rejected[0].reason" in ans["error"]


def test_a_divergence_is_found_at_the_second_check_and_repaired_by_a_resync(core):
    ans = call(core, "heartbeat", full=True, nodes=NODES, apps=[job("a1", "root.prod", n=1)], node="n1:1")
    engine_id = ans["assign"][0]["engine_id"]
    # An old shim: the refusal alone, without the app.  Python's view: no ask, no container.
    truth = [{"app": "a1", "pending": {"memory_mb": 1024, "vcores": 1}, "allocated": {}, "containers": 0}]
    first = call(core, "update", rejected=[{"engine_id": engine_id, "reason": "no_room"}], check=truth)
    assert "resync" not in first  # one difference may be a change in flight
    second = call(core, "update", check=truth)
    assert second["resync"] is True
    [d] = events(core, "divergence")
    assert d["details"][0]["app"] == "a1" and d["details"][0]["python"]["pending"]["memory_mb"] == 0
    assert core.counters["divergences"] == 1
    # The full payload that follows repairs it.
    call(core, "update", full=True, nodes=NODES, apps=[job("a1", "root.prod", n=1)], check=truth)
    assert engine(core).apps["a1"].pending.memory_mb == 1024
    assert "resync" not in call(core, "update", check=truth)


def test_the_yarn_shims_update_sends_the_truth_on_the_line_as_a_heartbeat_with_no_beats(core):
    """The YARN shim's update: its deltas and the RM's truth as a heartbeat
    with no beats (on the line that carries every delta), then the pass with
    an empty payload (docs/shim.md). The heartbeat checks the truth as the
    update would: a divergence at the second check asks for a resync."""
    call(core, "heartbeat", full=True, nodes=NODES, apps=[job("a1", "root.prod", n=1)])
    truth = [{"app": "a1", "pending": {}, "allocated": {}, "containers": 0}]  # Python: 1 GB pending
    first = call(core, "heartbeat", check=truth)
    assert first.get("assign", []) == [] and "resync" not in first  # no beats: nothing decided
    assert call(core, "update").get("preempt", []) == []
    assert call(core, "heartbeat", check=truth)["resync"] is True
    assert "resync" not in call(core, "heartbeat")  # the verdict was that call's only
    assert core.counters["divergences"] == 1


def test_an_update_is_decoded_before_the_lock_and_a_bad_one_changes_nothing(core):
    call(core, "heartbeat", full=True, nodes=NODES, apps=[job("a1", "root.prod", n=1)])
    calls = core.counters["calls"]
    held, done, released = threading.Event(), threading.Event(), threading.Event()

    def another_call():  # holds the door's lock, as a long pass would
        with core._lock:
            held.set()
            done.wait(30)
        released.set()

    t = threading.Thread(target=another_call)
    t.start()
    try:
        assert held.wait(30)
        answer = json.loads(core.update('{"now_ms": -1}'))
        assert not released.is_set(), "refused while the lock was held elsewhere"
    finally:
        done.set()
        t.join(30)
    assert "now_ms" in answer["error"] and core.counters["calls"] == calls


def ask(priority, name, count, relax=True):
    return {"priority": priority, "name": name, "resource": {"memory_mb": 1024, "vcores": 1}, "count": count,
            "relax_locality": relax}


def asked(core, *asks):
    """An app as the YARN shim sends it (its ResourceRequests as they are); its requests as Python holds them."""
    ans = call(core, "heartbeat", full=True, nodes=NODES,
               apps=[{**app("a1", "root.prod"), "asks": list(asks)}])
    assert "error" not in ans, ans
    return engine(core).apps["a1"].requests


def test_a_strict_node_ask_carries_its_inferred_racks_as_strict(core):
    # As AMRMClient asks for host1 with relaxLocality false: the node ask
    # relaxable, its rack's ask and ANY's strict.
    (r,) = asked(core, ask(20, "host1", 1), ask(20, "/rack1", 1, False), ask(20, "*", 1, False)).values()
    assert (r.priority, r.num_containers, r.hosts, r.racks) == (20, 1, {"host1": 1}, {"/rack1": 1})
    assert r.relax_locality is False and set(r.strict_racks) == {"/rack1"}


def test_a_strict_rack_with_no_containers_left_is_still_strict_and_relaxable_ones_are_not_listed(core):
    requests = asked(core, ask(1, "/rack2", 0, False), ask(1, "/rack1", 2), ask(1, "h1", 2), ask(1, "*", 2),
                     ask(5, "*", 0))
    assert list(requests) == [1], "a priority with no containers left at ANY is no request"
    r = requests[1]
    assert set(r.strict_racks) == {"/rack2"} and r.racks == {"/rack1": 2} and r.relax_locality is True


def test_an_app_carries_asks_or_requests_not_both(core):
    both = {**app("a1", "root.prod", [req(1, 1024, 1, 1)]), "asks": [ask(1, "*", 1)]}
    ans = call(core, "heartbeat", full=True, nodes=NODES, apps=[both])
    assert "asks and requests both" in ans["error"]


def test_an_agreeing_check_and_a_one_off_difference_change_nothing(core):
    call(core, "heartbeat", full=True, nodes=NODES, apps=[job("a1", "root.prod", n=2)], node="n1:1")
    truth = [{"app": "a1", "pending": {}, "allocated": {"memory_mb": 2048, "vcores": 2}, "containers": 2}]
    for _ in range(3):
        assert "resync" not in call(core, "update", check=truth)
    odd = [{"app": "a1", "pending": {"memory_mb": 1024, "vcores": 1}, "allocated": {"memory_mb": 2048, "vcores": 2},
            "containers": 2}]
    assert "resync" not in call(core, "update", check=odd)
    assert "resync" not in call(core, "update", check=truth)
    # An app Python holds that the RM does not list is a difference too.
    assert "resync" not in call(core, "update", check=[])
    assert call(core, "update", check=[])["resync"] is True


def test_a_node_whose_killed_containers_still_hold_room_gets_no_more_than_the_rm_has(core):
    """YARN keeps a killed container's resources on its node until the
    NodeManager reports it gone (the starved-job refusal of issue 9): the
    beat says how much room the RM really has."""
    call(core, "heartbeat", full=True, nodes=NODES, apps=[job("a1", "root.prod", n=8)])
    ans = call(core, "heartbeat", beats=[{"node": "n1:1", "free": {"memory_mb": 1024, "vcores": 4}}])
    assert len(ans["assign"]) == 1  # not 4: three containers' worth is still held on the node
    ans = call(core, "heartbeat", beats=[{"node": "n2:1", "free": {"memory_mb": 4096, "vcores": 4}}])
    assert len(ans["assign"]) == 4


def test_fallback_episodes_are_logged_with_cause_and_length(core, caplog):
    caplog.set_level(logging.INFO, logger="slotwise.core")
    call(core, "heartbeat", full=True, nodes=NODES, apps=[job("a1", "root.dev", n=0)])
    call(core, "heartbeat", launched=[container("c9", "a1", "n2:1", 2048, 2, am=True)], node="n2:1",
         fallbacks=[{"reason": "heartbeat: no answer within 100 ms", "started_ms": 1000, "ended_ms": 4500,
                     "heartbeats": 3}])
    assert engine(core).apps["a1"].has_am
    assert engine(core).nodes["n2:1"].used.memory_mb == 2048
    [f] = events(core, "fallback")
    assert (f["count"], f["seconds"], f["reason"]) == (3, 3.5, "heartbeat: no answer within 100 ms")
    assert core.counters["fallback_heartbeats"] == 3
    # An episode in which the master scheduled no heartbeat by its FIFO is
    # said at INFO; one that did, as a warning.
    call(core, "heartbeat", node="n1:1", fallbacks=[{"reason": "update: no answer within 100 ms", "started_ms": 5000,
                                                     "ended_ms": 5100, "heartbeats": 0}])
    said = [(r.levelname, r.getMessage()) for r in caplog.records if "FIFO" in r.getMessage()]
    assert said == [("WARNING", "the ResourceManager scheduled 3 heartbeat(s) by its FIFO over 3.5 s without Python "
                                "(heartbeat: no answer within 100 ms)"),
                    ("INFO", "a call from the ResourceManager to Python failed (update: no answer within 100 ms); "
                             "Python answered again 0.1 s later, and no heartbeat went to its FIFO")]


def test_a_fallback_episode_sent_again_is_counted_once(core):
    """The shim sends an episode again when the call that carried it timed
    out after Python had read it: one episode, one record, one count."""
    call(core, "heartbeat", full=True, nodes=NODES, apps=[job("a1", "root.dev", n=0)])
    ep = {"reason": "update: no answer within 1000 ms", "started_ms": 7000, "ended_ms": 9000, "heartbeats": 4}
    call(core, "heartbeat", node="n1:1", fallbacks=[ep])
    call(core, "heartbeat", node="n1:1", fallbacks=[ep])
    call(core, "heartbeat", node="n1:1", fallbacks=[{**ep, "started_ms": 9500, "ended_ms": 9600}])
    assert [f["started"] for f in events(core, "fallback")] == [7.0, 9.5]
    assert core.counters["fallback_episodes"] == 2 and core.counters["fallback_heartbeats"] == 8


def test_place_and_reject(core):
    place = lambda q: json.loads(core.place(json.dumps({"app": "x", "user": "ann", "queue": q, "priority": 0})))
    assert place("prod") == {"queue": "root.prod"}
    assert "reject" in place("nope")
    assert "bad request" in json.loads(core.place('{"app": "x"}'))["reject"]


def test_move_follows_engine_rules(core):
    call(core, "heartbeat", full=True, nodes=NODES, apps=[job("a1", "root.prod")])
    move = lambda a, q: json.loads(core.move(json.dumps({"app": a, "queue": q})))
    assert move("a1", "root.dev") == {"queue": "root.dev"}
    assert core.views.app_queue("a1") == "root.dev"
    assert "error" in move("missing", "root.dev")
    assert "error" in move("a1", "root")
    # As YARN: no move to a queue that does not exist when no create rule may make it.
    assert move("a1", "root.nosuch") == {"error": "no queue root.nosuch: moves go to an existing leaf queue (or a "
                                                  "new one only where the placement policy's specified rule may "
                                                  "create it)"}
    assert core.views.app_queue("a1") == "root.dev" and "root.nosuch" not in core.views.leaf_queues()
    assert core.actions.target_problem("root.prod") is None


def test_a_move_to_a_declared_parent_queue_is_refused_even_without_children():
    core = make_core(ALLOC.replace('<queue name="dev"/>', '<queue name="dev"/><queue name="team" type="parent"/>')
                     .replace('create="false"', 'create="true"'))
    call(core, "heartbeat", full=True, nodes=NODES, apps=[job("a1", "root.prod")])
    move = lambda a, q: json.loads(core.move(json.dumps({"app": a, "queue": q})))
    assert move("a1", "root.team") == {"error": "root.team is a parent queue; apps go in leaf queues"}
    assert move("a1", "root.team.ann") == {"queue": "root.team.ann"}  # specified may create it
    assert move("a1", "root.fresh") == {"queue": "root.fresh"}


def test_update_returns_shares_and_requests_follow_the_shim(core):
    call(core, "heartbeat", full=True, nodes=NODES, apps=[job("p", "root.prod", n=8), job("d", "root.dev", n=8)])
    ans = call(core, "update")
    table = {q["name"]: q for q in ans["queues"]}
    # YARN's rule (a YARN-format file): the fair policy shares memory only, as YARN reports it.
    assert table["root.prod"]["fair"] == {"memory_mb": 6144, "vcores": 0}
    assert table["root.dev"]["fair"] == {"memory_mb": 2048, "vcores": 0}
    assert "max" not in table["root"]  # unlimited
    assert table["root.prod"]["policy"] == "fair"  # the shim shows it on YARN's /ws/v1/cluster/scheduler
    # maxAMShare (0.5 by default) x its fair share: YARN's amMaxResources; and allowPreemptionFrom.
    assert table["root.prod"]["am_max"] == {"memory_mb": 3072, "vcores": 0}
    assert "preemptable" not in table["root.prod"] and "am_max" not in table["root"]  # defaults: left out
    wire.convert("UpdateAnswer", ans)  # the answer matches the schema
    # The shim's view replaces Python's: the app now asks for nothing.
    call(core, "update", apps=[app("p", "root.prod")])
    assert engine(core).apps["p"].pending.memory_mb == 0


def test_node_local_request_waits_for_its_node():
    c = make_core(node_locality_delay=None, rack_locality_delay=None)
    ans = call(c, "heartbeat", full=True, nodes=NODES, apps=[job("a", "root.prod", 1, "n2")], node="n1:1")
    assert ans.get("assign", []) == []
    ans = call(c, "heartbeat", node="n2:1")
    assert ans["assign"][0]["locality"] == "node_local"


def test_an_unmanaged_app_has_no_am_container(core):
    managed, unmanaged = job("a1", "root.prod", n=2), {**job("a2", "root.dev", n=2), "unmanaged": True}
    out = call(core, "heartbeat", nodes=NODES, apps=[managed, unmanaged], node="n1:1")
    assert len(out["assign"]) == 4
    first = {}
    for e in events(core, "assign"):
        first.setdefault(e["app"], e["am"])
    assert first == {"a1": True, "a2": False}
    assert engine(core)._without_am == 0


# ------------------------------------------------------------ bad messages
def snapshot(core):
    e = engine(core)
    return (sorted((n.node_id, n.capacity.memory_mb, n.used.memory_mb) for n in e.nodes.values()),
            sorted((a.app_id, a.queue.name, a.priority, a.pending.memory_mb, a.usage.memory_mb, len(a.containers))
                   for a in e.apps.values()),
            sorted(e.containers), sorted(e.queues), e._seq)


@pytest.mark.parametrize("bad", [
    '{"now_ms": 1, "nodes": [{"id": "n3:1", "host": "n3", "rack": "/r", "capacity": {"memory_mb": -5}}]}',
    '{"now_ms": 1, "apps": [{"id": "a9", "user": "u", "queue": "root.dev", "priority": 0, "submit_ms": 0}],'
    ' "nodes_removed": [7]}',
    '{"now_ms": 1, "apps": [{"id": "a9", "user": "u", "queue": "root.dev", "priority": 0, "submit_ms": 0,'
    ' "requests": [{"priority": 1, "resource": {}, "count": 1}, {"priority": 1, "resource": {}, "count": 2}]}]}',
    '{"now_ms": 1, "nodes": [{"id": "n3:1", "host": "n3", "rack": "/r", "capacity": {}}],'
    ' "launched": [{"id": "c1", "app": "nobody", "node": "n3:1", "resource": {}, "priority": 0}]}',
    '{"now_ms": 1, "finished": ["x"], "beats": [{"node": "n1:1"}], "unknown_field": 1}',
    '{"now_ms": 1, "apps_removed": ["a1"], "launched": [{"id": "c1", "app": "a1", "node": "n9:1",'
    ' "resource": {}, "priority": 0}]}',
    'not json',
])
def test_a_bad_message_changes_nothing_and_gets_a_clear_error(core, bad):
    call(core, "heartbeat", full=True, nodes=NODES, apps=[job("a1", "root.prod", n=6)], node="n1:1")
    before = snapshot(core)
    ans = json.loads(core.heartbeat(bad))
    assert ans["error"].startswith("Payload: ") and "\n" not in ans["error"]
    assert "assign" not in ans
    assert snapshot(core) == before
    ans = json.loads(core.update(bad))
    assert ans["error"].startswith("Payload: ")
    assert snapshot(core) == before
    assert call(core, "heartbeat", node="n2:1")["assign"]  # and the next good call works


# ------------------------------------------------------------ resync
def test_a_full_resync_keeps_timers_locality_waits_and_the_container_sequence():
    clock = ManualClock()
    alloc = """<allocations>
      <queue name="prod"><minResources>4096 mb, 4 vcores</minResources><minSharePreemptionTimeout>30</minSharePreemptionTimeout></queue>
      <queue name="dev"/>
    </allocations>"""
    c = make_core(alloc, clock, heartbeat_interval=1.0, node_locality_delay=None, rack_locality_delay=None)
    nodes = NODES
    apps = [job("d", "root.dev", n=8), job("p", "root.prod", n=1, host="elsewhere")]
    ans = call(c, "heartbeat", full=True, nodes=nodes, apps=apps[:1], node="n1:1")
    launched = [container(f"c{i}", "d", a["node"], 1024, 1, priority=20, engine_id=a["engine_id"])
                for i, a in enumerate(ans["assign"])]
    call(c, "update", launched=launched, apps=[job("d", "root.dev", n=0)])
    clock.advance(5)
    call(c, "heartbeat", apps=apps[1:], node="n2:1")  # p waits for its host
    clock.advance(1)
    assert call(c, "heartbeat", node="n2:1").get("assign") is None
    call(c, "update")
    e = engine(c)
    prod, p = e.queues["root.prod"], e.apps["p"]
    starved_since, wait, seq = prod.last_at_min_share, p.locality_wait, e._seq
    assert wait > 0
    clock.advance(10)
    # The shim lost a call: the whole state again.
    call(c, "update", full=True, nodes=nodes, apps=[job("d", "root.dev", n=0), apps[1]], launched=launched)
    assert e is engine(c)  # reconciled, not rebuilt
    assert prod.last_at_min_share == starved_since and e.apps["p"].locality_wait == wait
    assert e._seq == seq and sorted(e.containers) == [f"c{i}" for i in range(4)]
    clock.advance(25)
    c.handle_update(payload(0))
    row = next(r for r in c.views.queues() if r["queue"] == "root.prod")
    assert row["min_share_starved_for"] >= 35  # counted from before the resync (prod waits since t=5)


def test_a_full_resync_drops_what_the_rm_no_longer_has(core):
    call(core, "heartbeat", full=True, nodes=NODES, apps=[job("a1", "root.prod", n=2), job("a2", "root.dev")],
         node="n1:1")
    call(core, "update", full=True, nodes=NODES[1:], apps=[job("a2", "root.dev")],
         launched=[container("c1", "a2", "n2:1", 1024, 1)])
    e = engine(core)
    assert sorted(e.nodes) == ["n2:1"] and sorted(e.apps) == ["a2"] and sorted(e.containers) == ["c1"]
    assert e.queues["root.prod"].usage.memory_mb == 0 and e.queues["root.dev"].usage.memory_mb == 1024
    assert [r["event"] for r in events(core, "resync")] == ["resync", "resync"]


# ------------------------------------------------------------ queues Python cannot hold
RECOVERING = """<allocations>
  <queue name="eng" type="parent"><queue name="web"/></queue>
  <queue name="adhoc"/>
  <queuePlacementPolicy>
    <rule name="specified" create="false"/>
    <rule name="user" create="false"/>
    <rule name="default" queue="adhoc"/>
  </queuePlacementPolicy>
</allocations>"""


@pytest.mark.parametrize("queue", ["root", "root.eng"])
def test_an_app_the_rm_put_where_no_job_can_be_is_placed_and_moved(queue):
    c = make_core(RECOVERING)
    ans = call(c, "heartbeat", full=True, nodes=NODES, apps=[job("x", queue, n=1)], node="n1:1")
    assert c.views.app_queue("x") == "root.adhoc" and ans["assign"][0]["app"] == "x"  # scheduled at once
    [r] = events(c, "recover")
    assert (r["asked"], r["queue"]) == (queue, "root.adhoc")
    up = call(c, "update")
    assert up["move"] == [{"app": "x", "queue": "root.adhoc", "reason": r["reason"] + "; placed in root.adhoc"}]
    assert "move" not in call(c, "update")  # not again before the retry time
    # The RM's own move path asks Python, which agrees.
    assert json.loads(c.move(json.dumps({"app": "x", "queue": "root.adhoc"}))) == {"queue": "root.adhoc"}
    call(c, "update", apps=[job("x", "root.adhoc", n=0)])
    assert events(c, "recovered") and not any(j["moving_to"] for j in c.views.apps())


def test_an_app_no_rule_places_goes_to_the_recovery_queue_and_orders_repeat():
    clock = ManualClock()
    c = make_core(ALLOC, clock)  # specified, then reject
    call(c, "heartbeat", full=True, nodes=NODES, apps=[job("x", "root")], node="n1:1")
    assert c.views.app_queue("x") == RECOVERY_QUEUE
    assert any(p["queue"] == RECOVERY_QUEUE and p["recovery"] for p in c.views.queues())
    assert RECOVERY_QUEUE not in c.views.leaf_queues()
    first = call(c, "update")
    assert first["move"][0]["queue"] == RECOVERY_QUEUE
    clock.advance(MOVE_RETRY)
    assert call(c, "update")["move"][0]["queue"] == RECOVERY_QUEUE  # the RM has not moved it yet: ask again
    table = {q["name"]: q for q in first["queues"]}  # later answers carry only the rows that changed
    assert table[RECOVERY_QUEUE]["recovery"] is True


def test_a_leaf_holding_jobs_never_becomes_a_parent(core):
    alloc = "<allocations><queue name='a'/></allocations>"
    c = make_core(alloc)
    call(c, "heartbeat", full=True, nodes=NODES, apps=[job("one", "root.a")])
    # The RM reports an app in root.a.b (say, from before a restart with another file).
    call(c, "heartbeat", apps=[job("two", "root.a.b")])
    e = engine(c)
    assert e.queues["root.a"].is_leaf and "root.a.b" not in e.queues
    assert c.views.app_queue("two") != "root.a.b" and c.views.app_queue("one") == "root.a"
    [r] = events(c, "recover")
    assert "root.a holds apps" in r["reason"]


def test_gateway_files_must_be_private(tmp_path):
    info = tmp_path / "gateway.json"
    token = tmp_path / "gateway.token"
    info.write_text('{"port": 1234, "pid": 1}')
    token.write_text("abc\n")
    token.chmod(0o644)
    with pytest.raises(GatewayUnavailable, match="0600"):
        read_gateway_info(str(info), str(token))
    token.chmod(0o600)
    assert read_gateway_info(str(info), str(token)).token == "abc"
    assert read_gateway_info(str(info), str(token)).port == 1234


def test_a_bug_while_applying_answers_an_error_so_the_shim_resyncs(core, monkeypatch):
    call(core, "heartbeat", full=True, nodes=NODES, apps=[job("a1", "root.prod", n=1)])
    monkeypatch.setattr(type(core._engine), "remove_app", lambda self, app_id: 1 / 0)
    ans = call(core, "heartbeat", apps_removed=["a1"], node="n1:1")
    assert ans["error"].startswith("heartbeat: internal error") and core.counters["internal_errors"] == 1
    monkeypatch.undo()
    call(core, "update", full=True, nodes=NODES)  # the full state the shim sends next repairs it
    assert sorted(engine(core).apps) == []


def test_containers_of_an_app_the_rm_took_and_dropped_while_python_was_away_end_with_it(core):
    """Found by the property test: the RM admitted app0, the FIFO gave it a
    container and the app ended, all between two calls; one payload then
    carries the container and the app's removal, and Python never saw it."""
    call(core, "heartbeat", full=True, nodes=NODES)
    answer = call(core, "heartbeat", launched=[container("c1", "app0", "n1:1", 1024, 1, am=True)],
                  finished=["c1"], apps_removed=["app0"], node="n1:1")
    assert "error" not in answer
    assert "app0" not in engine(core).apps and "c1" not in engine(core).containers
    assert engine(core).nodes["n1:1"].used.memory_mb == 0
    # An unknown app's container with no removal is still refused, whole.
    bad = call(core, "heartbeat", launched=[container("c2", "ghost", "n1:1", 1024, 1)], node="n1:1")
    assert "unknown app ghost" in bad["error"]


def test_one_call_with_several_beats_decides_as_the_same_beats_one_call_each():
    """Async scheduling batches nodes: the decisions must be the policy's own,
    the same as the same beats sent one after another with nothing between."""
    nodes = [node(f"n{i}:1", f"n{i}", f"/r{i % 2}", 4096, 4) for i in range(6)]
    apps = [job("a1", "root.prod", n=9), job("a2", "root.dev", n=9), job("a3", "root.dev", n=2, host="n3")]

    def decisions(answers):
        return [(a["app"], a["node"], a["priority"], a["locality"]) for ans in answers for a in ans.get("assign", [])]

    one_by_one = make_core()
    call(one_by_one, "heartbeat", full=True, nodes=nodes, apps=apps)
    singles = [call(one_by_one, "heartbeat", node=n["id"]) for n in nodes]
    batched = make_core()
    call(batched, "heartbeat", full=True, nodes=nodes, apps=apps)
    together = call(batched, "heartbeat", beats=[{"node": n["id"]} for n in nodes])
    assert decisions([together]) == decisions(singles)
    # All 20 asks placed over five nodes (4 each), and both queues got some.
    assert len(together["assign"]) == 20 and len({a["node"] for a in together["assign"]}) == 5
    assert {"a1", "a2"} <= {a["app"] for a in together["assign"]}


def test_node_local_needs_the_nodes_rack_asked_for_as_yarn_does():
    """SLS's AMs (and any AM whose topology differs from the RM's) name the
    host but another rack: YARN allows no node-local container then, and the
    shim refuses one; Python must place it off-switch instead of offering
    the same refused node-local container on every heartbeat."""
    c = make_core()
    mismatched = app("a1", "root.prod", [req(20, 1024, 1, 2, {"n1": 2}, {"/elsewhere": 2})])
    ans = call(c, "heartbeat", full=True, nodes=NODES, apps=[mismatched], node="n1:1")
    assert [a["locality"] for a in ans["assign"]] == ["off_switch", "off_switch"]
    matched = app("a2", "root.dev", [req(20, 1024, 1, 1, {"n2": 1}, {"/r2": 1})])
    ans = call(c, "heartbeat", apps=[matched], node="n2:1")
    assert [(a["app"], a["locality"]) for a in ans["assign"]] == [("a2", "node_local")]


def test_a_refused_level_falls_through_to_the_next_one_the_node_allows_and_refusals_expire():
    """A node-local offer the shim refused (here: the app names its host,
    no rack) does not keep the app off the node: off-switch is offered
    there next. And a lasting refusal is forgotten after REFUSAL_HOLD, for
    causes the shim never reports (a blacklist lifted)."""
    from slotwise.engine import REFUSAL_HOLD

    clock = ManualClock()
    core = make_core(clock=clock)
    one = [app("a1", "root.prod", [req(20, 1024, 1, 1, {"n1": 1})])]
    a = call(core, "heartbeat", full=True, nodes=NODES, apps=one, node="n1:1")["assign"][0]
    assert a["locality"] == "node_local"
    b = call(core, "heartbeat", rejected=[{"engine_id": a["engine_id"], "reason": "locality"}], apps=one,
             node="n1:1")["assign"][0]
    assert (b["node"], b["locality"]) == ("n1:1", "off_switch")
    c = call(core, "heartbeat", rejected=[{"engine_id": b["engine_id"], "reason": "blacklisted"}], apps=one,
             node="n1:1")
    assert c.get("assign", []) == []  # both levels refused on n1
    clock.advance(REFUSAL_HOLD)
    assert call(core, "heartbeat", node="n1:1")["assign"][0]["node"] == "n1:1"
