"""Hadoop 1.2.1 for the embedded MRv1 cluster: its jars (resolved by Maven
from ``mrv1-shim/pom.xml``, cached), the daemons' classpath, the MRv1 shim
jar and the ``SubmitAs`` launcher (``mrv1.py`` says how they are used)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Iterable

from .classpath import _artifact_version, _find, jar_is_stale, run_maven, write_atomically
from .errors import ClusterError
from .jvm import Java


KIND = "mrv1"
SLOTWISE_TASK_SCHEDULER = "org.apache.hadoop.mapred.SlotwiseTaskScheduler"
FIFO_TASK_SCHEDULER = "org.apache.hadoop.mapred.JobQueueTaskScheduler"
#: ``cluster up --mrv1 --scheduler`` short names; anything else is taken as a class name.
MRV1_SCHEDULERS = {"slotwise": SLOTWISE_TASK_SCHEDULER, "fifo": FIFO_TASK_SCHEDULER}

JT_MAIN = "org.apache.hadoop.mapred.JobTracker"
TT_MAIN = "org.apache.hadoop.mapred.TaskTracker"
RUNJAR = "org.apache.hadoop.util.RunJar"
SUBMIT_AS = "SubmitAs"

#: Every daemon binds here; TaskTrackers call themselves "localhost" (slave.host.name)
#: so that splits of file:// input (whose host is "localhost") are node-local.
BIND = "127.0.0.1"
TT_HOST = "localhost"
JT_PORTS = ("rpc", "http")
TT_PORTS = ("http", "report")

#: The two jsp-2.1 jars must come last: ahead of jasper they break Jetty 6
#: (NoSuchFieldError: IS_SECURITY_ENABLED and the JobTracker exits).
JSP_LAST = ("jsp-2.1", "jsp-api-2.1")
CACHE_FORMAT = 1
JOB_ID = re.compile(r"\b(job_\d+_\d+)\b")

Log = Callable[[str], None]



def mrv1_scheduler_class(name: str) -> str:
    """The JobTracker's ``mapred.jobtracker.taskScheduler`` for a short name or a class name."""
    text = name.strip()
    if text.lower() in MRV1_SCHEDULERS:
        return MRV1_SCHEDULERS[text.lower()]
    if not re.fullmatch(r"[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)+", text):
        raise ValueError(f"--scheduler: expected one of {', '.join(MRV1_SCHEDULERS)} or a class name, "
                         f"got {name!r}")
    return text


def mrv1_scheduler_name(cls: str) -> str:
    return next((k for k, v in MRV1_SCHEDULERS.items() if v == cls), cls)


# -- jars --------------------------------------------------------------------

@dataclass
class Hadoop1Jars:
    """The jars of ``mrv1-shim/pom.xml``'s dependency closure (Maven's order)."""

    jars: list[str]
    hadoop_version: str
    core_jar: str
    examples_jar: str | None
    key: str = ""

    def missing(self) -> list[str]:
        return [j for j in self.jars if not os.path.isfile(j)]


def hadoop1_pom_key(repo: Path) -> str:
    h = hashlib.sha256(f"mrv1 format {CACHE_FORMAT}\n".encode())
    for pom in (repo / "pom.xml", repo / "mrv1-shim" / "pom.xml"):
        h.update(pom.read_bytes())
    return h.hexdigest()


def resolve_hadoop1(repo: Path, cache: Path, log: Log, *, refresh: bool = False) -> Hadoop1Jars:
    """The Hadoop 1 jars, from ``cache/hadoop1-jars.json`` while the poms are
    unchanged, else from ``mvn dependency:build-classpath``."""
    key = hadoop1_pom_key(repo)
    cache_file = cache / "hadoop1-jars.json"
    if not refresh and cache_file.is_file():
        try:
            jars = Hadoop1Jars(**json.loads(cache_file.read_text()))
        except (ValueError, TypeError):
            jars = None
        if jars and jars.key == key and not jars.missing():
            return jars
    cache.mkdir(parents=True, exist_ok=True)
    out = cache / "hadoop1-classpath.txt"
    out.unlink(missing_ok=True)
    log("resolving the Hadoop 1 jars of mrv1-shim/pom.xml with Maven (the first time downloads them into ~/.m2)...")
    run_maven(["-f", str(repo / "mrv1-shim" / "pom.xml"), "dependency:build-classpath",
               "-DincludeScope=compile", f"-Dmdep.outputFile={out}"], repo, "resolving the Hadoop 1 classpath")
    jars = [p for p in out.read_text().strip().split(os.pathsep) if p]
    core = _find(jars, "hadoop-core")
    version = _artifact_version(jars, "hadoop-core")
    if not core or not version:
        raise ClusterError(f"mrv1-shim/pom.xml's classpath has no hadoop-core jar ({out})")
    result = Hadoop1Jars(jars, version, core, _find(jars, "hadoop-examples"), key)
    write_atomically(cache_file, json.dumps(asdict(result), indent=1) + "\n")
    log(f"Hadoop {version}: {len(jars)} jars (cached in {cache_file})")
    return result


