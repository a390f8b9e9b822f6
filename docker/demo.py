"""`make docker-demo`: the dockerized cluster, end to end.

Brings docker/compose.yaml up (project ``slotwise-demo``, free loopback
ports, a copy of docker/allocations), writes a text file into HDFS (one
replica per block, so a map is data-local on one node only), runs MapReduce
jobs in two pools at once (a sleep job, and a wordcount reading that file
from HDFS), prints the pool table while they run and a summary of Python's
decisions and the wordcount's locality, and takes the cluster down (volumes
too). The images must exist:
docker/build-images.sh (make docker-demo runs it first).
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
STATE = REPO / "run" / "docker"
PROJECT = "slotwise-demo"
INPUT = "/demo/words.txt"
JOBS = [  # (pool, user, program, args)
    ("prod", "alice", "sleep", ["-m", "12", "-r", "1", "-mt", "3000", "-rt", "500"]),
    ("research", "bob", "wordcount", [INPUT, "/demo/counts"]),
]
LOCALITY = re.compile(r"^\s+(Data-local|Rack-local|Launched) map tasks=(\d+)", re.M)


ENV = {**os.environ, "SLOTWISE_RM_WEB_PORT": "", "SLOTWISE_HTTP_PORT": "", "SLOTWISE_NN_WEB_PORT": "",
       "SLOTWISE_ALLOCATIONS_DIR": str(STATE / "demo-allocations")}


def compose_argv(*args: str) -> list[str]:
    return ["docker", "compose", "-p", PROJECT, "-f", str(REPO / "docker" / "compose.yaml"), *args]


def compose(*args: str, check: bool = True, capture: bool = False) -> subprocess.CompletedProcess:
    return subprocess.run(compose_argv(*args), check=check, text=True, capture_output=capture, env=ENV)


def port(container_port: int, service: str = "rm") -> int:
    out = compose("port", service, str(container_port), capture=True).stdout.strip()
    return int(out.rpartition(":")[2])


def get(url: str):
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


def words(n_bytes: int) -> bytes:
    rng = random.Random(1)
    vocab = [f"word{i}" for i in range(1000)]
    lines, size = [], 0
    while size < n_bytes:
        lines.append(" ".join(rng.choice(vocab) for _ in range(10)) + "\n")
        size += len(lines[-1])
    return "".join(lines).encode()


def pool_table(api: str) -> str:
    pools = [p for p in get(f"{api}/api/v1/pools") if p["pool"] in ("root.prod", "root.research")]
    lines = [f"  {'pool':<15} {'weight':>6} {'fair share MB':>14} {'used MB':>8} {'apps':>5}"]
    for p in pools:
        lines.append(f"  {p['pool']:<15} {p['weight']:>6g} {p['fair_share']['memory_mb']:>14,.0f} "
                     f"{p['usage']['memory_mb']:>8,.0f} {p['apps']:>5}")
    return "\n".join(lines)


def main() -> int:
    allocations = STATE / "demo-allocations"
    shutil.rmtree(allocations, ignore_errors=True)
    allocations.mkdir(parents=True)
    allocations.chmod(0o755)
    shutil.copy(REPO / "docker" / "allocations" / "fair-scheduler.xml", allocations)
    (allocations / "fair-scheduler.xml").chmod(0o644)
    compose("down", "--volumes", "--remove-orphans", check=False, capture=True)
    started = time.monotonic()
    print("bringing up the cluster: nn (NameNode), rm (ResourceManager + shim), worker 1 and 2 "
          "(NodeManager + DataNode each, on racks 1 and 2), policy ...", flush=True)
    try:
        up = compose("up", "--detach", "--wait", check=False, capture=True)
        if up.returncode != 0:
            raise SystemExit(f"docker compose up failed (exit {up.returncode}):\n{up.stderr.strip()}\n"
                             f"logs: docker compose -p {PROJECT} -f docker/compose.yaml logs")
        api, rm = f"http://127.0.0.1:{port(9797)}", f"http://127.0.0.1:{port(8088)}"
        deadline = time.monotonic() + 180
        while not (get(f"{api}/api/v1/status")["resource_manager"]["registered"]
                   and get(f"{api}/api/v1/cluster")["nodes"] == 2):
            if time.monotonic() > deadline:
                raise SystemExit("the policy server did not register with 2 nodes in 180 s: "
                                 f"docker compose -p {PROJECT} logs policy")
            time.sleep(1)
        print(f"cluster up in {time.monotonic() - started:.0f} s: ResourceManager {rm}, Slotwise UI {api}/, "
              f"NameNode http://127.0.0.1:{port(9870, 'nn')}/ "
              f"(allocation file {allocations / 'fair-scheduler.xml'}: edit it and watch the UI)", flush=True)
        data = words(6 * 1024 * 1024)
        print(f"writing {len(data) / 2**20:.0f} MB into HDFS at {INPUT} (4 MB blocks, one replica each)", flush=True)
        subprocess.run(compose_argv("exec", "-T", "rm", "slotwise-hadoop", "hdfs", "dfs", "-Ddfs.replication=1",
                                    "-put", "-f", "-", INPUT), input=data, check=True, env=ENV,
                       stdout=subprocess.DEVNULL)
        clients = []
        for pool, user, program, args in JOBS:
            print(f"submitting {program} {' '.join(args)} to pool {pool} as {user}", flush=True)
            log = open(STATE / f"demo-{pool}.log", "wb")
            clients.append((pool, subprocess.Popen(
                compose_argv("exec", "-T", "rm", "slotwise-hadoop", "job", "--pool", pool, "--user", user,
                             program, *args),
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=ENV)))
        while any(proc.poll() is None for _, proc in clients):
            time.sleep(10)
            print(f"\n[{time.monotonic() - started:4.0f} s]\n{pool_table(api)}", flush=True)
        apps = {a["queue"]: a for a in get(f"{rm}/ws/v1/cluster/apps")["apps"]["app"]}
        events = compose("exec", "-T", "policy", "cat", "/var/lib/slotwise/events.jsonl", capture=True).stdout
        assigns = Counter(e["pool"] for e in map(json.loads, events.splitlines()) if e.get("event") == "assign")
        print("\nsummary:")
        ok = True
        for pool, _ in clients:
            app = apps.get(f"root.{pool}", {})
            ok &= app.get("finalStatus") == "SUCCEEDED"
            print(f"  {app.get('id', '?')}  root.{pool:<9} {app.get('finalStatus', '?'):<10} "
                  f"containers Python assigned: {assigns.get(f'root.{pool}', 0)}")
        counted = dict((k, int(v)) for k, v in LOCALITY.findall((STATE / "demo-research.log").read_text(
            errors="replace")))
        if counted:
            print(f"  wordcount on HDFS: {counted.get('Launched', 0)} maps, {counted.get('Data-local', 0)} "
                  f"data-local, {counted.get('Rack-local', 0)} rack-local (delay scheduling waits for the "
                  "node holding each block)")
        print(f"demo {'SUCCEEDED' if ok else 'FAILED'} in {time.monotonic() - started:.0f} s "
              f"(job logs {STATE}/demo-*.log)")
        return 0 if ok else 1
    finally:
        print("taking the cluster down ...", flush=True)
        compose("down", "--volumes", "--remove-orphans", check=False, capture=True)
        pidfile = STATE / "dockerd.pid"
        if pidfile.is_file():
            print(f"the dockerd docker/setup-engine.sh started (pid {pidfile.read_text().strip()}) is still "
                  "running; docker/stop-engine.sh stops it")


if __name__ == "__main__":
    sys.exit(main())
