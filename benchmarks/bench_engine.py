"""Engine speed: fair shares and one heartbeat's decision.

Run: python benchmarks/bench_engine.py [--quick]
Prints microseconds per call; goals (issue 2): fair shares for 10,000 queues
in at most 5 ms, and a median heartbeat of at most 200 us with 100 queues,
1,000 jobs and 1,000 nodes.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from slotwise.clock import ManualClock
from slotwise.engine import Request
from slotwise.config.model import AllocationConfig, QueueConfig, default_placement_rules
from slotwise.engine import Engine
from slotwise.policies.fairshare import compute_shares, yarn_shares
from slotwise.resources import Resource
from slotwise.settings import EngineSettings


def timed(fn, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1e6)
    return out


def bench_fair_shares(n: int, repeat: int, rng: random.Random, rule: str = "design") -> dict:
    weights = [rng.choice([0.5, 1, 1, 2, 4]) for _ in range(n)]
    mins = [rng.choice([0, 0, 0, 10, 50]) for _ in range(n)]
    caps = [rng.choice([5, 20, 100, 1000, float("inf")]) for _ in range(n)]
    total = 40.0 * n
    fn = compute_shares if rule == "design" else yarn_shares
    fn(weights, mins, caps, total)  # warm up (the first call imports numpy)
    samples = timed(lambda: fn(weights, mins, caps, total), repeat)
    return {"queues": n, "median_us": statistics.median(samples), "max_us": max(samples)}


def build_cluster(queues: int, jobs: int, nodes: int, rng: random.Random, slots: int = 8) -> Engine:
    cfg = AllocationConfig(placement_rules=default_placement_rules())
    for i in range(queues):
        cfg.root.children.append(QueueConfig(f"root.queue{i}", weight=rng.choice([1.0, 1.0, 2.0]),
                                             min_resources=Resource.units(rng.choice([0, 0, 4]))))
    clock = ManualClock()
    # Delay scheduling on, as in production: most jobs pass on most nodes.
    engine = Engine(cfg, clock, EngineSettings(heartbeat_interval=3.0, preemption=False))
    racks = max(1, nodes // 40)
    for n in range(nodes):
        engine.add_node(f"n{n}", f"host{n}", f"/rack{n % racks}", Resource.units(slots))
    for j in range(jobs):
        app = f"job{j}"
        engine.add_app(app, f"user{j % 50}", queue=f"queue{j % queues}", submit_time=float(j), placed=True)
        engine.apps[app].has_am = True
        hosts = {f"host{h}": 10**6 for h in rng.sample(range(nodes), 3)}
        rack_counts = {f"/rack{int(h[4:]) % racks}": 10**6 for h in hosts}
        engine.update_requests(app, [Request(1, Resource.units(1), 10**6, hosts, rack_counts)])
    # Fill every node but one slot, so each heartbeat places exactly one container.
    for n in range(nodes):
        node = f"n{n}"
        while engine.nodes[node].free.memory_mb > 1:
            engine.container_launched(f"fill-{n}-{engine.nodes[node].used.memory_mb}",
                                      f"job{rng.randrange(jobs)}", node, Resource.units(1))
    engine.update()
    return engine


def bench_heartbeat(queues: int, jobs: int, nodes: int, repeat: int, rng: random.Random) -> dict:
    engine = build_cluster(queues, jobs, nodes, rng)
    clock = engine.clock
    node_ids = list(engine.nodes)
    samples = []
    placed = 0
    for i in range(repeat):
        node = node_ids[i % len(node_ids)]
        clock.advance(3.0 / len(node_ids))  # heartbeats of all nodes spread over 3 s
        t0 = time.perf_counter()
        got = engine.heartbeat(node)
        samples.append((time.perf_counter() - t0) * 1e6)
        for a in got:  # the container ends at once so the cluster stays as it was
            placed += 1
            engine.container_finished(a.container_id)
    samples.sort()
    return {
        "queues": queues, "jobs": jobs, "nodes": nodes, "heartbeats": repeat, "placed": placed,
        "median_us": statistics.median(samples), "p99_us": samples[int(0.99 * (len(samples) - 1))],
    }


def bench_update(queues: int, jobs: int, nodes: int, repeat: int, rng: random.Random) -> dict:
    engine = build_cluster(queues, jobs, nodes, rng)
    samples = timed(engine.update, repeat)
    return {"queues": queues, "jobs": jobs, "median_us": statistics.median(samples)}


def bench_fork(apps: int, nodes: int, repeat: int, rng: random.Random) -> dict:
    """Engine.fork of a state of ``apps`` apps on ``nodes`` nodes: the copy
    a driver makes under its lock (fork.snapshot), the rest (fork.build),
    and beside them the pickle round trip dry runs used before."""
    import gc
    import pickle

    from slotwise.engine import fork

    engine = build_cluster(100, apps, nodes, rng)
    snap, built, pickled = [], [], []
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        s = fork.snapshot(engine)
        t1 = time.perf_counter()
        fork.build(s, engine.clock)
        t2 = time.perf_counter()
        del s
        gc.collect()
        t3 = time.perf_counter()
        pickle.loads(pickle.dumps(engine, protocol=pickle.HIGHEST_PROTOCOL))
        t4 = time.perf_counter()
        snap.append((t1 - t0) * 1e3)
        built.append((t2 - t1) * 1e3)
        pickled.append((t4 - t3) * 1e3)
    total = [a + b for a, b in zip(snap, built)]
    return {"apps": apps, "nodes": nodes, "containers": len(engine.containers),
            "snapshot_ms": statistics.median(snap), "build_ms": statistics.median(built),
            "fork_ms": statistics.median(total), "pickle_ms": statistics.median(pickled)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = ap.parse_args()
    rng = random.Random(42)
    rep = 20 if args.quick else 200
    for rule, fn in (("design", "compute_shares"), ("yarn", "yarn_shares")):
        print(f"fair shares, the {rule} rule ({fn}, one dimension)")
        for n in (10, 1_000, 10_000):
            r = bench_fair_shares(n, rep, rng, rule)
            print(f"  {r['queues']:>6} queues: median {r['median_us']:9.1f} us   max {r['max_us']:9.1f} us")
    print("heartbeat decision (delay scheduling on, one free slot per node)")
    r = bench_heartbeat(100, 1_000, 1_000, 500 if args.quick else 5_000, rng)
    print(f"  {r['queues']} queues, {r['jobs']} jobs, {r['nodes']} nodes: median {r['median_us']:.1f} us, "
          f"p99 {r['p99_us']:.1f} us ({r['placed']} containers over {r['heartbeats']} heartbeats)")
    print("update pass (runnability, demand, fair shares, preemption check)")
    r = bench_update(100, 1_000, 1_000, 10 if args.quick else 50, rng)
    print(f"  {r['queues']} queues, {r['jobs']} jobs: median {r['median_us']:.1f} us")
    print("fork (Engine.fork: snapshot under the driver's lock, then build; beside it a pickle round trip)")
    r = bench_fork(10_000, 1_000, 3 if args.quick else 7, rng)
    print(f"  {r['apps']} apps, {r['nodes']} nodes, {r['containers']} containers: fork {r['fork_ms']:.1f} ms "
          f"(snapshot {r['snapshot_ms']:.1f} ms, build {r['build_ms']:.1f} ms); pickle round trip "
          f"{r['pickle_ms']:.1f} ms ({r['pickle_ms'] / r['fork_ms']:.1f}x the fork)")


if __name__ == "__main__":
    main()
