"""``slotwise demo``: a real YARN cluster scheduled by Python, end to end.

Starts the local cluster with the shim as its scheduler, serves the policy
from ``conf/allocations.xml`` in this process (so the table below can read
the engine directly), runs MapReduce jobs in several queues at once, prints
each queue's fair share and running containers while they run, then a
summary, and takes everything down.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import Counter
from pathlib import Path

from .admin import AdminToken, SchedulerService
from .core import PolicyCore
from .bridge.server import PolicyServer, RMControl, start_http
from .config.watcher import load_with_status
from .metrics import Metrics
from .web.app import create_app
from .eventlog import EventLog, read_events
from .localcluster import SHIM_SCHEDULER, LocalCluster
from .localcluster.paths import find_repo

#: (queue, program, args): enough work that the queues compete for the cluster.
JOBS = [
    ("prod", "sleep", ["-m", "10", "-r", "1", "-mt", "4000", "-rt", "1000"]),
    ("research", "sleep", ["-m", "10", "-r", "1", "-mt", "4000", "-rt", "1000"]),
    ("adhoc", "pi", ["4", "1000"]),
]

#: The MRv1 demo's jobs, in conf/mrv1-pools.xml's queues.
MRV1_JOBS = [
    ("production", "pi", ["10", "1000"]),
    ("research", "pi", ["10", "1000"]),
    ("adhoc", "pi", ["4", "1000"]),
]


def _mb(x: float) -> str:
    return f"{x:,.0f}"


def queue_table(core: PolicyCore) -> str:
    if core.kind == "mrv1":
        return slot_queue_table(core)
    running = core.running_by_queue()
    rows = [p for p in core.queues() if p["parent"] is not None and (p["apps"] or not p["dynamic"])]
    lines = [f"  {'queue':<18} {'weight':>6} {'fair share MB':>14} {'used MB':>9} {'containers':>10} {'apps':>5}"]
    for p in rows:
        lines.append(f"  {p['queue']:<18} {p['weight']:>6g} {_mb(p['fair_share']['memory_mb']):>14} "
                     f"{_mb(p['usage']['memory_mb']):>9} {running.get(p['queue'], 0):>10} {p['apps']:>5}")
    return "\n".join(lines)


def slot_queue_table(core) -> str:
    """An MRv1 JobTracker's queues: fair share and running tasks per slot kind."""
    rows = [p for p in core.queues() if p["parent"] is not None and (p["apps"] or not p["dynamic"])]
    lines = [f"  {'queue':<18} {'weight':>6} {'fair maps':>9} {'maps':>5} {'fair reduces':>12} {'reduces':>7} {'jobs':>5}"]
    for p in rows:
        f, u = p["fair_share"], p["usage"]
        lines.append(f"  {p['queue']:<18} {p['weight']:>6g} {f['map_slots']:>9.1f} {u['map_slots']:>5.0f} "
                     f"{f['reduce_slots']:>12.1f} {u['reduce_slots']:>7.0f} {p['apps']:>5}")
    return "\n".join(lines)


class PreemptionRecorder:
    """Each container the policy takes back, from which queue, and for which:
    the leaf queues below their min share or fair-share threshold at that
    moment (the engine preempts for those).  Wraps the core's periodic pass."""

    def __init__(self, core: PolicyCore) -> None:
        self.rows: list[dict] = []
        self._seen: set[str] = set()
        for sub in getattr(core, "cores", {"": core}).values():  # an MRv1 core has one per slot kind
            self._wrap(sub)

    def _wrap(self, core) -> None:
        inner = core.handle_update

        def handle_update(msg):
            result = inner(msg)
            if result.preempt:
                queues = core.queues()
                parents = {p["parent"] for p in queues}
                below = [p["queue"] for p in queues if p["queue"] not in parents
                         and (p.get("below_min_share") or p.get("below_fair_share"))]
                for p in result.preempt:
                    if p.container_id not in self._seen:
                        self._seen.add(p.container_id)
                        self.rows.append({"container": p.container_id, "from": p.queue, "for": below,
                                          "reason": p.reason})
            return result

        core.handle_update = handle_update


def preemption_summary(rows: list[dict]) -> list[str]:
    """How many containers were preempted, from which queues for which."""
    if not rows:
        return ["containers preempted: none (no queue stayed below its min share or its fair-share "
                "threshold past its preemption timeout)"]
    words = {"min_share": "min share", "fair_share": "fair share"}
    groups = Counter((r["from"], ", ".join(r["for"]) or "no queue below its share any more",
                      words.get(r["reason"], r["reason"])) for r in rows)
    out = [f"containers preempted: {len(rows)}"]
    for (src, dst, why), n in sorted(groups.items(), key=lambda kv: (-kv[1], kv[0])):
        out.append(f"    {n} from {src} for {dst} ({why} preemption)")
    return out


def fallback_summary(link: dict, episodes: list[dict]) -> list[str]:
    """The fallback count, in words: heartbeats the ResourceManager scheduled
    with its own FIFO because Python was away."""
    fifo = link.get("fallback_heartbeats")
    if fifo is None:
        fifo = sum(e.get("count", 0) for e in episodes)
    total = link.get("heartbeats")
    deadline = link.get("deadline_ms")
    of = f" of {total} node heartbeats" if total else " node heartbeats"
    share = f" ({100 * fifo / total:.1f}%)" if total else ""
    away = ("not registered yet, still busy with the previous call, or no answer within the "
            + (f"{deadline} ms deadline" if deadline else "shim's deadline"))
    if not fifo:
        return [f"fallback: 0{of}: Python scheduled every one. (This counts the heartbeats the "
                f"ResourceManager schedules with its built-in FIFO while Python is away: {away}.)"]
    reasons = sorted({e["reason"] for e in episodes if e.get("reason")})
    out = [f"fallback: {fifo}{of}{share} were scheduled by the ResourceManager's built-in FIFO instead "
           f"of Python, because Python was away ({away}); Python scheduled all the others."]
    if episodes:
        out.append(f"    in {len(episodes)} episode(s)" + (f": {'; '.join(reasons)}" if reasons else ""))
    return out


