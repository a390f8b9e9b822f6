"""The Dynamic Priority paper's experiments (Sandholm and Lai, section 4) in
the simulator: Pi-like jobs whose maps are as many as the cluster's map
slots, a continuous stream per user (each user submits its next job when
the last one finishes), one queue per user under a ``dynamic-priority``
root.  The market is the one ``slotwise serve`` runs, shared by the map and
reduce engines through the simulation's services; only time is simulated.

Experiments:
  two_users      budgets 1,000 and 10,000, queue 1 spending twice queue 2,
                 no preemption, until queue 1's budget runs out; then both
                 budgets reset to 10,000 and preemption on; FIFO and fair
                 sharing (weights 2:1) on the same streams for comparison
  service_levels 10 users, queue n spending n (granted n / 55); 80 users
                 likewise (n / 3,240); FIFO and fair (weights n) beside
  boost          10 users, 10 jobs each in sequence, user n spending 4x on
                 its n-th job; with preemption and without (the overhead)
"""

from __future__ import annotations

import random
import statistics
from dataclasses import dataclass, field

from ..config.model import AllocationConfig, QueueConfig, default_placement_rules
from ..market import Market, MarketSettings
from ..settings import EngineSettings
from .results import JobRecord, Result, SimSettings
from .simulator import Simulation
from .workload import ClusterSpec, JobSpec, Workload

#: 10 TaskTrackers with 4 map slots and 1 reduce slot: 40 map slots.
CLUSTER = ClusterSpec(racks=1, nodes_per_rack=10, map_slots=4, reduce_slots=1)
MAP_SLOTS = CLUSTER.racks * CLUSTER.nodes_per_rack * CLUSTER.map_slots
INTERVAL = 20.0
GRACE = 60.0  # the paper's "60s preemption"
HEARTBEAT = 3.0
#: Jobs each user of the two-user and service-level runs keeps in flight.
IN_FLIGHT = 4


def pi_job(job_id: str, user: str, submit: float, rng: random.Random, map_time: float) -> JobSpec:
    """As many CPU-bound maps as the cluster has map slots (no input to
    read, so no locality), and one short reduce."""
    maps = [map_time * rng.uniform(0.9, 1.1) for _ in range(MAP_SLOTS)]
    return JobSpec(job_id, submit, maps, [max(1.0, map_time / 12)], user=user, queue=f"root.{user}", io=0.0,
                   map_hosts=[()] * MAP_SLOTS, label=user)


def config_for(users: list[str], weights: dict[str, float] | None = None) -> AllocationConfig:
    """One queue per user under root (the root's policy is the run's)."""
    cfg = AllocationConfig()
    cfg.placement_rules = default_placement_rules()
    for u in users:
        cfg.root.children.append(QueueConfig(f"root.{u}", weight=(weights or {}).get(u, 1.0)))
    return cfg


@dataclass
class Streams:
    """Closed-loop job streams: each user's next job when its last finishes.
    ``jobs_per_user``: stop after that many (None: until the horizon)."""

    users: list[str]
    map_time: float
    horizon: float
    seed: int
    jobs_per_user: int | None = None
    #: Jobs each user keeps in flight: with one, a job's last wave leaves
    #: slots to the other users whatever they pay, and shares blur.
    in_flight: int = 1
    #: (sim, user, job index) -> None, when a user submits a job
    on_submit: object = None
    #: (sim, record) -> None, when a job finishes
    on_finish: object = None
    count: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.rng = random.Random(f"dp-{self.seed}")

    def first(self) -> list[JobSpec]:
        return [self._job(u, 0.0) for _ in range(self.in_flight) for u in self.users]

    def _job(self, user: str, t: float) -> JobSpec:
        n = self.count[user] = self.count.get(user, 0) + 1
        return pi_job(f"{user}-{n:03d}", user, t, self.rng, self.map_time)

    def start(self, sim: Simulation) -> None:
        if self.on_submit:
            for u in self.users:
                for k in range(1, self.in_flight + 1):
                    self.on_submit(sim, u, k)

    def complete(self, sim: Simulation, rec: JobRecord) -> None:
        if self.on_finish:
            self.on_finish(sim, rec)
        user = rec.label
        now = sim.clock.now()
        if now >= self.horizon or (self.jobs_per_user and self.count[user] >= self.jobs_per_user):
            return
        spec = self._job(user, now)
        if self.on_submit:
            self.on_submit(sim, user, self.count[user])
        sim.submit(spec)


