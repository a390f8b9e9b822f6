"""Delay scheduling measured on real block locations: the data-local
fraction of MapReduce jobs on the dockerized cluster with HDFS, under
Slotwise and beside Hadoop's own schedulers, on the same cluster, input
and job stream.

Run: .venv/bin/python benchmarks/bench_locality.py --seed N [--quick]
         [--workers W] [--cluster yarn|mrv1|both] --out DIR

The images must exist (docker/build-images.sh; `make docker-demo` builds
them). For each cluster it brings docker/compose.yaml (or
compose-mrv1.yaml) up with W workers (default 4) on 2 racks, writes one
input file per job into HDFS (1 MB blocks, replication 2: HDFS puts a
block's second replica on the other rack, so a worker picked at random
holds a given block half the time with 4 workers, less with more), then
for each scheduler restarts the master with it and submits the same seeded
stream of map-only wordcount jobs of 1, 3, 10 and 50 maps from three queues
(Poisson arrivals, dense enough to keep the containers or slots busy), and
reads each job's counters (data-local, rack-local and launched maps) and
its response time (submission to the client's exit). Schedulers:

  YARN: slotwise (fair, with delay scheduling's default waits),
        slotwise-nodelay (waits 0), fair (YARN's FairScheduler, defaults:
        no locality wait), fair-locality (its thresholds set:
        yarn.scheduler.fair.locality.threshold.node and .rack 1.0, one
        scheduling opportunity per node before giving up a level, as the
        FairScheduler's documentation describes them), capacity (the
        CapacityScheduler, default node-locality-delay 40)
  MRv1: slotwise (with delay), jobqueue (Hadoop 1.2.1's JobQueueTaskScheduler)

--quick: 12 jobs instead of 48, and on YARN only slotwise,
slotwise-nodelay and fair (the goals' comparisons; --schedulers to add
others); about 15 minutes for YARN and 5 for MRv1 on 2 cores.

Writes DIR/report.json (rows: scheduler, cluster, job_maps, jobs,
data_local_pct, rack_local_pct, off_switch_pct, mean_response_s), DIR/report.md
and DIR/locality.png, and prints last
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
DOCKER = REPO / "docker"
COUNTER = re.compile(r"^(?:.*?JobClient:)?\s+([A-Za-z][\w ()-]*?)=(\d+)\s*$", re.M)
APP_ID = re.compile(r"\b(application_\d+_\d+|job_\d+_\d+)\b")
QUEUES = ("prod", "research", "adhoc")
SIZES = (1, 3, 10, 50)
BLOCK = 1024 * 1024
FAIR = "org.apache.hadoop.yarn.server.resourcemanager.scheduler.fair.FairScheduler"
CAPACITY = "org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.CapacityScheduler"
SLOTWISE_ALLOCATIONS = """<?xml version="1.0"?>
<allocations>
  <queue name="prod"><weight>1</weight></queue>
  <queue name="research"><weight>1</weight></queue>
  <queue name="adhoc"><weight>1</weight></queue>
</allocations>
"""
MRV1_POOLS = """<?xml version="1.0"?>
<allocations>
  <pool name="prod"><weight>1</weight></pool>
  <pool name="research"><weight>1</weight></pool>
  <pool name="adhoc"><weight>1</weight></pool>
