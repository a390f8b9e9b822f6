"""Forecasts kept in the background and served (slotwise/forecaster.py):
what the API and `slotwise forecast` answer, and in words."""

from __future__ import annotations

import json

import httpx

from slotwise import cli
from slotwise.admin import AdminToken
from slotwise.forecaster import Forecaster, as_text
from slotwise.serve import start_http
from slotwise.web.app import create_app
from webtools import TOKEN, FakeRM, free_port
from wiretools import app, node, payload, req

from slotwise.admin import SchedulerService
from slotwise.clock import ManualClock
from slotwise.config.watcher import load_with_status
from slotwise.core import PolicyCore
from slotwise.settings import EngineSettings

FILE = """<?xml version="1.0"?>
<allocations>
  <queue name="a"/>
  <queue name="b"/>
</allocations>
"""


def scene(tmp_path):
    """One 2-container node; a job's two containers ran 10 s (so run times
    are known), then x asks for four and y for two."""
    path = tmp_path / "alloc.xml"
    path.write_text(FILE)
    config, status = load_with_status(str(path))
    clock = ManualClock(1000.0)
    core = PolicyCore(config, EngineSettings(preemption=False, node_locality_delay=0, rack_locality_delay=0), clock)
    nodes = [node("n1", "h1", "/r1", 2048, 2)]
    core.handle_heartbeat(payload(nodes=nodes, apps=[app("first", "root.a", [req(1, 1024, 1, 1)], unmanaged=True),
                                                     app("firstb", "root.b", [req(1, 1024, 1, 1)], unmanaged=True)],
                                  node="n1"))
    placed = [c for c in core._engine.containers]
    assert len(placed) == 2
    clock.advance(10)
    core.handle_heartbeat(payload(finished=placed, apps_removed=["first", "firstb"], node="n1"))
    core.handle_heartbeat(payload(apps=[app("x", "root.a", [req(1, 1024, 1, 4)], unmanaged=True),
                                        app("y", "root.b", [req(1, 1024, 1, 2)], unmanaged=True)], node="n1"))
    core.handle_update(payload())
    rm = FakeRM()
    rm.was_seen = True
    rm.state.update(connected=True, registered=True)
    return core, clock, SchedulerService(core, status, rm), rm


def test_the_last_forecast_is_served_and_said_in_words(tmp_path, capsys):
    core, clock, service, rm = scene(tmp_path)
    f = Forecaster(service, thread=False, clock=clock.now)
    assert f.of("x") is None
    f.refresh()
    x, y = f.of("x"), f.of("y")
    assert x["started"] and y["started"]  # the heartbeat above placed one of each
    assert x["finish_in_s"] is not None and y["finish_in_s"] < x["finish_in_s"]
    assert as_text(x).startswith("ends in ~") and x["why"] is None
    port = free_port()
    server = start_http(create_app(service, AdminToken(TOKEN), forecaster=f), "127.0.0.1", port)
    try:
        got = httpx.get(f"http://127.0.0.1:{port}/api/v1/apps/x/forecast", timeout=60).json()
        assert got["finish_in_s"] == x["finish_in_s"] and got["text"] == as_text(x)
        every = httpx.get(f"http://127.0.0.1:{port}/api/v1/forecasts", timeout=60).json()
        assert [r["app"] for r in every["apps"]] == ["y", "x"] and every["apps"][1] == got
        assert cli.main(["forecast", "x", "--server", f"http://127.0.0.1:{port}"]) == 0
        assert capsys.readouterr().out == f"x: {as_text(x)}\n"
        why = httpx.get(f"http://127.0.0.1:{port}/api/v1/apps/x/explain", timeout=60).json()
        assert why["forecast"] == as_text(x)
        assert cli.main(["explain", "x", "--server", f"http://127.0.0.1:{port}"]) == 0
        assert f"forecast: {as_text(x)}" in capsys.readouterr().out
        page = httpx.get(f"http://127.0.0.1:{port}/", timeout=60).text
        assert f'<td class="forecast">{as_text(x)}</td>' in page.replace("&#126;", "~")
        missing = httpx.get(f"http://127.0.0.1:{port}/api/v1/apps/nope/forecast", timeout=60)
        assert missing.status_code == 404 and "no forecast for nope" in missing.json()["detail"]
        rm.state.update(connected=False, registered=False)  # the master gone: no new forecast, and it says so
        f.refresh()
        gone = httpx.get(f"http://127.0.0.1:{port}/api/v1/apps/x/forecast", timeout=60).json()
        assert gone["why"].startswith("the master is gone")
    finally:
        server.should_exit = True


