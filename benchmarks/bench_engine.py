"""Engine speed: fair shares and one heartbeat's decision.

Run: python benchmarks/bench_engine.py [--quick] [--shadow]
Prints microseconds per call; goals (issue 2): fair shares for 10,000 queues
in at most 5 ms, and a median heartbeat of at most 200 us with 100 queues,
1,000 jobs and 1,000 nodes. ``--shadow``: instead, the door's heartbeat
and update with and without a shadow policy, the shadow's CPU and its
memory (benchmarks/shadow_door.py; issue 42).
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


class _TimedLock:
    """A lock that records how long each hold lasted (ms): wall time
    (``holds``) and this thread's CPU time (``cpu``, which a loaded machine
    does not inflate)."""

    def __init__(self) -> None:
        import threading
        self._lock, self.holds, self.cpu = threading.Lock(), [], []

    def __enter__(self):
        self._lock.acquire()
        self._t, self._c = time.perf_counter(), time.thread_time()

    def __exit__(self, *exc):
        self.holds.append((time.perf_counter() - self._t) * 1e3)
        self.cpu.append((time.thread_time() - self._c) * 1e3)
        self._lock.release()


def bench_fork(apps: int, nodes: int, repeat: int, rng: random.Random) -> dict:
    """A fork of a state of ``apps`` apps on ``nodes`` nodes as a view makes
    it, each after a second of load (a heartbeat from every node, each
    placing a container that ends at once, and two update passes):
    ``views.dry_run.catch_up`` brings the engine's kept copies up to date in
    short holds of the lock, ``fork.snapshot`` copies the rest under one
    more, ``fork.build`` makes the engine outside it. Beside them the first
    fork (every app copied in the holds) and a pickle round trip."""
    import gc
    import pickle

    from slotwise.engine import fork
    from slotwise.views.dry_run import fork_hold

    engine = build_cluster(100, apps, nodes, rng)
    clock, node_ids = engine.clock, list(engine.nodes)

    def load_for_a_second():
        for i, node in enumerate(node_ids):
            clock.advance(1.0 / len(node_ids))
            for a in engine.heartbeat(node):
                engine.container_finished(a.container_id)
            if i % (len(node_ids) // 2) == 0:
                engine.update()

    def one_fork():
        lock = _TimedLock()
        t0 = time.perf_counter()
        with fork_hold(lock, engine):
            s = fork.snapshot(engine)
        t1 = time.perf_counter()
        fork.build(s, clock)
        t2 = time.perf_counter()
        return lock.holds, lock.cpu, (t1 - t0) * 1e3, (t2 - t1) * 1e3

    gc.collect()
    gc.freeze()
    first_holds, first_cpu, first_snap, first_build = one_fork()
    holds, cpu, snap, built, changed, pickled = [], [], [], [], [], []
    for _ in range(repeat):
        load_for_a_second()
        changed.append(engine._kept.pending())
        gc.collect()
        gc.freeze()  # as serve does every few seconds (bridge/server.py): full passes skip the old objects
        h, c, a, b = one_fork()
        holds += h
        cpu += c
        snap.append(a)
        built.append(b)
    gc.unfreeze()
    for _ in range(min(repeat, 3)):
        gc.collect()
        t3 = time.perf_counter()
        pickle.loads(pickle.dumps(engine, protocol=pickle.HIGHEST_PROTOCOL))
        pickled.append((time.perf_counter() - t3) * 1e3)
    total = [a + b for a, b in zip(snap, built)]
    holds.sort()
    cpu.sort()
    return {"hold_cpu_median_ms": statistics.median(cpu), "hold_cpu_max_ms": cpu[-1],
            "first_hold_cpu_max_ms": max(first_cpu),"apps": apps, "nodes": nodes, "containers": len(engine.containers),
            "changed": statistics.median(changed), "holds": len(holds) / repeat,
            "hold_median_ms": statistics.median(holds), "hold_max_ms": holds[-1],
            "first_ms": first_snap + first_build, "first_hold_max_ms": max(first_holds),
            "snapshot_ms": statistics.median(snap), "build_ms": statistics.median(built),
            "fork_ms": statistics.median(total), "pickle_ms": statistics.median(pickled)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer repetitions")
    ap.add_argument("--shadow", action="store_true",
                    help="only the shadow policy's cost at the door and its memory (benchmarks/shadow_door.py)")
    args = ap.parse_args()
    rng = random.Random(42)
    if args.shadow:
        import shadow_door

        shadow_door.main(build_cluster, rng, args.quick)
        return
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
    print("fork (as a view makes it, after a second of load: the lock held in short turns, then build outside it)")
    r = bench_fork(10_000, 1_000, 3 if args.quick else 7, rng)
    print(f"  {r['apps']} apps, {r['nodes']} nodes, {r['containers']} containers, {r['changed']:.0f} units of change "
          f"since the last fork: lock held {r['holds']:.1f} times per fork, median {r['hold_median_ms']:.2f} ms, "
          f"max {r['hold_max_ms']:.2f} ms (goal 5; CPU median {r['hold_cpu_median_ms']:.2f}, max "
          f"{r['hold_cpu_max_ms']:.2f} ms); under or between the holds {r['snapshot_ms']:.1f} ms, "
          f"build {r['build_ms']:.1f} ms, fork {r['fork_ms']:.1f} ms (goal 20)")
    print(f"  the first fork (every app copied): {r['first_ms']:.1f} ms, longest hold {r['first_hold_max_ms']:.2f} ms "
          f"(CPU {r['first_hold_cpu_max_ms']:.2f} ms); "
          f"pickle round trip {r['pickle_ms']:.1f} ms")

if __name__ == "__main__":
    main()
