"""The dockerized cluster as its operators use it: MapReduce jobs in two
queues, a job reading its input from HDFS data-local under delay scheduling,
the datacenter network's rates measured on HDFS block reads, the
allocation file edited on the host while jobs run, the policy container
killed and paused mid-job, the ResourceManager killed and recovering its
work, a worker (NodeManager and DataNode) stopped.

The tests share one compose cluster (conftest) and run in this order; each
starts by waiting for the cluster to be whole and idle again.

They assert outcomes: jobs succeed, Python's decisions are in its event log,
every heartbeat the RM had to schedule by its FIFO is in a fallback episode
Python logged. None waits for a transient state (the RM on its FIFO, say)
that a faster recovery may skip: after the policy server is killed, a new
one may be back before any heartbeat needed the FIFO, and that passes.
"""

from __future__ import annotations

import importlib.util
import json
import re
import time
from datetime import datetime

import pytest

from dockertools import ALLOCATIONS_IN_CONTAINER, REPO, wait_until, words

pytestmark = pytest.mark.docker

#: Enough maps that both queues want more than the cluster has (8 containers
#: of 512 MB on two 2 GB NodeManagers) for longer than the test that runs them
#: (200 maps of 2.5 s on 4-5 containers take minutes), so that the shares it
#: checks are steady states, not a window to catch; the test kills them.
LONG = ("-m", "200", "-r", "1", "-mt", "2500", "-rt", "100")
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
        f"{job.app_id} in {job.queue}: {report['state']}/{report['finalStatus']}, client exit " \
        f"{report['client_exit']}; diagnostics: {report.get('diagnostics')}\n{job.tail()}"


def python_assigned(cluster, job, since: float = 0.0) -> list[dict]:
    return cluster.assigns(job.app_id, since)


def test_jobs_in_two_queues_complete_with_pythons_assignments(docker_cluster):
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
    for job, queue in ((prod, "root.prod"), (research, "root.research")):
        got = python_assigned(c, job)
        assert {e["queue"] for e in got} == {queue}, got
        # The AM (unless a FIFO heartbeat took it) and task containers were
        # Python's decisions, on the cluster's nodes.
        assert any(e["am"] for e in got) or fifo_episodes, got
        assert any(not e["am"] for e in got), got
        assert {e["node"] for e in got} <= {c.node_id(1), c.node_id(2)}
    places = {e["app"]: e["queue"] for e in c.events() if e["event"] == "place"}
    assert places[prod.app_id] == "root.prod" and places[research.app_id] == "root.research"


def test_hdfs_job_reads_its_blocks_data_local_under_delay_scheduling(docker_cluster):
    """Each block of the input on one DataNode only (replication 1): a map
    runs data-local only if it is placed on that node, which the first free
    heartbeat picks half the time; delay scheduling (the policy server's
    default waits) makes every one data-local. Three blocks fit on one node
    beside the AM, so no map ever has to give up its node for want of room."""
    c = docker_cluster
    c.wait_ready()
    run = f"/tests/{int(time.time())}"
    c.put_text(f"{run}/in/words.txt", words(3 * 4 * 1024 * 1024 - 4096, seed=26), replication=1)
    blocks = c.hdfs("fsck", f"{run}/in/words.txt", "-files", "-blocks", "-locations")
    assert len(re.findall(r"^\d+\. BP-\S+:blk_", blocks, re.M)) == 3, blocks
    # No speculative attempts: one attempt a map, placed by the scheduler.
    job = c.submit("prod", "alice", "wordcount", "-Dmapreduce.map.speculative=false", f"{run}/in", f"{run}/out")
    succeeded(job, job.wait())
    counts = c.hdfs("dfs", "-cat", f"{run}/out/part-r-00000").splitlines()
    assert len(counts) == 500  # the job read all of its input from HDFS and wrote its output there
    got = job.counters()
    print(f"\nwordcount on HDFS: launched {got.get('Launched map tasks')} maps, "
          f"{got.get('Data-local map tasks', 0)} data-local, {got.get('Rack-local map tasks', 0)} rack-local")
    assert got["Launched map tasks"] >= 3, got
    assert got.get("Data-local map tasks", 0) == got["Launched map tasks"], \
        f"maps not data-local under delay scheduling: {got}\n{blocks}"


