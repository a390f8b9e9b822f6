"""A soak under faults: the HA docker cluster (docker/compose.ha.yaml) runs a
steady stream of small MapReduce jobs in three queues while faults strike at
seeded random moments, and at the end says what was lost.

Run: .venv/bin/python benchmarks/soak.py --minutes M --seed N [--quick]

The images must exist (docker/build-images.sh). Faults, one every 40-80 s
(seeded), each chosen at random among:

  policy-kill    kill -9 of the active RM's policy server (its container
                 restarts it; the RM schedules by its FIFO meanwhile)
  policy-pause   the active RM's policy container paused 8 s (docker pause)
  worker-stop    worker 2 stopped (its NodeManager and DataNode) for 20 s
  failover       kill -9 of the active ResourceManager's process: once its
                 ZooKeeper session lapses an RM is elected (the other, or the
                 killed one back in its container); the loser is the standby

A job is a sleep job of 2-4 maps of 1-3 s and one reduce, submitted every
4-10 s (at most 4 at a time) as alice to root.prod, bob to root.research or
carol to root.users.carol. At the end it prints: jobs submitted, succeeded
and failed (by the RM's final status; a job client that failed for a job the
RM says SUCCEEDED is listed apart); task attempts lost (failed or killed, from the jobs' counters);
the fallback share (heartbeats the RMs scheduled by their FIFO, of all
heartbeats, from the policy servers' view of each RM's counters);
divergences Python found (and resynced); each failover's time (the kill to
the first container a policy server placed after it); each policy
server's RSS at the start and the end; and last the line

  soak: J jobs, F failed, L containers lost, K failovers (max S s), fallback P%

(L: task attempts lost). --quick is 3 minutes (the docker tier runs that, seed 5);
`--minutes 30` is the run docs/benchmarks.md records. Exit 1 if a job failed.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "docker"))

from dockertools import HaDockerCluster, Job, fresh_allocations, get_json, wait_until  # noqa: E402

FAULTS = ("policy-kill", "policy-pause", "worker-stop", "failover")
STREAM = (("prod", "alice"), ("research", "bob"), ("default", "carol"))
LOST = ("Failed map tasks", "Killed map tasks", "Failed reduce tasks", "Killed reduce tasks")


@dataclass
class Tally:
    jobs: list[Job] = field(default_factory=list)
    faults: list[tuple[float, str]] = field(default_factory=list)
    failovers: list[float] = field(default_factory=list)
    counters: dict[tuple[int, int], tuple[int, int]] = field(default_factory=dict)  # (rm, start) -> (beats, fifo)
    rss: dict[str, list[int]] = field(default_factory=dict)


def serve_rss(c: HaDockerCluster, i: int) -> int:
    """The policy server's resident memory (KB), 0 if it is not running."""
    out = c.docker("exec", c.container(f"policy{i}"), "sh", "-c",
                   "ps -o rss= -p $(pgrep -o -f 'python3 .*slotwise serve')", check=False).stdout.split()
    return int(out[0]) if out and out[0].isdigit() else 0


def sample_counters(c: HaDockerCluster, t: Tally) -> None:
    """Each RM's heartbeat counters as its policy server last saw them (they
    start again with each RM start: kept per start)."""
    for i in (1, 2):
        try:
            link = c.api_of(i, "/api/v1/status")["resource_manager"]
        except (OSError, ValueError, KeyError):
            continue
        try:
            born = get_json(f"http://127.0.0.1:{c.rm_ports[i]}/ws/v1/cluster/info")["clusterInfo"]["startedOn"]
        except (OSError, ValueError, KeyError):
            continue
        if link.get("registered"):
            key = (i, born)  # one life of RM i (each fault that kills it starts a new one)
            beats, fifo = link.get("heartbeats", 0), link.get("fallback_heartbeats", 0)
            old = t.counters.get(key, (0, 0))
            t.counters[key] = (max(old[0], beats), max(old[1], fifo))


