"""`make docker-demo` (and `make docker-demo MRV1=1`): a dockerized cluster,
end to end.

Brings docker/compose.yaml (YARN on HDFS) or, with ``--mrv1``,
docker/compose-mrv1.yaml (Hadoop 1.2.1's JobTracker on its HDFS) up under a
project of its own with free loopback ports and a copy of the allocation
file, writes a text file into HDFS (one replica per block, so a map is
data-local on one node only), runs MapReduce jobs in two queues at once (a
sleep job, and a wordcount reading that file), prints the queue table while
they run and a summary of Python's decisions and the wordcount's locality,
and takes the cluster down (volumes too). The images must exist:
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
from dataclasses import dataclass
from pathlib import Path

from slotwise.localcluster.jobs import words

REPO = Path(__file__).resolve().parents[1]
STATE = REPO / "run" / "docker"
INPUT = "/demo/words.txt"
LOCALITY = re.compile(r"\s(Data-local|Rack-local|Launched) map tasks=(\d+)$", re.M)


@dataclass(frozen=True)
class Flavor:
    project: str
    compose_file: str
    master: str              # the service where job clients run
    master_port: int         # its web UI
    master_name: str
    nn_port: int
    allocations: str         # under docker/
    prefix: tuple[str, ...]  # slotwise-hadoop's sub-command prefix
    unit: str                # what the queue table counts
    ports: tuple[str, ...]


YARN = Flavor("slotwise-demo", "compose.yaml", "rm", 8088, "ResourceManager", 9870, "allocations/fair-scheduler.xml",
              (), "memory_mb", ("SLOTWISE_RM_WEB_PORT", "SLOTWISE_HTTP_PORT", "SLOTWISE_NN_WEB_PORT"))
MRV1 = Flavor("slotwise-mrv1-demo", "compose-mrv1.yaml", "jt", 50030, "JobTracker", 50070,
              "allocations-mrv1/pools.xml", ("mrv1",), "map_slots",
              ("SLOTWISE_JT_WEB_PORT", "SLOTWISE_HTTP_PORT", "SLOTWISE_NN_WEB_PORT"))
JOBS = [  # (queue, user, program, args)
    ("prod", "alice", "sleep", ["-m", "12", "-r", "1", "-mt", "3000", "-rt", "500"]),
    ("research", "bob", "wordcount", [INPUT, "/demo/counts"]),
]


class Demo:
    def __init__(self, flavor: Flavor) -> None:
        self.f = flavor
        source = REPO / "docker" / flavor.allocations
        self.allocations = STATE / f"demo-{source.parent.name}"
        self.file = self.allocations / source.name
        self.env = {**os.environ, **{p: "" for p in flavor.ports},
                    "SLOTWISE_ALLOCATIONS_DIR": str(self.allocations)}

    def argv(self, *args: str) -> list[str]:
        return ["docker", "compose", "-p", self.f.project, "-f", str(REPO / "docker" / self.f.compose_file), *args]

    def compose(self, *args: str, check: bool = True, capture: bool = False, **kw) -> subprocess.CompletedProcess:
        return subprocess.run(self.argv(*args), check=check, text=True, capture_output=capture, env=self.env, **kw)

    def port(self, container_port: int, service: str | None = None) -> int:
        out = self.compose("port", service or self.f.master, str(container_port), capture=True).stdout.strip()
        return int(out.rpartition(":")[2])

    def exec_argv(self, *args: str) -> list[str]:
        return self.argv("exec", "-T", self.f.master, "slotwise-hadoop", *self.f.prefix, *args)


def get(url: str):
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


def queue_table(api: str, unit: str) -> str:
    queues = [p for p in get(f"{api}/api/v1/queues") if p["queue"] in ("root.prod", "root.research")]
    lines = [f"  {'queue':<15} {'weight':>6} {'fair share ' + unit:>20} {'used':>8} {'apps':>5}"]
    for p in queues:
        lines.append(f"  {p['queue']:<15} {p['weight']:>6g} {p['fair_share'][unit]:>20,.1f} "
                     f"{p['usage'][unit]:>8,.0f} {p['apps']:>5}")
    return "\n".join(lines)


def run(d: Demo) -> int:
    shutil.rmtree(d.allocations, ignore_errors=True)
    d.allocations.mkdir(parents=True)
    d.allocations.chmod(0o755)
    shutil.copy(REPO / "docker" / d.f.allocations, d.file)
    d.file.chmod(0o644)
    d.compose("down", "--volumes", "--remove-orphans", check=False, capture=True)
    started = time.monotonic()
    print(f"bringing up the cluster ({d.f.compose_file}): nn (NameNode), {d.f.master} ({d.f.master_name} + shim), "
          "worker 1 and 2 (each a node manager and a DataNode, on racks 1 and 2), policy ...", flush=True)
    try:
        up = d.compose("up", "--detach", "--wait", check=False, capture=True)
        if up.returncode != 0:
            raise SystemExit(f"docker compose up failed (exit {up.returncode}):\n{up.stderr.strip()}\n"
                             f"logs: docker compose -p {d.f.project} -f docker/{d.f.compose_file} logs")
        api, master = f"http://127.0.0.1:{d.port(9797)}", f"http://127.0.0.1:{d.port(d.f.master_port)}"
        deadline = time.monotonic() + 300
        while not (get(f"{api}/api/v1/status")["resource_manager"]["registered"]
                   and get(f"{api}/api/v1/cluster")["nodes"] == 2):
            if time.monotonic() > deadline:
                raise SystemExit("the policy server did not register with 2 nodes in 300 s: "
                                 f"docker compose -p {d.f.project} logs policy")
            time.sleep(1)
        print(f"cluster up in {time.monotonic() - started:.0f} s: {d.f.master_name} {master}, Slotwise UI {api}/, "
              f"NameNode http://127.0.0.1:{d.port(d.f.nn_port, 'nn')}/ "
              f"(allocation file {d.file}: edit it and watch the UI)", flush=True)
        data = words(6 * 1024 * 1024, random.Random(1), vocabulary=1000, per_line=10, prefix="word")
        print(f"writing {len(data) / 2**20:.0f} MB into HDFS at {INPUT} (4 MB blocks, one replica each)", flush=True)
        mkdir = ["-mkdir"] if d.f.prefix else ["-mkdir", "-p"]  # Hadoop 1 makes parents without -p
        for attempt in range(60):  # HDFS may still be in safe mode, or without DataNodes, for a few seconds
            subprocess.run(d.exec_argv("hdfs", "dfs", *mkdir, INPUT.rsplit("/", 1)[0]), env=d.env,
                           capture_output=True)
            put = subprocess.run(d.exec_argv("hdfs", "dfs", "-Ddfs.replication=1", "-put", "-", INPUT), input=data,
                                 env=d.env, capture_output=True)
            if put.returncode == 0:
                break
            time.sleep(2)
        else:
            raise SystemExit(f"could not write {INPUT} into HDFS: {put.stderr.decode(errors='replace')[-1500:]}")
        clients = []
        for queue, user, program, args in JOBS:
            print(f"submitting {program} {' '.join(args)} to queue {queue} as {user}", flush=True)
            log = open(STATE / f"{d.f.project}-{queue}.log", "wb")
            clients.append((queue, program, subprocess.Popen(
                d.exec_argv("job", "--queue", queue, "--user", user, program, *args),
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=d.env)))
        while any(proc.poll() is None for _, _, proc in clients):
            time.sleep(10)
            print(f"\n[{time.monotonic() - started:4.0f} s]\n{queue_table(api, d.f.unit)}", flush=True)
        events = d.compose("exec", "-T", "policy", "cat", "/var/lib/slotwise/events.jsonl", capture=True).stdout
        assigns = Counter(e["queue"] for e in map(json.loads, events.splitlines()) if e.get("event") == "assign")
        print("\nsummary:")
        ok = True
        for queue, program, proc in clients:
            log = (STATE / f"{d.f.project}-{queue}.log").read_text(errors="replace")
            ok &= proc.returncode == 0
            print(f"  {program:<10} root.{queue:<9} {'SUCCEEDED' if proc.returncode == 0 else 'FAILED':<10} "
                  f"tasks Python assigned in the queue: {assigns.get(f'root.{queue}', 0)}")
            counted = {k: int(v) for k, v in LOCALITY.findall(log)}
            if program == "wordcount" and counted:
                print(f"  wordcount on HDFS: {counted.get('Launched', 0)} maps, {counted.get('Data-local', 0)} "
                      f"data-local, {counted.get('Rack-local', 0)} rack-local (delay scheduling waits for the "
                      "node holding each block)")
        print(f"demo {'SUCCEEDED' if ok else 'FAILED'} in {time.monotonic() - started:.0f} s "
              f"(job logs {STATE}/{d.f.project}-*.log)")
        return 0 if ok else 1
    finally:
        print("taking the cluster down ...", flush=True)
        d.compose("down", "--volumes", "--remove-orphans", check=False, capture=True)
        pidfile = STATE / "dockerd.pid"
        if pidfile.is_file():
            print(f"the dockerd docker/setup-engine.sh started (pid {pidfile.read_text().strip()}) is still "
                  "running; docker/stop-engine.sh stops it")


def main(argv: list[str]) -> int:
    if argv not in ([], ["--mrv1"]):
        sys.exit("usage: docker/demo.py [--mrv1]")
    return run(Demo(MRV1 if argv else YARN))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