def run_demo(cluster_dir: str | None = None, keep: bool = False, ui_port: int = 9797, mrv1: bool = False) -> int:
    repo = find_repo()
    if mrv1:
        from .localcluster.mrv1 import Mrv1Cluster

        allocations = repo / "conf" / "mrv1-pools.xml"
        cluster = Mrv1Cluster(cluster_dir, nodes=2, scheduler="slotwise")
        jobs, what = MRV1_JOBS, "an MRv1 cluster (1 JobTracker with SlotwiseTaskScheduler, 2 TaskTrackers)"
    else:
        allocations = repo / "conf" / "allocations.xml"
        cluster = LocalCluster(cluster_dir, nodes=2, scheduler=SHIM_SCHEDULER,
                               conf={"yarn.cluster.max-application-priority": "10"})
        jobs, what = JOBS, "a YARN cluster (1 ResourceManager with the Slotwise shim, 2 NodeManagers)"
    events_path = Path(cluster.dir).parent / "demo-events.jsonl"
    events_path.parent.mkdir(parents=True, exist_ok=True)
    events_path.unlink(missing_ok=True)
    event_log = EventLog(str(events_path))
    config, status = load_with_status(str(allocations))
    holder = {}
    metrics = Metrics(core_ref=lambda: holder.get("core"), status_ref=lambda: status)
    core = holder["core"] = PolicyCore(config, event_log=event_log, stats=metrics,
                                        kind="mrv1" if mrv1 else "yarn")
    preemptions = PreemptionRecorder(core)
    print(f"== starting {what} in {cluster.dir}")
    cluster.up()
    info = Path(cluster.gateway_info_file)
    # Hadoop's default is no preemption; the demo shows it (serve --preemption on).
    server = PolicyServer(core, str(info), str(info.with_name("gateway.token")), preemption=True)
    serving = threading.Thread(target=server.run, kwargs={"retry_seconds": 0.5}, daemon=True)
    results = {}
    http = None
    try:
        serving.start()
        # The operator's view while the jobs run (read-only here: no admin token is made).
        try:
            app = create_app(SchedulerService(core, status, RMControl(server)),
                             AdminToken(secrets.token_urlsafe(32)), metrics)
            http = start_http(app, "127.0.0.1", ui_port)
            print(f"== web UI on http://127.0.0.1:{ui_port}/ (queues, apps, config; /metrics, /api/v1/...)")
        except OSError as e:
            print(f"== no web UI ({e})")
        _wait(lambda: any(e["event"] == "resync" for e in read_events(str(events_path))), 60,
              "the policy server to register with the scheduler shim")
        print(f"== Python policy server registered; policy from {allocations}, event log {events_path}")
        print("   preemption is on for the demo (as serve --preemption on; Hadoop's default, and serve's "
              "without the flag or the master's setting, is off)")
        threads = []
        for queue, program, args in jobs:
            def go(queue=queue, program=program, args=args):
                results[queue] = cluster.submit(program, args, queue=queue, user=f"{queue}-user")
            t = threading.Thread(target=go, daemon=True)
            t.start()
            threads.append(t)
            print(f"   submitted {program} {' '.join(args)} to queue {queue}")
        started = time.monotonic()
        while any(t.is_alive() for t in threads):
            time.sleep(3)
            print(f"-- t+{time.monotonic() - started:4.0f} s")
            print(queue_table(core))
        print()
        print("== summary")
        events = read_events(str(events_path))
        assigned = Counter(e["app"] for e in events if e["event"] == "assign")
        locality = Counter(e["locality"] for e in events if e["event"] == "assign")
        ok = True
        for queue, program, _ in jobs:
            r = results.get(queue)
            if r is None:
                ok = False
                print(f"  {queue:<10} {program:<6} did not report")
                continue
            ok &= r.succeeded
            print(f"  {queue:<10} {program:<6} {r.app_id} {'SUCCEEDED' if r.succeeded else 'FAILED':<9} "
                  f"in {r.seconds:5.1f} s, queue {r.queue}, {assigned.get(r.app_id, 0)} "
                  f"{'tasks' if mrv1 else 'containers'} placed by Python")
        link = server.status()
        episodes = [e for e in events if e["event"] == "fallback"]
        print(f"  placements by locality: {dict(locality)}")
        for line in preemption_summary(preemptions.rows) + fallback_summary(link, episodes):
            print(f"  {line}")
        return 0 if ok else 1
    finally:
        if http is not None:
            http.should_exit = True
        server.stop()
        serving.join(10)
        event_log.close()
        if keep:
            print(f"== cluster left running in {cluster.dir} (slotwise cluster down --dir {cluster.dir})")
        else:
            print("== stopping the cluster")
            cluster.down()


def _wait(pred, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if pred():
                return
        except FileNotFoundError:
            pass
        time.sleep(0.3)
    raise TimeoutError(f"timed out waiting for {what}")
