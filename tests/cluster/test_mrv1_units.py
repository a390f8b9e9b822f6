"""The MRv1 cluster's parts that need neither Java nor Maven: classpath
order, generated configuration, state, the JobTracker's pages (recorded from
a real Hadoop 1.2.1 JobTracker in tests/data/mrv1/), the CLI."""

from __future__ import annotations

import json
import re
import stat
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from slotwise.cli import build_parser, main
from slotwise.localcluster import ClusterError, LocalCluster
from slotwise.localcluster.config import marker
from support import read_hadoop_xml
from slotwise.localcluster.base import first_error as _first_error
from slotwise.localcluster.mrv1 import Mrv1Cluster, open_cluster
from slotwise.localcluster.mrv1_conf import Mrv1Config, Mrv1Sizes, mrv1_log4j, write_mrv1_conf_dir
from slotwise.localcluster.mrv1_hadoop import (FIFO_TASK_SCHEDULER, SLOTWISE_TASK_SCHEDULER, daemon_classpath,
                                               extract_webapps, mrv1_scheduler_class, mrv1_scheduler_name,
                                               resolve_hadoop1)
from slotwise.localcluster.mrv1_web import JTWeb, Mrv1JobResult, jobtracker_jobs, scheduler_status
from slotwise.localcluster.paths import Layout
from slotwise.localcluster.state import ClusterState, Daemon

DATA = Path(__file__).resolve().parents[1] / "data" / "mrv1"
M2 = "/m2/org/x"
JARS = [f"{M2}/py4j-0.10.9.9.jar", f"{M2}/hadoop-core-1.2.1.jar", f"{M2}/commons-cli-1.2.jar",
        f"{M2}/jetty-6.1.26.jar", f"{M2}/jasper-runtime-5.5.12.jar", f"{M2}/jsp-api-2.1-6.1.14.jar",
        f"{M2}/servlet-api-2.5-6.1.14.jar", f"{M2}/jsp-2.1-6.1.14.jar", f"{M2}/hadoop-examples-1.2.1.jar",
        f"{M2}/log4j-1.2.17.jar"]


# -- classpath ---------------------------------------------------------------

def test_classpath_order_is_bin_hadoops():
    cp = daemon_classpath(JARS, "/c/webapps-dir", conf_dir="/c/conf/jt", extra=["/c/shim.jar"])
    assert cp[:4] == ["/c/conf/jt", "/c/webapps-dir", f"{M2}/hadoop-core-1.2.1.jar", "/c/shim.jar"]
    # jsp-2.1 and jsp-api-2.1 last (else Jetty 6: NoSuchFieldError IS_SECURITY_ENABLED), jasper before them.
    assert cp[-2:] == [f"{M2}/jsp-2.1-6.1.14.jar", f"{M2}/jsp-api-2.1-6.1.14.jar"]
    assert cp.index(f"{M2}/jasper-runtime-5.5.12.jar") < cp.index(f"{M2}/jsp-2.1-6.1.14.jar")
    assert sorted(cp) == sorted(["/c/conf/jt", "/c/webapps-dir", "/c/shim.jar", *JARS])  # nothing lost or doubled
    # Without a conf dir (the state's list) the webapps directory comes first; re-ordering is stable.
    stored = daemon_classpath(JARS, "/c/webapps-dir")
    assert stored[0] == "/c/webapps-dir" and stored[1].endswith("hadoop-core-1.2.1.jar")
    webapps, *jars = stored
    assert daemon_classpath(jars, webapps, conf_dir="/c/conf/tt1")[1:] == stored


def test_webapps_are_extracted_once(tmp_path):
    core = tmp_path / "hadoop-core-1.2.1.jar"
    with zipfile.ZipFile(core, "w") as z:
        z.writestr("webapps/job/WEB-INF/web.xml", "<web-app/>")
        z.writestr("webapps/static/hadoop.css", "body {}")
        z.writestr("org/apache/hadoop/mapred/JobTracker.class", b"\xca\xfe")
    cache = tmp_path / "cache"
    d = extract_webapps(core, cache)
    assert (d / "webapps" / "job" / "WEB-INF" / "web.xml").read_text() == "<web-app/>"
    assert not (d / "org").exists()
    (d / "webapps" / "marker").write_text("kept")
    assert extract_webapps(core, cache) == d and (d / "webapps" / "marker").exists()  # not redone


