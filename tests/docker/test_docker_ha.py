"""ResourceManager HA (docker/compose.ha.yaml): two RMs over ZooKeeper, each
with the policy server that shares its network. Only the active RM runs the
shim; the standby's policy server says so; when the active RM dies its
partner takes over, the partner's policy server registers and decides, and
the job that was running completes.

The tests share one compose cluster (conftest) and run in this order."""

from __future__ import annotations

import time

import pytest

from dockertools import REPO, wait_until

pytestmark = pytest.mark.docker

SHORT = ("-m", "2", "-r", "1", "-mt", "500", "-rt", "100")


def succeeded(job, report) -> None:
    assert report["finalStatus"] == "SUCCEEDED" and report["client_exit"] == 0, \
        f"{job.app_id}: {report['state']}/{report['finalStatus']}, client exit {report['client_exit']}\n{job.tail()}"


def assigns(c, i: int, app_id: str | None = None, since: float = 0.0) -> list[dict]:
    return [e for e in c.events_of(i) if e["event"] == "assign" and e["ts"] >= since
            and (app_id is None or e["app"] == app_id)]


def _restarts(c, service: str) -> int:
    return int(c.docker("inspect", "-f", "{{.RestartCount}}", c.container(service)).stdout)


def test_the_active_rms_policy_decides_and_the_standbys_says_standby(ha_cluster):
    c = ha_cluster
    c.wait_ready()
    active = c.active()
    standby = 3 - active
    assert c.ha_state(standby) == "STANDBY"
    link = c.api_of(standby, "/api/v1/status")["resource_manager"]
    assert link["ha_state"] == "standby" and not link["registered"], link
    assert "slotwise_resourcemanager_standby 1.0" in c.api_of(standby, "/metrics", raw=True)
    assert "standby-banner" in c.api_of(standby, "/", raw=True)
    link = c.api_of(active, "/api/v1/status")["resource_manager"]
    assert link["ha_state"] == "active" and link["registered"], link
    assert "slotwise_resourcemanager_standby 0.0" in c.api_of(active, "/metrics", raw=True)
    job = c.submit("prod", "alice", "sleep", *SHORT)
    succeeded(job, job.wait())
    assert [e for e in assigns(c, active, job.app_id) if not e["am"]], "the active's Python placed its tasks"
    assert not assigns(c, standby, job.app_id), "the standby's Python placed nothing"


def test_a_failover_mid_job_the_new_active_rms_policy_decides_and_the_job_completes(ha_cluster):
    """kill -9 of the active RM's process: the election (once the dead
    process's ZooKeeper session lapses) makes an RM active again: the other
    one, or the killed one back in its container, whichever wins. That RM
    recovers the running job from ZooKeeper and the NodeManagers and the job
    completes; its policy server registers and places a new job's
    containers; the loser is the standby and its policy server says so."""
    c = ha_cluster
    c.wait_ready()
    old = c.active()
    policies = {i: _restarts(c, f"policy{i}") for i in (1, 2)}
    running = c.submit("prod", "alice", "sleep", "-m", "4", "-r", "1", "-mt", "60000", "-rt", "100")
    running.wait_submitted()
    wait_until("Python to place a map of the running job",
               lambda: [e for e in assigns(c, old, running.app_id) if not e["am"]], 600)
    killed = time.time()
    c.docker("exec", c.container(f"rm{old}"), "sh", "-c", "kill -KILL $(cat /tmp/slotwise-rm.pid)")
    fresh = c.submit("research", "bob", "sleep", *SHORT)  # its client fails over to whichever RM is active
    winner, registered = wait_until("a policy server to register with an active RM after the kill", lambda: next(
        ((i, e) for i in (1, 2) for e in c.events_of(i) if e["event"] == "register" and e["ts"] >= killed), None), 300)
    fresh.wait_submitted(300)
    first = wait_until(f"policy{winner} to place a container of the new job",
                       lambda: assigns(c, winner, fresh.app_id, killed), 600)[0]
    print(f"\nfailover: kill -9 of rm{old}'s RM -> rm{winner} active, policy{winner} registered "
          f"{registered['ts'] - killed:.1f} s, first container placed by it {first['ts'] - killed:.1f} s "
          "(the new job's client started at the kill)")
    assert c.active() == winner
    succeeded(fresh, fresh.wait())
    succeeded(running, running.wait())  # recovered by the active RM
    loser = 3 - winner
    wait_until(f"rm{loser} as the standby", lambda: c.ha_state(loser) == "STANDBY", 600)
    wait_until(f"policy{loser} to say standby", c.standby_says_so, 120)
    assert not assigns(c, loser, fresh.app_id), "the standby's policy server placed nothing"
    assert {i: _restarts(c, f"policy{i}") for i in (1, 2)} == policies, "a policy container was restarted"


def test_a_three_minute_soak_under_faults_fails_no_job(ha_cluster):
    """benchmarks/soak.py --quick on this cluster: jobs in three queues while
    faults strike (with this seed: the active RM killed, then its successor's
    policy server killed, then paused); every job succeeds."""
    import sys

    sys.path.insert(0, str(REPO / "benchmarks"))
    from soak import run_soak

    figures = run_soak(ha_cluster, 3.0, seed=5)  # a failover, a policy kill and a pause
    assert figures["jobs"] >= 5 and figures["failed"] == 0, figures
    assert all(s != float("inf") for s in figures["failovers"]), figures
