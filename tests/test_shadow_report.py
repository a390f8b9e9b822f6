"""``slotwise shadow report`` (slotwise/shadow_report.py): a recorded log
played under the live file and a candidate, per queue side by side."""

from __future__ import annotations

import json

from slotwise.cli import main
from test_sim_shadow import ALLOC, contended_trace


def recorded(tmp_path):
    """An event log with inputs, as serve --record writes one (here from the
    simulator, which records through the same door)."""
    trace, live, log = tmp_path / "trace.jsonl", tmp_path / "live.xml", tmp_path / "events.jsonl"
    contended_trace(trace)
    live.write_text(ALLOC.format(a="1"))
    assert main(["simulate", "trace", "--trace", str(trace), "--policy", "fair", "--allocations", str(live),
                 "--event-log", str(log), "--out", str(tmp_path / "sim"), "-q"]) == 0
    return log


def report(tmp_path, capsys, log, weight: str, since: str = "3m"):
    cand = tmp_path / f"cand-{weight}.xml"
    cand.write_text(ALLOC.format(a=weight))
    capsys.readouterr()
    assert main(["shadow", "report", "--event-log", str(log), "--candidate", str(cand), "--since", since,
                 "--json"]) == 0
    return {r["queue"]: r for r in json.loads(capsys.readouterr().out)["queues"]}


def test_a_changed_weight_moves_that_queues_share_and_an_identical_candidate_moves_none(tmp_path, capsys):
    log = recorded(tmp_path)
    same = report(tmp_path, capsys, log, "1")
    assert set(same) == {"root.a", "root.b"}
    for row in same.values():
        assert row["live"] == row["candidate"], row  # an identical candidate: nothing moves
        assert row["recorded"]["containers"] > 0
        # the played live side is near what really happened (the model: mean lifetimes)
        assert abs(row["live"]["containers"] - row["recorded"]["containers"]) <= 0.1 * row["recorded"]["containers"]
    heavier = report(tmp_path, capsys, log, "3")
    a, b = heavier["root.a"], heavier["root.b"]
    assert a["live"] == same["root.a"]["live"] and a["recorded"] == same["root.a"]["recorded"]
    mem = "memory_mb"
    assert a["candidate"]["resource_seconds"][mem] > 1.3 * a["live"]["resource_seconds"][mem]
    assert b["candidate"]["resource_seconds"][mem] < 0.7 * b["live"]["resource_seconds"][mem]
    assert a["candidate"]["containers"] > 2 * b["candidate"]["containers"]  # weight 3 against 1 on a full cluster
    for side in ("live", "candidate"):
        assert a[side]["preemptions"] == b[side]["preemptions"] == 0


def test_the_report_prints_a_table_and_bad_input_is_one_line(tmp_path, capsys):
    log = recorded(tmp_path)
    cand = tmp_path / "cand.xml"
    cand.write_text(ALLOC.format(a="3"))
    capsys.readouterr()
    assert main(["shadow", "report", "--event-log", str(log), "--candidate", str(cand), "--since", "2m"]) == 0
    out = capsys.readouterr().out
    assert "root.a" in out and "root.b" in out and "played under the live file" in out and "rec / live / cand" in out
    plain = tmp_path / "plain.jsonl"
    plain.write_text('{"event": "assign"}\n')
    for argv, words in ((["--event-log", str(plain)], "--record"),
                        (["--event-log", str(tmp_path / "none.jsonl")], "cannot read"),
                        (["--event-log", str(log), "--since", "soon"], "--since soon"),
                        (["--event-log", str(log), "--max-bytes", "10"], "over the"),
                        (["--event-log", str(log), "--max-cpu", "0"], "CPU bound")):
        assert main(["shadow", "report", "--candidate", str(cand), *argv]) == 1
        err = capsys.readouterr().err
        assert words in err and len(err.strip().splitlines()) == 1, err
    assert main(["shadow", "report", "--candidate", str(cand)]) == 2
    assert "--event-log" in capsys.readouterr().err


