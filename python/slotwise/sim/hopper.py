"""Hopper's comparison in the simulator (Ren et al., "Speculation-aware
Cluster Scheduling"): jobs with Facebook-like sizes (most jobs a few tasks,
a few jobs hundreds) and Pareto task times, Poisson arrivals at a load that
leaves the cluster short part of the time, every job speculating LATE-style.
The policies differ only in how the queue's slots are divided among jobs:

  fair+late      fair sharing, copies asked for like any task (best effort)
  srpt+late      smallest remaining work first, same speculation
  hopper         Algorithm 1 (epsilon 1), and epsilon 0.1 and 0 (Algorithm 2)
  fair           fair sharing without speculation (the baseline's baseline)

Then how the gain moves with the tail index beta and the load.  The same
engine, protocol path and plugins as ``slotwise serve``; only time is
simulated.
"""

from __future__ import annotations

import math
import random
import statistics
from dataclasses import dataclass

from ..config.model import AllocationConfig, QueueConfig, default_placement_rules
from ..policies.hopper import HopperSettings
from ..settings import EngineSettings
from .results import Result, SimSettings
from .simulator import Simulation
from .workload import ClusterSpec, JobSpec, Workload, pareto_draw

#: 25 nodes of 4 map slots: 100 slots.
CLUSTER = ClusterSpec(racks=1, nodes_per_rack=25, map_slots=4, reduce_slots=1)
SLOTS = CLUSTER.racks * CLUSTER.nodes_per_rack * CLUSTER.map_slots
HEARTBEAT = 3.0
#: Job sizes in tasks: (weight, low, high), after the Facebook trace's shape
#: (most jobs small, a few large) scaled to the cluster.
SIZE_MIX = ((0.50, 1, 10), (0.25, 11, 50), (0.17, 51, 150), (0.08, 151, 400))
BINS = ((1, 10, "1-10"), (11, 50, "11-50"), (51, 150, "51-150"), (151, 10**9, ">150"))
XM = 10.0  # the Pareto scale of task times, s
#: The longest a task may take: stragglers up to 30x the fastest (Facebook's
#: ran up to 8x slower than expected; an unbounded tail makes a few tasks of
#: hours that no scheduler can help).
UPPER = 30 * XM
BURST_PERIOD = 1800.0
BURST_HIGH, BURST_LOW = 1.6, 0.4


@dataclass(frozen=True)
class Setup:
    beta: float = 1.4
    load: float = 0.8
    jobs: int = 500
    seed: int = 0


@dataclass(frozen=True)
class Policy:
    name: str
    queue_policy: str
    speculation: str
    epsilon: float = 1.0


POLICIES = (
    Policy("fair+late", "fair", "late"),
    Policy("srpt+late", "srpt", "late"),
    Policy("hopper(eps=1)", "hopper", "late", 1.0),
    Policy("hopper(eps=0.1)", "hopper", "late", 0.1),
    Policy("hopper(eps=0)", "hopper", "late", 0.0),
    Policy("fair", "fair", "none"),
)
#: What every gain is measured against.
BASELINE = POLICIES[0].name


def mean_task_time(beta: float) -> float:
    """The bounded Pareto's mean."""
    lo, hi = XM, UPPER
    if beta == 1.0:
        return lo * math.log(hi / lo) / (1 - lo / hi)
    return (lo ** beta / (1 - (lo / hi) ** beta)) * beta / (beta - 1) * (lo ** (1 - beta) - hi ** (1 - beta))


def arrival_rate(t: float, base: float) -> float:
    """Bursts: BURST_HIGH x the mean rate for the first half of every
    BURST_PERIOD, BURST_LOW x for the second (mean: ``base``)."""
    return base * (BURST_HIGH if (t % BURST_PERIOD) < BURST_PERIOD / 2 else BURST_LOW)


def workload(setup: Setup) -> Workload:
    """Arrivals at a mean ``load`` (offered work over the cluster's slots,
    speculation aside) in bursts that leave the cluster short half of the
    time; map-only jobs, task times bounded Pareto(XM, beta, UPPER)."""
    rng = random.Random(f"hopper-{setup.seed}-{setup.beta}-{setup.load}")
    sizes = []
    for _ in range(setup.jobs):
        u = rng.random()
        for w, lo, hi in SIZE_MIX:
            if u < w:
                break
            u -= w
        size = round(math.exp(rng.uniform(math.log(lo), math.log(hi + 1)))) if hi > lo else lo
        sizes.append(min(max(size, lo), hi))
    mean_work = statistics.fmean(sizes) * mean_task_time(setup.beta)
    base = setup.load * SLOTS / mean_work  # jobs per second, on average
    t = 0.0
    jobs = []
    for n, size in enumerate(sizes):
        # A non-homogeneous Poisson process by thinning.
        peak = base * BURST_HIGH
        while True:
            t += rng.expovariate(peak)
            if rng.random() * peak <= arrival_rate(t, base):
                break
        maps = [pareto_draw(rng, XM, setup.beta, UPPER) for _ in range(size)]
        jobs.append(JobSpec(f"job{n:04d}", round(t, 3), maps, [], user="u", queue="root.jobs", io=0.0,
                            map_hosts=[()] * size, label=bin_of(size), tail=(XM, setup.beta, UPPER)))
    return Workload(CLUSTER, jobs, name=f"hopper-beta{setup.beta}-load{setup.load}")


