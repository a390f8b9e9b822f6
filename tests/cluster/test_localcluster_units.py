"""The local cluster's parts that need neither Java nor Maven: generated
configuration, ports, the classpath cache, process handling, the CLI."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from slotwise.cli import build_parser, main
from slotwise.localcluster import process
from slotwise.localcluster.classpath import jar_is_stale, resolve
from slotwise.localcluster.config import (FIFO_SCHEDULER, SHIM_SCHEDULER, ClusterConfig, hadoop_xml,
                                          log4j_properties, marker, parse_conf_pairs,
                                          scheduler_class, scheduler_name, write_conf_dir)
from slotwise.localcluster.jvm import ADD_OPENS, FAST_START, Java, java_major
from slotwise.localcluster.ports import free_ports
from support import read_hadoop_xml

RM = {"address": 1001, "scheduler": 1002, "resource_tracker": 1003, "admin": 1004, "webapp": 1005}
NM = {"address": 2001, "localizer": 2002, "webapp": 2003, "shuffle": 2004}


def config(tmp_path, **kw):
    return ClusterConfig(tmp_path, RM, classpath=["/j/a.jar", "/j/b.jar"],
                         jvm_flags=["--add-opens=java.base/java.lang=ALL-UNNAMED"], **kw)


def test_xml_round_trip_escapes(tmp_path):
    props = {"a.b": "x<y&z", "empty": "", "list": "p,q"}
    path = tmp_path / "site.xml"
    path.write_text(hadoop_xml(props))
    assert read_hadoop_xml(path) == props


def test_resourcemanager_site(tmp_path):
    site = config(tmp_path, extra_yarn={"yarn.scheduler.minimum-allocation-mb": "128", "x.y": "1"}).rm_yarn_site()
    assert site["yarn.resourcemanager.address"] == "localhost:1001"
    assert site["yarn.resourcemanager.webapp.address"] == "localhost:1005"
    assert site["yarn.resourcemanager.bind-host"] == "127.0.0.1"
    assert site["yarn.resourcemanager.scheduler.class"] == FIFO_SCHEDULER
    assert site["yarn.application.classpath"] == "/j/a.jar,/j/b.jar"
    # --conf wins over the defaults.
    assert site["yarn.scheduler.minimum-allocation-mb"] == "128" and site["x.y"] == "1"


def test_nodemanager_sites_have_their_own_ports_and_dirs(tmp_path):
    cfg = config(tmp_path)
    yarn = cfg.nm_yarn_site(NM, tmp_path / "nm1")
    assert yarn["yarn.nodemanager.address"] == "localhost:2001"
    assert yarn["yarn.nodemanager.localizer.address"] == "localhost:2002"
    assert yarn["yarn.nodemanager.webapp.address"] == "localhost:2003"
    assert yarn["yarn.nodemanager.bind-host"] == "127.0.0.1"
    assert yarn["yarn.nodemanager.local-dirs"] == str(tmp_path / "nm1" / "local")
    assert yarn["yarn.nodemanager.container-executor.class"].endswith(".DefaultContainerExecutor")
    assert yarn["yarn.nodemanager.disk-health-checker.disk-utilization-threshold.enabled"] == "false"
    # mapred-default.xml loads after yarn-site.xml: the shuffle port must be in mapred-site.
    assert "mapreduce.shuffle.port" not in yarn
    assert cfg.nm_mapred_site(NM)["mapreduce.shuffle.port"] == "2004"


def test_mapreduce_containers_get_flags_marker_classpath_and_small_memory(tmp_path):
    mapred = config(tmp_path).mapred_site(tmp_path / "staging")
    assert mapred["mapreduce.framework.name"] == "yarn"
    assert mapred["mapreduce.application.classpath"] == "/j/a.jar,/j/b.jar"
    # Hadoop drops an empty <value>: the job client is told on its command line (jobs.NO_HISTORY_SERVER).
    assert "mapreduce.jobhistory.address" not in mapred
    for key in ("yarn.app.mapreduce.am.admin-command-opts", "mapreduce.admin.map.child.java.opts",
                "mapreduce.admin.reduce.child.java.opts"):
        assert "--add-opens=java.base/java.lang=ALL-UNNAMED" in mapred[key]
        assert marker(tmp_path) in mapred[key]
    assert mapred["yarn.app.mapreduce.am.resource.mb"] == "512"
    assert mapred["mapreduce.map.java.opts"] == "-Xmx384m"


def test_conf_dir_and_log4j(tmp_path):
    write_conf_dir(tmp_path / "c", core={"fs.defaultFS": "file:///"}, yarn={}, mapred={},
                   log_file=tmp_path / "rm.log")
    assert sorted(p.name for p in (tmp_path / "c").iterdir()) == [
        "core-site.xml", "log4j.properties", "mapred-site.xml", "yarn-site.xml"]
    assert f"log4j.appender.A.File={tmp_path / 'rm.log'}" in (tmp_path / "c" / "log4j.properties").read_text()
    assert "ConsoleAppender" in log4j_properties(None)


def test_parse_conf_pairs():
    assert parse_conf_pairs(["a=1", "b=x=y", "c="]) == {"a": "1", "b": "x=y", "c": ""}
    with pytest.raises(ValueError):
        parse_conf_pairs(["novalue"])


def test_free_ports_are_distinct():
    ports = free_ports(30)
    assert len(set(ports)) == 30 and all(0 < p < 65536 for p in ports)


def test_java_versions_and_flags():
    assert java_major("17.0.15") == 17 and java_major("1.8.0_402") == 8 and java_major("25") == 25
    flags = Java(Path("/jdk"), "17.0.15").flags()
    assert "--add-opens=java.base/java.lang=ALL-UNNAMED" in flags and set(ADD_OPENS) <= set(flags)
    assert Java(Path("/jdk"), "1.8.0_402").flags() == [*FAST_START, "-Djava.net.preferIPv4Stack=true"]
    assert set(FAST_START) <= set(flags)


# -- the classpath cache, with a fake Maven ---------------------------------

FAKE_MVN = textwrap.dedent("""\
    #!{python}
    import os, sys
    jars = os.environ["FAKE_JARS"]
    with open(os.environ["FAKE_LOG"], "a") as f:
        f.write(" ".join(sys.argv[1:]) + "\\n")
    for a in sys.argv[1:]:
        if a.startswith("-Dmdep.outputFile="):
            names = ["hadoop-common-3.4.2.jar", "hadoop-mapreduce-client-jobclient-3.4.2.jar",
                     "hadoop-mapreduce-examples-3.4.2.jar"]
            for n in names:
                open(os.path.join(jars, n), "w").close()
            open(a.split("=", 1)[1], "w").write(":".join(os.path.join(jars, n) for n in names))
        if a.startswith("-Dartifact="):
            g, art, v, *rest = a.split("=", 1)[1].split(":")
            out = next(x.split("=", 1)[1] for x in sys.argv if x.startswith("-DoutputDirectory="))
            os.makedirs(out, exist_ok=True)
            open(os.path.join(out, f"{art}-{v}" + (f"-{rest[1]}" if len(rest) > 1 else "") + ".jar"), "w").close()
