"""The Dynamic Priority REST API: signatures, roles, replays, the ACL file,
and the paper's XML answers.  A refused request changes nothing."""

import os
import xml.etree.ElementTree as ET

import pytest

from slotwise.market import Market
from slotwise.market.acl import Acl, AclError, parse_acl
from slotwise.market.api import DpApi, sign, signed_query

NOW = 1_800_000_000_000
KEYS = {"alice": "alice-secret-key", "bob": "bob-secret-key", "root": "root-secret-key"}


@pytest.fixture
def acl_path(tmp_path):
    p = tmp_path / "dp.acl"
    p.write_text("# user role key\nalice user alice-secret-key\nbob   user bob-secret-key\n"
                 "root  admin root-secret-key   # the operator\n")
    p.chmod(0o600)
    return str(p)


@pytest.fixture
def api(acl_path):
    m = Market()
    for q in ("root.dp.alice", "root.dp.bob"):
        m.add_queue(q)
    m.add_budget("alice", 100)
    return DpApi(m, Acl(acl_path), window_s=60, host="testhost")


def call(api, params, user="alice", key=None, now=NOW, ts=None):
    query, sig = signed_query(params, user, key or KEYS[user], now_ms=ts or now)
    return api.handle(query, sig, now_ms=now)


def budgets(api):
    return {q: a.budget for q, a in api.market.accounts.items()}, {q: a.spending for q, a in api.market.accounts.items()}


def test_price_and_time_are_open(api):
    a = api.handle("price", None, now_ms=NOW)
    assert a.status == 200 and float(ET.fromstring(a.xml()).find("price").text) == 0
    t = api.handle("time", None, now_ms=NOW)
    assert ET.fromstring(t.xml()).find("time").text == str(NOW)


def test_info_answers_like_listing_1_1(api):
    a = call(api, [("info", "alice")])
    assert a.status == 200
    root = ET.fromstring(a.xml())
    assert root.tag == "QueueInfo" and root.find("host").text == "testhost"
    (q,) = root.findall("queue")
    assert q.get("name") == "root.dp.alice"
    assert [c.tag for c in q] == ["budget", "spending", "share", "used", "pending"]
    assert float(q.find("budget").text) == 100.0


def test_user_sets_spending_on_own_queue_only(api):
    assert call(api, [("setSpending", "2.5"), ("queue", "alice")]).status == 200
    assert api.market.accounts["root.dp.alice"].spending == 2.5
    before = budgets(api)
    a = call(api, [("setSpending", "9"), ("queue", "bob")], now=NOW + 1, ts=NOW + 1)
    assert a.status == 403 and "does not hold root.dp.bob" in a.body["error"]
    assert call(api, [("info", "bob")], now=NOW + 2, ts=NOW + 2).status == 403
    assert budgets(api) == before


@pytest.mark.parametrize("params", [[("infos", "")], [("addBudget", "5"), ("queue", "alice")],
                                    [("addQueue", "root.dp.carol")], [("removeQueue", "bob")]])
def test_admin_only_actions(api, params):
    before = budgets(api)
    a = call(api, params, user="alice")
    assert a.status == 403 and "for admins" in a.body["error"]
    assert budgets(api) == before
    assert call(api, params, user="root", ts=NOW + 5, now=NOW + 5).status == 200


def test_admin_manages_the_market(api):
    assert call(api, [("addQueue", "root.dp.carol")], user="root").status == 200
    assert call(api, [("addBudget", "50"), ("queue", "carol")], user="root", ts=NOW + 1).status == 200
    rows = ET.fromstring(call(api, [("infos", "")], user="root", ts=NOW + 2).xml()).findall("queue")
    assert {r.get("name"): float(r.find("budget").text) for r in rows} == {
        "root.dp.alice": 100.0, "root.dp.bob": 0.0, "root.dp.carol": 50.0}
    assert call(api, [("removeQueue", "carol")], user="root", ts=NOW + 3).status == 200
    assert "root.dp.carol" not in api.market.accounts


def test_wrong_key_wrong_user_missing_header_tampered(api):
    before = budgets(api)
    params = [("setSpending", "7"), ("queue", "alice")]
    # signed with bob's key but claiming alice
    q, sig = signed_query(params, "alice", KEYS["bob"], now_ms=NOW)
    assert api.handle(q, sig, now_ms=NOW).status == 401
    # an unknown user
    q, sig = signed_query(params, "mallory", "mallory-secret-key", now_ms=NOW)
    assert api.handle(q, sig, now_ms=NOW).body["error"] == "bad signature"
    # no header
    q, sig = signed_query(params, "alice", KEYS["alice"], now_ms=NOW)
    assert api.handle(q, None, now_ms=NOW).status == 401
    # tampered: a signed rate of 7 sent as 70
    assert api.handle(q.replace("setSpending=7", "setSpending=70"), sig, now_ms=NOW).status == 401
    # user and timestamp not last
    q2 = "user=alice&timestamp=%d&setSpending=7&queue=alice" % NOW
    assert api.handle(q2, sign(q2, KEYS["alice"]), now_ms=NOW).status == 401
    assert budgets(api) == before