def load_probe():
    spec = importlib.util.spec_from_file_location("net_probe", REPO / "docker" / "net-probe.py")
    probe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(probe)
    return probe


def set_net(c, i: int, mode: str, **env: str) -> str:
    """`slotwise-hadoop net MODE` in worker I (what a worker started with
    SLOTWISE_NET=MODE does at start), with the environment's overrides."""
    flags = [f for k, v in env.items() for f in ("-e", f"{k}={v}")]
    out = c.docker("exec", *flags, c.worker(i), "slotwise-hadoop", "net", mode, "--wait", "60", check=False)
    assert out.returncode == 0, f"net {mode} in worker {i}: {out.stdout}{out.stderr}"
    return out.stdout.strip()


def test_datacenter_network_makes_remote_block_reads_slower_by_its_rates(docker_cluster):
    """SLOTWISE_NET=datacenter put in force on the running cluster (`slotwise-
    hadoop net datacenter` in each worker, what a worker started with it
    does) and measured with docker/net-probe.py: a 1 MB block on worker 1's
    DataNode, read over WebHDFS from worker 1 (node-local: unshaped), from
    worker 2 (off worker 1's rack: its share of the uplink) and, with worker
    1's shaping applied as if both workers shared a rack (SLOTWISE_RACKS=1
    for its `net`; the tier has one worker a rack), from worker 2 again (its
    rack: the NIC's rate). A remote read is never faster than its rate (htb
    lets nothing past it; 15% for the measurement) nor far slower (40% of it
    on a loaded machine), a rack-local read runs at most half as fast as a
    local one (in fact a few percent) and an off-rack one at most 60% as
    fast as a rack-local one (stated: 1 / the oversubscription). Then `net
    flat` (the tier's own network): the same read runs unshaped."""
    c = docker_cluster
    c.wait_ready()
    probe = load_probe()
    try:
        for i in (1, 2):
            print("\n" + set_net(c, i, "datacenter"), end="")
        with probe.Block(c.PROJECT, False, 1, 1.0) as block:
            off = probe.measure(block)
            print("\n" + set_net(c, 1, "datacenter", SLOTWISE_RACKS="1"), end="")
            rack = probe.measure(block)
            set_net(c, 1, "flat")
            flat = probe.measure(block)
    finally:
        for i in (1, 2):
            set_net(c, i, "flat")
    for result in (off, rack, flat):
        print("\n" + probe.render(result), end="")

    def read(result, cls):
        return next(r for r in result["reads"] if r["class"] == cls)

    nic, uplink = off["nic_kbit"], off["offrack_kbit"]
    local, offrack, racklocal = read(off, "local"), read(off, "offrack"), read(rack, "rack")
    assert read(off, "rack")["reader"] is None and offrack["reader"] == 2 and racklocal["reader"] == 2
    assert 0.4 * uplink <= offrack["mbit_s"] * 1000 <= 1.15 * uplink, offrack
    assert 0.4 * nic <= racklocal["mbit_s"] * 1000 <= 1.15 * nic, racklocal
    assert racklocal["mbyte_s"] <= 0.5 * local["mbyte_s"], (racklocal, local)
    assert offrack["mbyte_s"] <= 0.6 * racklocal["mbyte_s"], (offrack, racklocal)
    unshaped = read(flat, "offrack")
    assert flat["in_force"] == "flat" and unshaped["reader"] == 2
    assert unshaped["mbit_s"] * 1000 >= 3 * nic, unshaped


def test_allocation_file_edited_on_the_host_while_jobs_run(docker_cluster):
    c = docker_cluster
    c.wait_ready()
    assert c.queues()["root.prod"]["weight"] == 2 and c.queues()["root.research"]["weight"] == 1
    prod = c.submit("prod", "alice", "sleep", *LONG)
    research = c.submit("research", "bob", "sleep", *LONG)
    try:
        check_edits(c)
    finally:
        for job in (prod, research):  # their demand outlasts the test on purpose
            job.kill()