def test_a_core_jar_without_webapps_is_an_error(tmp_path):
    core = tmp_path / "hadoop-core-1.2.1.jar"
    with zipfile.ZipFile(core, "w") as z:
        z.writestr("x.class", b"")
    with pytest.raises(ClusterError, match="no webapps"):
        extract_webapps(core, tmp_path / "cache")


FAKE_MVN = textwrap.dedent("""\
    #!{python}
    import os, sys
    jars = os.environ["FAKE_JARS"]
    with open(os.environ["FAKE_LOG"], "a") as f:
        f.write(" ".join(sys.argv[1:]) + "\\n")
    for a in sys.argv[1:]:
        if a.startswith("-Dmdep.outputFile="):
            names = ["py4j-0.10.9.9.jar", "hadoop-core-1.2.1.jar", "jsp-2.1-6.1.14.jar", "hadoop-examples-1.2.1.jar"]
            for n in names:
                open(os.path.join(jars, n), "w").close()
            open(a.split("=", 1)[1], "w").write(":".join(os.path.join(jars, n) for n in names))
""")


def test_hadoop1_jars_are_cached_until_a_pom_changes(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    (repo / "mrv1-shim").mkdir(parents=True)
    (repo / "pom.xml").write_text("<project>parent</project>")
    (repo / "mrv1-shim" / "pom.xml").write_text("<project>mrv1</project>")
    mvn = tmp_path / "mvn"
    mvn.write_text(FAKE_MVN.replace("{python}", sys.executable))
    mvn.chmod(mvn.stat().st_mode | stat.S_IEXEC)
    (tmp_path / "jars").mkdir()
    monkeypatch.setenv("SLOTWISE_MVN", str(mvn))
    monkeypatch.setenv("FAKE_JARS", str(tmp_path / "jars"))
    monkeypatch.setenv("FAKE_LOG", str(tmp_path / "mvn.log"))
    calls = lambda: (tmp_path / "mvn.log").read_text().count("build-classpath")  # noqa: E731
    cache = tmp_path / "cache"
    jars = resolve_hadoop1(repo, cache, lambda m: None)
    assert jars.hadoop_version == "1.2.1" and jars.core_jar.endswith("hadoop-core-1.2.1.jar")
    assert jars.examples_jar.endswith("hadoop-examples-1.2.1.jar") and len(jars.jars) == 4
    assert "mrv1-shim/pom.xml" in (tmp_path / "mvn.log").read_text()
    assert resolve_hadoop1(repo, cache, lambda m: None) == jars and calls() == 1
    (repo / "mrv1-shim" / "pom.xml").write_text("<project>mrv1, changed</project>")
    resolve_hadoop1(repo, cache, lambda m: None)
    assert calls() == 2
    (repo / "pom.xml").write_text("<project>parent, changed</project>")
    resolve_hadoop1(repo, cache, lambda m: None)
    assert calls() == 3
    (tmp_path / "jars" / "hadoop-core-1.2.1.jar").unlink()  # a jar gone from ~/.m2: resolve again
    resolve_hadoop1(repo, cache, lambda m: None)
    assert calls() == 4


# -- configuration ---------------------------------------------------------------

def cfg(tmp_path, **kw) -> Mrv1Config:
    return Mrv1Config(tmp_path, {"rpc": 9001, "http": 9002}, **kw)


def test_jobtracker_site(tmp_path):
    c = cfg(tmp_path, extra={"mapred.jobtracker.taskScheduler": "x.Y", "slotwise.policy.timeout-ms": "250"})
    site = c.jt_mapred_site(tmp_path / "jt")
    assert site["mapred.job.tracker"] == "127.0.0.1:9001"
    assert site["mapred.job.tracker.http.address"] == "127.0.0.1:9002"
    assert site["mapred.system.dir"] == str(tmp_path / "jt" / "system")
    assert site["mapreduce.jobtracker.staging.root.dir"] == str(tmp_path / "staging")
    assert site["mapred.local.dir"] == str(tmp_path / "jt" / "local")
    assert site["slotwise.policy.timeout-ms"] == "250"
    assert site["mapred.jobtracker.taskScheduler"] == "x.Y"  # --conf wins
    assert cfg(tmp_path).jt_mapred_site(tmp_path)["mapred.jobtracker.taskScheduler"] == SLOTWISE_TASK_SCHEDULER
    assert c.core_site(tmp_path / "jt" / "tmp") == {"fs.default.name": "file:///",
                                                     "hadoop.tmp.dir": str(tmp_path / "jt" / "tmp"),
                                                     "hadoop.security.authentication": "simple"}
    assert c.jt_web == "http://127.0.0.1:9002" and c.jt_address == "127.0.0.1:9001"


def test_tasktracker_site(tmp_path):
    c = cfg(tmp_path, sizes=Mrv1Sizes(map_slots=3, reduce_slots=1))
    site = c.tt_mapred_site({"http": 9101, "report": 9102}, tmp_path / "tt1")
    assert site["slave.host.name"] == "localhost"  # file:// splits are on "localhost": node-local
    assert site["mapred.task.tracker.http.address"] == "127.0.0.1:9101"
    assert site["mapred.task.tracker.report.address"] == "127.0.0.1:9102"
    assert site["mapred.tasktracker.map.tasks.maximum"] == "3"
    assert site["mapred.tasktracker.reduce.tasks.maximum"] == "1"
    assert site["mapred.local.dir"] == str(tmp_path / "tt1" / "local")
    assert site["mapred.job.tracker"] == "127.0.0.1:9001"
    assert site["mapred.system.dir"] == str(tmp_path / "jt" / "system")  # shared with the JobTracker
    assert site["mapreduce.tasktracker.outofband.heartbeat"] == "true"


def test_clients_and_tasks(tmp_path):
    c = cfg(tmp_path, extra={"a.b": "1"})
    client = c.client_mapred_site()
    assert client["mapred.job.tracker"] == "127.0.0.1:9001"
    assert client["mapred.system.dir"] == str(tmp_path / "jt" / "system")
    assert client["a.b"] == "1"
    # Task JVMs carry the marker, so down() finds them.
    assert marker(tmp_path) in client["mapred.child.java.opts"]
    assert "mapred.jobtracker.taskScheduler" not in client


def test_log4j_for_daemons_clients_and_tasks(tmp_path):
    daemon = mrv1_log4j(tmp_path / "jt.log")
    assert "hadoop.root.logger=INFO,DRFA" in daemon and f"DRFA.File={tmp_path / 'jt.log'}" in daemon
    assert "log4j.rootLogger=${hadoop.root.logger}" in daemon
    # Task JVMs read the TaskTracker's file and pick TLA with -Dhadoop.root.logger=INFO,TLA.
    assert "log4j.appender.TLA=org.apache.hadoop.mapred.TaskLogAppender" in daemon
    client = mrv1_log4j(None)
    assert "hadoop.root.logger=INFO,console" in client and "DRFA" not in client
    assert "console.target=System.err" in client


def test_conf_dir_has_the_files_hadoop_1_reads(tmp_path):
    write_mrv1_conf_dir(tmp_path / "c", core={"fs.default.name": "file:///"},
                        mapred={"mapred.job.tracker": "127.0.0.1:1"}, log_file=tmp_path / "x.log")
    names = sorted(p.name for p in (tmp_path / "c").iterdir())
    assert names == ["core-site.xml", "hdfs-site.xml", "log4j.properties", "mapred-site.xml"]
    assert read_hadoop_xml(tmp_path / "c" / "mapred-site.xml") == {"mapred.job.tracker": "127.0.0.1:1"}
    assert read_hadoop_xml(tmp_path / "c" / "hdfs-site.xml") == {}


def test_scheduler_names():
    assert mrv1_scheduler_class("slotwise") == SLOTWISE_TASK_SCHEDULER
    assert mrv1_scheduler_class("FIFO") == FIFO_TASK_SCHEDULER == "org.apache.hadoop.mapred.JobQueueTaskScheduler"
    assert mrv1_scheduler_class("org.apache.hadoop.mapred.FairScheduler") == "org.apache.hadoop.mapred.FairScheduler"
    with pytest.raises(ValueError, match="slotwise, fifo"):
        mrv1_scheduler_class("fiar")
    assert mrv1_scheduler_name(FIFO_TASK_SCHEDULER) == "fifo" and mrv1_scheduler_name("a.B") == "a.B"


def test_first_error_of_a_log():
    log = ("2026-01-01 00:00:00,000 INFO  [main] mapred.JobTracker: starting\n"
           "2026-01-01 00:00:01,000 FATAL [main] mapred.JobTracker: java.lang.RuntimeException: boom\n"
           "\tat org.apache.hadoop.mapred.JobTracker.main(JobTracker.java:4710)\n"
           "2026-01-01 00:00:02,000 ERROR [main] later\n")
    assert _first_error(log).startswith("2026-01-01 00:00:01,000 FATAL")
    assert "JobTracker.main" in _first_error(log)
    assert _first_error("all fine\n") is None


# -- state -------------------------------------------------------------------------

def state(tmp_path, **kw) -> ClusterState:
    base = dict(dir=str(tmp_path), repo="/r", java_home="/jdk", java_version="17.0.15", hadoop_version="1.2.1",
                scheduler=FIFO_TASK_SCHEDULER, rm_web="http://127.0.0.1:9002", rm_address="127.0.0.1:9001",
                classpath=["/c/webapps", *JARS], examples_jar=JARS[-2], tests_jar=None, jvm_flags=[],
                mapred_site={"mapred.job.tracker": "127.0.0.1:9001"}, yarn_site={})
    return ClusterState(**{**base, **kw})


def test_state_round_trip_keeps_the_kind(tmp_path):
    s = state(tmp_path, kind="mrv1", daemons=[
        Daemon("jt", "jobtracker", 1, "/c/jt", "/l/jt.log", "/l/jt.out", {"rpc": 9001, "http": 9002}, "/d/jt"),
        Daemon("tt1", "tasktracker", 2, "/c/tt1", "/l/tt1.log", "/l/tt1.out", {"http": 1, "report": 2}, "/d/tt1",
               node_id="tracker_localhost:localhost/127.0.0.1:2")])
    path = tmp_path / "cluster.json"
    s.save(path)
    back = ClusterState.load(path)
    assert back == s and back.kind == "mrv1" and back.daemon("tt1").node_id.endswith(":2")


def test_old_state_files_load_as_yarn_and_new_keys_are_ignored(tmp_path):
    data = json.loads(json.dumps(state(tmp_path).__dict__, default=lambda o: o.__dict__))
    del data["kind"]  # written before the field existed
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(data))
    assert ClusterState.load(path).kind == "yarn"
    data["some_future_field"] = 1
    path.write_text(json.dumps(data))
    assert ClusterState.load(path).kind == "yarn"


