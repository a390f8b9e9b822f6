"""Money that cannot overflow (issue 25): budgets at most 1e12, rates at most
1e9, charges always finite; a store that refuses one queue's charge leaves
every other queue charged, and says so (log and counter)."""

import logging
import math
import sqlite3

import pytest

from slotwise.market import Market, MarketSettings, SqliteStore
from slotwise.market.acl import Acl
from slotwise.market.api import DpApi, signed_query
from slotwise.market.ledger import MarketError

MAX_BUDGET = 1e12  # the bounds documented in slotwise.market.ledger and docs/dynamic-priority.md
MAX_RATE = 1e9
NOW = 1_800_000_000_000
ROOT_KEY = "root-secret-key"


@pytest.fixture
def acl(tmp_path):
    p = tmp_path / "dp.acl"
    p.write_text("root admin root-secret-key\n")
    p.chmod(0o600)
    return Acl(str(p))


def market(tmp_path, queues=("root.dp.q1", "root.dp.q2"), sqlite=True) -> Market:
    store = SqliteStore(str(tmp_path / "m.sqlite")) if sqlite else None
    m = Market(MarketSettings(interval=10, slot_memory_mb=1, slot_vcores=1), store)
    for q in queues:
        m.add_queue(q)
    return m


class Admin:
    def __init__(self, api):
        self.api, self.ts = api, NOW

    def __call__(self, *params):
        self.ts += 1
        query, sig = signed_query(list(params), "root", ROOT_KEY, now_ms=self.ts)
        return self.api.handle(query, sig, now_ms=self.ts)


def run_intervals(m: Market, n: int, used: dict, t0: float = 0.0) -> float:
    t = t0
    for _ in range(n):
        m.observe("s", t, used, {q: 1 for q in used})
        t += 10
    m.observe("s", t, used, {q: 1 for q in used})
    return t


def test_the_reported_overflow_is_refused_and_every_queue_stays_charged(tmp_path, acl):
    """The issue's reproduction: two addBudget=1e308 then a rate of 1e308 made
    a budget inf, a charge NaN, SQLite refuse the row (NOT NULL) and every
    later interval go uncharged for every queue."""
    m = market(tmp_path)
    admin = Admin(DpApi(m, acl))
    for _ in range(2):
        a = admin(("addBudget", "1e308"), ("queue", "q1"))
        assert a.status == 400 and "1e+12" in a.body["error"], a.body
    assert m.accounts["root.dp.q1"].budget == 0
    a = admin(("setSpending", "1e308"), ("queue", "q1"))
    assert a.status == 400 and "1e+09" in a.body["error"]
    assert m.accounts["root.dp.q1"].spending == 1.0
    # The largest that is allowed, on one queue; an ordinary queue beside it.
    assert admin(("addBudget", repr(MAX_BUDGET)), ("queue", "q1")).status == 200
    assert admin(("setSpending", repr(MAX_RATE)), ("queue", "q1")).status == 200
    assert admin(("addBudget", "1000"), ("queue", "q2")).status == 200
    a = admin(("addBudget", "1"), ("queue", "q1"))  # past the bound by one: refused, nothing changes
    assert a.status == 400 and "past 1e+12" in a.body["error"]
    assert m.accounts["root.dp.q1"].budget == MAX_BUDGET
    assert m.store.db.execute("SELECT COUNT(*) FROM grants").fetchone()[0] == 2
    run_intervals(m, 7, {"root.dp.q1": 1e15, "root.dp.q2": 2})  # a hostile usage figure too
    history = m.history()
    assert len(history) == 7
    for h in history:
        charged = {c["queue"]: c for c in h["charges"]}
        assert set(charged) == {"root.dp.q1", "root.dp.q2"}
        for c in charged.values():
            assert all(math.isfinite(c[k]) for k in ("slots", "rate", "amount", "budget"))
    assert m.accounts["root.dp.q1"].budget == 0  # it paid all it had, no more
    assert m.accounts["root.dp.q2"].budget == pytest.approx(1000 - 7 * 2 * 1.0)
    assert m.counters["charges_refused"] == 0 and m.counters["intervals_uncharged"] == 0


def test_the_documented_bounds_are_the_ledgers():
    from slotwise.market import ledger

    assert (ledger.MAX_BUDGET, ledger.MAX_RATE) == (MAX_BUDGET, MAX_RATE)


def test_market_calls_refuse_out_of_bounds_money_and_change_nothing(tmp_path):
    m = market(tmp_path, sqlite=False)
    m.add_budget("q1", MAX_BUDGET)
    for call in (lambda: m.add_budget("q1", 1e-3), lambda: m.add_budget("q2", 1e308),
                 lambda: m.add_budget("q2", float("inf")), lambda: m.add_budget("q2", "nan"),
                 lambda: m.set_spending("q2", MAX_RATE * 2), lambda: m.set_spending("q2", float("inf")),
                 lambda: m.set_spending("q2", -1)):
        with pytest.raises(MarketError):
            call()
    assert (m.accounts["root.dp.q1"].budget, m.accounts["root.dp.q2"].budget) == (MAX_BUDGET, 0)
    assert m.accounts["root.dp.q2"].spending == 1
    for bad in ({"initial_budget": 1e13}, {"initial_budget": float("inf")}, {"initial_spending": float("nan")},
                {"initial_spending": 1e10}, {"interval": float("inf")}):
        with pytest.raises(ValueError):
            MarketSettings(**bad)