def fault(c: HaDockerCluster, kind: str, t: Tally, log) -> None:
    active = c.active()
    at = time.time()
    t.faults.append((at, kind))
    if kind == "policy-kill":
        c.docker("exec", c.container(f"policy{active}"), "sh", "-c",
                 "kill -KILL $(pgrep -o -f 'python3 .*slotwise serve')", check=False)
        log(f"fault: kill -9 of policy{active}'s server")
    elif kind == "policy-pause":
        c.pause(c.container(f"policy{active}"))
        log(f"fault: policy{active} paused for 8 s")
        time.sleep(8)
        c.docker("unpause", c.container(f"policy{active}"))
    elif kind == "worker-stop":
        c.docker("stop", c.worker(2))
        log("fault: worker 2 stopped for 20 s")
        time.sleep(20)
        c.docker("start", c.worker(2))
    else:
        c.docker("exec", c.container(f"rm{active}"), "sh", "-c", "kill -KILL $(cat /tmp/slotwise-rm.pid)")
        dead = time.time()  # what the killed RM's Python placed before this does not count
        log(f"fault: kill -9 of rm{active}'s ResourceManager")
        try:
            # Whichever RM wins the election (the other, or the killed one back in its container).
            winner, first = wait_until("a policy server to place a container after the failover", lambda: next(
                ((i, e) for i in (1, 2) for e in c.events_of(i) if e["event"] == "assign" and e["ts"] >= dead), None),
                300, interval=0.5)
            t.failovers.append(first["ts"] - at)
            log(f"failover: rm{winner} active; policy{winner} placed its first container "
                f"{first['ts'] - at:.1f} s after the kill")
        except AssertionError as e:
            log(f"failover: {e}")
            t.failovers.append(float("inf"))


