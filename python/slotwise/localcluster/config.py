"""The generated configuration: Hadoop XML files and log4j properties.

Every daemon gets its own directory (``DIR/conf/rm``, ``DIR/conf/nm1``...)
with a complete ``core-site.xml``, ``yarn-site.xml``, ``mapred-site.xml`` and
``log4j.properties``; the job client gets one per submission. The property
sets are built here as plain dicts so tests and docs can look at them.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping
from xml.sax.saxutils import escape

FIFO_SCHEDULER = "org.apache.hadoop.yarn.server.resourcemanager.scheduler.fifo.FifoScheduler"
SHIM_SCHEDULER = "org.slotwise.shim.SlotwiseScheduler"

#: ``cluster up --scheduler`` short names; anything else is taken as a class name.
SCHEDULERS = {
    "slotwise": SHIM_SCHEDULER,
    "fifo": FIFO_SCHEDULER,
    "fair": "org.apache.hadoop.yarn.server.resourcemanager.scheduler.fair.FairScheduler",
    "capacity": "org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.CapacityScheduler",
}


def scheduler_class(name: str) -> str:
    """The RM's scheduler class for a short name or a class name."""
    text = name.strip()
    if text.lower() in SCHEDULERS:
        return SCHEDULERS[text.lower()]
    if not re.fullmatch(r"[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)+", text):
        raise ValueError(f"--scheduler: expected one of {', '.join(SCHEDULERS)} or a class name, got {name!r}")
    return text


def scheduler_name(cls: str) -> str:
    """A scheduler class as an operator knows it: its short name if it has one."""
    return next((k for k, v in SCHEDULERS.items() if v == cls), cls)

#: Host name every daemon advertises, and the address each binds to.
HOST = "localhost"
BIND = "127.0.0.1"

RM_PORTS = ("address", "scheduler", "resource_tracker", "admin", "webapp")
NM_PORTS = ("address", "localizer", "webapp", "shuffle")

#: System property on every JVM of a cluster (daemons and containers): how
#: ``down`` recognises its processes, and never anyone else's.
MARKER_PROPERTY = "slotwise.cluster.dir"

#: Seconds a cluster may take to start (YARN or MRv1, and `cluster up
#: --timeout`): a deadline for a hang; a loaded 2-core machine has needed six
#: minutes for a ResourceManager.
START_TIMEOUT = 600.0

#: Hadoop's default admin options for map and reduce JVMs.
_MR_ADMIN_DEFAULT = "-Djava.net.preferIPv4Stack=true -Dhadoop.metrics.log.level=WARN"


def marker(cluster_dir: Path) -> str:
    return f"-D{MARKER_PROPERTY}={cluster_dir}"


@dataclass
class Sizes:
    """Memory and CPU of the cluster: small, for a laptop or a 2-core CI box."""

    nm_memory_mb: int = 4096
    nm_vcores: int = 8  # memory, not vcores, is what binds 512 MB containers (the fair policy shares memory)
    min_allocation_mb: int = 256
    am_memory_mb: int = 512
    task_memory_mb: int = 512
    task_heap: str = "-Xmx384m"
    daemon_heap: str = "-Xmx512m"


