"""The dockerized MRv1 cluster (docker/compose-mrv1.yaml) as its operators
use it: Hadoop 1.2.1's JobTracker with SlotwiseTaskScheduler, TaskTrackers
beside DataNodes, the policy server in the JobTracker's network namespace.
The same kinds of tests as the YARN cluster's (test_docker_cluster.py):
jobs in two queues, a job reading HDFS data-local under delay scheduling, a
pools file edited on the host, the policy killed and paused mid-job, a
worker (TaskTracker and DataNode) stopped mid-job.

They assert outcomes (a job's final status on the JobTracker, Python's
events, counters past a mark), never a transient state a faster recovery
may skip.
"""

from __future__ import annotations

import time

import pytest

from dockertools import ALLOCATIONS_IN_CONTAINER, wait_until, words
from test_docker_cluster import LONG, SHORT, _restarts, _serve_pid, _started_at

pytestmark = pytest.mark.docker

# LONG and SHORT as for YARN: with 4 map slots in all (two workers of 2),
# LONG's 200 maps keep both queues wanting more for minutes.


def pools_xml(prod: float, research: float) -> str:
    return f"""<?xml version="1.0"?>
<allocations>
  <pool name="prod">
    <weight>{prod}</weight>
  </pool>
  <pool name="research">
    <weight>{research}</weight>
  </pool>
</allocations>
"""


def succeeded(job, report) -> None:
    assert report["finalStatus"] == "SUCCEEDED" and report["client_exit"] == 0, \
        f"{job.app_id} in {job.queue}: {report['state']}, client exit {report['client_exit']}\n{job.tail()}"


def map_slots(c) -> tuple[float, float]:
    queues = c.queues()
    return queues["root.prod"]["usage"]["map_slots"], queues["root.research"]["usage"]["map_slots"]


def test_mrv1_jobs_in_two_queues_complete_with_pythons_assignments(mrv1_cluster):
    c = mrv1_cluster
    c.wait_ready()
    prod = c.submit("prod", "alice", "sleep", "-m", "4", "-r", "1", "-mt", "2000", "-rt", "500")
    research = c.submit("research", "bob", "pi", "2", "100")
    for job in (prod, research):
        succeeded(job, job.wait())
    trackers = (c.node_id(1), c.node_id(2))
    for job, queue in ((prod, "root.prod"), (research, "root.research")):
        got = c.assigns(job.app_id)
        assert got and {e["queue"] for e in got} == {queue}, got  # the job's pool.name, as Python had it
        assert any(e.get("map_slots") == 1 for e in got), got  # its maps were Python's decisions
        assert all(e["node"].startswith(trackers) for e in got), got


def test_mrv1_hdfs_job_reads_its_blocks_data_local_under_delay_scheduling(mrv1_cluster):
    """As the YARN test: three single-replica blocks, each on one worker; with
    2 map slots a worker, a map waits for a slot on its block's node (the
    job's maps are data-local only by delay scheduling)."""
    c = mrv1_cluster
    c.wait_ready()
    run = f"/tests/{int(time.time())}"
    c.put_text(f"{run}/in/words.txt", words(3 * 4 * 1024 * 1024 - 4096, seed=27), replication=1)
    job = c.submit("research", "bob", "wordcount", "-Dmapred.map.tasks.speculative.execution=false", f"{run}/in",
                   f"{run}/out")
    succeeded(job, job.wait())
    assert len(c.hdfs("dfs", "-cat", f"{run}/out/part-r-00000").splitlines()) == 500
    got = job.counters()
    print(f"\nMRv1 wordcount on HDFS: launched {got.get('Launched map tasks')} maps, "
          f"{got.get('Data-local map tasks', 0)} data-local, {got.get('Rack-local map tasks', 0)} rack-local")
    assert got["Launched map tasks"] >= 3, got
    assert got.get("Data-local map tasks", 0) == got["Launched map tasks"], got


def test_mrv1_pools_file_edited_on_the_host_while_jobs_run(mrv1_cluster):
    c = mrv1_cluster
    c.wait_ready()
    prod = c.submit("prod", "alice", "sleep", *LONG)
    research = c.submit("research", "bob", "sleep", *LONG)
    try:
        wait_until("prod (weight 2) to hold more map slots than research (weight 1)",
                   lambda: (u := map_slots(c))[1] > 0 and u[0] > u[1], 600)
        reloads = c.api("/api/v1/config")["reloads"]
        saved = time.time()
        c.write_allocations(pools_xml(1, 3))
        reload = wait_until("Python's reload event", lambda: [e for e in c.events()
                                                               if e["event"] == "reload" and e["ts"] >= saved], 60)[0]
        took = reload["ts"] - saved
        print(f"\nthe pools file edit was in force {took:.2f} s after the save")
        assert took <= 2.0, f"the edit took {took:.2f} s to be in force"
        config = c.api("/api/v1/config")
        assert config["reloads"] == reloads + 1 and config["errors"] == []
        wait_until("research (now weight 3) to hold more map slots than prod (now 1)",
                   lambda: (u := map_slots(c))[1] > u[0], 600)

        broken = pools_xml(5, 5).replace("<weight>5</weight>", "<weight>heavy</weight>", 1)
        line = next(i for i, text in enumerate(broken.splitlines(), 1) if "heavy" in text)
        c.write_allocations(broken)
        errors = wait_until("the broken edit's error in the API", lambda: c.api("/api/v1/config")["errors"], 60,
                            interval=0.1)
        assert errors[0].startswith(f"{ALLOCATIONS_IN_CONTAINER}/pools.xml:{line}:"), errors
        queues = c.queues()
        assert queues["root.prod"]["weight"] == 1 and queues["root.research"]["weight"] == 3
    finally:
        for job in (prod, research):
            job.kill()
        c.write_allocations(pools_xml(2, 1))
    wait_until("the original queues in force", lambda: not c.api("/api/v1/config")["errors"]
               and c.queues()["root.prod"]["weight"] == 2, 60)