@pytest.mark.parametrize("sqlite", [False, True])
def test_hostile_usage_figures_charge_finite_amounts(tmp_path, sqlite):
    m = market(tmp_path, sqlite=sqlite)
    m.add_budget("q1", 100)
    m.add_budget("q2", 100)
    t = run_intervals(m, 2, {"root.dp.q1": float("nan"), "root.dp.q2": float("inf")})
    run_intervals(m, 2, {"root.dp.q1": -5, "root.dp.q2": 1}, t)
    for a in m.accounts.values():
        assert math.isfinite(a.budget) and 0 <= a.budget <= 100
    assert m.accounts["root.dp.q2"].budget < 100  # it was charged (all it had, for an infinite use)
    for h in m.history():
        for c in h["charges"]:
            assert all(math.isfinite(c[k]) for k in ("slots", "rate", "amount", "budget"))
    assert m.counters["charges_refused"] == m.counters["intervals_uncharged"] == 0


def test_a_charge_the_store_refuses_leaves_the_other_queues_charged_logged_and_counted(tmp_path, caplog):
    m = market(tmp_path, ("root.dp.good", "root.dp.bad", "root.dp.other"))
    for q in m.accounts:
        m.add_budget(q, 1000)
    # SQLite refuses one queue's rows (as it refused a NaN budget: NOT NULL).
    m.store.db.execute("CREATE TRIGGER refuse BEFORE INSERT ON charges WHEN NEW.queue = 'root.dp.bad' "
                       "BEGIN SELECT RAISE(ABORT, 'refused for the test'); END")
    used = {"root.dp.good": 2, "root.dp.bad": 3, "root.dp.other": 1}
    with caplog.at_level(logging.ERROR, logger="slotwise.market.ledger"):
        t = run_intervals(m, 3, used)
    budgets = {q: a.budget for q, a in m.accounts.items()}
    assert budgets == {"root.dp.good": pytest.approx(1000 - 3 * 2), "root.dp.bad": 1000,
                       "root.dp.other": pytest.approx(1000 - 3 * 1)}
    assert m.counters["charges_refused"] == 3 and m.counters["intervals_uncharged"] == 0
    assert sum("root.dp.bad's charge" in r.getMessage() and "refused for the test" in r.getMessage()
               for r in caplog.records) == 3
    # The books: what the store holds is what the market holds, every interval committed.
    stored = dict(m.store.db.execute("SELECT queue, budget FROM queues"))
    assert stored == budgets
    assert [h["interval"] for h in m.history()] == [1, 2, 3]
    assert all({c["queue"] for c in h["charges"]} == {"root.dp.good", "root.dp.other"} for h in m.history())
    # The store takes the row again: the queue is charged again from the next interval on.
    m.store.db.execute("DROP TRIGGER refuse")
    run_intervals(m, 1, used, t)
    assert m.accounts["root.dp.bad"].budget == pytest.approx(1000 - 3)


def test_an_interval_the_store_cannot_commit_at_all_is_counted_and_the_next_ones_charge(tmp_path):
    m = market(tmp_path)
    m.add_budget("q1", 100)
    m.store.db.execute("INSERT INTO intervals (id, start, end, price) VALUES (2, 0, 0, 0)")  # id 2 taken
    run_intervals(m, 3, {"root.dp.q1": 1})
    assert m.counters["intervals_uncharged"] == 1
    assert m.accounts["root.dp.q1"].budget == pytest.approx(100 - 2)  # intervals 1 and 3


def test_a_store_written_before_the_bounds_is_brought_within_them(tmp_path):
    db = str(tmp_path / "old.sqlite")
    Market(store=SqliteStore(db)).add_queue("root.dp.q1")
    con = sqlite3.connect(db)
    con.execute("UPDATE queues SET budget = ?, spending = ?", (float("inf"), 1e308))
    con.commit()
    con.close()
    m = Market(MarketSettings(interval=10, slot_memory_mb=1, slot_vcores=1), SqliteStore(db))
    a = m.accounts["root.dp.q1"]
    assert (a.budget, a.spending, a.rate) == (MAX_BUDGET, MAX_RATE, MAX_RATE)
    assert m.counters["accounts_repaired"] == 1
    run_intervals(m, 2, {"root.dp.q1": 1})
    assert m.counters["charges_refused"] == m.counters["intervals_uncharged"] == 0
    assert m.accounts["root.dp.q1"].budget == MAX_BUDGET - 2 * MAX_RATE
