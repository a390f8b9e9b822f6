"""The REST API and metrics over real HTTP on loopback."""

from __future__ import annotations

import time

import httpx
import pytest

from slotwise.web import legacy
from webtools import TOKEN, start


@pytest.fixture
def web(tmp_path):
    running = start(tmp_path, watch=True)
    yield running
    running.stop()


AUTH = {"Authorization": f"Bearer {TOKEN}"}


def test_reads_queues_jobs_and_config(web):
    queues = {p["queue"]: p for p in httpx.get(f"{web.url}/api/v1/queues").json()}
    assert set(queues) >= {"root", "root.prod", "root.research", "root.other"}
    assert queues["root.prod"]["weight"] == 2.0
    assert queues["root.prod"]["min_share"] == {"memory_mb": 2048.0, "vcores": 2.0}
    assert queues["root"]["max_share"] == {"memory_mb": None, "vcores": None}  # unlimited
    assert queues["root"]["fair_share"]["memory_mb"] == 8192
    jobs = {j["id"]: j for j in httpx.get(f"{web.url}/api/v1/apps").json()}
    assert set(jobs) == {"app_1", "app_2", "app_3"}
    assert jobs["app_1"]["queue"] == "root.research" and jobs["app_1"]["user"] == "alice"
    assert sum(j["running_containers"] for j in jobs.values()) == 4  # n1 is full
    cfg = httpx.get(f"{web.url}/api/v1/config").json()
    assert cfg["path"] == web.path and "<queue name=\"prod\">" in cfg["content"]
    assert cfg["errors"] == [] and cfg["loaded_at"] > 0 and cfg["resource_manager_connected"] is False
    assert cfg["share_rule"] == "yarn"  # a YARN-format file, no --share-rule


def test_mutations_without_the_token_are_refused_and_change_nothing(web):
    before = httpx.get(f"{web.url}/api/v1/apps").json()
    for headers in ({}, {"Authorization": "Bearer wrong-token-wrong-token"}, {"Authorization": TOKEN},
                    {"X-Slotwise-CSRF": "1"}):
        r = httpx.post(f"{web.url}/api/v1/apps/app_1/queue", json={"queue": "other"}, headers=headers)
        assert r.status_code == 401, (headers, r.text)
        assert r.headers["www-authenticate"] == "Bearer"
        r = httpx.post(f"{web.url}/api/v1/apps/app_1/priority", json={"priority": 5}, headers=headers)
        assert r.status_code == 401
    # A session cookie alone (a cross-site form could send it) is not enough either.
    r = httpx.post(f"{web.url}/api/v1/apps/app_1/queue", json={"queue": "other"},
                   cookies={"slotwise_session": "forged"}, headers={"X-Slotwise-CSRF": "1"})
    assert r.status_code == 401
    assert httpx.get(f"{web.url}/api/v1/apps").json() == before


def test_move_with_the_token_changes_the_next_decisions(web):
    r = httpx.post(f"{web.url}/api/v1/apps/app_1/queue", json={"queue": "other"}, headers=AUTH)
    assert r.status_code == 200 and r.json() == {"id": "app_1", "queue": "root.other"}
    jobs = {j["id"]: j for j in httpx.get(f"{web.url}/api/v1/apps").json()}
    assert jobs["app_1"]["queue"] == "root.other"
    assigned = web.heartbeat("n2")
    assert {a.queue for a in assigned if a.app_id == "app_1"} == {"root.other"}
    assert any(a.app_id == "app_1" for a in assigned)
    assert httpx.post(f"{web.url}/api/v1/apps/nope/queue", json={"queue": "other"}, headers=AUTH).status_code == 404
    bad = httpx.post(f"{web.url}/api/v1/apps/app_1/queue", json={"queue": "root"}, headers=AUTH)
    assert bad.status_code == 422 and "parent" in bad.json()["detail"]
    assert httpx.post(f"{web.url}/api/v1/apps/app_1/queue", json={}, headers=AUTH).status_code == 422


