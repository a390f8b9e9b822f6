"""The dockerized cluster as its operators use it: MapReduce jobs in two
pools, the allocation file edited on the host while jobs run, the policy
container killed and paused mid-job, a NodeManager container stopped.

The tests share one compose cluster (conftest) and run in this order; each
starts by waiting for the cluster to be whole again.
"""

from __future__ import annotations

import time

import pytest

from dockertools import ALLOCATIONS_IN_CONTAINER, wait_until

pytestmark = pytest.mark.docker

#: Enough maps that both pools want more than the cluster has (8 containers
#: of 512 MB on two 2 GB NodeManagers) for a while.
LONG = ("-m", "24", "-r", "1", "-mt", "2500", "-rt", "100")
SHORT = ("-m", "2", "-r", "1", "-mt", "500", "-rt", "100")


def weights(prod: float, research: float) -> str:
    return f"""<?xml version="1.0"?>
<allocations>
  <queue name="prod">
    <weight>{prod}</weight>
    <schedulingPolicy>fair</schedulingPolicy>
  </queue>
  <queue name="research">
    <weight>{research}</weight>
    <schedulingPolicy>fair</schedulingPolicy>
  </queue>
  <queue name="users" type="parent" />
  <queuePlacementPolicy>
    <rule name="specified" create="false" />
    <rule name="nestedUserQueue">
      <rule name="default" queue="users" />
    </rule>
  </queuePlacementPolicy>
</allocations>
"""


def succeeded(job, report) -> None:
    assert report["finalStatus"] == "SUCCEEDED" and report["client_exit"] == 0, \
        f"{job.app_id} in {job.pool}: {report['state']}/{report['finalStatus']}, client exit " \
        f"{report['client_exit']}; diagnostics: {report.get('diagnostics')}\n{job.tail()}"


def python_assigned(cluster, job, since: float = 0.0) -> list[dict]:
    return cluster.assigns(job.app_id, since)


def test_jobs_in_two_pools_complete_with_pythons_assignments(docker_cluster):
    c = docker_cluster
    c.wait_ready()
    submitted = time.time()
    prod = c.submit("prod", "alice", "sleep", "-m", "4", "-r", "1", "-mt", "2000", "-rt", "500")
    research = c.submit("research", "bob", "pi", "2", "100")
    for job in (prod, research):
        succeeded(job, job.wait())
    # On a loaded machine a call may miss the shim's 200 ms deadline: that
    # heartbeat is FIFO's (by design) and may place an AM. Python logs each
    # such episode, so the AM check below allows for them.
    fifo_episodes = [e for e in c.events() if e["event"] == "fallback" and e["ended"] >= submitted]
    assert c.rm(f"/ws/v1/cluster/apps/{prod.app_id}")["app"]["queue"] == "root.prod"
    assert c.rm(f"/ws/v1/cluster/apps/{research.app_id}")["app"]["queue"] == "root.research"
    for job, pool in ((prod, "root.prod"), (research, "root.research")):
        got = python_assigned(c, job)
        assert {e["pool"] for e in got} == {pool}, got
        # The AM (unless a FIFO heartbeat took it) and task containers were
        # Python's decisions, on the cluster's nodes.
        assert any(e["am"] for e in got) or fifo_episodes, got
        assert any(not e["am"] for e in got), got
        assert {e["node"] for e in got} <= {"nm1:45454", "nm2:45454"}
    places = {e["app"]: e["pool"] for e in c.events() if e["event"] == "place"}
    assert places[prod.app_id] == "root.prod" and places[research.app_id] == "root.research"


def test_allocation_file_edited_on_the_host_while_jobs_run(docker_cluster):
    c = docker_cluster
    c.wait_ready()
    assert c.pools()["root.prod"]["weight"] == 2 and c.pools()["root.research"]["weight"] == 1
    prod = c.submit("prod", "alice", "sleep", *LONG)
    research = c.submit("research", "bob", "sleep", *LONG)

    def used(pool: str) -> float:
        return c.pools()[pool]["usage"]["memory_mb"]

    # Under 2:1 prod runs more than research once both have started.
    wait_until("prod (weight 2) to use more than research (weight 1)",
               lambda: used("root.research") > 0 and used("root.prod") > used("root.research"), 180)

    reloads = c.api("/api/v1/config")["reloads"]
    saved = time.time()
    c.write_allocations(weights(1, 3))

    def in_force(pools: dict) -> bool:  # the weights, and the fair shares computed from them
        prod, research = pools["root.prod"], pools["root.research"]
        return (prod["weight"] == 1 and research["weight"] == 3
                and research["fair_share"]["memory_mb"] > 2 * prod["fair_share"]["memory_mb"])

    wait_until("the new weights in force in the API", lambda: in_force(c.pools()), 10, interval=0.05)
    took = time.time() - saved
    assert took <= 2.0, f"the edit took {took:.2f} s to be in force in the API"
    config = c.api("/api/v1/config")
    assert config["reloads"] == reloads + 1 and config["errors"] == []

    # The next decisions follow them: research overtakes prod as containers free up.
    wait_until("research (now weight 3) to use more than prod (now 1)",
               lambda: used("root.research") > used("root.prod"), 120)
    after = c.assigns(since=saved)
    to_research = sum(e["pool"] == "root.research" for e in after)
    to_prod = sum(e["pool"] == "root.prod" for e in after)
    assert to_research > to_prod, f"after the edit Python gave {to_research} to research, {to_prod} to prod"

    # A broken save: the last good file stays in force, the API names FILE:LINE.
    broken = weights(5, 5).replace("<weight>5</weight>", "<weight>heavy</weight>", 1)
    line = next(i for i, text in enumerate(broken.splitlines(), 1) if "heavy" in text)
    c.write_allocations(broken)
    errors = wait_until("the broken edit's error in the API", lambda: c.api("/api/v1/config")["errors"], 10,
                        interval=0.1)
    assert errors[0].startswith(f"{ALLOCATIONS_IN_CONTAINER}:{line}:"), errors
    pools = c.pools()
    assert pools["root.prod"]["weight"] == 1 and pools["root.research"]["weight"] == 3

    c.write_allocations(weights(2, 1))
    wait_until("the fixed file in force", lambda: not c.api("/api/v1/config")["errors"]
               and c.pools()["root.prod"]["weight"] == 2, 10)
    for job in (prod, research):  # seen through; the first test runs jobs to the end
        job.kill()