def check_edits(c) -> None:
    def used() -> tuple[float, float]:  # one snapshot of both queues
        queues = c.queues()
        return queues["root.prod"]["usage"]["memory_mb"], queues["root.research"]["usage"]["memory_mb"]

    # Under 2:1 prod runs more than research once both have started (both
    # want more than the cluster has for minutes: a steady state).
    wait_until("prod (weight 2) to use more than research (weight 1)",
               lambda: (u := used())[1] > 0 and u[0] > u[1], 600)

    reloads = c.api("/api/v1/config")["reloads"]
    saved = time.time()
    c.write_allocations(weights(1, 3))

    def in_force(queues: dict) -> bool:  # the weights, and the fair shares computed from them
        prod, research = queues["root.prod"], queues["root.research"]
        return (prod["weight"] == 1 and research["weight"] == 3
                and research["fair_share"]["memory_mb"] > 2 * prod["fair_share"]["memory_mb"])

    wait_until("the new weights in force in the API", lambda: in_force(c.queues()), 60, interval=0.05)
    seen = time.time() - saved
    # The reload's own time (Python's `reload` event), not when our polling
    # over HTTP on a busy machine happened to see it.
    reload = wait_until("Python's reload event", lambda: [e for e in c.events()
                                                           if e["event"] == "reload" and e["ts"] >= saved], 60)[0]
    took = reload["ts"] - saved
    print(f"\nthe edit was in force {took:.2f} s after the save (seen in the API after {seen:.2f} s)")
    assert took <= 2.0, f"the edit took {took:.2f} s to be in force"
    config = c.api("/api/v1/config")
    assert config["reloads"] == reloads + 1 and config["errors"] == []

    # The next decisions follow them: research overtakes prod as containers
    # free up, and stays ahead while both want more (steady under 1:3).
    wait_until("research (now weight 3) to use more than prod (now 1)", lambda: (u := used())[1] > u[0], 600)
    # Python's decisions made that happen (the usage is what its assignments
    # add up to; counting assignments in a window after the save instead
    # failed by chance on a loaded machine: 4 to research, 5 to prod, while
    # prod's running tasks were still being replaced as they ended).
    assert any(e["queue"] == "root.research" for e in c.assigns(since=saved))

    # A broken save: the last good file stays in force, the API names FILE:LINE.
    broken = weights(5, 5).replace("<weight>5</weight>", "<weight>heavy</weight>", 1)
    line = next(i for i, text in enumerate(broken.splitlines(), 1) if "heavy" in text)
    c.write_allocations(broken)
    errors = wait_until("the broken edit's error in the API", lambda: c.api("/api/v1/config")["errors"], 60,
                        interval=0.1)
    assert errors[0].startswith(f"{ALLOCATIONS_IN_CONTAINER}/{c.allocations_file.name}:{line}:"), errors
    queues = c.queues()
    assert queues["root.prod"]["weight"] == 1 and queues["root.research"]["weight"] == 3

    c.write_allocations(weights(2, 1))
    wait_until("the fixed file in force", lambda: not c.api("/api/v1/config")["errors"]
               and c.queues()["root.prod"]["weight"] == 2, 60)


def _serve_pid(c) -> str:
    # Not PID 1 (docker-init, whose command line names it too): the Python under it.
    return c.docker("exec", c.container("policy"), "pgrep", "-o", "-f", "python3 .*slotwise serve").stdout.split()[0]


def _restarts(c) -> int:
    return int(c.docker("inspect", "-f", "{{.RestartCount}}", c.container("policy")).stdout)


def _started_at(c) -> float:
    """When the policy container last started (Unix time)."""
    text = c.docker("inspect", "-f", "{{.State.StartedAt}}", c.container("policy")).stdout.strip()
    # 2026-11-25T16:27:00.123456789Z: Python takes at most 6 digits of the fraction.
    text = re.sub(r"(\.\d{6})\d*", r"\1", text).replace("Z", "+00:00")
    return datetime.fromisoformat(text).timestamp()


def _decides_again(c, queue: str, user: str, since: float) -> None:
    """A new job succeeds, and its task containers are Python's decisions
    (assignments logged after ``since``)."""
    job = c.submit(queue, user, "sleep", *SHORT)
    succeeded(job, job.wait())
    got = python_assigned(c, job, since)
    assert got and any(not e["am"] for e in got), f"Python assigned nothing of {job.app_id} after it came back"