def test_priority_with_the_token_reorders_a_queue(web):
    # app_1 and app_3 share root.research; app_3 is younger.  Raise it.
    r = httpx.post(f"{web.url}/api/v1/apps/app_3/priority", json={"priority": 4}, headers=AUTH)
    assert r.status_code == 200 and r.json() == {"id": "app_3", "priority": 4}
    jobs = {j["id"]: j for j in httpx.get(f"{web.url}/api/v1/apps").json()}
    assert jobs["app_3"]["priority"] == 4 and jobs["app_3"]["weight"] == 16.0
    for bad in ("high", "3", 3.0, True, -1, 65, None):
        r = httpx.post(f"{web.url}/api/v1/apps/app_3/priority", json={"priority": bad}, headers=AUTH)
        assert r.status_code == 422, (bad, r.text)
    assert {j["id"]: j for j in httpx.get(f"{web.url}/api/v1/apps").json()}["app_3"]["priority"] == 4


def test_openapi_describes_the_api(web):
    doc = httpx.get(f"{web.url}/openapi.json").json()
    assert set(doc["paths"]) >= {"/api/v1/queues", "/api/v1/apps", "/api/v1/config",
                                 "/api/v1/apps/{app_id}/queue", "/api/v1/apps/{app_id}/priority"}
    assert "401" in doc["paths"]["/api/v1/apps/{app_id}/queue"]["post"]["responses"]


def test_the_paths_before_one_vocabulary_answer_in_their_old_shape(web):
    """/pools and /jobs (and a move's "pool" field) stay, answering as they
    did: "pool" where the new paths say "queue", explain's old hold codes;
    the new names alone are in the OpenAPI document."""
    def renamed(rows):
        return [{("pool" if k == "queue" else k): v for k, v in r.items()} for r in rows]

    pools, queues = httpx.get(f"{web.url}/api/v1/pools").json(), httpx.get(f"{web.url}/api/v1/queues").json()
    assert pools == renamed(queues) and all("pool" in r and "queue" not in r for r in pools)
    jobs, apps = httpx.get(f"{web.url}/api/v1/jobs").json(), httpx.get(f"{web.url}/api/v1/apps").json()
    assert jobs == renamed(apps) and {j["pool"] for j in jobs} == {"root.research", "root.prod"}
    old = httpx.get(f"{web.url}/api/v1/jobs/app_1/explain").json()
    new = httpx.get(f"{web.url}/api/v1/apps/app_1/explain").json()
    assert old["id"] == new["id"] == "app_1" and old["pool"] == new["queue"] == "root.research"
    assert "queue" not in old and old["holds"] and len(old["holds"]) == len(new["holds"])
    assert [h["code"] for h in old["holds"]] == [legacy.OLD_CODES.get(h["code"], h["code"]) for h in new["holds"]]
    assert not any(k.startswith("queue") for h in old["holds"] for k in h)
    assert httpx.post(f"{web.url}/api/v1/jobs/app_1/pool", json={"pool": "other"}).status_code == 401
    r = httpx.post(f"{web.url}/api/v1/jobs/app_1/pool", json={"pool": "other"}, headers=AUTH)
    assert r.status_code == 200 and r.json() == {"id": "app_1", "pool": "root.other"}
    r = httpx.post(f"{web.url}/api/v1/jobs/app_1/priority", json={"priority": 3}, headers=AUTH)
    assert r.status_code == 200 and r.json() == {"id": "app_1", "priority": 3}
    paths = set(httpx.get(f"{web.url}/openapi.json").json()["paths"])
    assert not {p for p in paths if "/pools" in p or "/jobs" in p}, paths


def test_explain_in_its_old_shape_names_the_holds_as_they_were():
    new = {"id": "a", "queue": "root.x", "holds": [
        {"code": "queue_max_running_apps", "message": "m", "queue": "root.x", "running": 1, "limit": 1},
        {"code": "queue_at_max_share", "message": "m", "queue": "root", "usage": {}},
        {"code": "waiting_turn", "message": "m", "queue": "root.x", "queue_usage": {}, "queue_fair_share": {}}]}
    old = legacy.job_explain(new)
    assert old["pool"] == "root.x" and "queue" not in old
    assert [h["code"] for h in old["holds"]] == ["pool_max_running_apps", "pool_at_max_share", "waiting_turn"]
    assert old["holds"][2] == {"code": "waiting_turn", "message": "m", "pool": "root.x", "pool_usage": {},
                               "pool_fair_share": {}}
    assert new["holds"][0]["code"] == "queue_max_running_apps"  # the new answer is left as it is


