"""Serve's side of the shadow's pipe at bench_engine's scale (1,000 nodes,
1,000 apps, 3,000 heartbeats through a real door): the CPU the feeder's
frames take to pickle per heartbeat (``shadow_process._packed``, frames of
``MAX_BATCH``), and the start copy's pickle. With ``--baseline``, the same
on another checkout's ``python/``, alternated (benchmarks/checkout.py).

Run: python benchmarks/bench_shadow_feed.py [--quick] [--baseline CHECKOUT]
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import random
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from checkout import run_on  # noqa: E402

HEARTBEATS = 3_000


class Tap:
    """Stands where the shadow does at the door: keeps what it is handed."""

    state = "running"

    def __init__(self) -> None:
        self.items: list[tuple] = []

    def offer(self, call, t, msg, answer=None) -> None:
        self.items.append(("input", call, t, msg, answer))

    def input(self, call, t, msg) -> None:
        self.offer(call, t, msg)


def measure(repeat: int) -> dict:
    """In this process, on the slotwise first on the path: the median of
    ``repeat`` measurements of each figure."""
    import shadow_door
    from bench_engine import build_cluster
    from slotwise.shadow import Shadow, capture
    from slotwise.shadow_process import MAX_BATCH, _packed

    core = shadow_door.door(build_cluster, random.Random(1), 100, 1_000, 1_000)
    tap = core.shadow = Tap()
    shadow_door.Driver(core).run(HEARTBEATS, 0.0)
    core.shadow = None
    start = capture(core, Shadow(shadow_door.candidate(core._engine.config, 4.0), threaded=False))
    feed, pickled = [], []
    for _ in range(repeat):
        t0 = time.thread_time()
        for i in range(0, len(tap.items), MAX_BATCH):
            pickle.dumps([_packed(x) for x in tap.items[i:i + MAX_BATCH]], protocol=pickle.HIGHEST_PROTOCOL)
        feed.append((time.thread_time() - t0) / HEARTBEATS * 1e6)
        t0 = time.thread_time()
        data = pickle.dumps(start, protocol=pickle.HIGHEST_PROTOCOL)
        pickled.append((time.thread_time() - t0) * 1e3)
    return {"inputs": len(tap.items), "feed_us": statistics.median(feed), "start_ms": statistics.median(pickled),
            "start_mib": len(data) / 2**20}


def said(name: str, m: dict) -> str:
    return (f"{name}: the feeder's frames {m['feed_us']:.1f} us per heartbeat ({int(m['inputs']):,} inputs from "
            f"{HEARTBEATS:,} heartbeats), the start's copy pickled in {m['start_ms']:.0f} ms ({m['start_mib']:.2f} MiB)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2 measurements a side instead of 6")
    ap.add_argument("--baseline", metavar="CHECKOUT", help="another checkout, its python/ alternated with this tree's")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(measure(args.one)))
        return
    rounds = 2 if args.quick else 6
    if not args.baseline:
        print(said("this tree", measure(rounds)))
        return
    sides = [("this tree", os.path.join(os.path.dirname(HERE), "python")),
             ("baseline", os.path.join(os.path.abspath(args.baseline), "python"))]
    got: dict[str, list[dict]] = {name: [] for name, _ in sides}
    for r in range(rounds):
        for name, path in (sides if r % 2 == 0 else sides[::-1]):
            got[name].append(run_on(path, __file__, ["--one", "1"]))
    for name, runs in got.items():
        print(said(name, {k: statistics.median(x[k] for x in runs) for k in runs[0]}) + f" (medians of {rounds}, alternated)")


if __name__ == "__main__":
    main()