def _serve_pid(c) -> str:
    # Not PID 1 (docker-init, whose command line names it too): the Python under it.
    return c.docker("exec", c.container("policy"), "pgrep", "-o", "-f", "python3 .*slotwise serve").stdout.split()[0]


def _registers(c) -> int:
    return sum(e["event"] == "register" for e in c.events())


def _decides_again(c, pool: str, user: str, since: float) -> None:
    """A new job's containers are Python's decisions again."""
    job = c.submit(pool, user, "sleep", *SHORT)
    succeeded(job, job.wait())
    got = python_assigned(c, job, since)
    assert got and any(not e["am"] for e in got), f"Python assigned nothing of {job.app_id} after it came back"


def test_policy_container_killed_mid_job(docker_cluster):
    c = docker_cluster
    c.wait_ready()
    registers = _registers(c)
    restarts = int(c.docker("inspect", "-f", "{{.RestartCount}}", c.container("policy")).stdout)
    job = c.submit("prod", "alice", "sleep", "-m", "10", "-r", "1", "-mt", "3000", "-rt", "100")
    job.wait_submitted()
    wait_until("Python to assign a task of the job", lambda: any(not e["am"] for e in python_assigned(c, job)), 120)
    fifo = c.fifo_heartbeats()
    killed = time.time()
    # As the kernel's OOM killer would: the server dies, the container exits
    # and its restart policy brings it back.
    c.docker("exec", c.container("policy"), "kill", "-KILL", _serve_pid(c))
    wait_until("the RM to schedule by its FIFO", lambda: c.fifo_heartbeats() > fifo, 60, interval=0.2)
    succeeded(job, job.wait())
    wait_until("the policy container to restart",
               lambda: int(c.docker("inspect", "-f", "{{.RestartCount}}", c.container("policy")).stdout) > restarts,
               60)
    wait_until("Python to register again", c.registered, 120)
    assert _registers(c) > registers
    fallbacks = [e for e in c.events() if e["event"] == "fallback" and e["ts"] >= killed]
    assert fallbacks and sum(e["count"] for e in fallbacks) > 0, "the new server logged no FIFO episode"
    _decides_again(c, "research", "bob", killed)


def test_policy_container_paused_past_the_deadline(docker_cluster):
    c = docker_cluster
    c.wait_ready()
    registers = _registers(c)
    job = c.submit("research", "bob", "sleep", "-m", "10", "-r", "1", "-mt", "3000", "-rt", "100")
    job.wait_submitted()
    wait_until("Python to assign a task of the job", lambda: any(not e["am"] for e in python_assigned(c, job)), 120)
    fifo = c.fifo_heartbeats()
    policy = c.container("policy")
    paused = time.time()
    c.docker("pause", policy)
    try:
        # The shim's read timeout (5 s) drops a Python that stopped answering;
        # the cluster goes on by its FIFO meanwhile.
        wait_until("the RM to schedule by its FIFO while Python is paused",
                   lambda: c.fifo_heartbeats() > fifo + 3, 60, interval=0.5)
        time.sleep(max(0.0, paused + 8 - time.time()))
    finally:
        c.docker("unpause", policy)
    wait_until("Python to register again after the pause", lambda: _registers(c) > registers and c.registered(), 120)
    succeeded(job, job.wait())
    assert any(e["event"] == "fallback" and e["ts"] >= paused for e in c.events())
    _decides_again(c, "prod", "alice", paused)


def test_nodemanager_stopped_mid_job(docker_cluster):
    c = docker_cluster
    c.wait_ready()
    job = c.submit("prod", "alice", "sleep", "-m", "16", "-r", "1", "-mt", "3000", "-rt", "100")
    job.wait_submitted()
    wait_until("containers of the job on both nodes",
               lambda: {e["node"] for e in python_assigned(c, job)} >= {"nm1:45454", "nm2:45454"}, 180)
    stopped = time.time()
    c.docker("stop", c.container("nm2"))
    try:
        wait_until("Python's view to drop nm2", lambda: c.api("/api/v1/cluster")["nodes"] == 1, 60)
        report = job.wait()
        succeeded(job, report)
        late = [e for e in c.assigns(since=stopped + 1) if e["node"] == "nm2:45454"]
        assert not late, f"Python assigned to the stopped node: {late}"
        assert any(e["node"] == "nm1:45454" for e in python_assigned(c, job, stopped)), \
            "nothing of the job was placed on the remaining node after the stop"
    finally:
        c.docker("start", c.container("nm2"))
    c.wait_ready()