def test_in_words():
    base = {"started": False, "start_in_s": 40.0, "start_in_low_s": 25.0, "start_in_high_s": 70.0,
            "finish_in_s": 200.0, "finish_in_low_s": 130.0, "finish_in_high_s": 260.0, "why": None}
    assert as_text(base) == "starts in ~40 s (25 s-70 s), ends in ~3 min (2 min-4 min)"
    assert as_text({**base, "finish_in_s": None, "why": "its AM has not asked for its tasks yet"}) == \
        "starts in ~40 s (25 s-70 s), no end forecast: its AM has not asked for its tasks yet"
    assert as_text({**base, "started": True, "finish_in_high_s": None}) == "ends in ~3 min (or later)"


def test_what_if_over_http_and_the_cli(tmp_path, capsys):
    core, clock, service, rm = scene(tmp_path)
    token_file = tmp_path / "admin.token"
    token_file.write_text(TOKEN)
    token_file.chmod(0o600)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = start_http(create_app(service, AdminToken(TOKEN), forecaster=Forecaster(service, thread=False)),
                        "127.0.0.1", port)
    try:
        before = (sorted(core._engine.containers), core._engine.queues["root.b"].weight)
        hdr = {"Authorization": f"Bearer {TOKEN}"}
        assert httpx.post(f"{url}/api/v1/whatif", json={"set": "b.weight=3"}).status_code == 401
        out = httpx.post(f"{url}/api/v1/whatif", json={"set": "b.weight=3", "horizon_s": 300}, headers=hdr).json()
        assert out["error"] is None and out["change"] == "--set b.weight=3"
        rows = {r["app"]: r for r in out["apps"]}
        assert set(rows) == {"x", "y"} and rows["y"]["finish_before"] is not None
        shares = {q["queue"]: q for q in out["queues"]}
        assert {"root.a", "root.b"} <= set(shares) and shares["root.b"]["after"][0][0] == 0
        assert out["preemptions_before"] == out["preemptions_after"] == {}  # preemption is off here
        assert len(shares["root.b"]["before"]) == len(shares["root.a"]["before"]) > 1
        assert (sorted(core._engine.containers), core._engine.queues["root.b"].weight) == before
        two = httpx.post(f"{url}/api/v1/whatif", json={"set": "b.weight=3", "move": ["x", "root.b"]}, headers=hdr)
        assert two.status_code == 400 and "exactly one change" in two.json()["detail"]
        bad = httpx.post(f"{url}/api/v1/whatif", json={"set": "b.weight=heavy"}, headers=hdr)
        assert bad.status_code == 400 and "weight 'heavy'" in bad.json()["detail"]
        args = ["whatif", "--server", url, "--admin-token-file", str(token_file)]
        assert cli.main([*args, "--move", "x", "root.b", "--horizon", "5m"]) == 0
        said = capsys.readouterr().out
        assert said.startswith("--move x root.b, played 300 s ahead (nothing live changes):")
        assert cli.main([*args, "--move", "nope", "root.b"]) == 1
        assert "nope" in capsys.readouterr().err
        assert cli.main([*args, "--set", "b.weight=2", "--horizon", "forever"]) == 2
        # diff --horizon: the dry run's table, then the same lines as whatif --allocations.
        new = tmp_path / "new.xml"
        new.write_text(FILE.replace('<queue name="b"/>', '<queue name="b"><weight>3</weight></queue>'))
        diff = ["diff", str(new), "--server", url, "--admin-token-file", str(token_file)]
        assert cli.main(diff) == 0
        table = capsys.readouterr().out
        assert "root.b" in table and "1 -> 3" in table and "played" not in table  # without --horizon: as before
        assert cli.main([*diff, "--horizon", "5m"]) == 0
        both = capsys.readouterr().out
        assert both.startswith(table)
        assert both[len(table):].startswith("--allocations (the file sent), played 300 s ahead (nothing live changes):\n")
        assert cli.main([*args, "--allocations", str(new), "--horizon", "5m"]) == 0
        assert capsys.readouterr().out == both[len(table):]
        assert cli.main([*diff, "--horizon", "5m", "--json"]) == 0
        answers = json.loads(capsys.readouterr().out)
        assert answers["dry_run"]["valid"] and answers["whatif"]["change"] == "--allocations (the file sent)"
        assert cli.main([*diff, "--horizon", "never"]) == 2
        assert "--horizon never: expected seconds" in capsys.readouterr().err
        assert (sorted(core._engine.containers), core._engine.queues["root.b"].weight) == before
    finally:
        server.should_exit = True