def _python_assigned_a_task(c, job) -> None:
    job.wait_submitted()
    wait_until("Python to assign a task of the job", lambda: any(not e["am"] for e in python_assigned(c, job)), 600)


def test_policy_container_killed_mid_job(docker_cluster):
    c = docker_cluster
    c.wait_ready()
    restarts = _restarts(c)
    job = c.submit("prod", "alice", "sleep", "-m", "10", "-r", "1", "-mt", "3000", "-rt", "100")
    _python_assigned_a_task(c, job)
    mark = time.time()
    fifo = c.fifo_heartbeats()
    # As the kernel's OOM killer would: the server dies, the container exits
    # and its restart policy brings it back. Whether any heartbeat comes
    # before the new server registers is a race the test does not take
    # sides in: FIFO for a while, or none at all, both pass.
    c.docker("exec", c.container("policy"), "kill", "-KILL", _serve_pid(c))
    killed = time.time()
    succeeded(job, job.wait())
    wait_until("the policy container to restart", lambda: _restarts(c) > restarts, 600)
    # The new container's server: registered after the container started
    # again (the old one may have registered again before the kill, had the
    # shim dropped it; pids repeat from one container start to the next).
    restarted = _started_at(c)
    back = wait_until("a new policy server to register with the RM",
                      lambda: c.registrations(since=restarted), 600)[0]
    print(f"\nthe new policy server registered {back['ts'] - killed:.2f} s after the kill")
    # It decides: a new job's containers are its assignments.
    _decides_again(c, "research", "bob", back["ts"])
    # The RM was never left without a scheduler, and whatever it scheduled by
    # its FIFO meanwhile (nothing, after a fast recovery) Python logged.
    fifo = c.check_fallback_logged(mark, fifo)
    print(f"heartbeats the RM scheduled by its FIFO after the kill: {fifo}")


def test_policy_container_paused_past_the_deadline(docker_cluster):
    c = docker_cluster
    c.wait_ready()
    job = c.submit("research", "bob", "sleep", "-m", "10", "-r", "1", "-mt", "3000", "-rt", "100")
    _python_assigned_a_task(c, job)
    mark = time.time()
    fifo = c.fifo_heartbeats()
    policy = c.container("policy")
    c.pause(policy)
    paused = time.time()
    try:
        # Frozen past the shim's deadline and its read timeout (5 s): the RM
        # must go on by its FIFO while it lasts. The test holds this state (the
        # pause) until the RM has scheduled by its FIFO, so it is no window to
        # catch.
        wait_until("the RM to schedule by its FIFO while Python is frozen", lambda: c.fifo_heartbeats() > fifo,
                   60, interval=0.5)
        time.sleep(max(0.0, paused + 8 - time.time()))
    finally:
        c.docker("unpause", policy)
    resumed = time.time()
    succeeded(job, job.wait())
    # Python decides again (a busy Python is not a dead one: one read timeout
    # is a failed call, and it keeps its registration), and logged what the
    # FIFO did meanwhile.
    _decides_again(c, "prod", "alice", resumed)
    fifo = c.check_fallback_logged(mark, fifo)
    print(f"\nheartbeats the RM scheduled by its FIFO during and after the pause: {fifo}; "
          f"registrations since: {len(c.registrations(since=paused))}")


def _nm_running(c, app_id: str) -> int:
    """The app's containers the NodeManagers themselves run."""
    key = app_id.replace("application_", "_")
    n = 0
    for i in (1, 2):
        out = c.docker("exec", c.worker(i), "curl", "-fsS", "http://127.0.0.1:8042/ws/v1/node/containers").stdout
        rows = (json.loads(out).get("containers") or {}).get("container") or []
        n += sum(1 for r in rows if r.get("state") == "RUNNING" and key in r["id"])
    return n


