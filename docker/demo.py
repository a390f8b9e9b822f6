"""`make docker-demo` (and `make docker-demo MRV1=1`, `make docker-demo HA=1`):
a dockerized cluster, end to end.

Brings docker/compose.yaml (YARN on HDFS) or, with ``--mrv1``,
docker/compose-mrv1.yaml (Hadoop 1.2.1's JobTracker on its HDFS) up under a
project of its own with free loopback ports and a copy of the allocation
file, writes a text file into HDFS (one replica per block, so a map is
data-local on one node only), runs MapReduce jobs in two queues at once (a
sleep job, and a wordcount reading that file), prints a few snapshots of the
queues while they run (slotwise/demo_report.py) and a summary of Python's decisions and the wordcount's locality,
and takes the cluster down (volumes too). With ``--ha``, docker/compose.ha.yaml
(two ResourceManagers over ZooKeeper, a policy server beside each): a job
runs, the active RM's process is killed (kill -9) mid-job, and the demo
prints the failover as it happens: the other RM turning active, its policy
server registering and placing containers, the job completing. The images
must exist:
docker/build-images.sh (make docker-demo runs it first).

The cluster runs on the datacenter network (SLOTWISE_NET=datacenter: each
worker's tc shapes what it sends as a data centre's network would carry it,
docs/docker.md), and the demo prints what each worker put in force;
SLOTWISE_NET=flat in the environment runs it on Docker's bridge instead.
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

from slotwise.demo_report import Timeline
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
    unit: str                # what the queue tables count (map slots: an MRv1 master)
    ports: tuple[str, ...]


YARN = Flavor("slotwise-demo", "compose.yaml", "rm", 8088, "ResourceManager", 9870, "allocations/fair-scheduler.xml",
              (), "memory_mb", ("SLOTWISE_RM_WEB_PORT", "SLOTWISE_HTTP_PORT", "SLOTWISE_NN_WEB_PORT"))
HA = Flavor("slotwise-ha-demo", "compose.ha.yaml", "rm1", 8088, "ResourceManager", 9870,
            "allocations/fair-scheduler.xml", (), "memory_mb",
            ("SLOTWISE_RM1_WEB_PORT", "SLOTWISE_RM2_WEB_PORT", "SLOTWISE_HTTP1_PORT", "SLOTWISE_HTTP2_PORT",
             "SLOTWISE_NN_WEB_PORT"))
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
        self.net = os.environ.get("SLOTWISE_NET") or "datacenter"
        self.env = {**os.environ, **{p: "" for p in flavor.ports},
                    "SLOTWISE_ALLOCATIONS_DIR": str(self.allocations), "SLOTWISE_NET": self.net}

    def argv(self, *args: str) -> list[str]:
        return ["docker", "compose", "-p", self.f.project, "-f", str(REPO / "docker" / self.f.compose_file), *args]

    def compose(self, *args: str, check: bool = True, capture: bool = False, **kw) -> subprocess.CompletedProcess:
        return subprocess.run(self.argv(*args), check=check, text=True, capture_output=capture, env=self.env, **kw)

    def port(self, container_port: int, service: str | None = None) -> int:
        out = self.compose("port", service or self.f.master, str(container_port), capture=True).stdout.strip()
        return int(out.rpartition(":")[2])

    def exec_argv(self, *args: str) -> list[str]:
        return self.argv("exec", "-T", self.f.master, "slotwise-hadoop", *self.f.prefix, *args)


def say_network(d: Demo) -> None:
    """What each worker's network is (slotwise-hadoop net show), in one line each."""
    names = subprocess.run(["docker", "ps", "--filter", f"label=com.docker.compose.project={d.f.project}",
                            "--filter", "label=com.docker.compose.service=worker", "--format", "{{.Names}}"],
                           capture_output=True, text=True).stdout.split()
    measured = ", docker/net-probe.py measures it" if d.net == "datacenter" else ""
    print(f"network: {d.net} (SLOTWISE_NET; docs/docker.md{measured}):", flush=True)
    for name in sorted(names):
        out = subprocess.run(["docker", "exec", name, "slotwise-hadoop", "net", "show"], capture_output=True,
                             text=True)
        line = (out.stdout.splitlines() or [out.stderr.strip() or "no answer"])[0]
        print(f"  {name}: {line}", flush=True)


def get(url: str):
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


def prepare(d: Demo) -> None:
    """A fresh copy of the allocation file (the policy container reads it as
    uid 1000), and nothing left of an earlier run."""
    shutil.rmtree(d.allocations, ignore_errors=True)
    d.allocations.mkdir(parents=True)
    d.allocations.chmod(0o755)
    shutil.copy(REPO / "docker" / d.f.allocations, d.file)
    d.file.chmod(0o644)
    d.compose("down", "--volumes", "--remove-orphans", check=False, capture=True)


