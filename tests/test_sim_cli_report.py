"""`slotwise simulate`: the policies it knows, and the trace report's tables."""

from __future__ import annotations

import json
import re

import pytest

from slotwise.cli import main
from slotwise.policies import base as policy_registry
from slotwise.policies import known_policy_names
from slotwise.sim.policies import known_variants
from slotwise.sim.traces import dump_jsonl
from slotwise.sim.workload import ClusterSpec, JobSpec, Workload
from test_sim_traces import SLS


def help_text(capsys, *argv) -> str:
    with pytest.raises(SystemExit) as e:
        main([*argv, "--help"])
    assert e.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    return re.sub(r"(\w)- (\w)", r"\1-\2", text)  # argparse wraps hyphenated names (dynamic-priority) at the hyphen


def test_simulate_help_lists_every_known_policy_and_its_delay_variant(capsys, monkeypatch):
    text = help_text(capsys, "simulate")
    names = known_policy_names()
    assert {"fifo", "fair", "drf"} <= set(names)
    for name in names:
        assert f" {name}," in text or f" {name} " in text
        assert f"{name}+delay" in text
    # A policy plugin (the slotwise.policies entry-point group) is listed too.
    monkeypatch.setitem(policy_registry._REGISTRY, "lottery", policy_registry._REGISTRY["fair"])
    assert "lottery, lottery+delay" in help_text(capsys, "simulate")


def test_an_unknown_policy_is_refused_with_the_known_ones_before_anything_runs(tmp_path, capsys):
    assert main(["simulate", "small-jobs", "--policy", "lottery", "--out", str(tmp_path / "a"), "-q"]) == 1
    err = capsys.readouterr().err
    assert "unknown policy 'lottery'" in err
    assert "(known: " + ", ".join(known_variants()) + ")" in err
    assert "fair+delay" in known_variants() and "fifo+delay" in known_variants()
    # A bad suffix, and a trace whose second policy is bad: nothing runs, no report.
    trace = tmp_path / "t.jsonl"
    dump_jsonl(two_queue_workload(), str(trace))
    assert main(["simulate", "trace", "--trace", str(trace), "--policy", "fair", "--policy", "fair+fast",
                 "--out", str(tmp_path / "b"), "-q"]) == 1
    err = capsys.readouterr().err
    assert "unknown policy 'fair+fast'" in err and "fair+delay" in err
    assert not (tmp_path / "b").exists()


def two_queue_workload() -> Workload:
    jobs = []
    for i in range(8):
        maps = 2 if i % 2 else 12
        jobs.append(JobSpec(f"j{i}", 2.0 * i, [6.0] * maps, [3.0], user=f"u{i % 2}",
                            queue="root.small" if maps == 2 else "root.big",
                            label="" if i < 4 else f"{maps} maps"))
    return Workload(ClusterSpec(racks=2, nodes_per_rack=3, map_slots=2, reduce_slots=1), jobs, "two")


def table(md: str, heading: str) -> list[list[str]]:
    """The rows of the markdown table under ``## heading``."""
    section = md.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    lines = [ln for ln in section.splitlines() if ln.startswith("|")]
    return [[c.strip() for c in ln.strip("|").split("|")] for ln in lines[2:]]


def test_trace_report_names_its_file_and_tabulates_response_times_and_locality(tmp_path, capsys):
    trace = tmp_path / "two-queues.jsonl"
    dump_jsonl(two_queue_workload(), str(trace))
    out = tmp_path / "out"
    assert main(["simulate", "trace", "--trace", str(trace), "--policy", "fifo", "--policy", "fair+delay",
                 "--out", str(out), "-q"]) == 0
    report = json.loads((out / "report.json").read_text())
    md = (out / "report.md").read_text()
    assert md.startswith("# Simulation: trace two-queues.jsonl\n")
    assert f"Trace file: `{trace}`" in md
    assert report["trace_file"] == str(trace)

    # Response times: one row per (group, policy), labels where jobs have one, else the queue.
    rows = table(md, "Response time by queue or label")
    groups = [r[0] for r in rows]
    assert set(groups) == {"root.big", "root.small", "2 maps", "12 maps"}
    assert groups.index("2 maps") < groups.index("12 maps")  # by number, not as text
    by_key = {(r[0], r[1]): r for r in rows}
    assert len(by_key) == len(report["response_times"]) == 8
    for r in report["response_times"]:
        row = by_key[r["group"], r["policy"]]
        assert row[2] == str(r["jobs"]) and row[3] == f"{r['mean']:.1f}"
        assert row[4] == ("-" if r["policy"] == "fifo" else
                          f"{next(s['speedup'] for s in report['speedup'] if s['policy'] == r['policy'] and s['group'] == r['group']):.2f}x")
    assert sum(int(r[2]) for r in rows if r[1] == "fifo") == 8  # every job, once

    # Locality by job size: maps per job, both policies, as the report has them.
    rows = table(md, "Locality by job size")
    assert [(r[0], r[1]) for r in rows] == [("2", "fifo"), ("2", "fair+delay"), ("12", "fifo"), ("12", "fair+delay")]
    for r in report["locality"]:
        row = next(x for x in rows if x[0] == str(r["job_maps"]) and x[1] == r["policy"])
        assert row[2] == f"{100 * r['node_local']:.0f}%" and row[3] == f"{100 * r['rack_local']:.0f}%"
    # The runs table says which trace, not an empty cell.
    assert all(r[0] == "trace=two-queues" for r in table(md, "Runs"))


def test_sls_trace_report_groups_by_queue_and_leaves_out_speedups_without_fifo(tmp_path):
    trace = tmp_path / "inputsls.json"
    trace.write_text(SLS)
    assert main(["simulate", "trace", "--trace", str(trace), "--policy", "fair", "--out", str(tmp_path / "o"),
                 "-q"]) == 0
    md = (tmp_path / "o" / "report.md").read_text()
    assert f"`{trace}`" in md
    rows = table(md, "Response time by queue or label")
    assert [r[:3] for r in rows] == [["root.sls_queue_1", "fair", "1"], ["root.sls_queue_2", "fair", "1"]]
    assert all(len(r) == 4 for r in rows) and "speed-up" not in md
    assert [r[0] for r in table(md, "Locality by job size")] == ["2", "3"]


def test_json_prints_the_report_itself_on_stdout_and_still_writes_the_files(tmp_path, capsys):
    trace = tmp_path / "two-queues.jsonl"
    dump_jsonl(two_queue_workload(), str(trace))
    out = tmp_path / "out"
    assert main(["simulate", "trace", "--trace", str(trace), "--policy", "fair", "--out", str(out), "-q",
                 "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["runs"] == json.loads((out / "report.json").read_text())["runs"]
    assert str(out / "report.json") in " ".join(printed["written"])