@dataclass
class ClusterConfig:
    """What the XML files are made of."""

    cluster_dir: Path
    rm_ports: dict[str, int]
    scheduler: str = FIFO_SCHEDULER
    classpath: list[str] = field(default_factory=list)
    jvm_flags: list[str] = field(default_factory=list)
    sizes: Sizes = field(default_factory=Sizes)
    extra_yarn: dict[str, str] = field(default_factory=dict)
    http_secret: Path | None = None

    @property
    def rm_web(self) -> str:
        return f"http://{BIND}:{self.rm_ports['webapp']}"

    def rm_address(self) -> str:
        return f"{HOST}:{self.rm_ports['address']}"

    # -- core-site ---------------------------------------------------------

    def core_site(self, tmp_dir: Path) -> dict[str, str]:
        props = {
            "fs.defaultFS": "file:///",
            "hadoop.tmp.dir": str(tmp_dir),
            "hadoop.security.authentication": "simple",
        }
        if self.http_secret:
            # Else each web server warns that ~/hadoop-http-auth-signature-secret is missing.
            props["hadoop.http.authentication.signature.secret.file"] = str(self.http_secret)
        return props

    # -- yarn-site ---------------------------------------------------------

    def yarn_common(self) -> dict[str, str]:
        """What the ResourceManager, the NodeManagers and clients all see."""
        p = self.rm_ports
        s = self.sizes
        props = {
            "yarn.resourcemanager.hostname": HOST,
            "yarn.resourcemanager.address": f"{HOST}:{p['address']}",
            "yarn.resourcemanager.scheduler.address": f"{HOST}:{p['scheduler']}",
            "yarn.resourcemanager.resource-tracker.address": f"{HOST}:{p['resource_tracker']}",
            "yarn.resourcemanager.admin.address": f"{HOST}:{p['admin']}",
            "yarn.resourcemanager.webapp.address": f"{HOST}:{p['webapp']}",
            "yarn.resourcemanager.webapp.https.address": f"{HOST}:0",
            "yarn.resourcemanager.scheduler.class": self.scheduler,
            "yarn.scheduler.minimum-allocation-mb": str(s.min_allocation_mb),
            # Asks round up to a multiple of this under the FairScheduler and
            # Slotwise alike (their default, 1024, would make 512 MB asks 1 GB).
            "yarn.resource-types.memory-mb.increment-allocation": str(s.min_allocation_mb),
            "yarn.scheduler.maximum-allocation-mb": str(s.nm_memory_mb),
            "yarn.scheduler.minimum-allocation-vcores": "1",
            "yarn.scheduler.maximum-allocation-vcores": str(s.nm_vcores),
            # Work-preserving RM restart (slotwise cluster restart-rm): running
            # containers survive; NodeManagers and AMs find the new RM within
            # a second, not Hadoop's default 30 s between tries.
            "yarn.resourcemanager.recovery.enabled": "true",
            "yarn.resourcemanager.work-preserving-recovery.enabled": "true",
            "yarn.resourcemanager.connect.retry-interval.ms": "1000",
            "yarn.log-aggregation-enable": "false",
            "yarn.timeline-service.enabled": "false",
            "yarn.nodemanager.aux-services": "mapreduce_shuffle",
            "yarn.nodemanager.aux-services.mapreduce_shuffle.class": "org.apache.hadoop.mapred.ShuffleHandler",
            # Containers find Hadoop in the same jars as the daemons (no HADOOP_HOME).
            "yarn.application.classpath": ",".join(self.classpath),
        }
        return props

    def rm_yarn_site(self) -> dict[str, str]:
        shim = {}
        if self.scheduler == SHIM_SCHEDULER:
            # Job priorities reach Python (YARN caps them at 0 by default).
            shim = {"yarn.cluster.max-application-priority": "10"}
        return {
            **self.yarn_common(),
            "yarn.resourcemanager.bind-host": BIND,
            # The state store a restarted RM recovers from (up clears it with the RM's home).
            "yarn.resourcemanager.store.class":
                "org.apache.hadoop.yarn.server.resourcemanager.recovery.FileSystemRMStateStore",
            "yarn.resourcemanager.fs.state-store.uri": (self.cluster_dir / "rm" / "state-store").as_uri(),
            **shim,
            **self.extra_yarn,
        }

    def nm_yarn_site(self, ports: Mapping[str, int], home: Path) -> dict[str, str]:
        s = self.sizes
        return {
            **self.yarn_common(),
            "yarn.nodemanager.hostname": HOST,
            "yarn.nodemanager.bind-host": BIND,
            "yarn.nodemanager.address": f"{HOST}:{ports['address']}",
            "yarn.nodemanager.localizer.address": f"{HOST}:{ports['localizer']}",
            "yarn.nodemanager.webapp.address": f"{HOST}:{ports['webapp']}",
            "yarn.nodemanager.webapp.https.address": f"{HOST}:0",
            "yarn.nodemanager.local-dirs": str(home / "local"),
            "yarn.nodemanager.log-dirs": str(home / "logs"),
            "yarn.nodemanager.resource.memory-mb": str(s.nm_memory_mb),
            "yarn.nodemanager.resource.cpu-vcores": str(s.nm_vcores),
            "yarn.nodemanager.resource.detect-hardware-capabilities": "false",
            "yarn.nodemanager.pmem-check-enabled": "false",
            "yarn.nodemanager.vmem-check-enabled": "false",
            "yarn.nodemanager.container-executor.class":
                "org.apache.hadoop.yarn.server.nodemanager.DefaultContainerExecutor",
            "yarn.nodemanager.recovery.enabled": "false",
            # A full disk must not mark the node unhealthy on a developer's machine.
            "yarn.nodemanager.disk-health-checker.disk-utilization-threshold.enabled": "false",
            "yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage": "99.9",
            "yarn.nodemanager.disk-health-checker.disk-free-space-threshold.enabled": "false",
            "yarn.nodemanager.disk-health-checker.min-free-space-per-disk-mb": "0",
            **self.extra_yarn,
        }

    def nm_mapred_site(self, ports: Mapping[str, int]) -> dict[str, str]:
        # The ShuffleHandler (an aux service inside the NodeManager) reads its
        # port from mapred-site: mapred-default.xml loads after yarn-site.xml
        # and would override a yarn-site value with 13562.
        return {**self.mapred_site(self.cluster_dir / "staging"), "mapreduce.shuffle.port": str(ports["shuffle"])}

    # -- mapred-site -------------------------------------------------------

    def mapred_site(self, staging: Path) -> dict[str, str]:
        s = self.sizes
        jpms = " ".join([*self.jvm_flags, marker(self.cluster_dir)])
        return {
            "mapreduce.framework.name": "yarn",
            "yarn.app.mapreduce.am.staging-dir": str(staging),
            "mapreduce.application.classpath": ",".join(self.classpath),
            "mapreduce.job.ubertask.enable": "false",
            "yarn.app.mapreduce.am.resource.mb": str(s.am_memory_mb),
            "yarn.app.mapreduce.am.command-opts": s.task_heap,
            "yarn.app.mapreduce.am.admin-command-opts": jpms,
            "mapreduce.map.memory.mb": str(s.task_memory_mb),
            "mapreduce.reduce.memory.mb": str(s.task_memory_mb),
            "mapreduce.map.java.opts": s.task_heap,
            "mapreduce.reduce.java.opts": s.task_heap,
            "mapreduce.admin.map.child.java.opts": f"{_MR_ADMIN_DEFAULT} {jpms}",
            "mapreduce.admin.reduce.child.java.opts": f"{_MR_ADMIN_DEFAULT} {jpms}",
            "mapreduce.task.io.sort.mb": "64",
            "mapreduce.client.completion.pollinterval": "500",
            "mapreduce.client.progressmonitor.pollinterval": "1000",
        }