def test_without_a_candidate_it_reports_the_file_the_servers_shadow_runs(tmp_path, capsys, monkeypatch):
    from slotwise import client

    log = recorded(tmp_path)
    cand = tmp_path / "running.xml"
    cand.write_text(ALLOC.format(a="3"))
    asked = []

    def fake_call(server, path):
        asked.append((server, path))
        return {"state": "running", "file": str(cand)}

    monkeypatch.setattr(client, "call", fake_call)
    capsys.readouterr()
    assert main(["shadow", "report", "--event-log", str(log), "--since", "2m", "--server", "http://rm:8088",
                 "--json"]) == 0
    assert asked == [("http://rm:8088", "/api/v1/shadow")]
    assert json.loads(capsys.readouterr().out)["candidate"] == str(cand)
    monkeypatch.setattr(client, "call", lambda server, path: {"state": "off", "file": None})
    assert main(["shadow", "report", "--event-log", str(log), "--server", "http://rm:8088"]) == 2
    assert "--candidate" in capsys.readouterr().err


# ------------------------------------------------------------ serve's report: a child process
def _played(log, weight: str, since: float, name: str = "cand.xml") -> dict:
    """The report played in this process, as JSON gives it back."""
    from slotwise.config import parse_allocations
    from slotwise.shadow_report import report

    return json.loads(json.dumps(report(str(log), parse_allocations(ALLOC.format(a=weight), name), since)))


def _child(argv, text: str = ""):
    import os
    import subprocess
    import sys

    import slotwise

    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(slotwise.__file__))}
    return subprocess.run([sys.executable, "-m", "slotwise.shadow_report", *argv], input=text.encode(),
                          capture_output=True, env=env, timeout=300)


def test_the_child_prints_the_report_as_json_and_bad_input_as_one_line(tmp_path):
    log = recorded(tmp_path)
    done = _child(["--event-log", str(log), "--candidate", "-", "--name", "cand.xml", "--since", "120"],
                  ALLOC.format(a="3"))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == _played(log, "3", 120)
    plain = tmp_path / "plain.jsonl"
    plain.write_text('{"event": "assign"}\n')
    for argv, text, words in (([f"--event-log={plain}", "--candidate=-"], ALLOC.format(a="3"), "--record"),
                              ([f"--event-log={log}", "--candidate=-", "--name=bad.xml"],
                               "<allocations><queue name='x'><weight>-1</weight>", "bad.xml:1"),
                              ([f"--event-log={log}", f"--candidate={tmp_path / 'none.xml'}"], "", "none.xml"),
                              ([f"--event-log={log}", "--candidate=-", "--since=0"], ALLOC.format(a="3"), "--since")):
        done = _child(argv, text)
        err = done.stderr.decode()
        assert done.returncode == 1 and done.stdout == b"", err
        assert words in err and len(err.strip().splitlines()) == 1, err


def _serve(tmp_path, log, record: bool = True):
    """serve's web app as serve wires it: a core that records inputs (or
    not) and a shadow service whose report plays ``log``."""
    import webtools
    from slotwise.admin import AdminToken, SchedulerService
    from slotwise.clock import ManualClock
    from slotwise.config.watcher import load_with_status
    from slotwise.core import PolicyCore
    from slotwise.eventlog import EventLog
    from slotwise.serve import start_http
    from slotwise.shadow_service import ShadowService
    from slotwise.web.app import create_app

    live = tmp_path / "served.xml"
    live.write_text(ALLOC.format(a="1"))
    config, status = load_with_status(str(live))
    core = PolicyCore(config, clock=ManualClock(100.0), event_log=EventLog(str(tmp_path / "served.jsonl")),
                      record_inputs=record)
    service = ShadowService(core, str(live), log_path=str(log))
    port = webtools.free_port()
    server = start_http(create_app(SchedulerService(core, status, webtools.FakeRM()),
                                   AdminToken(webtools.TOKEN), shadow=service), "127.0.0.1", port)
    return f"http://127.0.0.1:{port}", service, server


