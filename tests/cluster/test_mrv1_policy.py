"""A real Hadoop 1.2.1 JobTracker with SlotwiseTaskScheduler, decided by
``slotwise serve`` as a separate process: jobs in two queues get their tasks
from Python, weights split the map slots, a hot reload changes the split, a
queue starved of its min share gets slots by killing the other queue's newest
tasks, and a killed ``serve`` leaves the jobs to the shim's FIFO until a new
one registers. Then, on the same cluster, Dynamic Priority: two queues paying
3:1 split a saturated cluster's map slots 3:1, and ``slotwise serve`` killed
with SIGKILL mid-interval and started again loses no committed charge and
charges no interval twice."""

from __future__ import annotations

import html

import getpass
import os
import re
import sqlite3
import subprocess
import sys
import threading
import time

import pytest
from pathlib import Path
import requests

from slotwise.localcluster.mrv1 import Mrv1Cluster
from support import CLUSTER_START_TIMEOUT, skip_without_java
from test_shim_cluster import Serve, cluster_cli

pytestmark = pytest.mark.cluster

MAP_SLOTS = 4  # per TaskTracker; two TaskTrackers


class MrServe(Serve):
    def spawn(self, *extra: str, http_port: int | None = None):
        return super().spawn("--mrv1", *extra, http_port=http_port)  # the pools file alone reads as YARN's


def pools_xml(prod_weight: float, research_weight: float, extra: str = "") -> str:
    return f"""<?xml version="1.0"?>
<allocations>
  <pool name="prod"><weight>{prod_weight}</weight>{extra}</pool>
  <pool name="research"><weight>{research_weight}</weight></pool>
</allocations>
"""


def save(path, text: str) -> None:
    """As editors save: a new file renamed over the old one."""
    tmp = path.with_name(path.name + ".new")
    tmp.write_text(text)
    os.replace(tmp, path)


@pytest.fixture(scope="module")
def mrv1(tmp_path_factory):
    skip_without_java("local MRv1 cluster")
    base = tmp_path_factory.mktemp("mrv1-policy")
    allocations = base / "pools.xml"
    allocations.write_text(pools_xml(3, 1))
    # These tests measure Python's split, so Python must answer: a deadline a
    # loaded 2-core machine (which also runs every task JVM) does not miss
    # (3 s was missed every half minute here, and the FIFO's heartbeats
    # spoiled the split), and a busy Python is not cut off as a hung one. A
    # killed serve still fails its call at once.
    cluster = Mrv1Cluster(base / "cluster", nodes=2, scheduler="slotwise", map_slots=MAP_SLOTS, reduce_slots=1,
                          start_timeout=CLUSTER_START_TIMEOUT, conf={"slotwise.policy.timeout-ms": "20000",
                                                      "slotwise.policy.read-timeout-ms": "60000",
                                                      # off by default, as in Hadoop 1
                                                      "mapred.fairscheduler.preemption": "true"})
    serve = MrServe(cluster, allocations, base / "events.jsonl")
    try:
        cluster.up()
        serve.start()
        yield cluster, serve, allocations
    finally:
        serve.stop()
        cluster.down()


def sleep_job(cluster, queue: str, maps: int, map_ms: int):
    return cluster.submit("sleep", ["-m", str(maps), "-r", "1", "-mt", str(map_ms), "-rt", "100"], queue=queue,
                          wait=False)


def map_usage(serve) -> dict[str, float]:
    rows = requests.get(f"{serve.url}/api/v1/queues", timeout=30).json()  # a loaded serve answers late
    return {r["queue"]: r["usage"]["map_slots"] for r in rows}


def sample_split(serve, seconds: float) -> tuple[float, float, int]:
    """Time-averaged map slots of prod and research while both hold some."""
    prod = research = 0.0
    n = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        u = map_usage(serve)
        p, r = u.get("root.prod", 0), u.get("root.research", 0)
        if p + r >= 2 * MAP_SLOTS - 1 and p and r:  # saturated, both running
            prod, research, n = prod + p, research + r, n + 1
        time.sleep(1)
    return prod, research, n


