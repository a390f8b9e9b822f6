"""The shim's heartbeat round trip, measured inside a real ResourceManager.

Run: .venv/bin/python benchmarks/bench_roundtrip.py [--quick]

Starts a local YARN cluster (one ResourceManager with the Slotwise shim, two
NodeManagers) under --dir (default run/bench-roundtrip), runs the Python
policy in this process (PolicyCore + PolicyServer, 10 fair queues), and loads
the RM with 10, 100 and 1,000 running applications, each with outstanding
container requests: unmanaged AMs driven by benchmarks/java/RoundTripLoad.java
(one JVM, no ApplicationMaster process per app). At each level it waits for
the load to settle, resets the shim's counters, samples for a fixed time and
prints the round trip of the heartbeat call as the shim timed it (from handing
the built payload to the call thread to the parsed answer: Py4J both ways,
Python's decoding, the engine's decision and the encoding of the answer), with
a breakdown. Goal (issue 3): p99 at most 1 ms at 1,000 apps. Everything is
taken down at the end, whatever happens.

``--forecast``: then, at each level, 2 x ``--forecast-rounds`` more windows
of ``--seconds``, alternately without and with the serve's ``Forecaster``
thread (forecaster.py: a forecast every 5 s, at most 0.3 s of CPU each, the
next after ten times what the last took), and the round trip's p50 and p99
of each, their medians per side and the ratio (goal, issue 41: p99
unchanged with forecasts on).

``--shadow``: likewise 3 x ``--shadow-rounds`` windows, alternately with
no shadow policy, an identical candidate and one that weighs p0 4 times
as much (slotwise/shadow.py, in its own process as serve runs it): p50,
p99, their medians per side and the ratios to none (goal, issue 42:
within 5%), and what each shadow did (compared, skipped, diverged, its CPU).
"""

from __future__ import annotations

import argparse
import collections
import gc
import json
import math
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from slotwise.bridge.server import PolicyServer
from slotwise.core import PolicyCore
from slotwise.config import load_allocations
from slotwise.engine import Engine
from slotwise.localcluster import SHIM_SCHEDULER, LocalCluster
from slotwise.localcluster.config import Sizes, marker, write_conf_dir
from slotwise.settings import EngineSettings

REPO = Path(__file__).resolve().parent.parent
LOADGEN = REPO / "benchmarks" / "java" / "RoundTripLoad.java"
CALLSTATS = REPO / "benchmarks" / "java" / "CallStats.java"
FLOOR = REPO / "benchmarks" / "java" / "Py4jFloor.java"
GOAL_P99_US = 1000.0
QUEUES = 10


def allocations_xml(n: int) -> str:
    queues = "\n".join(f'  <queue name="p{i}"><weight>1</weight><schedulingPolicy>fair</schedulingPolicy></queue>'
                       for i in range(n))
    # Unmanaged AMs have no AM container, but the engine counts an app's first
    # container as its AM: no maxAMShare, so that does not hold apps back.
    return f"""<?xml version="1.0"?>
<allocations>
{queues}
  <defaultQueueSchedulingPolicy>fair</defaultQueueSchedulingPolicy>
  <queueMaxAMShareDefault>-1.0</queueMaxAMShareDefault>
  <queuePlacementPolicy>
    <rule name="specified" create="false" />
    <rule name="default" queue="p0" />
  </queuePlacementPolicy>
</allocations>
"""


# --------------------------------------------------------------- Python side
_decide = threading.local()
_engine_heartbeat = Engine.heartbeat


def _timed_engine_heartbeat(self, node_id, room=None):
    t = time.perf_counter_ns()
    try:
        return _engine_heartbeat(self, node_id, room)
    finally:
        _decide.ns = time.perf_counter_ns() - t


_gc = {"collections": 0, "ns": 0, "start": 0, "gen2": 0}


def _gc_callback(phase, info):
    if phase == "start":
        _gc["start"] = time.perf_counter_ns()
    else:
        _gc["collections"] += 1
        _gc["ns"] += time.perf_counter_ns() - _gc["start"]
        _gc["gen2"] += info.get("generation") == 2