def run(streams: Streams, policy: str, market: Market | None = None, weights=None,
        actions=()) -> tuple[Result, Market | None]:
    """One run of ``streams`` under root policy ``policy``."""
    services = {"market": market} if market is not None else {}
    workload = Workload(CLUSTER, streams.first(), name="pi-streams")
    settings = EngineSettings(heartbeat_interval=HEARTBEAT, preemption=False, update_interval=1.0,
                              root_policy=policy, node_locality_delay=0, rack_locality_delay=0)
    sim = Simulation(workload, settings, config_for(streams.users, weights),
                     SimSettings(heartbeat_interval=HEARTBEAT, until=streams.horizon * 1.5, seed=streams.seed,
                                 sample_interval=10.0),
                     label=policy, services=services, on_complete=streams.complete)
    streams.start(sim)
    for when, action in actions:
        sim.at(when, action)
    return sim.run(), market


def new_market(preemption: bool, budgets: dict[str, float], rates: dict[str, float]) -> Market:
    m = Market(MarketSettings(interval=INTERVAL, preemption=preemption, grace=GRACE, slot_memory_mb=1,
                              slot_vcores=1))
    m.ensure(f"root.{u}" for u in budgets)
    for u in budgets:
        m.add_budget(u, budgets[u])
        m.set_spending(u, rates[u])
        m.accounts[f"root.{u}"].rate = rates[u]
    return m


# ------------------------------------------------------------- the metrics
def completions(res: Result, user: str, start: float = 0.0, end: float = float("inf")) -> list[tuple[float, float]]:
    """(finish time, completion time) of the user's jobs submitted in [start, end)."""
    return sorted((j.finish, j.finish - j.submit) for j in res.jobs.values()
                  if j.label == user and j.finish is not None and start <= j.submit < end)


def mean_completion(res: Result, user: str, start: float = 0.0, end: float = float("inf")) -> float | None:
    xs = [c for _f, c in completions(res, user, start, end)]
    return statistics.fmean(xs) if xs else None


def obtained_share(res: Result, user: str, until: float) -> float:
    """Time-averaged fraction of the map slots the user held while it had
    work (its streams never stop, so: from 0 to ``until``)."""
    busy = sum(min(t.end, until) - t.start for t in res.tasks
               if t.kind == "map" and t.job.startswith(user + "-") and t.start < until)
    return busy / (MAP_SLOTS * until)


def spending(market: Market) -> dict[str, list[tuple[float, float, float]]]:
    """Per queue: (interval end, amount charged, budget after)."""
    out: dict[str, list] = {}
    for h in market.history(10 ** 6):
        for c in h["charges"]:
            out.setdefault(c["queue"].rsplit(".", 1)[-1], []).append((h["end"], c["amount"], c["budget"]))
    return out


# ------------------------------------------------------------ experiments
def two_users(seed: int, scale: float) -> dict:
    """Section 4.2, Figures 3 and 4."""
    users = ["queue1", "queue2"]
    map_time = 60.0
    phase = 5000.0 * scale
    rates = {"queue1": 0.25, "queue2": 0.125}
    market = new_market(False, {"queue1": 1000.0 * scale, "queue2": 10000.0}, rates)
    out: dict = {}

    def reset(sim):
        for u in users:
            a = market.accounts[f"root.{u}"]
            market.add_budget(u, 10000.0 - a.budget)
        market.settings.preemption = True

    res, _ = run(Streams(users, map_time, 2 * phase, seed, in_flight=IN_FLIGHT), "dynamic-priority", market,
                 actions=[(phase, reset)])
    charges = spending(market)
    ran_out = next((t for t, _a, b in charges.get("queue1", []) if b <= 0), None)
    before = ran_out if ran_out is not None else phase

    def total(u, lo, hi):
        return sum(a for t, a, _b in charges.get(u, []) if lo < t <= hi)

    p1 = {u: mean_completion(res, u, 0, before) for u in users}
    broke = {u: mean_completion(res, u, before, phase) for u in users}
    p2 = {u: mean_completion(res, u, phase + 600, 2 * phase) for u in users}
    out["dynamic_priority"] = {
        "spending_ratio_q1_q2": _ratio(total("queue1", 0, before), total("queue2", 0, before)),
        "queue1_budget_ran_out_s": ran_out,
        "mean_completion_s": {"funded": p1, "queue1_out_of_budget": broke, "reset_with_preemption": p2},
        "completion_ratio_q1_q2_after_reset": _ratio(p2["queue1"], p2["queue2"]),
        "spending_ratio_q1_q2_after_reset": _ratio(total("queue1", phase, 2 * phase), total("queue2", phase, 2 * phase)),
        "phase_s": phase,
    }
    out["series"] = {"budgets": {u: [(t, b) for t, _a, b in v] for u, v in charges.items()},
                     "completions": {u: completions(res, u) for u in users}, "phase_s": phase,
                     "ran_out_s": ran_out}
    for name, policy, w in (("fifo", "fifo", None), ("fair", "fair", {"queue1": 2.0, "queue2": 1.0})):
        r, _ = run(Streams(users, map_time, 2 * phase, seed, in_flight=IN_FLIGHT), policy, weights=w)
        out[name] = {"mean_completion_s": {u: mean_completion(r, u, 600) for u in users}}
        out[name]["completion_ratio_q1_q2"] = _ratio(out[name]["mean_completion_s"]["queue1"],
                                                   out[name]["mean_completion_s"]["queue2"])
        out["series"].setdefault("other", {})[name] = {u: completions(r, u) for u in users}
    return out


