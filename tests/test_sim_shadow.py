"""``slotwise simulate ... --shadow FILE`` through its CLI (issue 42): two
weighted queues competing for a full cluster, a candidate that changes one
queue's weight diverges only in decisions that involve that queue, and an
identical candidate never diverges on the same workload."""

from __future__ import annotations

import json

import pytest

from slotwise.cli import main
from slotwise.eventlog import read_events

ALLOC = """<allocations>
  <queue name="a"><weight>{a}</weight></queue>
  <queue name="b"><weight>1</weight></queue>
  <queuePlacementPolicy><rule name="specified"/><rule name="default" queue="b"/></queuePlacementPolicy>
</allocations>
"""


def contended_trace(path) -> None:
    """32 containers (8 nodes of 4 GB, 4 vcores; 1 GB tasks) and two queues
    that each keep asking for more than the whole cluster for minutes: the
    weights alone decide who gets each container freed. Several jobs per
    queue arriving over time, so each queue holds more than one job."""
    lines = [{"cluster": {"racks": 2, "nodes_per_rack": 4, "node_memory_mb": 4096, "node_vcores": 4}}]
    for i in range(6):
        for q in "ab":
            lines.append({"job": f"{q}{i}", "submit": 10.0 * i + (1.0 if q == "b" else 0.0), "user": f"u{q}{i}",
                          "queue": q, "maps": 40, "map_time": 15.0 + 2 * i})
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")


def simulate(tmp_path, name: str, candidate_weight: str, capsys):
    trace = tmp_path / "trace.jsonl"
    contended_trace(trace)
    live, cand = tmp_path / "live.xml", tmp_path / f"{name}.xml"
    live.write_text(ALLOC.format(a="1"))
    cand.write_text(ALLOC.format(a=candidate_weight))
    log = tmp_path / f"{name}.events.jsonl"
    code = main(["simulate", "trace", "--trace", str(trace), "--policy", "fair", "--allocations", str(live),
                 "--shadow", str(cand), "--event-log", str(log), "--out", str(tmp_path / name), "-q", "--json"])
    assert code == 0
    out = capsys.readouterr().out
    report = json.loads(out[out.index("{"):])
    (run,) = report["runs"]
    return run["shadow"], [e for e in read_events(str(log)) if e["event"] == "shadow"]


def test_a_changed_weight_diverges_only_where_that_queue_is_involved(tmp_path, capsys):
    s, records = simulate(tmp_path, "heavier-a", "3", capsys)
    assert s["state"] == "running" and s["error"] is None and s["skipped"] == 0, s
    assert s["diverged"] > 0 and s["compared"] > s["diverged"], s
    heartbeats = [r for r in records if r["call"] == "heartbeat"]
    assert len(heartbeats) == s["diverged"]  # one shadow record per diverging heartbeat
    for r in heartbeats:
        # an assignment to root.a on one side, or one to root.b where the other side gave root.a
        sides = [x["queue"] for x in r["live"] + r["shadow"]]
        assert "root.a" in sides, r
        assert set(sides) <= {"root.a", "root.b"}, r
    # over the run, root.a weighing 3 takes more of the freed containers under the candidate
    to_a = sum(x["queue"] == "root.a" for r in heartbeats for x in r["shadow"])
    to_a_live = sum(x["queue"] == "root.a" for r in heartbeats for x in r["live"])
    assert to_a > to_a_live


def test_an_identical_candidate_on_the_same_workload_never_diverges(tmp_path, capsys):
    s, records = simulate(tmp_path, "same", "1", capsys)
    assert s["state"] == "running" and s["compared"] > 100, s
    assert s["diverged"] == 0 and s["updates_diverged"] == 0 and s["copies"] == 0, s
    assert records == []


@pytest.mark.parametrize("bad", ["<allocations><queue name='a'><weight>x</weight></queue></allocations>",
                                 "<allocations><queue name='a'>"])
def test_a_bad_shadow_file_is_refused_before_the_run(tmp_path, capsys, bad):
    trace = tmp_path / "trace.jsonl"
    contended_trace(trace)
    cand = tmp_path / "bad.xml"
    cand.write_text(bad)
    assert main(["simulate", "trace", "--trace", str(trace), "--policy", "fair", "--shadow", str(cand),
                 "--out", str(tmp_path / "o"), "-q"]) == 1
    assert "bad.xml:1" in capsys.readouterr().err
