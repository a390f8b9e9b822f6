"""Delay scheduling measured on real block locations: the data-local
fraction of MapReduce jobs on the dockerized cluster with HDFS, under
Slotwise and beside Hadoop's own schedulers, on the same cluster, input
and job stream.

Run: .venv/bin/python benchmarks/bench_locality.py --seed N [--quick]
         [--workers W] [--cluster yarn|mrv1|both] [--net datacenter|flat] --out DIR

It starts a Docker engine when none answers (docker/setup-engine.sh, as the
docker tier does; one it started is left running, docker/stop-engine.sh
stops it) and builds or reuses the images of this checkout
(docker/build-images.sh). For each cluster it brings docker/compose.yaml (or
compose-mrv1.yaml) up with W workers (default 4) on 2 racks on the network
--net asks for (SLOTWISE_NET; default datacenter: each worker's tc shapes
what it sends, to its rack at a 1 Gbit/s NIC's rate and off its rack at its
share of an oversubscribed uplink, both scaled to this cluster; flat:
Docker's bridge, unshaped; docs/docker.md), writes one input file per job
into HDFS (1 MB blocks, replication 2: HDFS puts a block's second replica on
the other rack, so a worker picked at random holds a given block half the
time with 4 workers, less with more, and every map can read its block at
worst from its own rack; the inputs are written with the shaping lifted,
since loading them is not measured, and it is put back before the first
job), measures the network with docker/net-probe.py, then for each
scheduler restarts the master with it and submits the same seeded stream of
map-only wordcount jobs of 1, 3, 10 and 50 maps from three queues (Poisson
arrivals, dense enough to keep the containers or slots busy; their output
written with one replica, see OUTPUT_REPLICAS), and reads each
job's counters (data-local, rack-local and launched maps, time in maps) and
its response time (submission to the client's exit). Schedulers:

  YARN: slotwise (fair, with delay scheduling's default waits),
        slotwise-nodelay (waits 0), slotwise-target (the allocation file's
        <defaultLocalityTarget>0.9</defaultLocalityTarget>: the engine tunes
        each queue's waits for 90% node-local, starting from the default
        waits), slotwise-target-one (the same, one container per node per
        heartbeat: serve --max-assign 1, as the FairScheduler's default
        assignmultiple=false), fair (YARN's FairScheduler, defaults:
        no locality wait), fair-locality (its thresholds set:
        yarn.scheduler.fair.locality.threshold.node and .rack 1.0, one
        scheduling opportunity per node before giving up a level, as the
        FairScheduler's documentation describes them), capacity (the
        CapacityScheduler, default node-locality-delay 40)
  MRv1: slotwise (with delay), slotwise-nodelay, slotwise-target (as on
        YARN, in the pools file), jobqueue (Hadoop 1.2.1's
        JobQueueTaskScheduler)

--quick: 12 jobs instead of 48, and on YARN only slotwise,
slotwise-nodelay, slotwise-target and fair (the goals' comparisons;
--schedulers to add others); about 20 minutes for YARN and 8 for MRv1 on 2
cores.

Utilisation: the RM's allocated memory over its total (every container,
AMs included, is 512 MB: busy container-seconds over capacity), or on MRv1
occupied map slots over map slots (the jobs are map-only), sampled every
2 s from the first submission until the last job ended, so while at least
one job was outstanding, time-weighted. `utilisation_body_pct` is the same
over the first 80% of that time (the figure docs/results/locality.md gave
for issue 26, which leaves out the stream's tail of a lone large job).

Per scheduler, DIR/CLUSTER/SCHEDULER/ holds each job's client log and
timeline.json: the busy fraction, running and pending apps and containers
every 2 s, and the CPU seconds each service's containers used over the
stream (where the machine's cores went).

Writes DIR/report.json (net, the probe's figures, and rows: scheduler,
cluster, net, job_maps, jobs, data_local_pct, rack_local_pct,
off_switch_pct, mean_response_s, mean_map_s, utilisation_pct,
utilisation_body_pct; map_s_by_locality: the time of the maps of 1-map jobs
by where they read their block), DIR/report.md and DIR/locality.png, and
prints last
`locality: slotwise+delay small-job data-local P% vs fairscheduler Q% (N jobs)`.
The cluster is taken down at the end, whatever happens.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from slotwise.localcluster.jobs import words

REPO = Path(__file__).resolve().parents[1]
NETS = ("datacenter", "flat")
DOCKER = REPO / "docker"
COUNTER = re.compile(r"^(?:.*?JobClient:)?\s+([A-Za-z][\w ()-]*?)=(\d+)\s*$", re.M)
APP_ID = re.compile(r"\b(application_\d+_\d+|job_\d+_\d+)\b")
QUEUES = ("prod", "research", "adhoc")
SIZES = (1, 3, 10, 50)
BLOCK = 1024 * 1024
#: The jobs' output: one replica, on the map's own node. A map-only
#: wordcount writes a line per word, more than it reads; a second replica
#: goes to the other rack (HDFS's rule), which on the datacenter network
#: would make every map as slow as its output's trip off the rack, wherever
#: the scheduler put it (measured: 15 s of a 16 s map phase). The paper's
#: IO-heavy jobs (text search) wrote little.
OUTPUT_REPLICAS = "-Ddfs.replication=1"
FAIR = "org.apache.hadoop.yarn.server.resourcemanager.scheduler.fair.FairScheduler"
CAPACITY = "org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.CapacityScheduler"
SLOTWISE_ALLOCATIONS = """<?xml version="1.0"?>
<allocations>
{top}  <queue name="prod"><weight>1</weight></queue>
  <queue name="research"><weight>1</weight></queue>
  <queue name="adhoc"><weight>1</weight></queue>