class TimedCore(PolicyCore):
    """PolicyCore that times each heartbeat in Python: the whole call (wall
    clock and the thread's CPU time), the deltas (``_apply``) and the engine's
    decision (``Engine.heartbeat``, wrapped for this process only); the rest is
    JSON decoding and encoding. Notes the calls a garbage collection fell in.
    Keeps the payloads of the sampling window for an offline decode timing."""

    def __init__(self, *a, **kw) -> None:
        super().__init__(*a, **kw)
        self.update_ns: collections.deque = collections.deque(maxlen=4096)
        self.samples: collections.deque = collections.deque(maxlen=1 << 16)
        self.payloads: collections.deque = collections.deque(maxlen=20000)
        self._apply_ns = 0
        self._updating = False  # the update pass is in Python (set by ``update``, read by heartbeats)
        self.lock_waits: collections.deque = collections.deque(maxlen=1 << 16)  # (ns, behind the pass)
        self.profiler = None  # a cProfile.Profile to run the heartbeats under (--profile)

    def heartbeat(self, payload: str) -> str:
        gcs = _gc["collections"]
        t0 = time.perf_counter_ns()
        c0 = time.thread_time_ns()
        _decide.ns = 0
        behind = self._updating
        self._lock.acquire()  # the door's lock, taken here first to time the wait for it (it is re-entrant)
        try:
            waited = time.perf_counter_ns() - t0
            if self.profiler is not None:
                answer = self.profiler.runcall(super().heartbeat, payload)
            else:
                answer = super().heartbeat(payload)
        finally:
            self._lock.release()
        cpu = time.thread_time_ns() - c0
        total = time.perf_counter_ns() - t0
        if '"beats"' not in payload:
            return answer  # the update's deltas, a heartbeat with no beats: not a heartbeat decided
        self.lock_waits.append((waited, behind))
        self.samples.append((total, self._apply_ns, _decide.ns, len(payload), cpu, _gc["collections"] != gcs,
                             answer.count('_local"') + answer.count('"off_switch"')))
        self.payloads.append((payload, answer))
        return answer

    def update(self, payload: str) -> str:
        t0 = time.perf_counter_ns()
        self._updating = True
        try:
            return super().update(payload)
        finally:
            self._updating = False
            self.update_ns.append(time.perf_counter_ns() - t0)

    def _apply(self, msg) -> None:
        t = time.perf_counter_ns()
        try:
            super()._apply(msg)
        finally:
            self._apply_ns = time.perf_counter_ns() - t

    def reset(self) -> None:
        self.update_ns.clear()
        self.lock_waits.clear()
        self.counters_at_reset = dict(self.counters)
        self.samples.clear()
        self.payloads.clear()
        _gc.update(collections=0, ns=0, gen2=0)


# -------------------------------------------------------------- load driver
class LoadGenerator:
    """RoundTripLoad in its own JVM, driven over stdin/stdout."""

    def __init__(self, cluster: LocalCluster, workdir: Path, am_interval_ms: int, asks: int, mb: int) -> None:
        state = cluster.state
        java_home = Path(state.java_home)
        classes = workdir / "classes"
        classes.mkdir(parents=True, exist_ok=True)
        cp = os.pathsep.join(state.classpath)
        subprocess.run([str(java_home / "bin" / "javac"), "-nowarn", "-encoding", "UTF-8", "-d", str(classes),
                        "-cp", cp, str(LOADGEN)], check=True, capture_output=True, text=True)
        conf = workdir / "conf"
        write_conf_dir(conf, core={"fs.defaultFS": "file:///", "hadoop.security.authentication": "simple"},
                       yarn=state.yarn_site, mapred={}, log_file=workdir / "loadgen.log4j.log")
        self.log_path = workdir / "loadgen.log"
        argv = [str(java_home / "bin" / "java"), *state.jvm_flags, "-Xmx1g", marker(cluster.dir),
                "-cp", os.pathsep.join([str(conf), str(classes), cp]), "RoundTripLoad",
                "--queues", str(QUEUES), "--asks", str(asks), "--mb", str(mb),
                "--am-interval-ms", str(am_interval_ms)]
        self._err = open(self.log_path, "w")
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._err,
                                     text=True, bufsize=1, cwd=workdir)
        self._lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self._lines.put(line.strip())
        self._lines.put(None)

    def command(self, cmd: str, timeout: float) -> str:
        self.proc.stdin.write(cmd + "\n")
        self.proc.stdin.flush()
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise RuntimeError(f"load generator: no answer to {cmd!r} within {timeout:.0f} s "
                               f"(see {self.log_path})") from None
        if line is None or line.startswith("error"):
            raise RuntimeError(f"load generator failed on {cmd!r}: {line} (see {self.log_path})")
        return line

    def counts(self) -> dict[str, int]:
        line = self.command("counts", 30)
        return {k: int(v) for k, v in (f.split("=") for f in line.split()[1:])}

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.command("stop", 120)
            except Exception as e:
                print(f"load generator did not stop cleanly: {e}", flush=True)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=15)
        self._err.close()


