"""What one copy of a changed shadow candidate costs: the follower forked
and the candidate file set (``Shadow._remake``), per diverging heartbeat.

Run: python benchmarks/bench_shadow_copy.py [--quick] [--baseline CHECKOUT]

bench_engine's cluster at 100 apps (10 queues, 20 nodes) and at 1,000
(100 queues, 1,000 nodes), a candidate that weighs queue0 4 times; the
copy made N times, its CPU per copy, the median of 5 rounds. With
``--baseline``, the same measured in turn on another checkout's
``python/``, alternated (benchmarks/checkout.py; CPU time moves 2-3x
between runs here, so only an alternation in one run compares two versions).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from checkout import run_on  # noqa: E402

SCALES = ((10, 100, 20), (100, 1_000, 1_000))


def measure(quick: bool) -> dict:
    """CPU ms per copy at each scale, in this process."""
    import shadow_door
    from bench_engine import build_cluster
    from slotwise.shadow import Shadow

    out = {}
    for queues, apps, nodes in SCALES:
        core = shadow_door.door(build_cluster, random.Random(1), queues, apps, nodes)
        s = Shadow(shadow_door.candidate(core._engine.config, 4.0), threaded=False, budget_s=float("inf"))
        s.attach(core)
        shadow_door.Driver(core).run(100, 0.0)
        n = (20 if quick else 100) if apps <= 100 else (2 if quick else 5)
        rounds = []
        for _ in range(5):
            t0 = time.thread_time()
            for _ in range(n):
                s._remake()
            rounds.append((time.thread_time() - t0) / n * 1e3)
        s.stop()
        out[str(apps)] = sorted(rounds)[2]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer copies per round (about a minute)")
    ap.add_argument("--baseline", metavar="CHECKOUT", help="another checkout, its python/ alternated with this tree's")
    ap.add_argument("--rounds", type=int, default=3, help="alternations with --baseline (default 3)")
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(measure(args.quick)))
        return
    sides = [("this tree", os.path.join(os.path.dirname(HERE), "python"))]
    if args.baseline:
        sides.append(("baseline", os.path.join(os.path.abspath(args.baseline), "python")))
    argv = ["--one"] + (["--quick"] if args.quick else [])
    got: dict[str, list[dict]] = {name: [] for name, _ in sides}
    for r in range(args.rounds if args.baseline else 1):
        for name, path in (sides if r % 2 == 0 else sides[::-1]):
            got[name].append(run_on(path, __file__, argv))
            print(f"round {r + 1} {name:9}: " + ", ".join(f"{k} apps {v:.2f} ms" for k, v in got[name][-1].items()),
                  flush=True)
    mid = {name: {k: sorted(run[k] for run in runs)[len(runs) // 2] for k in runs[0]} for name, runs in got.items()}
    for name, m in mid.items():
        print(f"{name}: the candidate's copy, CPU per copy (median of rounds): "
              + ", ".join(f"{k} apps {v:.2f} ms" for k, v in m.items()))
    if args.baseline:
        print("ratio this tree / baseline: " + ", ".join(
            f"{k} apps {v / mid['baseline'][k]:.2f}" for k, v in mid["this tree"].items()))


if __name__ == "__main__":
    main()
