"""The shadow policy's cost at the door, in-process (``bench_engine.py
--shadow``): bench_engine's cluster (100 queues, 1,000 jobs, 1,000 nodes,
delay scheduling on) behind a real ``PolicyCore``, heartbeats through
``handle_heartbeat`` paced as 1,000 nodes every 3 s send them, an update
pass every 0.5 s; windows alternated without a shadow, with an identical
candidate and with one that weighs queue0 4 times as much, each in its own
process (serve's way) and on a thread of this one (the way before). Also
the memory: tracemalloc's count of the live engine alone against the live
engine with a shadow attached inline (the issue's goal: at most 2x), and
the shadow process's RSS against the RSS the live engine adds.

Kept apart from bench_engine.py so that file stays about the engine alone.
"""

from __future__ import annotations

import copy
import dataclasses
import gc
import random
import statistics
import time

from slotwise import protocol as wire
from slotwise.core import PolicyCore
from slotwise.localcluster.process import rss_mb
from slotwise.shadow import Shadow
from slotwise.shadow_process import ShadowProcess

NODES_EVERY_S = 3.0  # bench_engine's heartbeat interval: every node once per 3 s
UPDATE_EVERY_S = 0.5  # serve's update pass


def door(build_cluster, rng, queues: int, jobs: int, nodes: int) -> PolicyCore:
    """bench_engine's engine behind a real door (its clock is the door's)."""
    engine = build_cluster(queues, jobs, nodes, rng)
    core = PolicyCore(engine.config, engine.settings, engine.clock)
    core._engine = engine
    return core


def candidate(config, weight: float | None):
    """The live file (weight None) or one whose queue0 weighs ``weight``."""
    c = copy.deepcopy(config)
    c.source = "candidate.xml"
    if weight is not None:
        q = c.root.children[0]
        c.root.children[0] = dataclasses.replace(q, weight=weight)
    return c


class Driver:
    """Heartbeats through the door, one node at a time round the cluster;
    each one's containers end in the next message (the cluster stays as
    it was); an update pass every ``UPDATE_EVERY_S`` of engine time."""

    def __init__(self, core: PolicyCore) -> None:
        self.core = core
        self.clock = core._engine.clock
        self.nodes = list(core._engine.nodes)
        self.i = 0
        self.finish: list[str] = []
        self.every = max(1, int(len(self.nodes) * UPDATE_EVERY_S / NODES_EVERY_S))

    def run(self, n: int, pace_s: float, watch=None) -> tuple[list[float], list[float]]:
        """``n`` heartbeats ``pace_s`` apart in wall time: the door's
        heartbeat and update times (us)."""
        beats, updates = [], []
        core, clock, nodes = self.core, self.clock, self.nodes
        start = time.perf_counter()
        for k in range(n):
            self.i += 1
            clock.advance(NODES_EVERY_S / len(nodes))
            now_ms = int(clock.now() * 1000)
            msg = wire.Payload(now_ms=now_ms, beats=[wire.Beat(node=nodes[self.i % len(nodes)])],
                               finished=self.finish)
            t0 = time.perf_counter()
            got = core.handle_heartbeat(msg)
            beats.append((time.perf_counter() - t0) * 1e6)
            self.finish = [a.container_id for a in got]
            if self.i % self.every == 0:
                t0 = time.perf_counter()
                core.handle_update(wire.Payload(now_ms=now_ms))
                updates.append((time.perf_counter() - t0) * 1e6)
            if watch is not None:
                watch()
            wait = start + (k + 1) * pace_s - time.perf_counter()
            if wait > 0:
                time.sleep(wait)
        return beats, updates


def _pct(v: list[float], q: float) -> float:
    s = sorted(v)
    return s[min(len(s) - 1, int(q * (len(s) - 1)))] if s else 0.0


def _drained(s, timeout: float = 120.0) -> float:
    """Seconds the shadow took to empty its queue after the window (its
    process's too)."""
    t0 = time.monotonic()
    while s.state == "running" and time.monotonic() - t0 < timeout:
        if not s._items and s.status()["backlog"] == 0:
            break
        time.sleep(0.02)
    return time.monotonic() - t0


def figures(s) -> dict:
    """What a shadow did over a window, from its status (either host)."""
    st = s.status()
    out = {k: st[k] for k in ("state", "error", "compared", "skipped", "diverged", "copies", "cpu_s", "backlog")}
    out["feed_cpu_s"] = st.get("feed_cpu_s")  # serve's feeder thread after the start (the process host only)
    out["start_cpu_s"] = st.get("start_cpu_s")
    return out