# ----------------------------------------------------------------- figures
def pct(values: list[float], q: float) -> float:
    """Nearest-rank percentile, as the shim computes it."""
    if not values:
        return 0.0
    s = sorted(values)
    rank = max(1, min(len(s), math.ceil(q * len(s) - 1e-9)))
    return s[rank - 1]


def us(ns: float) -> float:
    return ns / 1000.0


def python_breakdown(core: TimedCore) -> dict:
    samples = list(core.samples)
    payloads = list(core.payloads)
    total = [s[0] for s in samples]
    apply = [s[1] for s in samples]
    decide = [s[2] for s in samples]
    cpu = [s[4] for s in samples]
    with_gc = sum(1 for s in samples if s[5])
    # Offline: decoding the same payloads (checked against the schema) and
    # encoding the answers.
    from slotwise import protocol as wire

    loads, dumps = [], []
    for p, a in payloads:
        t = time.perf_counter_ns()
        wire.decode("Payload", p)
        loads.append(time.perf_counter_ns() - t)
        obj = json.loads(a)
        t = time.perf_counter_ns()
        json.dumps(obj, separators=(",", ":"))
        dumps.append(time.perf_counter_ns() - t)
    comp = collections.Counter()
    for p, a in payloads:
        m = json.loads(p)
        ans = json.loads(a)
        comp["payloads"] += 1
        for k in ("apps", "launched", "finished", "rejected", "nodes", "apps_removed"):
            comp[k] += len(m.get(k, ()))
        comp["full"] += bool(m.get("full"))
        comp["assign"] += len(ans.get("assign", ()))
    n = max(1, comp["payloads"])
    by_assign = {}
    for label, keep in (("0", lambda k: k == 0), ("1", lambda k: k == 1), ("2+", lambda k: k >= 2)):
        d = [s[2] for s in samples if keep(s[6])]
        by_assign[label] = {"n": len(d), "p50": us(pct(d, .5)), "p99": us(pct(d, .99))}

    def fig(v):
        return {"p50": us(pct(v, .5)), "p90": us(pct(v, .9)), "p99": us(pct(v, .99)), "max": us(max(v, default=0))}

    upd = list(core.update_ns)
    waits = list(core.lock_waits)
    behind = [w for w, b in waits if b]
    counts = {k: v - getattr(core, "counters_at_reset", {}).get(k, 0) for k, v in core.counters.items()}
    return {"count": len(samples), "total": fig(total), "update_python": fig(upd), "counters": counts, "cpu": fig(cpu), "apply": fig(apply), "decide": fig(decide),
            "gc": {"collections": _gc["collections"], "gen2": _gc["gen2"], "ms": _gc["ns"] / 1e6,
                   "heartbeats_with_gc": with_gc},
            "loads": fig(loads), "dumps": fig(dumps),
            "per_payload": {k: comp[k] / n for k in ("apps", "launched", "finished", "rejected", "assign")},
            "decide_by_assignments": by_assign,
            "full_payloads": comp["full"],
            "lock_wait": fig([w for w, _ in waits] or [0]), "behind_update": len(behind),
            "behind_update_wait": fig(behind or [0])}


def java_figures(stats: dict) -> dict:
    out = {"count": stats["count"], "samples": stats["samples"], "fallbacks": stats["fallbacks"],
           "failures": stats["failures"], "payload_chars": stats["payload_chars"],
           "answer_chars": stats["answer_chars"]}
    for k in ("total_ns", "invoke_ns", "build_ns", "wait_ns"):
        out[k[:-3]] = {q: us(v) for q, v in stats[k].items()}
    return out


# -------------------------------------------------------------------- floor
class _FloorEcho:
    ANSWER = '{"assign":[["application_1_0001","localhost:1",1,"node_local","application_1_0001#17"]],"preempt":[]}'

    def heartbeat(self, payload):
        return self.ANSWER

    class Java:
        implements = ["Py4jFloor$Echo"]


