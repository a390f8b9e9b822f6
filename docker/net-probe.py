#!/usr/bin/env python3
"""Measures the docker cluster's network as HDFS sees it: one block read
from the local DataNode, one from a DataNode in the same rack and one from
another rack, each timed, beside the rate SLOTWISE_NET put in force.

    docker/net-probe.py [--project P] [--mrv1] [--holder I] [--size-mb M] [--json]

It writes M MB (default 1, one block of bench_locality.py's inputs) of
random bytes into HDFS from worker I (default 1) with one replica, which
HDFS puts on the writer's own DataNode; checks through the NameNode's
WebHDFS redirect that the block is there; reads it once from worker I
itself to warm the DataNode up; then reads it over WebHDFS (curl, no JVM
to start) from worker I (node-local), from a worker of its rack (rack-local)
and from a worker of another rack (off-rack), and prints each read's
throughput. The DataNode of worker I sends the block, so its shaping (`tc`
in worker I, `slotwise-hadoop net show`) is what is measured. A class with
no worker to read from (2 workers on 2 racks have no rack-local pair) is
reported as not measured. The file is removed at the end.

Exit 0 when every read completed; 1 (one line on stderr) otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time

PROBE_DIR = "/tmp/slotwise-net-probe"
WORKER = re.compile(r"-worker-(\d+)$")
CLASSES = ("local", "rack", "offrack")
LABEL = {"local": "node-local", "rack": "rack-local", "offrack": "off-rack"}


class ProbeError(Exception):
    pass


def docker(*args: str, stdin: bytes | None = None, timeout: float = 300) -> str:
    try:
        out = subprocess.run(["docker", *args], input=stdin, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ProbeError(f"docker {' '.join(args[:3])} ...: no answer in {timeout:.0f} s") from None
    if out.returncode:
        err = out.stderr.decode(errors="replace").strip().splitlines()
        raise ProbeError(f"docker {' '.join(args[:4])} ... failed ({out.returncode}): {err[-1] if err else ''}")
    return out.stdout.decode(errors="replace")


def workers(project: str) -> dict[int, str]:
    """The project's worker containers, by their number."""
    names = docker("ps", "--filter", f"label=com.docker.compose.project={project}", "--filter",
                   "label=com.docker.compose.service=worker", "--format", "{{.Names}}").split()
    found = {int(m.group(1)): n for n in names if (m := WORKER.search(n))}
    if not found:
        raise ProbeError(f"no running worker in compose project {project!r} (docker compose -p {project} ps)")
    return dict(sorted(found.items()))


def net_state(container: str) -> dict:
    return json.loads(docker("exec", container, "slotwise-hadoop", "net", "show", "--json"))


def classify(holder: dict, states: dict[int, dict], holder_i: int) -> dict[str, int | None]:
    """A reader for each class: the holder itself, then the first other
    worker its shaping sends to as its rack (or, unshaped, HDFS's rack map
    says shares its rack), and the first it sends to as another rack."""
    by_name = {s["self"]["name"]: i for i, s in states.items()}
    shaped = {p["name"]: p["class"] for p in holder.get("peers", {}).values()}
    pick: dict[str, int | None] = {"local": holder_i, "rack": None, "offrack": None}
    for i, s in states.items():
        if i == holder_i:
            continue
        cls = shaped.get(s["self"]["name"]) if holder["in_force"] == "datacenter" else None
        if cls is None:
            cls = "rack" if s["self"]["rack"] == holder["self"]["rack"] else "offrack"
        if pick[cls] is None:
            pick[cls] = by_name[s["self"]["name"]]
    return pick


def expected_kbit(holder: dict, cls: str) -> int | None:
    if holder["in_force"] != "datacenter" or cls == "local":
        return None
    return holder["nic_kbit"] if cls == "rack" else holder["offrack_kbit"]


def curl(container: str, url: str, fmt: str, timeout: float) -> str:
    return docker("exec", container, "curl", "-sS", "--max-time", str(int(timeout)), "-o", "/dev/null", "-w", fmt,
                  url, timeout=timeout + 30)


