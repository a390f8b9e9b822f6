"""``Mrv1Cluster``: a Hadoop 1.2.1 MRv1 cluster, one JobTracker and N
TaskTrackers, each its own JVM.

    with Mrv1Cluster(tmp_dir, nodes=2, scheduler="fifo") as cluster:   # up() ... down()
        result = cluster.submit("pi", ["2", "100"], queue="prod")
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
``up`` left there (``slotwise cluster status``, ``submit``, ``down``). What
it shares with the YARN cluster (state, start-up, stop) is
``base.ClusterBase``.

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
import subprocess
import tempfile
import time
from pathlib import Path

from .base import SCRUB, ClusterBase
from .classpath import jar_cache
from .config import START_TIMEOUT, marker
from .errors import ClusterError
from .jvm import FAST_START, Java, check_compatible
from .ports import free_ports
from .state import ClusterState, Daemon
from .mrv1_conf import Mrv1Config, Mrv1Sizes, core_extra as _core_extra, os_user as _os_user, write_mrv1_conf_dir
from .mrv1_hadoop import (FIFO_TASK_SCHEDULER, Hadoop1Jars, JT_MAIN, JT_PORTS, KIND, Log, MRV1_SCHEDULERS, RUNJAR,
                          SLOTWISE_TASK_SCHEDULER, SUBMIT_AS, TT_MAIN, TT_PORTS, _is_jar, build_mrv1_shim,
                          daemon_classpath, extract_webapps, find_mrv1_shim_jar, mrv1_scheduler_class,
                          mrv1_scheduler_name, resolve_hadoop1, submit_as_classes)
from .mrv1_web import JTWeb, JTWebError, Mrv1Job, Mrv1JobResult, jobtracker_jobs, scheduler_status


__all__ = ["FIFO_TASK_SCHEDULER", "KIND", "MRV1_SCHEDULERS", "SLOTWISE_TASK_SCHEDULER", "Hadoop1Jars", "JTWeb",
           "Mrv1Cluster", "Mrv1Config", "Mrv1Job", "Mrv1JobResult", "daemon_classpath", "jobtracker_jobs",
           "mrv1_scheduler_class", "mrv1_scheduler_name", "open_cluster", "resolve_hadoop1", "scheduler_status"]


#: The JobTracker's own flags. Java 17 collects the whole heap the first time
#: class metadata passes 21 MB (MetaspaceSize's default); the Slotwise shim's
#: classes (Py4J, Jackson) take a Hadoop 1.2.1 JobTracker to about 22 MB, so
#: that full collection (83-475 ms here, every thread stopped) came mid-run,
#: while jobs ran (docs/benchmarks.md, issue 39). Hadoop's own scheduler stays
#: near 16 MB; the flag is the same for both.
JT_FLAGS = ("-XX:MetaspaceSize=64m",)


class Mrv1Cluster(ClusterBase):
    MASTER, WORKER = "jobtracker", "tasktracker"
    WORKER_POLL_S = 0.3
    MASTER_WORD, WORKER_WORD = "JobTracker", "TaskTracker"
    GATEWAY_SITE = "mapred_site"
    STRAYS = "leftover task or client JVM(s)"
    # Hadoop 1.2.1's TaskTracker reinitialises when its JobTracker comes back,
    # and binding its task report port again can fail (the port is fixed here,
    # and its tasks' connections may still hold it): it then hangs, never
    # rejoining. restart_master restarts the TaskTrackers with the JobTracker.
    RESTART_WORKERS_WITH_MASTER = True

    def __init__(self, dir: str | os.PathLike | None = None, *, nodes: int = 2,
                 scheduler: str = "slotwise", conf: dict[str, str] | None = None,
                 map_slots: int = 2, reduce_slots: int = 2, build_shim: bool = True,
                 java_home: str | os.PathLike | None = None, repo: str | os.PathLike | None = None,
                 start_timeout: float = START_TIMEOUT, log: Log | None = None,
                 jt_classpath: list[str] | None = None, jt_jvm_flags: list[str] | None = None,
                 cpus: dict[str, str] | None = None):
        if map_slots < 0 or reduce_slots < 0:
            raise ValueError("slots must not be negative")
        super().__init__(dir, nodes=nodes, conf=conf, build_shim=build_shim, java_home=java_home, repo=repo,
                         start_timeout=start_timeout, log=log)
        self.scheduler = mrv1_scheduler_class(scheduler)
        self.sizes = Mrv1Sizes(map_slots=map_slots, reduce_slots=reduce_slots)
        #: Extra classpath entries for the JobTracker only.
        self.jt_classpath = list(jt_classpath or [])
        #: Extra JVM flags for the JobTracker only (a benchmark's GC log or heap).
        self.jt_jvm_flags = list(jt_jvm_flags or [])
        #: CPUs (a taskset list, "0" or "1-3") for "jobtracker", "tasktracker" (its task JVMs
        #: inherit it) and "client" (job clients); a role not named runs where the caller does.
        self.cpus = dict(cpus or {})

    def _require_state(self) -> ClusterState:
        state = self.state
        if state is None:
            raise ClusterError(f"no cluster in {self.dir}: start one with "
                               f"`slotwise cluster up --mrv1 --dir {self.dir}`")
        if state.kind != KIND:
            raise ClusterError(f"the cluster in {self.dir} is a YARN cluster, not MRv1 "
                               "(drop --mrv1, or take it down and start one with `slotwise cluster up --mrv1`)")
        return state

    @property
    def jobtracker(self) -> Daemon:
        return self.master()

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

    # -- up ----------------------------------------------------------------------

    def up(self) -> ClusterState:
        """Start the JobTracker and the TaskTrackers; return once every
        TaskTracker is registered with the JobTracker."""
        repo, java, started = self._begin_up("local cluster")
        jars = resolve_hadoop1(repo, jar_cache(repo), self.log)
        check_compatible(java, jars.hadoop_version)
        webapps = extract_webapps(jars.core_jar, jar_cache(repo))
        shim_jar = None
        if self.scheduler == SLOTWISE_TASK_SCHEDULER:
            shim_jar = build_mrv1_shim(repo, self.log) if self.build_shim else find_mrv1_shim_jar(repo)
            if not shim_jar:
                raise ClusterError("no mrv1-shim/target/slotwise-mrv1-shim-*.jar: build it with "
                                   "`mvn -q -B -f pom.xml package -DskipTests`")
        shim_jar = self._clear_run(shim_jar)

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

        def start() -> None:
            jt = self._start(state, cfg, java, "jt", self.MASTER, JT_MAIN, jt_ports,
                             cfg.jt_mapred_site(self.layout.home("jt")),
                             extra_cp=([str(shim_jar)] if shim_jar else []) + self.jt_classpath)
            self._wait_master(state, jt, boot)
            tts = []
            for i, p in enumerate(tt_ports, start=1):
                name = f"tt{i}"
                tts.append(self._start(state, cfg, java, name, self.WORKER, TT_MAIN, p,
                                       cfg.tt_mapred_site(p, self.layout.home(name))))
            self._wait_workers_joined(state, jt, tts, boot)
        return self._boot(state, start, started, boot, lambda: f"JobTracker {state.rm_web} "
                          f"(rpc {state.rm_address}), {self.nodes} TaskTracker(s)")

    def _start(self, state: ClusterState, cfg: Mrv1Config, java: Java, name: str, role: str, main: str,
               ports: dict[str, int], mapred: dict[str, str], extra_cp: list[str] = ()) -> Daemon:
        conf_dir = self.layout.conf(name)
        home = self.layout.home(name)
        log_file = self.layout.log(name)
        tmp = home / "tmp"
        for d in (tmp, home / "local", home / "logs"):
            d.mkdir(parents=True, exist_ok=True)
        write_mrv1_conf_dir(conf_dir, core={**cfg.core_site(tmp), **_core_extra(self.conf)}, mapred=mapred,
                            log_file=log_file)
        webapps, *jars = state.classpath
        cp = daemon_classpath(jars, webapps, conf_dir=conf_dir, extra=extra_cp)
        master = [*JT_FLAGS, *self.jt_jvm_flags] if role == self.MASTER else []
        argv = [*self._taskset(role), str(java.exe), *FAST_START, self.sizes.daemon_heap, *master,
                marker(self.dir), f"-Dslotwise.daemon={name}",
                f"-Dlog4j.configuration=file:{conf_dir / 'log4j.properties'}",
                # hadoop.log.dir: the JobTracker's job history, a TaskTracker's userlogs/.
                f"-Dhadoop.log.dir={home / 'logs'}", f"-Dhadoop.log.file={log_file.name}",
                f"-Dhadoop.home.dir={home}", f"-Dhadoop.id.str={name}", f"-Djava.io.tmpdir={tmp}",
                "-Djava.net.preferIPv4Stack=true",
                "-cp", os.pathsep.join(cp), main]
        return self._spawn(state, java, name, role, argv, ports, conf_dir, home)

    def _taskset(self, role: str) -> list[str]:
        """``taskset -c CPUS`` for a role given CPUs (it execs the JVM: the pid is the JVM's)."""
        return ["taskset", "-c", self.cpus[role]] if self.cpus.get(role) else []

    def _wait_master(self, state: ClusterState, jt: Daemon, started: float) -> None:
        web = JTWeb(state.rm_web, timeout=30)  # one request at a time while it starts (see cluster._wait_master)

        def ready() -> bool:
            try:
                page = web.get("/jobtracker.jsp")
            except JTWebError:
                return False
            if re.search(r"State:\s*(</b>)?\s*RUNNING", page):  # not INITIALIZING
                self.log(f"JobTracker up at {state.rm_web} ({time.monotonic() - started:.1f} s)")
                return True
            return False
        self._wait(lambda: "the JobTracker's web UI", [jt], ready, started, 0.3)

    def _wait_workers_joined(self, state: ClusterState, jt: Daemon, tts: list[Daemon], started: float) -> None:
        web = JTWeb(state.rm_web, timeout=30)

        def registered() -> list[str]:
            try:
                return [t.get("Name", "") for t in web.trackers()]
            except JTWebError:
                return []
        self._wait_workers(state, jt, tts, started, "report", registered,
                           ("TaskTracker", "registered with the JobTracker"))

    # -- status ----------------------------------------------------------------------

    def status(self) -> dict:
        """Daemons (alive or not), and from the JobTracker: trackers and jobs."""
        state = self.state
        out = self._status_head(state, kind=KIND, trackers=[], jobs=[])
        if state is None:
            return out
        out.update(scheduler=mrv1_scheduler_name(state.scheduler), jt_web=state.rm_web,
                   jt_address=state.rm_address, slotwise=None)
        if not any(d["alive"] for d in out["daemons"] if d["role"] == "jobtracker"):
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
        lines = Mrv1Cluster._format_head(st, "MRv1 cluster", " --mrv1", "JobTracker web {jt_web}, "
                                         "rpc {jt_address}")
        if isinstance(lines, str):
            return lines
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

    def submit(self, program: str, args: list[str] | tuple[str, ...] = (), *, queue: str | None = "default",
               user: str | None = None, wait: bool = True, timeout: float | None = None,
               cwd: str | os.PathLike | None = None, echo: bool = False,
               on_submitted: Log | None = None) -> Mrv1JobResult | Mrv1Job:
        """Run a MapReduce program of hadoop-examples 1.2.1 (``pi``, ``sleep``,
        ``wordcount``, ``randomwriter``...) or a jar (``my.jar [Main] ARGS``)
        in queue ``queue`` (``mapred.fairscheduler.pool``; None: none set, the
        scheduler's pool-name property decides) as ``user`` (default:
        $HADOOP_USER_NAME, else the OS user).

        The client runs in its own JVM in ``DIR/jobs/<id>/`` (its working
        directory unless ``cwd`` is given: PiEstimator's temporary directory
        is relative to it). ``wait``: return the result once the job ends
        (``timeout`` seconds at most); else a ``Mrv1Job`` at once."""
        state = self._require_state()
        jt = self.master(state)
        if not self.alive(jt):
            raise ClusterError(f"the JobTracker of {self.dir} is not running (read {jt.log})")
        user = user or os.environ.get("HADOOP_USER_NAME") or None
        job = self._launch(state, program, list(args), queue=queue, user=user,
                           cwd=Path(cwd) if cwd else None, echo=echo, on_submitted=on_submitted)
        return job.wait(timeout) if wait else job

    def _launch(self, state: ClusterState, program: str, args: list[str], *, queue: str | None, user: str | None,
                cwd: Path | None, echo: bool, on_submitted: Log | None = None) -> Mrv1Job:
        jobs = self.layout.jobs
        jobs.mkdir(parents=True, exist_ok=True)
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", Path(program).name)[:40] or "job"
        job_dir = Path(tempfile.mkdtemp(prefix=f"{time.strftime('%Y%m%d-%H%M%S')}-{safe}-", dir=jobs))
        conf = job_dir / "conf"
        (job_dir / "tmp").mkdir()
        mapred = {**state.mapred_site, **({"mapred.fairscheduler.pool": queue} if queue is not None else {})}
        write_mrv1_conf_dir(conf, core={"fs.default.name": "file:///", "hadoop.tmp.dir": str(job_dir / "tmp"),
                                        "hadoop.security.authentication": "simple",
                                        **_core_extra(self.conf)},
                            mapred=mapred, log_file=None)
        if program.endswith(".jar"):
            if not os.path.isfile(program):
                raise ClusterError(f"no such jar: {program}")
            run = [os.path.abspath(program), *args]  # the queue comes from the job's mapred-site
        else:
            if not state.examples_jar:
                raise ClusterError("no hadoop-examples jar in mrv1-shim/pom.xml's classpath")
            run = [state.examples_jar, program, *([f"-Dmapred.fairscheduler.pool={queue}"] if queue is not None else []),
                   *args]
        webapps, *jars = state.classpath
        cp = daemon_classpath(jars, webapps, conf_dir=conf)
        main = [RUNJAR]
        if user and user != _os_user():  # the caller's HADOOP_USER_NAME, if any, came in as user (submit)
            java = Java(Path(state.java_home), state.java_version)
            core = next(j for j in jars if _is_jar(j, "hadoop-core"))
            cp.insert(1, str(submit_as_classes(java, core, self.layout.cache)))
            main = [SUBMIT_AS, user]
        cmd = [*self._taskset("client"), str(Path(state.java_home) / "bin" / "java"), *FAST_START,
               self.sizes.client_heap, marker(self.dir),
               "-Dslotwise.daemon=client", f"-Dlog4j.configuration=file:{conf / 'log4j.properties'}",
               f"-Djava.io.tmpdir={job_dir / 'tmp'}", "-Djava.net.preferIPv4Stack=true",
               "-cp", os.pathsep.join(cp), *main, *run]
        env = {k: v for k, v in os.environ.items() if k not in SCRUB}
        env["JAVA_HOME"] = state.java_home
        (job_dir / "command.txt").write_text(" ".join(cmd) + "\n")
        proc = subprocess.Popen(cmd, cwd=cwd or job_dir, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        return Mrv1Job(proc, program=program, queue=queue, user=user, job_dir=job_dir,
                       log_file=job_dir / "client.log", web=JTWeb(state.rm_web), echo=echo, log=self.log,
                       on_submitted=on_submitted)

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
        env = {k: v for k, v in os.environ.items() if k not in SCRUB}
        env["JAVA_HOME"] = state.java_home
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, cwd=self.layout.jobs)

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


def _pct(x: float | None) -> str:
    return "?" if x is None else f"{x:.0f}%"
