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
