"""``DIR/cluster.json``: what ``up`` started, for ``status``, ``submit`` and
``down`` in later processes. Written after every daemon starts, so a failed
``up`` still leaves enough behind for ``down``."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

STATE_VERSION = 1


@dataclass
class Daemon:
    name: str                   # rm, nm1, nm2...
    role: str                   # resourcemanager | nodemanager
    pid: int | None
    conf_dir: str
    log: str                    # log4j log
    out: str                    # stdout and stderr (JVM crashes land here)
    ports: dict[str, int]
    home: str                   # working directory; hadoop.tmp.dir is home/tmp
    node_id: str | None = None  # NodeManagers: host:port as the RM names the node
    argv: list[str] = field(default_factory=list)  # its command line, for a restart


@dataclass
class ClusterState:
    """For an MRv1 cluster (``kind == "mrv1"``) ``rm_web`` and ``rm_address``
    are the JobTracker's web UI and ``mapred.job.tracker``, ``classpath`` the
    Hadoop 1 jars in launch order (the webapps directory first),
    ``mapred_site`` the job client's and ``yarn_site`` empty."""

    dir: str
    repo: str
    java_home: str
    java_version: str
    hadoop_version: str
    scheduler: str
    rm_web: str                 # http://127.0.0.1:PORT
    rm_address: str             # localhost:PORT (yarn.resourcemanager.address)
    classpath: list[str]
    examples_jar: str | None
    tests_jar: str | None
    jvm_flags: list[str]
    mapred_site: dict[str, str]  # the job client's mapred-site.xml, before per-job values
    yarn_site: dict[str, str]    # the job client's yarn-site.xml
    shim_jar: str | None = None
    started: float = 0.0
    ready: bool = False         # true once every NodeManager was RUNNING
    daemons: list[Daemon] = field(default_factory=list)
    version: int = STATE_VERSION
    kind: str = "yarn"          # "yarn" (ResourceManager + NodeManagers) or "mrv1" (JobTracker + TaskTrackers)

    @property
    def nodemanagers(self) -> list[Daemon]:
        return [d for d in self.daemons if d.role == "nodemanager"]

    def daemon(self, name: str) -> Daemon:
        return next(d for d in self.daemons if d.name == name)

    def save(self, path: Path) -> None:
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=1) + "\n")
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: Path) -> "ClusterState | None":
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            return None
        # Fields a newer version added are ignored; those it lacks take their defaults.
        known = {f.name for f in fields(cls)}
        daemon_fields = {f.name for f in fields(Daemon)}
        daemons = [Daemon(**{k: v for k, v in d.items() if k in daemon_fields}) for d in data.pop("daemons", [])]
        return cls(**{k: v for k, v in data.items() if k in known}, daemons=daemons)