def test_open_cluster_follows_the_state(tmp_path):
    assert type(open_cluster(tmp_path)) is LocalCluster  # nothing there: YARN, as before
    assert type(open_cluster(tmp_path, mrv1=True)) is Mrv1Cluster
    state(tmp_path, kind="mrv1").save(Layout(tmp_path).state_file)
    assert type(open_cluster(tmp_path)) is Mrv1Cluster
    state(tmp_path).save(Layout(tmp_path).state_file)
    assert type(open_cluster(tmp_path)) is LocalCluster
    with pytest.raises(ClusterError, match="is a YARN cluster, not MRv1"):
        open_cluster(tmp_path, mrv1=True)
    with pytest.raises(ClusterError, match="is a YARN cluster, not MRv1"):
        Mrv1Cluster(tmp_path).submit("pi", ["1", "1"])


def test_gateway_files(tmp_path):
    s = state(tmp_path, kind="mrv1", daemons=[
        Daemon("jt", "jobtracker", None, "/c/jt", "/l/jt.log", "/l/jt.out", {}, str(tmp_path / "jt"))])
    s.save(Layout(tmp_path).state_file)
    c = Mrv1Cluster(tmp_path)
    assert c.gateway_info_file == tmp_path / "jt" / "tmp" / "slotwise" / "gateway.json"
    assert c.gateway_token_file == tmp_path / "jt" / "tmp" / "slotwise" / "gateway.token"
    s.mapred_site["slotwise.gateway.info-file"] = "/g/info.json"
    s.save(Layout(tmp_path).state_file)
    assert c.gateway_info_file == Path("/g/info.json") and c.gateway_token_file == Path("/g/gateway.token")
    with pytest.raises(ClusterError, match="no cluster in"):
        Mrv1Cluster(tmp_path / "none").gateway_info_file


