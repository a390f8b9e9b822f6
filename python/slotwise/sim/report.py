"""A run's report on disk: report.json, report.md and PNG plots (sim/scenario_figures.py)."""

from __future__ import annotations

import json
import os


def write_report(out_dir: str, report: dict, runs) -> list[str]:
    """Writes everything; returns the paths written."""
    os.makedirs(out_dir, exist_ok=True)
    written = []
    path = os.path.join(out_dir, "report.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(report, f, indent=2, sort_keys=False)
        f.write("\n")
    written.append(path)
    plots = _plots(out_dir, report, runs)
    written += plots
    path = os.path.join(out_dir, "report.md")
    with open(path, "w", encoding="utf-8") as f:
        f.write(markdown(report, [os.path.basename(p) for p in plots]))
    written.append(path)
    return written


# --------------------------------------------------------------- markdown
def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def _table(header: list[str], rows: list[list]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out) + "\n"


def _natural(k) -> tuple:
    """"3 maps" before "10 maps"; numbers before names."""
    if isinstance(k, (int, float)):
        return (0, k, "")
    head = str(k).split(" ", 1)[0]
    try:
        return (0, float(head), str(k))
    except ValueError:
        return (1, 0, str(k))


def _trace_tables(report: dict) -> list[str]:
    """A trace run: response times per group (a job's label, else its
    queue) beside FIFO's, and map locality by job size."""
    order = {p: i for i, p in enumerate(report["policies"])}
    speedup = {(r["policy"], r["group"]): r["speedup"] for r in report.get("speedup", [])}
    fifo = "fifo" in order
    rows = [[r["group"], r["policy"], r["jobs"], f"{r['mean']:.1f}"]
            + ([f"{speedup[r['policy'], r['group']]:.2f}x" if (r["policy"], r["group"]) in speedup else "-"]
               if fifo else [])
            for r in sorted(report["response_times"],
                            key=lambda r: (_natural(r["group"]), order.get(r["policy"], len(order))))]
    out = ["## Response time by queue or label\n",
           "Submit to finish, for the jobs that finished, grouped by the trace's label of each job (its "
           "queue when it has none)."
           + (" Speed-up over FIFO: FIFO's mean over this policy's (above 1: faster).\n" if fifo else "\n"),
           _table(["queue or label", "policy", "jobs", "mean response s"]
                  + (["speed-up over FIFO"] if fifo else []), rows)]
    rows = [[r["job_maps"], r["policy"], _pct(r["node_local"]), _pct(r["rack_local"])]
            for r in sorted(report["locality"],
                            key=lambda r: (_natural(r["job_maps"]), order.get(r["policy"], len(order))))]
    out += ["## Locality by job size\n",
            "Of each size's maps: node-local ran on a node holding their input; rack-local counts those "
            "on the input's rack or better.\n",
            _table(["maps/job", "policy", "node-local", "rack-local"], rows)]
    return out


def markdown(report: dict, plots: list[str]) -> str:
    sc = report["scenario"]
    title = sc
    if sc == "trace":
        title = f"trace {os.path.basename(report.get('trace_file') or report.get('trace', ''))}".strip()
    lines = [f"# Simulation: {title}\n"]
    if report.get("description"):
        lines.append(f"{report['description']}\n")
    if sc == "trace":
        lines.append(f"Trace file: `{report.get('trace_file') or report.get('trace', '?')}`.\n")
    lines += [f"Seed {report['seed']}, scale {report.get('scale', 1.0)}, policies "
             f"{', '.join(report['policies'])}; delay scheduling waits {report['delay_seconds']} s "
             f"per level; heartbeats every {report['heartbeat_interval']} s.\n"]
    if sc == "trace":
        lines += _trace_tables(report)
    if sc == "small-jobs":
        paper = {r["job_maps"]: r for r in report["paper"]}
        rows = []
        for r in report["locality"]:
            p = paper.get(r["job_maps"], {}).get(r["policy"], {})
            rows.append([r["job_maps"], r["policy"], _pct(r["node_local"]), _pct(p.get("node_local")),
                         _pct(r["rack_local"]), _pct(p.get("rack_local")), r["jobs"]])
        lines += ["## Locality by job size\n",
                  "Rack-local counts maps on their data's rack or better, as the paper's table does.\n",
                  _table(["maps/job", "policy", "node-local", "paper", "rack-local", "paper", "jobs"], rows)]
    if sc == "sticky-slots":
        rows = [[r["concurrent_jobs"], r["policy"], _pct(r["node_local"]), _pct(r["rack_local"]), r["makespan"]]
                for r in report["sticky_slots"]]
        lines += ["## Locality by number of concurrent jobs\n",
                  _table(["jobs", "policy", "node-local", "rack-local", "makespan s"], rows)]
    if report.get("speedup") and sc != "trace":  # a trace's is in its response-time table
        key = "bin" if sc == "macro" else "group"
        rows = [[r.get("workload", ""), r["policy"], r.get(key, r.get("group")),
                 f"{r.get('speedup_over_fifo', r.get('speedup')):.2f}x"] for r in report["speedup"]]
        lines += ["## Speed-up over FIFO (mean response time)\n",
                  _table(["workload", "policy", "group", "speed-up"], rows)]
    if sc == "macro":
        rows = [[r["workload"], r["policy"], r["bin"], _pct(r["node_local"]), _pct(r["rack_local"])]
                for r in report["locality"]]
        lines += ["## Locality by bin\n", _table(["workload", "policy", "bin", "node-local", "rack-local"], rows)]
    rows = []
    for r in report["runs"]:
        key = " ".join(f"{k}={r[k]}" for k in ("job_maps", "concurrent_jobs", "workload", "trace") if k in r)
        if not key and sc == "trace":
            key = f"trace={report.get('trace', '')}"
        loc = r["locality"]
        rows.append([key, r["policy"], r["jobs_finished"], f"{r['makespan']:.0f}",
                     "-" if r["mean_response"] is None else f"{r['mean_response']:.1f}",
                     _pct(loc["node_local"]), _pct(r["mean_utilization"]),
                     "-" if r["time_to_fair_share_median"] is None else f"{r['time_to_fair_share_median']:.1f}"])
    lines += ["## Runs\n", "Time to fair share: median over queues of the time from a queue's first job "
              "to its usage reaching 90% of its fair share (5 s samples).\n",
              _table(["experiment", "policy", "jobs done", "makespan s", "mean response s", "node-local",
                      "utilization", "to fair share s"], rows)]
    if plots:
        lines.append("## Plots\n")
        lines += [f"![{p}]({p})\n" for p in plots]
    return "\n".join(lines)


# ------------------------------------------------------------------ plots
def _plots(out_dir: str, report: dict, runs) -> list[str]:
    from . import scenario_figures

    return scenario_figures.write_all(out_dir, scenario_figures.figures(report, runs))
