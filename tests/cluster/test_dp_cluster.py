"""Dynamic Priority on a real Hadoop 1.2.1 JobTracker: two queues paying 3:1
split a saturated cluster's map slots 3:1; ``slotwise serve`` killed with
SIGKILL mid-interval and started again loses no committed charge and
charges no interval twice."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time

import pytest

from slotwise.localcluster.mrv1 import Mrv1Cluster
from support import skip_without_java
from test_mrv1_policy import MAP_SLOTS, map_usage, sleep_job, stop_jobs, wait_until
from test_shim_cluster import Serve

pytestmark = pytest.mark.cluster

POOLS = """<?xml version="1.0"?>
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
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r.stdout + r.stderr
        return r.stdout


@pytest.fixture(scope="module")
def dp_mrv1(tmp_path_factory):
    skip_without_java("local MRv1 cluster")
    base = tmp_path_factory.mktemp("dp-mrv1")
    allocations = base / "pools.xml"
    allocations.write_text(POOLS)
    acl = base / "dp.acl"
    acl.write_text(f"ops admin {ADMIN_KEY}\n")
    acl.chmod(0o600)
    key = base / "ops.key"
    key.write_text(ADMIN_KEY)
    key.chmod(0o600)
    cluster = Mrv1Cluster(base / "cluster", nodes=2, scheduler="slotwise", map_slots=MAP_SLOTS, reduce_slots=1,
                          start_timeout=180, conf={"slotwise.policy.timeout-ms": "1000"})
    serve = DpServe(cluster, allocations, base / "events.jsonl", store=base / "market.sqlite", acl=acl)
    try:
        cluster.up()
        serve.start()
        yield cluster, serve
    finally:
        serve.stop()
        cluster.down()


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
    # The pools under the dynamic-priority root opened their accounts on the first update.
    serve.dp("add-budget", "prod", "100000")
    serve.dp("add-budget", "research", "100000")
    serve.dp("set-spending", "prod", "3")
    serve.dp("set-spending", "research", "1")
    prod = sleep_job(cluster, "prod", 80, 6000)
    research = sleep_job(cluster, "research", 80, 6000)
    try:
        prod.wait_for_id(), research.wait_for_id()
        wait_until(lambda: all(map_usage(serve).get(p, 0) for p in ("root.prod", "root.research")), 90)
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


YARN_ALLOCATIONS = """<?xml version="1.0"?>
<allocations>
  <queue name="market" type="parent">
    <schedulingPolicy>dynamic-priority</schedulingPolicy>
    <queue name="alice"/>
  </queue>
  <queue name="default"/>
</allocations>
"""


def test_yarn_rejects_a_job_from_a_user_the_acl_does_not_allow_and_runs_the_holders(tmp_path):
    from slotwise.localcluster import SHIM_SCHEDULER, LocalCluster

    # (`conftest` by name may be another directory's once the whole suite is collected.)
    skip_without_java("local YARN cluster")
    allocations = tmp_path / "allocations.xml"
    allocations.write_text(YARN_ALLOCATIONS)
    acl = tmp_path / "dp.acl"
    acl.write_text(f"alice user alice-secret-key-123\nops admin {ADMIN_KEY}\n")
    acl.chmod(0o600)
    cluster = LocalCluster(tmp_path / "cluster", nodes=1, scheduler=SHIM_SCHEDULER, start_timeout=300,
                           conf={"slotwise.policy.timeout-ms": "2000"})

    class YarnDpServe(Serve):
        def spawn(self, *extra, http_port=None):
            return super().spawn("--dp-acl", str(acl), "--dp-store", str(tmp_path / "m.sqlite"), *extra,
                                 http_port=http_port)

    serve = YarnDpServe(cluster, allocations, tmp_path / "events.jsonl")
    try:
        cluster.up()
        serve.start()
        refused = cluster.submit("pi", ["1", "10"], pool="root.market.alice", user="mallory", timeout=240)
        assert not refused.succeeded
        reason = "root.market.alice is a dynamic-priority queue and mallory may not spend its budget"
        client = open(refused.log, encoding="utf-8", errors="replace").read()
        assert "Rejected by the Slotwise policy: " + reason in client, client[-2000:]
        assert any(e["event"] == "reject" and e["user"] == "mallory" and reason in e["reason"]
                   for e in serve.events())
        ran = cluster.submit("pi", ["1", "10"], pool="root.market.alice", user="alice", timeout=300)
        assert ran.succeeded, ran.log
        assert any(e["event"] == "assign" and e["pool"] == "root.market.alice" for e in serve.events())
    finally:
        serve.stop()
        cluster.down()
