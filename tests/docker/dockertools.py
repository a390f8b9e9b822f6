"""What the docker tier's tests use: the compose cluster's REST APIs, its
containers, Python's event log, HDFS, and MapReduce job clients run in the
rm container."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass

from slotwise.localcluster.jobs import words as text_words
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PROJECT = "slotwise-test"
MRV1_PROJECT = "slotwise-mrv1-test"
HA_PROJECT = "slotwise-ha-test"
IMAGES = ("slotwise/hadoop:latest", "slotwise/policy:latest")
STATE = REPO / "run" / "docker"
APP_ID = re.compile(r"\b(application_\d+_\d+)\b")
JOB_ID = re.compile(r"\b(job_\d+_\d+)\b")
#: A counter line of a job client's output: "\t\tLaunched map tasks=3" (Hadoop 3),
#: "17:59:11 INFO  JobClient:     Launched map tasks=3" (Hadoop 1, through log4j).
COUNTER = re.compile(r"^(?:.*?JobClient:)?\s+([A-Za-z][\w ()-]*?)=(\d+)\s*$", re.M)
#: The allocation directory inside the policy container (the API names its file so).
ALLOCATIONS_IN_CONTAINER = "/etc/slotwise/allocations"


def words(n_bytes: int, seed: int) -> bytes:
    """Seeded lines of 12 words from a vocabulary of 500: a wordcount's
    input, about ``n_bytes`` long."""
    import random
    return text_words(n_bytes, random.Random(seed))


def docker_problem() -> str | None:
    """Why the docker tier cannot run here, or None."""
    if not shutil.which("docker"):
        return "no docker CLI (as root, docker/setup-engine.sh installs Debian's docker.io)"
    if subprocess.run(["docker", "info"], capture_output=True, timeout=60).returncode != 0:
        return "no Docker engine answers (as root, docker/setup-engine.sh starts one)"
    if subprocess.run(["docker", "compose", "version"], capture_output=True, timeout=60).returncode != 0:
        return "no Compose v2 plugin (as root, docker/setup-engine.sh installs it)"
    for image in IMAGES:
        if subprocess.run(["docker", "image", "inspect", image], capture_output=True, timeout=60).returncode:
            return f"no image {image}: build it with docker/build-images.sh"
    return None


def fresh_allocations(source: Path, into: Path) -> Path:
    """A copy of an allocation file in a directory of its own, readable by
    the policy container's uid 1000; the directory (to bind-mount)."""
    shutil.rmtree(into, ignore_errors=True)
    into.mkdir(parents=True)
    into.chmod(0o755)
    shutil.copy(source, into / source.name)
    (into / source.name).chmod(0o644)
    return into


def wait_until(what: str, check, timeout: float, interval: float = 0.5):
    """Poll ``check()`` until it returns something truthy; fail naming ``what``.

    Wait only for outcomes (something that, once true, stays true: an event
    logged, a counter past a mark, a job finished) or for a state the test
    itself holds (a container it paused or stopped): never for a transient
    state that a faster, correct system may pass through between two polls,
    or skip altogether."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            last = check()
        except (OSError, ValueError, KeyError, TypeError, subprocess.SubprocessError) as e:
            # A container restarting, an API not up yet, a JSON body without
            # the field yet (the RM answers {"nodes": null} with no node).
            last = e
        else:
            if last:
                return last
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what} (last: {last!r})")
        time.sleep(interval)


@dataclass
class Job:
    """One MapReduce job client, run in the master's container (rm or jt)."""

    queue: str
    proc: subprocess.Popen
    log: Path
    cluster: "DockerCluster"
    app_id: str | None = None

    def find_app_id(self) -> str | None:
        if not self.app_id:
            m = self.cluster.ID.search(self.log.read_text(errors="replace"))
            self.app_id = m.group(1) if m else None
        return self.app_id

    def wait_submitted(self, timeout: float = 120) -> str:
        return wait_until(f"the {self.queue} job to be submitted ({self.log})", self.find_app_id, timeout)

    def wait(self, timeout: float = 600) -> dict:
        """The RM's final report once the client exits."""
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError(f"the {self.queue} job did not finish in {timeout:.0f} s:\n{self.tail()}")
        app = self.wait_submitted(5)
        report = wait_until(f"{app} in a final state", lambda: self.cluster.final_report(app), 60)
        report["client_exit"] = code
        return report

    def kill(self) -> None:
        """Kill the application in YARN, and its client."""
        app = self.find_app_id()
        if app:  # one that finished already needs none
            self.cluster.docker("exec", self.cluster.container(self.cluster.MASTER), "slotwise-hadoop",
                                *self.cluster.KILL, app, check=False)
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()

    def counters(self) -> dict[str, int]:
        """The counters the job client printed when the job ended (\"Data-local
        map tasks\", \"Launched map tasks\", ...)."""
        return {name: int(value) for name, value in COUNTER.findall(self.log.read_text(errors="replace"))}

    def tail(self, n: int = 30) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])


