"""``LocalCluster``: one ResourceManager and N NodeManagers, each its own JVM.

    with LocalCluster(tmp_dir, nodes=2) as cluster:      # up() ... down()
        result = cluster.submit("pi", ["2", "10"], queue="research")
        assert result.succeeded

A ``LocalCluster`` made for an existing directory (``LocalCluster(dir)``)
attaches to the cluster ``up`` left there, which is how ``slotwise cluster
status``, ``submit`` and ``down`` work from another process. What it shares
with the MRv1 cluster (state, start-up, stop) is ``base.ClusterBase``.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import time
from pathlib import Path
from typing import Callable

from .base import ClusterBase
from .classpath import build_shim, find_shim_jar, jar_cache, resolve
from .config import (FIFO_SCHEDULER, NM_PORTS, RM_PORTS, SHIM_SCHEDULER, START_TIMEOUT, ClusterConfig, Sizes, marker,
                     write_conf_dir)
from .errors import ClusterError
from .jobs import JobResult, submit, yarn
from .jvm import Java, check_compatible
from .ports import free_ports
from .rest import RestError, RMRest
from .state import ClusterState, Daemon

__all__ = ["FIFO_SCHEDULER", "SHIM_SCHEDULER", "LocalCluster"]

RM_MAIN = "org.apache.hadoop.yarn.server.resourcemanager.ResourceManager"
NM_MAIN = "org.apache.hadoop.yarn.server.nodemanager.NodeManager"


class LocalCluster(ClusterBase):
    MASTER, WORKER = "resourcemanager", "nodemanager"
    MASTER_WORD, WORKER_WORD = "ResourceManager", "NodeManager"
    GATEWAY_SITE = "yarn_site"
    STRAYS = "leftover container or client JVM(s)"

    def __init__(self, dir: str | os.PathLike | None = None, *, nodes: int = 2,
                 scheduler: str = FIFO_SCHEDULER, conf: dict[str, str] | None = None,
                 with_shim: bool | None = None, build_shim: bool = True,
                 java_home: str | os.PathLike | None = None, repo: str | os.PathLike | None = None,
                 sizes: Sizes | None = None, start_timeout: float = START_TIMEOUT,
                 log: Callable[[str], None] | None = None, rm_classpath: list[str] | None = None):
        super().__init__(dir, nodes=nodes, conf=conf, build_shim=build_shim, java_home=java_home, repo=repo,
                         start_timeout=start_timeout, log=log)
        self.scheduler = scheduler
        # The shim jar goes on the RM's classpath when asked for, or when the
        # scheduler is the shim's.
        self.with_shim = with_shim if with_shim is not None else scheduler == SHIM_SCHEDULER
        self.sizes = sizes or Sizes()
        #: Extra classpath entries for the ResourceManager only (benchmarks' call timings).
        self.rm_classpath = list(rm_classpath or [])

    @property
    def rest(self) -> RMRest:
        return RMRest(self._require_state().rm_web)

    # -- up ------------------------------------------------------------------

    def up(self) -> ClusterState:
        """Start the cluster; return once every NodeManager is RUNNING."""
        repo, java, started = self._begin_up("local YARN cluster")
        jars = resolve(repo, jar_cache(repo), self.log)
        check_compatible(java, jars.hadoop_version)
        shim_jar = None
        if self.with_shim:
            shim_jar = build_shim(repo, self.log) if self.build_shim else find_shim_jar(repo)
            if not shim_jar:
                raise ClusterError("no java-shim/target/slotwise-shim-*.jar: build it with "
                                   "`mvn -q -B -f pom.xml package -DskipTests`")
        shim_jar = self._clear_run(shim_jar)

        ports = free_ports(len(RM_PORTS) + self.nodes * len(NM_PORTS))
        rm_ports = dict(zip(RM_PORTS, ports[:len(RM_PORTS)]))
        nm_ports = [dict(zip(NM_PORTS, ports[len(RM_PORTS) + i * len(NM_PORTS):][:len(NM_PORTS)]))
                    for i in range(self.nodes)]
        secret = self.dir / "conf" / "http-signature-secret"
        secret.parent.mkdir(parents=True, exist_ok=True)
        secret.touch(mode=0o600)
        secret.write_text(secrets.token_hex(32))
        cfg = ClusterConfig(self.dir, rm_ports, scheduler=self.scheduler, classpath=jars.classpath,
                            jvm_flags=java.flags(), sizes=self.sizes, extra_yarn=self.conf,
                            http_secret=secret)
        client_yarn = {**cfg.yarn_common(), **self.conf}
        state = ClusterState(
            dir=str(self.dir), repo=str(repo), java_home=str(java.home), java_version=java.version,
            hadoop_version=jars.hadoop_version, scheduler=self.scheduler, rm_web=cfg.rm_web,
            rm_address=cfg.rm_address(), classpath=jars.classpath, examples_jar=jars.examples_jar,
            tests_jar=jars.tests_jar, jvm_flags=java.flags(),
            mapred_site=cfg.mapred_site(self.dir / "staging"), yarn_site=client_yarn,
            shim_jar=str(shim_jar) if shim_jar else None, started=time.time())
        state.save(self.layout.state_file)
        self.log(f"cluster directory {self.dir}: Hadoop {jars.hadoop_version} on Java {java.version} "
                 f"({java.home}), scheduler {self.scheduler}")
        boot = time.monotonic()  # the start-up timeout counts from here, not from Maven

        def start() -> None:
            rm = self._start(state, cfg, java, "rm", self.MASTER, RM_MAIN, rm_ports,
                             cfg.rm_yarn_site(), cfg.mapred_site(self.dir / "staging"),
                             extra_cp=([str(shim_jar)] if shim_jar else []) + self.rm_classpath)
            self._wait_master(state, rm, boot)
            nms = []
            for i, p in enumerate(nm_ports, start=1):
                name = f"nm{i}"
                home = self.layout.home(name)
                nms.append(self._start(state, cfg, java, name, self.WORKER, NM_MAIN, p,
                                       cfg.nm_yarn_site(p, home), cfg.nm_mapred_site(p)))
            self._wait_workers_joined(state, rm, nms, boot)
        return self._boot(state, start, started, boot, lambda: f"ResourceManager {state.rm_web} "
                          f"(rpc {state.rm_address}), {self.nodes} NodeManager(s)")

    def _start(self, state: ClusterState, cfg: ClusterConfig, java: Java, name: str, role: str,
               main: str, ports: dict[str, int], yarn: dict[str, str], mapred: dict[str, str],
               extra_cp: list[str] = ()) -> Daemon:
        conf_dir = self.layout.conf(name)
        home = self.layout.home(name)
        log_file = self.layout.log(name)
        tmp = home / "tmp"
        tmp.mkdir(parents=True, exist_ok=True)
        write_conf_dir(conf_dir, core=cfg.core_site(tmp), yarn=yarn, mapred=mapred, log_file=log_file)
        argv = [str(java.exe), *java.flags(), self.sizes.daemon_heap, marker(self.dir),
                f"-Dslotwise.daemon={name}",
                f"-Dlog4j.configuration=file:{conf_dir / 'log4j.properties'}",
                f"-Dhadoop.log.dir={self.layout.logs}", f"-Dyarn.log.dir={self.layout.logs}",
                f"-Dhadoop.log.file={log_file.name}", f"-Dyarn.log.file={log_file.name}",
                f"-Dhadoop.home.dir={home}", f"-Djava.io.tmpdir={tmp}",
                "-cp", os.pathsep.join([str(conf_dir), *extra_cp, *state.classpath]), main]
        return self._spawn(state, java, name, role, argv, ports, conf_dir, home)

    def _wait_master(self, state: ClusterState, rm: Daemon, started: float) -> None:
        # Jetty accepts connections minutes before the web app answers on a
        # slow machine: a short read timeout would pile up dozens of queued
        # requests, each served at last at the RM's CPU cost. One at a time.
        rest = RMRest(state.rm_web, timeout=60)

        def ready() -> bool:
            try:
                info = rest.info()
            except RestError:
                return False
            if info.get("state") == "STARTED" and info.get("haState", "ACTIVE") == "ACTIVE":
                self.log(f"ResourceManager up at {state.rm_web} "
                         f"({time.monotonic() - started:.1f} s, Hadoop {info.get('hadoopVersion')})")
                return True
            return False
        self._wait(lambda: "the ResourceManager's REST API", [rm], ready, started, 0.5)

    def _wait_workers_joined(self, state: ClusterState, rm: Daemon, nms: list[Daemon], started: float) -> None:
        rest = RMRest(state.rm_web, timeout=30)

        def running() -> list[str]:
            try:
                return [n.get("id", "") for n in rest.nodes() if n.get("state") == "RUNNING"]
            except RestError:
                return []
        self._wait_workers(state, rm, nms, started, "address", running, ("NodeManager", "RUNNING"))

    # -- status ----------------------------------------------------------------

    def status(self) -> dict:
        """Daemons (alive or not), and from the RM: cluster info, nodes, apps."""
        state = self.state
        out = self._status_head(state, nodes=[], apps=[], cluster=None)
        if state is None:
            return out
        out.update(scheduler=state.scheduler, rm_web=state.rm_web, rm_address=state.rm_address)
        rest = RMRest(state.rm_web, timeout=3)
        try:
            out["cluster"] = rest.info()
            out["nodes"] = [{k: n.get(k) for k in ("id", "state", "numContainers", "usedMemoryMB",
                                                   "availMemoryMB", "usedVirtualCores",
                                                   "availableVirtualCores", "healthReport")}
                            for n in rest.nodes()]
            out["apps"] = [{k: a.get(k) for k in ("id", "name", "user", "queue", "state", "finalStatus",
                                                  "progress", "elapsedTime")}
                           for a in rest.apps()]
        except RestError as e:
            out["error"] = str(e)
        return out

    @staticmethod
    def format_status(st: dict) -> str:
        lines = LocalCluster._format_head(st, "cluster", "", "ResourceManager web {rm_web}, "
                                          "rpc {rm_address}")
        if isinstance(lines, str):
            return lines
        if st["error"]:
            lines.append(f"ResourceManager REST API unreachable: {st['error']}")
            return "\n".join(lines)
        lines.append(f"nodes ({len(st['nodes'])}):")
        for n in st["nodes"]:
            used, avail = n.get("usedMemoryMB") or 0, n.get("availMemoryMB") or 0
            lines.append(f"  {n['id']:<22} {n['state']:<10} containers {n.get('numContainers') or 0:<3} "
                         f"memory {used}/{used + avail} MB")
        lines.append(f"apps ({len(st['apps'])}):")
        for a in st["apps"]:
            lines.append(f"  {a['id']}  {a['state']:<9} {a['finalStatus']:<10} user {a['user']:<10} "
                         f"queue {a['queue']:<14} {a['name']}")
        return "\n".join(lines)

    # -- submit ----------------------------------------------------------------

    def submit(self, program: str, args: list[str] | tuple[str, ...] = (), *, queue: str = "default",
               user: str | None = None, cwd: str | os.PathLike | None = None,
               timeout: float | None = None, echo: bool = False,
               on_submitted: Callable[[str], None] | None = None) -> JobResult:
        """Run a MapReduce program (``pi``, ``sleep``, ``wordcount``... or a
        jar) in queue ``queue`` as ``user`` and wait for it; ``on_submitted``
        is called with the app id once the RM has it."""
        state = self._require_state()
        rm = self.master(state)
        if not self.alive(rm):
            raise ClusterError(f"the ResourceManager of {self.dir} is not running (read {rm.log})")
        return submit(state, program, list(args), queue=queue, user=user,
                      cwd=Path(cwd) if cwd else None, timeout=timeout, echo=echo, log=self.log,
                      on_submitted=on_submitted, master_alive=lambda: self.alive(rm))

    def yarn(self, args: list[str], *, user: str | None = None,
             timeout: float = 120) -> subprocess.CompletedProcess:
        """A ``yarn`` client command, e.g. ``["queue", "-status", "root.prod"]``."""
        return yarn(self._require_state(), list(args), user=user, timeout=timeout)
