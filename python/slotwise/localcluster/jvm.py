"""Which JDK runs the cluster, and the flags every Hadoop JVM needs on it.

Hadoop reflects into JDK internals (``java.lang``, ``java.util``,
``java.nio``...). From JDK 16 on those packages are closed unless opened on
the command line, so each daemon, the job client and every MapReduce
container JVM gets the ``--add-opens`` list that Hadoop's own launch scripts
pass (``hadoop_finalize_jpms_opts`` in ``hadoop-functions.sh``, kept in sync
with ``extraJavaTestArgs`` in ``hadoop-project/pom.xml``), plus the two
``--add-exports`` the NodeManager adds to containers on JDK 17+.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .errors import ClusterError

#: Overrides JAVA_HOME for the cluster only.
JAVA_HOME_ENV = "SLOTWISE_JAVA_HOME"

#: The module flags of Hadoop 3.4/3.5's launch scripts (JDK 9+).
ADD_OPENS = (
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
    "--add-opens=java.base/java.math=ALL-UNNAMED",
    "--add-opens=java.base/java.net=ALL-UNNAMED",
    "--add-opens=java.base/java.text=ALL-UNNAMED",
    "--add-opens=java.base/java.util=ALL-UNNAMED",
    "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
    "--add-opens=java.base/java.util.zip=ALL-UNNAMED",
    "--add-opens=java.base/sun.security.util=ALL-UNNAMED",
    "--add-opens=java.base/sun.security.x509=ALL-UNNAMED",
    "--add-exports=java.base/sun.net.dns=ALL-UNNAMED",
    "--add-exports=java.base/sun.net.util=ALL-UNNAMED",
)

#: For every JVM of a local cluster (daemons, job clients, task containers):
#: they live minutes, not days, on a laptop-sized machine, so the C1 compiler
#: alone and the serial collector (no compiler or GC threads racing the
#: daemons for two cores) start them in about two thirds of the CPU time.
FAST_START = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")

#: Lowest JDK the cluster starts on; Hadoop 3.5 itself needs 17.
MIN_MAJOR = 11


@dataclass(frozen=True)
class Java:
    home: Path
    version: str

    @property
    def exe(self) -> Path:
        return self.home / "bin" / "java"

    @property
    def major(self) -> int:
        return java_major(self.version)

    def flags(self) -> list[str]:
        """The flags of every Hadoop JVM on this JDK: FAST_START, the JPMS
        ones (from JDK 9 on) and IPv4 (as Hadoop's scripts do)."""
        if self.major < 9:
            return [*FAST_START, "-Djava.net.preferIPv4Stack=true"]
        flags = ["-XX:+IgnoreUnrecognizedVMOptions", *FAST_START, *ADD_OPENS]
        if self.major >= 17:
            flags.append("--enable-native-access=ALL-UNNAMED")
        return [*flags, "-Djava.net.preferIPv4Stack=true"]


def java_major(version: str) -> int:
    """17 for "17.0.15", 8 for "1.8.0_402"."""
    m = re.match(r"(\d+)(?:\.(\d+))?", version)
    if not m:
        raise ValueError(f"not a Java version: {version!r}")
    first = int(m.group(1))
    return int(m.group(2) or 0) if first == 1 else first


def _probe(exe: Path) -> Java:
    try:
        out = subprocess.run([str(exe), "-XshowSettings:properties", "-version"],
                             capture_output=True, text=True, timeout=60)
    except OSError as e:
        raise ClusterError(f"cannot run {exe}: {e}") from None
    text = out.stderr + out.stdout
    home = re.search(r"^\s*java\.home = (.+)$", text, re.M)
    version = re.search(r"^\s*java\.version = (.+)$", text, re.M)
    if out.returncode != 0 or not home or not version:
        raise ClusterError(f"{exe} -version failed:\n{text.strip()}")
    return Java(Path(home.group(1).strip()), version.group(1).strip())


def find_java(java_home: str | os.PathLike | None = None) -> Java:
    """The JDK to use: ``java_home`` if given, else ``$SLOTWISE_JAVA_HOME``,
    else ``$JAVA_HOME``, else ``java`` on the PATH."""
    for home in (java_home, os.environ.get(JAVA_HOME_ENV), os.environ.get("JAVA_HOME")):
        if home:
            exe = Path(home) / "bin" / "java"
            if not exe.is_file():
                raise ClusterError(f"no bin/java under {home}")
            break
    else:
        found = shutil.which("java")
        if not found:
            raise ClusterError("no JDK found: install OpenJDK 17 or set JAVA_HOME")
        exe = Path(found).resolve()
    java = _probe(exe)
    if java.major < MIN_MAJOR:
        raise ClusterError(f"{java.exe} is Java {java.version}; the local cluster needs Java {MIN_MAJOR} or newer (17 recommended)")
    return java


def check_compatible(java: Java, hadoop_version: str) -> None:
    """Refuse pairs known not to work, before starting anything."""
    nums = tuple(int(x) for x in re.findall(r"\d+", hadoop_version)[:2])
    if nums >= (3, 5) and java.major < 17:
        raise ClusterError(f"Hadoop {hadoop_version} needs Java 17 or newer; {java.exe} is {java.version}")
    if nums < (3, 5) and java.major >= 23:
        raise ClusterError(
            f"Hadoop {hadoop_version} does not run on Java {java.version}: it calls Subject.getSubject, "
            "which throws from Java 23 on. Use JDK 17 (--java-home or JAVA_HOME) or Hadoop 3.5")