</allocations>
"""
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


SCHEDULERS = [
    Scheduler("slotwise", "yarn", policy=[]),
    Scheduler("slotwise-nodelay", "yarn", policy=NODELAY),
    Scheduler("fair", "yarn", {"YARN-SITE.XML_yarn.resourcemanager.scheduler.class": FAIR}),
    Scheduler("fair-locality", "yarn", {"YARN-SITE.XML_yarn.resourcemanager.scheduler.class": FAIR,
                                         "YARN-SITE.XML_yarn.scheduler.fair.locality.threshold.node": "1.0",
                                         "YARN-SITE.XML_yarn.scheduler.fair.locality.threshold.rack": "1.0"}),
    Scheduler("capacity", "yarn", CAPACITY_ENV),
    Scheduler("slotwise", "mrv1", policy=[]),
    Scheduler("jobqueue", "mrv1", {"MAPRED-SITE.XML_mapred.jobtracker.taskScheduler":
                                   "org.apache.hadoop.mapred.JobQueueTaskScheduler"}),
]


#: What --quick runs: the schedulers the goals compare.
QUICK = ("slotwise", "slotwise-nodelay", "fair", "jobqueue")


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

    def __init__(self, flavor: Flavor, workers: int, out: Path) -> None:
        self.f = flavor
        self.out = out.resolve() / flavor.name
        self.out.mkdir(parents=True, exist_ok=True)
        self.allocations = self.out / "allocations"
        self.allocations.mkdir(exist_ok=True)
        self.allocations.chmod(0o755)
        (self.allocations / flavor.file_name).write_text(flavor.allocations)
        (self.allocations / flavor.file_name).chmod(0o644)
        self.override = self.out / "compose.override.yaml"
        self.env = {**os.environ, **{p: "" for p in flavor.ports}, "SLOTWISE_WORKERS": str(workers),
                    "SLOTWISE_RACKS": "2", "SLOTWISE_ALLOCATIONS_DIR": str(self.allocations)}
        self.workers = workers

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
        if s.policy is None:
            self.compose("stop", "policy", check=False)
        if first:
            self.compose("up", "-d", "--wait", "nn", self.f.master, "worker",
                         *(["policy"] if s.policy is not None else []))
        else:
            self.compose("up", "-d", "--wait", "--no-deps", "--force-recreate", self.f.master,
                         *(["policy"] if s.policy is not None else []))
        self.wait_ready(s)

    def port(self, container_port: int, service: str | None = None) -> int:
        out = self.compose("port", service or self.f.master, str(container_port)).stdout.strip()
        return int(out.rpartition(":")[2])

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
    samples: list[float] = []
    done = threading.Event()

    def sample() -> None:
        while not done.wait(2.0):
            u = c.utilisation()
            if u is not None:
                samples.append(u)

    def one(j: JobSpec) -> None:
        log_file = logs / f"job-{j.n}.log"
        started = time.monotonic()
        with open(log_file, "wb") as out:
            code = subprocess.run(c.exec_argv("job", "--queue", j.queue, "--user", f"u{j.n % 5}", "wordcount",
                                              c.f.map_only, f"/bench/in/job-{j.n}", f"/bench/out/{s.label}/job-{j.n}"),
                                  env=c.env, stdout=out, stderr=subprocess.STDOUT, timeout=3600).returncode
        took = time.monotonic() - started
        counters = {k: int(v) for k, v in COUNTER.findall(log_file.read_text(errors="replace"))}
        results.append({"job": j.n, "maps": j.maps, "queue": j.queue, "exit": code, "response_s": round(took, 2),
                        "launched": counters.get("Launched map tasks", 0),
                        "data_local": counters.get("Data-local map tasks", 0),
                        "rack_local": counters.get("Rack-local map tasks", 0)})

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    threads = []
    t0 = time.monotonic()
    for j in jobs:
        time.sleep(max(0.0, t0 + j.at - time.monotonic()))
        t = threading.Thread(target=one, args=(j,))
        t.start()
        threads.append(t)
    for t in threads:
        t.join()
    done.set()
    busy = [u for u in samples[: max(1, int(len(samples) * 0.8))]]  # the stream's body, not its tail
    util = sum(busy) / len(busy) if busy else None
    failed = [r for r in results if not r["launched"]]
    log(f"{c.f.name}/{s.label}: {len(jobs)} jobs in {time.monotonic() - t0:.0f} s, {len(failed)} failed, "
        f"utilisation {util:.0%}" if util is not None else f"{c.f.name}/{s.label}: utilisation unknown")
    for r in results:
        r["utilisation"] = util
    return sorted(results, key=lambda r: r["job"])


def rows_of(cluster: str, label: str, results: list[dict]) -> list[dict]:
    rows = []
    buckets = [(str(m), [r for r in results if r["maps"] == m]) for m in SIZES]
    buckets.append(("<=3", [r for r in results if r["maps"] <= 3]))
    for name, rs in buckets:
        # A job whose counters were printed ran to its end: without a
        # JobHistoryServer a client that polls after the AM exits then fails
        # to read the final report (exit 255) though the job succeeded.
        ok = [r for r in rs if r["launched"]]
        launched = sum(r["launched"] for r in ok)
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
                     "utilisation_pct": round(100 * ok[0]["utilisation"], 0) if ok[0]["utilisation"] else None})
    return rows


def report(out: Path, rows: list[dict], args) -> str:
    (out / "report.json").write_text(json.dumps({"seed": args.seed, "quick": args.quick, "workers": args.workers,
                                                 "rows": rows}, indent=1) + "\n")
    lines = [f"# Locality on the docker cluster (seed {args.seed}, {args.workers} workers on 2 racks"
             f"{', quick' if args.quick else ''})", "",
             "| cluster | scheduler | maps/job | jobs | data-local | rack-local | off-switch | mean response | "
             "utilisation |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['cluster']} | {r['scheduler']} | {r['job_maps']} | {r['jobs']} | {r['data_local_pct']}% | "
                     f"{r['rack_local_pct']}% | {r['off_switch_pct']}% | {r['mean_response_s']} s | "
                     f"{r['utilisation_pct']}% |")
    lines += ["", "The paper's small-jobs table (Facebook, MRv1, 3-map jobs): fair sharing 2% node-local, "
              "with delay scheduling 75%; the simulator here (docs/results/delay-scheduling.md): 6% and 100%.", ""]
    (out / "report.md").write_text("\n".join(lines))
    plot(out, rows, f"seed {args.seed}{', --quick' if args.quick else ''}")
    small = {(r["cluster"], r["scheduler"]): r for r in rows if r["job_maps"] == "<=3"}
    sw, fair = small.get(("yarn", "slotwise")) or small.get(("mrv1", "slotwise")), small.get(("yarn", "fair")) \
        or small.get(("mrv1", "jobqueue"))
    other = "fairscheduler" if ("yarn", "fair") in small else "jobqueue"
    if sw and fair:
        return (f"locality: slotwise+delay small-job data-local {sw['data_local_pct']:.0f}% vs {other} "
                f"{fair['data_local_pct']:.0f}% ({sw['jobs']} jobs)")
    return "locality: not enough jobs completed to compare"


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
                    help="12 jobs per scheduler instead of 48, and on YARN only the three schedulers the goals "
                         "compare (slotwise, slotwise-nodelay, fair) unless --schedulers names others")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--cluster", choices=("yarn", "mrv1", "both"), default="yarn")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--schedulers", help="comma-separated labels to run (default: all of the cluster's)")
    args = ap.parse_args()
    if args.workers < 4:
        ap.error("--workers: at least 4 (2 racks of 2), so that a node holds a job's block half the time or less")
    args.out.mkdir(parents=True, exist_ok=True)
    jobs = workload(args.seed, args.quick)
    wanted = set(args.schedulers.split(",")) if args.schedulers else None
    if wanted is None and args.quick:  # under 20 minutes here: the goals' three on YARN, both on MRv1
        wanted = set(QUICK)
    rows: list[dict] = []
    for name in (("yarn", "mrv1") if args.cluster == "both" else (args.cluster,)):
        c = Cluster(FLAVORS[name], args.workers, args.out)
        scheds = [s for s in SCHEDULERS if s.cluster == name and (not wanted or s.label in wanted)]
        try:
            for i, s in enumerate(scheds):
                log(f"{name}: {s.label}: starting the cluster with it")
                c.up(s, first=i == 0)
                if i == 0:
                    write_inputs(c, jobs, args.seed)
                results = run_stream(c, s, jobs)
                (c.out / f"{s.label}.json").write_text(json.dumps(results, indent=1) + "\n")
                rows += rows_of(name, s.label, results)
                for r in rows_of(name, s.label, results):
                    log(f"  {r['job_maps']:>4} maps: {r['jobs']} jobs, data-local {r['data_local_pct']}%, "
                        f"rack-local {r['rack_local_pct']}%, mean response {r['mean_response_s']} s")
        finally:
            log(f"{name}: taking the cluster down")
            c.down()
    print(report(args.out, rows, args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