</allocations>
"""
MRV1_POOLS = """<?xml version="1.0"?>
<allocations>
{top}  <pool name="prod"><weight>1</weight></pool>
  <pool name="research"><weight>1</weight></pool>
  <pool name="adhoc"><weight>1</weight></pool>
</allocations>
"""
#: slotwise-target's line at the top of the allocation file (both formats).
TARGET = "  <defaultLocalityTarget>0.9</defaultLocalityTarget>\n"
NODELAY = ["--node-locality-delay", "0", "--rack-locality-delay", "0"]
#: Three equal queues for the CapacityScheduler (it has no on-demand queues).
CAPACITY_ENV = {
    "YARN-SITE.XML_yarn.resourcemanager.scheduler.class": CAPACITY,
    "CAPACITY-SCHEDULER.XML_yarn.scheduler.capacity.root.queues": ",".join(QUEUES),
    **{f"CAPACITY-SCHEDULER.XML_yarn.scheduler.capacity.root.{p}.capacity": c
       for p, c in zip(QUEUES, ("33.4", "33.3", "33.3"))},
    **{f"CAPACITY-SCHEDULER.XML_yarn.scheduler.capacity.root.{p}.maximum-capacity": "100" for p in QUEUES},
    **{f"CAPACITY-SCHEDULER.XML_yarn.scheduler.capacity.root.{p}.user-limit-factor": "10" for p in QUEUES},
    "CAPACITY-SCHEDULER.XML_yarn.scheduler.capacity.maximum-am-resource-percent": "0.5",
}


@dataclass(frozen=True)
class Scheduler:
    label: str
    cluster: str                        # yarn or mrv1
    master_env: dict = field(default_factory=dict)
    policy: list | None = None          # serve's extra flags; None: no policy server
    top: str = ""                       # what the allocation file holds above its queues


SCHEDULERS = [
    Scheduler("slotwise", "yarn", policy=[]),
    Scheduler("slotwise-nodelay", "yarn", policy=NODELAY),
    Scheduler("slotwise-target", "yarn", policy=[], top=TARGET),
    Scheduler("slotwise-target-one", "yarn", policy=["--max-assign", "1"], top=TARGET),
    Scheduler("fair", "yarn", {"YARN-SITE.XML_yarn.resourcemanager.scheduler.class": FAIR}),
    Scheduler("fair-locality", "yarn", {"YARN-SITE.XML_yarn.resourcemanager.scheduler.class": FAIR,
                                         "YARN-SITE.XML_yarn.scheduler.fair.locality.threshold.node": "1.0",
                                         "YARN-SITE.XML_yarn.scheduler.fair.locality.threshold.rack": "1.0"}),
    Scheduler("capacity", "yarn", CAPACITY_ENV),
    Scheduler("slotwise", "mrv1", policy=[]),
    Scheduler("slotwise-nodelay", "mrv1", policy=NODELAY),
    Scheduler("slotwise-target", "mrv1", policy=[], top=TARGET),
    Scheduler("jobqueue", "mrv1", {"MAPRED-SITE.XML_mapred.jobtracker.taskScheduler":
                                   "org.apache.hadoop.mapred.JobQueueTaskScheduler"}),
]


#: What --quick runs: the schedulers the goals compare.
QUICK = ("slotwise", "slotwise-nodelay", "slotwise-target", "fair", "jobqueue")


@dataclass(frozen=True)
class Flavor:
    name: str
    compose_file: str
    project: str
    master: str
    prefix: tuple
    allocations: str
    file_name: str
    map_only: str
    ports: tuple


FLAVORS = {
    "yarn": Flavor("yarn", "compose.yaml", "slotwise-bench", "rm", (), SLOTWISE_ALLOCATIONS, "fair-scheduler.xml",
                   "-Dmapreduce.job.reduces=0", ("SLOTWISE_RM_WEB_PORT", "SLOTWISE_HTTP_PORT", "SLOTWISE_NN_WEB_PORT")),
    "mrv1": Flavor("mrv1", "compose-mrv1.yaml", "slotwise-bench-mrv1", "jt", ("mrv1",), MRV1_POOLS, "pools.xml",
                   "-Dmapred.reduce.tasks=0", ("SLOTWISE_JT_WEB_PORT", "SLOTWISE_HTTP_PORT", "SLOTWISE_NN_WEB_PORT")),
}


@dataclass(frozen=True)
class JobSpec:
    n: int
    maps: int
    queue: str
    at: float            # seconds after the stream starts


def workload(seed: int, quick: bool) -> list[JobSpec]:
    """Mostly small jobs, as in the paper's Facebook trace: per 12 jobs,
    5 of 1 map, 4 of 3, 2 of 10 and 1 of 50, shuffled, Poisson arrivals."""
    rng = random.Random(seed)
    rounds = 1 if quick else 4
    sizes = [s for _ in range(rounds) for s in [1] * 5 + [3] * 4 + [10] * 2 + [50]]
    rng.shuffle(sizes)
    t, out = 0.0, []
    for n, maps in enumerate(sizes):
        out.append(JobSpec(n, maps, QUEUES[rng.randrange(len(QUEUES))], round(t, 2)))
        t += rng.expovariate(1 / 2.0)
    return out


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


class Cluster:
    """One compose project, brought up and down by this benchmark."""

    def __init__(self, flavor: Flavor, workers: int, out: Path, net: str = "datacenter") -> None:
        self.f = flavor
        self.out = out.resolve() / flavor.name
        self.out.mkdir(parents=True, exist_ok=True)
        self.allocations = self.out / "allocations"
        self.allocations.mkdir(exist_ok=True)
        self.allocations.chmod(0o755)
        self.write_allocations("")
        self.override = self.out / "compose.override.yaml"
        self.net = net
        self.env = {**os.environ, **{p: "" for p in flavor.ports}, "SLOTWISE_WORKERS": str(workers),
                    "SLOTWISE_RACKS": "2", "SLOTWISE_ALLOCATIONS_DIR": str(self.allocations), "SLOTWISE_NET": net}
        self.workers = workers
        self.ports: dict[tuple[str, int], int] = {}

    def write_allocations(self, top: str) -> None:
        """The allocation file (pools file) the policy server reads: three
        equal queues, and ``top`` above them (slotwise-target's target)."""
        path = self.allocations / self.f.file_name
        path.write_text(self.f.allocations.format(top=top))
        path.chmod(0o644)

    def compose(self, *args: str, check: bool = True, timeout: float = 1200) -> subprocess.CompletedProcess:
        argv = ["docker", "compose", "-p", self.f.project, "-f", str(DOCKER / self.f.compose_file),
                "-f", str(self.override), *args]
        out = subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=timeout)
        if check and out.returncode:
            raise SystemExit(f"docker compose {' '.join(args)} failed ({out.returncode}): {out.stderr[-2000:]}")
        return out

    def configure(self, s: Scheduler) -> None:
        """The override file: the master's scheduler, a roomy master for the
        job clients, the policy server's flags."""
        env = "".join(f"      {k}: {json.dumps(v)}\n" for k, v in s.master_env.items())
        policy_cmd = ["serve", *(["--mrv1"] if self.f.name == "mrv1" else []), "--allocations",
                      f"/etc/slotwise/allocations/{self.f.file_name}", "--gateway-info", "/run/slotwise/gateway.json",
                      "--admin-token-file", "/run/slotwise/admin.token", "--event-log",
                      "/var/lib/slotwise/events.jsonl", "--http", "0.0.0.0:9797",
                      *(["--heartbeat-interval", "3"] if self.f.name == "mrv1" else []), *(s.policy or [])]
        self.override.write_text(
            "services:\n"
            f"  {self.f.master}:\n"
            "    mem_limit: 8g\n"
            + (f"    environment:\n{env}" if env else "")
            + "  policy:\n"
            f"    command: {json.dumps(policy_cmd)}\n")

    def up(self, s: Scheduler, first: bool) -> None:
        """The whole cluster the first time; after that only the master (and
        the policy server) again: a worker recreated would lose its
        DataNode's blocks, and its NodeManager finds the new master itself."""
        self.configure(s)
        self.ports.clear()
        if s.policy is None:
            self.compose("stop", "policy", check=False)
        # For the policy server started below (one left from the last run may
        # reload it before it is replaced: its stream is over).
        self.write_allocations(s.top)
        if first:
            self.compose("up", "-d", "--wait", "nn", self.f.master, "worker",
                         *(["policy"] if s.policy is not None else []))
        else:
            self.compose("up", "-d", "--wait", "--no-deps", "--force-recreate", self.f.master,
                         *(["policy"] if s.policy is not None else []))
        self.wait_ready(s)

    def worker_containers(self) -> list[str]:
        out = subprocess.run(["docker", "ps", "--filter", f"label=com.docker.compose.project={self.f.project}",
                              "--filter", "label=com.docker.compose.service=worker", "--format", "{{.Names}}"],
                             capture_output=True, text=True, timeout=60)
        return sorted(out.stdout.split())

    def set_net(self, mode: str) -> None:
        """Put ``mode`` in force in every worker (slotwise-hadoop net MODE)."""
        for w in self.worker_containers():
            out = subprocess.run(["docker", "exec", w, "slotwise-hadoop", "net", mode, "--wait", "60"],
                                 capture_output=True, text=True, timeout=300)
            if out.returncode:
                raise SystemExit(f"{w}: slotwise-hadoop net {mode} failed: {(out.stderr or out.stdout).strip()}")

    def check_net(self) -> None:
        """Every worker has the network asked for in force, with every other
        worker known (one restarted since would have its own again)."""
        ws = self.worker_containers()
        if len(ws) != self.workers:
            raise SystemExit(f"{self.f.project}: {len(ws)} workers running, {self.workers} expected")
        for w in ws:
            out = subprocess.run(["docker", "exec", w, "slotwise-hadoop", "net", "show", "--json"],
                                 capture_output=True, text=True, timeout=120)
            state = json.loads(out.stdout) if out.returncode == 0 else {}
            if state.get("in_force") != self.net or (self.net == "datacenter" and not state.get("complete")):
                raise SystemExit(f"{w}: network {self.net} not in force: "
                                 f"{state.get('errors') or state.get('in_force') or out.stderr.strip()}")

    def probe(self) -> dict | None:
        """docker/net-probe.py's reading of the network (one block read
        node-local, rack-local and off-rack), or None if it failed."""
        argv = [sys.executable, str(DOCKER / "net-probe.py"), "--project", self.f.project, "--json",
                *(["--mrv1"] if self.f.name == "mrv1" else [])]
        out = subprocess.run(argv, capture_output=True, text=True, timeout=900)
        if out.returncode:
            log(f"{self.f.name}: the network probe failed: {out.stderr.strip()}")
            return None
        result = json.loads(out.stdout)
        for r in result["reads"]:
            if r.get("mbyte_s"):
                log(f"  {r['label']:<11} read of a 1 MB block: {r['mbyte_s']:.3f} MB/s ({r['seconds']} s)")
        return result

    def port(self, container_port: int, service: str | None = None) -> int:
        """The host port of a published one, asked of compose once per master
        (the sampler reads it every 2 s: a `docker compose` each time would
        cost the cluster CPU it measures)."""
        key = (service or self.f.master, container_port)
        if key not in self.ports:
            out = self.compose("port", key[0], str(container_port)).stdout.strip()
            self.ports[key] = int(out.rpartition(":")[2])
        return self.ports[key]

    def cpu_seconds(self) -> dict[str, float]:
        """CPU time used so far by each of the project's containers, summed
        by service (cgroup v1's cpuacct or v2's cpu.stat), to say where the
        machine's two cores went during a stream."""
        out = subprocess.run(["docker", "ps", "--no-trunc", "--filter",
                              f"label=com.docker.compose.project={self.f.project}", "--format",
                              "{{.ID}} {{.Names}}"],
                             capture_output=True, text=True, timeout=60)
        totals: dict[str, float] = {}
        for line in out.stdout.splitlines():
            cid, _, name = line.partition(" ")  # PROJECT-SERVICE-N
            service = name[len(self.f.project) + 1:].rpartition("-")[0] or name
            for path, scale in ((f"/sys/fs/cgroup/cpuacct/docker/{cid}/cpuacct.usage", 1e-9),
                                (f"/sys/fs/cgroup/system.slice/docker-{cid}.scope/cpu.stat", 1e-6)):
                try:
                    text = Path(path).read_text()
                except OSError:
                    continue
                value = float(text.split()[0]) if scale == 1e-9 else float(text.split("usage_usec")[1].split()[0])
                totals[service] = totals.get(service, 0.0) + value * scale
                break
        return totals

    def exec_argv(self, *args: str) -> list[str]:
        return ["docker", "compose", "-p", self.f.project, "-f", str(DOCKER / self.f.compose_file), "-f",
                str(self.override), "exec", "-T", self.f.master, "slotwise-hadoop", *self.f.prefix, *args]

    def hdfs(self, *args: str, stdin: bytes = b"") -> str:
        out = subprocess.run(self.exec_argv("hdfs", *args), input=stdin, env=self.env, capture_output=True,
                             timeout=600)
        if out.returncode:
            raise RuntimeError(f"hdfs {' '.join(args)}: {out.stderr.decode(errors='replace')[-1500:]}")
        return out.stdout.decode(errors="replace")

    def wait_ready(self, s: Scheduler, timeout: float = 600) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                if self.ready(s):
                    return
            except (OSError, ValueError, KeyError, TypeError, RuntimeError):
                pass
            if time.monotonic() > deadline:
                raise SystemExit(f"{self.f.project}: not ready with {self.workers} nodes in {timeout:.0f} s")
            time.sleep(2)

    def ready(self, s: Scheduler) -> bool:
        if self.f.name == "yarn":
            nodes = get(f"http://127.0.0.1:{self.port(8088)}/ws/v1/cluster/nodes")["nodes"]["node"]
            if sum(n["state"] == "RUNNING" for n in nodes) != self.workers:
                return False
        else:
            page = urllib.request.urlopen(f"http://127.0.0.1:{self.port(50030)}/machines.jsp?type=active",
                                          timeout=10).read().decode(errors="replace")
            if page.count("tracker_") < self.workers:
                return False
        if s.policy is not None:
            api = f"http://127.0.0.1:{self.port(9797)}"
            link = get(f"{api}/api/v1/status")["resource_manager"]
            if not (link["registered"] and get(f"{api}/api/v1/cluster")["nodes"] == self.workers):
                return False
        return "Safe mode is OFF" in self.hdfs("dfsadmin", "-safemode", "get")

    def utilisation(self) -> float | None:
        """Containers (YARN: memory) or map slots in use, as a fraction."""
        try:
            if self.f.name == "yarn":
                m = get(f"http://127.0.0.1:{self.port(8088)}/ws/v1/cluster/metrics")["clusterMetrics"]
                self.last_metrics = {k: m.get(k) for k in ("appsRunning", "appsPending", "containersAllocated")}
                return m["allocatedMB"] / max(1, m["totalMB"])
            page = urllib.request.urlopen(f"http://127.0.0.1:{self.port(50030)}/jobtracker.jsp",
                                          timeout=10).read().decode(errors="replace")
            summary = jobtracker_summary(page)
            return summary["Occupied Map Slots"] / summary["Map Task Capacity"] \
                if summary.get("Map Task Capacity") else None
        except (OSError, ValueError, KeyError, IndexError):
            return None

    def down(self) -> None:
        if self.override.exists():
            self.compose("down", "--volumes", "--remove-orphans", check=False)