def service_levels(seed: int, scale: float, n_users: int, map_time: float, horizon: float) -> dict:
    """Section 4.3, Figures 5 to 9: queue n spends n."""
    users = [f"queue{n}" for n in range(1, n_users + 1)]
    total = n_users * (n_users + 1) / 2
    rates = {u: float(n) for n, u in enumerate(users, 1)}
    horizon *= scale
    rows = {}
    runs = {}
    for name, policy in (("dynamic-priority", "dynamic-priority"), ("fair", "fair"), ("fifo", "fifo")):
        market = new_market(True, {u: 1e12 for u in users}, rates) if policy == "dynamic-priority" else None
        res, _ = run(Streams(users, map_time, horizon, seed, in_flight=IN_FLIGHT), policy, market,
                     weights=rates if policy == "fair" else None)
        runs[name] = res
        rows[name] = [{"queue": u, "spending_rate": rates[u], "granted_share": round(rates[u] / total, 5),
                       "obtained_share": round(obtained_share(res, u, horizon), 5),
                       "mean_response_s": _round(mean_completion(res, u)),
                       "jobs_done": len(completions(res, u))} for u in users]
    return {"rows": rows, "horizon_s": horizon, "map_time_s": map_time}


def boost(seed: int, scale: float) -> dict:
    """Section 4.4, Figures 10 and 11: user n spends 4x on its n-th job."""
    users = [f"queue{n}" for n in range(1, 11)]
    jobs = 10
    map_time = 30.0 * max(scale, 0.2)
    out = {}
    for preempt in (True, False):
        market = new_market(preempt, {u: 1e12 for u in users}, {u: 1.0 for u in users})

        def on_submit(sim, user, k, market=market):
            n = int(user[5:])
            market.set_spending(user, 4.0 if k == n else 1.0)

        res, _ = run(Streams(users, map_time, 1e9, seed, jobs_per_user=jobs, on_submit=on_submit),
                     "dynamic-priority", market)
        boosted, normal = [], []
        for u in users:
            n = int(u[5:])
            for (_f, c), k in zip(completions(res, u), range(1, jobs + 1)):
                (boosted if k == n else normal).append(c)
        out["preemption" if preempt else "no_preemption"] = {
            "mean_boosted_s": _round(statistics.fmean(boosted)), "mean_other_s": _round(statistics.fmean(normal)),
            "speedup": _round(statistics.fmean(normal) / statistics.fmean(boosted)),
            "mean_completion_s": _round(statistics.fmean(boosted + normal)),
            "makespan_s": _round(max(j.finish for j in res.jobs.values())),
            "tasks_preempted": res.preempted,
            "per_job": {u: [_round(c) for _f, c in completions(res, u)] for u in users}}
    a, b = out["preemption"], out["no_preemption"]
    out["preemption_overhead"] = {
        "mean_completion_increase": _round(a["mean_completion_s"] / b["mean_completion_s"] - 1, 4),
        "throughput_loss": _round(1 - b["makespan_s"] / a["makespan_s"], 4)}
    return out


def run_all(seed: int = 0, scale: float = 1.0, progress=None) -> dict:
    def step(msg):
        if progress:
            progress(msg)

    report = {"scenario": "dynamic-priority", "seed": seed, "scale": scale,
              "cluster": {"task_trackers": CLUSTER.nodes_per_rack * CLUSTER.racks, "map_slots": MAP_SLOTS,
                          "reduce_slots": CLUSTER.nodes_per_rack * CLUSTER.racks * CLUSTER.reduce_slots},
              "allocation_interval_s": INTERVAL, "preemption_grace_s": GRACE}
    step("two users")
    report["two_users"] = two_users(seed, scale)
    step("10 users")
    ten = service_levels(seed, scale, 10, 60.0, 12000.0)
    report["service_levels"] = ten["rows"]["dynamic-priority"]
    report["service_levels_compared"] = ten
    step("80 users")
    eighty = service_levels(seed, scale, 80, 6.0, 24000.0)
    report["service_levels_80"] = eighty["rows"]["dynamic-priority"]
    report["service_levels_80_compared"] = eighty
    step("boost")
    report["boost"] = boost(seed, scale)
    return report