class Block:
    """The probe's file: one block written from worker ``holder`` with one
    replica, so that HDFS keeps it on that worker's DataNode."""

    def __init__(self, project: str, mrv1: bool, holder: int, size_mb: float) -> None:
        self.project, self.mrv1, self.holder = project, mrv1, holder
        self.workers = workers(project)
        if holder not in self.workers:
            raise ProbeError(f"no worker {holder} in {project} (workers: {', '.join(map(str, self.workers))})")
        self.container = self.workers[holder]
        self.size = int(size_mb * 1024 * 1024)
        self.path = f"{PROBE_DIR}/{holder}-{os.getpid()}-{time.monotonic_ns() % 10**6}"
        self.hdfs = ["exec", "-i", self.container, "slotwise-hadoop", *(["mrv1"] if mrv1 else []), "hdfs", "dfs"]
        self.url = None

    def write(self) -> "Block":
        block = "dfs.block.size" if self.mrv1 else "dfs.blocksize"
        block_size = max(1024 * 1024, -(-self.size // (1024 * 1024)) * 1024 * 1024)  # whole MB: one block
        # Hadoop 1's -mkdir makes parents without -p and fails on a directory that exists: a failure shows in -put.
        subprocess.run(["docker", *self.hdfs, "-mkdir", *([] if self.mrv1 else ["-p"]), PROBE_DIR],
                       capture_output=True, timeout=300)
        docker(*self.hdfs, f"-D{block}={block_size}", "-Ddfs.replication=1", "-put", "-", self.path,
               stdin=os.urandom(self.size), timeout=600)
        # The NameNode sends a WebHDFS reader to a DataNode that holds the block: it must be the writer's.
        nn_port = 50070 if self.mrv1 else 9870
        self.url = curl(self.container, f"http://nn:{nn_port}/webhdfs/v1{self.path}?op=OPEN", "%{redirect_url}",
                        60).strip()
        host = re.match(r"https?://([^:/]+)", self.url)
        node = docker("inspect", "-f", "{{.Config.Hostname}}", self.container).strip()
        if not host or host.group(1) != node:
            raise ProbeError(f"the probe's block is not on worker {self.holder}'s DataNode ({node}): the NameNode "
                             f"sends readers to {self.url or 'nowhere'}")
        return self

    def remove(self) -> None:
        subprocess.run(["docker", *self.hdfs, *(["-rm"] if self.mrv1 else ["-rm", "-f", "-skipTrash"]), self.path],
                       capture_output=True, timeout=300)

    def __enter__(self) -> "Block":
        return self.write()

    def __exit__(self, *exc) -> None:
        self.remove()


def measure(b: Block) -> dict:
    """Read the block from its holder (after a first read that warms its
    DataNode's WebHDFS up), from a worker its shaping treats as its rack and
    from one it treats as another rack, as the workers' networks are now."""
    states = {i: net_state(c) for i, c in b.workers.items()}
    holder = states[b.holder]
    readers = classify(holder, states, b.holder)
    shaped = holder["in_force"] == "datacenter"
    timeout = 60 + 8 * b.size / (holder["offrack_kbit"] * 1000 / 8) if shaped else 120
    curl(b.container, b.url, "%{size_download}", timeout)
    rows = []
    for cls in CLASSES:
        i = readers[cls]
        row = {"class": cls, "label": LABEL[cls], "reader": i, "expected_kbit": expected_kbit(holder, cls)}
        if i is not None:
            got = curl(b.workers[i], b.url, "%{size_download} %{time_total}", timeout).split()
            n, secs = int(got[0]), float(got[1])
            if n != b.size:
                raise ProbeError(f"worker {i} read {n} of the {b.size} bytes of the probe's block")
            row.update(bytes=n, seconds=round(secs, 3), mbyte_s=round(n / secs / 1e6, 3),
                       mbit_s=round(n * 8 / secs / 1e6, 3))
        rows.append(row)
    local = rows[0].get("mbyte_s")
    for r in rows[1:]:
        if r.get("mbyte_s") and local:
            r["of_local"] = round(r["mbyte_s"] / local, 4)
    return {"project": b.project, "holder": b.holder, "holder_rack": holder["self"]["rack"], "mode": holder["mode"],
            "in_force": holder["in_force"], "nic_kbit": holder["nic_kbit"], "offrack_kbit": holder["offrack_kbit"],
            "oversubscription": holder["oversubscription"], "size": b.size, "reads": rows,
            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S")}


def probe(project: str, mrv1: bool, holder: int, size_mb: float) -> dict:
    with Block(project, mrv1, holder, size_mb) as b:
        return measure(b)


def render(result: dict) -> str:
    mode = result["in_force"]
    head = (f"net-probe: {result['project']}, network {mode}"
            + (f" (NIC {result['nic_kbit'] / 1000:g} Mbit/s to its rack, {result['offrack_kbit'] / 1000:g} Mbit/s "
               f"off the rack, {result['oversubscription']}:1)" if mode == "datacenter" else "")
            + f"; a {result['size'] / 2**20:g} MB block on worker {result['holder']} ({result['holder_rack']}), "
              "read over WebHDFS from:")
    lines = [head]
    for r in result["reads"]:
        expect = f"shaped to {r['expected_kbit'] / 1000:g} Mbit/s" if r["expected_kbit"] else "unshaped"
        if r["reader"] is None:
            lines.append(f"  {r['label']:<11} no worker to read from ({expect})")
            continue
        rel = f", {100 * r['of_local']:.1f}% of local" if "of_local" in r else ""
        lines.append(f"  {r['label']:<11} worker {r['reader']}: {r['seconds']:6.2f} s, {r['mbyte_s']:8.3f} MB/s "
                     f"({r['mbit_s']:.2f} Mbit/s; {expect}{rel})")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--project", default=None, help="compose project (default: slotwise, slotwise-mrv1 with --mrv1)")
    ap.add_argument("--mrv1", action="store_true", help="a docker/compose-mrv1.yaml cluster (Hadoop 1.2.1's HDFS)")
    ap.add_argument("--holder", type=int, default=1, help="the worker whose DataNode holds the block (default 1)")
    ap.add_argument("--size-mb", type=float, default=1.0, help="the block's size in MB, 0.1 to 64 (default 1)")
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    args = ap.parse_args(argv)
    if not 0.1 <= args.size_mb <= 64:
        ap.error("--size-mb: 0.1 to 64")
    project = args.project or ("slotwise-mrv1" if args.mrv1 else "slotwise")
    try:
        result = probe(project, args.mrv1, args.holder, args.size_mb)
    except ProbeError as e:
        print(f"net-probe: {e}", file=sys.stderr)
        return 1
    print(json.dumps(result, indent=1) if args.json else render(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