# -- files -----------------------------------------------------------------

def hadoop_xml(props: Mapping[str, str]) -> str:
    lines = ['<?xml version="1.0" encoding="UTF-8"?>',
             "<!-- Generated by slotwise cluster; rewritten by every `up`. -->",
             "<configuration>"]
    for name, value in props.items():
        lines.append(f"  <property><name>{escape(name)}</name><value>{escape(str(value))}</value></property>")
    lines.append("</configuration>")
    return "\n".join(lines) + "\n"


def log4j_properties(log_file: Path | None, level: str = "INFO") -> str:
    """A reload4j configuration: to ``log_file``, or to stderr when None."""
    if log_file is None:
        appender = [
            "log4j.appender.A=org.apache.log4j.ConsoleAppender",
            "log4j.appender.A.Target=System.err",
            "log4j.appender.A.layout=org.apache.log4j.PatternLayout",
            "log4j.appender.A.layout.ConversionPattern=%d{HH:mm:ss} %-5p %c{1}: %m%n",
        ]
    else:
        appender = [
            "log4j.appender.A=org.apache.log4j.RollingFileAppender",
            f"log4j.appender.A.File={log_file}",
            "log4j.appender.A.MaxFileSize=64MB",
            "log4j.appender.A.MaxBackupIndex=3",
            "log4j.appender.A.layout=org.apache.log4j.PatternLayout",
            "log4j.appender.A.layout.ConversionPattern=%d{ISO8601} %-5p [%t] %c{2}: %m%n",
        ]
    return "\n".join([
        "# Generated by slotwise cluster.",
        f"log4j.rootLogger={level}, A",
        *appender,
        "log4j.logger.org.apache.hadoop.util.NativeCodeLoader=ERROR",
        "log4j.logger.org.apache.hadoop.conf.Configuration.deprecation=WARN",
        "log4j.logger.org.apache.hadoop.metrics2=WARN",
        "log4j.logger.org.eclipse.jetty=WARN",
        "",
    ])


def write_conf_dir(conf_dir: Path, *, core: Mapping[str, str], yarn: Mapping[str, str],
                   mapred: Mapping[str, str], log_file: Path | None) -> None:
    conf_dir.mkdir(parents=True, exist_ok=True)
    files = {
        "core-site.xml": hadoop_xml(core),
        "yarn-site.xml": hadoop_xml(yarn),
        "mapred-site.xml": hadoop_xml(mapred),
        "log4j.properties": log4j_properties(log_file),
    }
    for name, text in files.items():
        tmp = conf_dir / f".{name}.tmp"
        tmp.write_text(text)
        os.replace(tmp, conf_dir / name)


def parse_conf_pairs(pairs: list[str] | None) -> dict[str, str]:
    """``["k=v", ...]`` (the CLI's repeated ``--conf``) as a dict."""
    out = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"expected KEY=VALUE, got {pair!r}")
        out[key.strip()] = value
    return out