def test_weights_split_the_map_slots_and_a_reload_changes_it(mrv1):
    cluster, serve, allocations = mrv1
    mark = len(serve.events())
    prod = sleep_job(cluster, "prod", 60, 6000)
    research = sleep_job(cluster, "research", 60, 6000)
    try:
        check_split_and_reload(cluster, serve, allocations, mark, prod, research)
    finally:
        stop_jobs(cluster, serve, prod, research)


def check_split_and_reload(cluster, serve, allocations, mark, prod, research):
    prod_id, research_id = job_id_of(prod), job_id_of(research)
    wait_until(lambda: all(map_usage(serve).get(p, 0) for p in ("root.prod", "root.research")), 600)
    # Tasks are not preempted here: the first wave (whichever job's setup ended
    # first takes what is free) has to end before the weights show.
    time.sleep(25)
    p, r, n = sample_split(serve, 30)
    assert n >= 10, f"only {n} saturated samples"
    ratio = p / r
    print(f"\nweights 3:1: prod {p / n:.2f} research {r / n:.2f} map slots on average ({n} samples), ratio {ratio:.2f}")
    assert 3 * 0.85 <= ratio <= 3 * 1.15, ratio

    save(allocations, pools_xml(1, 3))
    serve.wait_for(lambda e: e["event"] == "reload", 20, since=mark)
    time.sleep(20)  # running tasks end; new ones follow the new weights
    p2, r2, n2 = sample_split(serve, 20)
    print(f"after the reload to 1:3: prod {p2 / max(n2, 1):.2f} research {r2 / max(n2, 1):.2f} ({n2} samples)")
    assert n2 >= 5 and r2 > 1.5 * p2

    assigns = [e for e in serve.events()[mark:] if e["event"] == "assign"]
    for job_id, queue in ((prod_id, "root.prod"), (research_id, "root.research")):
        mine = [e for e in assigns if e["app"] == job_id]
        assert {e["queue"] for e in mine} == {queue}
        assert sum(e.get("map_slots") == 1 for e in mine) >= 12  # its maps: Python's
    # The rest of their maps would take minutes: jobs completing under Python
    # are the next two tests' (prod's with preemption, research's after a restart).
    save(allocations, pools_xml(3, 1))


def job_id_of(job, timeout: float = 60.0) -> str:
    """The JobTracker's id of a submitted job, once its client has printed it."""
    deadline = time.monotonic() + timeout
    while job.job_id is None:
        if time.monotonic() > deadline:
            code = job.poll()
            raise AssertionError(f"{job.program}: no job id after {timeout:.0f} s (client "
                                 f"{'running' if code is None else f'exited {code}'}); client log {job.log_file}")
        time.sleep(0.1)
    return job.job_id


def stop_jobs(cluster, serve, *jobs) -> None:
    for job in jobs:
        job.kill()
        if job.job_id:
            cluster.job_command(["-kill", job.job_id])
    wait_until(lambda: not any(map_usage(serve).values()), 600)


