"""assignTasks with Python beside Hadoop's own JobQueueTaskScheduler, on a
real Hadoop 1.2.1 MRv1 cluster.

Run: .venv/bin/python benchmarks/bench_mrv1.py [--quick] [--dir DIR] [--master-cpu N]

For each scheduler (Hadoop's JobQueueTaskScheduler, then Slotwise's
SlotwiseTaskScheduler with the policy served from this process) it starts a
JobTracker and two TaskTrackers (4 map and 1 reduce slots each), with
benchmarks/java-mrv1/TimedTaskScheduler in front of the scheduler: it times
every assignTasks call the JobTracker makes (inside its lock, as the
heartbeat sees it) the same way for both. The same load runs under both:
three sleep jobs at once in three queues. It prints assignTasks latency
(median, p90, p99, max, over the calls while jobs ran) and each job's
completion time, and ratios against Hadoop's scheduler. Everything is taken
down at the end, whatever happens.

By default every process shares every CPU: on a 2-core machine the
JobTracker and the policy server wait for a core behind the task JVMs.
--master-cpu N places the master as in production (where the JobTracker has
a machine of its own): the JobTracker and this process on CPU N, the
TaskTrackers, their tasks and the job clients on the others, for both
schedulers (docs/benchmarks.md, issue 39).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from slotwise.bridge.server import PolicyServer
from slotwise.config import load_allocations
from slotwise.core import PolicyCore
from slotwise.eventlog import EventLog
from slotwise.localcluster.jvm import find_java
from slotwise.localcluster.mrv1 import Mrv1Cluster
from slotwise.localcluster.mrv1_hadoop import (FIFO_TASK_SCHEDULER, SLOTWISE_TASK_SCHEDULER, build_mrv1_shim,
                                               resolve_hadoop1)
from slotwise.localcluster.paths import find_repo

TIMED = "org.apache.hadoop.mapred.TimedTaskScheduler"
POOLS_XML = """<allocations>
  <pool name="a"><weight>2</weight></pool>
  <pool name="b"/>
  <pool name="c"/>
