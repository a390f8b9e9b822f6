"""``Mrv1Cluster``: a Hadoop 1.2.1 MRv1 cluster, one JobTracker and N
TaskTrackers, each its own JVM.

    with Mrv1Cluster(tmp_dir, nodes=2, scheduler="fifo") as cluster:   # up() ... down()
        result = cluster.submit("pi", ["2", "100"], pool="prod")
        assert result.succeeded, result.log

The jars are those of ``mrv1-shim/pom.xml`` (hadoop-core and hadoop-examples
1.2.1 and their dependencies, resolved by Maven from Maven Central, cached in
``DIR/cache``). The JobTracker runs Slotwise's ``SlotwiseTaskScheduler`` (the
shaded ``mrv1-shim`` jar, on its classpath only) or Hadoop's own
``JobQueueTaskScheduler``. Everything lives under one cluster directory, laid
out as for the YARN cluster (``paths.Layout``)::

    DIR/cluster.json          state, with "kind": "mrv1"
    DIR/cache/                hadoop1-jars.json, the webapps/ tree of hadoop-core, the shim jar's copy
    DIR/conf/jt, conf/ttK/    core-site, hdfs-site, mapred-site, log4j.properties, command.txt
    DIR/logs/jt.log, ttK.log  the daemons' logs (.out: their stdout and stderr)
    DIR/jt/                   the JobTracker's home: tmp/ (hadoop.tmp.dir; tmp/slotwise/gateway.*),
                              local/, system/ (mapred.system.dir, shared with clients), logs/ (history)
    DIR/ttK/                  a TaskTracker's home: tmp/, local/ (mapred.local.dir), logs/userlogs/
    DIR/staging/              the JobTracker's staging root (one directory per user)
    DIR/jobs/<id>/            one per submit: conf/, tmp/, client.log, the job's working directory

A ``Mrv1Cluster`` made for an existing directory attaches to the cluster that
``up`` left there (``slotwise cluster status``, ``submit``, ``down``).

Users: Hadoop 1.2.1 honours ``HADOOP_USER_NAME`` with simple authentication,
but its job client refuses a staging directory owned by anyone but the
submitter, and on the local file system every directory belongs to the OS
user running the client. So a job for another user runs its client as that
user *on behalf of* the OS user: ``HADOOP_USER_NAME`` is left unset and
``RunJar`` runs inside ``UserGroupInformation.createRemoteUser(U).doAs`` (a
small launcher, ``SUBMIT_AS_JAVA`` below, compiled into ``DIR/cache`` by the
JDK's ``javac`` the first time it is needed; the user's staging directory,
owned by the OS user, then passes as the "real" user's). The JobTracker then sees user U
(its job pages, ``user.name`` in the job's configuration, the fair
scheduler's default pool).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Mapping

from . import process
from .classpath import jar_cache
from .config import START_TIMEOUT, marker
from .errors import ClusterError
from .jvm import FAST_START, Java, check_compatible, find_java
from .paths import Layout, default_cluster_dir, find_repo
from .ports import free_ports
from .state import ClusterState, Daemon
from .mrv1_conf import Mrv1Config, Mrv1Sizes, write_mrv1_conf_dir
from .mrv1_hadoop import FIFO_TASK_SCHEDULER, Hadoop1Jars, JT_MAIN, JT_PORTS, KIND, Log, MRV1_SCHEDULERS, RUNJAR, SLOTWISE_TASK_SCHEDULER, SUBMIT_AS, TT_MAIN, TT_PORTS, _SCRUB, _is_jar, build_mrv1_shim, daemon_classpath, extract_webapps, find_mrv1_shim_jar, mrv1_scheduler_class, mrv1_scheduler_name, resolve_hadoop1, submit_as_classes
from .mrv1_web import JTWeb, JTWebError, Mrv1Job, Mrv1JobResult, jobtracker_jobs, scheduler_status


__all__ = ["FIFO_TASK_SCHEDULER", "KIND", "MRV1_SCHEDULERS", "SLOTWISE_TASK_SCHEDULER", "Hadoop1Jars", "JTWeb",
           "Mrv1Cluster", "Mrv1Config", "Mrv1Job", "Mrv1JobResult", "daemon_classpath", "jobtracker_jobs",
           "mrv1_scheduler_class", "mrv1_scheduler_name", "open_cluster", "resolve_hadoop1", "scheduler_status"]


class Mrv1Cluster:
    def __init__(self, dir: str | os.PathLike | None = None, *, nodes: int = 2,
                 scheduler: str = "slotwise", conf: dict[str, str] | None = None,
                 map_slots: int = 2, reduce_slots: int = 2, build_shim: bool = True,
                 java_home: str | os.PathLike | None = None, repo: str | os.PathLike | None = None,
                 start_timeout: float = START_TIMEOUT, log: Log | None = None,
                 jt_classpath: list[str] | None = None):
        if nodes < 1:
            raise ValueError("a cluster needs at least one TaskTracker")
        if map_slots < 0 or reduce_slots < 0:
            raise ValueError("slots must not be negative")
        self.dir = Path(dir).resolve() if dir else default_cluster_dir()
        self.layout = Layout(self.dir)
        self.nodes = nodes
        self.scheduler = mrv1_scheduler_class(scheduler)
        self.conf = dict(conf or {})
        self.sizes = Mrv1Sizes(map_slots=map_slots, reduce_slots=reduce_slots)
        self.build_shim = build_shim
        self.java_home = java_home
        self.repo = Path(repo).resolve() if repo else None
        self.start_timeout = start_timeout
        self.log = log or (lambda msg: print(msg, flush=True))
        #: Extra classpath entries for the JobTracker only.
        self.jt_classpath = list(jt_classpath or [])
        self._children: dict[int, subprocess.Popen] = {}

    # -- state -----------------------------------------------------------------

    @property
    def state(self) -> ClusterState | None:
        return ClusterState.load(self.layout.state_file)

    def _require_state(self) -> ClusterState:
        state = self.state
        if state is None:
            raise ClusterError(f"no cluster in {self.dir}: start one with "
                               f"`slotwise cluster up --mrv1 --dir {self.dir}`")
        if state.kind != KIND:
            raise ClusterError(f"the cluster in {self.dir} is a YARN cluster, not MRv1 "
                               "(drop --mrv1, or take it down and start one with `slotwise cluster up --mrv1`)")
        return state

    def alive(self, daemon: Daemon) -> bool:
        if daemon.pid in self._children:
            self._children[daemon.pid].poll()
        return process.is_ours(daemon.pid, self.dir)

    def is_running(self) -> bool:
        state = self.state
        return bool(state) and any(self.alive(d) for d in state.daemons)

    @property
    def jobtracker(self) -> Daemon:
        return next(d for d in self._require_state().daemons if d.role == "jobtracker")

    @property
    def jt_web(self) -> str:
        """``http://127.0.0.1:PORT``, the JobTracker's web UI."""
        return self._require_state().rm_web

    @property
    def jt_address(self) -> str:
        """``127.0.0.1:PORT``, mapred.job.tracker."""
        return self._require_state().rm_address

    @property
    def web(self) -> JTWeb:
        return JTWeb(self.jt_web)

    def scheduler_status(self) -> dict:
        """The Slotwise shim's /scheduler page, parsed (see ``JTWeb.scheduler``)."""
        return self.web.scheduler()

    @property
    def gateway_info_file(self) -> Path:
        """Where SlotwiseTaskScheduler writes its Py4J port (``{"port", "pid"}``):
        ``slotwise.gateway.info-file``, by default ``jt/tmp/slotwise/gateway.json``.
        The token file is ``gateway.token`` beside it unless configured."""
        state = self._require_state()
        configured = state.mapred_site.get("slotwise.gateway.info-file")
        if configured:
            return Path(configured)
        jt = next(d for d in state.daemons if d.role == "jobtracker")
        return Path(jt.home) / "tmp" / "slotwise" / "gateway.json"

    @property
    def gateway_token_file(self) -> Path:
        state = self._require_state()
        configured = state.mapred_site.get("slotwise.gateway.token-file")
        return Path(configured) if configured else self.gateway_info_file.with_name("gateway.token")

    # -- up ----------------------------------------------------------------------

    def up(self) -> ClusterState:
        """Start the JobTracker and the TaskTrackers; return once every
        TaskTracker is registered with the JobTracker."""
        if self.is_running():
            raise ClusterError(f"a cluster is already running in {self.dir}; "
                               f"stop it first: slotwise cluster down --dir {self.dir}")
        strays = process.find_ours(self.dir)
        if strays:
            self.log(f"stopping {len(strays)} leftover process(es) of an earlier run: {strays}")
            process.stop(strays, self.dir, timeout=10)
        started = time.monotonic()
        if self.dir.is_dir() and any(self.dir.iterdir()) and not self.layout.tag.exists():
            raise ClusterError(f"{self.dir} is neither empty nor a cluster directory (no {self.layout.tag.name}); "
                               "choose a new or empty --dir")
        repo = self.repo or find_repo()
        java = find_java(self.java_home)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.layout.tag.write_text("A Slotwise local cluster directory (slotwise cluster up).\n")
        jars = resolve_hadoop1(repo, jar_cache(repo), self.log)
        check_compatible(java, jars.hadoop_version)
        webapps = extract_webapps(jars.core_jar, jar_cache(repo))
        shim_jar = None
        if self.scheduler == SLOTWISE_TASK_SCHEDULER:
            shim_jar = build_mrv1_shim(repo, self.log) if self.build_shim else find_mrv1_shim_jar(repo)
            if not shim_jar:
                raise ClusterError("no mrv1-shim/target/slotwise-mrv1-shim-*.jar: build it with "
                                   "`mvn -q -B -f pom.xml package -DskipTests`")
        for d in self.layout.run_dirs():
            shutil.rmtree(d, ignore_errors=True)
        self.layout.state_file.unlink(missing_ok=True)
        self.layout.logs.mkdir(parents=True)
        if shim_jar:
            # A copy of its own: a rebuild while the JobTracker runs must not swap classes under it.
            copied = self.layout.cache / Path(shim_jar).name
            self.layout.cache.mkdir(parents=True, exist_ok=True)
            shutil.copy2(shim_jar, copied)
            self.log(f"MRv1 shim jar: {shim_jar} (copied to {copied})")
            shim_jar = copied

        ports = free_ports(len(JT_PORTS) + self.nodes * len(TT_PORTS))
        jt_ports = dict(zip(JT_PORTS, ports[:len(JT_PORTS)]))
        tt_ports = [dict(zip(TT_PORTS, ports[len(JT_PORTS) + i * len(TT_PORTS):][:len(TT_PORTS)]))
                    for i in range(self.nodes)]
        cfg = Mrv1Config(self.dir, jt_ports, scheduler=self.scheduler, sizes=self.sizes, extra=self.conf)
        classpath = daemon_classpath(jars.jars, webapps)
        state = ClusterState(
            dir=str(self.dir), repo=str(repo), java_home=str(java.home), java_version=java.version,
            hadoop_version=jars.hadoop_version, scheduler=self.scheduler, rm_web=cfg.jt_web,
            rm_address=cfg.jt_address, classpath=classpath, examples_jar=jars.examples_jar, tests_jar=None,
            jvm_flags=[], mapred_site=cfg.client_mapred_site(), yarn_site={},
            shim_jar=str(shim_jar) if shim_jar else None, started=time.time(), kind=KIND)
        state.save(self.layout.state_file)
        self.log(f"cluster directory {self.dir}: Hadoop {jars.hadoop_version} MRv1 on Java {java.version} "
                 f"({java.home}), scheduler {mrv1_scheduler_name(self.scheduler)}, "
                 f"{self.sizes.map_slots} map + {self.sizes.reduce_slots} reduce slots per TaskTracker")
        boot = time.monotonic()
        try:
            jt_home = self.layout.home("jt")
            jt = self._start(state, cfg, java, "jt", "jobtracker", JT_MAIN, jt_ports,
                             cfg.jt_mapred_site(jt_home),
                             extra_cp=([str(shim_jar)] if shim_jar else []) + self.jt_classpath)
            self._wait_jt(state, jt, boot)
            tts = []
            for i, p in enumerate(tt_ports, start=1):
                name = f"tt{i}"
                tts.append(self._start(state, cfg, java, name, "tasktracker", TT_MAIN, p,
                                       cfg.tt_mapred_site(p, self.layout.home(name))))
            self._wait_trackers(state, jt, tts, boot)
            state.ready = True
            state.save(self.layout.state_file)
        except BaseException:
            self.log(f"start-up failed; stopping what was started (logs stay in {self.layout.logs})")
            self.down(quiet=True)
            raise
        self.log(f"cluster up in {time.monotonic() - started:.1f} s ({time.monotonic() - boot:.1f} s since the "
                 f"first JVM started): JobTracker {state.rm_web} (rpc {state.rm_address}), "
                 f"{self.nodes} TaskTracker(s); state in {self.layout.state_file}")
        return state

    def _start(self, state: ClusterState, cfg: Mrv1Config, java: Java, name: str, role: str, main: str,
               ports: dict[str, int], mapred: dict[str, str], extra_cp: list[str] = ()) -> Daemon:
        conf_dir = self.layout.conf(name)
        home = self.layout.home(name)
        log_file, out_file = self.layout.log(name), self.layout.out(name)
        tmp = home / "tmp"
        for d in (tmp, home / "local", home / "logs"):
            d.mkdir(parents=True, exist_ok=True)
        write_mrv1_conf_dir(conf_dir, core={**cfg.core_site(tmp), **_core_extra(self.conf)}, mapred=mapred,
                            log_file=log_file)
        webapps, *jars = state.classpath
        cp = daemon_classpath(jars, webapps, conf_dir=conf_dir, extra=extra_cp)
        argv = [str(java.exe), *FAST_START, self.sizes.daemon_heap, marker(self.dir), f"-Dslotwise.daemon={name}",
                f"-Dlog4j.configuration=file:{conf_dir / 'log4j.properties'}",
                # hadoop.log.dir: the JobTracker's job history, a TaskTracker's userlogs/.
                f"-Dhadoop.log.dir={home / 'logs'}", f"-Dhadoop.log.file={log_file.name}",
                f"-Dhadoop.home.dir={home}", f"-Dhadoop.id.str={name}", f"-Djava.io.tmpdir={tmp}",
                "-Djava.net.preferIPv4Stack=true",
                "-cp", os.pathsep.join(cp), main]
        env = {k: v for k, v in os.environ.items() if k not in _SCRUB}
        env["JAVA_HOME"] = str(java.home)
        (conf_dir / "command.txt").write_text(" ".join(argv) + "\n")
        proc = process.spawn(argv, env=env, out=out_file, cwd=home)
        self._children[proc.pid] = proc
        daemon = Daemon(name=name, role=role, pid=proc.pid, conf_dir=str(conf_dir), log=str(log_file),
                        out=str(out_file), ports=ports, home=str(home))
        state.daemons.append(daemon)
        state.save(self.layout.state_file)
        what = "JobTracker" if role == "jobtracker" else f"TaskTracker {name}"
        self.log(f"started {what} (pid {proc.pid}); log {log_file}")
        return daemon

    def _died(self, daemon: Daemon) -> ClusterError | None:
        proc = self._children.get(daemon.pid)
        code = proc.poll() if proc else None
        if (proc and code is None) or (not proc and process.is_ours(daemon.pid, self.dir)):
            return None
        what = "the JobTracker" if daemon.role == "jobtracker" else f"TaskTracker {daemon.name}"
        parts = [f"{what} ({daemon.name}) exited{f' with code {code}' if code is not None else ''} "
                 f"while starting: read {daemon.log} (and {daemon.out})"]
        cause = _first_error(process.tail(Path(daemon.log), 400))
        if cause:
            parts.append(f"first error: {cause}")
        for path in (daemon.log, daemon.out):
            lines = process.tail(Path(path))
            if lines:
                parts.append(f"--- last lines of {path} ---\n{lines}")
        return ClusterError("\n".join(parts))

    def _deadline_error(self, what: str, daemons: list[Daemon]) -> ClusterError:
        logs = " and ".join(d.log for d in daemons)
        last = daemons[-1]
        return ClusterError(f"timed out after {self.start_timeout:.0f} s waiting for {what}: read {logs}\n"
                            f"--- last lines of {last.log} ---\n{process.tail(Path(last.log))}")

    def _wait_jt(self, state: ClusterState, jt: Daemon, started: float) -> None:
        web = JTWeb(state.rm_web, timeout=30)  # one request at a time while it starts (see cluster._wait_rm)
        while True:
            err = self._died(jt)
            if err:
                raise err
            try:
                page = web.get("/jobtracker.jsp")
                if re.search(r"State:\s*(</b>)?\s*RUNNING", page):  # not INITIALIZING
                    self.log(f"JobTracker up at {state.rm_web} ({time.monotonic() - started:.1f} s)")
                    return
            except JTWebError:
                pass
            if time.monotonic() - started > self.start_timeout:
                raise self._deadline_error("the JobTracker's web UI", [jt])
            time.sleep(0.3)

    def _wait_trackers(self, state: ClusterState, jt: Daemon, tts: list[Daemon], started: float) -> None:
        web = JTWeb(state.rm_web, timeout=30)
        by_port = {str(d.ports["report"]): d for d in tts}
        registered: set[str] = set()
        while True:
            for d in [jt, *tts]:
                err = self._died(d)
                if err:
                    raise err
            try:
                trackers = web.trackers()
            except JTWebError:
                trackers = []
            for t in trackers:
                name = t.get("Name", "")
                d = by_port.get(name.rpartition(":")[2])
                if d and d.name not in registered:
                    registered.add(d.name)
                    d.node_id = name
                    self.log(f"TaskTracker {d.name} registered as {name} ({time.monotonic() - started:.1f} s)")
            if len(registered) == len(tts):
                state.save(self.layout.state_file)
                return
            if time.monotonic() - started > self.start_timeout:
                waiting = [d for d in tts if d.name not in registered]
                raise self._deadline_error("TaskTracker(s) " + ", ".join(d.name for d in waiting)
                                           + " to register with the JobTracker", [jt, *waiting])
            time.sleep(0.3)

    # -- down ----------------------------------------------------------------------

    def down(self, timeout: float = 30.0, quiet: bool = False) -> list[str]:
        """Stop every JVM of the cluster: job clients and TaskTrackers first,
        then the JobTracker, then any task JVM left. SIGTERM, then SIGKILL
        after ``timeout`` seconds. Idempotent; returns what it stopped."""
        say = (lambda m: None) if quiet else self.log
        state = self.state
        stopped: list[str] = []
        groups = []
        if state:
            groups = [[d for d in state.daemons if d.role == "tasktracker"],
                      [d for d in state.daemons if d.role == "jobtracker"]]
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
            say(f"stopped {len(strays)} leftover task or client JVM(s): {strays}")
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

    # -- status ----------------------------------------------------------------------

    def status(self) -> dict:
        """Daemons (alive or not), and from the JobTracker: trackers and jobs."""
        state = self.state
        if state is None:
            return {"dir": str(self.dir), "kind": KIND, "running": False, "daemons": [], "trackers": [],
                    "jobs": [], "error": None}
        daemons = [{"name": d.name, "role": d.role, "pid": d.pid, "alive": self.alive(d), "log": d.log,
                    "ports": d.ports, "node_id": d.node_id} for d in state.daemons]
        out = {"dir": str(self.dir), "kind": KIND, "running": all(d["alive"] for d in daemons) and bool(daemons),
               "ready": state.ready, "hadoop_version": state.hadoop_version,
               "scheduler": mrv1_scheduler_name(state.scheduler), "jt_web": state.rm_web,
               "jt_address": state.rm_address, "daemons": daemons, "trackers": [], "jobs": [], "error": None,
               "slotwise": None}
        if not any(d["alive"] for d in daemons if d["role"] == "jobtracker"):
            out["error"] = "the JobTracker is not running"
            return out
        web = JTWeb(state.rm_web, timeout=3)
        try:
            out["trackers"] = web.trackers()
            out["jobs"] = web.jobs()
            if state.scheduler == SLOTWISE_TASK_SCHEDULER:
                out["slotwise"] = web.scheduler()
        except JTWebError as e:
            out["error"] = str(e)
        return out

    @staticmethod
    def format_status(st: dict) -> str:
        if not st["daemons"]:
            return f"no cluster in {st['dir']} (start one with: slotwise cluster up --mrv1)"
        word = "running" if st["running"] else "NOT running (some daemons are dead)"
        lines = [f"MRv1 cluster {st['dir']}: {word}",
                 f"  Hadoop {st['hadoop_version']}, scheduler {st['scheduler']}",
                 f"  JobTracker web {st['jt_web']}, rpc {st['jt_address']}",
                 "daemons:"]
        for d in st["daemons"]:
            ports = " ".join(f"{k}={v}" for k, v in d["ports"].items())
            lines.append(f"  {d['name']:<5} pid {d['pid']:<8} {'alive' if d['alive'] else 'DEAD':<6} "
                         f"{ports}  log {d['log']}")
        if st["error"]:
            lines.append(f"JobTracker web UI unreachable: {st['error']}")
            return "\n".join(lines)
        if st.get("slotwise"):
            lines.append(f"Slotwise: {st['slotwise']['link']}")
        lines.append(f"task trackers ({len(st['trackers'])}):")
        for t in st["trackers"]:
            lines.append(f"  {t.get('Name', '?'):<48} running tasks {t.get('# running tasks', '?'):<3} "
                         f"map slots {t.get('Max Map Tasks', '?')} reduce slots {t.get('Max Reduce Tasks', '?')}")
        lines.append(f"jobs ({len(st['jobs'])}):")
        for j in st["jobs"]:
            lines.append(f"  {j['id']}  {j['state']:<9} user {j['user']:<10} maps {_pct(j['map'])} "
                         f"reduces {_pct(j['reduce'])}  {j['name']}")
        return "\n".join(lines)

    # -- submit ----------------------------------------------------------------------

    def submit(self, program: str, args: list[str] | tuple[str, ...] = (), *, pool: str | None = "default",
               user: str | None = None, wait: bool = True, timeout: float | None = None,
               cwd: str | os.PathLike | None = None, echo: bool = False) -> Mrv1JobResult | Mrv1Job:
        """Run a MapReduce program of hadoop-examples 1.2.1 (``pi``, ``sleep``,
        ``wordcount``, ``randomwriter``...) or a jar (``my.jar [Main] ARGS``)
        in pool ``pool`` (``mapred.fairscheduler.pool``; None: none set, the
        scheduler's pool-name property decides) as ``user`` (default:
        $HADOOP_USER_NAME, else the OS user).

        The client runs in its own JVM in ``DIR/jobs/<id>/`` (its working
        directory unless ``cwd`` is given: PiEstimator's temporary directory
        is relative to it). ``wait``: return the result once the job ends
        (``timeout`` seconds at most); else a ``Mrv1Job`` at once."""
        state = self._require_state()
        jt = next(d for d in state.daemons if d.role == "jobtracker")
        if not self.alive(jt):
            raise ClusterError(f"the JobTracker of {self.dir} is not running (read {jt.log})")
        user = user or os.environ.get("HADOOP_USER_NAME") or None
        job = self._launch(state, program, list(args), pool=pool, user=user,
                           cwd=Path(cwd) if cwd else None, echo=echo)
        return job.wait(timeout) if wait else job

    def _launch(self, state: ClusterState, program: str, args: list[str], *, pool: str | None, user: str | None,
                cwd: Path | None, echo: bool) -> Mrv1Job:
        jobs = self.layout.jobs
        jobs.mkdir(parents=True, exist_ok=True)
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", Path(program).name)[:40] or "job"
        job_dir = Path(tempfile.mkdtemp(prefix=f"{time.strftime('%Y%m%d-%H%M%S')}-{safe}-", dir=jobs))
        conf = job_dir / "conf"
        (job_dir / "tmp").mkdir()
        mapred = {**state.mapred_site, **({"mapred.fairscheduler.pool": pool} if pool is not None else {})}
        write_mrv1_conf_dir(conf, core={"fs.default.name": "file:///", "hadoop.tmp.dir": str(job_dir / "tmp"),
                                        "hadoop.security.authentication": "simple",
                                        **_core_extra(self.conf)},
                            mapred=mapred, log_file=None)
        if program.endswith(".jar"):
            if not os.path.isfile(program):
                raise ClusterError(f"no such jar: {program}")
            run = [os.path.abspath(program), *args]  # the pool comes from the job's mapred-site
        else:
            if not state.examples_jar:
                raise ClusterError("no hadoop-examples jar in mrv1-shim/pom.xml's classpath")
            run = [state.examples_jar, program, *([f"-Dmapred.fairscheduler.pool={pool}"] if pool is not None else []),
                   *args]
        webapps, *jars = state.classpath
        cp = daemon_classpath(jars, webapps, conf_dir=conf)
        main = [RUNJAR]
        if user and user != _os_user():  # the caller's HADOOP_USER_NAME, if any, came in as user (submit)
            java = Java(Path(state.java_home), state.java_version)
            core = next(j for j in jars if _is_jar(j, "hadoop-core"))
            cp.insert(1, str(submit_as_classes(java, core, self.layout.cache)))
            main = [SUBMIT_AS, user]
        cmd = [str(Path(state.java_home) / "bin" / "java"), *FAST_START, self.sizes.client_heap, marker(self.dir),
               "-Dslotwise.daemon=client", f"-Dlog4j.configuration=file:{conf / 'log4j.properties'}",
               f"-Djava.io.tmpdir={job_dir / 'tmp'}", "-Djava.net.preferIPv4Stack=true",
               "-cp", os.pathsep.join(cp), *main, *run]
        env = {k: v for k, v in os.environ.items() if k not in _SCRUB}
        env["JAVA_HOME"] = state.java_home
        (job_dir / "command.txt").write_text(" ".join(cmd) + "\n")
        proc = subprocess.Popen(cmd, cwd=cwd or job_dir, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        return Mrv1Job(proc, program=program, pool=pool, user=user, job_dir=job_dir,
                       log_file=job_dir / "client.log", web=JTWeb(state.rm_web), echo=echo, log=self.log)

    def job_command(self, args: list[str] | tuple[str, ...], *, user: str | None = None,
                    timeout: float = 120) -> subprocess.CompletedProcess:
        """``hadoop job ARGS`` against the cluster (``-list all``, ``-status J``,
        ``-kill J``, ``-set-priority J HIGH``...), in its own JVM, as ``user``."""
        state = self._require_state()
        conf = self.layout.jobs / "client-conf"
        write_mrv1_conf_dir(conf, core={"fs.default.name": "file:///", "hadoop.security.authentication": "simple",
                                        **_core_extra(self.conf)},
                            mapred=state.mapred_site, log_file=None)
        webapps, *jars = state.classpath
        cp = daemon_classpath(jars, webapps, conf_dir=conf)
        main = ["org.apache.hadoop.mapred.JobClient"]
        if user and user != _os_user():
            java = Java(Path(state.java_home), state.java_version)
            core = next(j for j in jars if _is_jar(j, "hadoop-core"))
            cp.insert(1, str(submit_as_classes(java, core, self.layout.cache)))
            main = [SUBMIT_AS, user, "--main", *main]
        cmd = [str(Path(state.java_home) / "bin" / "java"), *FAST_START, self.sizes.client_heap, marker(self.dir),
               "-Dslotwise.daemon=client", f"-Dlog4j.configuration=file:{conf / 'log4j.properties'}",
               "-Djava.net.preferIPv4Stack=true", "-cp", os.pathsep.join(cp), *main, *args]
        env = {k: v for k, v in os.environ.items() if k not in _SCRUB}
        env["JAVA_HOME"] = state.java_home
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, cwd=self.layout.jobs)

    # -- context manager ---------------------------------------------------------------

    def __enter__(self) -> "Mrv1Cluster":
        self.up()
        return self

    def __exit__(self, *exc) -> None:
        self.down()


