"""What the YARN and the MRv1 local clusters share: one master JVM and N
worker JVMs under one cluster directory (``paths.Layout``), their state file,
start-up with its deadline, and a stop that leaves no process behind.

A subclass says what its daemons are (``MASTER``, ``WORKER``, their words)
and how to tell that they are up; ``LocalCluster`` (YARN) and
``Mrv1Cluster`` (Hadoop 1.2.1) are the two.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Callable

from . import process
from .config import START_TIMEOUT
from .errors import ClusterError
from .jvm import Java, find_java
from .paths import Layout, default_cluster_dir, find_repo
from .state import ClusterState, Daemon

#: Environment variables a daemon must not inherit from the caller.
SCRUB = ("CLASSPATH", "HADOOP_CONF_DIR", "YARN_CONF_DIR", "HADOOP_USER_NAME", "HADOOP_PROXY_USER",
         "HADOOP_HOME", "HADOOP_PREFIX", "HADOOP_OPTS", "YARN_OPTS", "HADOOP_CLASSPATH",
         "HADOOP_TOKEN_FILE_LOCATION")


class ClusterBase:
    #: The roles of the master and of a worker daemon, and what they are called.
    MASTER = WORKER = ""
    WORKER_POLL_S = 0.5  # how often the master is asked which workers have joined
    MASTER_WORD = WORKER_WORD = ""
    #: The site file (in the state) that may configure the gateway's files.
    GATEWAY_SITE = "yarn_site"
    #: What the leftovers a stop finds are (containers, tasks, job clients).
    STRAYS = "leftover JVM(s)"

    def __init__(self, dir: str | os.PathLike | None, *, nodes: int, conf: dict[str, str] | None,
                 build_shim: bool, java_home: str | os.PathLike | None, repo: str | os.PathLike | None,
                 start_timeout: float = START_TIMEOUT, log: Callable[[str], None] | None = None) -> None:
        if nodes < 1:
            raise ValueError(f"a cluster needs at least one {self.WORKER_WORD}")
        self.dir = Path(dir).resolve() if dir else default_cluster_dir()
        self.layout = Layout(self.dir)
        self.nodes = nodes
        self.conf = dict(conf or {})
        self.build_shim = build_shim
        self.java_home = java_home
        self.repo = Path(repo).resolve() if repo else None
        self.start_timeout = start_timeout
        self.log = log or (lambda msg: print(msg, flush=True))
        self._children: dict[int, subprocess.Popen] = {}

    # -- state -----------------------------------------------------------------

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

    def master(self, state: ClusterState | None = None) -> Daemon:
        return next(d for d in (state or self._require_state()).daemons if d.role == self.MASTER)

    @property
    def gateway_info_file(self) -> Path:
        """Where the shim writes its Py4J port (``{"port", "pid"}``): the
        master's ``slotwise.gateway.info-file``, by default under its
        hadoop.tmp.dir. The token file is ``gateway.token`` beside it unless
        configured (``gateway_token_file``)."""
        state = self._require_state()
        configured = getattr(state, self.GATEWAY_SITE).get("slotwise.gateway.info-file")
        if configured:
            return Path(configured)
        return Path(self.master(state).home) / "tmp" / "slotwise" / "gateway.json"

    @property
    def gateway_token_file(self) -> Path:
        configured = getattr(self._require_state(), self.GATEWAY_SITE).get("slotwise.gateway.token-file")
        return Path(configured) if configured else self.gateway_info_file.with_name("gateway.token")

    # -- up --------------------------------------------------------------------

    def _begin_up(self, description: str) -> tuple[Path, Java, float]:
        """The checks and clean-up before a start: (repo, java, started)."""
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
        self.layout.tag.write_text(f"A Slotwise {description} directory (slotwise cluster up).\n")
        return repo, java, started

    def _clear_run(self, shim_jar: str | None) -> Path | None:
        """Remove the last run's directories; the shim jar's own copy (a
        rebuild while the master runs must not swap classes under it)."""
        for d in self.layout.run_dirs():
            shutil.rmtree(d, ignore_errors=True)
        self.layout.state_file.unlink(missing_ok=True)
        self.layout.logs.mkdir(parents=True)
        if not shim_jar:
            return None
        copied = self.layout.cache / Path(shim_jar).name
        self.layout.cache.mkdir(parents=True, exist_ok=True)
        shutil.copy2(shim_jar, copied)
        self.log(f"shim jar: {shim_jar} (copied to {copied})")
        return copied

    def _boot(self, state: ClusterState, start: Callable[[], None], started: float, boot: float,
              summary: Callable[[], str]) -> ClusterState:
        """Run ``start`` (the daemons, until ready); stop everything if it fails."""
        try:
            start()
            state.ready = True
            state.save(self.layout.state_file)
        except BaseException:
            self.log(f"start-up failed; stopping what was started (logs stay in {self.layout.logs})")
            self.down(quiet=True)
            raise
        self.log(f"cluster up in {time.monotonic() - started:.1f} s ({time.monotonic() - boot:.1f} s since the "
                 f"first JVM started): {summary()}; state in {self.layout.state_file}")
        return state

    def _spawn(self, state: ClusterState, java: Java, name: str, role: str, argv: list[str],
               ports: dict[str, int], conf_dir: Path, home: Path) -> Daemon:
        (conf_dir / "command.txt").write_text(" ".join(argv) + "\n")
        log_file, out_file = self.layout.log(name), self.layout.out(name)
        proc = process.spawn(argv, env=_env(java.home), out=out_file, cwd=home)
        self._children[proc.pid] = proc
        daemon = Daemon(name=name, role=role, pid=proc.pid, conf_dir=str(conf_dir), log=str(log_file),
                        out=str(out_file), ports=ports, home=str(home), argv=list(argv))
        state.daemons.append(daemon)
        state.save(self.layout.state_file)
        what = self.MASTER_WORD if role == self.MASTER else f"{self.WORKER_WORD} {name}"
        self.log(f"started {what} (pid {proc.pid}); log {log_file}")
        return daemon

    def _died(self, daemon: Daemon) -> ClusterError | None:
        proc = self._children.get(daemon.pid)
        code = proc.poll() if proc else None
        if (proc and code is None) or (not proc and process.is_ours(daemon.pid, self.dir)):
            return None
        what = f"the {self.MASTER_WORD}" if daemon.role == self.MASTER else f"{self.WORKER_WORD} {daemon.name}"
        parts = [f"{what} ({daemon.name}) exited{f' with code {code}' if code is not None else ''} "
                 f"while starting: read {daemon.log} (and {daemon.out})"]
        cause = first_error(process.tail(Path(daemon.log), 400))
        if cause:
            parts.append(f"first error: {cause}")
        for path in (daemon.log, daemon.out):
            lines = process.tail(Path(path))
            if lines:
                parts.append(f"--- last lines of {path} ---\n{lines}")
        return ClusterError("\n".join(parts))

    def _wait(self, what: Callable[[], str], daemons: list[Daemon], ready: Callable[[], bool], started: float,
              interval: float) -> None:
        """Until ``ready()``; a daemon that dies, or the deadline, is an error
        naming its log (and ``what()`` was awaited)."""
        while True:
            for d in daemons:
                err = self._died(d)
                if err:
                    raise err
            if ready():
                return
            if time.monotonic() - started > self.start_timeout:
                logs = " and ".join(d.log for d in daemons)
                last = daemons[-1]
                raise ClusterError(f"timed out after {self.start_timeout:.0f} s waiting for {what()}: read {logs}\n"
                                   f"--- last lines of {last.log} ---\n{process.tail(Path(last.log))}")
            time.sleep(interval)

    def _wait_workers(self, state: ClusterState, master: Daemon, workers: list[Daemon], started: float,
                      port: str, listed: Callable[[], list[str]], words: tuple[str, str]) -> None:
        """Until the master lists every worker (``listed()``: the ids it reports
        as ready, ``host:port``, matched to a worker by its ``port``); each id
        is kept and logged as it appears. ``words``: the worker's kind and what
        it becomes ("NodeManager", "RUNNING")."""
        by_port = {str(d.ports[port]): d for d in workers}
        seen: set[str] = set()
        kind, joined = words

        def ready() -> bool:
            for worker_id in listed():
                d = by_port.get(worker_id.rpartition(":")[2])
                if d and d.name not in seen:
                    seen.add(d.name)
                    d.node_id = worker_id
                    self.log(f"{kind} {d.name} {joined} as {worker_id} ({time.monotonic() - started:.1f} s)")
            if len(seen) < len(workers):
                return False
            state.save(self.layout.state_file)
            return True
        self._wait(lambda: f"{kind}(s) " + ", ".join(d.name for d in workers if d.name not in seen)
                   + f" to be {joined}", [master, *workers], ready, started, self.WORKER_POLL_S)

    # -- restart ---------------------------------------------------------------

    def restart_master(self, kill: bool = False) -> float:
        """Stop the master (SIGTERM, or SIGKILL as a crash with ``kill``) and
        start it again as it was (command line, ports, configuration, state
        store); return the seconds until every worker has joined it again."""
        state = self._require_state()
        master = self.master(state)
        if not all(d.argv for d in state.daemons):
            raise ClusterError(f"the {self.MASTER_WORD} of {self.dir} was started by an older slotwise "
                               f"(no command line kept): restart the cluster with down and up")
        started = time.monotonic()
        self._respawn(state, master, kill)
        boot = time.monotonic()
        self._wait_master(state, master, boot)
        workers = [d for d in state.daemons if d.role == self.WORKER]
        if self.RESTART_WORKERS_WITH_MASTER:
            for d in workers:
                self._respawn(state, d, False)
        self._wait_workers_joined(state, master, workers, boot)
        took = time.monotonic() - started
        self.log(f"{self.MASTER_WORD} restarted in {took:.1f} s; every {self.WORKER_WORD} joined it again")
        return took

    #: Whether restart_master restarts the workers too (MRv1: see Mrv1Cluster).
    RESTART_WORKERS_WITH_MASTER = False

    def _respawn(self, state: ClusterState, d: Daemon, kill: bool) -> None:
        """Stop a daemon (SIGTERM, or SIGKILL with ``kill``) and start it again as it was."""
        word = self.MASTER_WORD if d.role == self.MASTER else f"{self.WORKER_WORD} {d.name}"
        if self.alive(d):
            if kill:
                process.kill(d.pid, self.dir, children=self._children)
            else:
                process.stop([d.pid], self.dir, timeout=60, children=self._children)
            self.log(f"{'killed' if kill else 'stopped'} the {word} (pid {d.pid})")
        proc = process.spawn(d.argv, env=_env(state.java_home), out=Path(d.out), cwd=Path(d.home))
        self._children[proc.pid] = proc
        d.pid = proc.pid
        state.save(self.layout.state_file)
        self.log(f"started the {word} again (pid {proc.pid}); log {d.log}")

    # -- down ------------------------------------------------------------------

    def down(self, timeout: float = 30.0, quiet: bool = False) -> list[str]:
        """Stop every JVM of the cluster: the workers first (they say goodbye
        to the master), then the master, then any container, task or job
        client left. SIGTERM, then SIGKILL after ``timeout`` seconds.
        Idempotent; returns what it stopped."""
        say = (lambda m: None) if quiet else self.log
        state = self.state
        stopped: list[str] = []
        groups = []
        if state:
            groups = [[d for d in state.daemons if d.role == role] for role in (self.WORKER, self.MASTER)]
        for group in groups:
            live = [d for d in group if self.alive(d)]
            if not live:
                continue
            _, killed = process.stop([d.pid for d in live], self.dir, timeout=timeout, children=self._children)
            for d in live:
                say(f"{'killed' if d.pid in killed else 'stopped'} {d.name} (pid {d.pid})")
                stopped.append(d.name)
        strays = process.find_ours(self.dir)
        if strays:
            process.stop(strays, self.dir, timeout=min(timeout, 10), children=self._children)
            say(f"stopped {len(strays)} {self.STRAYS}: {strays}")
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

    def _status_head(self, state: ClusterState | None, **empty) -> dict:
        """What both clusters' status() say of the directory and its daemons;
        ``empty`` holds the master's own fields before they are read."""
        out = {"dir": str(self.dir), "running": False, "daemons": [], "error": None, **empty}
        if state is not None:
            daemons = [{"name": d.name, "role": d.role, "pid": d.pid, "alive": self.alive(d), "log": d.log,
                        "ports": d.ports, "node_id": d.node_id} for d in state.daemons]
            out.update(running=all(d["alive"] for d in daemons) and bool(daemons), ready=state.ready,
                       hadoop_version=state.hadoop_version, daemons=daemons)
        return out

    @staticmethod
    def _format_head(st: dict, title: str, up: str, master: str) -> list[str] | str:
        """The first lines of both clusters' format_status (a string when there is
        no cluster); ``master`` is formatted with the status' fields."""
        if not st["daemons"]:
            return f"no cluster in {st['dir']} (start one with: slotwise cluster up{up})"
        word = "running" if st["running"] else "NOT running (some daemons are dead)"
        lines = [f"{title} {st['dir']}: {word}",
                 f"  Hadoop {st['hadoop_version']}, scheduler {st['scheduler']}", "  " + master.format(**st), "daemons:"]
        for d in st["daemons"]:
            ports = " ".join(f"{k}={v}" for k, v in d["ports"].items())
            lines.append(f"  {d['name']:<5} pid {d['pid']:<8} {'alive' if d['alive'] else 'DEAD':<6} "
                         f"{ports}  log {d['log']}")
        return lines

    # -- context manager -------------------------------------------------------

    def __enter__(self):
        self.up()
        return self

    def __exit__(self, *exc) -> None:
        self.down()


def first_error(log_text: str) -> str | None:
    """The first ERROR or FATAL line of a log4j log (with its exception line)."""
    lines = log_text.splitlines()
    for i, line in enumerate(lines):
        if re.search(r"\s(ERROR|FATAL)\s", line):
            nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
            return line.strip() + (f" / {nxt}" if nxt and not re.match(r"\d{4}-\d\d-\d\d", nxt) else "")
    return None


def _env(java_home) -> dict[str, str]:
    """A daemon's environment: ours without what would change Hadoop's mind (SCRUB)."""
    env = {k: v for k, v in os.environ.items() if k not in SCRUB}
    env["JAVA_HOME"] = str(java_home)  # YARN containers inherit it (yarn.nodemanager.env-whitelist)
    return env
