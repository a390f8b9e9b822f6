"""Slotwise beside YARN's FairScheduler in Hadoop's Scheduler Load Simulator.

Run: .venv/bin/python benchmarks/bench_sls.py [--quick] [--nodes 100,1000,5000] [--dir DIR]

SLS runs a real ResourceManager in one JVM with simulated NodeManagers and
ApplicationMasters, in wall-clock time. The same synthetic SLS trace (four
queues, a mix of small and large jobs, arriving over the first part of the
run) and the same allocation file run twice at each size: once with
FairScheduler (SLS's own wrapper, timed), once with SlotwiseScheduler and
`slotwise serve` beside it. SLS is on Maven Central only up to 3.4.x, so
sls/pom.xml builds the shim's sources against Hadoop 3.4.2 and everything
runs on that one version.

Measured the same way for both (sls/src/main/java): container allocations
handed to AMs per second, the time the scheduler takes per NODE_UPDATE
(Python's round trip included for Slotwise), job completion times (SLS's
jobruntime.csv), each queue's share of allocated memory over time (SLS's
realtimetrack.json), and Python's CPU seconds. The last line is
``sls: slotwise/fairscheduler allocations-per-second ratio R at N nodes``
for the largest N run.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "python"))

from slotwise.localcluster.jvm import ADD_OPENS, find_java  # noqa: E402
from slotwise.localcluster.ports import free_ports  # noqa: E402

HADOOP = "3.4.2"
FAIR = "org.apache.hadoop.yarn.sls.scheduler.TimedFairScheduler"
SLOTWISE = "org.apache.hadoop.yarn.sls.scheduler.SlotwiseSlsScheduler"
QUEUES = {"prod": 2.0, "research": 1.0, "adhoc": 1.0, "etl": 1.0}
NODE_MB, NODE_VCORES, TASK_MB = 10240, 10, 1024
NODES_PER_RACK = 40

ALLOCATIONS = """<?xml version="1.0"?>
<allocations>
{queues}
  <queuePlacementPolicy>
    <rule name="specified"/>
    <rule name="reject"/>
  </queuePlacementPolicy>