def test_up_refuses_a_directory_that_is_not_a_cluster_directory(tmp_path):
    (tmp_path / "precious.txt").write_text("keep me")
    with pytest.raises(ClusterError, match="neither empty nor a cluster directory"):
        Mrv1Cluster(tmp_path).up()
    assert (tmp_path / "precious.txt").read_text() == "keep me"


def test_run_dirs_cover_both_kinds(tmp_path):
    for d in ("rm", "nm1", "jt", "tt1", "tt2", "cache"):
        (tmp_path / d).mkdir()
    names = {p.name for p in Layout(tmp_path).run_dirs()}
    assert {"rm", "nm1", "jt", "tt1", "tt2"} <= names and "cache" not in names


# -- the JobTracker's pages (recorded) ------------------------------------------------

def page(name: str) -> str:
    return (DATA / name).read_text()


def test_jobs_of_jobtracker_jsp():
    jobs = jobtracker_jobs(page("jobtracker-running.html"))
    by_id = {j["id"]: j for j in jobs}
    assert list(by_id) == sorted(by_id) and len(jobs) == 4
    assert by_id["job_202611231342_0001"] == {
        "id": "job_202611231342_0001", "state": "SUCCEEDED", "user": "alice", "name": "PiEstimator",
        "priority": "NORMAL", "started": "Mon Nov 23 13:42:55 UTC 2026", "map": 100.0, "reduce": 100.0}
    assert by_id["job_202611231342_0002"]["state"] == "FAILED"
    running = by_id["job_202611231342_0004"]
    assert (running["state"], running["user"], running["name"], running["map"]) == ("RUNNING", "bob", "Sleep job", 0.0)
    assert [j["state"] for j in jobtracker_jobs(page("jobtracker-done.html"))] == ["SUCCEEDED", "FAILED", "SUCCEEDED"]


