"""Why a job runs no more than it does: each hold the engine can name, on a
manual clock, and that explaining changes nothing; through the core's door,
a running app's standing, a starved queue's wait and what preemption will
do, and a finished app's outcome."""

from __future__ import annotations

import re

import pytest

from slotwise.engine import Request
from slotwise.config.model import ResourceSpec, UserConfig
from slotwise.views.explain import explain_app
from slotwise.resources import Resource
from slotwise.settings import EngineSettings
from support import SLOT, fill, make_engine, submit


def codes(engine, app_id):
    return [h["code"] for h in explain_app(engine, app_id)["holds"]]


def test_running_app_limits_of_user_and_queue():
    e, _ = make_engine({"a": {"max_running_apps": 1}})
    submit(e, "j1", "a", user="ann")
    submit(e, "j2", "a", user="bob")
    out = explain_app(e, "j2")
    assert out["state"] == "waiting to run"
    assert out["holds"][0]["code"] == "queue_max_running_apps"
    assert out["holds"][0]["queue"] == "root.a" and out["holds"][0]["limit"] == 1
    assert "maxRunningApps 1" in out["holds"][0]["message"]

    e, _ = make_engine({"a": {}}, users={"ann": UserConfig("ann", max_running_apps=1)})
    submit(e, "j1", "a", user="ann")
    submit(e, "j2", "a", user="ann")
    assert codes(e, "j2") == ["user_max_running_apps"]
    assert explain_app(e, "j1")["state"] == "pending"


def test_nothing_asked_and_max_share_and_no_room():
    e, _ = make_engine({"capped": {"max_resources": ResourceSpec.of(Resource.units(2))}}, nodes=1, slots=4)
    submit(e, "c", "capped", tasks=5)
    fill(e)
    held = explain_app(e, "c")["holds"]
    assert [h["code"] for h in held] == ["queue_at_max_share"]
    assert held[0]["queue"] == "root.capped" and held[0]["max_share"] == {"memory_mb": 2, "vcores": 2}

    e, _ = make_engine(nodes=1, slots=2)
    submit(e, "big", "a", tasks=10)
    fill(e)
    assert codes(e, "big") == ["no_node_with_room"]
    e.update_requests("big", [])
    out = explain_app(e, "big")
    assert codes(e, "big") == ["nothing_asked"] and out["state"] == "running"


def test_room_held_for_another_starved_queue_is_no_room_but_its_own_queue_may_take_it():
    """Explain counts a node's room as the heartbeat does: room preemption
    freed and holds for a starved queue is no room for anyone else (the walk
    takes it off before offering the node), but it is room for that queue."""
    e, clock = make_engine({"a": {}, "b": {}}, nodes=1, slots=4)
    submit(e, "a1", "a", tasks=4)
    fill(e)  # a1 holds the node
    for c in [c for c in e.containers.values() if c.app_id == "a1"][:2]:  # as if taken back for b, and gone
        e.container_finished(c.container_id)
    submit(e, "a2", "a", tasks=2)
    submit(e, "b1", "b", tasks=2)
    e.nodes["n0"].held["root.b"] = (Resource.units(2), clock.now() + 10)
    mine = [h for h in explain_app(e, "a2")["holds"] if h["code"] == "no_node_with_room"]
    assert mine and mine[0]["most_free"] == {"memory_mb": 0, "vcores": 0}
    assert "no_node_with_room" not in codes(e, "b1")
    assert {a.app_id for a in fill(e)} == {"b1"}  # the heartbeat agrees: the held room goes to b alone


def test_delay_scheduling_wait_is_named_with_its_clock():
    settings = EngineSettings(node_locality_delay=5, rack_locality_delay=5)
    e, clock = make_engine(nodes=2, slots=1, racks=2, settings=settings)
    e.add_app("loc", "u", queue="a")
    e.apps["loc"].has_am = True
    e.update_requests("loc", [Request(1, SLOT, 1, hosts={"host9": 1}, racks={"/rack9": 1})])
    fill(e)  # passed over on both nodes
    clock.advance(2)
    fill(e)
    held = explain_app(e, "loc")["holds"]
    assert held[0]["code"] == "locality_wait" and held[0]["level"] == "node-local"
    assert held[0]["wait"] == 5 and 0 < held[0]["waited"] < 5 and held[0]["hosts"] == ["host9"]


