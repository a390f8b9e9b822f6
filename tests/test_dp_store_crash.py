"""kill -9 of a process charging intervals into the SQLite store, at random
moments, then a restart: every budget equals its grants minus the charges
of the committed intervals, exactly; interval ids never repeat."""

import os
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest

CHARGER = textwrap.dedent("""
    import sys, time
    from slotwise.market import Market, MarketSettings, SqliteStore
    m = Market(MarketSettings(interval=0.01, slot_memory_mb=1, slot_vcores=1), SqliteStore(sys.argv[1]))
    queues = ["root.dp.q%d" % i for i in range(3)]
    m.ensure(queues)
    if m.accounts[queues[0]].budget == 0 and m.interval_id == 1:
        for i, q in enumerate(queues):
            m.set_spending(q, i + 1)
            m.add_budget(q, 1e9)
    first = m.interval_id
    print("ready", first, flush=True)
    t0 = time.monotonic()
    n = 0
    while True:
        n += 1
        now = time.monotonic() - t0
        m.observe("s", now, {q: (n + i) % 5 for i, q in enumerate(queues)}, {q: 1 for q in queues})
        if first and m.interval_id > first:
            print("committed", first, flush=True)  # the kill comes after this, at a random moment
            first = 0
        if n % 50 == 0:
            m.add_budget(queues[n % 3], 7)  # grants interleave with charges
""")


def audit(db):
    con = sqlite3.connect(db)
    try:
        budgets = dict(con.execute("SELECT queue, budget FROM queues"))
        charged = dict(con.execute("SELECT queue, SUM(amount) FROM charges GROUP BY queue"))
        granted = dict(con.execute("SELECT queue, SUM(amount) FROM grants GROUP BY queue"))
        ids = [r[0] for r in con.execute("SELECT id FROM intervals ORDER BY id")]
        orphan = con.execute("SELECT COUNT(*) FROM charges WHERE interval_id NOT IN (SELECT id FROM intervals)").fetchone()[0]
    finally:
        con.close()
    return budgets, charged, granted, ids, orphan


@pytest.mark.parametrize("seed", [1, 2])
def test_kill_9_loses_no_committed_charge_and_charges_nothing_twice(tmp_path, seed):
    db = str(tmp_path / "market.sqlite")
    rng = random.Random(seed)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    last_ids = []
    for round_ in range(4):
        p = subprocess.Popen([sys.executable, "-c", CHARGER, db], stdout=subprocess.PIPE, text=True, env=env)
        line = p.stdout.readline().split()
        assert line[0] == "ready", line
        first_id = int(line[1])
        if last_ids:
            assert first_id == last_ids[-1] + 1  # numbers on after the last committed interval
        assert p.stdout.readline().split()[0] == "committed"  # however slow the machine
        time.sleep(rng.uniform(0.0, 0.9))
        p.send_signal(signal.SIGKILL)
        p.wait(10)
        p.stdout.close()
        budgets, charged, granted, ids, orphan = audit(db)
        assert orphan == 0
        assert len(ids) == len(set(ids)) and ids == list(range(1, len(ids) + 1))
        assert len(ids) > len(last_ids)  # this round committed intervals
        for q, b in budgets.items():
            assert b == pytest.approx(granted.get(q, 0) - charged.get(q, 0), rel=0, abs=1e-3), (round_, q)
        last_ids = ids