def test_config_errors_show_in_the_api_until_fixed(web):
    text = open(web.path).read()
    with open(web.path, "w") as f:
        f.write(text.replace("<weight>2</weight>", "<weight>heavy</weight>"))
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not httpx.get(f"{web.url}/api/v1/config").json()["errors"]:
        time.sleep(0.05)
    cfg = httpx.get(f"{web.url}/api/v1/config").json()
    assert cfg["errors"] and cfg["errors"][0].startswith(f"{web.path}:3: ")
    assert "<weight>2</weight>" in cfg["content"]  # the last good file stays in force
    queues = {p["queue"]: p for p in httpx.get(f"{web.url}/api/v1/queues").json()}
    assert queues["root.prod"]["weight"] == 2.0
    with open(web.path, "w") as f:
        f.write(text.replace("<weight>2</weight>", "<weight>5</weight>"))
    while time.monotonic() < deadline + 5 and httpx.get(f"{web.url}/api/v1/config").json()["errors"]:
        time.sleep(0.05)
    assert httpx.get(f"{web.url}/api/v1/config").json()["errors"] == []
    queues = {p["queue"]: p for p in httpx.get(f"{web.url}/api/v1/queues").json()}
    assert queues["root.prod"]["weight"] == 5.0


def test_metrics(web):
    web.heartbeat("n2")
    text = httpx.get(f"{web.url}/metrics").text
    assert "slotwise_heartbeat_seconds_bucket" in text
    count = [l for l in text.splitlines() if l.startswith("slotwise_heartbeat_seconds_count")][0]
    assert float(count.split()[-1]) == 2.0  # the fixture's heartbeat and this one
    decisions = [l for l in text.splitlines() if l.startswith("slotwise_decisions_total")][0]
    assert float(decisions.split()[-1]) == 8.0  # 4 containers on each 4-vcore node
    assert 'slotwise_queue_fair_share{queue="root.prod",resource="memory_mb"}' in text
    assert 'slotwise_queue_usage{queue="root.research",resource="vcores"}' in text
    assert "slotwise_decisions_per_second" in text and "slotwise_fallbacks_total 0.0" in text
    from wiretools import payload
    web.core.handle_heartbeat(payload(fallbacks=[{"reason": "heartbeat: no answer within 100 ms",
                                                  "started_ms": 1000, "ended_ms": 3000, "heartbeats": 3}]))
    text = httpx.get(f"{web.url}/metrics").text
    assert "slotwise_fallbacks_total 3.0" in text and "slotwise_fallback_episodes_total 1.0" in text
    assert "slotwise_fallback_seconds_total 2.0" in text


def test_the_ui_session_needs_the_csrf_header_and_ends_at_logout(web):
    with httpx.Client(base_url=web.url, timeout=60) as c:
        assert c.post("/ui/login", data={"admin_token": "wrong-token-wrong-token"}).status_code == 401
        r = c.post("/ui/login", data={"admin_token": TOKEN})
        assert r.status_code == 303 and "slotwise_session" in c.cookies
        cookie = c.cookies["slotwise_session"]
        assert TOKEN not in cookie
        # The cookie alone (what a cross-site form would send) is refused.
        assert c.post("/api/v1/apps/app_1/priority", json={"priority": 1}).status_code == 401
        ok = c.post("/api/v1/apps/app_1/priority", json={"priority": 1}, headers={"X-Slotwise-CSRF": "1"})
        assert ok.status_code == 200
        c.post("/ui/logout")
    # Logging out ends the session on the server, not just in the browser.
    again = httpx.post(f"{web.url}/api/v1/apps/app_1/priority", json={"priority": 2},
                       cookies={"slotwise_session": cookie}, headers={"X-Slotwise-CSRF": "1"})
    assert again.status_code == 401
    assert job(web.core, "app_1")["priority"] == 1


def test_priority_out_of_range_is_refused_whole(web):
    for bad in (2000, -1):
        r = httpx.post(f"{web.url}/api/v1/apps/app_1/priority", json={"priority": bad}, headers=AUTH)
        assert r.status_code == 422
    app = job(web.core, "app_1")
    assert (app["priority"], app["weight"]) == (0, 1.0)


def test_a_reload_that_would_strand_running_jobs_is_refused(web):
    text = open(web.path).read()
    with open(web.path, "w") as f:  # research holds app_1 and app_3: it cannot become a parent
        f.write(text.replace('<queue name="research"/>', '<queue name="research"><queue name="x"/></queue>'))
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not httpx.get(f"{web.url}/api/v1/config").json()["errors"]:
        time.sleep(0.05)
    errors = httpx.get(f"{web.url}/api/v1/config").json()["errors"]
    assert errors and errors[0].startswith(f"{web.path}:4: root.research holds 2 running app(s)")
    assert "root.research.x" not in {p["queue"] for p in web.core.views.queues()}
    assigned = web.heartbeat("n2")
    assert {a.app_id for a in assigned} & {"app_1", "app_3"}  # still offered containers


