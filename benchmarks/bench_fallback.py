"""The deadline of a call to Python against how often the RM schedules
without it, under the demo's load; and how fast a restarted serve decides again.

Run: .venv/bin/python benchmarks/bench_fallback.py [--quick] [--deadlines 50,100,200,500,1000]

For each deadline (``slotwise.policy.timeout-ms``) it starts the demo's local
cluster (one ResourceManager with the shim, two NodeManagers), runs
``slotwise serve`` as its own process on conf/allocations.xml, and runs the
demo's three MapReduce jobs at once (prod and research sleep jobs, an adhoc
pi). It reads the shim's counters through the gateway before and after: node
heartbeats, heartbeats the FIFO scheduled, failed calls; and serve's event
log: fallback episodes (cause, length). Then, on the last cluster, it stops
and restarts serve five times each with SIGTERM and SIGKILL and measures the
seconds from starting the new process to its registration.

The table ends with one line per deadline; the last line is
``fallback: deadline D ms -> S % of heartbeats by the FIFO`` for the default.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))

from slotwise.bridge.server import gateway_status  # noqa: E402
from slotwise.demo import JOBS  # noqa: E402
from slotwise.localcluster import SHIM_SCHEDULER, LocalCluster  # noqa: E402
from slotwise.localcluster.ports import free_ports  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
DEFAULT_MS = 200


def status(cluster) -> dict:
    info = cluster.gateway_info_file
    return gateway_status(str(info), str(info.with_name("gateway.token")))


class Serve:
    def __init__(self, cluster, work: Path) -> None:
        self.cluster = cluster
        self.events = work / "events.jsonl"
        self.out = open(work / "serve.out", "a")
        self.proc = None

    def start(self) -> float:
        info = self.cluster.gateway_info_file
        seen = self._count("register")
        t0 = time.time()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "slotwise.cli", "serve", "--allocations", str(REPO / "conf" / "allocations.xml"),
             "--event-log", str(self.events), "--gateway-info", str(info),
             "--token-file", str(info.with_name("gateway.token")), "--http", f"127.0.0.1:{free_ports(1)[0]}",
             "--admin-token-file", str(self.events.with_name("admin.token"))],
            stdout=self.out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            regs = self._read("register")
            if len(regs) > seen:
                return regs[-1]["ts"] - t0
            time.sleep(0.02)
        raise RuntimeError("serve did not register within 60 s")

    def stop(self, sig=signal.SIGTERM) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(30)

    def _read(self, kind: str) -> list[dict]:
        if not self.events.exists():
            return []
        out = []
        for line in self.events.read_text().splitlines():
            try:
                e = json.loads(line)
            except json.JSONDecodeError:
                continue
            if e.get("event") == kind:
                out.append(e)
        return out

    def _count(self, kind: str) -> int:
        return len(self._read(kind))


def run_jobs(cluster) -> dict:
    results, threads = {}, []
    for queue, program, args in JOBS:
        def go(queue=queue, program=program, args=args):
            results[queue] = cluster.submit(program, args, queue=queue, user=f"{queue}-user", echo=False)
        t = threading.Thread(target=go, daemon=True)
        t.start()
        threads.append(t)
    for t in threads:
        t.join(900)
    return results


def one_deadline(ms: int, work: Path, failover: bool, rounds: int) -> dict:
    cluster = LocalCluster(work / "cluster", nodes=2, scheduler=SHIM_SCHEDULER, start_timeout=300,
                           conf={"slotwise.policy.timeout-ms": str(ms), "yarn.cluster.max-application-priority": "10"},
                           log=lambda m: None)
    serve = Serve(cluster, work)
    try:
        cluster.up()
        serve.start()
        time.sleep(3)
        before = status(cluster)
        mark = time.time()
        results = run_jobs(cluster)
        after = status(cluster)
        time.sleep(1.5)  # the last episode is reported with the next call
        episodes = [e for e in serve._read("fallback") if e["started"] >= mark]
        row = {"deadline_ms": ms,
               "heartbeats": after["heartbeats"] - before["heartbeats"],
               "fallback_heartbeats": after["fallback_heartbeats"] - before["fallback_heartbeats"],
               "failures": after["failures"] - before["failures"],
               "episodes": len(episodes), "longest_s": max((e["seconds"] for e in episodes), default=0.0),
               "reasons": sorted({e["reason"].split(":")[1].strip()[:40] for e in episodes}),
               "jobs_ok": all(r.succeeded for r in results.values()),
               "job_seconds": {p: round(r.seconds, 1) for p, r in results.items()}}
        if failover:
            row["failover"] = {}
            for sig in (signal.SIGTERM, signal.SIGKILL):
                times = []
                for _ in range(rounds):
                    serve.stop(sig)
                    time.sleep(1)
                    times.append(serve.start())
                row["failover"][sig.name] = times
        return row
    finally:
        serve.stop()
        cluster.down(quiet=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--deadlines", default="50,100,200,500,1000")
    ap.add_argument("--quick", action="store_true", help="deadlines 100 and 500, two failover rounds")
    args = ap.parse_args(argv)
    deadlines = [100, 500] if args.quick else [int(x) for x in args.deadlines.split(",")]
    rows = []
    print("the demo's three jobs at once on 2 NodeManagers (NM heartbeat 1 s); serve as its own process")
    print(f"{'deadline':>8} {'heartbeats':>10} {'by FIFO':>8} {'share':>7} {'failed':>6} {'episodes':>8} "
          f"{'longest':>8}  jobs (s)                      causes")
    for i, ms in enumerate(deadlines):
        work = Path(tempfile.mkdtemp(prefix=f"slotwise-bench-fallback-{ms}-"))
        try:
            r = one_deadline(ms, work, failover=i == len(deadlines) - 1, rounds=2 if args.quick else 5)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        rows.append(r)
        share = 100.0 * r["fallback_heartbeats"] / max(1, r["heartbeats"])
        jobs = " ".join(f"{p}={s}" for p, s in r["job_seconds"].items()) + ("" if r["jobs_ok"] else " FAILED")
        print(f"{ms:>6}ms {r['heartbeats']:>10} {r['fallback_heartbeats']:>8} {share:>6.1f}% {r['failures']:>6} "
              f"{r['episodes']:>8} {r['longest_s']:>7.1f}s  {jobs:<29} {', '.join(r['reasons']) or '-'}", flush=True)
    last = rows[-1]
    for sig, times in last.get("failover", {}).items():
        print(f"serve restarted after {sig}: registered {', '.join(f'{t:.2f}' for t in times)} s after starting "
              f"(max {max(times):.2f} s)")
    default = next((r for r in rows if r["deadline_ms"] == DEFAULT_MS), rows[0])
    print(f"fallback: deadline {default['deadline_ms']} ms -> "
          f"{100.0 * default['fallback_heartbeats'] / max(1, default['heartbeats']):.1f} % of heartbeats by the FIFO")
    return 0


if __name__ == "__main__":
    sys.exit(main())