def said(st: dict) -> str:
    """``figures`` in a benchmark's line: its counts and CPU per heartbeat."""
    hb = st["compared"] + st["skipped"]
    return (f"{st['state']}: compared {st['compared']}, skipped {st['skipped']}, diverged {st['diverged']}, copies "
            f"{st['copies']}, CPU {1e6 * st['cpu_s'] / max(1, hb):.0f} us per heartbeat (passes included)"
            + (f", serve's feeder {1e6 * st['feed_cpu_s'] / max(1, hb):.0f} us per heartbeat after "
               f"{1e3 * st['start_cpu_s']:.0f} ms for the start's copy" if st.get("feed_cpu_s") is not None else "")
            + (f"; error: {st['error']}" if st["error"] else ""))


def _shadow(side: str, config):
    """The shadow of one side: ``name@thread`` on a thread of this process."""
    return Shadow(config, threaded=True) if side.endswith("@thread") else ShadowProcess(config)


def overhead(build_cluster, rng, rounds: int, window: int, rate: float) -> dict:
    """Windows of ``window`` heartbeats at ``rate`` a second, alternated
    off / identical / changed, ``rounds`` of each; per side the medians of
    the windows' p50 and p99, and what the shadows did."""
    core = door(build_cluster, rng, 100, 1_000, 1_000)
    drive = Driver(core)
    drive.run(min(window, 1000), 1.0 / rate)  # warm-up
    live = core._engine.config
    sides = {"off": None, "identical": None, "changed": 4.0, "identical@thread": None, "changed@thread": 4.0}
    out: dict = {k: {"p50": [], "p99": [], "up50": [], "up99": [], "shadow": []} for k in sides}
    for r in range(rounds):
        for side, weight in sides.items():
            s = None
            if side != "off":
                s = _shadow(side, candidate(live, weight))
                s.attach(core)
                _drained(s)
            backlog = [0]

            def watch():
                if s is not None:
                    backlog[0] = max(backlog[0], len(s._items))

            c0 = time.thread_time()
            beats, updates = drive.run(window, 1.0 / rate, watch)
            door_cpu = time.thread_time() - c0
            o = out[side]
            o["p50"].append(_pct(beats, 0.5))
            o["p99"].append(_pct(beats, 0.99))
            o["up50"].append(_pct(updates, 0.5))
            o["up99"].append(_pct(updates, 0.99))
            if s is not None:
                late = _drained(s)
                st = figures(s)
                st.update(max_backlog=backlog[0], drain_s=late, door_cpu_s=door_cpu)
                o["shadow"].append(st)
                s.stop()
            line = (f"  round {r + 1} {side:<16} heartbeat p50 {o['p50'][-1]:7.1f} us  p99 {o['p99'][-1]:8.1f} us  "
                    f"update p50 {o['up50'][-1] / 1000:6.1f} ms  p99 {o['up99'][-1] / 1000:6.1f} ms")
            if s is not None:
                line += f"  | shadow {said(st)}; max backlog {st['max_backlog']}, drained {late:.1f} s after"
            print(line, flush=True)
            gc.collect()
    summary = {}
    for side, o in out.items():
        summary[side] = {q: statistics.median(o[q]) for q in ("p50", "p99", "up50", "up99")}
    for side in sides:
        if side == "off":
            continue
        summary[side]["ratio"] = {q: summary[side][q] / summary["off"][q] for q in ("p50", "p99", "up50", "up99")}
    return {"sides": summary, "windows": out}


def memory(build_cluster, rng, heartbeats: int) -> dict:
    """tracemalloc's live bytes: the door with its engine alone, then with
    an identical and with a changed candidate attached (inline, after
    ``heartbeats`` heartbeats so its copies exist), each measured after a
    full collection; and the process's RSS beside."""
    import tracemalloc

    # Every module imported and every process-wide cache the cluster's names
    # fill made before the count starts (a first build in a fresh process
    # counts about 4 MiB more: interned names, shared small objects).
    door(build_cluster, random.Random(7), 100, 1_000, 1_000)
    small = door(build_cluster, rng, 10, 100, 100)
    warm = Shadow(candidate(small._engine.config, 4.0), threaded=False)
    warm.attach(small)
    Driver(small).run(50, 0.0)
    warm.stop()
    del small, warm
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    rss0 = rss_mb()
    core = door(build_cluster, rng, 100, 1_000, 1_000)
    drive = Driver(core)
    drive.run(heartbeats, 0.0)
    gc.collect()
    live = tracemalloc.get_traced_memory()[0] - base
    rows = {"live": {"bytes": live, "rss_mb": rss_mb() - rss0}}
    for side, weight in (("identical", None), ("changed", 4.0)):
        s = Shadow(candidate(core._engine.config, weight), threaded=False, budget_s=float("inf"))
        s.attach(core)
        drive.run(heartbeats, 0.0)
        gc.collect()
        rows[side] = {"bytes": tracemalloc.get_traced_memory()[0] - base, "rss_mb": rss_mb() - rss0,
                      "copies": s.remakes, "diverged": s.diverged, "compared": s.compared,
                      "live_kept": core._engine._kept is not None,
                      "follower_kept": s._follower._engine._kept is not None}
        s.stop()
        gc.collect()
    rows["after_stop"] = {"bytes": tracemalloc.get_traced_memory()[0] - base, "rss_mb": rss_mb() - rss0}
    tracemalloc.stop()
    for side in ("identical", "changed"):
        rows[side]["ratio"] = rows[side]["bytes"] / live
        rows[side]["shadow_ratio"] = (rows[side]["bytes"] - live) / live
    rows["process"] = process_memory(core, drive, heartbeats, live)
    return rows