def get_json(url: str, raw: bool = False):
    """A GET of a cluster's web server: JSON, or the text when ``raw``."""
    with urllib.request.urlopen(urllib.request.Request(url, headers={"Accept": "application/json"}),
                                timeout=10) as r:
        body = r.read().decode()
    return body if raw else json.loads(body)


class DockerCluster:
    """docker/compose.yaml: YARN on HDFS."""

    PROJECT = PROJECT
    COMPOSE_FILE = "compose.yaml"
    MASTER = "rm"
    ALLOCATIONS = "allocations/fair-scheduler.xml"
    ID = APP_ID
    HDFS = ("hdfs",)
    JOB = ("job",)
    KILL = ("yarn", "application", "-kill")
    PORTS = {"SLOTWISE_RM_WEB_PORT": "", "SLOTWISE_HTTP_PORT": "", "SLOTWISE_NN_WEB_PORT": ""}

    def __init__(self, compose, allocations: Path) -> None:
        self.compose = compose
        self.allocations = allocations
        self.http_port = int(compose.get_service_port(self.MASTER, 9797))
        self._names: dict[int, str] = {}
        self.ports()
        self.jobs_dir = STATE / "test-jobs"
        self.jobs_dir.mkdir(parents=True, exist_ok=True)

    @property
    def allocations_file(self) -> Path:
        return self.allocations / Path(self.ALLOCATIONS).name

    def ports(self) -> None:
        self.rm_port = int(self.compose.get_service_port("rm", 8088))
        self.nn_port = int(self.compose.get_service_port("nn", 9870))

    def describe(self) -> str:
        return (f"RM web 127.0.0.1:{self.rm_port}, Slotwise 127.0.0.1:{self.http_port}, "
                f"NameNode 127.0.0.1:{self.nn_port}")

    # -- HTTP ------------------------------------------------------------------

    def api(self, path: str):
        """Slotwise's REST API (the policy container, through rm's published port)."""
        return get_json(f"http://127.0.0.1:{self.http_port}{path}")

    def rm(self, path: str, raw: bool = False):
        """The ResourceManager's web server."""
        return get_json(f"http://127.0.0.1:{self.rm_port}{path}", raw)

    def nn_info(self) -> dict:
        """The NameNode's state: live DataNodes, safe mode."""
        beans = get_json(f"http://127.0.0.1:{self.nn_port}/jmx?qry=Hadoop:service=NameNode,name=FSNamesystemState")
        info = get_json(f"http://127.0.0.1:{self.nn_port}/jmx?qry=Hadoop:service=NameNode,name=NameNodeInfo")
        return {**beans["beans"][0], **info["beans"][0]}

    def final_report(self, app: str) -> dict | None:
        """The RM's report of an application once it is in a final state."""
        report = self.rm(f"/ws/v1/cluster/apps/{app}")["app"]
        return report if report["state"] in ("FINISHED", "FAILED", "KILLED") else None

    def fifo_heartbeats(self) -> int:
        """Heartbeats the shim scheduled by its FIFO since the RM started (a
        counter: it only grows), from the RM's scheduler page."""
        page = self.rm("/cluster/scheduler", raw=True)
        return int(re.search(r'id="fifo-heartbeats">\s*(\d+)', page).group(1))

    def rm_nodes(self) -> list[dict]:
        return ((self.rm("/ws/v1/cluster/nodes") or {}).get("nodes") or {}).get("node") or []

    def rm_apps(self, states: str = "NEW,NEW_SAVING,SUBMITTED,ACCEPTED,RUNNING") -> list[dict]:
        return ((self.rm(f"/ws/v1/cluster/apps?states={states}") or {}).get("apps") or {}).get("app") or []

    def queues(self) -> dict[str, dict]:
        return {p["queue"]: p for p in self.api("/api/v1/queues")}

    def registered(self) -> bool:
        link = self.api("/api/v1/status")["resource_manager"]
        return link["registered"] and not link["in_fallback"]

    # -- docker ------------------------------------------------------------------

    def compose_cmd(self, *args: str) -> list[str]:
        return [*self.compose.compose_command_property, *args]

    def container(self, service: str) -> str:
        return self.compose.get_container(service, include_all=True).Name

    def worker(self, i: int) -> str:
        """Worker I's container, whose name is also its node's host name."""
        return f"{self.PROJECT}-worker-{i}"

    def node_name(self, i: int) -> str:
        """Worker I's node name: its container's host name (a scaled
        service's containers have their short id), which its NodeManager and
        DataNode register under."""
        if i not in self._names:
            self._names[i] = self.docker("inspect", "-f", "{{.Config.Hostname}}", self.worker(i)).stdout.strip()
        return self._names[i]

    def node_id(self, i: int) -> str:
        return f"{self.node_name(i)}:45454"

    def hdfs(self, *args: str, stdin: bytes | None = None, timeout: float = 300) -> str:
        """An HDFS client command in the rm container; its output."""
        out = subprocess.run(["docker", "exec", "-i", self.container(self.MASTER), "slotwise-hadoop", *self.HDFS,
                              *args],
                             input=stdin if stdin is not None else b"", capture_output=True, timeout=timeout)
        if out.returncode:
            raise AssertionError(f"hdfs {' '.join(args)} failed ({out.returncode}): "
                                 f"{out.stderr.decode(errors='replace')[-2000:]}")
        return out.stdout.decode(errors="replace")

    MKDIR = ("dfs", "-mkdir", "-p")

    def put_text(self, path: str, data: bytes, replication: int = 2) -> None:
        """A new file in HDFS (its directory made first: Hadoop 1's put does not)."""
        self.hdfs(*self.MKDIR, path.rsplit("/", 1)[0])
        self.hdfs("dfs", f"-Ddfs.replication={replication}", "-put", "-", path, stdin=data)

    def docker(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=120, check=check)

    def pause(self, container: str) -> None:
        """docker pause, tried again when the kernel's freezer does not get
        every process frozen in runc's time ("unable to freeze", seen on this
        loaded 2-core machine; runc thaws what it froze and the container runs on)."""
        for attempt in range(10):
            out = self.docker("pause", container, check=False)
            if out.returncode == 0:
                return
            if "unable to freeze" not in out.stderr:
                break
            time.sleep(1)
        raise AssertionError(f"docker pause {container} failed: {out.stderr.strip()}")

    def events(self) -> list[dict]:
        """Python's event log (on the policy container's volume). A last line
        without its newline is one being written as we read: left for the
        next read. Any other line that is not JSON is the log's fault."""
        out = self.docker("exec", self.container("policy"), "cat", "/var/lib/slotwise/events.jsonl").stdout
        lines = out.split("\n")
        events = []
        for n, line in enumerate(lines[:-1], 1):  # lines[-1]: "" or a line still being written
            if line.strip():
                try:
                    events.append(json.loads(line))
                except ValueError as e:
                    raise AssertionError(f"line {n} of Python's event log is not JSON ({e}): {line[:300]!r}") \
                        from None
        return events

    def assigns(self, app_id: str | None = None, since: float = 0.0) -> list[dict]:
        return [e for e in self.events() if e["event"] == "assign" and e["ts"] >= since
                and (app_id is None or e["app"] == app_id)]

    def registrations(self, since: float = 0.0) -> list[dict]:
        """Python's registrations with the RM (one per server start, and one
        each time the shim dropped it and it came back)."""
        return [e for e in self.events() if e["event"] == "register" and e["ts"] >= since]

    def fallback_logged(self, since: float) -> tuple[int, list[dict]]:
        """The FIFO heartbeats in the fallback episodes Python logged that
        ended at or after ``since``, and those episodes."""
        episodes = [e for e in self.events() if e["event"] == "fallback" and e["ended"] >= since - 0.002]
        return sum(e["count"] for e in episodes), episodes

    def check_fallback_logged(self, since: float, fifo_before: int, timeout: float = 60) -> int:
        """Every heartbeat the RM scheduled by its FIFO after ``since`` (when
        its counter read ``fifo_before``) is in a fallback episode Python
        logged: the episodes' heartbeats add up to at least what the RM
        counted (more if an episode began before ``since``, or was reported
        twice). None needed is a pass: a fast recovery leaves nothing to log.
        An episode still open is logged once Python answers again, so this
        waits for the log to catch up. Returns the RM's count."""
        fifo = self.fifo_heartbeats() - fifo_before
        if fifo:
            try:
                wait_until(f"the fallback episodes in Python's log to cover the {fifo} heartbeat(s) the RM "
                           f"scheduled by its FIFO",
                           lambda: self.fallback_logged(since)[0] >= fifo, timeout)
            except AssertionError as e:
                logged, episodes = self.fallback_logged(since)
                raise AssertionError(f"the RM scheduled {fifo} heartbeat(s) by its FIFO since {since:.3f}, but "
                                     f"Python's fallback episodes since then hold {logged}: {episodes}") from e
        return fifo

    def submit(self, queue: str, user: str, program: str, *args: str) -> Job:
        log = self.jobs_dir / f"{time.strftime('%H%M%S')}-{queue}-{program}-{os.urandom(2).hex()}.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen(self.compose_cmd("exec", "-T", self.MASTER, "slotwise-hadoop", *self.JOB,
                                                     "--queue", queue, "--user", user, program, *args),
                                    cwd=REPO / "docker", stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL)
        return Job(queue, proc, log, self)

    def write_allocations(self, text: str) -> None:
        """Save as editors do: a new file renamed over the old one."""
        target = self.allocations_file
        tmp = target.with_name(f".{target.name}.swp")
        tmp.write_text(text)
        tmp.chmod(0o644)
        os.replace(tmp, target)

    def wait_ready(self, nodes: int = 2, timeout: float = 180) -> None:
        """The cluster whole and idle: Python registered, every NodeManager
        running and in Python's view, every DataNode live in HDFS out of safe
        mode, no application of an earlier test left."""
        wait_until("Python registered with the RM", self.registered, timeout)
        wait_until(f"{nodes} live DataNodes, HDFS out of safe mode",
                   lambda: (i := self.nn_info())["NumLiveDataNodes"] == nodes and not i["Safemode"], timeout)
        wait_until(f"{nodes} RUNNING NodeManagers in the RM",
                   lambda: sum(n["state"] == "RUNNING" for n in self.rm_nodes()) == nodes, timeout)
        wait_until(f"{nodes} nodes in Python's view", lambda: self.api("/api/v1/cluster")["nodes"] == nodes, timeout)
        wait_until("no application of an earlier test left in the RM", lambda: not self.rm_apps(), timeout,
                   interval=1)