</allocations>
"""


def log(msg: str) -> None:
    print(f"bench_sls: {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------ build
def build() -> list[str]:
    """The harness jar and its classpath (Hadoop 3.4.2, SLS, the shim's sources)."""
    mvn = os.environ.get("SLOTWISE_MVN") or "mvn"
    pom = REPO / "sls" / "pom.xml"
    cp_file = REPO / "sls" / "target" / "classpath.txt"
    jar = REPO / "sls" / "target" / "slotwise-sls-0.1.0.jar"
    sources = [p for d in ("sls/src", "java-shim/src/main", "shim-link/src/main") for p in (REPO / d).rglob("*.java")]
    newest = max(p.stat().st_mtime for p in sources + [pom])
    if not jar.is_file() or jar.stat().st_mtime < newest or not cp_file.is_file():
        log(f"building sls/ against Hadoop {HADOOP} (the first time downloads SLS and the minicluster into ~/.m2)")
        subprocess.run([mvn, "-q", "-B", "-f", str(pom), "package", "dependency:build-classpath",
                        f"-Dmdep.outputFile={cp_file}"], check=True)
    return [str(jar)] + [p for p in cp_file.read_text().strip().split(os.pathsep) if p]


# ------------------------------------------------------------------ workload
def make_trace(nodes: int, seconds: float, seed: int) -> dict:
    """A SYNTH workload (SLS's own generator, seeded, so both schedulers get
    the same jobs): in every queue small jobs (about 20 maps of 10 s) and,
    one in seven, large ones (a sixth of the cluster's containers, maps of
    30 s), meant to arrive over the first 60% of the run (SLS 3.4.2 submits
    them all within the first second here: one burst), enough offered work
    (about 1.3x the cluster) to keep it short of containers."""
    slots = nodes * (NODE_MB // TASK_MB)
    small = {"maps": 20, "mtime": 10}
    large = {"maps": max(20, slots // 6), "mtime": 30}
    p_large = 1 / 7
    work = (1 - p_large) * small["maps"] * small["mtime"] + p_large * large["maps"] * large["mtime"]
    jobs = max(8, round(1.3 * slots * seconds * 0.6 / work))

    def job_class(name, weight, c, queue):
        return {"class_name": f"{queue}-{name}", "user_name": f"user_{queue}", "class_weight": weight,
                "mtasks_avg": c["maps"], "mtasks_stddev": max(1, c["maps"] // 5), "rtasks_avg": 1,
                "rtasks_stddev": 0.001, "dur_avg": c["mtime"] * 3, "dur_stddev": 1,
                "mtime_avg": c["mtime"], "mtime_stddev": c["mtime"] / 5, "rtime_avg": 5, "rtime_stddev": 1,
                "map_max_memory_avg": TASK_MB, "map_max_memory_stddev": 0.001, "map_execution_type": "GUARANTEED",
                "reduce_max_memory_avg": TASK_MB, "reduce_max_memory_stddev": 0.001,
                "reduce_execution_type": "GUARANTEED", "map_max_vcores_avg": 1, "map_max_vcores_stddev": 0.001,
                "reduce_max_vcores_avg": 1, "reduce_max_vcores_stddev": 0.001, "chance_of_reservation": 0.0,
                "deadline_factor_avg": 10.0, "deadline_factor_stddev": 0.001}

    return {
        "description": f"slotwise bench_sls: {nodes} nodes, {len(QUEUES)} queues, small and large jobs",
        "num_nodes": nodes, "nodes_per_rack": NODES_PER_RACK, "num_jobs": jobs, "rand_seed": seed + 1,
        "workloads": [{"workload_name": q, "workload_weight": 1.0, "queue_name": q,
                       "job_classes": [job_class("small", 1 - p_large, small, q),
                                       job_class("large", p_large, large, q)],
                       "time_distribution": [{"time": 1, "weight": 100}, {"time": int(seconds * 0.6), "weight": 0}]}
                      for q in QUEUES]}


def write_run_dir(d: Path, synth: dict, scheduler: str, gateway: Path | None, async_scheduling: bool = True) -> None:
    d.mkdir(parents=True, exist_ok=True)
    # SLS's NodeManagers are named node0, node1, ...; the RM resolves a
    # node's name for every container token it makes. Through the system
    # resolver each made-up name is a DNS query that fails slowly, and those
    # lookups, not the scheduler, set the pace (dozens of SLS threads stuck
    # in them). The JVM reads this file instead (jdk.net.hosts.file).
    hosts = ["127.0.0.1 localhost", f"127.0.0.1 {socket.gethostname()}"]
    hosts += [f"127.0.0.1 node{i}" for i in range(synth["num_nodes"])]
    (d / "hosts").write_text("\n".join(hosts) + "\n")
    (d / "trace.json").write_text(json.dumps(synth, indent=1) + "\n")
    queues = "\n".join(f'  <queue name="{q}"><weight>{w}</weight></queue>' for q, w in QUEUES.items())
    (d / "fair-scheduler.xml").write_text(ALLOCATIONS.format(queues=queues))
    nodes = synth["num_nodes"]
    runner_threads = max(20, min(200, nodes // 25))
    runner = {
        "yarn.sls.runner.pool.size": runner_threads, "yarn.sls.nm.heartbeat.interval.ms": 1000,
        "yarn.sls.am.heartbeat.interval.ms": 1000, "yarn.sls.nm.memory.mb": NODE_MB,
        "yarn.sls.nm.vcores": NODE_VCORES, "yarn.sls.container.memory.mb": TASK_MB,
        "yarn.sls.container.vcores": 1, "yarn.sls.am.container.memory": TASK_MB, "yarn.sls.am.container.vcores": 1,
        "yarn.sls.am.type.mapreduce": "org.apache.hadoop.yarn.sls.appmaster.MRAMSimulator",
        "yarn.sls.dns.caching.enabled": "true", "yarn.sls.metrics.switch": "true",
        "yarn.sls.metrics.web.address.port": free_ports(1)[0],
        "org.slotwise.shim.SlotwiseScheduler": "org.apache.hadoop.yarn.sls.scheduler.SlotwiseSchedulerMetrics",
    }
    ports = free_ports(6)
    site = {
        "yarn.resourcemanager.scheduler.class": scheduler,
        "yarn.scheduler.fair.allocation.file": str(d / "fair-scheduler.xml"),
        "yarn.scheduler.fair.assignmultiple": "true", "yarn.scheduler.fair.maxassign": "-1",
        "yarn.scheduler.fair.preemption": "false",
        "yarn.scheduler.maximum-allocation-mb": NODE_MB, "yarn.scheduler.maximum-allocation-vcores": NODE_VCORES,
        "hadoop.security.token.service.use_ip": "false",
        "yarn.resourcemanager.address": f"localhost:{ports[0]}",
        "yarn.resourcemanager.scheduler.address": f"localhost:{ports[1]}",
        "yarn.resourcemanager.resource-tracker.address": f"localhost:{ports[2]}",
        "yarn.resourcemanager.admin.address": f"localhost:{ports[3]}",
        "yarn.resourcemanager.webapp.address": f"localhost:{ports[4]}",
    }
    if gateway is not None:
        site.update({"slotwise.gateway.info-file": str(gateway / "gateway.json"),
                     "slotwise.gateway.token-file": str(gateway / "gateway.token"),
                     "slotwise.policy.timeout-ms": "1000",
                     "slotwise.scheduling.async": str(async_scheduling).lower(),
                     "slotwise.call-observer.class": "org.slotwise.sls.SlsCallObserver"})
    for name, props in (("sls-runner.xml", runner), ("yarn-site.xml", site)):
        body = "\n".join(f"  <property><name>{k}</name><value>{v}</value></property>" for k, v in props.items())
        (d / name).write_text(f'<?xml version="1.0"?>\n<configuration>\n{body}\n</configuration>\n')


# ------------------------------------------------------------------ running
def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_one(d: Path, classpath: list[str], scheduler: str, limit: float, heap: str, record: bool = False) -> dict:
    java = find_java()
    out = d / "out"
    summary = d / "summary.json"
    serve = None
    gateway = d / "gateway" if scheduler == SLOTWISE else None
    cmd = [str(java.exe), *ADD_OPENS, f"-Xmx{heap}", f"-Dslotwise.sls.summary={summary}",
           f"-Djdk.net.hosts.file={d / 'hosts'}",
           "-cp", os.pathsep.join([str(d), *classpath]), "org.slotwise.sls.Launcher", str(out), "SYNTH",
           str(d / "trace.json"), "-", str(limit)]
    jvm_log = open(d / "sls.log", "wb")
    t0 = time.monotonic()
    jvm = subprocess.Popen(cmd, cwd=d, stdout=jvm_log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        if gateway is not None:
            deadline = time.monotonic() + 300
            while not (gateway / "gateway.json").is_file():
                if jvm.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the ResourceManager wrote no gateway file (see {d / 'sls.log'})")
                time.sleep(0.2)
            serve = subprocess.Popen(
                [sys.executable, "-m", "slotwise.cli", "serve", "--allocations", str(d / "fair-scheduler.xml"),
                 "--gateway-info", str(gateway / "gateway.json"), "--token-file", str(gateway / "gateway.token"),
                 "--http", f"127.0.0.1:{free_ports(1)[0]}", "--admin-token-file", str(d / "admin.token"),
                 "--event-log", str(d / "events.jsonl"), "--no-watch", *(["--record"] if record else []),
                 # As the FairScheduler here (YARN's defaults): no delay scheduling.
                 "--node-locality-delay", "0", "--rack-locality-delay", "0"],
                stdout=open(d / "serve.log", "wb"), stderr=subprocess.STDOUT, start_new_session=True)
        python_cpu = 0.0
        while jvm.poll() is None:
            if serve is not None and serve.poll() is None:
                python_cpu = cpu_seconds(serve.pid)
            if time.monotonic() - t0 > limit + 600:
                raise RuntimeError("SLS did not end")
            time.sleep(1)
    finally:
        if jvm.poll() is None:
            os.killpg(jvm.pid, signal.SIGKILL)
        if serve is not None and serve.poll() is None:
            serve.terminate()
            try:
                serve.wait(15)
            except subprocess.TimeoutExpired:
                serve.kill()
    wall = time.monotonic() - t0
    if not summary.is_file():
        raise RuntimeError(f"no summary from SLS (see {d / 'sls.log'})")
    res = json.loads(summary.read_text())
    res["exit"] = jvm.returncode
    res["wall_s"] = round(wall, 1)
    res["python_cpu_s"] = round(python_cpu, 1) if serve is not None else None
    res["fifo_heartbeats"], res["fifo_episodes"] = fallbacks(d / "events.jsonl") if serve is not None else (None, None)
    res["fifo"] = fifo_detail(d / "events.jsonl") if serve is not None else None
    res["jct"] = job_times(out)
    res["shares"] = queue_shares(out)
    return res


def fallbacks(events: Path) -> tuple[int, int]:
    """Heartbeats the shim's FIFO scheduled while Python was away or late,
    and the episodes, from serve's event log (``fifo_detail`` says more)."""
    d = fifo_detail(events)
    return d["heartbeats"], d["episodes"]


def fifo_detail(events: Path) -> dict:
    """serve's ``fallback`` records, each episode once: the shim reports an
    ended episode in the next payload and again in the one after if it
    counted the first call failed (it timed out in Java while Python, which
    had it already, logged it), so one episode can be logged twice with the
    same start, end and count. ``episodes`` counts every episode, those in
    which no heartbeat went to the FIFO (a late update call) included;
    ``with_heartbeats`` only those that handed it heartbeats; ``repeated``
    the records dropped as repeats."""
    seen: set[tuple] = set()
    heartbeats = with_heartbeats = repeated = 0
    if events.is_file():
        for line in events.read_text().splitlines():
            if '"fallback"' not in line:
                continue
            e = json.loads(line)
            if e.get("event") != "fallback":
                continue
            key = (e.get("started"), e.get("ended"), e.get("count"), e.get("reason"))
            if key in seen:
                repeated += 1
                continue
            seen.add(key)
            n = int(e.get("count", 0))
            heartbeats += n
            with_heartbeats += n > 0
    return {"heartbeats": heartbeats, "episodes": len(seen), "with_heartbeats": with_heartbeats,
            "repeated": repeated}


def job_times(out: Path) -> dict:
    path = out / "jobruntime.csv"
    if not path.is_file():
        return {}
    times = []
    for line in path.read_text().splitlines()[1:]:
        f = line.split(",")
        if len(f) >= 5 and f[4].strip() and f[3].strip():
            times.append((int(f[4]) - int(f[3])) / 1000.0)
    if not times:
        return {}
    times.sort()
    return {"jobs": len(times), "mean_s": round(statistics.fmean(times), 1),
            "p50_s": round(times[len(times) // 2], 1), "p90_s": round(times[int(len(times) * 0.9)], 1)}


def queue_shares(out: Path) -> dict[str, float]:
    """Each queue's mean share of allocated memory while the cluster was
    busy (SLS's per-second realtimetrack.json)."""
    path = out / "realtimetrack.json"
    if not path.is_file():
        return {}
    try:
        rows = json.loads(path.read_text())
    except ValueError:
        text = path.read_text().strip().rstrip(",")
        rows = json.loads(text if text.startswith("[") else f"[{text}]")
    sums = {q: 0.0 for q in QUEUES}
    n = 0
    for row in rows:
        alloc = {q: float(row.get(f"queue.root.{q}.allocated.memory", 0) or 0) for q in QUEUES}
        total = sum(alloc.values())
        if total <= 0:
            continue
        n += 1
        for q in QUEUES:
            sums[q] += alloc[q] / total
    return {q: round(v / n, 4) for q, v in sums.items()} if n else {}


# ------------------------------------------------------------------ main
def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="100 and 1,000 nodes, 90 s traces")
    ap.add_argument("--nodes", help="comma-separated NodeManager counts (default 100,1000,5000)")
    ap.add_argument("--seconds", type=float, help="trace length, s (default 180; --quick 90)")
    ap.add_argument("--dir", help="where runs go (default: a temporary directory)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--record", action="store_true",
                    help="run slotwise serve with --record (every call's message in the event log, for replay)")
    ap.add_argument("--sync", action="store_true",
                    help="also run Slotwise with slotwise.scheduling.async=false (each NODE_UPDATE waits on Python)")
    ap.add_argument("--only", choices=("fairscheduler", "slotwise"),
                    help="run this scheduler alone (to look into one side; the ratio needs both)")
    args = ap.parse_args()
    sizes = [int(x) for x in (args.nodes or ("100,1000" if args.quick else "100,1000,5000")).split(",")]
    seconds = args.seconds or (90.0 if args.quick else 180.0)
    classpath = build()
    base = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="bench-sls-"))
    rows = []
    for n in sizes:
        synth = make_trace(n, seconds, args.seed)
        log(f"{n} nodes: {synth['num_jobs']} SYNTH jobs over {seconds * 0.6:g} s of a {seconds:g} s run")
        heap = "4g" if n <= 1000 else "10g"
        got = {}
        runs = [("fairscheduler", FAIR, True), ("slotwise", SLOTWISE, True)]
        if args.sync:
            runs.append(("slotwise-sync", SLOTWISE, False))
        if args.only:
            runs = [r for r in runs if r[0] == args.only]
        for name, cls, async_scheduling in runs:
            d = base / f"{n}-{name}"
            write_run_dir(d, synth, cls, d / "gateway" if cls == SLOTWISE else None, async_scheduling)
            log(f"{n} nodes, {name}: running SLS in {d}")
            got[name] = run_one(d, classpath, cls, seconds * 4, heap, args.record)
        rows.append((n, got))
        print(HEADER)
        for name, r in got.items():
            print(row_text(n, name, r), flush=True)
    print()
    print_table(rows)
    n, got = rows[-1]
    if args.only:
        return 0
    f, s = got["fairscheduler"], got["slotwise"]
    ratio = rate(s) / rate(f) if rate(f) else float("nan")
    print(f"sls: slotwise/fairscheduler allocations-per-second ratio {ratio:.2f} at {n} nodes")
    return 0


def rate(r: dict) -> float:
    return r["allocations"] / r["allocation_span_s"] if r.get("allocation_span_s") else 0.0


HEADER = (f"{'nodes':>6} {'scheduler':<14} {'alloc/s':>8} {'allocs':>7} {'NU med ms':>9} {'NU p99 ms':>9} "
          f"{'NU count':>8} {'mean JCT':>8} {'p90 JCT':>8} {'py CPU s':>8} {'FIFO hb':>9}  mean share of memory")


def print_table(rows) -> None:
    print(HEADER)
    for n, got in rows:
        for name, r in got.items():
            print(row_text(n, name, r), flush=True)
        if "fairscheduler" not in got:
            continue
        f = got["fairscheduler"]["shares"]
        for name, r in got.items():
            s = r["shares"]
            if name == "fairscheduler" or not (f and s):
                continue
            worst = max(abs(s[q] - f[q]) / f[q] for q in f if f[q] > 0)
            points = max(abs(s[q] - f.get(q, 0.0)) for q in s)
            print(f"{'':>6} queue shares: {name} within {100 * worst:.0f}% of fairscheduler's (worst queue; "
                  f"{100 * points:.1f} points of the cluster)")
            if r.get("calls"):
                b = r.get("batches")
                per = f"{b[1] / b[0]:.1f} nodes per call" if b and b[0] else "one node per call"
                print(f"{'':>6} {name}: {r['calls']} heartbeat calls to Python ({per}), round trip median "
                      f"{r['call_ms']['median']:.3f} ms, p99 {r['call_ms']['p99']:.3f} ms; payload built in "
                      f"{r['build_ms']['median']:.3f} ms median")
            if r.get("fifo"):
                x = r["fifo"]
                print(f"{'':>6} {name}: the FIFO scheduled {x['heartbeats']} heartbeat(s) in {x['with_heartbeats']} "
                      f"episode(s); {x['episodes']} episode(s) in all (a late update call opens one with none), "
                      f"{x['repeated']} repeated report(s) not counted")


def row_text(n: int, name: str, r: dict) -> str:
    j = r["jct"]
    shares = " ".join(f"{q}={v:.2f}" for q, v in r["shares"].items())
    fifo = "-" if r["fifo_heartbeats"] is None else f"{r['fifo_heartbeats']}/{r['fifo_episodes']}ep"
    cpu = "-" if r["python_cpu_s"] is None else f"{r['python_cpu_s']:.1f}"
    return (f"{n:>6} {name:<14} {rate(r):8.1f} {r['allocations']:7d} {r['node_update_ms']['median']:9.3f} "
            f"{r['node_update_ms']['p99']:9.3f} {r['node_updates']:8d} {j.get('mean_s', float('nan')):8.1f} "
            f"{j.get('p90_s', float('nan')):8.1f} {cpu:>8} {fifo:>9}  {shares}")


if __name__ == "__main__":
    sys.exit(main())