def process_memory(core, drive, heartbeats: int, live_bytes: int) -> dict:
    """The shadow process's memory: tracemalloc's count of what it holds
    from before the live state arrived (its two engines, its deques), the
    same count as the live engine's; its RSS, against that of one following
    an empty door (the interpreter and modules); and what this process
    gained while it ran."""
    import os

    os.environ["SLOTWISE_SHADOW_TRACEMALLOC"] = "1"
    try:
        empty = PolicyCore(core._engine.config, core.settings)
        s = ShadowProcess(candidate(core._engine.config, None))
        s.attach(empty)
        _drained(s)
        base = s.status()["rss_mb"]
        s.stop()
        out = {"child_base_mb": base}
        for side, weight in (("identical", None), ("changed", 4.0)):
            gc.collect()
            r0 = rss_mb()
            s = ShadowProcess(candidate(core._engine.config, weight))
            s.attach(core)
            drive.run(heartbeats, 0.0)
            _drained(s)
            st = s.memory()
            out[side] = {"child_mb": st["rss_mb"], "bytes": st["traced_bytes"],
                         "ratio": st["traced_bytes"] / live_bytes, "serve_gain_mb": rss_mb() - r0,
                         "copies": st["copies"], "compared": st["compared"], "diverged": st["diverged"]}
            s.stop()
    finally:
        del os.environ["SLOTWISE_SHADOW_TRACEMALLOC"]
    return out


def main(build_cluster, rng, quick: bool) -> dict:
    rate = len(range(1_000)) / NODES_EVERY_S  # 333 heartbeats a second
    rounds, window = (2, 1_000) if quick else (4, 3_000)
    print(f"shadow at the door (bench_engine's cluster behind PolicyCore: 100 queues, 1,000 jobs, 1,000 nodes; "
          f"{rate:.0f} heartbeats/s, an update pass every {UPDATE_EVERY_S} s; windows of {window} heartbeats, "
          f"off / identical / changed (queue0's weight 4) alternated, {rounds} rounds)", flush=True)
    res = overhead(build_cluster, rng, rounds, window, rate)
    for side in res["sides"]:
        s = res["sides"][side]
        line = (f"  {side:<16} heartbeat p50 {s['p50']:7.1f} us, p99 {s['p99']:8.1f} us; update p50 "
                f"{s['up50'] / 1000:6.1f} ms, p99 {s['up99'] / 1000:6.1f} ms")
        if side != "off":
            r = s["ratio"]
            line += (f"  (ratio to off: heartbeat p50 {r['p50']:.2f}, p99 {r['p99']:.2f}; update p50 "
                     f"{r['up50']:.2f}, p99 {r['up99']:.2f})")
        print(line, flush=True)
    print("memory (tracemalloc after gc; the door and its engine, then with a shadow attached)", flush=True)
    mem = memory(build_cluster, rng, 300 if quick else 1_000)
    live = mem["live"]["bytes"]
    print(f"  live engine alone {live / 2**20:.1f} MiB (RSS +{mem['live']['rss_mb']:.0f} MB)", flush=True)
    for side in ("identical", "changed"):
        m = mem[side]
        print(f"  with a {side} candidate {m['bytes'] / 2**20:.1f} MiB = {m['ratio']:.2f}x the live engine "
              f"(RSS +{m['rss_mb']:.0f} MB; copies {m['copies']}, diverged {m['diverged']} of {m['compared']}; "
              f"live keeps fork copies: {m['live_kept']}, follower: {m['follower_kept']})", flush=True)
    print(f"  after the shadow stopped {mem['after_stop']['bytes'] / 2**20:.1f} MiB", flush=True)
    p = mem["process"]
    print(f"the shadow in its own process (serve's way): a shadow process following an empty door "
          f"{p['child_base_mb']:.0f} MB RSS", flush=True)
    for side in ("identical", "changed"):
        m = p[side]
        print(f"  {side}: what it holds {m['bytes'] / 2**20:.1f} MiB = {m['ratio']:.2f}x the live engine, "
              f"{(1 + m['ratio']):.2f}x counting the live one (RSS {m['child_mb']:.0f} MB); this process "
              f"+{m['serve_gain_mb']:.0f} MB RSS meanwhile (copies {m['copies']}, diverged {m['diverged']} of "
              f"{m['compared']})", flush=True)
    return {"overhead": res["sides"], "memory": mem}