def test_am_share_limit():
    e, _ = make_engine({"a": {"max_am_share": 0.25}}, nodes=1, slots=8)
    for i in range(3):
        submit(e, f"j{i}", "a", tasks=1, needs_am=True)
    e.update()
    fill(e)
    waiting = [a for a in ("j0", "j1", "j2") if not e.apps[a].containers]
    assert waiting, "the AM limit let every AM in"
    assert codes(e, waiting[0]) == ["max_am_share"]


def test_a_queue_at_its_max_share_is_not_called_an_am_limit():
    """maxAMShare 1.0 and a queue full to its max: the max share holds the AM back, not the AM limit."""
    e, _ = make_engine({"a": {"max_am_share": 1.0, "max_resources": ResourceSpec.of(Resource.units(4))}},
                       nodes=1, slots=8)
    submit(e, "first", "a", tasks=4, needs_am=True)  # its AM and 3 tasks fill the queue
    e.update()
    fill(e)
    submit(e, "second", "a", tasks=1, needs_am=True)
    e.update()
    fill(e)
    assert e.queues["root.a"].usage.memory_mb == 4 and not e.apps["second"].containers
    assert codes(e, "second") == ["queue_at_max_share"]


def test_waiting_turn_names_the_queues_share_and_explaining_changes_nothing():
    e, clock = make_engine(nodes=1, slots=2)
    submit(e, "x", "a", tasks=10)
    submit(e, "y", "b", tasks=10)
    fill(e)
    e.update()
    before = (e.describe_queues(), e.describe_apps(), {a.app_id: a.locality_wait for a in e.apps.values()})
    out = explain_app(e, "y")
    assert out["holds"] and out["holds"][-1]["code"] in {"waiting_turn", "no_node_with_room"}
    assert (e.describe_queues(), e.describe_apps(), {a.app_id: a.locality_wait for a in e.apps.values()}) == before


def test_preempted_container_says_why_it_was_chosen():
    e, clock = make_engine({"a": {}, "b": {"min_resources": Resource.units(2), "min_share_preemption_timeout": 5}},
                           nodes=1, slots=4)
    submit(e, "hog", "a", tasks=10)
    fill(e)
    submit(e, "late", "b", tasks=4)
    e.update()
    clock.advance(6)
    out = e.update()
    assert out, "nothing preempted"
    preempting = explain_app(e, "hog")["preempting"]
    assert preempting and all("root.b below its min share" in p["why"] for p in preempting)
    assert "root.a uses" in preempting[0]["why"] and "over its fair share" in preempting[0]["why"]


def test_a_jobs_name_is_its_own_not_its_queues():
    e, _ = make_engine()
    e.add_app("app_7", "ann", queue="a", name="wordcount")
    assert explain_app(e, "app_7")["name"] == "wordcount" and e.describe_apps()[0]["name"] == "wordcount"
    e.add_app("app_8", "ann", queue="a")
    assert explain_app(e, "app_8")["name"] is None


# ------------------------------------------------- through the core's door
def starved_core(preemption=True, hog='<queue name="hog"/>'):
    """On a manual clock, through PolicyCore: hog holds the one node (4
    containers); prod (min share 4096 MB, timeout 30 s) asks for one
    container at t=0, a round takes one back at t=31 and prod places it (all
    it asks for then); at t=34 it asks for 3 more. Update passes every
    second; victims finish as soon as they are asked back."""
    from slotwise.clock import ManualClock
    from slotwise.config import parse_allocations
    from slotwise.core import PolicyCore
    from wiretools import app, node, payload, req

    alloc = ('<allocations><queue name="prod"><minResources>4096 mb, 4 vcores</minResources>'
             f'<minSharePreemptionTimeout>30</minSharePreemptionTimeout></queue>{hog}</allocations>')
    clock = ManualClock(1000.0)
    core = PolicyCore(parse_allocations(alloc, "a.xml"),
                      EngineSettings(preemption=preemption, node_locality_delay=0, rack_locality_delay=0), clock)
    core.handle_heartbeat(payload(nodes=[node("n1", "h1", "/r1", 4096, 4)],
                                  apps=[app("hog", "root.hog", [req(0, 1024, 1, 4)], user="hal")], node="n1"))
    core.handle_update(payload(apps=[app("p", "root.prod", [req(0, 1024, 1, 1)], user="pat")]))
    rounds = []

    def until(end):
        while clock.now() < 1000.0 + end:
            clock.advance(1)
            if clock.now() == 1034.0:
                core.handle_update(payload(apps=[app("p", "root.prod", [req(0, 1024, 1, 0), req(1, 1024, 1, 3)],
                                                     user="pat")]))
                continue
            got = core.handle_update(payload()).preempt
            if got:
                rounds.append((clock.now() - 1000.0, sorted(p.container_id for p in got)))
                core.handle_heartbeat(payload(finished=[p.container_id for p in got], node="n1"))

    return core, clock, until, rounds


