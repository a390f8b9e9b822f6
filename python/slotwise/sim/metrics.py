"""Figures from a run: locality, response times, shares, utilization.

``rack_local`` counts maps that ran on their data's rack *or better*, as
the delay-scheduling paper's table does; ``off_rack`` is the rest."""

from __future__ import annotations

import statistics

from .results import NODE, RACK, Result


def locality(result: Result, key=lambda job: job.maps) -> list[dict]:
    """Map locality fractions per group of jobs (by default their map count)."""
    groups: dict = {}
    jobs = result.jobs
    for t in result.tasks:
        if t.kind != "map":
            continue
        g = groups.setdefault(key(jobs[t.job]), [0, 0, 0])
        g[t.locality] += 1
    rows = []
    for k in sorted(groups, key=_sort_key):
        node, rack, off = groups[k]
        n = node + rack + off
        rows.append({"group": k, "maps": n, "node_local": node / n, "rack_local": (node + rack) / n,
                     "off_rack": off / n})
    return rows


def overall_locality(result: Result) -> dict:
    counts = [0, 0, 0]
    for t in result.tasks:
        if t.kind == "map":
            counts[t.locality] += 1
    n = sum(counts) or 1
    return {"maps": sum(counts), "node_local": counts[NODE] / n,
            "rack_local": (counts[NODE] + counts[RACK]) / n, "off_rack": counts[2] / n}


def response_times(result: Result, key=lambda job: job.label) -> list[dict]:
    """Job response time (submit to finish) per group: mean and median."""
    groups: dict = {}
    for j in result.jobs.values():
        if j.finish is not None:
            groups.setdefault(key(j), []).append(j.finish - j.submit)
    return [{"group": k, "jobs": len(v), "mean": statistics.fmean(v), "median": statistics.median(v)}
            for k, v in sorted(groups.items(), key=lambda kv: _sort_key(kv[0]))]


def speedups(rows: list[dict], baseline: list[dict]) -> list[dict]:
    """Mean response time of the baseline over ours, per group (>1: faster)."""
    base = {r["group"]: r["mean"] for r in baseline}
    return [{"group": r["group"], "speedup": base[r["group"]] / r["mean"]}
            for r in rows if r["group"] in base and r["mean"] > 0]


def time_to_fair_share(result: Result, within: float = 0.9) -> list[dict]:
    """For each queue: seconds from its first job's submission until its
    usage first reached ``within`` of its fair share (None: never sampled
    there).  How quickly a newcomer gets its due."""
    first_submit: dict[str, float] = {}
    for j in result.jobs.values():
        first_submit[j.queue] = min(j.submit, first_submit.get(j.queue, j.submit))
    reached: dict[str, float] = {}
    for t, queues, _busy in result.samples:
        for name, (used, fair) in queues.items():
            if name in reached or name not in first_submit or t < first_submit[name]:
                continue
            if fair > 0 and used >= within * fair:
                reached[name] = t - first_submit[name]
    return [{"queue": p, "submit": first_submit[p], "seconds": reached.get(p)} for p in sorted(first_submit)]


def utilization(result: Result) -> list[tuple[float, float]]:
    cap = result.total_slots or 1
    return [(t, busy / cap) for t, _queues, busy in result.samples]


def mean_utilization(result: Result) -> float:
    u = [x for _t, x in utilization(result)]
    return statistics.fmean(u) if u else 0.0


def summary(result: Result) -> dict:
    done = [j for j in result.jobs.values() if j.finish is not None]
    ttfs = [r["seconds"] for r in time_to_fair_share(result) if r["seconds"] is not None]
    return {
        "policy": result.label,
        "jobs": len(result.jobs), "jobs_finished": len(done),
        "makespan": result.end_time,
        "mean_response": statistics.fmean([j.finish - j.submit for j in done]) if done else None,
        "locality": overall_locality(result),
        "mean_utilization": mean_utilization(result),
        "time_to_fair_share_median": statistics.median(ttfs) if ttfs else None,
        "preempted_tasks": result.preempted, "lost_tasks": result.failed_tasks,
        "events": result.events, "engine_calls": result.engine_calls,
        **({"shadow": result.shadow} if result.shadow is not None else {}),
    }


def speed(result: Result) -> float | None:
    """Simulated seconds per wall-clock second (kept out of reports, which
    must not change from run to run)."""
    return result.end_time / result.wall_seconds if result.wall_seconds else None


def _sort_key(k):
    return (0, k, "") if isinstance(k, (int, float)) else (1, 0, str(k))
