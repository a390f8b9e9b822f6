"""``slotwise demo``: a real YARN cluster scheduled by Python, end to end.

Starts the local cluster with the shim as its scheduler, serves the policy
from ``conf/allocations.xml`` in this process (so the tables can read the
engine directly), runs MapReduce jobs in several queues at once, prints a
few snapshots of the queues while they run and a summary (demo_report.py
decides what and when), and takes everything down.
"""

from __future__ import annotations

import secrets
import threading
import time
from pathlib import Path

from .admin import AdminToken, SchedulerService
from .core import PolicyCore
from .bridge.server import PolicyServer, RMControl
from .serve import start_http
from .config.watcher import load_with_status
from .metrics import Metrics
from .web.app import create_app
from .eventlog import EventLog, read_events
from .localcluster import SHIM_SCHEDULER, LocalCluster
from .localcluster.paths import find_repo
from .demo_report import (LOCALITY_NOTE, LaunchRecorder, PreemptionRecorder, Timeline, app_table,
                          fallback_summary, preemption_summary)

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
    launches = LaunchRecorder(core)
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
        timeline = Timeline(core.kind)
        while any(t.is_alive() for t in threads):
            time.sleep(2)
            for line in timeline.observe(time.monotonic() - started, core.views.queues(), core.views.running_by_queue()):
                print(line)
        for line in timeline.closing():
            print(line)
        print()
        print(f"== summary after {time.monotonic() - started:.0f} s")
        events = read_events(str(events_path))
        ok = all(results.get(queue) is not None and results[queue].succeeded for queue, _p, _a in jobs)
        apps = []
        for queue, program, _ in jobs:
            r = results.get(queue)
            apps.append({"app": r.app_id if r else None, "program": program,
                         "queue": (r.queue if r else None) or f"({queue})", "user": r.app_user if r else None,
                         "state": (r.final_status or r.state or f"exit {r.returncode}") if r else "no report",
                         "seconds": r.seconds if r else None})
        print("apps:")
        for line in app_table(apps, launches.counts(events), core.kind):
            print(line)
        print("queues, over the time each held apps (mean fair share and use, time-weighted):")
        for line in timeline.queue_summary():
            print(line)
        link = server.status()
        episodes = [e for e in events if e["event"] == "fallback"]
        master = "JobTracker" if mrv1 else "ResourceManager"
        for line in LOCALITY_NOTE + preemption_summary(preemptions.rows) + fallback_summary(link, episodes, master):
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
