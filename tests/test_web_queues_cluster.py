"""What the queues table says about shares ("below" only for queues that are
below), the cluster line, and jobs' names: the service, the API and the rows
the UI renders."""

from __future__ import annotations

import httpx
import pytest

from slotwise.admin import SchedulerService
from slotwise.clock import ManualClock
from slotwise.config import parse_allocations
from slotwise.config.watcher import ConfigStatus
from slotwise.core import PolicyCore
from slotwise.settings import EngineSettings
from slotwise.web import views
from webtools import app_entry, web  # noqa: F401 (the fixture)
from wiretools import node, payload

QUEUES = """<?xml version="1.0"?>
<allocations>
  <queue name="prod"><weight>2</weight><minResources>2048 mb, 2 vcores</minResources></queue>
  <queue name="research"/>
  <queue name="other"/>
  <queue name="team"><minResources>1024 mb, 1 vcores</minResources><queue name="a"/></queue>
</allocations>
"""


def service_after_ten_seconds(preemption: bool) -> SchedulerService:
    """research's job fills the one node; then prod's job (min share 2048 MB)
    arrives and waits 10 s.  Timeouts are infinite: nothing is preempted."""
    clock = ManualClock(100.0)
    core = PolicyCore(parse_allocations(QUEUES, "pools.xml"),
                      EngineSettings(preemption=preemption, node_locality_delay=0, rack_locality_delay=0), clock)
    core.handle_heartbeat(payload(nodes=[node("n1", "h1", "/r1", 4096, 4)],
                                  apps=[app_entry("r1", "ann", "root.research", 4)], node="n1"))
    core.handle_update(payload())
    core.handle_heartbeat(payload(apps=[app_entry("p1", "bob", "root.prod", 2),
                                        app_entry("t1", "tom", "root.team.a", 1)], node="n1"))
    clock.advance(10.0)
    core.handle_update(payload())
    return SchedulerService(core, ConfigStatus("pools.xml"))


@pytest.mark.parametrize("preemption", [True, False])
def test_below_is_only_for_queues_below_their_share_now(preemption):
    service = service_after_ten_seconds(preemption)
    queues = {p["queue"]: p for p in service.queues()}
    prod, research, other, team, a = (queues[f"root.{n}"] for n in ("prod", "research", "other", "team", "team.a"))
    assert prod["usage"]["memory_mb"] == 0 and research["usage"]["memory_mb"] == 4096
    # prod: no usage, demand 2048 MB = its min share; below both, for 10 s (timed with preemption on).
    assert prod["below_min_share"] is True and prod["below_fair_share"] is True
    expected = 10.0 if preemption else None  # the engine times starvation only when it may preempt
    assert prod["min_share_starved_for"] == expected and prod["fair_share_starved_for"] == expected
    # research holds the cluster, other asks for nothing: fine, whatever the time since anything.
    for fine in (research, other):
        assert fine["below_min_share"] is False and fine["below_fair_share"] is False
        assert fine["min_share_starved_for"] == 0.0 and fine["fair_share_starved_for"] == 0.0
    # A parent below its min share: below, never timed (the engine times leaf queues).
    assert team["below_min_share"] is True and team["min_share_starved_for"] is None
    assert a["below_fair_share"] is True
    # What the UI's "Below min share" / "Below fair share" columns show.
    rows = {r["name"]: r for r in views.queue_rows(service.queues())}
    shown = "10.0\u00a0s" if preemption else "yes"
    assert (rows["root.prod"]["min_starved"], rows["root.prod"]["fair_starved"]) == (shown, shown)
    for fine in ("root.research", "root.other"):
        assert (rows[fine]["min_starved"], rows[fine]["fair_starved"]) == ("-", "-")
    assert rows["root.team"]["min_starved"] == "yes"