def test_admin_changes_wait_for_a_resourcemanager_that_is_away(tmp_path):
    """Once an RM has registered, a change made while it is away would be
    undone by its resync: refuse with 503 instead."""
    from slotwise.admin import AdminError, SchedulerService
    from slotwise.bridge.server import PolicyServer, RMControl

    running = start(tmp_path)
    try:
        server = PolicyServer(running.core, str(tmp_path / "gw.json"), str(tmp_path / "gw.token"))
        service = SchedulerService(running.core, running.service.status, RMControl(server))
        assert service.move_app("app_1", "other") == "root.other"  # never connected: local
        server.registrations = 1  # it had registered, and is gone now
        with pytest.raises(AdminError) as e:
            service.move_app("app_1", "research")
        assert e.value.status == 503
        assert running.core.views.app_queue("app_1") == "root.other"
    finally:
        running.stop()


def job(core, app_id: str) -> dict:
    return next(j for j in core.views.apps() if j["id"] == app_id)


def test_status_reports_the_link_and_the_policy_counts(web):
    from wiretools import payload

    s = httpx.get(f"{web.url}/api/v1/status").json()
    assert s["resource_manager"] == {**s["resource_manager"], "registered": False, "in_fallback": False, "seen": False}
    assert s["policy"]["calls"] >= 2
    web.rm.was_seen = True
    web.rm.state.update(connected=True, registered=True, in_fallback=True, reason="update: no answer within 100 ms",
                        since=1700000000.0, episode_heartbeats=3, heartbeats=10, fallback_heartbeats=3, failures=4)
    web.core.handle_heartbeat(payload(fallbacks=[{"reason": "x", "started_ms": 0, "ended_ms": 1500,
                                                  "heartbeats": 2}]))
    s = httpx.get(f"{web.url}/api/v1/status").json()
    assert s["resource_manager"]["in_fallback"] is True and s["resource_manager"]["since"] == 1700000000.0
    assert s["policy"]["fallback_episodes"] == 1 and s["policy"]["fallback_heartbeats"] == 2
    text = httpx.get(f"{web.url}/metrics").text
    assert "slotwise_fallback_active 1.0" in text and "slotwise_resourcemanager_connected 1.0" in text


def test_a_standby_resourcemanager_shows_in_the_status_and_the_metrics(web):
    s = httpx.get(f"{web.url}/api/v1/status").json()
    assert s["resource_manager"].get("ha_state") is None
    assert "slotwise_resourcemanager_standby 0.0" in httpx.get(f"{web.url}/metrics").text
    web.rm.state.update(connected=False, registered=False, ha_state="standby")
    s = httpx.get(f"{web.url}/api/v1/status").json()
    assert s["resource_manager"]["ha_state"] == "standby"
    assert "slotwise_resourcemanager_standby 1.0" in httpx.get(f"{web.url}/metrics").text
    web.rm.state.update(ha_state=None)


def test_a_locality_target_its_waits_and_the_fraction_reached_are_read_and_exported(web):
    from slotwise.config import parse_allocations
    from webtools import ALLOCATIONS

    text = ALLOCATIONS.replace('<queue name="research"/>',
                               '<queue name="research"><localityTarget>0.9</localityTarget></queue>')
    web.core.set_config(parse_allocations(text, web.path), text)
    web.heartbeat("n2")  # research's apps ask for no places: nothing counts towards its fraction
    queues = {p["queue"]: p for p in httpx.get(f"{web.url}/api/v1/queues").json()}
    research, prod = queues["root.research"], queues["root.prod"]
    assert research["locality_target"] == 0.9 and research["locality_tuned"] is True
    assert research["locality_waits"] == {"node": 0.0, "rack": 0.0}  # the server's waits (0) as the start
    assert prod["locality_target"] is None and prod["locality_tuned"] is False and research["data_local"] is None
    assert queues["root"]["locality_waits"] is None  # a parent has no apps to wait
    text = httpx.get(f"{web.url}/metrics").text
    assert 'slotwise_queue_locality_target{queue="root.research"} 0.9' in text
    assert 'slotwise_queue_locality_wait_seconds{level="node",queue="root.research"} 0.0' in text
    assert 'slotwise_queue_locality_target{queue="root.prod"}' not in text
