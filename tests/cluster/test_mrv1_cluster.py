"""A real Hadoop 1.2.1 MRv1 cluster (a JobTracker and two TaskTrackers, each
its own JVM) with Hadoop's own JobQueueTaskScheduler ("fifo"): the local
cluster's tools against the reference. SlotwiseTaskScheduler, with Python
and without (its own FIFO), is tested on test_mrv1_policy's cluster."""

from __future__ import annotations

import getpass
import re
import time
from pathlib import Path

import pytest

from slotwise.cli import main
from slotwise.localcluster import ClusterError, process
from slotwise.localcluster.mrv1 import Mrv1Cluster
from slotwise.localcluster.mrv1_web import Mrv1Job
from support import CLUSTER_START_TIMEOUT, skip_without_java

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module", params=["fifo"])
def mrv1(request, tmp_path_factory):
    skip_without_java("local MRv1 cluster")
    cluster = Mrv1Cluster(tmp_path_factory.mktemp(f"mrv1-{request.param}"), nodes=2, scheduler=request.param,
                          start_timeout=CLUSTER_START_TIMEOUT)
    try:
        started = time.monotonic()
        cluster.up()  # on failure up() itself stops whatever it started
        cluster.up_seconds = time.monotonic() - started
        yield cluster
    finally:
        cluster.down()  # idempotent; never leave a JVM behind


def test_a_jobtracker_that_dies_is_reported_with_its_log(tmp_path):
    skip_without_java("local MRv1 cluster")
    cluster = Mrv1Cluster(tmp_path, nodes=1, scheduler="org.example.NoSuchScheduler", start_timeout=CLUSTER_START_TIMEOUT,
                          log=lambda m: None)
    with pytest.raises(ClusterError) as e:
        cluster.up()
    text = str(e.value)
    assert "the JobTracker (jt) exited" in text and str(tmp_path / "logs" / "jt.log") in text
    assert "ClassNotFoundException: org.example.NoSuchScheduler" in text  # the log's tail
    assert process.find_ours(tmp_path) == [] and cluster.state is None


def test_up_registers_every_tasktracker(mrv1, capsys):
    st = mrv1.status()
    assert st["running"] and st["ready"] and st["error"] is None, st
    assert [(d["name"], d["role"], d["alive"]) for d in st["daemons"]] == [
        ("jt", "jobtracker", True), ("tt1", "tasktracker", True), ("tt2", "tasktracker", True)]
    names = sorted(t["Name"] for t in st["trackers"])
    assert names == sorted(d["node_id"] for d in st["daemons"][1:])
    assert all(t["Host"] == "localhost" and t["Max Map Tasks"] == "2" for t in st["trackers"])
    assert main(["cluster", "status", "--dir", str(mrv1.dir)]) == 0
    out = capsys.readouterr().out
    assert "MRv1 cluster" in out and f"scheduler {st['scheduler']}" in out and "task trackers (2)" in out
    print(f"\n{st['scheduler']}: cluster up in {mrv1.up_seconds:.1f} s")


def _data_local(result) -> int:
    m = re.search(r"Data-local map tasks=(\d+)", Path(result.log).read_text())
    return int(m.group(1)) if m else 0


def test_pi_in_queue_prod(mrv1):
    result = mrv1.submit("pi", ["2", "100"], queue="prod", timeout=600)
    assert result.succeeded, f"{result}\n{Path(result.log).read_text()[-3000:]}"
    assert re.fullmatch(r"job_\d+_\d{4}", result.job_id)
    # The queue (mapred.fairscheduler.pool) and user as the JobTracker has them; no --user: the OS user.
    assert (result.state, result.queue, result.app_user) == ("SUCCEEDED", "prod", getpass.getuser())
    assert _data_local(result) == 2  # slave.host.name=localhost: file:// splits are node-local
    assert "Estimated value of Pi is" in Path(result.log).read_text()
    job = next(j for j in mrv1.status()["jobs"] if j["id"] == result.job_id)
    assert job["state"] == "SUCCEEDED" and job["name"] == "PiEstimator"
    print(f"\n{mrv1.status()['scheduler']}: pi 2 100 in {result.seconds:.1f} s")


def test_two_jobs_of_one_user_at_once(mrv1):
    """Each in its own working directory (PiEstimator's temporary directory is
    relative to it) and as user alice, twice (Hadoop 1's client refuses a
    staging directory its user does not own: the second job would fail with
    HADOOP_USER_NAME=alice). The JobTracker and Hadoop's job client see alice."""
    jobs = [mrv1.submit("pi", ["2", "100"], queue=queue, user="alice", wait=False) for queue in ("prod", "research")]
    assert all(isinstance(j, Mrv1Job) for j in jobs)
    results = [j.wait(900) for j in jobs]
    for r, queue in zip(results, ("prod", "research")):
        assert r.succeeded, f"{r}\n{Path(r.log).read_text()[-3000:]}"
        assert (r.app_user, r.queue) == ("alice", queue)
    assert len({r.job_dir for r in results}) == 2
    users = {j["id"]: j["user"] for j in mrv1.web.jobs()}
    assert [users[r.job_id] for r in results] == ["alice", "alice"]
    listed = mrv1.job_command(["-list", "all"])
    assert listed.returncode == 0, listed.stderr
    rows = {line.split("\t")[0]: line.split("\t") for line in listed.stdout.splitlines() if line.startswith("job_")}
    assert [rows[r.job_id][3] for r in results] == ["alice", "alice"]


def test_down_leaves_no_process(mrv1):
    pids = [d.pid for d in mrv1.state.daemons]
    stopped = mrv1.down()
    assert {"jt", "tt1", "tt2"} <= set(stopped)
    assert process.find_ours(mrv1.dir) == [] and not any(process.is_ours(p, mrv1.dir) for p in pids)
    assert mrv1.state is None and mrv1.down() == []