def floor(args) -> dict:
    """Py4jFloor: an empty Python callback called from Java, directly and
    through an executor as the shim does, with pauses as between heartbeats."""
    import secrets

    from py4j.java_gateway import CallbackServerParameters, GatewayParameters, JavaGateway

    from slotwise.localcluster.classpath import build_shim, find_shim_jar
    from slotwise.localcluster.jvm import find_java

    repo = Path(args.repo).resolve() if args.repo else REPO
    jar = find_shim_jar(repo) if args.no_build else build_shim(repo, print)
    if jar is None:
        raise RuntimeError("no shim jar (it carries Py4J): build it with mvn -q -B package")
    java = find_java()
    work = Path(tempfile.mkdtemp(prefix="slotwise-py4j-floor-"))
    token = secrets.token_hex(32)
    calls = 300 if args.quick else 2000
    gateway = proc = None
    try:
        subprocess.run([str(java.home / "bin" / "javac"), "-nowarn", "-d", str(work), "-cp", str(jar), str(FLOOR)],
                       check=True, capture_output=True, text=True)
        proc = subprocess.Popen([str(java.exe), "-cp", os.pathsep.join([str(work), str(jar)]), "Py4jFloor", token,
                                 str(calls), str(args.floor_pause_ms), "450"], stdout=subprocess.PIPE, text=True)
        port = int(proc.stdout.readline().split()[1])
        gateway = JavaGateway(
            gateway_parameters=GatewayParameters(address="127.0.0.1", port=port, auth_token=token),
            callback_server_parameters=CallbackServerParameters(address="127.0.0.1", port=0, auth_token=token,
                                                                daemonize=True, daemonize_connections=True))
        server = gateway.java_gateway_server
        server.resetCallbackClient(server.getCallbackClient().getAddress(),
                                   gateway.get_callback_server().get_listening_port())
        gateway.entry_point.register(_FloorEcho())
        rows = {}
        for line in proc.stdout:
            name, n, *q = line.split()
            rows[name] = {"n": int(n), **dict(zip(("p50", "p90", "p99", "max"), map(float, q)))}
        proc.wait(timeout=30)
    finally:
        if gateway is not None:
            gateway.shutdown()
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        shutil.rmtree(work, ignore_errors=True)
    print(f"Py4J floor: an empty Python callback, 450-char payload, {args.floor_pause_ms} ms between calls "
          f"(microseconds)")
    what = {"direct": "Py4J call on the calling thread", "executor": "Py4J call through an executor (as the shim)",
            "handoff": "the executor hand-off alone (no Py4J)"}
    for name, r in rows.items():
        print(f"  {what.get(name, name):<46} n={r['n']:<5} median {r['p50']:>6.0f}  p90 {r['p90']:>6.0f}  "
              f"p99 {r['p99']:>7.0f}  max {r['max']:>7.0f}", flush=True)
    return rows