class Mrv1DockerCluster(DockerCluster):
    """docker/compose-mrv1.yaml: Hadoop 1.2.1's JobTracker on its HDFS."""

    PROJECT = MRV1_PROJECT
    COMPOSE_FILE = "compose-mrv1.yaml"
    MASTER = "jt"
    ALLOCATIONS = "allocations-mrv1/pools.xml"
    ID = JOB_ID
    HDFS = ("mrv1", "hdfs")
    JOB = ("mrv1", "job")
    KILL = ("mrv1", "hdfs", "job", "-kill")
    MKDIR = ("dfs", "-mkdir")  # Hadoop 1 makes the parents without -p
    PORTS = {"SLOTWISE_JT_WEB_PORT": "", "SLOTWISE_HTTP_PORT": "", "SLOTWISE_NN_WEB_PORT": ""}

    def ports(self) -> None:
        from slotwise.localcluster.mrv1_web import JTWeb
        self.jt_port = int(self.compose.get_service_port("jt", 50030))
        self.nn_port = int(self.compose.get_service_port("nn", 50070))
        self.jt = JTWeb(f"http://127.0.0.1:{self.jt_port}", timeout=30)

    def describe(self) -> str:
        return (f"JobTracker web 127.0.0.1:{self.jt_port}, Slotwise 127.0.0.1:{self.http_port}, "
                f"NameNode 127.0.0.1:{self.nn_port}")

    def final_report(self, job_id: str) -> dict | None:
        status = self.jt.job(job_id).get("Status", "")
        if status not in ("Succeeded", "Failed", "Killed"):
            return None
        return {"state": status.upper(), "finalStatus": status.upper(), "diagnostics": ""}

    def fifo_heartbeats(self) -> int:
        return self.jt.scheduler()["fifo_heartbeats"]

    def node_id(self, i: int) -> str:
        """A TaskTracker's name begins so (tracker_HOST:localhost/127.0.0.1:PORT)."""
        return f"tracker_{self.node_name(i)}:"

    def wait_ready(self, nodes: int = 2, timeout: float = 180) -> None:
        """Python registered, every TaskTracker live in the JobTracker and in
        Python's view, no job of an earlier test still running."""
        wait_until("Python registered with the JobTracker", self.registered, timeout)
        wait_until(f"{nodes} live TaskTrackers in the JobTracker", lambda: len(self.jt.trackers()) == nodes, timeout)
        wait_until(f"{nodes} nodes in Python's view", lambda: self.api("/api/v1/cluster")["nodes"] == nodes, timeout)
        wait_until("HDFS out of safe mode with its DataNodes",
                   lambda: "Safe mode is OFF" in self.hdfs("dfsadmin", "-safemode", "get")
                   and f"Datanodes available: {nodes} " in self.hdfs("dfsadmin", "-report"), timeout, interval=2)
        wait_until("no job of an earlier test running",
                   lambda: not [j for j in self.jt.jobs() if j["state"] == "RUNNING"], timeout, interval=1)