def test_a_starved_queue_says_since_when_the_timeout_and_what_the_next_round_takes():
    core, clock, until, rounds = starved_core()
    until(25)
    early = core.views.explain("p")
    assert early["state"] == "pending" and early["queue_starvation"]["for_s"] == 25
    assert early["queue_starvation"]["preemption"]["next_round_in_s"] == 5
    until(35)
    assert [r[0] for r in rounds] == [31]
    out = core.views.explain("p")
    assert out["state"] == "running"  # one container runs, three more are asked for
    s = out["queue_starvation"]
    assert (s["queue"], s["kind"], s["for_s"], s["timeout_s"]) == ("root.prod", "min_share", 35, 30)
    pre = s["preemption"]
    assert pre["enabled"] and not pre["due"] and pre["last_round_s_ago"] == 4
    # Last at its share at the t=33 pass: the next round may act after t=63.
    assert pre["next_round_in_s"] == 28
    assert [v["queue"] for v in pre["victims"]] == ["root.hog"] * 3
    assert s["message"].startswith("queue root.prod has been below its min share (4096 MB) for 35 s; "
                                   "min share preemption timeout 30 s; preemption will take 3 container(s) "
                                   "(3072 MB) from root.hog (app hog: 3) at the next round (in about 28 s)")
    # The forecast is the engine's own choice: the round takes exactly those.
    until(64)
    assert rounds[1] == (64, sorted(v["container"] for v in pre["victims"]))
    assert core.views.explain("p")["queue_starvation"] is None  # at its min share now


def test_the_core_gives_a_queues_starvation_by_name():
    core, clock, until, rounds = starved_core()
    until(35)
    s = core.views.queue_starvation("root.prod")
    assert s["for_s"] == 35 and s["message"] == core.views.explain("p")["queue_starvation"]["message"]
    assert core.views.queue_starvation("root.hog") is None and core.views.queue_starvation("root") is None
    assert core.views.queue_starvation("root.nosuch") is None


def test_a_starved_queue_without_preemption_says_so():
    core, clock, until, rounds = starved_core(preemption=False)
    until(40)
    s = core.views.explain("p")["queue_starvation"]
    assert rounds == [] and s["for_s"] == 40
    assert s["preemption"]["enabled"] is False and s["preemption"]["victims"] == []
    assert s["message"].endswith("min share preemption timeout 30 s; preemption is off")


def test_a_starved_queue_with_nothing_to_take_says_so():
    core, clock, until, rounds = starved_core(
        hog='<queue name="hog"><allowPreemptionFrom>false</allowPreemptionFrom></queue>')
    until(35)
    s = core.views.explain("p")["queue_starvation"]
    assert rounds == [] and s["for_s"] == 35
    pre = s["preemption"]
    assert pre["due"] and pre["next_round_in_s"] == 0 and pre["victims"] == []
    assert s["message"].endswith("preemption finds nothing to take for it at the next update pass: no other "
                                 "queue is over its fair share and allows preemption")


def test_a_running_app_gets_its_standing():
    core, clock, until, rounds = starved_core()
    until(35)
    hog = core.views.explain("hog")
    assert hog["state"] == "running" and hog["running_containers"] == 3
    st = hog["standing"]
    assert st["position"] == "over" and st["queue_position"] == "over"  # prod's min share is the whole node
    assert st["usage"]["memory_mb"] == 3072 and st["asks"]["containers"] == 0
    assert st["message"].startswith("it runs 3 container(s) (3072 MB, 3 vcores) against a fair share of 0 MB "
                                    "in root.hog: over it by 3072 MB")
    p = core.views.explain("p")["standing"]
    assert p["position"] == "under" and p["asks"] == {"containers": 3, "resource": {"memory_mb": 3072, "vcores": 3}}
    assert p["not_placed_because"] == ["no_node_with_room"] and "not placed: no node has room" in p["message"]
    assert hog["queue_starvation"] is None and hog["outcome"] is None