def bin_of(size: int) -> str:
    for lo, hi, name in BINS:
        if lo <= size <= hi:
            return name
    return BINS[-1][2]


def config_for(queue_policy: str) -> AllocationConfig:
    cfg = AllocationConfig()
    cfg.placement_rules = default_placement_rules()
    cfg.root.children.append(QueueConfig("root.jobs", scheduling_policy=queue_policy))
    return cfg


def run(setup: Setup, policy: Policy, beta_known: bool = False) -> Result:
    """``beta_known``: Hopper is told beta; else it estimates it online."""
    services = {"hopper": HopperSettings(beta=setup.beta if beta_known else None, epsilon=policy.epsilon)}
    settings = EngineSettings(heartbeat_interval=HEARTBEAT, preemption=False, update_interval=1.0,
                              node_locality_delay=0, rack_locality_delay=0)
    sim = Simulation(workload(setup), settings, config_for(policy.queue_policy),
                     SimSettings(heartbeat_interval=HEARTBEAT, seed=setup.seed, sample_interval=30.0,
                                 speculation=policy.speculation, speculative_cap=1.0),
                     label=policy.name, services=services)
    res = sim.run()
    est = services.get("hopper_beta", {}).get("root.jobs")
    res.beta_estimate = est["beta"] if est and est["source"] == "estimated" else None
    return res


def jct_row(res: Result, name: str) -> dict:
    jcts = [j.finish - j.submit for j in res.jobs.values() if j.finish is not None]
    row = {"policy": name, "jobs": len(res.jobs), "finished": len(jcts)}
    row.update(_stats(jcts))
    row["bins"] = {}
    for _lo, _hi, b in BINS:
        xs = [j.finish - j.submit for j in res.jobs.values() if j.finish is not None and j.label == b]
        row["bins"][b] = {"jobs": len(xs), **_stats(xs)}
    row["speculative_copies"] = res.speculative
    row["copies_won"] = res.speculative_won
    row["copies_killed"] = res.copies_killed
    row["makespan_s"] = round(res.end_time, 1)
    if getattr(res, "beta_estimate", None) is not None:
        row["beta_estimate"] = round(res.beta_estimate, 3)
    return row


def _stats(xs: list[float]) -> dict:
    if not xs:
        return {"mean_jct": None, "p50_jct": None, "p90_jct": None}
    xs = sorted(xs)
    return {"mean_jct": round(statistics.fmean(xs), 2), "p50_jct": round(_pct(xs, 50), 2),
            "p90_jct": round(_pct(xs, 90), 2)}


