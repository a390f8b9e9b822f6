"""``LocalCluster``: one ResourceManager and N NodeManagers, each its own JVM.

    with LocalCluster(tmp_dir, nodes=2) as cluster:      # up() ... down()
        result = cluster.submit("pi", ["2", "10"], pool="research")
        assert result.succeeded

A ``LocalCluster`` made for an existing directory (``LocalCluster(dir)``)
attaches to the cluster ``up`` left there, which is how ``slotwise cluster
status``, ``submit`` and ``down`` work from another process.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import time
from pathlib import Path
from typing import Callable

from . import process
from .classpath import build_shim, find_shim_jar, jar_cache, resolve
from .config import (FIFO_SCHEDULER, NM_PORTS, RM_PORTS, SHIM_SCHEDULER, START_TIMEOUT, ClusterConfig, Sizes, marker,
                     write_conf_dir)
from .errors import ClusterError
from .jobs import JobResult, submit, yarn
from .jvm import Java, check_compatible, find_java
from .paths import Layout, default_cluster_dir, find_repo
from .ports import free_ports
from .rest import RestError, RMRest
from .state import ClusterState, Daemon

__all__ = ["FIFO_SCHEDULER", "SHIM_SCHEDULER", "LocalCluster"]

RM_MAIN = "org.apache.hadoop.yarn.server.resourcemanager.ResourceManager"
NM_MAIN = "org.apache.hadoop.yarn.server.nodemanager.NodeManager"
#: Environment variables a daemon must not inherit from the caller.
_SCRUB = ("CLASSPATH", "HADOOP_CONF_DIR", "YARN_CONF_DIR", "HADOOP_USER_NAME", "HADOOP_HOME",
          "HADOOP_OPTS", "YARN_OPTS", "HADOOP_CLASSPATH")


class LocalCluster:
    def __init__(self, dir: str | os.PathLike | None = None, *, nodes: int = 2,
                 scheduler: str = FIFO_SCHEDULER, conf: dict[str, str] | None = None,
                 with_shim: bool | None = None, build_shim: bool = True,
                 java_home: str | os.PathLike | None = None, repo: str | os.PathLike | None = None,
                 sizes: Sizes | None = None, start_timeout: float = START_TIMEOUT,
                 log: Callable[[str], None] | None = None, rm_classpath: list[str] | None = None):
        if nodes < 1:
            raise ValueError("a cluster needs at least one NodeManager")
        self.dir = Path(dir).resolve() if dir else default_cluster_dir()
        self.layout = Layout(self.dir)
        self.nodes = nodes
        self.scheduler = scheduler
        self.conf = dict(conf or {})
        # The shim jar goes on the RM's classpath when asked for, or when the
        # scheduler is the shim's.
        self.with_shim = with_shim if with_shim is not None else scheduler == SHIM_SCHEDULER
        self.build_shim = build_shim
        self.java_home = java_home
        self.repo = Path(repo).resolve() if repo else None
        self.sizes = sizes or Sizes()
        self.start_timeout = start_timeout
        self.log = log or (lambda msg: print(msg, flush=True))
        #: Extra classpath entries for the ResourceManager only (benchmarks' call timings).
        self.rm_classpath = list(rm_classpath or [])
        self._children: dict[int, subprocess.Popen] = {}

    # -- state ---------------------------------------------------------------

    @property
    def state(self) -> ClusterState | None:
        return ClusterState.load(self.layout.state_file)

    def _require_state(self) -> ClusterState:
        state = self.state
        if state is None:
            raise ClusterError(f"no cluster in {self.dir}: start one with `slotwise cluster up --dir {self.dir}`")
        return state

    def alive(self, daemon: Daemon) -> bool:
        if daemon.pid in self._children:
            self._children[daemon.pid].poll()
        return process.is_ours(daemon.pid, self.dir)

    def is_running(self) -> bool:
        state = self.state
        return bool(state) and any(self.alive(d) for d in state.daemons)

    @property
    def rest(self) -> RMRest:
        return RMRest(self._require_state().rm_web)

    @property
    def gateway_info_file(self) -> Path:
        """Where the shim writes its Py4J port (``{"port", "pid"}``): the RM's
        ``slotwise.gateway.info-file``, by default under its hadoop.tmp.dir.
        The token file is ``gateway.token`` beside it unless configured."""
        state = self._require_state()
        configured = state.yarn_site.get("slotwise.gateway.info-file")
        if configured:
            return Path(configured)
        rm = next(d for d in state.daemons if d.role == "resourcemanager")
        return Path(rm.home) / "tmp" / "slotwise" / "gateway.json"

    # -- up ------------------------------------------------------------------

    def up(self) -> ClusterState:
        """Start the cluster; return once every NodeManager is RUNNING."""
        if self.is_running():
            raise ClusterError(f"a cluster is already running in {self.dir}; "
                               f"stop it first: slotwise cluster down --dir {self.dir}")
        strays = process.find_ours(self.dir)
        if strays:
            self.log(f"stopping {len(strays)} leftover process(es) of an earlier run: {strays}")
            process.stop(strays, self.dir, timeout=10)
        started = time.monotonic()
        # up clears the previous run's directories: never do that to a
        # directory that is not (or not yet) a cluster directory.
        if self.dir.is_dir() and any(self.dir.iterdir()) and not self.layout.tag.exists():
            raise ClusterError(f"{self.dir} is neither empty nor a cluster directory (no {self.layout.tag.name}); "
                               "choose a new or empty --dir")
        repo = self.repo or find_repo()
        java = find_java(self.java_home)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.layout.tag.write_text("A Slotwise local YARN cluster directory (slotwise cluster up).\n")
        jars = resolve(repo, jar_cache(repo), self.log)
        check_compatible(java, jars.hadoop_version)
        shim_jar = None
        if self.with_shim:
            shim_jar = build_shim(repo, self.log) if self.build_shim else find_shim_jar(repo)
            if not shim_jar:
                raise ClusterError("no java-shim/target/slotwise-shim-*.jar: build it with "
                                   "`mvn -q -B -f pom.xml package -DskipTests`")
            self.log(f"shim jar: {shim_jar}")
        for d in self.layout.run_dirs():
            shutil.rmtree(d, ignore_errors=True)
        self.layout.state_file.unlink(missing_ok=True)
        self.layout.logs.mkdir(parents=True)
        if shim_jar:
            # A copy of its own: a rebuild of the shim while this RM runs must
            # not swap classes under it.
            copied = self.layout.cache / Path(shim_jar).name
            self.layout.cache.mkdir(parents=True, exist_ok=True)
            shutil.copy2(shim_jar, copied)
            shim_jar = copied

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
        try:
            rm = self._start(state, cfg, java, "rm", "resourcemanager", RM_MAIN, rm_ports,
                             cfg.rm_yarn_site(), cfg.mapred_site(self.dir / "staging"),
                             extra_cp=([str(shim_jar)] if shim_jar else []) + self.rm_classpath)
            self._wait_rm(state, rm, boot)
            nms = []
            for i, p in enumerate(nm_ports, start=1):
                name = f"nm{i}"
                home = self.layout.home(name)
                nms.append(self._start(state, cfg, java, name, "nodemanager", NM_MAIN, p,
                                       cfg.nm_yarn_site(p, home), cfg.nm_mapred_site(p)))
            self._wait_nodes(state, rm, nms, boot)
            state.ready = True
            state.save(self.layout.state_file)
        except BaseException:
            self.log("start-up failed; stopping what was started (logs stay in "
                     f"{self.layout.logs})")
            self.down(quiet=True)
            raise
        self.log(f"cluster up in {time.monotonic() - started:.1f} s ({time.monotonic() - boot:.1f} s since the "
                 f"first JVM started): ResourceManager {state.rm_web} "
                 f"(rpc {state.rm_address}), {self.nodes} NodeManager(s); state in {self.layout.state_file}")
        return state

    def _start(self, state: ClusterState, cfg: ClusterConfig, java: Java, name: str, role: str,
               main: str, ports: dict[str, int], yarn: dict[str, str], mapred: dict[str, str],
               extra_cp: list[str] = ()) -> Daemon:
        conf_dir = self.layout.conf(name)
        home = self.layout.home(name)
        log_file, out_file = self.layout.log(name), self.layout.out(name)
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
        env = {k: v for k, v in os.environ.items() if k not in _SCRUB}
        env["JAVA_HOME"] = str(java.home)  # containers inherit it (yarn.nodemanager.env-whitelist)
        (conf_dir / "command.txt").write_text(" ".join(argv) + "\n")
        proc = process.spawn(argv, env=env, out=out_file, cwd=home)
        self._children[proc.pid] = proc
        daemon = Daemon(name=name, role=role, pid=proc.pid, conf_dir=str(conf_dir), log=str(log_file),
                        out=str(out_file), ports=ports, home=str(home))
        state.daemons.append(daemon)
        state.save(self.layout.state_file)
        what = "ResourceManager" if role == "resourcemanager" else f"NodeManager {name}"
        self.log(f"started {what} (pid {proc.pid}); log {log_file}")
        return daemon

    def _died(self, daemon: Daemon) -> ClusterError | None:
        proc = self._children.get(daemon.pid)
        code = proc.poll() if proc else None
        if (proc and code is None) or (not proc and process.is_ours(daemon.pid, self.dir)):
            return None
        lines = process.tail(Path(daemon.log)) or process.tail(Path(daemon.out))
        return ClusterError(f"{daemon.name} exited{f' with code {code}' if code is not None else ''} "
                            f"while starting: read {daemon.log} (and {daemon.out})\n"
                            f"--- last lines of {daemon.log} ---\n{lines}")

    def _deadline_error(self, what: str, daemons: list[Daemon]) -> ClusterError:
        logs = " and ".join(d.log for d in daemons)
        last = daemons[-1]
        return ClusterError(f"timed out after {self.start_timeout:.0f} s waiting for {what}: read {logs}\n"
                            f"--- last lines of {last.log} ---\n{process.tail(Path(last.log))}")

    def _wait_rm(self, state: ClusterState, rm: Daemon, started: float) -> None:
        # Jetty accepts connections minutes before the web app answers on a
        # slow machine: a short read timeout would pile up dozens of queued
        # requests, each served at last at the RM's CPU cost. One at a time.
        rest = RMRest(state.rm_web, timeout=60)
        while True:
            err = self._died(rm)
            if err:
                raise err
            try:
                info = rest.info()
                if info.get("state") == "STARTED" and info.get("haState", "ACTIVE") == "ACTIVE":
                    self.log(f"ResourceManager up at {state.rm_web} "
                             f"({time.monotonic() - started:.1f} s, Hadoop {info.get('hadoopVersion')})")
                    return
            except RestError:
                pass
            if time.monotonic() - started > self.start_timeout:
                raise self._deadline_error("the ResourceManager's REST API", [rm])
            time.sleep(0.5)

    def _wait_nodes(self, state: ClusterState, rm: Daemon, nms: list[Daemon], started: float) -> None:
        rest = RMRest(state.rm_web, timeout=30)
        by_port = {str(d.ports["address"]): d for d in nms}
        running: set[str] = set()
        while True:
            for d in [rm, *nms]:
                err = self._died(d)
                if err:
                    raise err
            try:
                nodes = rest.nodes()
            except RestError:
                nodes = []
            for node in nodes:
                d = by_port.get(node.get("id", "").rpartition(":")[2])
                if d and node.get("state") == "RUNNING" and d.name not in running:
                    running.add(d.name)
                    d.node_id = node["id"]
                    self.log(f"NodeManager {d.name} RUNNING as {d.node_id} "
                             f"({time.monotonic() - started:.1f} s)")
            if len(running) == len(nms):
                state.save(self.layout.state_file)
                return
            if time.monotonic() - started > self.start_timeout:
                waiting = [d for d in nms if d.name not in running]
                raise self._deadline_error(
                    "NodeManager(s) " + ", ".join(d.name for d in waiting) + " to be RUNNING", [rm, *waiting])
            time.sleep(0.5)

    # -- down ----------------------------------------------------------------

    def down(self, timeout: float = 30.0, quiet: bool = False) -> list[str]:
        """Stop every JVM of the cluster: NodeManagers first (they say goodbye
        to the RM), then the ResourceManager, then any container or job
        client left. SIGTERM, then SIGKILL after ``timeout`` seconds.
        Idempotent; returns what it stopped."""
        say = (lambda m: None) if quiet else self.log
        state = self.state
        stopped: list[str] = []
        groups = []
        if state:
            groups = [[d for d in state.daemons if d.role == "nodemanager"],
                      [d for d in state.daemons if d.role == "resourcemanager"]]
        for group in groups:
            live = [d for d in group if self.alive(d)]
            if not live:
                continue
            graceful, killed = process.stop([d.pid for d in live], self.dir, timeout=timeout,
                                            children=self._children)
            for d in live:
                how = "killed" if d.pid in killed else "stopped"
                say(f"{how} {d.name} (pid {d.pid})")
                stopped.append(d.name)
        strays = process.find_ours(self.dir)
        if strays:
            graceful, killed = process.stop(strays, self.dir, timeout=min(timeout, 10), children=self._children)
            say(f"stopped {len(strays)} leftover container or client JVM(s): {strays}")
            stopped += [f"pid {p}" for p in strays]
        if state:
            self.layout.state_file.unlink(missing_ok=True)
        if not stopped and not state:
            say(f"no cluster running in {self.dir}")
        elif not stopped:
            say(f"cluster in {self.dir} was not running; state cleared")
        else:
            say(f"cluster in {self.dir} is down (logs in {self.layout.logs})")
        return stopped

    # -- status ----------------------------------------------------------------

    def status(self) -> dict:
        """Daemons (alive or not), and from the RM: cluster info, nodes, apps."""
        state = self.state
        if state is None:
            return {"dir": str(self.dir), "running": False, "daemons": [], "nodes": [], "apps": [],
                    "cluster": None, "error": None}
        daemons = [{"name": d.name, "role": d.role, "pid": d.pid, "alive": self.alive(d), "log": d.log,
                    "ports": d.ports, "node_id": d.node_id} for d in state.daemons]
        out = {"dir": str(self.dir), "running": all(d["alive"] for d in daemons) and bool(daemons),
               "ready": state.ready, "hadoop_version": state.hadoop_version, "scheduler": state.scheduler,
               "rm_web": state.rm_web, "rm_address": state.rm_address, "daemons": daemons,
               "nodes": [], "apps": [], "cluster": None, "error": None}
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
        if not st["daemons"]:
            return f"no cluster in {st['dir']} (start one with: slotwise cluster up)"
        word = "running" if st["running"] else "NOT running (some daemons are dead)"
        lines = [f"cluster {st['dir']}: {word}",
                 f"  Hadoop {st['hadoop_version']}, scheduler {st['scheduler']}",
                 f"  ResourceManager web {st['rm_web']}, rpc {st['rm_address']}",
                 "daemons:"]
        for d in st["daemons"]:
            ports = " ".join(f"{k}={v}" for k, v in d["ports"].items())
            lines.append(f"  {d['name']:<5} pid {d['pid']:<8} {'alive' if d['alive'] else 'DEAD':<6} "
                         f"{ports}  log {d['log']}")
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

    def submit(self, program: str, args: list[str] | tuple[str, ...] = (), *, pool: str = "default",
               user: str | None = None, cwd: str | os.PathLike | None = None,
               timeout: float | None = None, echo: bool = False) -> JobResult:
        """Run a MapReduce program (``pi``, ``sleep``, ``wordcount``... or a
        jar) in pool ``pool`` as ``user`` and wait for it."""
        state = self._require_state()
        rm = next(d for d in state.daemons if d.role == "resourcemanager")
        if not self.alive(rm):
            raise ClusterError(f"the ResourceManager of {self.dir} is not running (read {rm.log})")
        return submit(state, program, list(args), pool=pool, user=user,
                      cwd=Path(cwd) if cwd else None, timeout=timeout, echo=echo, log=self.log)

    def yarn(self, args: list[str], *, user: str | None = None,
             timeout: float = 120) -> subprocess.CompletedProcess:
        """A ``yarn`` client command, e.g. ``["queue", "-status", "root.prod"]``."""
        return yarn(self._require_state(), list(args), user=user, timeout=timeout)

    # -- context manager -------------------------------------------------------

    def __enter__(self) -> "LocalCluster":
        self.up()
        return self

    def __exit__(self, *exc) -> None:
        self.down()
