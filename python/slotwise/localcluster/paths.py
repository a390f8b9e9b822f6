"""Where the project is and where a cluster lives on disk.

Everything of one cluster is under one directory (``DIR``)::

    DIR/.slotwise-cluster     marks DIR as a cluster directory (up refuses others)
    DIR/cluster.json          state: pids, ports, directories (absent when down)
    DIR/cache/                Maven-resolved classpath and extra jars (kept by up)
    DIR/conf/<daemon>/        generated core-site, yarn-site, mapred-site, log4j
    DIR/logs/<daemon>.log     the daemon's log4j log; <daemon>.out its stdout/stderr
    DIR/<daemon>/             hadoop.tmp.dir; for NodeManagers local-dirs and
                              log-dirs (container logs: DIR/nmK/logs/application_*/);
                              an MRv1 cluster's are jt/ and ttK/ (see mrv1.py)
    DIR/jobs/<id>/            one per ``submit``: client conf, staging, client.log
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .errors import ClusterError

#: Overrides the default cluster directory.
DIR_ENV = "SLOTWISE_CLUSTER_DIR"
#: Points at the project checkout when it cannot be found otherwise.
REPO_ENV = "SLOTWISE_REPO"


def _is_repo(path: Path) -> bool:
    return (path / "java-shim" / "pom.xml").is_file() and (path / "pom.xml").is_file()


def find_repo(start: Path | None = None, *, required: bool = True) -> Path | None:
    """The project checkout: ``$SLOTWISE_REPO``, else the nearest directory at
    or above ``start`` (default: the working directory) holding
    ``java-shim/pom.xml``, else the checkout this package was installed from
    (an editable install)."""
    env = os.environ.get(REPO_ENV)
    if env:
        path = Path(env).resolve()
        if not _is_repo(path):
            raise ClusterError(f"{REPO_ENV}={env} has no pom.xml and java-shim/pom.xml")
        return path
    here = (start or Path.cwd()).resolve()
    for path in (here, *here.parents):
        if _is_repo(path):
            return path
    installed = Path(__file__).resolve().parents[3]
    if _is_repo(installed):
        return installed
    if required:
        raise ClusterError(
            "cannot find the Slotwise checkout (a directory with pom.xml and java-shim/pom.xml): "
            f"run from inside it or set {REPO_ENV}")
    return None


def default_cluster_dir() -> Path:
    """``$SLOTWISE_CLUSTER_DIR``, else ``run/cluster`` in the checkout (ignored
    by git), else ``run/cluster`` under the working directory."""
    env = os.environ.get(DIR_ENV)
    if env:
        return Path(env).resolve()
    repo = find_repo(required=False)
    return (repo if repo else Path.cwd().resolve()) / "run" / "cluster"


@dataclass(frozen=True)
class Layout:
    """The paths of one cluster directory."""

    root: Path

    @property
    def state_file(self) -> Path:
        return self.root / "cluster.json"

    @property
    def tag(self) -> Path:
        """Marks a directory as a cluster directory, which ``up`` may clear."""
        return self.root / ".slotwise-cluster"

    @property
    def cache(self) -> Path:
        return self.root / "cache"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def jobs(self) -> Path:
        return self.root / "jobs"

    def conf(self, daemon: str) -> Path:
        return self.root / "conf" / daemon

    def home(self, daemon: str) -> Path:
        """The daemon's working directory and hadoop.tmp.dir parent."""
        return self.root / daemon

    def log(self, daemon: str) -> Path:
        return self.logs / f"{daemon}.log"

    def out(self, daemon: str) -> Path:
        return self.logs / f"{daemon}.out"

    def run_dirs(self) -> list[Path]:
        """What ``up`` clears from a previous run (never the cache)."""
        dirs = [self.root / "conf", self.logs, self.jobs, self.root / "staging", self.home("rm"), self.home("jt")]
        dirs += sorted(p for p in self.root.glob("nm[0-9]*") if p.is_dir())
        dirs += sorted(p for p in self.root.glob("tt[0-9]*") if p.is_dir())  # an MRv1 cluster's (mrv1.py)
        return dirs
