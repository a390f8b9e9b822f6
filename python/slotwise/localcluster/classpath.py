"""The Hadoop jars, resolved by Maven from the project's own poms.

``java-shim/pom.xml`` lists Hadoop as ``provided`` dependencies; the same
list (with its transitive closure) is the classpath of every daemon, of the
job client and of the MapReduce containers. ``mvn dependency:build-classpath``
prints it, downloading into ``~/.m2`` what is missing, so a fresh machine
needs only a JDK and Maven. The result is cached in ``DIR/cache`` and redone
when ``pom.xml`` or ``java-shim/pom.xml`` change.

Two jars are not on that list: the MapReduce ``sleep`` job lives in the
``tests`` jar of ``hadoop-mapreduce-client-jobclient``, fetched with
``mvn dependency:copy`` into ``DIR/cache/jars``; and the shim jar, built by
``mvn package`` only when the shim scheduler is used.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

from .errors import ClusterError

#: Jars the daemons need that a pom listing only the RM, NM and MapReduce
#: artifacts lacks: the ResourceManager's web app binds classes of the
#: timeline service (RMTimelineCollectorManager) even when it is disabled.
#: Fetched (without their dependencies) when the pom does not list them.
DAEMON_ARTIFACTS = ("hadoop-yarn-server-timelineservice",)

#: Which Maven to run.
MVN_ENV = "SLOTWISE_MVN"
CACHE_FORMAT = 3

Log = Callable[[str], None]


def maven() -> str:
    mvn = os.environ.get(MVN_ENV) or shutil.which("mvn")
    if not mvn:
        raise ClusterError("Maven (mvn) is not installed: the local cluster resolves the Hadoop jars with it "
                           f"(apt-get install maven, or set {MVN_ENV})")
    return mvn


def run_maven(args: list[str], repo: Path, what: str, *, timeout: float = 1800) -> None:
    cmd = [maven(), "-q", "-B", *args]
    try:
        out = subprocess.run(cmd, cwd=repo, capture_output=True, text=True, timeout=timeout,
                             stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise ClusterError(f"{what}: Maven did not finish in {timeout:.0f} s: {' '.join(cmd)}") from None
    if out.returncode != 0:
        tail = "\n".join((out.stdout + out.stderr).strip().splitlines()[-25:])
        raise ClusterError(f"{what}: Maven failed (exit {out.returncode}): {' '.join(cmd)}\n{tail}")


@dataclass
class HadoopJars:
    """The resolved jars of one Hadoop version."""

    classpath: list[str]         # every jar of java-shim/pom.xml's dependency closure, Maven's order
    hadoop_version: str          # of hadoop-common
    examples_jar: str | None     # hadoop-mapreduce-examples: pi, wordcount, randomtextwriter...
    tests_jar: str | None        # hadoop-mapreduce-client-jobclient tests jar: sleep
    key: str = ""

    def missing(self) -> list[str]:
        jars = [*self.classpath, *(j for j in (self.examples_jar, self.tests_jar) if j)]
        return [j for j in jars if not os.path.isfile(j)]


def pom_key(repo: Path) -> str:
    """Changes whenever a pom that decides the classpath changes."""
    h = hashlib.sha256(f"format {CACHE_FORMAT}\n".encode())
    for pom in (repo / "pom.xml", repo / "java-shim" / "pom.xml"):
        h.update(pom.read_bytes())
    return h.hexdigest()


def _artifact_version(classpath: list[str], artifact: str) -> str | None:
    pattern = re.compile(rf"(?:^|/){re.escape(artifact)}-(\d[^/]*?)\.jar$")
    for jar in classpath:
        m = pattern.search(jar)
        if m:
            return m.group(1)
    return None


def _find(classpath: list[str], artifact: str) -> str | None:
    pattern = re.compile(rf"(?:^|/){re.escape(artifact)}-\d[^/]*\.jar$")
    return next((j for j in classpath if pattern.search(j)), None)


def _copy_artifact(repo: Path, coords: str, dest: Path, log: Log) -> str | None:
    """Fetch one artifact into ``dest``; None (and a warning) if Maven can't."""
    dest.mkdir(parents=True, exist_ok=True)
    group, artifact, version, *rest = coords.split(":")
    classifier = rest[1] if len(rest) > 1 else None
    name = f"{artifact}-{version}{'-' + classifier if classifier else ''}.jar"
    if (dest / name).is_file():
        return str(dest / name)
    try:
        run_maven(["-f", str(repo / "java-shim" / "pom.xml"), "dependency:copy",
                   f"-Dartifact={coords}", f"-DoutputDirectory={dest}"], repo, f"fetching {coords}")
    except ClusterError as e:
        log(f"warning: {e}")
        return None
    return str(dest / name) if (dest / name).is_file() else None


