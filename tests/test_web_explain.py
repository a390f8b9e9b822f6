"""Explain and dry-run over real HTTP: what holds a job back, and what a new
allocation file would do, changing nothing."""

from __future__ import annotations

import re

import httpx

from webtools import ALLOCATIONS, TOKEN, web  # noqa: F401 (the fixture)

AUTH = {"Authorization": f"Bearer {TOKEN}"}


def test_explain_a_job_and_python_away(web):
    r = httpx.get(f"{web.url}/api/v1/apps/app_1/explain")
    assert r.status_code == 200, r.text
    out = r.json()
    # app_1 runs one container and asks for five more: running, not pending.
    assert out["id"] == "app_1" and out["queue"] == "root.research" and out["state"] == "running"
    assert out["running_containers"] == 1 and out["pending_containers"] == 5
    assert out["holds"] and all(h["message"] for h in out["holds"])
    st = out["standing"]
    assert st["position"] == "under" and st["asks"]["containers"] == 5 and st["queue"] == "root.research"
    assert st["fair_share"]["memory_mb"] > st["usage"]["memory_mb"] == 1024
    # research (1024 MB of a 2731 MB fair share) is below 0.5 x its fair share; this server does not preempt.
    s = out["queue_starvation"]
    assert s["kind"] == "fair_share" and s["timeout_s"] is None and s["for_s"] >= 0 and s["since"] > 1e9
    assert s["preemption"]["enabled"] is False and s["message"].endswith("preemption is off")
    assert out["outcome"] is None
    r = httpx.get(f"{web.url}/api/v1/apps/nosuch/explain")
    assert r.status_code == 404
    assert r.json()["detail"] == "unknown app nosuch: not scheduled now, nor among the last 1000 that finished"
    web.rm.state.update(in_fallback=True, reason="policy call timed out", since=1.0)
    first = httpx.get(f"{web.url}/api/v1/apps/app_1/explain").json()["holds"][0]
    assert first["code"] == "python_away" and "timed out" in first["message"]


def test_explain_a_finished_job(web):
    from wiretools import payload

    web.core.handle_update(payload(apps_removed=["app_2"], apps_finished=[{"id": "app_2", "final_state": "FAILED"}]))
    web.rm.state.update(in_fallback=True, reason="policy call timed out", since=1.0)
    r = httpx.get(f"{web.url}/api/v1/apps/app_2/explain")
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["state"] == "finished" and out["user"] == "bob" and out["queue"] == "root.prod"
    assert out["holds"] == [] and out["standing"] is None  # nothing holds back an app that has left
    o = out["outcome"]
    assert o["containers_ran"] == 3 and o["running_at_end"] == 3 and o["pending_at_end"] == 3
    assert o["final_state"] == "FAILED" and o["how"] == "removed" and o["finished"] > 1e9
    assert re.match(r"finished FAILED at \d\d:\d\d:\d\d \(0 s ago\) in root.prod", o["message"]), o["message"]
    assert o["message"].endswith("the ResourceManager removed it")
    assert httpx.get(f"{web.url}/api/v1/jobs/app_2/explain").json()["state"] == "finished"  # the old path too


def test_dry_run_shows_shares_before_and_after_and_changes_nothing(web):
    queues_before = httpx.get(f"{web.url}/api/v1/queues").json()
    new = ALLOCATIONS.replace('<queue name="research"/>', '<queue name="research"><weight>6</weight></queue>')
    assert httpx.post(f"{web.url}/api/v1/config/dry-run", content=new).status_code == 401  # admin only
    r = httpx.post(f"{web.url}/api/v1/config/dry-run", content=new, headers=AUTH)
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["valid"] and out["errors"] == [] and out["share_rule"] == "yarn"
    rows = {p["queue"]: p for p in out["queues"]}
    research = rows["root.research"]
    assert research["weight_before"] == 1 and research["weight_after"] == 6
    assert research["fair_share_after"]["memory_mb"] > research["fair_share_before"]["memory_mb"]
    assert rows["root.prod"]["fair_share_after"]["memory_mb"] < rows["root.prod"]["fair_share_before"]["memory_mb"]
    # prod holds containers over its new fair share: they would become preemptable.
    assert any(c["queue"] == "root.prod" for c in out["newly_preemptable"]), out["newly_preemptable"]
    assert httpx.get(f"{web.url}/api/v1/queues").json() == queues_before
    assert httpx.get(f"{web.url}/api/v1/config").json()["content"] == ALLOCATIONS


