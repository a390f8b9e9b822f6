"""Run a scenario or a trace under several policies and collect a report."""

from __future__ import annotations

import sys
import time
from dataclasses import asdict, replace

from ..config.model import AllocationConfig
from ..settings import EngineSettings
from . import metrics
from .policies import variant
from .scenarios import SCENARIOS, Experiment
from .results import SimSettings
from .simulator import Simulation
from .workload import Workload


class ProgressBar:
    """One line on stderr: on a terminal redrawn in place as the run goes,
    elsewhere (CI logs) printed when a run ends and every ``every`` seconds
    of a long one.  Says how many jobs are done of how many, and the
    simulated time reached."""

    def __init__(self, total_runs: int, stream=None, width: int = 30, every: float | None = None) -> None:
        self.total = total_runs
        self.done = 0
        self.stream = stream or sys.stderr
        self.width = width
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.every = every if every is not None else (0.2 if self.tty else 10.0)
        self.label = ""
        self.state = (0.0, 0, 0)  # the run's latest (simulated time, jobs done, jobs)
        self._last = 0.0

    def start(self, label: str, jobs: int = 0) -> None:
        self.label = label
        self.state = (0.0, 0, jobs)
        self._last = time.monotonic()
        if self.tty:
            self._write()

    def draw(self, sim_time: float, jobs_done: int, jobs: int) -> None:
        """The simulation's callback; throttled to one line per ``every`` s."""
        self.state = (sim_time, jobs_done, jobs)
        if time.monotonic() - self._last >= self.every:
            self._write()

    def line(self) -> str:
        sim_time, jobs_done, jobs = self.state
        frac = min(1.0, (self.done + (jobs_done / jobs if jobs else 0.0)) / max(1, self.total))
        filled = int(frac * self.width)
        return (f"[{'#' * filled}{'.' * (self.width - filled)}] {frac:5.1%}  run {self.done + 1}/{self.total} "
                f"{self.label}: {jobs_done}/{jobs} jobs done, simulated t={sim_time:,.0f} s")

    def _write(self) -> None:
        self._last = time.monotonic()
        line = self.line()
        self.stream.write(("\r" + line + "\033[K") if self.tty else line + "\n")
        self.stream.flush()

    def finish_run(self) -> None:
        """The run's last figures, always shown, then the next run."""
        self._write()
        self.done += 1

    def close(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


def run_experiments(experiments: list[Experiment], policies: list[str], delay: float,
                    base: EngineSettings | None = None, config: AllocationConfig | None = None,
                    progress: ProgressBar | None = None, event_log=None, record_inputs: bool = False,
                    config_text: str | None = None, shadow: AllocationConfig | None = None):
    runs = []
    for exp in experiments:
        for name in policies:
            hb = exp.sim.heartbeat_interval
            settings = base or EngineSettings(heartbeat_interval=hb, preemption=False)
            v = variant(name, replace(settings, heartbeat_interval=hb), delay)
            cfg = v.config_for(config)
            if event_log is not None and cfg is not config:
                raise ValueError(f"--event-log records the allocation file as given, so it cannot record {name}: "
                                 "set defaultLocalityTarget in the file instead")
            key = " ".join(f"{k}={val}" for k, val in exp.key.items())
            sim = Simulation(exp.workload, v.settings, cfg, exp.sim, label=name, event_log=event_log,
                             record_inputs=record_inputs, config_text=config_text,
                             progress=progress.draw if progress else None, shadow=shadow)
            if progress:
                progress.start(f"{name} {key}".strip(), jobs=len(sim.jobs))
            runs.append((exp, sim.run()))
            if progress:
                progress.finish_run()
    if progress:
        progress.close()
    return runs


def run_scenario(name: str, policies: list[str] | None = None, seed: int = 0, scale: float = 1.0,
                 delay: float | None = None, config: AllocationConfig | None = None,
                 progress: bool | ProgressBar = False, share_rule: str = "auto",
                 shadow: AllocationConfig | None = None):
    """Returns (report dict, runs)."""
    if name not in SCENARIOS:
        raise ValueError(f"unknown scenario {name!r} (known: {', '.join(SCENARIOS)})")
    sc = SCENARIOS[name]
    policies = list(policies or sc.default_policies)
    wait = sc.delay if delay is None else delay
    for p in policies:
        variant(p, EngineSettings(), wait)  # fail before running anything
    experiments = sc.experiments(seed, scale)
    bar = progress if isinstance(progress, ProgressBar) else (
        ProgressBar(len(experiments) * len(policies)) if progress else None)
    base = EngineSettings(preemption=False, share_rule=share_rule)
    runs = run_experiments(experiments, policies, wait, base=base, config=config, progress=bar, shadow=shadow)
    report = {"scenario": name, "description": sc.description, "seed": seed, "scale": scale,
              "policies": policies, "delay_seconds": wait, "share_rule": _rule(share_rule, config),
              "heartbeat_interval": experiments[0].sim.heartbeat_interval,
              "sim": _sim_settings(experiments[0].sim),
              "runs": [{**exp.key, **_rounded(metrics.summary(res))} for exp, res in runs]}
    report.update(sc.summarize(runs))
    return report, runs


def run_trace(workload: Workload, policies: list[str], seed: int = 0, delay: float = 5.0,
              heartbeat: float = 3.0, config: AllocationConfig | None = None,
              progress: bool = False, event_log=None, config_text: str | None = None, share_rule: str = "auto",
              shadow: AllocationConfig | None = None):
    for p in policies:
        variant(p, EngineSettings(), delay)  # fail before running anything
    exp = Experiment({"trace": workload.name}, workload, SimSettings(heartbeat_interval=heartbeat, seed=seed))
    bar = ProgressBar(len(policies)) if progress else None
    base = EngineSettings(preemption=False, share_rule=share_rule)
    runs = run_experiments([exp], policies, delay, base=base, config=config, progress=bar, event_log=event_log,
                           record_inputs=event_log is not None, config_text=config_text, shadow=shadow)
    by_label = {r.label: r for _e, r in runs}
    base = metrics.response_times(by_label["fifo"]) if "fifo" in by_label else None
    report = {"scenario": "trace", "trace": workload.name, "seed": seed, "policies": policies,
              "share_rule": _rule(share_rule, config),
              "delay_seconds": delay, "heartbeat_interval": heartbeat, "sim": _sim_settings(exp.sim),
              "runs": [_rounded(metrics.summary(r)) for _e, r in runs],
              "locality": [], "response_times": [], "speedup": []}
    for _e, r in runs:
        for row in metrics.locality(r):
            report["locality"].append({"policy": r.label, "job_maps": row["group"],
                                       "node_local": round(row["node_local"], 4),
                                       "rack_local": round(row["rack_local"], 4)})
        rt = metrics.response_times(r, key=lambda j: j.label or j.queue)
        report["response_times"] += [{"policy": r.label, "group": x["group"], "jobs": x["jobs"],
                                      "mean": round(x["mean"], 2)} for x in rt]
        if base is not None and r.label != "fifo":
            base_g = metrics.response_times(by_label["fifo"], key=lambda j: j.label or j.queue)
            report["speedup"] += [{"policy": r.label, **x} for x in metrics.speedups(rt, base_g)]
    return report, runs


def _rule(share_rule: str, config: AllocationConfig | None) -> str:
    return EngineSettings(share_rule=share_rule).rule_for(config.format if config else "yarn")


def _sim_settings(s: SimSettings) -> dict:
    d = asdict(s)
    d.pop("seed", None)
    return d


def _rounded(d: dict) -> dict:
    out = {}
    for k, v in d.items():
        if isinstance(v, float):
            out[k] = round(v, 4)
        elif isinstance(v, dict):
            out[k] = _rounded(v)
        else:
            out[k] = v
    return out