def jar_cache(repo: Path) -> Path:
    """Where the resolved Hadoop jars' lists live: one place per checkout
    (``run/jars``, or $SLOTWISE_JAR_CACHE), shared by every local cluster,
    the demo and the tests, so Maven resolves them once per change of the
    poms rather than once per cluster started."""
    return Path(os.environ.get("SLOTWISE_JAR_CACHE") or repo / "run" / "jars")


def write_atomically(path: Path, text: str) -> None:
    """Another cluster reading the cache sees the old file or the new, whole."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def resolve(repo: Path, cache: Path, log: Log, *, refresh: bool = False) -> HadoopJars:
    """The Hadoop jars for the checkout ``repo``, from ``cache`` when its poms
    have not changed since, else from Maven."""
    key = pom_key(repo)
    cache_file = cache / "hadoop-jars.json"
    if not refresh and cache_file.is_file():
        try:
            jars = HadoopJars(**json.loads(cache_file.read_text()))
        except (ValueError, TypeError):
            jars = None
        if jars and jars.key == key and not jars.missing():
            return jars
    cache.mkdir(parents=True, exist_ok=True)
    out = cache / "classpath.txt"
    out.unlink(missing_ok=True)
    log("resolving the Hadoop jars of java-shim/pom.xml with Maven "
        "(the first time downloads about 144 MB into ~/.m2)...")
    # includeScope=compile: compile, provided (Hadoop) and system; not the shim's test jars.
    run_maven(["-f", str(repo / "java-shim" / "pom.xml"), "dependency:build-classpath",
               "-DincludeScope=compile", f"-Dmdep.outputFile={out}"], repo, "resolving the Hadoop classpath")
    classpath = [p for p in out.read_text().strip().split(os.pathsep) if p]
    version = _artifact_version(classpath, "hadoop-common")
    if not version:
        raise ClusterError(f"java-shim/pom.xml's classpath has no hadoop-common jar ({out})")
    extra = cache / "jars"
    for artifact in DAEMON_ARTIFACTS:
        if not _find(classpath, artifact):
            jar = _copy_artifact(repo, f"org.apache.hadoop:{artifact}:{version}", extra, log)
            if not jar:
                raise ClusterError(f"the daemons need {artifact}, which java-shim/pom.xml does not list "
                                   "and Maven could not fetch")
            log(f"note: java-shim/pom.xml does not list {artifact}; using {jar}")
            classpath.append(jar)
    examples = _find(classpath, "hadoop-mapreduce-examples")
    if not examples:
        examples = _copy_artifact(repo, f"org.apache.hadoop:hadoop-mapreduce-examples:{version}", extra, log)
    jobclient = _artifact_version(classpath, "hadoop-mapreduce-client-jobclient") or version
    tests = _copy_artifact(repo, f"org.apache.hadoop:hadoop-mapreduce-client-jobclient:{jobclient}:jar:tests",
                           extra, log)
    jars = HadoopJars(classpath, version, examples, tests, key)
    write_atomically(cache_file, json.dumps(asdict(jars), indent=1) + "\n")
    log(f"Hadoop {version}: {len(classpath)} jars (cached in {cache_file})")
    return jars


SHIM_GLOB = "slotwise-shim-*.jar"


def find_shim_jar(repo: Path) -> Path | None:
    """The shaded shim jar of ``mvn package`` (not the ``original-`` one)."""
    found = [p for p in (repo / "java-shim" / "target").glob(SHIM_GLOB)
             if not re.search(r"-(sources|javadoc|tests)\.jar$", p.name)]
    return max(found, key=lambda p: p.stat().st_mtime) if found else None


def jar_is_stale(repo: Path, jar: Path | None, module: str) -> bool:
    """Whether ``jar`` is missing or older than a file it is built from: the
    poms, ``module``'s main sources and shim-link's, and the protocol's
    schema with its Java generator."""
    if jar is None or not jar.is_file():
        return True
    built = jar.stat().st_mtime
    protocol = repo / "python" / "slotwise" / "protocol"
    sources = [repo / "pom.xml", repo / module / "pom.xml", protocol / "schema.json", protocol / "java.py"]
    for d in (repo / module / "src" / "main", repo / "shim-link" / "src" / "main"):
        sources.extend(p for p in d.rglob("*") if p.is_file())
    return any(p.is_file() and p.stat().st_mtime > built for p in sources)


def build_shim(repo: Path, log: Log) -> Path:
    """The shim's jar, built with ``mvn package`` unless it is newer than
    its sources (a cluster, the demo or a test starting after a build)."""
    jar = find_shim_jar(repo)
    if not jar_is_stale(repo, jar, "java-shim"):
        return jar
    log("building the shim: mvn -q -B -f pom.xml package -DskipTests ...")
    run_maven(["-f", str(repo / "pom.xml"), "package", "-DskipTests"], repo, "building the shim")
    jar = find_shim_jar(repo)
    if not jar:
        raise ClusterError(f"mvn package built no java-shim/target/{SHIM_GLOB}")
    return jar