</allocations>
"""


def compile_timer(repo: Path, work: Path) -> Path:
    java = find_java()
    jars = resolve_hadoop1(repo, work / "cache", lambda m: None)
    core = jars.core_jar
    out = work / "timer-classes"
    out.mkdir(parents=True, exist_ok=True)
    src = repo / "benchmarks" / "java-mrv1" / "org" / "apache" / "hadoop" / "mapred" / "TimedTaskScheduler.java"
    subprocess.run([str(java.home / "bin" / "javac"), "-nowarn", "-cp", core, "-d", str(out), str(src)], check=True)
    return out


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def run(name: str, delegate: str, repo: Path, work: Path, timer: Path, shim: Path, jobs: list,
        cpus: dict[str, str] | None = None, jt_opts: list[str] | None = None, conf: dict | None = None) -> dict:
    times = work / f"{name}-assign.txt"
    times.unlink(missing_ok=True)
    cluster = Mrv1Cluster(work / f"cluster-{name}", nodes=2, scheduler=TIMED, map_slots=4, reduce_slots=1,
                          build_shim=False, jt_classpath=[str(timer), str(shim)], log=lambda m: None,
                          conf={"slotwise.bench.delegate": delegate, "slotwise.bench.out": str(times), **(conf or {})},
                          cpus=cpus, jt_jvm_flags=[o.replace("{name}", name) for o in jt_opts or []])
    server = serving = None
    try:
        cluster.up()
        if delegate == SLOTWISE_TASK_SCHEDULER:
            allocations = work / "pools.xml"
            allocations.write_text(POOLS_XML)
            core = PolicyCore(load_allocations(str(allocations)), event_log=EventLog(str(work / "events.jsonl")),
                              kind="mrv1")
            info = Path(cluster.gateway_info_file)
            server = PolicyServer(core, str(info), str(info.with_name("gateway.token")))
            serving = threading.Thread(target=server.run, kwargs={"retry_seconds": 0.5}, daemon=True)
            serving.start()
            deadline = time.monotonic() + 60
            while not server.status().get("registered") and time.monotonic() < deadline:
                time.sleep(0.2)
            time.sleep(2)  # the first full update
        start_line = len(times.read_text().splitlines()) if times.exists() else 0
        started = time.monotonic()
        running = [cluster.submit("sleep", args, queue=queue, wait=False) for queue, args in jobs]
        results = [j.wait(1200) for j in running]
        wall = time.monotonic() - started
        lines = times.read_text().splitlines()[start_line:]
        ns = [int(x.split()[0]) for x in lines]
        given = sum(int(x.split()[1]) for x in lines)
        return {"name": name, "calls": len(ns), "tasks": given,
                "median_ms": statistics.median(ns) / 1e6, "p90_ms": pct(ns, 0.90) / 1e6,
                "p99_ms": pct(ns, 0.99) / 1e6, "max_ms": max(ns) / 1e6, "over_10ms": sum(n > 10_000_000 for n in ns),
                "jobs": [(r.job_id, r.queue, r.succeeded, r.seconds) for r in results], "wall_s": wall,
                "fifo_heartbeats": server.status().get("fallback_heartbeats") if server else None}
    finally:
        if server is not None:
            server.stop()
            serving.join(10)
        cluster.down(quiet=True)


def place_master(cpu: int) -> dict[str, str]:
    """Pins this process (and so the policy server's threads) to CPU ``cpu``; the
    taskset lists for the cluster's roles: the JobTracker there too, the rest elsewhere."""
    every = sorted(os.sched_getaffinity(0))
    if cpu not in every or len(every) < 2:
        raise SystemExit(f"--master-cpu {cpu}: this process may run on CPUs {every}; it needs {cpu} and another")
    for tid in os.listdir("/proc/self/task"):  # every thread so far; later ones inherit it
        os.sched_setaffinity(int(tid), {cpu})
    rest = ",".join(str(c) for c in every if c != cpu)
    print(f"master on CPU {cpu} (JobTracker, policy server); TaskTrackers, tasks and job clients on CPU(s) {rest}")
    return {"jobtracker": str(cpu), "tasktracker": rest, "client": rest}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller jobs (about 3 minutes instead of 6)")
    ap.add_argument("--dir", help="work directory (default: a temporary one)")
    ap.add_argument("--master-cpu", type=int, metavar="N",
                    help="place the master as in production: the JobTracker and this process (the policy "
                         "server) on CPU N only, the TaskTrackers, their task JVMs and the job clients on the "
                         "other CPUs; both schedulers alike (default: every process on every CPU)")
    ap.add_argument("--jt-opts", action="append", default=[], metavar="FLAG",
                    help="an extra JVM flag for the JobTracker (repeatable; {name} becomes the scheduler's "
                         "name), e.g. --jt-opts=-Xlog:gc:file=/tmp/gc-{name}.log")
    ap.add_argument("--only", choices=("hadoop-fifo", "slotwise"), help="run one scheduler only")
    args = ap.parse_args()
    repo = find_repo()
    work = Path(args.dir or tempfile.mkdtemp(prefix="bench-mrv1-"))
    work.mkdir(parents=True, exist_ok=True)
    maps, ms = (12, 1500) if args.quick else (24, 3000)
    jobs = [(queue, ["-m", str(maps), "-r", "1", "-mt", str(ms), "-rt", "500"]) for queue in ("a", "b", "c")]
    print(f"MRv1 assignTasks benchmark: Hadoop 1.2.1, 1 JobTracker + 2 TaskTrackers (4 map + 1 reduce slots each), "
          f"3 sleep jobs at once ({maps} maps of {ms} ms, 1 reduce) in 3 queues; work dir {work}")
    timer = compile_timer(repo, work)
    shim = build_mrv1_shim(repo, lambda m: None)
    cpus = place_master(args.master_cpu) if args.master_cpu is not None else None
    rows = []
    for name, delegate in (("hadoop-fifo", FIFO_TASK_SCHEDULER), ("slotwise", SLOTWISE_TASK_SCHEDULER)):
        if args.only and name != args.only:
            continue
        print(f"-- {name} ({delegate}); load average {os.getloadavg()[0]:.2f}", flush=True)
        rows.append(run(name, delegate, repo, work, timer, shim, jobs, cpus=cpus, jt_opts=args.jt_opts))
        print(f"   done; load average {os.getloadavg()[0]:.2f} (1 min), {os.getloadavg()[1]:.2f} (5 min)", flush=True)
    print()
    print(f"{'scheduler':<12} {'calls':>6} {'tasks':>6} {'median ms':>10} {'p90 ms':>8} {'p99 ms':>8} {'max ms':>8} "
          f"{'>10 ms':>6} {'mean job s':>10} {'all done s':>10}")
    for r in rows:
        mean_job = statistics.mean(s for *_, s in r["jobs"])
        print(f"{r['name']:<12} {r['calls']:>6} {r['tasks']:>6} {r['median_ms']:>10.3f} {r['p90_ms']:>8.3f} "
              f"{r['p99_ms']:>8.3f} {r['max_ms']:>8.3f} {r['over_10ms']:>6} {mean_job:>10.1f} {r['wall_s']:>10.1f}")
        for job_id, queue, ok, secs in r["jobs"]:
            print(f"    {job_id} queue {queue}: {'SUCCEEDED' if ok else 'FAILED'} in {secs:.1f} s")
    if len(rows) < 2:
        return 0 if all(ok for r in rows for _, _, ok, _ in r["jobs"]) else 1
    fifo, ours = rows
    if ours["fifo_heartbeats"] is not None:
        print(f"slotwise: {ours['fifo_heartbeats']} heartbeat(s) fell back to the shim's FIFO")
    print(f"mrv1: slotwise/hadoop assignTasks median ratio {ours['median_ms'] / fifo['median_ms']:.1f}, "
          f"p99 ratio {ours['p99_ms'] / fifo['p99_ms']:.1f}, mean job time ratio "
          f"{statistics.mean(s for *_, s in ours['jobs']) / statistics.mean(s for *_, s in fifo['jobs']):.2f}")
    return 0 if all(ok for r in rows for _, _, ok, _ in r["jobs"]) else 1


if __name__ == "__main__":
    sys.exit(main())