def _rm_figures(c, app_id: str) -> dict:
    """What TestWorkPreservingRMRestart compares across a restart, from the
    RM's REST API: the cluster's allocations, each node's used and available
    resources and containers, the app's running containers."""
    m = c.rm("/ws/v1/cluster/metrics")["clusterMetrics"]
    return {"cluster": {k: m[k] for k in ("allocatedMB", "allocatedVirtualCores", "containersAllocated",
                                           "availableMB", "appsRunning")},
            "nodes": sorted((n["id"], n["usedMemoryMB"], n["availMemoryMB"], n["numContainers"])
                            for n in c.rm_nodes() if n["state"] == "RUNNING"),
            "app": c.rm(f"/ws/v1/cluster/apps/{app_id}")["app"].get("runningContainers")}


def test_resourcemanager_killed_mid_job_recovers_it_and_python_decides_again(docker_cluster):
    """The RM of the rm container is killed (SIGKILL) and starts again in the
    same container, recovering from its state store: the maps run on through
    it, the RM's figures come back as they were, the policy server (never
    restarted, in the rm container's network) registers with the new RM, and
    decides the next job."""
    c = docker_cluster
    c.wait_ready()
    restarts, serve = _restarts(c), _serve_pid(c)
    job = c.submit("prod", "alice", "sleep", "-m", "4", "-r", "1", "-mt", "150000", "-rt", "100")
    _python_assigned_a_task(c, job)
    # Running on the NodeManagers, not only allocated by the RM (a container
    # the AM has not launched yet is rightly lost when the RM restarts).
    wait_until("the job's AM and its 4 maps running", lambda: _rm_figures(c, job.app_id)["app"] == 5
               and _nm_running(c, job.app_id) == 5, 600)
    before = _rm_figures(c, job.app_id)
    mark = time.time()
    out = c.docker("exec", c.container("rm"), "slotwise-hadoop", "restart-rm", "--kill").stdout
    back = wait_until("Python registered with the new RM", lambda: c.registrations(since=mark), 300)[0]
    print(f"\n{out.strip()}; Python registered {back['ts'] - mark:.1f} s after the kill")
    wait_until("the RM's figures as they were before the restart", lambda: _rm_figures(c, job.app_id) == before,
               120)
    wait_until("Python's view of root.prod to match the RM's",
               lambda: c.queues()["root.prod"]["usage"]["memory_mb"] == before["cluster"]["allocatedMB"], 60)
    succeeded(job, job.wait())
    # It decides after the restart. (Not judged by the running job's reduce
    # alone: one container, which a single heartbeat past the deadline on a
    # loaded machine gives to the FIFO.)
    _decides_again(c, "research", "bob", back["ts"])
    assert (_restarts(c), _serve_pid(c)) == (restarts, serve), "the policy server was restarted"
    assert not [e for e in c.events() if e["event"] == "divergence" and e["ts"] >= mark]


def test_worker_stopped_mid_job(docker_cluster):
    """Worker 2's NodeManager and DataNode stop together (docker stop: SIGTERM
    to both): the job goes on on worker 1, reading the blocks' other replicas."""
    c = docker_cluster
    c.wait_ready()
    one, two = c.node_id(1), c.node_id(2)
    job = c.submit("prod", "alice", "sleep", "-m", "16", "-r", "1", "-mt", "3000", "-rt", "100")
    job.wait_submitted()
    wait_until("containers of the job on both nodes",
               lambda: {e["node"] for e in python_assigned(c, job)} >= {one, two}, 600)
    stopped = time.time()
    c.docker("stop", c.worker(2))
    try:
        # The test holds worker 2 stopped: Python's view loses it and keeps it lost.
        wait_until("Python's view to drop worker 2", lambda: c.api("/api/v1/cluster")["nodes"] == 1, 300)
        dropped = time.time()  # Python had dropped it by now
        report = job.wait()
        succeeded(job, report)
        # Until the RM removed the node, heartbeats it sent while shutting
        # down could still get containers; after, none.
        late = [e for e in c.assigns(since=dropped) if e["node"] == two]
        assert not late, f"Python assigned to the stopped node after dropping it: {late}"
        assert any(e["node"] == one for e in python_assigned(c, job, stopped)), \
            "nothing of the job was placed on the remaining node after the stop"
    finally:
        c.docker("start", c.worker(2))
    c.wait_ready()