# -------------------------------------------------------------------- main
def wait_for(cond, timeout: float, what: str, step: float = 0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(step)
    raise RuntimeError(f"timed out after {timeout:.0f} s waiting for {what}")


def run(args) -> list[dict]:
    workdir = Path(args.dir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="slotwise-bench-rt-"))
    alloc = tmp / "allocations.xml"
    alloc.write_text(allocations_xml(QUEUES))
    from slotwise.localcluster.classpath import build_shim, find_shim_jar, resolve
    from slotwise.localcluster.jvm import find_java

    # The call timings live outside the shim jar: compile them for the RM's classpath.
    repo = Path(args.repo).resolve() if args.repo else REPO
    jar = find_shim_jar(repo) if args.no_build else build_shim(repo, print)
    jars = resolve(repo, workdir / "jar-cache", (lambda m: None) if args.quiet else print)
    timings = workdir / "callstats-classes"
    timings.mkdir(parents=True, exist_ok=True)
    subprocess.run([str(find_java().home / "bin" / "javac"), "-nowarn", "-encoding", "UTF-8", "-d", str(timings),
                    "-cp", os.pathsep.join([str(jar), *jars.classpath]), str(CALLSTATS)],
                   check=True, capture_output=True, text=True)
    conf = {
        "slotwise.call-observer.class": "org.slotwise.shim.CallStats",
        "slotwise.policy.timeout-ms": "100",
        "yarn.resourcemanager.nodemanagers.heartbeat-interval-ms": str(args.heartbeat_ms),
        # Containers are allocated and released, never launched: nothing may
        # expire them, and no AM may be declared lost, during a run.
        "yarn.resourcemanager.rm.container-allocation.expiry-interval-ms": "3600000",
        "yarn.am.liveness-monitor.expiry-interval-ms": "3600000",
    }
    sizes = Sizes(nm_memory_mb=args.nm_gb * 1024, nm_vcores=args.nm_gb * 1024 // args.mb,
                  daemon_heap="-Xmx1g")
    cluster = LocalCluster(workdir / "cluster", nodes=args.nodes, scheduler=SHIM_SCHEDULER, conf=conf,
                           sizes=sizes, build_shim=False, repo=args.repo, rm_classpath=[str(timings)],
                           log=(lambda m: None) if args.quiet else None)
    server = gen = None
    server_thread = None
    results: list[dict] = []
    try:
        cluster.up()
        Engine.heartbeat = _timed_engine_heartbeat  # this process only: times the decision
        gc.callbacks.append(_gc_callback)
        core = TimedCore(load_allocations(alloc), EngineSettings(heartbeat_interval=args.heartbeat_ms / 1000.0))
        info = cluster.gateway_info_file
        wait_for(info.exists, 60, f"the shim's gateway file {info}")
        server = PolicyServer(core, str(info), str(info.with_name("gateway.token")))
        server_thread = threading.Thread(target=server.run, kwargs={"retry_seconds": 0.5}, daemon=True)
        server_thread.start()
        wait_for(lambda: server.gateway is not None and core.counters["calls"] > 0, 60, "the policy to register")
        ep = server.gateway.entry_point
        timings_of = server.gateway.jvm.org.slotwise.shim.CallStats

        def call_stats(method: str, reset: bool, totals: bool = False) -> dict:
            stats = json.loads(timings_of.json(method, reset, totals))
            link = json.loads(ep.status("{}"))
            stats.update(fallbacks=link["fallback_heartbeats"], failures=link["failures"])
            return stats

        wait_for(lambda: call_stats("heartbeat", False)["count"] > 0, 60, "Python to answer heartbeats")
        gen = LoadGenerator(cluster, workdir / "loadgen", args.am_interval_ms, args.asks, args.mb)
        print(f"cluster: {args.nodes} NodeManagers of {args.nm_gb} GB ({sizes.nm_vcores} vcores), "
              f"NM heartbeat {args.heartbeat_ms} ms; apps ask {args.asks} x {args.mb} MB, "
              f"AM heartbeat {args.am_interval_ms} ms; warm-up {args.warmup:.0f} s, then per level settle "
              f"{args.settle:.0f} s and sample {args.seconds:.0f} s",
              flush=True)
        for level in args.levels:
            t0 = time.monotonic()
            ready = gen.command(f"grow {level}", timeout=600)
            grow_s = time.monotonic() - t0
            # The first level also warms up the JVMs (JIT) and Python.
            time.sleep(args.settle + (args.warmup if not results else 0))
            c0 = gen.counts()
            java_before = call_stats("heartbeat", True)
            call_stats("update", True)
            call_stats("deltas", True)
            core.reset()
            if args.profile and level == args.levels[-1]:
                import cProfile
                core.profiler = cProfile.Profile()
            time.sleep(args.seconds)
            if core.profiler is not None:
                core.profiler.dump_stats(args.profile)
                core.profiler = None
                print(f"      Python heartbeats profiled (cProfile, so slower) into {args.profile}", flush=True)
            stats = call_stats("heartbeat", False)
            update = call_stats("update", False)
            deltas = call_stats("deltas", False)
            c1 = gen.counts()
            row = {"apps": level, "grow_seconds": round(grow_s, 1), "java": java_figures(stats),
                   "fallbacks": stats["fallbacks"] - java_before["fallbacks"],
                   "failures": stats["failures"] - java_before["failures"],
                   "update": java_figures(update), "deltas": java_figures(deltas),
                   "python": python_breakdown(core),
                   "am_allocates_per_s": (c1["allocates"] - c0["allocates"]) / args.seconds,
                   "containers_per_s": (c1["received"] - c0["received"]) / args.seconds,
                   "ready": ready}
            results.append(row)
            print_row(row, header=len(results) == 1)
            print_breakdown(row)
            if args.forecast:
                row["forecast"] = forecast_windows(args, core, call_stats)
            if args.shadow:
                row["shadow"] = shadow_windows(args, core, alloc, call_stats)
    finally:
        try:
            if gen is not None:
                gen.close()  # unregisters the apps
        finally:
            try:
                if server is not None:
                    server.stop()
                    server_thread.join(10)
                    server.close()
            finally:
                Engine.heartbeat = _engine_heartbeat
                if _gc_callback in gc.callbacks:
                    gc.callbacks.remove(_gc_callback)
                cluster.down(quiet=args.quiet)  # also kills a load generator left running (it has the marker)
                shutil.rmtree(tmp, ignore_errors=True)
    return results