class FakeWeb(JTWeb):
    def __init__(self, pages: dict[str, str]):
        super().__init__("http://x")
        self.pages = pages

    def get(self, path: str) -> str:
        return page(self.pages[path.split("?")[0]])


def test_trackers_job_details_and_conf():
    web = FakeWeb({"/machines.jsp": "machines.html", "/jobdetails.jsp": "jobdetails-failed.html",
                   "/jobconf.jsp": "jobconf.html", "/scheduler": "scheduler-running.html"})
    t, t2 = web.trackers()
    assert t["Name"] == "tracker_localhost:localhost/127.0.0.1:35819" and t["Host"] == "localhost"
    assert t2["Name"].endswith(":59779")
    assert t["Max Map Tasks"] == "2" and t["Max Reduce Tasks"] == "2"
    job = web.job("job_202611231342_0002")
    assert job["Status"] == "Failed" and job["User"] == "root" and job["Job Name"] == "PiEstimator"
    conf = web.job_conf("job_202611231342_0004")
    assert conf["pool.name"] == "research" and conf["user.name"] == "bob"
    web.pages["/jobdetails.jsp"] = "jobdetails-running.html"
    assert web.job("job_202611231342_0004")["Status"] == "Running"
    web.pages["/jobdetails.jsp"] = "jobdetails-done.html"
    assert web.job("job_202611231342_0004")["Status"] == "Succeeded"