def run(d: Demo) -> int:
    prepare(d)
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
        say_network(d)
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
        # A few snapshots of the queues (when the apps in them change), not a table every few seconds.
        timeline, running = Timeline("mrv1" if d.f.unit == "map_slots" else "yarn"), time.monotonic()
        while any(proc.poll() is None for _, _, proc in clients):
            time.sleep(3)
            for line in timeline.observe(time.monotonic() - running, get(f"{api}/api/v1/queues")):
                print(line, flush=True)
        for line in timeline.closing():
            print(line, flush=True)
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
        print("queues, over the time each held apps (mean fair share and use, time-weighted):")
        print("\n".join(timeline.queue_summary()))
        print(f"demo {'SUCCEEDED' if ok else 'FAILED'} in {time.monotonic() - started:.0f} s on the {d.net} network "
              f"(job logs {STATE}/{d.f.project}-*.log)")
        return 0 if ok else 1
    finally:
        print("taking the cluster down ...", flush=True)
        d.compose("down", "--volumes", "--remove-orphans", check=False, capture=True)
        pidfile = STATE / "dockerd.pid"
        if pidfile.is_file():
            print(f"the dockerd docker/setup-engine.sh started (pid {pidfile.read_text().strip()}) is still "
                  "running; docker/stop-engine.sh stops it")


def run_ha(d: Demo) -> int:
    """RM HA: a failover mid-job, as it happens."""
    prepare(d)
    started = time.monotonic()
    print("bringing up the HA cluster (docker/compose.ha.yaml): zk (ZooKeeper), nn, rm1 and rm2 (ResourceManagers "
          "with the shim, automatic failover), policy1 and policy2 (one beside each RM), 2 workers ...", flush=True)
    try:
        up = d.compose("up", "--detach", "--wait", check=False, capture=True)
        if up.returncode != 0:
            raise SystemExit(f"docker compose up failed (exit {up.returncode}):\n{up.stderr.strip()}")
        rm = {i: f"http://127.0.0.1:{d.port(8088, f'rm{i}')}" for i in (1, 2)}
        api = {i: f"http://127.0.0.1:{d.port(9797, f'rm{i}')}" for i in (1, 2)}

        def ha(i: int) -> str:
            try:
                return get(f"{rm[i]}/ws/v1/cluster/info")["clusterInfo"]["haState"]
            except (OSError, ValueError, KeyError):
                return "DOWN"

        def policy(i: int) -> str:
            try:
                link = get(f"{api[i]}/api/v1/status")["resource_manager"]
            except (OSError, ValueError, KeyError):
                return "not answering"
            return "registered, deciding" if link["registered"] else (link.get("ha_state") or "waiting")

        def registered(i: int, since: float) -> list[dict]:
            out = d.compose("exec", "-T", f"policy{i}", "cat", "/var/lib/slotwise/events.jsonl", capture=True,
                            check=False).stdout
            events = [json.loads(line) for line in out.split("\n")[:-1] if line.strip()]  # [-1]: being written
            return [e for e in events if e.get("ts", 0) >= since and e.get("event") in ("register", "assign")]

        deadline = time.monotonic() + 600
        while not any(policy(i).startswith("registered") for i in (1, 2)):
            if time.monotonic() > deadline:
                raise SystemExit("no policy server registered in 600 s")
            time.sleep(1)
        active = next(i for i in (1, 2) if ha(i) == "ACTIVE")
        print(f"cluster up in {time.monotonic() - started:.0f} s")
        for i in (1, 2):
            print(f"  rm{i} {ha(i):<8} {rm[i]}   policy{i}: {policy(i):<22} {api[i]}/")
        say_network(d)
        log = open(STATE / f"{d.f.project}-prod.log", "wb")
        print("submitting sleep -m 8 -r 1 -mt 15000 to queue prod as alice", flush=True)
        job = subprocess.Popen(d.exec_argv("job", "--queue", "prod", "--user", "alice", "sleep", "-m", "8", "-r", "1",
                                           "-mt", "15000", "-rt", "500"),
                               stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=d.env)
        while not [e for e in registered(active, 0) if e["event"] == "assign" and not e.get("am")]:
            time.sleep(1)
        print(f"policy{active} placed the first maps; now kill -9 of rm{active}'s ResourceManager", flush=True)
        killed = time.time()
        d.compose("exec", "-T", f"rm{active}", "sh", "-c", "kill -KILL $(cat /tmp/slotwise-rm.pid)")
        other = 3 - active
        said = set()
        while job.poll() is None:
            t = time.time() - killed
            if "active" not in said and ha(other) == "ACTIVE":
                said.add("active")
                print(f"  +{t:5.1f} s  rm{other} is ACTIVE", flush=True)
            for e in registered(other, killed):
                if e["event"] not in said:
                    said.add(e["event"])
                    what = "registered with it" if e["event"] == "register" else f"placed a container of {e['app']}"
                    print(f"  +{e['ts'] - killed:5.1f} s  policy{other} {what}", flush=True)
            if "back" not in said and ha(active) == "STANDBY":
                said.add("back")
                print(f"  +{t:5.1f} s  rm{active} is back, as the STANDBY; policy{active}: {policy(active)}",
                      flush=True)
            time.sleep(0.5)
        ok = job.returncode == 0
        for i in (1, 2):
            print(f"  rm{i} {ha(i):<8} policy{i}: {policy(i)}")
        print(f"demo {'SUCCEEDED' if ok else 'FAILED'} in {time.monotonic() - started:.0f} s: the job "
              f"{'completed' if ok else 'failed'} across the failover (job log {STATE}/{d.f.project}-prod.log)")
        return 0 if ok else 1
    finally:
        print("taking the cluster down ...", flush=True)
        d.compose("down", "--volumes", "--remove-orphans", check=False, capture=True)


def main(argv: list[str]) -> int:
    if argv not in ([], ["--mrv1"], ["--ha"]):
        sys.exit("usage: docker/demo.py [--mrv1 | --ha]")
    if argv == ["--ha"]:
        return run_ha(Demo(HA))
    return run(Demo(MRV1 if argv else YARN))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