class _Link:
    """What a Forecaster asks of a server (``link_status``, ``core``): the
    link is never gone here."""

    def __init__(self, core) -> None:
        self.core = core

    def link_status(self) -> dict:
        return {"resource_manager": None}


def forecast_windows(args, core, call_stats) -> dict:
    """Windows of ``args.seconds`` alternately without and with a Forecaster
    thread: each one's round-trip p50/p99 (microseconds), the medians of
    each side and their ratio (with / without)."""
    import statistics

    from slotwise.forecaster import Forecaster

    sides: dict = {"off": [], "on": []}
    made = []
    for i in range(2 * args.forecast_rounds):
        on = i % 2 == 1
        f = Forecaster(_Link(core)).start() if on else None
        call_stats("heartbeat", True)
        time.sleep(args.seconds)
        t = java_figures(call_stats("heartbeat", False))["total"]
        if f is not None:
            f.stop()
            made.append(f.cpu_ms)
        sides["on" if on else "off"].append(t)
        print(f"      forecasts {'on ' if on else 'off'}: round trip p50 {t['p50']:.0f} us, p99 {t['p99']:.0f} us"
              + (f" (the last forecast took {f.cpu_ms:.0f} ms of CPU)" if on else ""), flush=True)
    out = {}
    for side, ts in sides.items():
        out[side] = {q: statistics.median(t[q] for t in ts) for q in ("p50", "p99")}
    out["ratio"] = {q: out["on"][q] / out["off"][q] for q in ("p50", "p99")}
    out["forecast_cpu_ms"] = made
    print(f"      forecasts off: p50 {out['off']['p50']:.0f} us, p99 {out['off']['p99']:.0f} us; on: p50 "
          f"{out['on']['p50']:.0f} us, p99 {out['on']['p99']:.0f} us; ratio (on / off) p50 "
          f"{out['ratio']['p50']:.2f}, p99 {out['ratio']['p99']:.2f} (medians of {args.forecast_rounds} windows "
          f"each, alternated)", flush=True)
    return out