def _decides_again(c, queue: str, user: str, since: float) -> None:
    job = c.submit(queue, user, "sleep", *SHORT)
    succeeded(job, job.wait())
    got = c.assigns(job.app_id, since)
    assert any(e.get("map_slots") == 1 for e in got), f"Python assigned no map of {job.app_id} after it came back"


def _python_assigned_a_map(c, job) -> None:
    job.wait_submitted(300)
    wait_until("Python to assign a map of the job", lambda: any(e.get("map_slots") == 1 for e in c.assigns(job.app_id)),
               600)


def test_mrv1_policy_container_killed_mid_job(mrv1_cluster):
    c = mrv1_cluster
    c.wait_ready()
    restarts = _restarts(c)
    job = c.submit("prod", "alice", "sleep", "-m", "10", "-r", "1", "-mt", "3000", "-rt", "100")
    _python_assigned_a_map(c, job)
    mark, fifo = time.time(), c.fifo_heartbeats()
    c.docker("exec", c.container("policy"), "kill", "-KILL", _serve_pid(c))
    succeeded(job, job.wait())
    wait_until("the policy container to restart", lambda: _restarts(c) > restarts, 600)
    back = wait_until("a new policy server to register with the JobTracker",
                      lambda: c.registrations(since=_started_at(c)), 600)[0]
    _decides_again(c, "research", "bob", back["ts"])
    print(f"\nheartbeats the JobTracker scheduled by its FIFO after the kill: {c.check_fallback_logged(mark, fifo)}")


def test_mrv1_policy_container_paused_past_the_deadline(mrv1_cluster):
    c = mrv1_cluster
    c.wait_ready()
    job = c.submit("research", "bob", "sleep", "-m", "10", "-r", "1", "-mt", "3000", "-rt", "100")
    _python_assigned_a_map(c, job)
    mark, fifo = time.time(), c.fifo_heartbeats()
    policy = c.container("policy")
    c.pause(policy)
    paused = time.time()
    try:
        # The test holds the pause until the JobTracker scheduled by its FIFO.
        wait_until("the JobTracker to schedule by its FIFO while Python is frozen",
                   lambda: c.fifo_heartbeats() > fifo, 120, interval=0.5)
        time.sleep(max(0.0, paused + 8 - time.time()))
    finally:
        c.docker("unpause", policy)
    resumed = time.time()
    succeeded(job, job.wait())
    _decides_again(c, "prod", "alice", resumed)
    print(f"\nheartbeats the JobTracker scheduled by its FIFO during and after the pause: "
          f"{c.check_fallback_logged(mark, fifo)}")


def test_mrv1_worker_stopped_mid_job(mrv1_cluster):
    """Worker 2's TaskTracker and DataNode stop together: the JobTracker
    declares the tracker lost, its tasks run again on worker 1, the job
    succeeds, and Python assigns nothing to the lost tracker once its view
    dropped it."""
    c = mrv1_cluster
    c.wait_ready()
    one, two = c.node_id(1), c.node_id(2)
    job = c.submit("prod", "alice", "sleep", "-m", "12", "-r", "1", "-mt", "3000", "-rt", "100")
    job.wait_submitted(300)
    wait_until("maps of the job on both workers",
               lambda: {n for e in c.assigns(job.app_id) for n, t in ((1, one), (2, two))
                        if e["node"].startswith(t)} == {1, 2}, 600)
    stopped = time.time()
    c.docker("stop", c.worker(2))
    try:
        wait_until("Python's view to drop worker 2", lambda: c.api("/api/v1/cluster")["nodes"] == 1, 300)
        dropped = time.time()
        succeeded(job, job.wait(900))
        late = [e for e in c.assigns(since=dropped) if e["node"].startswith(two)]
        assert not late, f"Python assigned to the stopped tracker after dropping it: {late}"
        assert any(e["node"].startswith(one) for e in c.assigns(job.app_id, stopped)), \
            "nothing of the job was placed on the remaining worker after the stop"
    finally:
        c.docker("start", c.worker(2))
    c.wait_ready()
