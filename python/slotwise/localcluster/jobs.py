"""Submitting MapReduce jobs to the local cluster as a real client would.

``submit`` runs the job client in its own JVM, ``java ... RunJar <jar>
PROGRAM -Dmapreduce.job.queuename=QUEUE ARGS`` (what ``hadoop jar`` does),
with a client configuration pointing at the cluster, as user ``U`` through
``HADOOP_USER_NAME``. Programs:

- the Hadoop examples (``pi``, ``wordcount``, ``randomtextwriter``,
  ``teragen``...) from ``hadoop-mapreduce-examples``;
- ``sleep`` (``-m MAPS -r REDUCES -mt MS -rt MS``), which Hadoop ships in the
  tests jar of ``hadoop-mapreduce-client-jobclient``; its class is run
  directly;
- any ``PATH.jar`` of your own: ``submit --queue x -- my.jar [MainClass] ARGS``.

Each submission gets ``DIR/jobs/<time>-<program>-<random>/`` with its client
configuration, its own staging directory (the job client insists that the
staging directory belongs to the submitting user, which a local file system
cannot fake for a second user) and ``client.log``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .config import marker, write_conf_dir
from .errors import ClusterError
from .rest import RestError, RMRest
from .state import ClusterState

RUNJAR = "org.apache.hadoop.util.RunJar"
#: Programs of Hadoop's jobclient tests jar, by class.
TEST_PROGRAMS = {"sleep": "org.apache.hadoop.mapreduce.SleepJob"}
APP_ID = re.compile(r"\b(application_\d+_\d+)\b")
FINAL_STATES = ("FINISHED", "FAILED", "KILLED")


@dataclass
class JobResult:
    program: str
    asked: str | None           # the queue (MRv1: the pool, mapred.fairscheduler.pool) it was submitted to
    user: str | None
    app_id: str | None
    returncode: int
    state: str | None           # the RM's application state: FINISHED, FAILED, KILLED
    final_status: str | None    # SUCCEEDED, FAILED, KILLED, UNDEFINED
    queue: str | None           # the queue the RM put it in
    app_user: str | None        # the user the RM ran it as
    seconds: float
    job_dir: str
    log: str
    #: The master's diagnostics (YARN: the RM's, which carry a policy's rejection).
    diagnostics: str | None = None

    @property
    def succeeded(self) -> bool:
        return self.returncode == 0 and self.final_status == "SUCCEEDED"


#: No JobHistoryServer runs here.  Set empty on the command line (an empty
#: <value> in mapred-site.xml is dropped, leaving mapred-default's
#: 0.0.0.0:10020), a client that asks after the AM's 5 s linger takes the final
#: state from the ResourceManager instead of failing to reach a history server.
NO_HISTORY_SERVER = "-Dmapreduce.jobhistory.address="


def _client_argv(state: ClusterState, program: str, args: list[str], queue: str) -> tuple[list[str], str, list[str]]:
    """(extra classpath, main class, arguments) for one program."""
    queue_arg = f"-Dmapreduce.job.queuename={queue}"
    if program.endswith(".jar"):
        if not os.path.isfile(program):
            raise ClusterError(f"no such jar: {program}")
        # The queue comes from the per-job mapred-site: a user's main may not parse -D.
        return [], RUNJAR, [os.path.abspath(program), *args]
    if program in TEST_PROGRAMS:
        if not state.tests_jar:
            raise ClusterError(f"'{program}' needs the hadoop-mapreduce-client-jobclient tests jar, "
                               "which Maven could not fetch when the cluster came up (see the warning of up)")
        return [state.tests_jar], TEST_PROGRAMS[program], [queue_arg, NO_HISTORY_SERVER, *args]
    if not state.examples_jar:
        raise ClusterError("no hadoop-mapreduce-examples jar: add it to java-shim/pom.xml and run up again")
    return [], RUNJAR, [state.examples_jar, program, queue_arg, NO_HISTORY_SERVER, *args]


def submit(state: ClusterState, program: str, args: list[str], *, queue: str, user: str | None = None,
           cwd: Path | None = None, timeout: float | None = None, echo: bool = True,
           log: Callable[[str], None] = print, on_submitted: Callable[[str], None] | None = None,
           master_alive: Callable[[], bool] = lambda: True) -> JobResult:
    """Run the job client and wait; ``on_submitted(app_id)`` (else a line to
    ``log``) once the client says the RM accepted the app; ``echo``: the
    client's output to stderr as it comes (the result is what stdout gets)."""
    cluster_dir = Path(state.dir)
    jobs = cluster_dir / "jobs"
    jobs.mkdir(parents=True, exist_ok=True)
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", Path(program).name)[:40] or "job"
    job_dir = Path(tempfile.mkdtemp(prefix=f"{time.strftime('%Y%m%d-%H%M%S')}-{safe}-", dir=jobs))
    conf = job_dir / "conf"
    mapred = {**state.mapred_site,
              "yarn.app.mapreduce.am.staging-dir": str(job_dir / "staging"),
              "mapreduce.job.queuename": queue}
    write_conf_dir(conf, core={"fs.defaultFS": "file:///", "hadoop.tmp.dir": str(job_dir / "tmp"),
                               "hadoop.security.authentication": "simple"},
                   yarn=state.yarn_site, mapred=mapred, log_file=None)
    extra_cp, main, argv = _client_argv(state, program, args, queue)
    (job_dir / "tmp").mkdir()
    cmd = [str(Path(state.java_home) / "bin" / "java"), *state.jvm_flags, "-Xmx512m",
           marker(cluster_dir), "-Dslotwise.daemon=client",
           f"-Dlog4j.configuration=file:{conf / 'log4j.properties'}",
           f"-Djava.io.tmpdir={job_dir / 'tmp'}",
           "-cp", os.pathsep.join([str(conf), *extra_cp, *state.classpath]), main, *argv]
    env = {k: v for k, v in os.environ.items()
           if k not in ("CLASSPATH", "HADOOP_CONF_DIR", "YARN_CONF_DIR", "HADOOP_USER_NAME")}
    env["JAVA_HOME"] = state.java_home
    if user:
        env["HADOOP_USER_NAME"] = user
    elif os.environ.get("HADOOP_USER_NAME"):
        env["HADOOP_USER_NAME"] = os.environ["HADOOP_USER_NAME"]
    (job_dir / "command.txt").write_text(" ".join(cmd) + "\n")
    client_log = job_dir / "client.log"
    started = time.monotonic()
    found: list[str] = []

    proc = subprocess.Popen(cmd, cwd=cwd or job_dir, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)

    def pump() -> None:
        with open(client_log, "wb") as f:
            for raw in iter(proc.stdout.readline, b""):
                f.write(raw)
                f.flush()
                line = raw.decode(errors="replace")
                if echo:
                    sys.stderr.write(line)
                    sys.stderr.flush()
                if not found:
                    m = APP_ID.search(line)
                    if m and "ubmitted application" in line:
                        found.append(m.group(1))
                        if on_submitted:
                            on_submitted(m.group(1))
                        else:
                            log(f"submitted {m.group(1)} to queue {queue}" + (f" as {user}" if user else ""))

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        returncode = proc.wait(timeout=timeout)
    except (subprocess.TimeoutExpired, KeyboardInterrupt) as e:
        proc.kill()
        proc.wait()
        reader.join(5)
        if isinstance(e, KeyboardInterrupt):
            raise
        raise ClusterError(f"{program} did not finish in {timeout:.0f} s "
                           f"({found[0] if found else 'no application id yet'}); client log: {client_log}") from None
    reader.join(10)
    if not found:
        m = APP_ID.search(client_log.read_text(errors="replace"))
        if m:
            found.append(m.group(1))
    app_id = found[0] if found else None
    report = _final_report(RMRest(state.rm_web), app_id, master_alive=master_alive) if app_id else {}
    return JobResult(
        program=program, asked=queue, user=user, app_id=app_id, returncode=returncode,
        state=report.get("state"), final_status=report.get("finalStatus"),
        queue=report.get("queue"), app_user=report.get("user"),
        seconds=round(time.monotonic() - started, 1), job_dir=str(job_dir), log=str(client_log),
        diagnostics=report.get("diagnostics") or None)