def test_slotwise_scheduler_page():
    """The servlet's own part (the link and its counts, recorded from a real
    JobTracker with no serve), then with serve's page drawn by the real
    web/jobtracker.py for an MRv1 core."""
    fifo = page("scheduler-running.html")
    st = scheduler_status(fifo)
    assert st["registered"] is False and st["fallback"] is True
    assert st["heartbeats"] == st["fifo_heartbeats"] == 490 and st["failures"] == 493
    assert st["queues"] == [] and st["jobs"] == []
    assert st["link"].startswith("Python policy: none registered; the JobTracker schedules by its FIFO since")
    from slotwise.admin import SchedulerService
    from slotwise.clock import ManualClock
    from slotwise.config.loader import parse_allocations
    from slotwise.config.watcher import ConfigStatus
    from slotwise.core import PolicyCore
    from slotwise.web.jobtracker import fragment
    core = PolicyCore(parse_allocations('<allocations><pool name="prod"><maxReduces>3</maxReduces></pool>'
                                        '</allocations>', "pools.xml"), clock=ManualClock(0.0), kind="mrv1")
    core.heartbeat(json.dumps({"now_ms": 1000, "full": True, "nodes": [
        {"id": "tracker_a", "host": "a", "rack": "/r", "capacity": {"map_slots": 2, "reduce_slots": 1}}], "apps": [
        {"id": "job_202611231342_0004", "user": "bob", "queue": "root.prod", "priority": 0, "submit_ms": 1000,
         "unmanaged": True, "requests": [{"priority": 0, "resource": {"map_slots": 1}, "count": 4}]}]}))
    core.update(json.dumps({"now_ms": 2000}))
    served = fifo.replace("none registered; the JobTracker schedules by its FIFO since 2026-11-23 13:42:51 "
                          "(heartbeat: no policy registered).", "pid 42 on vm, deciding.")
    served = re.sub(r'<p id="outcome".*?</p>', lambda _: fragment(SchedulerService(core, ConfigStatus("p"))),
                    served, flags=re.S)
    st = scheduler_status(served)
    assert st["registered"] and not st["fallback"]
    prod = next(q for q in st["queues"] if q["queue"] == "root.prod")
    assert (prod["max maps"], prod["max reduces"], prod["fair maps"], prod["jobs"]) == ("-", "3", "2", "1")
    assert [(j["job"], j["queue"], j["priority"], j["fair maps"]) for j in st["jobs"]] == [
        ("job_202611231342_0004", "root.prod", "NORMAL", "2")]


def test_job_result_is_a_job_result():
    r = Mrv1JobResult(program="pi", asked="prod", user=None, app_id="job_1_0001", returncode=0, state="SUCCEEDED",
                      final_status="SUCCEEDED", queue="prod", app_user="root", seconds=1.0, job_dir="/j",
                      log="/j/l")
    assert r.succeeded and r.job_id == "job_1_0001"
    assert not Mrv1JobResult(**{**r.__dict__, "final_status": "FAILED"}).succeeded


# -- the CLI ---------------------------------------------------------------------------

def test_cli_parses_mrv1_flags():
    p = build_parser()
    a = p.parse_args(["cluster", "up", "--mrv1", "--nodes", "3", "--scheduler", "fifo", "--map-slots", "4",
                      "--reduce-slots", "0", "--conf", "a=b"])
    assert (a.mrv1, a.nodes, a.scheduler, a.map_slots, a.reduce_slots, a.conf) == (True, 3, "fifo", 4, 0, ["a=b"])
    assert p.parse_args(["cluster", "status", "--mrv1"]).mrv1
    assert p.parse_args(["cluster", "down", "--mrv1"]).mrv1
    a = p.parse_args(["cluster", "submit", "--mrv1", "--queue", "prod", "--user", "ann", "--", "pi", "2", "100"])
    assert (a.mrv1, a.queue, a.user, a.program) == (True, "prod", "ann", ["--", "pi", "2", "100"])


def test_cli_up_rejects_bad_mrv1_flags(tmp_path, capsys):
    assert main(["cluster", "up", "--dir", str(tmp_path), "--map-slots", "3"]) == 2
    assert "--mrv1" in capsys.readouterr().err
    assert main(["cluster", "up", "--mrv1", "--dir", str(tmp_path), "--scheduler", "fair"]) == 2
    assert "slotwise, fifo" in capsys.readouterr().err
    assert main(["cluster", "up", "--mrv1", "--dir", str(tmp_path), "--with-shim"]) == 2
    with pytest.raises(SystemExit):
        build_parser().parse_args(["cluster", "up", "--mrv1", "--map-slots", "-1"])
    assert not any(tmp_path.iterdir())  # nothing started, nothing written