def test_serve_reports_its_shadows_candidate_in_a_child_and_keeps_the_answer_a_minute(tmp_path, monkeypatch):
    import httpx

    from slotwise import shadow_service

    log = recorded(tmp_path)
    url, service, server = _serve(tmp_path, log)
    at = url + "/api/v1/shadow/report"
    import webtools

    auth = {"Authorization": f"Bearer {webtools.TOKEN}"}
    try:
        assert httpx.get(at, timeout=60).status_code == 401  # admin: it costs minutes of a core
        none = httpx.get(at, headers=auth, timeout=60)
        assert none.status_code == 409 and none.json() == {"detail": "no shadow runs: start one first"}
        service.start_text(ALLOC.format(a="3"), "cand.xml")
        for since in ("soon", "0", "604801", "nan"):
            bad = httpx.get(at, headers=auth, params={"since": since}, timeout=60)
            assert bad.status_code == 400 and f"since={since}:" in bad.json()["detail"], bad.text
        assert service.reports_played == 0
        ok = httpx.get(at, headers=auth, params={"since": "120"}, timeout=300)
        assert ok.status_code == 200, ok.text
        assert ok.json() == _played(log, "3", 120)
        assert service.reports_played == 1
        again = httpx.get(at, headers=auth, params={"since": "120.3"}, timeout=60)  # the same question, rounded: kept
        assert again.json() == ok.json() and service.reports_played == 1
        service._reporting.acquire()  # as while another report plays
        try:
            busy = httpx.get(at, headers=auth, params={"since": "90"}, timeout=60)
            assert busy.status_code == 409 and "under way" in busy.json()["detail"]
        finally:
            service._reporting.release()
        monkeypatch.setattr(shadow_service, "CHILD_WALL_S", 0.05)
        slow = httpx.get(at, headers=auth, params={"since": "90"}, timeout=60)
        assert slow.status_code == 504 and "took over" in slow.json()["detail"], slow.text
        monkeypatch.undo()
        plain = tmp_path / "plain.jsonl"
        plain.write_text('{"event": "assign"}\n')
        service.log_path = str(plain)
        failed = httpx.get(at, headers=auth, params={"since": "60"}, timeout=300)
        assert failed.status_code == 500, failed.text
        assert failed.json()["detail"] == (f"{plain}: no inputs recorded: serve must run with --record for a "
                                           "shadow report")
        assert service.reports_played == 3  # the good one, the one stopped, the one failed
    finally:
        service.close()
        server.should_exit = True


def test_serve_that_records_no_inputs_says_how_to_start_it(tmp_path):
    import httpx

    url, service, server = _serve(tmp_path, tmp_path / "events.jsonl", record=False)
    try:
        service.start_text(ALLOC.format(a="3"), "cand.xml")
        import webtools

        r = httpx.get(url + "/api/v1/shadow/report", headers={"Authorization": f"Bearer {webtools.TOKEN}"},
                      timeout=60)
        assert r.status_code == 409
        assert r.json() == {"detail": "serve records no inputs: start serve with --record --event-log FILE"}
        assert service.reports_played == 0
    finally:
        service.close()
        server.should_exit = True


def test_the_cli_asks_the_server_without_an_event_log(tmp_path, capsys):
    log = recorded(tmp_path)
    url, service, server = _serve(tmp_path, log)
    import webtools

    token = tmp_path / "admin.token"
    token.write_text(webtools.TOKEN + "\n")
    token.chmod(0o600)
    try:
        capsys.readouterr()
        assert main(["shadow", "report", "--server", url, "--since", "2m", "--admin-token-file",
                     str(tmp_path / "none.token")]) == 1
        assert "no admin token" in capsys.readouterr().err
        ask = ["shadow", "report", "--server", url, "--admin-token-file", str(token), "--since", "2m"]
        assert main(ask) == 1
        assert capsys.readouterr().err == "slotwise shadow report: no shadow runs: start one first\n"
        service.start_text(ALLOC.format(a="3"), "cand.xml")
        assert main([*ask, "--json"]) == 0
        assert json.loads(capsys.readouterr().out) == _played(log, "3", 120)
        assert main(ask) == 0  # kept: no second play
        out = capsys.readouterr().out
        assert out.startswith(f"{log}: the last ") and "under cand.xml" in out and "root.a" in out, out
        assert service.reports_played == 1
        assert main(["shadow", "report", "--server", url, "--since", "169h"]) == 1
        assert "--since 169h: from 1 s to 168 h" in capsys.readouterr().err
        assert main(["shadow", "report", "--server", url, "--candidate", str(tmp_path / "c.xml")]) == 2
        assert "--event-log" in capsys.readouterr().err
    finally:
        service.close()
        server.should_exit = True