def shadow_windows(args, core, alloc: Path, call_stats) -> dict:
    """Windows of ``args.seconds`` alternately without a shadow, with an
    identical candidate and with one that weighs p0 4 times as much, each
    in its own process as serve runs it (and, with ``--shadow-thread``, the
    same two on a thread of this process, the way before), started at the
    window's start and stopped at its end as an operator's ``shadow
    start``/``stop`` would: each one's round-trip p50/p99 (microseconds),
    the medians per side and their ratios to none."""
    import statistics

    import shadow_door
    from slotwise.config import parse_allocations
    from slotwise.shadow import Shadow
    from slotwise.shadow_process import ShadowProcess

    text = alloc.read_text()
    changed = text.replace('<queue name="p0"><weight>1</weight>', '<queue name="p0"><weight>4</weight>')
    assert changed != text
    candidates = {"off": None, "identical": parse_allocations(text, "identical.xml"),
                  "changed": parse_allocations(changed, "changed.xml")}
    if args.shadow_thread:
        candidates.update({"identical@thread": candidates["identical"], "changed@thread": candidates["changed"]})
    sides: dict = {k: [] for k in candidates}
    pooled: dict = {k: [] for k in candidates}  # every window's samples of a side together
    shadows: dict = {k: [] for k in candidates if k != "off"}
    for _ in range(args.shadow_rounds):
        for side, config in candidates.items():
            s = None
            if config is not None:
                s = Shadow(config) if side.endswith("@thread") else ShadowProcess(config)
                s.attach(core)
                time.sleep(1.0)  # its first copy of the live state made
            call_stats("heartbeat", True)
            time.sleep(args.seconds)
            stats = call_stats("heartbeat", False, True)
            t = java_figures(stats)["total"]
            sides[side].append(t)
            pooled[side].extend(stats["total_us"])
            line = f"      shadow {side:<16}: round trip p50 {t['p50']:.0f} us, p99 {t['p99']:.0f} us"
            if s is not None:
                st = shadow_door.figures(s)
                s.stop()
                shadows[side].append(st)
                line += f" ({shadow_door.said(st)}; backlog {st['backlog']} at the end)"
            print(line, flush=True)
    out: dict = {"shadows": shadows}
    for side, ts in sides.items():
        out[side] = {q: statistics.median(t[q] for t in ts) for q in ("p50", "p99")}
        out[side]["pooled"] = {"samples": len(pooled[side]), "p50": pct(pooled[side], 0.50),
                               "p99": pct(pooled[side], 0.99)}
    shadowed = [k for k in candidates if k != "off"]
    for side in shadowed:
        out[side]["ratio"] = {q: out[side][q] / out["off"][q] for q in ("p50", "p99")}
        out[side]["pooled_ratio"] = {q: out[side]["pooled"][q] / out["off"]["pooled"][q] for q in ("p50", "p99")}
    print(f"      shadow off: p50 {out['off']['p50']:.0f} us, p99 {out['off']['p99']:.0f} us; "
          + "; ".join(f"{side}: p50 {out[side]['p50']:.0f} us, p99 {out[side]['p99']:.0f} us (ratio p50 "
                      f"{out[side]['ratio']['p50']:.2f}, p99 {out[side]['ratio']['p99']:.2f})"
                      for side in shadowed)
          + f" (medians of {args.shadow_rounds} windows each, alternated; goal: ratios <= 1.05)", flush=True)
    print("      pooled (every window's samples of a side together): "
          + "; ".join(f"{side}: {out[side]['pooled']['samples']} samples, p50 {out[side]['pooled']['p50']} us, "
                      f"p99 {out[side]['pooled']['p99']} us"
                      + (f" (ratio p50 {out[side]['pooled_ratio']['p50']:.2f}, p99 {out[side]['pooled_ratio']['p99']:.2f})"
                         if side != "off" else "")
                      for side in candidates), flush=True)
    return out


def print_row(r: dict, header: bool) -> None:
    if header:
        print(f"{'apps':>5} {'samples':>7} {'median':>8} {'p90':>8} {'p99':>8} {'max':>8}  "
              f"{'payload':>8} {'fallbacks':>9}  p99/goal   (round trip, microseconds; payload: mean bytes)")
    j = r["java"]
    t = j["total"]
    print(f"{r['apps']:>5} {j['samples']:>7} {t['p50']:>8.0f} {t['p90']:>8.0f} {t['p99']:>8.0f} {t['max']:>8.0f}  "
          f"{j['payload_chars']['mean']:>8} {r['fallbacks']:>9}  {t['p99'] / GOAL_P99_US:>7.2f}x", flush=True)


