"""YARN 3.5's own FairScheduler as a reference: tests/java/YarnFairReference.java
compiled against the Hadoop jars of java-shim/pom.xml (resolved by Maven, as
the local cluster does) and run as one long-lived JVM that answers one JSON
request per line."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from slotwise.localcluster.classpath import jar_cache, resolve
from slotwise.localcluster.jvm import find_java
from support import skip_without_java

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "tests" / "java" / "YarnFairReference.java"
MAIN = "org.apache.hadoop.yarn.server.resourcemanager.scheduler.fair.YarnFairReference"
CACHE = ROOT / "run" / "yarn-reference"


class YarnReference:
    """ask(file, memory_mb, vcores, active) -> YARN's verdict, queues and warnings;
    place(file, groups, apps) -> where YARN puts each app (or why not)."""

    def __init__(self) -> None:
        java = find_java()
        jars = resolve(ROOT, jar_cache(ROOT), log=lambda msg: None)
        classes = CACHE / ("classes-" + hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:12])
        cp = os.pathsep.join(jars.classpath)
        if not (classes / "done").exists():
            classes.mkdir(parents=True, exist_ok=True)
            subprocess.run([str(java.home / "bin" / "javac"), "-nowarn", "-encoding", "UTF-8", "-d", str(classes),
                            "-cp", cp, str(SOURCE)], check=True, capture_output=True, text=True)
            (classes / "done").touch()
        self._files = Path(tempfile.mkdtemp(prefix="yarnref-"))
        self._n = 0
        self._err = open(self._files / "stderr.txt", "w")
        self.proc = subprocess.Popen([str(java.exe), "-Xmx512m", "-XX:TieredStopAtLevel=1", "-Xshare:auto",
                                      "-cp", os.pathsep.join([str(classes), cp]), MAIN],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._err, text=True,
                                     bufsize=1)

    def ask(self, xml: str, memory_mb: int = 0, vcores: int = 0, active: list[str] | tuple[str, ...] = ()) -> dict:
        return self._request(xml, {"memory_mb": memory_mb, "vcores": vcores, "active": list(active)})

    def place(self, xml: str, groups: dict[str, list[str]], apps: list[tuple[str, str | None]]) -> dict:
        """Each (user, requested queue or None) in turn, as the RM submits it:
        ``placements`` rows hold ``queue`` (where the rules put it), ``existed``
        (false: YARN created it) and ``configured`` (declared in the file),
        and ``rejected`` (why) if YARN refused the app; then ``queue`` only if
        a rule placed it (the queue was no leaf, could not be made, or its
        ACLs said no). Users' groups come only from ``groups``."""
        apps = [{"user": user, "queue": queue} for user, queue in apps]
        return self._request(xml, {"place": {"groups": groups, "apps": apps}})

    def _request(self, xml: str, fields: dict) -> dict:
        self._n += 1
        path = self._files / f"case-{self._n}.xml"
        path.write_text(xml)
        self.proc.stdin.write(json.dumps({"file": str(path), **fields}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the YARN reference JVM died; see {self._err.name}")
        answer = json.loads(line)
        if "helper_error" in answer:
            raise RuntimeError(f"the YARN reference failed: {answer['helper_error']}")
        answer["warnings"] = [w for w in answer.get("warnings", []) if "native-hadoop" not in w]
        return answer

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self._err.close()
        shutil.rmtree(self._files, ignore_errors=True)


#: Generated cases per differential test. Each costs YARN's FairScheduler a
#: fresh initialisation (about 2 s on a loaded 2-core machine), so `make test`
#: runs 60, derandomised; set SLOTWISE_YARN_EXAMPLES for a longer search.
EXAMPLES = int(os.environ.get("SLOTWISE_YARN_EXAMPLES", "60"))


@pytest.fixture(scope="module")
def yarn():
    """The reference for one test module (skipped, saying why, without a JDK or Maven)."""
    skip_without_java("YARN reference")
    ref = YarnReference()
    yield ref
    ref.close()
