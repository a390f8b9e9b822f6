"""The delay-scheduling paper's experiments, as workloads plus a summary.

Every scenario is a list of experiments (a workload and the world it runs
in), each run once per policy variant; ``summarize`` turns the runs into
the report's tables.  ``scale`` shrinks a scenario (fewer jobs, a shorter
run) for quick looks and tests; 1.0 is the documented setup.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from . import metrics
from .results import Result, SimSettings
from .workload import ClusterSpec, JobSpec, Workload


@dataclass
class Experiment:
    key: dict  # what varies between experiments, e.g. {"job_maps": 3}
    workload: Workload
    sim: SimSettings


@dataclass
class Scenario:
    name: str
    description: str
    default_policies: tuple[str, ...]
    delay: float  # the "+delay" variants' T1 = T2, seconds
    experiments: object  # (seed, scale) -> list[Experiment]
    summarize: object  # (runs: list[(Experiment, Result)]) -> dict
    notes: list[str] = field(default_factory=list)


HEARTBEAT = 3.0  # Hadoop 0.20's minimum TaskTracker heartbeat interval


def _io_map_time(rng: random.Random) -> float:
    """An IO-heavy map reading one 128 MB block: ~10 s locally."""
    return rng.uniform(8.0, 12.0)


# ------------------------------------------------------------- small jobs
SMALL_SIZES = (3, 10, 100)


def _small_jobs(seed: int, scale: float) -> list[Experiment]:
    """100 nodes in 4 racks, 5 map slots each; for each job size, a stream
    of IO-heavy jobs of that size for ~15 minutes, keeping the map slots
    about half busy."""
    out = []
    duration = 900.0 * scale
    for size in SMALL_SIZES:
        rng = random.Random(f"{seed}-small-{size}")
        cluster = ClusterSpec(racks=4, nodes_per_rack=25, map_slots=5, reduce_slots=0)
        rate = 0.5 * 500 / (size * 10.0)  # jobs per second for ~50% of the map slots
        jobs, t, i = [], 0.0, 0
        while True:
            t += rng.expovariate(rate)
            if t > duration:
                break
            jobs.append(JobSpec(f"s{size}-{i:05d}", t, [_io_map_time(rng) for _ in range(size)],
                                user=f"user{i % 20:02d}", io=1.0, label=f"{size} maps", kind="io"))
            i += 1
        out.append(Experiment({"job_maps": size}, Workload(cluster, jobs, f"small-jobs-{size}"),
                              SimSettings(heartbeat_interval=HEARTBEAT, seed=seed)))
    return out


def _locality_row(key: str, exp: Experiment, res: Result, loc: dict) -> dict:
    """One run's row: its policy, what the experiment varies, its map locality."""
    return {"policy": res.label, key: exp.key[key], "node_local": round(loc["node_local"], 4),
            "rack_local": round(loc["rack_local"], 4)}


def _small_summary(runs) -> dict:
    rows = []
    for exp, res in runs:
        loc = metrics.overall_locality(res)
        rows.append({**_locality_row("job_maps", exp, res, loc), "off_rack": round(loc["off_rack"], 4),
                     "maps": loc["maps"], "jobs": len(res.jobs)})
    rows.sort(key=lambda r: (r["job_maps"], r["policy"]))
    return {"locality": rows, "paper": PAPER_SMALL_JOBS}


#: The paper's table (node-local, rack-local-or-better), fair sharing
#: without and with delay scheduling.
PAPER_SMALL_JOBS = [
    {"job_maps": 3, "fair": {"node_local": 0.02, "rack_local": 0.50},
     "fair+delay": {"node_local": 0.75, "rack_local": 0.94}},
    {"job_maps": 10, "fair": {"node_local": 0.37, "rack_local": 0.98},
     "fair+delay": {"node_local": 0.99, "rack_local": 0.99}},
    {"job_maps": 100, "fair": {"node_local": 0.84, "rack_local": 0.99},
     "fair+delay": {"node_local": 0.94, "rack_local": 0.99}},
]


# ----------------------------------------------------------- sticky slots
STICKY_CONCURRENCY = (5, 10, 20, 30, 50)


def _sticky_slots(seed: int, scale: float) -> list[Experiment]:
    """N large jobs at once on 100 nodes with 4 map slots each; every job's
    input is spread over the whole cluster, so locality is lost only to
    sticky slots."""
    out = []
    for n in STICKY_CONCURRENCY:
        rng = random.Random(f"{seed}-sticky-{n}")
        cluster = ClusterSpec(racks=4, nodes_per_rack=25, map_slots=4, reduce_slots=0)
        maps = max(4, math.ceil(4000 * scale / n))  # ~10 waves of each job's share of 400 slots
        jobs = [JobSpec(f"k{n}-{i:02d}", 0.0, [_io_map_time(rng) for _ in range(maps)],
                        user=f"user{i:02d}", io=1.0, label=f"{n} jobs", kind="io") for i in range(n)]
        out.append(Experiment({"concurrent_jobs": n}, Workload(cluster, jobs, f"sticky-{n}"),
                              SimSettings(heartbeat_interval=HEARTBEAT, seed=seed)))
    return out