def test_at_the_share_exactly_is_not_below():
    """research ends two containers: prod gets one (1024 MB, exactly 0.5 x its
    fair share of 2048 MB, under its min share of 2048 MB), team.a one (its
    parent's min share of 1024 MB, exactly)."""
    service = service_after_ten_seconds(preemption=True)
    given = service.core.handle_heartbeat(payload(node="n1", finished=["r1#1", "r1#2"]))
    assert sorted(a.queue for a in given) == ["root.prod", "root.team.a"]
    queues = {p["queue"]: p for p in service.queues()}
    prod, team = queues["root.prod"], queues["root.team"]
    assert (prod["usage"]["memory_mb"], prod["fair_share"]["memory_mb"]) == (1024, 2048)
    assert prod["below_min_share"] is True and prod["below_fair_share"] is False
    assert prod["fair_share_starved_for"] == 0.0
    assert team["usage"]["memory_mb"] == 1024 and team["below_min_share"] is False
    assert team["min_share_starved_for"] == 0.0


def test_api_queues_carry_below_flags(web):
    queues = {p["queue"]: p for p in httpx.get(f"{web.url}/api/v1/queues").json()}
    # The fixture: research holds 1024 MB of a 2731 MB fair share (threshold 0.5): below it, untimed
    # (preemption is off); prod holds 3072 MB, over its min share of 2048 MB and half its fair share.
    assert queues["root.research"]["below_fair_share"] is True
    assert queues["root.research"]["fair_share_starved_for"] is None
    assert queues["root.prod"]["below_min_share"] is False and queues["root.prod"]["below_fair_share"] is False
    assert queues["root.prod"]["min_share_starved_for"] == 0.0 and queues["root.prod"]["fair_share_starved_for"] == 0.0
    assert queues["root.other"]["below_fair_share"] is False  # asks for nothing


def test_api_cluster_gives_capacity_nodes_and_usage(web):
    r = httpx.get(f"{web.url}/api/v1/cluster")
    assert r.status_code == 200
    assert r.json() == {"capacity": {"memory_mb": 8192, "vcores": 8}, "nodes": 2,
                        "usage": {"memory_mb": 4096, "vcores": 4}, "share_rule": "yarn"}
    web.heartbeat("n2")  # fills the second node
    assert httpx.get(f"{web.url}/api/v1/cluster").json()["usage"] == {"memory_mb": 8192, "vcores": 8}
    doc = httpx.get(f"{web.url}/openapi.json").json()
    assert "/api/v1/cluster" in doc["paths"]
    ref = doc["paths"]["/api/v1/cluster"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert ref["$ref"].endswith("/ClusterOut")
    assert set(doc["components"]["schemas"]["ClusterOut"]["properties"]) == {"capacity", "nodes", "usage",
                                                                          "share_rule"}


def test_api_jobs_carry_the_application_name(web):
    web.core._engine.apps["app_1"].app_name = "word count"  # what the shim's name field sets
    jobs = {j["id"]: j for j in httpx.get(f"{web.url}/api/v1/apps").json()}
    assert jobs["app_1"]["name"] == "word count" and jobs["app_2"]["name"] is None
    rows = {r["id"]: r for r in views.app_rows(web.core.views.apps())}
    assert (rows["app_1"]["name"], rows["app_1"]["named"]) == ("word count", True)
    assert (rows["app_2"]["name"], rows["app_2"]["named"]) == ("app_2", False)  # falls back to the id


def test_the_locality_cell_says_target_fraction_reached_and_waits():
    row = {"locality_target": 0.9, "data_local": 0.84, "locality_waits": {"node": 1.25, "rack": 1.25},
           "locality_tuned": True}
    cell = views.locality(row)
    assert cell == {"target": "90%", "achieved": "84%", "met": False, "waits": "1.2\u00a0s + 1.2\u00a0s",
                    "tuned": True}
    assert views.locality({**row, "data_local": 0.95})["met"] is True
    fixed = views.locality({"locality_target": None, "data_local": None, "locality_waits": {"node": 3.0, "rack": 3.0}})
    assert fixed["target"] == "-" and fixed["achieved"] == "-" and fixed["met"] is None and not fixed["tuned"]
    assert views.locality({"locality_target": None, "data_local": None, "locality_waits": None}) is None