""")


@pytest.fixture
def fake_repo(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    (repo / "java-shim").mkdir(parents=True)
    (repo / "pom.xml").write_text("<project>parent</project>")
    (repo / "java-shim" / "pom.xml").write_text("<project>shim</project>")
    mvn = tmp_path / "mvn"
    mvn.write_text(FAKE_MVN.replace("{python}", sys.executable))
    mvn.chmod(mvn.stat().st_mode | stat.S_IEXEC)
    (tmp_path / "jars").mkdir()
    monkeypatch.setenv("SLOTWISE_MVN", str(mvn))
    monkeypatch.setenv("FAKE_JARS", str(tmp_path / "jars"))
    monkeypatch.setenv("FAKE_LOG", str(tmp_path / "mvn.log"))
    return repo


def test_classpath_is_cached_until_a_pom_changes(fake_repo, tmp_path):
    cache = tmp_path / "cache"
    calls = lambda: (tmp_path / "mvn.log").read_text().count("build-classpath")  # noqa: E731
    jars = resolve(fake_repo, cache, lambda m: None)
    assert jars.hadoop_version == "3.4.2"
    assert jars.examples_jar.endswith("hadoop-mapreduce-examples-3.4.2.jar")
    assert jars.tests_jar.endswith("hadoop-mapreduce-client-jobclient-3.4.2-tests.jar")
    # The RM's web app needs the timeline service jar; the pom lacks it, so it was fetched.
    assert any(j.endswith("hadoop-yarn-server-timelineservice-3.4.2.jar") for j in jars.classpath)
    assert calls() == 1
    assert resolve(fake_repo, cache, lambda m: None).classpath == jars.classpath
    assert calls() == 1
    (fake_repo / "java-shim" / "pom.xml").write_text("<project>shim, changed</project>")
    resolve(fake_repo, cache, lambda m: None)
    assert calls() == 2
    (fake_repo / "pom.xml").write_text("<project>parent, changed</project>")
    resolve(fake_repo, cache, lambda m: None)
    assert calls() == 3


# -- processes -----------------------------------------------------------------

def test_stop_only_touches_marked_processes(tmp_path):
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
    ours = subprocess.Popen([*sleeper, marker(tmp_path)])
    other = subprocess.Popen([*sleeper, marker(tmp_path / "elsewhere")])
    try:
        deadline = time.monotonic() + 10
        while not process.is_ours(ours.pid, tmp_path) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert process.is_ours(ours.pid, tmp_path)
        assert not process.is_ours(other.pid, tmp_path)
        assert ours.pid in process.find_ours(tmp_path)
        graceful, killed = process.stop([ours.pid, other.pid], tmp_path, timeout=5,
                                        children={ours.pid: ours})
        assert graceful == [ours.pid] and killed == []
        assert ours.poll() is not None
        assert other.poll() is None
        assert not process.is_ours(ours.pid, tmp_path)
    finally:
        ours.kill()
        other.kill()
        ours.wait()
        other.wait()


# -- CLI -----------------------------------------------------------------------

def test_cli_parses_cluster_commands():
    p = build_parser()
    a = p.parse_args(["cluster", "up", "--nodes", "3", "--conf", "a=b", "--conf", "c=d", "--dir", "/x"])
    assert (a.nodes, a.conf, a.dir, a.scheduler) == (3, ["a=b", "c=d"], "/x", "slotwise")
    a = p.parse_args(["cluster", "yarn", "--dir", "/x", "--", "queue", "-status", "root.prod"])
    assert (a.dir, a.args) == ("/x", ["--", "queue", "-status", "root.prod"])
    a = p.parse_args(["cluster", "submit", "--queue", "prod", "--user", "ann", "--", "pi", "2", "10"])
    assert (a.queue, a.user, a.program) == ("prod", "ann", ["--", "pi", "2", "10"])
    a = p.parse_args(["cluster", "submit", "--queue", "prod", "--", "sleep", "-m", "2", "-mt", "500"])
    assert a.program == ["--", "sleep", "-m", "2", "-mt", "500"]


def test_cli_status_and_down_without_a_cluster(tmp_path, capsys):
    assert main(["cluster", "status", "--dir", str(tmp_path)]) == 1
    assert "no cluster" in capsys.readouterr().out
    assert main(["cluster", "status", "--dir", str(tmp_path), "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["running"] is False
    assert main(["cluster", "down", "--dir", str(tmp_path)]) == 0
    assert main(["cluster", "down", "--dir", str(tmp_path)]) == 0


def test_cli_submit_needs_a_program_and_a_cluster(tmp_path, capsys):
    assert main(["cluster", "submit", "--dir", str(tmp_path), "--queue", "p", "--"]) == 2
    assert main(["cluster", "submit", "--dir", str(tmp_path), "--queue", "p", "--", "pi", "1", "1"]) == 1
    assert "no cluster in" in capsys.readouterr().err


def test_cli_up_rejects_bad_conf(tmp_path, capsys):
    assert main(["cluster", "up", "--dir", str(tmp_path), "--conf", "oops"]) == 2
    assert "KEY=VALUE" in capsys.readouterr().err
    assert main(["cluster", "up", "--dir", str(tmp_path), "--scheduler", "fiar"]) == 2
    err = capsys.readouterr().err
    assert "--scheduler" in err and "slotwise, fifo, fair, capacity" in err and "'fiar'" in err
    assert not (tmp_path / "cluster.json").exists()


def test_scheduler_short_names_and_class_names():
    assert scheduler_class("slotwise") == SHIM_SCHEDULER
    assert scheduler_class("FIFO") == FIFO_SCHEDULER
    assert scheduler_class("fair").endswith(".fair.FairScheduler")
    assert scheduler_class("capacity").endswith(".capacity.CapacityScheduler")
    assert scheduler_class(" com.example.MyScheduler ") == "com.example.MyScheduler"
    for bad in ("", "MyScheduler", "com.example.", "a b.C"):
        with pytest.raises(ValueError, match="--scheduler"):
            scheduler_class(bad)
    assert scheduler_name(FIFO_SCHEDULER) == "fifo" and scheduler_name("x.Y") == "x.Y"


def test_cli_yarn_needs_a_known_command_and_a_cluster(tmp_path, capsys):
    assert main(["cluster", "yarn", "--dir", str(tmp_path), "--"]) == 2
    assert "queue -status" in capsys.readouterr().err
    assert main(["cluster", "yarn", "--dir", str(tmp_path), "--", "jar", "x.jar"]) == 2
    capsys.readouterr()
    assert main(["cluster", "yarn", "--dir", str(tmp_path), "--", "node", "-list"]) == 1
    assert "no cluster in" in capsys.readouterr().err


def test_validate_and_shares_are_still_there():
    p = build_parser()
    assert p.parse_args(["validate", "x.xml"]).files == ["x.xml"]
    assert p.parse_args(["shares", "--allocations", "a.xml", "--capacity", "10"]).capacity is not None


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="needs /proc")
def test_cmdline_of_a_missing_pid_is_none():
    assert process.cmdline(2 ** 22 + 12345) is None


def test_up_refuses_a_directory_that_is_not_a_cluster_directory(tmp_path):
    from slotwise.localcluster import ClusterError, LocalCluster

    (tmp_path / "precious.txt").write_text("keep me")
    with pytest.raises(ClusterError, match="neither empty nor a cluster directory"):
        LocalCluster(tmp_path).up()
    assert (tmp_path / "precious.txt").read_text() == "keep me"


def test_a_shim_jar_is_rebuilt_only_when_a_source_or_pom_is_newer(tmp_path):
    repo = tmp_path
    for f in ("pom.xml", "java-shim/pom.xml", "java-shim/src/main/java/A.java", "shim-link/src/main/java/L.java",
              "java-shim/src/test/java/ATest.java"):
        (repo / f).parent.mkdir(parents=True, exist_ok=True)
        (repo / f).write_text("x")
        os.utime(repo / f, (1000, 1000))
    jar = repo / "java-shim" / "target" / "slotwise-shim-0.1.0.jar"
    assert jar_is_stale(repo, None, "java-shim") and jar_is_stale(repo, jar, "java-shim")  # none built
    jar.parent.mkdir(parents=True)
    jar.write_text("jar")
    os.utime(jar, (2000, 2000))
    assert not jar_is_stale(repo, jar, "java-shim")
    os.utime(repo / "java-shim/src/test/java/ATest.java", (3000, 3000))  # tests are not in the jar
    assert not jar_is_stale(repo, jar, "java-shim")
    for f in ("java-shim/src/main/java/A.java", "shim-link/src/main/java/L.java", "pom.xml"):
        os.utime(repo / f, (3000, 3000))
        assert jar_is_stale(repo, jar, "java-shim"), f
        os.utime(repo / f, (1000, 1000))


def test_serve_waiting_for_a_gateway_says_why_from_the_clusters_state(tmp_path):
    """The RM alive with another scheduler, alive with the shim but no gateway
    file yet, and down: three answers (the state file as `up` writes it)."""
    from slotwise.bridge.server import _why_local
    from slotwise.localcluster import FIFO_SCHEDULER, SHIM_SCHEDULER
    from slotwise.localcluster.config import marker
    from slotwise.localcluster.state import ClusterState, Daemon

    rm = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", marker(tmp_path)])
    try:
        state = ClusterState(dir=str(tmp_path), repo="", java_home="", java_version="17.0.15",
                             hadoop_version="3.5.0", scheduler=FIFO_SCHEDULER, rm_web="http://127.0.0.1:1",
                             rm_address="localhost:1", classpath=[], examples_jar=None, tests_jar=None,
                             jvm_flags=[], mapred_site={}, yarn_site={},
                             daemons=[Daemon("rm", "resourcemanager", rm.pid, "", str(tmp_path / "rm.log"), "",
                                             {}, "")])
        state.save(tmp_path / "cluster.json")
        info = str(tmp_path / "gateway.json")
        why = _why_local(str(tmp_path), info)
        assert "runs the fifo scheduler, not Slotwise" in why and "slotwise cluster up" in why
        state.scheduler = SHIM_SCHEDULER
        state.save(tmp_path / "cluster.json")
        assert f"(pid {rm.pid}) has not written {info} yet" in _why_local(str(tmp_path), info)
        rm.kill()
        rm.wait(60)
        assert "is down" in _why_local(str(tmp_path), info)
    finally:
        rm.kill()
        rm.wait(60)
