"""Why a job runs no more than it does: each hold the engine can name, on a
manual clock, and that explaining changes nothing."""

from __future__ import annotations

from slotwise.engine import Request
from slotwise.config.model import ResourceSpec, UserConfig
from slotwise.explain import explain_app
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