def test_explaining_a_starved_queue_changes_nothing():
    core, clock, until, rounds = starved_core()
    until(35)
    e = core._engine

    def state():
        return (e.describe_queues(), e.describe_apps(),
                [(c.container_id, c.preempt_time, c.kill_sent, c.taken_for) for c in e.containers.values()],
                [(q.name, q.last_at_min_share, q.min_starved_since, q.preempted_at) for q in e.queues.values()],
                [dict(n.held) for n in e.nodes.values()])

    before = state()
    for app_id in ("p", "hog"):
        core.views.explain(app_id)
    assert state() == before


def test_a_finished_app_tells_its_outcome_and_an_unknown_one_is_none():
    from wiretools import payload

    core, clock, until, rounds = starved_core()
    until(35)
    clock.advance(5)
    core.handle_update(payload(apps_removed=["hog"]))
    clock.advance(7)
    out = core.views.explain("hog")
    assert out["state"] == "finished" and out["holds"] == [] and out["queue"] == "root.hog"
    o = out["outcome"]
    assert (o["containers_ran"], o["containers_preempted"], o["running_at_end"]) == (4, 1, 3)
    assert o["finished_s_ago"] == 7 and o["ran_for_s"] == 40 and o["how"] == "removed"
    assert o["final_state"] is None and o["user"] == "hal"
    assert re.fullmatch(r"finished at \d\d:\d\d:\d\d \(7 s ago\) in root.hog after 40 s; it ran 4 container\(s\), "
                        r"1 of them taken back by preemption; when it left it still held 3 container\(s\); "
                        r"the ResourceManager removed it without saying how it ended", o["message"]), o["message"]
    assert core.views.explain("nosuch") is None
    # A resync that no longer lists an app: finished too, and said how.
    core.handle_update(payload(full=True, nodes=[], apps=[], launched=[]))
    assert core.views.explain("p")["outcome"]["how"] == "resync"


def test_the_finished_record_is_bounded():
    from slotwise.finished import FinishedApps

    kept = FinishedApps(limit=3)
    e, _ = make_engine()
    for i in range(5):
        submit(e, f"a{i}", "a")
        kept.record(e.apps[f"a{i}"], float(i), 0.0, "removed", e.dims)
    assert len(kept) == 3 and kept.get("a0") is None and kept.get("a1") is None and kept.get("a4")["id"] == "a4"
    kept.record(e.apps["a2"], 9.0, 0.0, "removed", e.dims)  # an id seen again: its newer record, once
    assert len(kept) == 3 and kept.get("a2")["t_finished"] == 9.0


def test_the_text_says_state_standing_starvation_and_outcome():
    from slotwise.views.explain import as_text
    from wiretools import payload

    core, clock, until, rounds = starved_core()
    until(35)
    text = as_text(core.views.explain("p"))
    lines = text.splitlines()
    assert lines[0] == "p, user pat, queue root.prod: running; 1 container(s) running, 3 more asked for"
    assert lines[1].startswith("standing: it runs 1 container(s)")
    assert lines[2].startswith("queue root.prod has been below its min share (4096 MB) for 35 s")
    assert "held back by:" in lines
    core.handle_update(payload(apps_removed=["hog"]))
    done = as_text(core.views.explain("hog")).splitlines()
    assert done[0] == "hog, user hal, queue root.hog: finished" and done[1].startswith("finished at ")
    core.handle_update(payload(apps_removed=["p"], apps_finished=[{"id": "p", "final_state": "SUCCEEDED"}]))
    done = as_text(core.views.explain("p")).splitlines()
    assert done[0] == "p, user pat, queue root.prod: finished: SUCCEEDED"
    assert re.match(r"finished SUCCEEDED at \d\d:\d\d:\d\d \(0 s ago\) in root.prod after 35 s; it ran 1 "
                    r"container\(s\)", done[1]), done[1]
    assert done[1].endswith("; the ResourceManager removed it")


def test_the_master_says_how_an_app_ended_and_a_word_on_an_app_not_removed_is_refused():
    from slotwise.protocol import ProtocolError
    from wiretools import payload

    core, clock, until, rounds = starved_core()
    until(35)
    # A final state for an app the payload does not remove: refused whole, one line naming the field.
    with pytest.raises(ProtocolError) as e:
        core.handle_update(payload(apps_removed=["hog"], apps_finished=[{"id": "p", "final_state": "KILLED"}]))
    assert "apps_finished[0]: app p is not in apps_removed" in str(e.value) and "\n" not in str(e.value)
    assert core.views.explain("hog")["state"] == "running" and core.views.explain("p")["state"] == "running"
    assert core.finished.get("hog") is None and len(core.finished) == 0
    with pytest.raises(ProtocolError) as e:
        core.handle_update(payload(apps_removed=["hog"], apps_finished=[{"id": "hog", "final_state": "KILLED"},
                                                                       {"id": "hog", "final_state": "FAILED"}]))
    assert "apps_finished[1]: app hog twice" in str(e.value)
    # Two apps leave in one payload, one with a word on how: each record as said.
    core.handle_update(payload(apps_removed=["hog", "p"], apps_finished=[{"id": "hog", "final_state": "KILLED"}]))
    assert core.views.explain("hog")["outcome"]["final_state"] == "KILLED"
    assert core.views.explain("p")["outcome"]["final_state"] is None