def run_soak(c: HaDockerCluster, minutes: float, seed: int, log=print) -> dict:
    """The soak on a running HA cluster; returns its figures (and prints them)."""
    rng = random.Random(seed)
    t = Tally()
    c.wait_ready()
    t.rss = {f"policy{i}": [serve_rss(c, i)] for i in (1, 2)}
    started = time.time()
    end = started + minutes * 60
    next_job = started
    stop = threading.Event()
    faults = random.Random(rng.random())  # the faults' own stream: the same whatever the jobs do

    def sampler():
        while not stop.wait(3):
            sample_counters(c, t)

    def striker():
        """Faults on their own thread: the job stream goes on through them."""
        while not stop.wait(max(0.0, min(faults.uniform(40, 80), end - time.time()))):
            if time.time() >= end:
                return
            fault(c, faults.choice(FAULTS), t, log)

    threading.Thread(target=sampler, daemon=True).start()
    strikes = threading.Thread(target=striker, daemon=True)
    strikes.start()
    try:
        while time.time() < end:
            now = time.time()
            if now >= next_job and sum(j.proc.poll() is None for j in t.jobs) < 4:
                queue, user = rng.choice(STREAM)
                maps, ms = rng.randint(2, 4), rng.randint(1000, 3000)
                t.jobs.append(c.submit(queue, user, "sleep", "-m", str(maps), "-r", "1", "-mt", str(ms), "-rt", "100"))
                next_job = now + rng.uniform(4, 10)
            time.sleep(0.5)
        strikes.join(600)  # a fault under way finishes (a stopped worker starts again)
        log(f"soak: {minutes:g} min of faults over; waiting for the {sum(j.proc.poll() is None for j in t.jobs)} "
            "job(s) still running")
        # After the last fault the cluster must be whole again (a worker
        # stopped, a policy container restarting), then every job ends.
        reports = []
        for job in t.jobs:
            try:
                reports.append((job, job.wait(900)))
            except AssertionError as e:
                reports.append((job, {"finalStatus": "UNKNOWN", "client_exit": -1, "error": str(e)}))
        sample_counters(c, t)
    finally:
        stop.set()
        for i in (1, 2):  # a fault interrupted mid-way must not leave the cluster broken
            c.docker("unpause", c.container(f"policy{i}"), check=False)
        c.docker("start", c.worker(2), check=False)
    # A job is the RM's application: it failed unless the RM says SUCCEEDED.
    # A client that exits non-zero for a job the RM says SUCCEEDED is counted
    # apart: without a JobHistoryServer, a client that asks for the last task
    # events after the AM's 5 s linger gets "Redirecting to job history
    # server" and an exception, though nothing was lost (seen on a loaded machine).
    failed = [(j, r) for j, r in reports if r.get("finalStatus") != "SUCCEEDED"]
    client_errors = [(j, r) for j, r in reports if r.get("finalStatus") == "SUCCEEDED" and r.get("client_exit") != 0]
    lost = 0
    for job, _ in reports:
        try:
            got = job.counters()
        except (OSError, ValueError):
            got = {}
        lost += sum(got.get(k, 0) for k in LOST)
    beats = sum(b for b, _ in t.counters.values())
    fifo = sum(f for _, f in t.counters.values())
    events = [e for i in (1, 2) for e in c.events_of(i) if e["ts"] >= started]
    divergences = sum(1 for e in events if e["event"] == "divergence")
    resyncs = sum(1 for e in events if e["event"] == "resync")
    for i in (1, 2):
        t.rss[f"policy{i}"].append(serve_rss(c, i))
    share = 100.0 * fifo / beats if beats else 0.0
    figures = {"minutes": minutes, "seed": seed, "jobs": len(t.jobs), "succeeded": len(t.jobs) - len(failed),
               "failed": len(failed), "client_errors": len(client_errors), "lost": lost, "faults": [k for _, k in t.faults],
               "failovers": t.failovers, "heartbeats": beats, "fallback_heartbeats": fifo,
               "fallback_pct": share, "divergences": divergences, "resyncs": resyncs, "rss_kb": t.rss}
    log(f"faults: {len(t.faults)} ({', '.join(f'{k} x{[x for _, x in t.faults].count(k)}' for k in FAULTS)})")
    for job, r in failed:
        log(f"FAILED: {job.app_id or '(no id)'} in {job.queue}: {r.get('state')}/{r.get('finalStatus')} "
            f"{r.get('error', '')} log {job.log}")
    for job, r in client_errors:
        late = "Redirecting to job history server" in job.log.read_text(errors="replace")
        log(f"client error: {job.app_id} in {job.queue} SUCCEEDED (the RM's final status) but its client exited "
            f"{r.get('client_exit')}" + ("; it asked the AM for the last task events after the AM had gone, and "
                                         "there is no JobHistoryServer" if late else "") + f"; log {job.log}")
    log(f"heartbeats {beats:,}, of them by the FIFO {fifo:,}; divergences found {divergences} (resyncs {resyncs})")
    log("policy servers' RSS, start -> end: " + ", ".join(f"{k} {v[0] / 1024:.0f} -> {v[-1] / 1024:.0f} MB"
                                                          for k, v in t.rss.items()))
    worst = max(t.failovers) if t.failovers else 0.0
    log(f"soak: {len(t.jobs)} jobs, {len(failed)} failed, {lost} containers lost, {len(t.failovers)} failovers "
        f"(max {worst:.1f} s), fallback {share:.1f}%")
    return figures


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--minutes", type=float, default=30.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--quick", action="store_true", help="3 minutes")
    args = p.parse_args(argv)
    minutes = 3.0 if args.quick else args.minutes
    from testcontainers.compose import DockerCompose

    allocations = fresh_allocations(REPO / "docker" / "allocations" / "fair-scheduler.xml",
                                    REPO / "run" / "docker" / "soak-allocations")
    os.environ.update({"COMPOSE_PROJECT_NAME": "slotwise-soak", **HaDockerCluster.PORTS, "SLOTWISE_WORKERS": "2",
                       "SLOTWISE_ALLOCATIONS_DIR": str(allocations), "TESTCONTAINERS_RYUK_DISABLED": "true"})
    compose = DockerCompose(REPO / "docker", compose_file_name="compose.ha.yaml", wait=True)
    subprocess.run([*compose.compose_command_property, "down", "--volumes", "--remove-orphans"],
                   cwd=REPO / "docker", capture_output=True, timeout=300)
    t0 = time.monotonic()
    try:
        compose.start()
        cluster = HaDockerCluster(compose, allocations)
        cluster.PROJECT = "slotwise-soak"
        print(f"soak: HA cluster up in {time.monotonic() - t0:.0f} s ({cluster.describe()}); "
              f"{minutes:g} minutes, seed {args.seed}", flush=True)
        figures = run_soak(cluster, minutes, args.seed, log=lambda m: print(m, flush=True))
    finally:
        compose.stop()
    return 1 if figures["failed"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
