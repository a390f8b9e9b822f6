"""A fixed engine workload for instruction counts, which a loaded machine
does not change (docs/benchmarks.md, issue 39): run it under callgrind with
N calls and with 0, and divide the difference by N.

    valgrind --tool=callgrind python benchmarks/engine_calls.py heartbeat 1000
    valgrind --tool=callgrind python benchmarks/engine_calls.py heartbeat 0

Modes, on bench_engine.build_cluster(100 queues, 1,000 apps, 1,000 nodes):
``heartbeat N`` runs N heartbeats, each container ending at once;
``slow N`` N heartbeats of a node on a rack nobody asks for (every leaf
visited, nothing placed); ``update N [CHURN]`` 20 rounds of CHURN such
heartbeats (default 0), with an update pass after each of the first N.
With ``--forked`` last, the engine is forked once first, so it keeps
copies for its forks (``fork.Kept``) and every change pays its touch.
Use the same tree for both runs (PYTHONPATH) and precompile it
(``python -m compileall``), or compiling counts too.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_engine  # noqa: E402

from slotwise.resources import Resource  # noqa: E402


def main() -> None:
    args = sys.argv[1:]
    forked = args[-1] == "--forked"
    if forked:
        args = args[:-1]
    mode, n = args[0], int(args[1])
    churn = int(args[2]) if len(args) > 2 else 0
    if mode not in ("heartbeat", "slow", "update"):
        sys.exit(f"engine_calls.py: mode must be heartbeat, slow or update, not {mode!r}")
    e = bench_engine.build_cluster(100, 1000, 1000, random.Random(1))
    clock = e.clock
    ids = list(e.nodes)
    if mode == "slow":
        e.add_node("lonely", "hostX", "/rackX", Resource.units(8))
        e.update()
    if forked:
        e.fork()

    def beat(node: str) -> None:
        for a in e.heartbeat(node):
            e.container_finished(a.container_id)

    if mode == "update":
        rng = random.Random(2)
        for i in range(20):
            for _ in range(churn):
                clock.advance(0.003)
                beat(ids[rng.randrange(len(ids))])
            if i < n:
                e.update()
        return
    for i in range(n):
        clock.advance(3.0 / len(ids))
        beat("lonely" if mode == "slow" else ids[i % len(ids)])


if __name__ == "__main__":
    main()