def wait_until(pred, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(1)


def test_a_queue_below_its_min_share_gets_slots_by_preemption(mrv1):
    cluster, serve, allocations = mrv1
    mark = len(serve.events())
    save(allocations, pools_xml(1, 1, "<minMaps>4</minMaps><minSharePreemptionTimeout>3</minSharePreemptionTimeout>"))
    serve.wait_for(lambda e: e["event"] == "reload", 20, since=mark)
    research = sleep_job(cluster, "research", 16, 60000)  # long maps: nothing frees on its own
    research_id = job_id_of(research)
    deadline = time.monotonic() + 90
    while map_usage(serve).get("root.research", 0) < 2 * MAP_SLOTS and time.monotonic() < deadline:
        time.sleep(1)
    assert map_usage(serve).get("root.research", 0) == 2 * MAP_SLOTS
    prod = sleep_job(cluster, "prod", 4, 1000)
    prod_id = job_id_of(prod)
    registered = [e for e in serve.events() if e["event"] == "register"][-1]
    assert (registered["preemption"], registered["preemption_from"]) == (True, "mapred.fairscheduler.preemption")
    preempt = serve.wait_for(lambda e: e["event"] == "preempt" and e["queue"] == "root.research", 60, since=mark)
    assert preempt["app"] == research_id and preempt["kill"]
    result = prod.wait(900)
    assert result.succeeded
    prod_maps = [e for e in serve.events()[mark:] if e["event"] == "assign" and e["app"] == prod_id
                 and e.get("map_slots") == 1]
    assert len(prod_maps) >= 4
    killed = [e for e in serve.events()[mark:] if e["event"] == "preempt"]
    print(f"\nmin share: {len(killed)} research task(s) killed for prod; prod finished in {result.seconds:.0f} s")
    assert all(e["queue"] == "root.research" for e in killed)
    stop_jobs(cluster, serve, research)
    save(allocations, pools_xml(3, 1))


def test_a_killed_serve_leaves_the_job_to_the_fifo_and_a_new_one_decides(mrv1):
    cluster, serve, allocations = mrv1
    job = sleep_job(cluster, "prod", 16, 3000)
    job_id = job_id_of(job)
    serve.wait_for(lambda e: e["event"] == "assign" and e["app"] == job_id, 300)
    before = cluster.scheduler_status()["fifo_heartbeats"]
    serve.kill()
    deadline = time.monotonic() + 300
    while cluster.scheduler_status()["fifo_heartbeats"] <= before and time.monotonic() < deadline:
        time.sleep(1)
    assert cluster.scheduler_status()["fifo_heartbeats"] > before
    assert job.wait(900).succeeded  # finished on the shim's FIFO
    # No Python registered: the shim's FIFO schedules, and the gateway waits
    # for the next one.
    sched = cluster.scheduler_status()
    assert not sched["registered"] and sched["fallback"], sched
    assert cluster.gateway_info_file.is_file() and cluster.gateway_token_file.is_file()
    mark = len(serve.events())
    serve.start()
    again = sleep_job(cluster, "research", 4, 1000)
    again_id = job_id_of(again)
    serve.wait_for(lambda e: e["event"] == "assign" and e["app"] == again_id, 300, since=mark)
    assert again.wait(900).succeeded
    fallback = serve.wait_for(lambda e: e["event"] == "fallback", 60, since=mark)
    assert fallback["count"] > 0
    assert cluster.scheduler_status()["registered"]


def test_the_jobtrackers_scheduler_page_shows_the_job_and_moves_it_with_serves_admin_token(mrv1):
    """The /scheduler page of a real JobTracker (issue 29): the servlet frames
    serve's page, the running job with its fair share, the queues with their
    max shares; a move
    and a priority posted with a wrong token change nothing, with serve's
    token the job moves (Python's queue, the shim's, the page's) and its
    priority is the JobTracker's."""
    cluster, serve, _ = mrv1
    serve.ensure_running()
    job = sleep_job(cluster, "prod", 40, 3000)
    try:
        job_id = job_id_of(job)
        serve.wait_for(lambda e: e["event"] == "assign" and e["app"] == job_id, 300)
        st = cluster.scheduler_status()
        assert st["registered"] and "ResourceManager" not in cluster.web.scheduler_page(), st
        row = next(j for j in st["jobs"] if j["job"] == job_id)
        assert row["queue"] == "root.prod" and row["priority"] == "NORMAL" and row["fair maps"] != "?", row
        queues = {q["queue"]: q for q in st["queues"]}
        assert queues["root.research"]["max maps"] == "-"  # no maxMaps in the pools file
        page = f"{cluster.jt_web}/scheduler"
        form = {"job": job_id, "queue": "root.research", "priority": "HIGH", "token": "not-the-admin-token-at-all"}
        r = requests.post(page, data=form, timeout=60)
        assert r.status_code == 401 and "slotwise serve refused the admin token; nothing was changed." in r.text
        apps = {a["id"]: a for a in requests.get(f"{serve.url}/api/v1/apps", timeout=30).json()}
        assert apps[job_id]["queue"] == "root.prod"
        mark = len(serve.events())
        r = requests.post(page, data={**form, "token": serve.admin_token_file.read_text().strip()}, timeout=60)
        assert r.status_code == 200, r.text
        assert f"Done: moved {job_id} to root.research; set {job_id}'s priority to HIGH." in html.unescape(r.text)
        serve.wait_for(lambda e: e["event"] == "move" and e["app"] == job_id and e["queue"] == "root.research", 60,
                       since=mark)

        def in_python():
            apps = requests.get(f"{serve.url}/api/v1/apps", timeout=30).json()
            return next(((a["queue"], a["priority"]) for a in apps if a["id"] == job_id), None)

        wait_until(lambda: in_python() == ("root.research", 1), 60)  # the priority comes with the next payload
        row = next(j for j in cluster.scheduler_status()["jobs"] if j["job"] == job_id)
        assert (row["queue"], row["priority"]) == ("root.research", "HIGH"), row
    finally:
        stop_jobs(cluster, serve, job)


def test_a_restarted_jobtracker_has_the_same_serve_registered_again_and_deciding(mrv1):
    """Hadoop 1.2.1's JobTracker does not keep running jobs across a restart
    (docs/mrv1.md); what it must do is get its policy back: `serve`, never
    restarted, registers with the new JobTracker by itself and decides."""
    cluster, serve, _ = mrv1
    serve.ensure_running()
    pid = serve.proc.pid
    mark = len(serve.events())
    cluster.restart_master(kill=True)
    serve.wait_for(lambda e: e["event"] == "register", 120, since=mark)
    job = sleep_job(cluster, "research", 4, 1000)
    job_id = job_id_of(job)
    serve.wait_for(lambda e: e["event"] == "assign" and e["app"] == job_id, 300, since=mark)
    assert job.wait(900).succeeded
    assert serve.proc.pid == pid and serve.proc.poll() is None, "serve was never restarted"
    assert cluster.scheduler_status()["registered"]


def job_history(cluster, job_id: str, timeout: float = 120) -> dict[str, str]:
    """The JobTracker's own record of a job, from its history file (under
    hadoop.log.dir/history, moved to history/done once the job ends): the
    fields of its ``Job`` lines, merged: SUBMIT_TIME, LAUNCH_TIME (when the
    JobTracker initialised it), FINISH_TIME... (ms, the JobTracker's clock).
    Waits for the record of the job's end."""
    root = cluster.layout.home("jt") / "logs" / "history"
    field = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
    deadline = time.monotonic() + timeout
    while True:
        out: dict[str, str] = {}
        for path in root.rglob(f"{job_id}_*"):  # job_N_M_<submit ms>_<user>_<name>, and _conf.xml
            if path.name.endswith(("_conf.xml", ".crc")):
                continue
            for line in path.read_text(errors="replace").splitlines():
                if line.startswith("Job ") and f'JOBID="{job_id}"' in line:
                    out.update(field.findall(line))
        if "FINISH_TIME" in out:
            return out
        assert time.monotonic() < deadline, f"no history of {job_id}'s end under {root}: {out}"
        time.sleep(1)


def test_a_job_over_its_queues_running_limit_stays_uninitialised_until_it_may_run(mrv1):
    """maxRunningJobs 1: the second job of the queue, submitted while the
    first runs, is not initialised (it stays in PREP, as in the original
    Fair Scheduler) until the first has finished: the JobTracker's history
    says when it launched each; then it runs and succeeds. And a job that
    sets pool.name alone goes to its user's queue: Hadoop 1 reads
    mapred.fairscheduler.pool, then the pool-name property (user.name)."""
    cluster, serve, allocations = mrv1
    mark = len(serve.events())
    save(allocations, pools_xml(3, 1).replace("<weight>1</weight></pool>",
                                             "<weight>1</weight><maxRunningJobs>1</maxRunningJobs></pool>"))
    serve.wait_for(lambda e: e["event"] == "reload", 20, since=mark)
    first = sleep_job(cluster, "research", 4, 15000)
    first_id = job_id_of(first)
    serve.wait_for(lambda e: e["event"] == "assign" and e["app"] == first_id, 300, since=mark)
    second = sleep_job(cluster, "research", 2, 500)
    second_id = job_id_of(second)
    named = cluster.submit("sleep", ["-Dpool.name=prod", "-m", "1", "-r", "0", "-mt", "100"], queue=None,
                           user="carol", wait=False)
    named_id = job_id_of(named)
    serve.wait_for(lambda e: e["event"] == "assign" and e["app"] == named_id, 300, since=mark)
    assert first.wait(900).succeeded and second.wait(900).succeeded
    ran, waited = job_history(cluster, first_id), job_history(cluster, second_id)
    assert int(waited["SUBMIT_TIME"]) < int(ran["FINISH_TIME"]), (ran, waited)  # it did have to wait
    assert int(waited["LAUNCH_TIME"]) >= int(ran["FINISH_TIME"]), (ran, waited)  # initialised only then
    assigns = [e for e in serve.events()[mark:] if e["event"] == "assign"]
    first_done = max(i for i, e in enumerate(assigns) if e["app"] == first_id)
    assert min(i for i, e in enumerate(assigns) if e["app"] == second_id) > first_done  # not one task before
    assert {e["queue"] for e in assigns if e["app"] == named_id} == {"root.carol"}
    assert named.wait(900).succeeded
    print(f"\nmaxRunningJobs 1: {second_id} waited in PREP until {first_id} was done")
    save(allocations, pools_xml(3, 1))


def test_submit_cli_on_a_jobtracker_says_which_queue_and_rule_and_how_the_job_ended(mrv1, tmp_path):
    """`slotwise cluster submit` on MRv1 (issue 29): the queue Python placed
    the job in and the rule that did, as serve's placement record has it,
    then the job's end in the JobTracker's words."""
    cluster, serve, _ = mrv1
    serve.ensure_running()
    r = cluster_cli("submit", "--dir", str(cluster.dir), "--server", serve.url, "--queue", "research", "-q", "--",
                    "sleep", "-m", "1", "-r", "0", "-mt", "100", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    job_id = re.search(r"(job_\d+_\d+) SUCCEEDED", r.stdout).group(1)
    record = requests.get(f"{serve.url}/api/v1/apps/{job_id}/placement", timeout=30).json()
    assert record["queue"] == "root.research", record
    assert r.stdout.startswith(f"submitted {job_id} to root.research (placed by rule "), r.stdout


# ------------------------------------------- Dynamic Priority, same cluster
DP_POOLS_XML = """<?xml version="1.0"?>
<allocations>
  <pool name="prod"/>
  <pool name="research"/>
</allocations>
"""
ADMIN_KEY = "ops-secret-key-0123456789"


class DpServe(Serve):
    def __init__(self, *a, store, acl, **kw) -> None:
        super().__init__(*a, **kw)
        self.store, self.acl = store, acl

    def spawn(self, *extra: str, http_port: int | None = None):
        return super().spawn("--mrv1", "--root-policy", "dynamic-priority", "--dp-acl", str(self.acl),
                             "--dp-store", str(self.store), "--dp-interval", "5", "--dp-grace", "10", *extra,
                             http_port=http_port)

    def dp(self, *args: str) -> str:
        r = subprocess.run([sys.executable, "-m", "slotwise.cli", "dp", *args, "--url", self.url, "--user", "ops",
                            "--key-file", str(self.acl.with_name("ops.key"))],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr
        return r.stdout


@pytest.fixture(scope="module")
def dp_mrv1(mrv1, tmp_path_factory):
    """The module's cluster, its serve replaced by one whose root queue is
    Dynamic Priority (the tests above have run: this module's tests run in
    file order)."""
    cluster, serve, _ = mrv1
    base = tmp_path_factory.mktemp("dp-mrv1")
    allocations = base / "pools.xml"
    allocations.write_text(DP_POOLS_XML)
    acl = base / "dp.acl"
    # The jobs' user (the OS user) may spend both budgets: the JobTracker asks
    # Python's place, which checks this ACL for MRv1 jobs as for YARN apps.
    acl.write_text(f"ops admin {ADMIN_KEY}\n{getpass.getuser()} user submitter-key-0123456789 prod,research\n")
    acl.chmod(0o600)
    key = base / "ops.key"
    key.write_text(ADMIN_KEY)
    key.chmod(0o600)
    serve.stop()
    dp = DpServe(cluster, allocations, base / "events.jsonl", store=base / "market.sqlite", acl=acl)
    try:
        dp.start()
        yield cluster, dp
    finally:
        dp.stop()


def audit(path) -> tuple[dict, dict, dict, list[int]]:
    con = sqlite3.connect(str(path))
    try:
        return (dict(con.execute("SELECT queue, budget FROM queues")),
                dict(con.execute("SELECT queue, SUM(amount) FROM charges GROUP BY queue")),
                dict(con.execute("SELECT queue, SUM(amount) FROM grants GROUP BY queue")),
                [r[0] for r in con.execute("SELECT id FROM intervals ORDER BY id")])
    finally:
        con.close()


def assert_books_balance(path) -> list[int]:
    budgets, charged, granted, ids = audit(path)
    assert ids == list(range(1, len(ids) + 1))
    for q, b in budgets.items():
        assert b == pytest.approx(granted.get(q, 0) - charged.get(q, 0), rel=0, abs=1e-6), q
    return ids


def test_spending_rates_3_to_1_split_the_slots_3_to_1_and_kill_9_keeps_the_books(dp_mrv1):
    cluster, serve = dp_mrv1
    # The queues under the dynamic-priority root opened their accounts on the first update.
    serve.dp("add-budget", "prod", "100000")
    serve.dp("add-budget", "research", "100000")
    serve.dp("set-spending", "prod", "3")
    serve.dp("set-spending", "research", "1")
    prod = sleep_job(cluster, "prod", 80, 6000)
    research = sleep_job(cluster, "research", 80, 6000)
    try:
        job_id_of(prod), job_id_of(research)
        wait_until(lambda: all(map_usage(serve).get(p, 0) for p in ("root.prod", "root.research")), 600)
        time.sleep(20)  # the new rates are in force and unpaid slots went after the grace time
        p = r = 0.0
        n = 0
        end = time.monotonic() + 30
        while time.monotonic() < end:
            u = map_usage(serve)
            a, b = u.get("root.prod", 0), u.get("root.research", 0)
            if a + b >= 2 * MAP_SLOTS - 1 and a and b:
                p, r, n = p + a, r + b, n + 1
            time.sleep(1)
        assert n >= 10, f"only {n} saturated samples"
        print(f"\nrates 3:1: prod {p / n:.2f} research {r / n:.2f} map slots on average ({n} samples), "
              f"ratio {p / r:.2f}")
        assert 3 * 0.85 <= p / r <= 3 * 1.15, p / r

        # SIGKILL in the middle of an interval (5 s long): what was committed stays, exactly.
        before = assert_books_balance(serve.store)
        assert len(before) >= 5
        time.sleep(2.5)
        serve.kill()
        ids = assert_books_balance(serve.store)
        serve.start()
        time.sleep(12)  # two more intervals under the new server
        after = assert_books_balance(serve.store)
        assert len(after) >= len(ids) + 2 and after[:len(ids)] == ids
        budgets, charged, _g, _ids = audit(serve.store)
        assert charged["root.prod"] > 2 * charged["root.research"]  # paid 3x the rate on ~3x the slots
    finally:
        stop_jobs(cluster, serve, prod, research)


def test_a_job_from_a_user_the_dp_acl_does_not_allow_fails_with_the_reason(dp_mrv1):
    """Python's place decides an MRv1 job's queue, ACLs included: mallory may
    not spend prod's budget, so her job fails at once, saying why."""
    cluster, serve = dp_mrv1
    mark = len(serve.events())
    result = cluster.submit("sleep", ["-m", "1", "-r", "0", "-mt", "100"], queue="prod", user="mallory",
                            timeout=600)
    assert result.state == "FAILED", result
    status = cluster.job_command(["-status", result.job_id])
    said = status.stdout + status.stderr + Path(result.log).read_text()
    assert "Rejected by the Slotwise policy" in said and "may not spend" in said, said[-3000:]
    assert not [e for e in serve.events()[mark:] if e["event"] == "assign" and e["app"] == result.job_id]

