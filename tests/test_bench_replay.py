"""bench_replay times a recorded serve log through PolicyCore's JSON door."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

from slotwise.clock import ManualClock
from slotwise.config import parse_allocations
from slotwise.core import PolicyCore
from slotwise.eventlog import EventLog

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_replay.py"
spec = importlib.util.spec_from_file_location("bench_replay", BENCH)
bench = importlib.util.module_from_spec(spec)
sys.modules.setdefault("bench_replay", bench)
spec.loader.exec_module(bench)

XML = """<?xml version="1.0"?>
<allocations><queue name="prod"/><queue name="adhoc"/></allocations>
"""


def recorded_log(path: Path) -> int:
    """A served run in miniature, recorded: two nodes and an app, then beats. Returns its assignments."""
    clock = ManualClock(100.0)
    log = EventLog(str(path))
    core = PolicyCore(parse_allocations(XML, "alloc.xml"), clock=clock, event_log=log, record_inputs=True,
                      config_text=XML)
    nodes = [{"id": f"n{i}:1", "host": f"n{i}", "rack": "/r", "capacity": {"memory_mb": 4096, "vcores": 4}}
             for i in range(2)]
    app = {"id": "application_1_0001", "user": "ann", "queue": "root.prod", "priority": 0, "submit_ms": 1000,
           "requests": [{"priority": 20, "resource": {"memory_mb": 1024, "vcores": 1}, "count": 6}]}
    assigned = 0
    for i, msg in enumerate([{"full": True, "now_ms": 2000, "nodes": nodes, "apps": [app]},
                             {"now_ms": 3000, "beats": [{"node": "n0:1"}, {"node": "n1:1"}]}]):
        clock.set(101.0 + i)
        assigned += len(json.loads(core.heartbeat(json.dumps(msg))).get("assign") or [])
    clock.set(103.0)
    core.update(json.dumps({"now_ms": 4000}))
    log.close()
    return assigned


def test_replays_the_recorded_calls_and_counts_what_they_assign(tmp_path, capsys):
    events = tmp_path / "events.jsonl"
    live = recorded_log(events)
    assert live == 6
    texts, recording = bench.load(str(events), 3)
    assert [call for call, _t, _text in texts] == ["heartbeat", "heartbeat", "update"]
    got = bench.replay(texts, recording, None)
    assert (got["calls"], got["assigned"], got["errors"]) == (3, live, 0)
    assert set(got["by_kind"]) == {"heartbeat", "update"}
    assert bench.main([str(events), "--repeat", "2"]) == 0
    assert "assigned 6, refused 0" in capsys.readouterr().out


def test_protocol_1_payloads_for_an_older_tree():
    msg = {"now_ms": 1, "rejected": [{"engine_id": "e1", "reason": "locality"}],
           "apps_finished": [{"id": "a", "final_state": "SUCCEEDED"}],
           "apps": [{"id": "a", "requests": [{"priority": 1, "strict_racks": ["/r"]}]}]}
    old = bench._protocol_1(msg)
    assert old["rejected"] == ["e1"] and "apps_finished" not in old
    assert "strict_racks" not in old["apps"][0]["requests"][0]