def test_replayed_and_stale_requests_are_refused(api):
    q, sig = signed_query([("setSpending", "3"), ("queue", "alice")], "alice", KEYS["alice"], now_ms=NOW)
    assert api.handle(q, sig, now_ms=NOW).status == 200
    api.market.set_spending("alice", 1)
    again = api.handle(q, sig, now_ms=NOW + 10)
    assert again.status == 401 and "replay" in again.body["error"]
    assert api.market.accounts["root.dp.alice"].spending == 1
    # an older timestamp than the last accepted one, even if within the window
    assert call(api, [("info", "alice")], ts=NOW - 5, now=NOW + 20).status == 401
    # outside the window, either way
    assert call(api, [("info", "alice")], ts=NOW - 61_000 + 100_000, now=NOW + 100_000 + 61_000).status == 401
    assert call(api, [("info", "alice")], ts=NOW + 200_000, now=NOW + 100).status == 401
    # the next fresh one passes
    assert call(api, [("info", "alice")], ts=NOW + 30, now=NOW + 30).status == 200


def test_replay_guard_survives_a_restart(tmp_path, acl_path):
    from slotwise.market import SqliteStore

    db = str(tmp_path / "m.db")
    m = Market(store=SqliteStore(db))
    m.add_queue("root.dp.alice")
    q, sig = signed_query([("info", "alice")], "alice", KEYS["alice"], now_ms=NOW)
    assert DpApi(m, Acl(acl_path)).handle(q, sig, now_ms=NOW).status == 200
    m.store.close()
    m2 = Market(store=SqliteStore(db))
    assert DpApi(m2, Acl(acl_path)).handle(q, sig, now_ms=NOW + 5).status == 401


def test_bad_requests_are_400_and_change_nothing(api):
    before = budgets(api)
    assert api.handle("", None, now_ms=NOW).status == 400
    assert api.handle("price&infos", None, now_ms=NOW).status == 400
    assert api.handle("bogus=1", None, now_ms=NOW).status == 400
    assert api.handle("x" * 5000, None, now_ms=NOW).status == 400
    assert call(api, [("setSpending", "lots"), ("queue", "alice")]).status == 400
    assert call(api, [("setSpending", "1")], ts=NOW + 1, now=NOW + 1).status == 400  # no queue
    assert call(api, [("info", "nosuch")], ts=NOW + 2, now=NOW + 2).status == 400
    assert budgets(api) == before


def test_no_acl_means_no_signed_operations():
    m = Market()
    m.add_queue("root.dp.alice")
    api = DpApi(m, None)
    assert api.handle("price", None).status == 200
    a = api.handle("info=alice&user=alice&timestamp=1", "x")
    assert a.status == 401 and "--dp-acl" in a.body["error"]


def test_acl_file_errors_name_file_and_line(tmp_path):
    p = tmp_path / "acl"
    p.write_text("alice user alice-secret-key\nbob boss bob-secret-key\n")
    p.chmod(0o600)
    with pytest.raises(AclError, match=rf"^{p}:2: role must be user or admin"):
        parse_acl(str(p))
    p.write_text("alice user\n")
    with pytest.raises(AclError, match=rf"^{p}:1: expected USER ROLE KEY"):
        parse_acl(str(p))
    p.write_text("alice user alice-secret-key\nalice admin other-secret-key\n")
    with pytest.raises(AclError, match=":2: user 'alice' appears twice"):
        parse_acl(str(p))
    p.write_text("alice user alice-secret-key\n")
    p.chmod(0o644)
    with pytest.raises(AclError, match="must be mode 0600"):
        parse_acl(str(p))


def test_acl_reloads_on_change_and_keeps_the_last_good_one(acl_path, api):
    with open(acl_path, "a") as f:
        f.write("carol user carol-secret-key alice\n")
    os.utime(acl_path, ns=(1, 2))  # a different stamp whatever the clock's resolution
    assert call(api, [("info", "alice")], user="carol", key="carol-secret-key").status == 200
    with open(acl_path, "a") as f:
        f.write("broken line\n")
    os.utime(acl_path, ns=(3, 4))
    assert call(api, [("info", "alice")], user="carol", key="carol-secret-key", ts=NOW + 1, now=NOW + 1).status == 200
    assert "expected USER ROLE KEY" in api.acl.error


@pytest.mark.parametrize("params, status", [
    ([("addBudget", "1000"), ("queue", "alice")], 403),  # beyond alice's role
    ([("setSpending", "9"), ("queue", "bob")], 403),  # a queue alice does not hold
    ([("setSpending", "lots"), ("queue", "alice")], 400),  # bad input
    ([("info", "nosuch")], 400)])
def test_a_refused_request_does_not_advance_the_replay_guard(api, params, status):
    """Issue 25: a signed request refused for its role still advanced the
    signer's last accepted timestamp.  Only a request carried out does."""
    assert call(api, [("info", "alice")], ts=NOW - 10).status == 200
    before = budgets(api)
    a = call(api, params, ts=NOW)
    assert a.status == status
    assert budgets(api) == before
    assert api.market.store.last_timestamp("alice") == NOW - 10
    # so a request stamped between the two is still fresh
    assert call(api, [("info", "alice")], ts=NOW - 5).status == 200
    assert api.market.store.last_timestamp("alice") == NOW - 5


def test_a_refused_first_request_leaves_no_replay_record(tmp_path, acl_path):
    from slotwise.market import SqliteStore

    m = Market(store=SqliteStore(str(tmp_path / "m.db")))
    m.add_queue("root.dp.alice")
    api = DpApi(m, Acl(acl_path))
    assert call(api, [("addBudget", "5"), ("queue", "alice")]).status == 403
    assert m.store.last_timestamp("alice") is None
    assert m.store.db.execute("SELECT COUNT(*) FROM signers").fetchone()[0] == 0
    assert call(api, [("info", "alice")], ts=NOW - 1).status == 200
    assert m.store.last_timestamp("alice") == NOW - 1