def open_cluster(dir: str | os.PathLike | None = None, *, mrv1: bool = False, **kw):
    """The cluster ``slotwise cluster up`` left in ``dir``: a ``Mrv1Cluster``
    if its state says ``kind: mrv1``, else a ``LocalCluster`` (YARN; also when
    nothing runs there, unless ``mrv1``). ``mrv1=True`` against a YARN
    cluster is a ClusterError."""
    from .cluster import LocalCluster

    yarn = LocalCluster(dir, **kw)
    state = yarn.state
    kind = state.kind if state else (KIND if mrv1 else "yarn")
    if kind == KIND:
        return Mrv1Cluster(dir, **kw)
    if mrv1:
        raise ClusterError(f"the cluster in {yarn.dir} is a YARN cluster, not MRv1: drop --mrv1, or "
                           f"`slotwise cluster down --dir {yarn.dir}` and `slotwise cluster up --mrv1`")
    return yarn


def _first_error(log_text: str) -> str | None:
    """The first ERROR or FATAL line of a log4j log (with its exception line)."""
    lines = log_text.splitlines()
    for i, line in enumerate(lines):
        if re.search(r"\s(ERROR|FATAL)\s", line):
            nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
            return line.strip() + (f" / {nxt}" if nxt and not re.match(r"\d{4}-\d\d-\d\d", nxt) else "")
    return None


def _pct(x: float | None) -> str:
    return "?" if x is None else f"{x:.0f}%"


_CORE_PREFIXES = ("fs.", "hadoop.", "io.", "ipc.", "net.", "topology.")


def _core_extra(conf: Mapping[str, str]) -> dict[str, str]:
    """The ``--conf`` properties that also go into core-site.xml (all go into
    mapred-site.xml, which every Hadoop 1 daemon and client loads last)."""
    return {k: v for k, v in conf.items() if k.startswith(_CORE_PREFIXES)}


def _os_user() -> str:
    import pwd

    return pwd.getpwuid(os.getuid()).pw_name
