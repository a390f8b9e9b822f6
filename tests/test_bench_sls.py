"""The SLS benchmark's reading of serve's event log: each FIFO episode
counted once, though the shim may report it twice."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_sls.py"
spec = importlib.util.spec_from_file_location("bench_sls", BENCH)
bench = importlib.util.module_from_spec(spec)
sys.modules.setdefault("bench_sls", bench)
spec.loader.exec_module(bench)


def fallback(started: float, ended: float, count: int, reason: str) -> dict:
    return {"ts": ended + 0.1, "event": "fallback", "count": count, "seconds": round(ended - started, 3),
            "reason": reason, "started": started, "ended": ended}


def test_an_episode_reported_twice_counts_once(tmp_path):
    busy = "heartbeat: the previous call to Python is still running"
    late = "update: another call to Python holds the line past the deadline"
    records = [
        {"ts": 1.0, "event": "resync", "nodes": 0, "apps": 0, "containers": 0},
        fallback(10.0, 11.3, 0, late),
        fallback(20.0, 21.3, 100, busy),
        {"ts": 21.5, "event": "resync", "nodes": 5000, "apps": 42, "containers": 6902},
        # The call that carried it timed out in Java after Python had logged
        # it: the next payload carries it again (seen in a 5,000-node run).
        fallback(20.0, 21.3, 100, busy),
        fallback(30.0, 30.6, 200, busy),
        {"ts": 31.0, "event": "assign", "app": "a", "node": "n", "reason": "fallback"},
    ]
    events = tmp_path / "events.jsonl"
    events.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert bench.fallbacks(events) == (300, 3)
    assert bench.fifo_detail(events) == {"heartbeats": 300, "episodes": 3, "with_heartbeats": 2, "repeated": 1}


def test_no_event_log_no_episodes(tmp_path):
    assert bench.fallbacks(tmp_path / "missing.jsonl") == (0, 0)
    assert bench.fifo_detail(tmp_path / "missing.jsonl")["repeated"] == 0