def test_cli_without_a_cluster(tmp_path, capsys):
    assert main(["cluster", "status", "--mrv1", "--dir", str(tmp_path)]) == 1
    assert "no cluster in" in capsys.readouterr().out
    assert main(["cluster", "down", "--mrv1", "--dir", str(tmp_path)]) == 0
    assert main(["cluster", "submit", "--mrv1", "--dir", str(tmp_path), "--queue", "p", "--", "pi", "1", "1"]) == 1
    assert "slotwise cluster up --mrv1" in capsys.readouterr().err


def test_cli_on_a_stopped_mrv1_cluster(tmp_path, capsys):
    s = state(tmp_path, kind="mrv1", daemons=[
        Daemon("jt", "jobtracker", None, "/c/jt", "/l/jt.log", "/l/jt.out", {"rpc": 1, "http": 2}, "/d/jt")])
    s.save(Layout(tmp_path).state_file)
    assert main(["cluster", "status", "--dir", str(tmp_path), "--json"]) == 1
    st = json.loads(capsys.readouterr().out)
    assert st["kind"] == "mrv1" and st["running"] is False and st["daemons"][0]["role"] == "jobtracker"
    assert main(["cluster", "submit", "--dir", str(tmp_path), "--queue", "p", "--", "pi", "1", "1"]) == 1
    assert "JobTracker of" in capsys.readouterr().err
    assert main(["cluster", "yarn", "--dir", str(tmp_path), "--", "node", "-list"]) == 1
    assert "is MRv1" in capsys.readouterr().err
    assert main(["cluster", "down", "--dir", str(tmp_path)]) == 0
    assert not Layout(tmp_path).state_file.exists()


def test_cli_submit_mrv1_against_yarn_is_an_error(tmp_path, capsys):
    state(tmp_path).save(Layout(tmp_path).state_file)  # kind yarn
    assert main(["cluster", "submit", "--mrv1", "--dir", str(tmp_path), "--queue", "p", "--", "pi", "1", "1"]) == 1
    assert "is a YARN cluster, not MRv1" in capsys.readouterr().err


def test_daemon_command_lines_carry_the_placement_and_the_jobtrackers_flags(tmp_path, monkeypatch):
    """bench_mrv1 --master-cpu: each role runs under `taskset -c` of its CPUs
    (taskset execs the JVM: the pid is the JVM's); the JobTracker alone gets
    JT_FLAGS (MetaspaceSize, issue 39) and the caller's extra flags."""
    from slotwise.localcluster.jvm import Java
    from slotwise.localcluster.mrv1 import JT_FLAGS

    cluster = Mrv1Cluster(tmp_path, cpus={"jobtracker": "0", "tasktracker": "1"}, jt_jvm_flags=["-Xlog:gc"])
    argv = {}
    monkeypatch.setattr(Mrv1Cluster, "_spawn", lambda self, state, java, name, role, a, *rest: argv.setdefault(name, a))
    state = ClusterState(dir=str(tmp_path), repo=str(tmp_path), java_home="/jdk", java_version="17",
                         hadoop_version="1.2.1", scheduler=SLOTWISE_TASK_SCHEDULER, rm_web="", rm_address="",
                         classpath=["/webapps", *JARS], examples_jar=None, tests_jar=None, jvm_flags=[],
                         mapred_site={}, yarn_site={}, kind="mrv1")
    java = Java(Path("/jdk"), "17")
    c = cfg(tmp_path)
    cluster._start(state, c, java, "jt", Mrv1Cluster.MASTER, "JT", {}, c.jt_mapred_site(tmp_path / "jt"))
    cluster._start(state, c, java, "tt1", Mrv1Cluster.WORKER, "TT", {}, c.tt_mapred_site({"http": 1, "report": 2},
                                                                                          tmp_path / "tt1"))
    assert argv["jt"][:4] == ["taskset", "-c", "0", "/jdk/bin/java"]
    assert argv["tt1"][:4] == ["taskset", "-c", "1", "/jdk/bin/java"]
    assert all(f in argv["jt"] for f in (*JT_FLAGS, "-Xlog:gc"))
    assert not any(f in argv["tt1"] for f in (*JT_FLAGS, "-Xlog:gc"))
    assert Mrv1Cluster(tmp_path)._taskset("client") == []  # by default every process runs where the caller does