def _sticky_summary(runs) -> dict:
    rows = [{**_locality_row("concurrent_jobs", exp, res, metrics.overall_locality(res)),
             "makespan": round(res.end_time, 1)} for exp, res in runs]
    rows.sort(key=lambda r: (r["concurrent_jobs"], r["policy"]))
    return {"sticky_slots": rows}


# ------------------------------------------------------------------ macro
#: The paper's 9 size bins: maps per job in the benchmark and how many of
#: its 100 jobs fell in each bin (from Facebook's job size distribution).
MACRO_BINS = [
    (1, 1, 38), (2, 2, 16), (3, 10, 14), (4, 50, 8), (5, 100, 6),
    (6, 200, 6), (7, 400, 4), (8, 800, 4), (9, 4800, 4),
]
MACRO_MEAN_INTERARRIVAL = 14.0  # seconds, Facebook's mean


def _macro_jobs(rng: random.Random, workload: str, scale: float) -> list[JobSpec]:
    """About 100 jobs in the 9 bins, shuffled, Poisson arrivals with the
    Facebook mean.  IO-heavy maps read a block (~10 s, all IO); CPU-heavy
    maps compute (~40 s, 10% IO); a mixed workload takes each at random.
    Jobs of 3 or more maps have reduces (a tenth of their maps, at least 1)."""
    sizes = [(b, m) for b, m, count in MACRO_BINS for _ in range(max(1, round(count * scale)))]
    rng.shuffle(sizes)
    jobs, t = [], 0.0
    for i, (b, m) in enumerate(sizes):
        if i:
            t += rng.expovariate(1.0 / MACRO_MEAN_INTERARRIVAL)
        maps = max(1, round(m * scale)) if b >= 3 else m
        kind = workload if workload != "mixed" else rng.choice(("io", "cpu"))
        if kind == "io":
            durations, io = [_io_map_time(rng) for _ in range(maps)], 1.0
            reduce_time = 20.0
        else:
            durations, io = [rng.uniform(30.0, 50.0) for _ in range(maps)], 0.1
            reduce_time = 30.0
        reduces = [rng.uniform(0.8, 1.2) * reduce_time for _ in range(max(1, maps // 10))] if maps >= 3 else []
        jobs.append(JobSpec(f"m{i:03d}", t, durations, reduces, user=f"user{i:03d}", io=io,
                            label=f"bin {b}", kind=kind))
    return jobs


MACRO_WORKLOADS = ("io", "cpu", "mixed")


def _macro(seed: int, scale: float) -> list[Experiment]:
    """100 nodes (4 racks), 4 map and 2 reduce slots each, as the paper's
    EC2 cluster of 4-core nodes."""
    out = []
    for w in MACRO_WORKLOADS:
        rng = random.Random(f"{seed}-macro-{w}")
        cluster = ClusterSpec(racks=4, nodes_per_rack=25, map_slots=4, reduce_slots=2)
        out.append(Experiment({"workload": w}, Workload(cluster, _macro_jobs(rng, w, scale), f"macro-{w}"),
                              SimSettings(heartbeat_interval=HEARTBEAT, seed=seed)))
    return out


def _macro_summary(runs) -> dict:
    by_workload: dict[str, dict[str, Result]] = {}
    for exp, res in runs:
        by_workload.setdefault(exp.key["workload"], {})[res.label] = res
    out = {"response_times": [], "speedup": [], "locality": []}
    for w, results in by_workload.items():
        base = results.get("fifo")
        base_rows = metrics.response_times(base) if base else None
        for policy, res in results.items():
            rt = metrics.response_times(res)
            for r in rt:
                out["response_times"].append({"workload": w, "policy": policy, "bin": r["group"],
                                              "jobs": r["jobs"], "mean": round(r["mean"], 2),
                                              "median": round(r["median"], 2)})
            if base_rows is not None and policy != "fifo":
                for r in metrics.speedups(rt, base_rows):
                    out["speedup"].append({"workload": w, "policy": policy, "bin": r["group"],
                                           "speedup_over_fifo": round(r["speedup"], 3)})
            for r in metrics.locality(res, key=lambda j: j.label):
                out["locality"].append({"workload": w, "policy": policy, "bin": r["group"],
                                        "node_local": round(r["node_local"], 4),
                                        "rack_local": round(r["rack_local"], 4)})
    return out


SCENARIOS = {
    "small-jobs": Scenario(
        "small-jobs", "Locality of IO-heavy jobs of 3, 10 and 100 maps (the paper's table)",
        ("fair", "fair+delay"), 5.0, _small_jobs, _small_summary),
    "sticky-slots": Scenario(
        "sticky-slots", "Locality with 5 to 50 concurrent large jobs (sticky slots)",
        ("fair", "fair+delay"), 5.0, _sticky_slots, _sticky_summary),
    "macro": Scenario(
        "macro", "About 100 jobs in 9 size bins, Facebook-like arrivals: IO-heavy, CPU-heavy, mixed",
        ("fifo", "fair", "fair+delay"), 5.0, _macro, _macro_summary),
}