def test_explain_names_the_smallest_change_that_would_start_a_waiting_app(tmp_path, capsys):
    path = tmp_path / "alloc.xml"
    path.write_text(FILE.replace('<queue name="a"/>', '<queue name="a"><maxRunningApps>1</maxRunningApps></queue>'))
    config, status = load_with_status(str(path))
    clock = ManualClock(1000.0)
    core = PolicyCore(config, EngineSettings(preemption=False, node_locality_delay=0, rack_locality_delay=0), clock)
    core.handle_heartbeat(payload(nodes=[node("n1", "h1", "/r1", 2048, 2)],
                                  apps=[app("first", "root.a", [req(1, 1024, 1, 1)], unmanaged=True)], node="n1"))
    placed = list(core._engine.containers)
    clock.advance(10)
    core.handle_heartbeat(payload(finished=placed, apps_removed=["first"], node="n1"))
    core.handle_heartbeat(payload(apps=[app("x", "root.a", [req(1, 1024, 1, 30)], unmanaged=True, submit_ms=1),
                                        app("z", "root.a", [req(1, 1024, 1, 1)], unmanaged=True, submit_ms=2)],
                                  node="n1"))
    core.handle_update(payload())
    port = free_port()
    server = start_http(create_app(SchedulerService(core, status, FakeRM()), AdminToken(TOKEN),
                                   forecaster=Forecaster(SchedulerService(core, status, FakeRM()), thread=False)),
                        "127.0.0.1", port)
    try:
        out = httpx.get(f"http://127.0.0.1:{port}/api/v1/apps/z/explain", timeout=60).json()
        assert out["state"] == "waiting to run"
        # The node is full (x holds both slots): in root.b it takes the first that frees, in 10 s.
        assert out["counterfactual"] == "with a move to root.b it starts in ~10 s instead of ~2 min"
        assert cli.main(["explain", "z", "--server", f"http://127.0.0.1:{port}"]) == 0
        assert "to start within a minute: with a move to root.b" in capsys.readouterr().out
        assert httpx.get(f"http://127.0.0.1:{port}/api/v1/apps/x/explain", timeout=60).json()["counterfactual"] is None
    finally:
        server.should_exit = True


def test_the_cli_names_the_queues_whose_preemptions_a_change_moves(monkeypatch, capsys):
    from slotwise import client

    said = {"change": "--set root.a.minResources=2 mb, 2 vcores", "error": None, "at": 0.0, "horizon_s": 600.0,
            "cpu_ms": 1.0, "apps": [], "queues": [], "preemptions_before": {"root.c": 1},
            "preemptions_after": {"root.b": 2, "root.c": 1}}
    monkeypatch.setattr(client, "admin_call", lambda *a, **kw: said)
    assert cli.main(["whatif", "--server", "http://127.0.0.1:1", "--set", "a.minResources=2 mb, 2 vcores"]) == 0
    out = capsys.readouterr().out
    assert "containers taken back by preemption over the horizon:\n  root.b: 0 -> 2\n" in out
    assert "root.c" not in out  # the same either way


def test_a_starts_range_is_widened_by_what_the_forecasts_really_missed_by():
    from types import SimpleNamespace as F

    from slotwise.forecaster import Calibration

    c = Calibration()
    r = {"started": False, "start_in_s": 20.0, "start_in_low_s": 19.0, "start_in_high_s": 21.0,
         "finish_in_s": 50.0, "finish_in_low_s": 48.0, "finish_in_high_s": None}
    # Ten apps forecast at 0 to start at 10: five started at 15, five at 8.
    c.observe({f"a{i}": F(start=10.0) for i in range(10)}, 0.0)
    c.observe({f"a{i}": F(start=15.0 if i % 2 else 8.0) for i in range(9)}, 30.0)
    assert c.bounds() is None and c.widen(r) == r  # nine known: not enough to go by
    c.observe({"a9": F(start=8.0), "late": F(start=100.0)}, 31.0)  # (late: still waiting, its first kept)
    assert c.bounds() == (0.8, 1.5)
    # The finish's range moves as far as the start's: 4 s sooner; its high end stays unknown (past the horizon).
    assert c.widen(r) == {**r, "start_in_low_s": 16.0, "start_in_high_s": 30.0, "finish_in_low_s": 46.0}
    both = c.widen({**r, "finish_in_high_s": 52.0})
    assert (both["finish_in_low_s"], both["finish_in_high_s"]) == (46.0, 60.0)
    assert c.widen({**r, "started": True}) == {**r, "started": True}
    # A forecast less than AHEAD seconds ahead teaches nothing (its ratio would be noise).
    c.observe({"soon": F(start=33.0)}, 31.0)
    c.observe({"soon": F(start=40.0)}, 41.0)
    assert len(c.ratios) == 10
