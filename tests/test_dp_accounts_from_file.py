"""Dynamic Priority accounts from the allocation file (issue 25): a queue
declared under a dynamic-priority queue is an account as soon as the file
loads, before any ResourceManager connects, and the accounts follow reloads
(a queue that leaves the file keeps its account while it holds budget)."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from slotwise.config.watcher import load_with_status
from slotwise.market import Market
from slotwise.market.acl import Acl
from slotwise.market.api import DpApi, signed_query
from slotwise.policies.dynamic_priority import follow_config
from webtools import free_port

CONF = Path(__file__).resolve().parent.parent / "conf" / "dynamic-priority.xml"
NOW = 1_800_000_000_000
KEY = "root-secret-key"


def load(tmp_path, text: str, name: str = "alloc.xml"):
    p = tmp_path / name
    p.write_text(text)
    return load_with_status(str(p))[0]


@pytest.fixture
def acl(tmp_path):
    p = tmp_path / "dp.acl"
    p.write_text("root admin root-secret-key\nalice user alice-secret-key\n")
    p.chmod(0o600)
    return str(p)


def test_declared_accounts_are_the_children_of_dynamic_priority_queues(tmp_path):
    from slotwise.policies.dynamic_priority import declared_accounts

    assert declared_accounts(load_with_status(str(CONF))[0]) == [
        "root.market.alice", "root.market.bob", "root.market.carol"]
    nested = load(tmp_path, """<allocations>
      <queue name="a"><queue name="dp" type="parent"><schedulingPolicy>dynamic-priority</schedulingPolicy>
        <queue name="x"/><queue name="y"><queue name="deep"/></queue></queue></queue>
      <queue name="fairly"><queue name="z"/></queue>
    </allocations>""")
    assert declared_accounts(nested) == ["root.a.dp.x", "root.a.dp.y"]  # children only, not grandchildren
    plain = load(tmp_path, "<allocations><queue name='p'/><queue name='q'/></allocations>", "plain.xml")
    assert declared_accounts(plain) == []
    assert declared_accounts(plain, root_policy="dynamic-priority") == ["root.p", "root.q"]  # serve --root-policy
    default = load(tmp_path, """<allocations><defaultQueueSchedulingPolicy>dynamic-priority</defaultQueueSchedulingPolicy>
      <queue name="p"><queue name="k"/></queue></allocations>""", "default.xml")
    assert declared_accounts(default) == ["root.p", "root.p.k"]


def test_add_budget_on_a_declared_queue_before_any_rm(tmp_path, acl):
    """The issue's case: addBudget=100&queue=root.market.q1 on a fresh market
    answered 400 "no queue 'root.market.q1' in the market"."""
    config = load(tmp_path, CONF.read_text().replace('<queue name="carol"/>', '<queue name="q1"/>'))
    m = Market()
    follow_config(m, config)
    query, sig = signed_query([("addBudget", "100"), ("queue", "root.market.q1")], "root", KEY, now_ms=NOW)
    a = DpApi(m, Acl(acl)).handle(query, sig, now_ms=NOW)
    assert a.status == 200, a.body
    assert m.accounts["root.market.q1"].budget == 100


def test_accounts_follow_reloads_and_keep_the_ones_with_budget(tmp_path):
    m = Market()
    recorded = []
    m.on_change = lambda op, args: recorded.append((op, args))
    first = load(tmp_path, CONF.read_text())
    assert follow_config(m, first) == (["root.market.alice", "root.market.bob", "root.market.carol"], [])
    m.add_budget("alice", 50)
    m.add_queue("root.market.extra")  # an admin's: never closed by a reload
    snapshot = Market.from_snapshot(m.snapshot())  # where a replay of a --record run starts
    recorded.clear()
    # alice (budget) and carol (none) leave the file; dave comes in.
    second = load(tmp_path, CONF.read_text().replace('<queue name="alice"/>', "")
                  .replace('<queue name="carol"/>', '<queue name="dave"/>'), "second.xml")
    assert follow_config(m, second) == (["root.market.dave"], ["root.market.carol"])
    assert set(m.accounts) == {"root.market.alice", "root.market.bob", "root.market.dave", "root.market.extra"}
    assert m.accounts["root.market.alice"].budget == 50
    assert follow_config(m, second) == ([], [])  # the same file again: nothing to do
    # alice's budget is spent: the next reload closes her account too.
    m.add_budget("alice", -50)
    assert follow_config(m, second) == ([], ["root.market.alice"])
    # A replay of the recorded changes ends with the same accounts.
    for op, args in recorded:
        snapshot.apply(op, args)
    assert set(snapshot.accounts) == set(m.accounts)


def test_a_queue_with_work_keeps_its_account_when_it_leaves_the_file(tmp_path):
    m = Market()
    follow_config(m, load(tmp_path, CONF.read_text()))
    m.observe("map:root.market", 0.0, {"root.market.carol": 1}, {})
    follow_config(m, load(tmp_path, CONF.read_text().replace('<queue name="carol"/>', ""), "b.xml"))
    assert "root.market.carol" in m.accounts


def dp(url: str, params, ts: int):
    query, sig = signed_query(params, "root", KEY, now_ms=ts)
    r = httpx.get(f"{url}/api/v1/dp?{query}", headers={"Authorization": sig}, timeout=60)
    return r.status_code, r.json()


def test_serve_opens_the_files_accounts_at_start_up_and_on_reload(tmp_path, acl):
    """Through the real `slotwise serve`, with no ResourceManager."""
    alloc = tmp_path / "dynamic-priority.xml"
    alloc.write_text(CONF.read_text().replace('<queue name="carol"/>', '<queue name="q1"/>'))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "slotwise.cli", "serve", "--allocations", str(alloc),
         "--gateway-info", str(tmp_path / "no-rm" / "gateway.json"), "--http", f"127.0.0.1:{port}",
         "--admin-token-file", str(tmp_path / "secret" / "admin.token"), "--dp-acl", acl,
         "--dp-store", str(tmp_path / "market.sqlite"), "--reload-poll", "0.1"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 300  # seconds on a loaded machine (importing FastAPI); 2 on an idle one
        while True:
            assert proc.poll() is None, proc.stdout.read()
            try:
                httpx.get(f"{url}/api/v1/status", timeout=30)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "serve did not answer"
                time.sleep(0.1)
        ts = int(time.time() * 1000)
        status, body = dp(url, [("addBudget", "100"), ("queue", "root.market.q1")], ts)
        assert status == 200, body
        assert body["queues"][0]["budget"] == 100
        # An editor's save: q1 (with budget) and bob (without) leave, dave comes.
        tmp = tmp_path / ".dynamic-priority.xml.swp"
        tmp.write_text(CONF.read_text().replace('<queue name="carol"/>', '<queue name="dave"/>')
                       .replace('<queue name="bob"/>', ""))
        os.replace(tmp, alloc)
        deadline = time.monotonic() + 60
        while True:
            ts += 1
            status, body = dp(url, [("infos", "")], ts)
            assert status == 200, body
            queues = {q["queue"]: q["budget"] for q in body["queues"]}
            if "root.market.dave" in queues or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert queues == {"root.market.alice": 0, "root.market.dave": 0, "root.market.q1": 100}, json.dumps(body)
    finally:
        proc.terminate()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(15)
