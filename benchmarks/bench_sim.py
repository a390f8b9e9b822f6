"""Simulator speed on the `macro` scenario: events per second and simulated
time per wall-clock second, per workload and policy (goal: >= 1,000x real
time on a 2-core machine).  Usage: python benchmarks/bench_sim.py [--seed N]
[--repeat K]; prints a table and the overall ratio (best of K)."""

from __future__ import annotations

import argparse
import gc
import statistics

from slotwise.settings import EngineSettings
from slotwise.sim.policies import variant
from slotwise.sim.scenarios import SCENARIOS
from slotwise.sim.simulator import Simulation


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    sc = SCENARIOS["macro"]
    total_sim = total_wall = total_events = 0.0
    print(f"{'workload':<8} {'policy':<11} {'events':>8} {'sim s':>8} {'wall s':>7} {'events/s':>9} {'sim/wall':>9}")
    for exp in sc.experiments(args.seed, 1.0):
        for name in sc.default_policies:
            v = variant(name, EngineSettings(heartbeat_interval=exp.sim.heartbeat_interval, preemption=False),
                        sc.delay)
            walls = []
            for _ in range(args.repeat):
                gc.collect()
                r = Simulation(exp.workload, v.settings, None, exp.sim, label=name).run()
                walls.append(r.wall_seconds)
            wall = min(walls)
            total_sim += r.end_time
            total_wall += wall
            total_events += r.events
            print(f"{exp.key['workload']:<8} {name:<11} {r.events:>8,} {r.end_time:>8,.0f} {wall:>7.2f} "
                  f"{r.events / wall:>9,.0f} {r.end_time / wall:>8,.0f}x   (median wall "
                  f"{statistics.median(walls):.2f} s)")
    print(f"overall: {total_events / total_wall:,.0f} events/s, {total_sim / total_wall:,.0f}x real time "
          f"({total_sim:,.0f} simulated s in {total_wall:.1f} wall s)")


if __name__ == "__main__":
    main()