def test_dry_run_of_a_broken_or_refused_file(web):
    out = httpx.post(f"{web.url}/api/v1/config/dry-run", content="<allocations><queue name='a'><weight>x"
                     "</weight></queue></allocations>", headers=AUTH).json()
    assert not out["valid"] and out["errors"] and out["errors"][0].startswith("the file sent:1:")
    # research holds jobs: making it a parent would strand them, so a reload would be refused.
    refused = ALLOCATIONS.replace('<queue name="research"/>', '<queue name="research"><queue name="x"/></queue>')
    out = httpx.post(f"{web.url}/api/v1/config/dry-run", content=refused, headers=AUTH).json()
    assert not out["valid"] and "cannot become a parent queue" in out["conflicts"][0]
    assert httpx.post(f"{web.url}/api/v1/config/dry-run", content=b"\xff\xfe", headers=AUTH).status_code == 400
    big = b"<allocations>" + b" " * (4 * 1024 * 1024) + b"</allocations>"
    r = httpx.post(f"{web.url}/api/v1/config/dry-run", content=big, headers=AUTH)
    assert r.status_code == 413 and "over 4194304 bytes" in r.json()["detail"]

    def chunks():  # no Content-Length: refused while it streams in
        for _ in range(5):
            yield b" " * (1024 * 1024)

    assert httpx.post(f"{web.url}/api/v1/config/dry-run", content=chunks(), headers=AUTH).status_code == 413


def slotwise(*args):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "slotwise.cli", *args], capture_output=True, text=True, timeout=60)


def test_explain_and_diff_commands_ask_the_running_server(web, tmp_path):
    server = web.url.removeprefix("http://")
    r = slotwise("explain", "app_1", "--server", server)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("app_1, user alice, queue root.research: running; 1 container(s) running, "
                               "5 more asked for\nstanding: it runs 1 container(s)")
    assert "held back by:" in r.stdout and "preemption is off" in r.stdout
    r = slotwise("explain", "nosuch", "--server", server)
    assert r.returncode == 1 and r.stderr.strip() == ("slotwise explain: unknown app nosuch: not scheduled now, "
                                                      "nor among the last 1000 that finished")
    new = tmp_path / "new.xml"
    new.write_text(ALLOCATIONS.replace('<queue name="other"/>', '<queue name="other"/><queue name="fresh"/>')
                   .replace('<queue name="research"/>', '<queue name="research"><weight>6</weight></queue>'))
    token = tmp_path / "admin.token"
    token.write_text(TOKEN + "\n")
    token.chmod(0o600)
    r = slotwise("diff", str(new), "--server", server)
    assert r.returncode == 1 and "admin token" in r.stderr
    r = slotwise("diff", str(new), "--server", server, "--admin-token-file", str(token))
    assert r.returncode == 0, r.stderr
    lines = {line.split()[0]: line for line in r.stdout.splitlines()[2:] if line.startswith("root")}
    assert "1 -> 6" in lines["root.research"] and lines["root.fresh"].endswith("(added)")
    assert "would become preemptable" in r.stdout
    new.write_text("<allocations><queue name='a'><weight>x</weight></queue></allocations>")
    r = slotwise("diff", str(new), "--server", server, "--admin-token-file", str(token))
    assert r.returncode == 1 and r.stderr.startswith(f"{new}:1:")  # the file given, not the one served
    r = slotwise("explain", "app_1", "--server", "127.0.0.1:1")
    assert r.returncode == 1 and "no Slotwise server answers at http://127.0.0.1:1" in r.stderr