def jobtracker_summary(page: str) -> dict[str, int]:
    """The JobTracker page's Cluster Summary row by column name (Hadoop 1's
    jobtracker.jsp: Running Map Tasks, ..., Occupied Map Slots, ...,
    Map Task Capacity, ...), numeric cells only."""
    table = page.split("Cluster Summary", 1)[-1].split("</table>", 1)[0]
    names = [re.sub(r"<[^>]*>", "", h).strip() for h in re.findall(r"<th[^>]*>(.*?)</th>", table, re.S)]
    row = table.split("</th>")[-1]
    cells = [re.sub(r"<[^>]*>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
    return {n: int(c) for n, c in zip(names, cells) if c.isdigit()}


def get(url: str):
    with urllib.request.urlopen(urllib.request.Request(url, headers={"Accept": "application/json"}),
                                timeout=30) as r:
        return json.loads(r.read())


def write_inputs(c: Cluster, jobs: list[JobSpec], seed: int) -> None:
    rng = random.Random(seed * 7919 + 1)
    c.hdfs("dfs", *(["-mkdir", "-p"] if c.f.name == "yarn" else ["-mkdir"]), "/bench/in")
    block = "dfs.blocksize" if c.f.name == "yarn" else "dfs.block.size"
    for j in jobs:
        data = words(j.maps * BLOCK - 2048, rng, vocabulary=2000)
        c.hdfs("dfs", f"-D{block}={BLOCK}", "-Ddfs.replication=2", "-put", "-", f"/bench/in/job-{j.n}", stdin=data)
    log(f"wrote {len(jobs)} input files, {sum(j.maps for j in jobs)} blocks of 1 MB, replication 2")


def run_stream(c: Cluster, s: Scheduler, jobs: list[JobSpec]) -> list[dict]:
    logs = c.out / s.label
    logs.mkdir(exist_ok=True)
    results: list[dict] = []
    samples: list[tuple[float, float]] = []   # (seconds since the first submission, busy fraction)
    done = threading.Event()
    t0 = time.monotonic()

    timeline: list[dict] = []

    def sample() -> None:
        while not done.wait(2.0):
            u = c.utilisation()
            if u is not None:
                samples.append((time.monotonic() - t0, u))
                timeline.append({"t": round(time.monotonic() - t0, 1), "busy": round(u, 3),
                                 **getattr(c, "last_metrics", {})})

    def one(j: JobSpec) -> None:
        log_file = logs / f"job-{j.n}.log"
        started = time.monotonic()
        with open(log_file, "wb") as out:
            code = subprocess.run(c.exec_argv("job", "--queue", j.queue, "--user", f"u{j.n % 5}", "wordcount",
                                              c.f.map_only, OUTPUT_REPLICAS, f"/bench/in/job-{j.n}",
                                              f"/bench/out/{s.label}/job-{j.n}"),
                                  env=c.env, stdout=out, stderr=subprocess.STDOUT, timeout=3600).returncode
        took = time.monotonic() - started
        counters = {k: int(v) for k, v in COUNTER.findall(log_file.read_text(errors="replace"))}
        results.append({"job": j.n, "maps": j.maps, "queue": j.queue, "exit": code, "response_s": round(took, 2),
                        "launched": counters.get("Launched map tasks", 0),
                        "data_local": counters.get("Data-local map tasks", 0),
                        "rack_local": counters.get("Rack-local map tasks", 0),
                        "killed": counters.get("Killed map tasks", 0),
                        # Hadoop 3: the maps' own time; Hadoop 1: slot-ms, the same for one slot a map.
                        "map_ms": counters.get("Total time spent by all map tasks (ms)",
                                               counters.get("SLOTS_MILLIS_MAPS", 0))})

    cpu0 = c.cpu_seconds()
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    threads = []
    for j in jobs:
        time.sleep(max(0.0, t0 + j.at - time.monotonic()))
        t = threading.Thread(target=one, args=(j,))
        t.start()
        threads.append(t)
    for t in threads:
        t.join()
    done.set()
    end = time.monotonic() - t0
    cpu = {k: round(v - cpu0.get(k, 0.0), 1) for k, v in c.cpu_seconds().items()}
    log(f"{c.f.name}/{s.label}: CPU seconds by service over the stream: {cpu}")
    (logs / "timeline.json").write_text(json.dumps({"cpu_s": cpu, "samples": timeline}) + "\n")
    util, body = time_weighted(samples, end), time_weighted(samples, 0.8 * end)
    failed = [r for r in results if not r["launched"]]
    log(f"{c.f.name}/{s.label}: {len(jobs)} jobs in {end:.0f} s, {len(failed)} failed, "
        + (f"utilisation {util:.0%} (first 80% of the time: {body:.0%})" if util is not None
           else "utilisation unknown"))
    for r in results:
        r["utilisation"], r["utilisation_body"] = util, body
    return sorted(results, key=lambda r: r["job"])


def time_weighted(samples: list[tuple[float, float]], until: float) -> float | None:
    """The mean of a step function sampled at (t, value) points, over
    [0, until]: each sample holds until the next one (the first from 0)."""
    points = [(t, v) for t, v in samples if t <= until]
    if not points or until <= 0:
        return None
    total = 0.0
    for k, (t, v) in enumerate(points):
        start = 0.0 if k == 0 else t
        stop = points[k + 1][0] if k + 1 < len(points) else until
        total += v * max(0.0, stop - start)
    return total / until


def rows_of(cluster: str, label: str, results: list[dict]) -> list[dict]:
    rows = []
    buckets = [(str(m), [r for r in results if r["maps"] == m]) for m in SIZES]
    buckets.append(("<=3", [r for r in results if r["maps"] <= 3]))
    for name, rs in buckets:
        # A job whose counters were printed ran to its end: without a
        # JobHistoryServer a client that polls after the AM exits then fails
        # to read the final report (exit 255) though the job succeeded.
        ok = [r for r in rs if r["launched"]]
        # A speculative attempt killed later counts where it read, but not
        # always among the launched: the attempts are at least those counted.
        launched = sum(max(r["launched"], r["data_local"] + r["rack_local"]) for r in ok)
        if not launched:
            continue
        node = sum(r["data_local"] for r in ok)
        rack = sum(r["rack_local"] for r in ok)
        rows.append({"scheduler": label, "cluster": cluster, "job_maps": name, "jobs": len(ok),
                     "failed": len(rs) - len(ok),
                     "data_local_pct": round(100 * node / launched, 1),
                     "rack_local_pct": round(100 * rack / launched, 1),
                     "off_switch_pct": round(100 * (launched - node - rack) / launched, 1),
                     "mean_response_s": round(sum(r["response_s"] for r in ok) / len(ok), 1),
                     "mean_map_s": round(sum(r.get("map_ms", 0) for r in ok) / launched / 1000, 1),
                     "utilisation_pct": pct(ok[0].get("utilisation")),
                     "utilisation_body_pct": pct(ok[0].get("utilisation_body"))})
    return rows


def pct(fraction: float | None) -> int | None:
    return round(100 * fraction) if fraction is not None else None


def map_times_by_locality(results: list[dict]) -> dict[str, dict]:
    """The time of a map by where it read its block, from the jobs of one
    map (their counters say where it ran and how long it took)."""
    out: dict[str, list[float]] = {"node-local": [], "rack-local": [], "off-rack": []}
    for r in results:
        if r["launched"] == 1 and r.get("map_ms"):
            where = "node-local" if r["data_local"] else "rack-local" if r["rack_local"] else "off-rack"
            out[where].append(r["map_ms"] / 1000)
    return {k: {"maps": len(v), "mean_s": round(sum(v) / len(v), 1)} for k, v in out.items() if v}


def report(out: Path, rows: list[dict], args, probes: dict | None = None, map_times: dict | None = None) -> str:
    """report.json, report.md and the chart; returns the lines to print
    last (the network, slotwise-target's figures, the locality line)."""
    (out / "report.json").write_text(json.dumps({"seed": args.seed, "quick": args.quick, "workers": args.workers,
                                                 "net": args.net, "net_probe": probes or {},
                                                 "map_s_by_locality": map_times or {}, "rows": rows},
                                                indent=1) + "\n")
    lines = [f"# Locality on the docker cluster (seed {args.seed}, {args.workers} workers on 2 racks, "
             f"network {args.net}{', quick' if args.quick else ''})", ""]
    for cluster, p in (probes or {}).items():
        reads = ", ".join(f"{r['label']} {r['mbyte_s']:.3f} MB/s" for r in p["reads"] if r.get("mbyte_s"))
        lines.append(f"Network ({cluster}, docker/net-probe.py, a 1 MB block): {reads}.")
    for key, times in (map_times or {}).items():
        lines.append(f"Maps of 1-map jobs ({key}): " + ", ".join(f"{where} {t['mean_s']} s (n={t['maps']})"
                                                               for where, t in times.items()) + ".")
    lines += ["", "| cluster | scheduler | maps/job | jobs | data-local | rack-local | off-switch | mean response | "
              "mean map | utilisation | util. (first 80%) |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['cluster']} | {r['scheduler']} | {r['job_maps']} | {r['jobs']} | {r['data_local_pct']}% | "
                     f"{r['rack_local_pct']}% | {r['off_switch_pct']}% | {r['mean_response_s']} s | "
                     f"{r.get('mean_map_s')} s | {r['utilisation_pct']}% | {r.get('utilisation_body_pct')}% |")
    lines += ["", "Utilisation: busy containers (YARN: allocated memory, AMs included) or occupied map slots (MRv1) "
              "over capacity, time-weighted from the first submission to the last job's end; the last column over "
              "the first 80% of that time.", "",
              "The paper's small-jobs table (Facebook, MRv1, 3-map jobs): fair sharing 2% node-local, "
              "with delay scheduling 75%; the simulator here (docs/results/delay-scheduling.md): 6% and 100%.", ""]
    (out / "report.md").write_text("\n".join(lines))
    plot(out, rows, f"seed {args.seed}, network {args.net}{', --quick' if args.quick else ''}")
    small = {(r["cluster"], r["scheduler"]): r for r in rows if r["job_maps"] == "<=3"}
    said = []
    for cluster in ("yarn", "mrv1"):
        target = small.get((cluster, "slotwise-target"))
        if target:
            others = ", ".join(f"{k} {small[(cluster, k)]['mean_response_s']} s"
                               for k in ("slotwise-nodelay", "fair", "jobqueue") if (cluster, k) in small)
            said.append(f"target: {cluster} slotwise-target small-job data-local {target['data_local_pct']:.1f}%, "
                        f"mean response {target['mean_response_s']} s ({others or 'no other scheduler run'}), "
                        f"utilisation {target['utilisation_pct']}% (network {args.net})")
    sw, fair = small.get(("yarn", "slotwise")) or small.get(("mrv1", "slotwise")), small.get(("yarn", "fair")) \
        or small.get(("mrv1", "jobqueue"))
    other = "fairscheduler" if ("yarn", "fair") in small else "jobqueue"
    if sw and fair:
        said.append(f"locality: slotwise+delay small-job data-local {sw['data_local_pct']:.0f}% vs {other} "
                    f"{fair['data_local_pct']:.0f}% ({sw['jobs']} jobs)")
    elif "slotwise" in (ran := {r["scheduler"] for r in rows}) and ran & {"fair", "jobqueue"}:
        said.append("locality: not enough jobs completed to compare")
    else:
        said.append("locality: slotwise (with delay) and fair or jobqueue were not both run: no comparison")
    return "\n".join(said)


def plot(out: Path, rows: list[dict], title: str = "") -> None:
    """One bar per scheduler: the data-local share of small jobs' maps, each
    bar labelled with its figure; Slotwise's bars apart in colour."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    small = [r for r in rows if r["job_maps"] == "<=3"]
    labels = [f"{r['cluster']}/{r['scheduler']}" for r in small]
    values = [r["data_local_pct"] for r in small]
    colours = ["#2a6f97" if r["scheduler"].startswith("slotwise") else "#a0a0a0" for r in small]
    fig, ax = plt.subplots(figsize=(7.5, 4))
    bars = ax.bar(labels, values, color=colours)
    ax.bar_label(bars, labels=[f"{v:.1f}%" for v in values], padding=2, fontsize=8)
    ax.set_ylabel("data-local maps (%)")
    ax.set_ylim(0, 110)
    ax.set_yticks(range(0, 101, 20))
    ax.set_title("Maps of jobs with at most 3 maps that read their block locally" + (f"\n{title}" if title else ""),
                 fontsize=10)
    ax.tick_params(axis="x", rotation=20, labelsize=8)
    fig.tight_layout()
    fig.savefig(out / "locality.png", dpi=110)
    plt.close(fig)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--quick", action="store_true",
                    help="12 jobs per scheduler instead of 48, and on YARN only the schedulers the goals compare "
                         "(slotwise, slotwise-nodelay, slotwise-target, fair) unless --schedulers names others")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--cluster", choices=("yarn", "mrv1", "both"), default="yarn")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--schedulers", help="comma-separated labels to run (default: all of the cluster's)")
    ap.add_argument("--net", choices=NETS, default="datacenter",
                    help="the docker cluster's network (SLOTWISE_NET): datacenter (default; tc in each worker "
                         "shapes what it sends, docs/docker.md) or flat (Docker's bridge, unshaped)")
    args = ap.parse_args()
    if args.workers < 4:
        ap.error("--workers: at least 4 (2 racks of 2), so that a node holds a job's block half the time or less")
    known = {s.label for s in SCHEDULERS}
    wanted = set(args.schedulers.split(",")) if args.schedulers else None
    if wanted and wanted - known:
        ap.error(f"--schedulers: unknown {', '.join(sorted(wanted - known))} (known: {', '.join(sorted(known))})")
    args.out.mkdir(parents=True, exist_ok=True)
    jobs = workload(args.seed, args.quick)
    if wanted is None and args.quick:  # the goals' schedulers on YARN, all three on MRv1
        wanted = set(QUICK)
    docker_ready()
    rows: list[dict] = []
    probes: dict = {}
    map_times: dict = {}
    for name in (("yarn", "mrv1") if args.cluster == "both" else (args.cluster,)):
        c = Cluster(FLAVORS[name], args.workers, args.out, args.net)
        scheds = [s for s in SCHEDULERS if s.cluster == name and (not wanted or s.label in wanted)]
        try:
            for i, s in enumerate(scheds):
                log(f"{name}: {s.label}: starting the cluster with it (network {args.net})")
                c.up(s, first=i == 0)
                if i == 0:
                    if args.net != "flat":  # loading is not measured: its cross-rack replicas need not crawl
                        c.set_net("flat")
                    write_inputs(c, jobs, args.seed)
                    if args.net != "flat":
                        c.set_net(args.net)
                    c.check_net()
                    log(f"{name}: the network, measured (docker/net-probe.py):")
                    probes[name] = c.probe()
                c.check_net()
                results = run_stream(c, s, jobs)
                (c.out / f"{s.label}.json").write_text(json.dumps(results, indent=1) + "\n")
                rows += rows_of(name, s.label, results)
                map_times[f"{name}/{s.label}"] = map_times_by_locality(results)
                for r in rows_of(name, s.label, results):
                    log(f"  {r['job_maps']:>4} maps: {r['jobs']} jobs, data-local {r['data_local_pct']}%, "
                        f"rack-local {r['rack_local_pct']}%, mean response {r['mean_response_s']} s, "
                        f"mean map {r['mean_map_s']} s")
                log(f"  maps of 1-map jobs by where they read: {map_times[f'{name}/{s.label}']}")
        finally:
            log(f"{name}: taking the cluster down")
            c.down()
    print(report(args.out, rows, args, {k: v for k, v in probes.items() if v}, map_times))
    pidfile = REPO / "run" / "docker" / "dockerd.pid"
    if pidfile.is_file():
        log(f"the dockerd docker/setup-engine.sh started (pid {pidfile.read_text().strip()}) is still running; "
            "docker/stop-engine.sh stops it")
    return 0


def docker_ready() -> None:
    """A Docker engine that answers (docker/setup-engine.sh starts one, as
    root, when none does, as the docker tier does), and this checkout's
    images (docker/build-images.sh rebuilds only what changed)."""
    try:
        answers = subprocess.run(["docker", "info"], capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        answers = False
    if not answers:
        log("no Docker engine answers: starting one (docker/setup-engine.sh)")
        code = subprocess.run(["bash", str(DOCKER / "setup-engine.sh")]).returncode
        if code:
            raise SystemExit(f"bench_locality: docker/setup-engine.sh could not make a Docker engine answer "
                             f"(exit {code}; its messages are above)")
    code = subprocess.run(["bash", str(DOCKER / "build-images.sh")],
                          env={**os.environ, "PYTHON": os.environ.get("PYTHON", sys.executable)}).returncode
    if code:
        raise SystemExit(f"bench_locality: docker/build-images.sh failed (exit {code}; its messages are above)")


if __name__ == "__main__":
    sys.exit(main())
