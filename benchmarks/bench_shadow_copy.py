"""What one copy of a changed shadow candidate costs: the follower forked
and the candidate file set (``Shadow._remake``), per diverging heartbeat.

Run: python benchmarks/bench_shadow_copy.py [--quick] [--against OTHER/python]

bench_engine's cluster at 100 apps (10 queues, 20 nodes) and at 1,000
(100 queues, 1,000 nodes), a candidate that weighs queue0 4 times; the
copy made N times, its CPU per copy, the median of 5 rounds. With
``--against``, the same measured in turn from another checkout's
``python`` directory, alternated (CPU time moves 2-3x between runs here,
so only an alternation in one run compares two versions).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SCALES = ((10, 100, 20), (100, 1_000, 1_000))


def measure(quick: bool) -> dict:
    """CPU ms per copy at each scale, in this process."""
    sys.path.insert(0, HERE)
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


def run_in(pythonpath: str, quick: bool) -> dict:
    """``measure`` in a fresh interpreter on ``pythonpath``'s slotwise."""
    env = dict(os.environ, PYTHONPATH=pythonpath)
    cmd = [sys.executable, os.path.abspath(__file__), "--one"] + (["--quick"] if quick else [])
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1200)
    if done.returncode != 0:
        raise SystemExit(f"bench_shadow_copy: the run on {pythonpath} failed: {done.stderr.strip()[-500:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer copies per round (about a minute)")
    ap.add_argument("--against", metavar="DIR", help="another checkout's python directory, alternated with this one")
    ap.add_argument("--rounds", type=int, default=3, help="alternations with --against (default 3)")
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(measure(args.quick)))
        return
    mine = os.path.join(os.path.dirname(HERE), "python")
    sides = [("this tree", mine)] + ([("against", os.path.abspath(args.against))] if args.against else [])
    got: dict[str, list[dict]] = {name: [] for name, _ in sides}
    for r in range(args.rounds if args.against else 1):
        for name, path in (sides if r % 2 == 0 else sides[::-1]):
            got[name].append(run_in(path, args.quick))
            print(f"round {r + 1} {name:9}: " + ", ".join(f"{k} apps {v:.2f} ms" for k, v in got[name][-1].items()),
                  flush=True)
    for name, runs in got.items():
        line = ", ".join(f"{k} apps {sorted(run[k] for run in runs)[len(runs) // 2]:.2f} ms" for k in runs[0])
        print(f"{name}: the candidate's copy, CPU per copy (median of rounds): {line}")
    if args.against:
        a, b = got["this tree"], got["against"]
        print("ratio this tree / against: " + ", ".join(
            f"{k} apps {sorted(x[k] for x in a)[len(a) // 2] / sorted(x[k] for x in b)[len(b) // 2]:.2f}"
            for k in a[0]))


if __name__ == "__main__":
    main()