def _ratio(a, b):
    return None if a is None or b in (None, 0) else round(a / b, 4)


def _round(x, nd: int = 2):
    return None if x is None else round(x, nd)


# ------------------------------------------------------------------ report
def write(out_dir: str, report: dict) -> list[str]:
    """report.json (figures), report.md (tables) and PNG plots beside the paper's figures."""
    import json
    import os

    os.makedirs(out_dir, exist_ok=True)
    series = report["two_users"].pop("series", None)
    written = []
    path = os.path.join(out_dir, "report.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(report, f, indent=2)
        f.write("\n")
    written.append(path)
    plots = _plots(out_dir, report, series) if series else []
    written += plots
    path = os.path.join(out_dir, "report.md")
    with open(path, "w", encoding="utf-8") as f:
        f.write(markdown(report, [os.path.basename(p) for p in plots]))
    written.append(path)
    if series is not None:
        report["two_users"]["series"] = series
    return written


def _fmt(x, nd=1) -> str:
    return "-" if x is None else f"{x:.{nd}f}"


def markdown(report: dict, plots: list[str]) -> str:
    t = report["two_users"]
    d = t["dynamic_priority"]
    mc = d["mean_completion_s"]
    out = [f"# Dynamic Priority in the simulator (seed {report['seed']}, scale {report['scale']})\n",
           f"{report['cluster']['task_trackers']} TaskTrackers, {report['cluster']['map_slots']} map slots; "
           f"allocation interval {report['allocation_interval_s']:g} s; preemption grace "
           f"{report['preemption_grace_s']:g} s.\n",
           "## Two users (Figures 3 and 4)\n",
           f"- spending ratio queue1/queue2 while both are funded: {_fmt(d['spending_ratio_q1_q2'], 2)} (paper: ~4)",
           f"- queue1's budget ran out at {_fmt(d['queue1_budget_ran_out_s'], 0)} s",
           f"- after the reset with preemption: completion ratio queue1/queue2 "
           f"{_fmt(d['completion_ratio_q1_q2_after_reset'], 3)} (paper: 1/1.8 = 0.556), spending ratio "
           f"{_fmt(d['spending_ratio_q1_q2_after_reset'], 2)} (2x the rate on 2x the slots: 4x expected)\n",
           "| phase | queue1 mean completion, s | queue2 mean completion, s |", "|---|---|---|"]
    for k, label in (("funded", "both funded, no preemption"), ("queue1_out_of_budget", "queue1 out of budget"),
                     ("reset_with_preemption", "budgets reset, preemption on")):
        out.append(f"| {label} | {_fmt(mc[k]['queue1'])} | {_fmt(mc[k]['queue2'])} |")
    for name in ("fair", "fifo"):
        m = t[name]["mean_completion_s"]
        out.append(f"| {name} (same streams{', weights 2:1' if name == 'fair' else ''}) | {_fmt(m['queue1'])} | "
                   f"{_fmt(m['queue2'])} |")
    for key, title in (("service_levels_compared", "Ten users (Figures 5 and 8)"),
                       ("service_levels_80_compared", "Eighty users (Figures 6 and 9)")):
        sl = report[key]
        out += ["", f"## {title}\n", f"Horizon {sl['horizon_s']:g} s, maps of {sl['map_time_s']:g} s.\n",
                "| queue | rate | granted | obtained (DP) | mean response DP, s | fair, s | FIFO, s |",
                "|---|---|---|---|---|---|---|"]
        rows = sl["rows"]
        for dp_row, fair_row, fifo_row in zip(rows["dynamic-priority"], rows["fair"], rows["fifo"]):
            out.append(f"| {dp_row['queue']} | {dp_row['spending_rate']:g} | {dp_row['granted_share']:.4f} | "
                       f"{dp_row['obtained_share']:.4f} | {_fmt(dp_row['mean_response_s'])} | "
                       f"{_fmt(fair_row['mean_response_s'])} | {_fmt(fifo_row['mean_response_s'])} |")
    b = report["boost"]
    out += ["", "## Boost (Figures 10 and 11)\n", "| | boosted job, s | other jobs, s | speedup | tasks preempted |",
            "|---|---|---|---|---|"]
    for k in ("preemption", "no_preemption"):
        r = b[k]
        out.append(f"| {k.replace('_', ' ')} | {_fmt(r['mean_boosted_s'])} | {_fmt(r['mean_other_s'])} | "
                   f"{_fmt(r['speedup'], 2)}x | {r['tasks_preempted']} |")
    o = b["preemption_overhead"]
    out.append(f"\nPreemption overhead: mean completion {100 * o['mean_completion_increase']:+.1f}%, "
               f"throughput {100 * o['throughput_loss']:+.1f}% (paper: under 2.6%).\n")
    out += [f"![{p}]({p})" for p in plots]
    return "\n".join(out) + "\n"


def _plots(out_dir: str, report: dict, series: dict) -> list[str]:
    from . import scenario_figures

    return scenario_figures.write_all(out_dir, figures(report, series))


def figures(report: dict, series: dict) -> list[tuple[str, object]]:
    """The paper's figures, as (file name, Figure): axes labelled, legends
    outside the data (sim/scenario_figures.py)."""
    from .scenario_figures import legend_outside, new_figure

    out = []
    fig, (ax,) = new_figure()
    for u, pts in sorted(series["budgets"].items()):
        ax.plot([t for t, _ in pts], [b for _, b in pts], label=u)
    ax.axvline(series["phase_s"], color="grey", ls="--", lw=1, label="budgets reset")
    ax.set_xlabel("simulated time (s)")
    ax.set_ylabel("budget left")
    ax.set_ylim(bottom=0)
    ax.set_title("Two users: budgets (cf. Fig. 3)")
    legend_outside(fig, ax)
    out.append(("dp-budgets.png", fig))

    fig, (ax,) = new_figure()
    for u, pts in sorted(series["completions"].items()):
        ax.plot([f for f, _ in pts], [c for _, c in pts], ".-", label=f"{u} (DP)")
    ax.axvline(series["phase_s"], color="grey", ls="--", lw=1, label="budgets reset")
    ax.set_xlabel("job finish time (s)")
    ax.set_ylabel("completion time (s)")
    ax.set_ylim(bottom=0)
    ax.set_title("Two users: completion times (cf. Fig. 4)")
    legend_outside(fig, ax)
    out.append(("dp-completions.png", fig))

    for key, name in (("service_levels_compared", "dp-service-levels-10.png"),
                      ("service_levels_80_compared", "dp-service-levels-80.png")):
        rows = report[key]["rows"]
        fig, (a1, a2) = new_figure(2, cols=2, width=9.5)
        dp_rows = rows["dynamic-priority"]
        xs = [r["spending_rate"] for r in dp_rows]
        a1.plot(xs, [r["granted_share"] for r in dp_rows], "k--", label="share granted (rate / price)")
        a1.plot(xs, [r["obtained_share"] for r in dp_rows], "o", ms=3, label="share obtained (DP)")
        a1.set_xlabel("queue's spending rate")
        a1.set_ylabel("share of map slots")
        a1.set_ylim(bottom=0)
        for pol, style in (("dynamic-priority", "o-"), ("fair", "s-"), ("fifo", "x-")):
            a2.plot(xs, [r["mean_response_s"] if r["mean_response_s"] is not None else float("nan")
                         for r in rows[pol]], style, ms=3, label=f"mean completion: {pol}")
        a2.set_xlabel("queue's spending rate")
        a2.set_ylabel("mean completion time (s, log)")
        a2.set_yscale("log")
        fig.suptitle(f"{len(dp_rows)} users: service levels (cf. Figs. 5-9)")
        legend_outside(fig)
        out.append((name, fig))

    fig, (ax,) = new_figure(height=3.8)
    b = report["boost"]
    for k, style in (("preemption", "o-"), ("no_preemption", "x--")):
        per = b[k]["per_job"]
        for n in range(1, 11):
            u = f"queue{n}"
            ys = per.get(u, [])
            ax.plot(range(1, len(ys) + 1), ys, style, ms=3, lw=0.6, color=f"C{n - 1}",
                    label=u if k == "preemption" else None)
    ax.plot([], [], "k-", label="with preemption")
    ax.plot([], [], "k--", label="without")
    ax.set_xlabel("job number (user n boosts job n)")
    ax.set_ylabel("completion time (s)")
    ax.set_ylim(bottom=0)
    ax.set_title("Boost (cf. Figs. 10, 11)")
    legend_outside(fig, ax)
    out.append(("dp-boost.png", fig))
    return out