def print_breakdown(r: dict) -> None:
    j, p, u = r["java"], r["python"], r["update"]

    def f(d):
        return f"{d['p50']:.0f}/{d['p99']:.0f}"

    pp = p["per_payload"]
    print(f"      p50/p99 us: Py4J call (Java) {f(j['invoke'])}, in Python {f(p['total'])} "
          f"[apply {f(p['apply'])}, decide {f(p['decide'])}, decode {f(p['loads'])}, json.dumps {f(p['dumps'])}]; "
          f"Java build {f(j['build'])}, wait for the line {f(j['wait'])} (max {j['wait']['max']:.0f}); "
          f"update call {f(u['total'])} (n={u['count']}, on its own line; in Python {f(p['update_python'])}); "
          f"the update's deltas on the line {f(r['deltas']['total'])} (n={r['deltas']['count']}); "
          f"policy counts in the window {p['counters']}", flush=True)
    da = p["decide_by_assignments"]
    print("      decision by containers assigned: " + ", ".join(
        f"{k}: {v['p50']:.0f}/{v['p99']:.0f} (n={v['n']})" for k, v in da.items()), flush=True)
    print(f"      Python's lock, heartbeats: wait {f(p['lock_wait'])} (max {p['lock_wait']['max']:.0f}); "
          f"{p['behind_update']} of {p['count']} arrived while the update pass was in Python, "
          f"their wait {f(p['behind_update_wait'])} (max {p['behind_update_wait']['max']:.0f})", flush=True)
    g = p["gc"]
    print(f"      Python CPU time per heartbeat {f(p['cpu'])}; Python GC in the window: {g['collections']} collections "
          f"({g['gen2']} full), {g['ms']:.1f} ms, in {g['heartbeats_with_gc']} heartbeats", flush=True)
    print(f"      per heartbeat: {pp['apps']:.2f} apps, {pp['launched']:.2f} launched, {pp['finished']:.2f} finished, "
          f"{pp['rejected']:.2f} rejected, {pp['assign']:.2f} assigned; full payloads {p['full_payloads']}; "
          f"AM allocates {r['am_allocates_per_s']:.0f}/s, containers {r['containers_per_s']:.0f}/s; "
          f"failures {r['failures']}", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="short settle and sampling (about 2 minutes in all)")
    ap.add_argument("--levels", default="10,100,1000", help="running apps per level (default 10,100,1000)")
    ap.add_argument("--seconds", type=float, help="sampling time per level (default 75, --quick 15)")
    ap.add_argument("--settle", type=float, help="wait after the apps are running (default 20, --quick 8)")
    ap.add_argument("--warmup", type=float, help="extra wait before the first level (default 60, --quick 20)")
    ap.add_argument("--dir", default=str(REPO / "run" / "bench-roundtrip"), help="cluster and load generator dir")
    ap.add_argument("--nodes", type=int, default=2, help="NodeManagers (default 2)")
    ap.add_argument("--nm-gb", type=int, default=24, help="declared memory per NodeManager, GB (default 24)")
    ap.add_argument("--heartbeat-ms", type=int, default=50, help="NodeManager heartbeat interval (default 50)")
    ap.add_argument("--am-interval-ms", type=int, default=5000, help="each AM's heartbeat interval (default 5000)")
    ap.add_argument("--asks", type=int, default=20, help="containers each app keeps asking for (default 20)")
    ap.add_argument("--mb", type=int, default=256, help="container size, MB (default 256)")
    ap.add_argument("--no-build", action="store_true", help="use the shim jar already built")
    ap.add_argument("--repo", help="the checkout whose shim (and Hadoop version) to run, to compare variants "
                                   "(default: this one)")
    ap.add_argument("--forecast", action="store_true",
                    help="also sample with the Forecaster thread on and off, alternated, at each level")
    ap.add_argument("--forecast-rounds", type=int, default=2, help="windows per side with --forecast (default 2)")
    ap.add_argument("--shadow", action="store_true",
                    help="also sample with no shadow, an identical and a changed candidate, alternated, at each level")
    ap.add_argument("--shadow-rounds", type=int, default=3, help="windows per side with --shadow (default 3)")
    ap.add_argument("--shadow-thread", action="store_true",
                    help="with --shadow: two more sides, the same candidates on a thread of serve's process "
                         "(the way before the shadow had a process of its own)")
    ap.add_argument("--json", metavar="FILE", help="write the figures here as JSON")
    ap.add_argument("--quiet", action="store_true", help="no cluster start-up messages")
    ap.add_argument("--floor", action="store_true",
                    help="no cluster: time an empty Py4J callback from Java, directly and through an executor")
    ap.add_argument("--floor-pause-ms", type=int, default=25, help="pause between --floor calls (default 25)")
    ap.add_argument("--profile", metavar="FILE",
                    help="run the last level's Python heartbeats under cProfile and dump the stats here")
    args = ap.parse_args(argv)
    args.levels = [int(x) for x in args.levels.split(",")]
    args.seconds = args.seconds or (15.0 if args.quick else 75.0)
    args.settle = args.settle if args.settle is not None else (8.0 if args.quick else 20.0)
    args.warmup = args.warmup if args.warmup is not None else (20.0 if args.quick else 60.0)
    started = time.monotonic()
    if args.floor:
        rows = floor(args)
        if args.json:
            Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
        return 0
    results = run(args)
    print(f"goal: p99 <= {GOAL_P99_US:.0f} us at 1000 apps; total {time.monotonic() - started:.0f} s", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