class HaDockerCluster(DockerCluster):
    """docker/compose.ha.yaml: two ResourceManagers (HA over ZooKeeper), each
    with its own policy server; job clients run in rm1's container (their
    client fails over to whichever RM is active)."""

    PROJECT = HA_PROJECT
    COMPOSE_FILE = "compose.ha.yaml"
    MASTER = "rm1"
    PORTS = {"SLOTWISE_RM1_WEB_PORT": "", "SLOTWISE_RM2_WEB_PORT": "", "SLOTWISE_HTTP1_PORT": "",
             "SLOTWISE_HTTP2_PORT": "", "SLOTWISE_NN_WEB_PORT": ""}

    def ports(self) -> None:
        self.rm_ports = {i: int(self.compose.get_service_port(f"rm{i}", 8088)) for i in (1, 2)}
        self.http_ports = {i: int(self.compose.get_service_port(f"rm{i}", 9797)) for i in (1, 2)}
        self.nn_port = int(self.compose.get_service_port("nn", 9870))

    def describe(self) -> str:
        return (f"RM web 127.0.0.1:{self.rm_ports[1]} and :{self.rm_ports[2]}, Slotwise 127.0.0.1:"
                f"{self.http_ports[1]} and :{self.http_ports[2]}, NameNode 127.0.0.1:{self.nn_port}")

    def ha_state(self, i: int) -> str:
        return get_json(f"http://127.0.0.1:{self.rm_ports[i]}/ws/v1/cluster/info")["clusterInfo"]["haState"]

    def active(self) -> int:
        """Which RM (1 or 2) is active; ValueError if neither is (yet)."""
        for i in (1, 2):
            try:
                if self.ha_state(i) == "ACTIVE":
                    return i
            except OSError:
                pass  # that one is down or restarting
        raise ValueError("no ResourceManager is active")

    def api_of(self, i: int, path: str, raw: bool = False):
        """Policy server I's REST API (through rmI's published port)."""
        return get_json(f"http://127.0.0.1:{self.http_ports[i]}{path}", raw)

    def api(self, path: str):
        return self.api_of(self.active(), path)

    def rm(self, path: str, raw: bool = False):
        return get_json(f"http://127.0.0.1:{self.rm_ports[self.active()]}{path}", raw)

    def events_of(self, i: int) -> list[dict]:
        out = self.docker("exec", self.container(f"policy{i}"), "cat", "/var/lib/slotwise/events.jsonl").stdout
        return [json.loads(line) for line in out.split("\n")[:-1] if line.strip()]

    def events(self) -> list[dict]:
        return self.events_of(self.active())

    def standby_says_so(self) -> bool:
        standby = 3 - self.active()
        link = self.api_of(standby, "/api/v1/status")["resource_manager"]
        return link.get("ha_state") == "standby" and not link["registered"]

    def wait_ready(self, nodes: int = 2, timeout: float = 180) -> None:
        """One RM active with its policy server registered, the other standby
        and its policy server saying so, and the rest as DockerCluster's."""
        wait_until("an active ResourceManager", lambda: self.active() in (1, 2), timeout)
        wait_until("the standby's policy server to say standby", self.standby_says_so, timeout)
        super().wait_ready(nodes, timeout)