def test_the_ui_says_why_each_preempted_container_was_chosen(tmp_path):
    from slotwise.admin import AdminToken, SchedulerService
    from slotwise.serve import start_http
    from slotwise.clock import ManualClock
    from slotwise.config.watcher import load_with_status
    from slotwise.core import PolicyCore
    from slotwise.settings import EngineSettings
    from slotwise.web.app import create_app
    from webtools import TOKEN, app_entry, free_port
    from wiretools import node, payload

    path = tmp_path / "fair-scheduler.xml"
    path.write_text('<allocations><queue name="a"/><queue name="b"><minResources>2048 mb, 2 vcores</minResources>'
                    '<minSharePreemptionTimeout>5</minSharePreemptionTimeout></queue></allocations>')
    config, status = load_with_status(str(path))
    clock = ManualClock(100.0)
    core = PolicyCore(config, EngineSettings(node_locality_delay=0, rack_locality_delay=0), clock)
    core.handle_heartbeat(payload(nodes=[node("n1", "h1", "/r1", 4096, 4)], apps=[app_entry("hog", "ann", "root.a", 8)],
                                  node="n1"))
    core.handle_update(payload(apps=[app_entry("late", "bob", "root.b", 2)]))
    clock.advance(6)
    assert core.handle_update(payload()).preempt, "nothing was preempted"
    port = free_port()
    server = start_http(create_app(SchedulerService(core, status), AdminToken(TOKEN)), "127.0.0.1", port)
    try:
        page = httpx.get(f"http://127.0.0.1:{port}/").text
        assert "Why this container" in page
        assert "for root.b below its min share for 6 s (timeout 5 s): root.a uses" in page
        why = httpx.get(f"http://127.0.0.1:{port}/api/v1/apps/hog/explain").json()["preempting"]
        assert why and why[0]["why"].startswith("for root.b below its min share")
    finally:
        server.should_exit = True


def test_the_api_says_how_long_a_queue_is_starved_and_what_preemption_will_take():
    """The starved queue of test_explain over real HTTP: the structured fields
    the console shows, as the OpenAPI document describes them."""
    from slotwise.admin import AdminToken, SchedulerService
    from slotwise.serve import start_http
    from slotwise.config.watcher import ConfigStatus
    from slotwise.web.app import create_app
    from test_explain import starved_core
    from webtools import free_port

    core, clock, until, rounds = starved_core()
    until(35)
    port = free_port()
    server = start_http(create_app(SchedulerService(core, ConfigStatus("a.xml")), AdminToken(TOKEN)),
                        "127.0.0.1", port)
    try:
        out = httpx.get(f"http://127.0.0.1:{port}/api/v1/apps/p/explain").json()
        s = out["queue_starvation"]
        assert (s["kind"], s["for_s"], s["timeout_s"], s["below"]) == ("min_share", 35, 30, ["min_share", "fair_share"])
        assert s["share"] == {"memory_mb": 4096, "vcores": 4} and s["usage"] == {"memory_mb": 1024, "vcores": 1}
        pre = s["preemption"]
        assert pre["enabled"] and pre["next_round_in_s"] == 28 and len(pre["victims"]) == 3
        assert {v["queue"] for v in pre["victims"]} == {"root.hog"} and pre["asked_back"] == []
        assert pre["held"] == {"memory_mb": 0, "vcores": 0} and pre["last_round_s_ago"] == 4
        queues = {q["queue"]: q for q in httpx.get(f"http://127.0.0.1:{port}/api/v1/queues").json()}
        assert queues["root.prod"]["min_share_starved_for"] == 35  # the queue table reads the same clock
        spec = httpx.get(f"http://127.0.0.1:{port}/openapi.json").json()["components"]["schemas"]
        assert {"queue_starvation", "standing", "outcome"} <= set(spec["ExplainOut"]["properties"])
        assert "next_round_in_s" in spec["PreemptionOutlookOut"]["properties"]
    finally:
        server.should_exit = True


def test_with_the_master_gone_explain_says_nothing_is_preempted():
    """The console's rule (web/views.gone_master) in explain's words too: a
    starved queue is still starved, but with the link lost no round acts."""
    from slotwise.admin import SchedulerService
    from slotwise.config.watcher import ConfigStatus
    from test_explain import starved_core
    from webtools import FakeRM

    core, clock, until, rounds = starved_core()
    until(35)
    rm = FakeRM()
    rm.was_seen = True
    rm.state = {"connected": False, "registered": True, "in_fallback": False}
    gone = SchedulerService(core, ConfigStatus("a.xml"), rm).explain_app("p")["queue_starvation"]
    assert gone["preemption"]["due"] is False and gone["preemption"]["victims"] == []
    assert gone["preemption"]["next_round_in_s"] is None
    assert gone["message"] == ("queue root.prod has been below its min share for 35 s; the ResourceManager is gone "
                               "(the link is lost): nothing is preempted while it is gone")
    rm.state = {"connected": True, "registered": True, "in_fallback": False}
    back = SchedulerService(core, ConfigStatus("a.xml"), rm).explain_app("p")["queue_starvation"]
    assert back["preemption"]["next_round_in_s"] == 28 and len(back["preemption"]["victims"]) == 3