def test_a_jobtrackers_starved_queue_and_finished_job():
    """MRv1: the starvation is in map slots, the round's forecast is what it
    takes, and a job that has left was removed by the JobTracker."""
    from test_mrv1_core import beat, call, job, make, tracker

    core, clock = make('<allocations><pool name="prod"><minMaps>2</minMaps><minSharePreemptionTimeout>20'
                       '</minSharePreemptionTimeout></pool><pool name="research"/></allocations>')
    t = tracker(0, maps=4, reduces=1)
    call(core, "heartbeat", full=True, nodes=[t], apps=[job(1, "research", 8, reduces=1)], beats=[beat(t, 4, 1)])
    call(core, "update", apps=[job(2, "prod", 3)])
    for _ in range(10):
        clock.advance(1)
        call(core, "update")
    s = core.views.explain("job_202611230000_0002")["queue_starvation"]
    assert (s["kind"], s["for_s"], s["share"]) == ("min_share", 10, {"map_slots": 2, "reduce_slots": 0})
    assert s["preemption"]["next_round_in_s"] == 10
    forecast = sorted(v["container"] for v in s["preemption"]["victims"])
    clock.advance(11)
    taken = sorted(p["container"] for p in call(core, "update")["preempt"])
    assert taken == forecast and len(taken) == 2
    after = core.views.explain("job_202611230000_0002")["queue_starvation"]
    assert len(after["preemption"]["asked_back"]) == 2 and after["message"].endswith("that covers what it lacks")
    call(core, "update", apps_removed=["job_202611230000_0001"],
         apps_finished=[{"id": "job_202611230000_0001", "final_state": "SUCCEEDED"}])
    o = core.views.explain("job_202611230000_0001")["outcome"]
    assert o["containers_preempted"] == 2 and o["message"].endswith("the JobTracker removed it")
    assert o["final_state"] == "SUCCEEDED" and o["message"].startswith("finished SUCCEEDED at ")


def test_a_tuned_wait_names_the_target_it_was_tuned_for():
    settings = EngineSettings(node_locality_delay=5, rack_locality_delay=5)
    e, clock = make_engine({"a": {"locality_target": 0.9}}, nodes=2, slots=1, racks=2, settings=settings)
    e.add_app("loc", "u", queue="a")
    e.apps["loc"].has_am = True
    e.update_requests("loc", [Request(1, SLOT, 1, hosts={"host9": 1}, racks={"/rack9": 1})])
    e.queues["root.a"].delay._set(4.0)
    fill(e)
    clock.advance(2)
    fill(e)
    held = explain_app(e, "loc")["holds"][0]
    assert held["code"] == "locality_wait" and held["wait"] == 4.0 and held["tuned"] == "tuned for 90% data-local in root.a"
    assert held["message"].startswith("waiting for locality: 2.0 s of 4.0 s (tuned for 90% data-local in root.a)")


def test_a_tuned_wait_is_per_host_and_says_on_how_many_nodes_the_data_is():
    settings = EngineSettings(node_locality_delay=5, rack_locality_delay=5)
    e, clock = make_engine({"a": {"locality_target": 0.9}}, nodes=2, slots=1, racks=2, settings=settings)
    e.add_app("loc", "u", queue="a")
    e.apps["loc"].has_am = True
    e.update_requests("loc", [Request(1, SLOT, 1, hosts={"host8": 1, "host9": 1}, racks={"/rack9": 1})])
    e.queues["root.a"].delay._set(8.0)
    fill(e)
    clock.advance(1)
    fill(e)
    held = explain_app(e, "loc")["holds"][0]
    assert held["wait"] == 4.0  # 8 s per host, its data on two
    assert held["message"].startswith("waiting for locality: 1.0 s of 4.0 s (its data on 2 nodes; tuned for 90%")