#: ``yarn`` sub-commands: the main class, and whether it takes the sub-command
#: itself as its first argument (as Hadoop's ``yarn`` script passes it);
#: ``job`` is ``mapred job`` (told there is no JobHistoryServer, as a job client is).
YARN_COMMANDS = {"application": ("org.apache.hadoop.yarn.client.cli.ApplicationCLI", True),
                 "applicationattempt": ("org.apache.hadoop.yarn.client.cli.ApplicationCLI", True),
                 "container": ("org.apache.hadoop.yarn.client.cli.ApplicationCLI", True),
                 "queue": ("org.apache.hadoop.yarn.client.cli.QueueCLI", False),
                 "node": ("org.apache.hadoop.yarn.client.cli.NodeCLI", False),
                 "cluster": ("org.apache.hadoop.yarn.client.cli.ClusterCLI", False),
                 "rmadmin": ("org.apache.hadoop.yarn.client.cli.RMAdminCLI", False),
                 "job": ("org.apache.hadoop.mapreduce.tools.CLI", False)}


def yarn(state: ClusterState, args: list[str], *, user: str | None = None,
         timeout: float = 120) -> subprocess.CompletedProcess:
    """Run a ``yarn`` client command (``application -movetoqueue ...``,
    ``queue -status root.x``) against the cluster, as its own JVM."""
    if not args or args[0] not in YARN_COMMANDS:
        raise ClusterError(f"yarn sub-command must be one of {', '.join(YARN_COMMANDS)}")
    main, keep = YARN_COMMANDS[args[0]]
    generic = [NO_HISTORY_SERVER] if args[0] == "job" else []
    cluster_dir = Path(state.dir)
    conf = cluster_dir / "jobs" / "yarn-client-conf"
    write_conf_dir(conf, core={"fs.defaultFS": "file:///", "hadoop.security.authentication": "simple"},
                   yarn=state.yarn_site, mapred=state.mapred_site, log_file=None)
    cmd = [str(Path(state.java_home) / "bin" / "java"), *state.jvm_flags, "-Xmx256m", marker(cluster_dir),
           "-Dslotwise.daemon=client", f"-Dlog4j.configuration=file:{conf / 'log4j.properties'}",
           "-cp", os.pathsep.join([str(conf), *state.classpath]), main, *generic, *(args if keep else args[1:])]
    env = {k: v for k, v in os.environ.items() if k not in ("CLASSPATH", "HADOOP_CONF_DIR", "YARN_CONF_DIR")}
    env["JAVA_HOME"] = state.java_home
    if user:
        env["HADOOP_USER_NAME"] = user
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def _final_report(rest: RMRest, app_id: str, wait: float = 30.0,
                  master_alive: Callable[[], bool] = lambda: True) -> dict:
    """The RM's report once the app reached a final state (the client may
    return a moment before the RM moves the app from FINISHING); {} at once
    when the RM does not answer and is gone (the cluster went down)."""
    deadline = time.monotonic() + wait
    report: dict = {}
    while True:
        try:
            report = rest.app(app_id)
        except RestError:
            if not master_alive():
                return {}
        if report.get("state") in FINAL_STATES or time.monotonic() > deadline:
            return report
        time.sleep(0.5)


def words(n_bytes: int, rng, vocabulary: int = 500, per_line: int = 12, prefix: str = "w") -> bytes:
    """Seeded text for a wordcount: lines of ``per_line`` words drawn from
    ``vocabulary`` words (``w0``, ``w1``...), about ``n_bytes`` long (the
    demos, the docker tests and the locality benchmark write it to HDFS)."""
    vocab = [f"{prefix}{i}" for i in range(vocabulary)]
    lines, size = [], 0
    while size < n_bytes:
        line = " ".join(rng.choice(vocab) for _ in range(per_line)) + "\n"
        lines.append(line)
        size += len(line)
    return "".join(lines).encode()