def _pct(xs: list[float], p: float) -> float:
    k = (len(xs) - 1) * p / 100
    lo = math.floor(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def run_all(seed: int = 0, scale: float = 1.0, progress=None, sweeps: bool = True) -> dict:
    def step(msg):
        if progress:
            progress(msg)

    jobs = max(20, round(500 * scale))
    base = Setup(jobs=jobs, seed=seed)
    rows = []
    for p in POLICIES:
        step(f"{p.name} (beta {base.beta}, load {base.load})")
        rows.append(jct_row(run(base, p), p.name))
    by = {r["policy"]: r for r in rows}
    report = {
        "seed": seed, "scale": scale,
        "setup": {"slots": SLOTS, "nodes": CLUSTER.nodes_per_rack * CLUSTER.racks, "jobs": jobs,
                  "beta": base.beta, "x_m_s": XM, "load": base.load, "heartbeat_s": HEARTBEAT,
                  "size_mix": [{"weight": w, "tasks": [lo, hi]} for w, lo, hi in SIZE_MIX],
                  "burst": {"period_s": BURST_PERIOD, "high": BURST_HIGH, "low": BURST_LOW},
                  "task_time_upper_s": UPPER,
                  "speculation": "LATE-style, one copy per task, no cap"},
        "jct": rows,
        "gain_vs_fair_late": {r["policy"]: _gain(by[BASELINE]["mean_jct"], r["mean_jct"]) for r in rows},
    }
    if sweeps:
        compared = (POLICIES[0], POLICIES[1], POLICIES[2])  # fair+late, srpt+late, hopper(eps=1)
        for key, values in (("beta", (1.2, 1.4, 1.6)), ("load", (0.6, 0.8, 0.95))):
            rows = report[f"sweep_{key}"] = []
            for v in values:
                setup = Setup(jobs=jobs, seed=seed, **{key: v})
                step(f"{key} {v}")
                got = {p.name: jct_row(run(setup, p), p.name) for p in compared}
                rows.append({key: v, "mean_jct": {k: r["mean_jct"] for k, r in got.items()},
                             "hopper_reduction_vs_fair_late": _gain(got[BASELINE]["mean_jct"],
                                                                    got["hopper(eps=1)"]["mean_jct"]),
                             "beta_estimate": got["hopper(eps=1)"].get("beta_estimate")})
    return report


def _gain(base, x):
    """Fraction by which ``x`` is below ``base`` (0.5: half the time)."""
    if base in (None, 0) or x is None:
        return None
    return round(1.0 - x / base, 4)


# ------------------------------------------------------------------ report
def write(out_dir: str, report: dict) -> list[str]:
    import json
    import os

    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "report.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(report, f, indent=2)
        f.write("\n")
    written = [path]
    plots = _plots(out_dir, report)
    written += plots
    path = os.path.join(out_dir, "report.md")
    with open(path, "w", encoding="utf-8") as f:
        f.write(markdown(report, [os.path.basename(p) for p in plots]))
    written.append(path)
    return written


def _fmt(x, nd=1) -> str:
    return "-" if x is None else f"{x:.{nd}f}"


def markdown(report: dict, plots: list[str]) -> str:
    s = report["setup"]
    out = [f"# Hopper in the simulator (seed {report['seed']}, scale {report['scale']})\n",
           f"{s['nodes']} nodes, {s['slots']} slots; {s['jobs']} map-only jobs, Poisson arrivals at load "
           f"{s['load']}; task times Pareto(x_m {s['x_m_s']:g} s, beta {s['beta']}); speculation: "
           f"{s['speculation']}.\n",
           "| policy | mean JCT, s | p50 | p90 | vs fair+late | 1-10 tasks | 11-50 | 51-150 | >150 | copies (won) |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in report["jct"]:
        g = report["gain_vs_fair_late"][r["policy"]]
        bins = " | ".join(_fmt(r["bins"][b]["mean_jct"]) for _lo, _hi, b in BINS)
        out.append(f"| {r['policy']} | {_fmt(r['mean_jct'])} | {_fmt(r['p50_jct'])} | {_fmt(r['p90_jct'])} | "
                   f"{'-' if g is None or r['policy'] == BASELINE else f'{-100 * g:+.0f}%'} | {bins} | {r['speculative_copies']} "
                   f"({r['copies_won']}) |")
    for key, title in (("sweep_beta", "beta"), ("sweep_load", "load")):
        if key not in report:
            continue
        names = list(report[key][0]["mean_jct"])
        out += ["", f"| {title} | " + " | ".join(f"{n}, s" for n in names) + " | hopper vs fair+late | "
                "beta estimated online |", "|---" * (len(names) + 3) + "|"]
        for r in report[key]:
            red = r["hopper_reduction_vs_fair_late"]
            out.append(f"| {r[title]} | " + " | ".join(_fmt(r["mean_jct"][n]) for n in names)
                       + f" | {'-' if red is None else f'{-100 * red:+.0f}%'} | {_fmt(r['beta_estimate'], 2)} |")
    out += [""] + [f"![{p}]({p})" for p in plots]
    return "\n".join(out) + "\n"


def _plots(out_dir: str, report: dict) -> list[str]:
    from . import scenario_figures

    return scenario_figures.write_all(out_dir, figures(report))


def figures(report: dict) -> list[tuple[str, object]]:
    """(file name, Figure): axes labelled, legends outside the data (sim/scenario_figures.py)."""
    from .scenario_figures import grouped_bars, legend_outside, new_figure

    out = []
    fig, (ax,) = new_figure(width=8, height=3.8)
    labels = [b for _lo, _hi, b in BINS]
    grouped_bars(ax, labels, {r["policy"]: [r["bins"][b]["mean_jct"] or 0 for b in labels] for r in report["jct"]})
    ax.set_xlabel("job size (tasks)")
    ax.set_ylabel("mean completion time (s, log)")
    ax.set_yscale("log")
    ax.set_title("Mean job completion time by job size")
    legend_outside(fig, ax)
    out.append(("hopper-jct-by-size.png", fig))
    if "sweep_beta" in report:
        fig, (a1, a2) = new_figure(2, cols=2, width=8.5)
        for ax, key, xlabel in ((a1, "beta", "beta (tail index of task times)"), (a2, "load", "mean load")):
            rows = report[f"sweep_{key}"]
            xs = [r[key] for r in rows]
            for (name, style) in zip(rows[0]["mean_jct"], ("s-", "^-", "o-")):
                ax.plot(xs, [r["mean_jct"][name] for r in rows], style, label=name)
            ax.set_xlabel(xlabel)
            ax.set_ylabel("mean completion time (s)")
        fig.suptitle("Hopper's gain as task times and load vary")
        legend_outside(fig)
        out.append(("hopper-sweeps.png", fig))
    return out