def extract_webapps(core_jar: str | os.PathLike, cache: Path) -> Path:
    """A directory holding hadoop-core's ``webapps/`` tree, unpacked once.

    Hadoop 1's HttpServer finds ``webapps/job`` (``webapps/task``) as a
    classpath resource; Jetty 6 serves it from a directory, as Hadoop's own
    ``bin/hadoop`` arranges (``$HADOOP_HOME`` on the classpath)."""
    core = Path(core_jar)
    target = cache / f"{core.stem}-webapps"
    stamp = target / ".complete"
    if stamp.is_file() and stamp.read_text().strip() == str(core):
        return target
    cache.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".webapps-", dir=cache))
    try:
        with zipfile.ZipFile(core) as z:
            members = [m for m in z.namelist() if m.startswith("webapps/")]
            if not members:
                raise ClusterError(f"{core} has no webapps/ tree")
            z.extractall(tmp, members)
        (tmp / ".complete").write_text(f"{core}\n")
        shutil.rmtree(target, ignore_errors=True)
        os.replace(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def _is_jar(path: str, artifact: str) -> bool:
    return re.fullmatch(rf"{re.escape(artifact)}-\d[^/]*\.jar", Path(path).name) is not None


def daemon_classpath(jars: Iterable[str], webapps_dir: str | os.PathLike, *,
                     conf_dir: str | os.PathLike | None = None, extra: Iterable[str] = ()) -> list[str]:
    """The classpath in ``bin/hadoop``'s order: the conf dir, the directory
    holding ``webapps/``, hadoop-core, then ``extra`` (the shim jar on the
    JobTracker), the other jars, and the jsp-2.1 jars last."""
    jars = list(dict.fromkeys(jars))
    core = [j for j in jars if _is_jar(j, "hadoop-core")]
    jsp = [j for name in JSP_LAST for j in jars if _is_jar(j, name)]
    rest = [j for j in jars if j not in core and j not in jsp]
    head = [str(conf_dir)] if conf_dir is not None else []
    return [*head, str(webapps_dir), *core, *extra, *rest, *jsp]


# -- the shim and the submit-as launcher -----------------------------------------

SHIM_GLOB = "slotwise-mrv1-shim-*.jar"


def find_mrv1_shim_jar(repo: Path) -> Path | None:
    """The shaded jar of ``mvn package`` (not ``original-*.jar``)."""
    found = [p for p in (repo / "mrv1-shim" / "target").glob(SHIM_GLOB)
             if not re.search(r"-(sources|javadoc|tests)\.jar$", p.name)]
    return max(found, key=lambda p: p.stat().st_mtime) if found else None


def build_mrv1_shim(repo: Path, log: Log) -> Path:
    """The MRv1 shim's jar, built unless it is newer than its sources."""
    jar = find_mrv1_shim_jar(repo)
    if not jar_is_stale(repo, jar, "mrv1-shim"):
        return jar
    log("building the MRv1 shim: mvn -q -B -f pom.xml -pl mrv1-shim package -DskipTests ...")
    run_maven(["-f", str(repo / "pom.xml"), "-pl", "mrv1-shim", "package", "-DskipTests"], repo,
              "building the MRv1 shim")
    jar = find_mrv1_shim_jar(repo)
    if not jar:
        raise ClusterError(f"mvn package built no mrv1-shim/target/{SHIM_GLOB}")
    return jar


SUBMIT_AS_JAVA = """\
import java.security.PrivilegedExceptionAction;
import org.apache.hadoop.security.UserGroupInformation;

/** Written by slotwise.localcluster.mrv1: a job client as another user, on behalf of the OS user. */
public class SubmitAs {
  /** SubmitAs USER [--main CLASS] ARGS...: RunJar's (or CLASS's) main(ARGS) as USER. */
  public static void main(final String[] args) throws Exception {
    final boolean other = args.length > 2 && args[1].equals("--main");
    final String main = other ? args[2] : "org.apache.hadoop.util.RunJar";
    final String[] rest = java.util.Arrays.copyOfRange(args, other ? 3 : 1, args.length);
    UserGroupInformation.createRemoteUser(args[0]).doAs(new PrivilegedExceptionAction<Void>() {
      public Void run() throws Exception {
        try {
          Class.forName(main).getMethod("main", String[].class).invoke(null, (Object) rest);
        } catch (java.lang.reflect.InvocationTargetException e) {
          Throwable t = e.getCause();
          if (t instanceof Exception) {
            throw (Exception) t;
          }
          if (t instanceof Error) {
            throw (Error) t;
          }
          throw new RuntimeException(t);
        }
        return null;
      }
    });
  }
}
"""


def submit_as_classes(java: Java, core_jar: str, cache: Path) -> Path:
    """The directory holding the compiled ``SubmitAs`` launcher (built once)."""
    digest = hashlib.sha256((SUBMIT_AS_JAVA + core_jar + java.version).encode()).hexdigest()[:12]
    out = cache / f"submit-as-{digest}"
    if (out / f"{SUBMIT_AS}.class").is_file():
        return out
    javac = java.home / "bin" / "javac"
    if not javac.is_file():
        raise ClusterError(f"submitting as another user needs javac, which {java.home} lacks (install a JDK, "
                           "not a JRE), or submit without --user")
    cache.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".submit-as-", dir=cache))
    try:
        (tmp / f"{SUBMIT_AS}.java").write_text(SUBMIT_AS_JAVA)
        done = subprocess.run([str(javac), "-nowarn", "-cp", core_jar, "-d", str(tmp), str(tmp / f"{SUBMIT_AS}.java")],
                              capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            raise ClusterError(f"compiling {SUBMIT_AS}.java failed:\n{done.stdout}{done.stderr}")
        shutil.rmtree(out, ignore_errors=True)
        os.replace(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


# -- configuration ---------------------------------------------------------------
