"""Where the market keeps budgets, rates and charges: in memory (simulations,
tests) or in SQLite (``slotwise serve``; a file next to the event log, 0600).

An interval's charges and the budgets they leave commit in one transaction
keyed by the interval's id, so a kill -9 at any moment loses no committed
charge and, since a restarted market numbers on from the last committed id,
charges no interval twice.  Inside it each queue's charge is a savepoint of
its own: a row the database refuses is rolled back alone and reported
(``commit_interval`` answers the refused queues), the others commit.
"""

from __future__ import annotations

import copy
import math
import os
import sqlite3
import stat
import time

from .records import Account, Interval

SCHEMA = """
CREATE TABLE IF NOT EXISTS queues (
    queue TEXT PRIMARY KEY, budget REAL NOT NULL, spending REAL NOT NULL, owner TEXT);
CREATE TABLE IF NOT EXISTS intervals (
    id INTEGER PRIMARY KEY, start REAL NOT NULL, end REAL NOT NULL, price REAL NOT NULL);
CREATE TABLE IF NOT EXISTS charges (
    interval_id INTEGER NOT NULL REFERENCES intervals(id), queue TEXT NOT NULL,
    slots REAL NOT NULL, rate REAL NOT NULL, amount REAL NOT NULL, budget REAL NOT NULL,
    PRIMARY KEY (interval_id, queue));
CREATE TABLE IF NOT EXISTS grants (
    id INTEGER PRIMARY KEY AUTOINCREMENT, queue TEXT NOT NULL, amount REAL NOT NULL,
    budget REAL NOT NULL, at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS signers (user TEXT PRIMARY KEY, last_timestamp INTEGER NOT NULL);
"""


class MemoryStore:
    """Keeps everything in this process (what-if copies, the simulator)."""

    def __init__(self) -> None:
        self.accounts: dict[str, Account] = {}
        self.intervals: list[Interval] = []
        self.grants: list[tuple[str, float, float]] = []
        self.signers: dict[str, int] = {}

    def load(self) -> tuple[list[Account], int]:
        last = self.intervals[-1].interval_id if self.intervals else 0
        return [copy.copy(a) for a in self.accounts.values()], last

    def save_account(self, a: Account) -> None:
        self.accounts[a.queue] = copy.copy(a)

    def save_accounts(self, accounts: list[Account]) -> None:
        for a in accounts:
            self.save_account(a)

    def delete_account(self, queue: str) -> None:
        self.accounts.pop(queue, None)

    def grant(self, queue: str, amount: float, budget: float) -> None:
        self.grants.append((queue, amount, budget))
        self.accounts[queue].budget = budget

    def set_spending(self, queue: str, rate: float) -> None:
        self.accounts[queue].spending = rate

    def commit_interval(self, record: Interval) -> list[tuple[str, str]]:
        """Commit the interval; the charges refused, as (queue, why): here,
        like SQLite's NOT NULL, one with a NaN in it."""
        record = copy.deepcopy(record)
        refused = [(c.queue, "a charge with NaN in it") for c in record.charges
                   if any(math.isnan(x) for x in (c.slots, c.rate, c.amount, c.budget))]
        bad = {q for q, _ in refused}
        record.charges = [c for c in record.charges if c.queue not in bad]
        self.intervals.append(record)
        for c in record.charges:
            if c.queue in self.accounts:
                self.accounts[c.queue].budget = c.budget
        return refused

    def history(self, limit: int) -> list[dict]:
        return [_row(r.interval_id, r.start, r.end, r.price,
                     [(c.queue, c.slots, c.rate, c.amount, c.budget) for c in r.charges])
                for r in self.intervals[-limit:]]

    def last_timestamp(self, user: str) -> int | None:
        return self.signers.get(user)

    def accept_timestamp(self, user: str, ts: int) -> None:
        self.signers[user] = ts

    def restore_timestamp(self, user: str, ts: int | None) -> None:
        """Put back what ``last_timestamp`` said before a request that was refused."""
        if ts is None:
            self.signers.pop(user, None)
        else:
            self.signers[user] = ts

    def close(self) -> None:
        pass


class SqliteStore:
    """The embedded default for ``slotwise serve``.  One connection, used under
    the market's lock; every change is its own transaction."""

    def __init__(self, path: str, lazy: bool = False) -> None:
        """``lazy``: create the file only when something is first written
        (a server that never uses the market leaves none behind)."""
        self.path = path
        self._db: sqlite3.Connection | None = None
        if not lazy:
            self._open()

    def _open(self) -> sqlite3.Connection:
        if self._db is None:
            path = self.path
            os.makedirs(os.path.dirname(os.path.abspath(path)), mode=0o700, exist_ok=True)
            fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
            os.close(fd)
            if os.stat(path).st_mode & (stat.S_IRWXG | stat.S_IRWXO):
                os.chmod(path, 0o600)  # budgets are money: the owner only
            try:
                db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
                db.execute("PRAGMA synchronous=FULL")
                db.executescript("BEGIN;" + SCHEMA + "COMMIT;")  # one transaction: one sync, not one per table
            except sqlite3.DatabaseError as e:
                raise ValueError(f"{path}: not a Slotwise market store: {e}") from None
            self._db = db
        return self._db

    @property
    def db(self) -> sqlite3.Connection:
        return self._open()

    def _tx(self):
        return _Transaction(self.db)

    def load(self) -> tuple[list[Account], int]:
        if self._db is None and not os.path.exists(self.path):
            return [], 0
        rows = self.db.execute("SELECT queue, budget, spending, owner FROM queues ORDER BY queue").fetchall()
        last = self.db.execute("SELECT COALESCE(MAX(id), 0) FROM intervals").fetchone()[0]
        return [Account(q, b, s, s, o) for q, b, s, o in rows], int(last)

    def save_account(self, a: Account) -> None:
        self.save_accounts([a])

    def save_accounts(self, accounts: list[Account]) -> None:
        """Save ``accounts`` in one transaction (all or none)."""
        with self._tx():
            self.db.executemany("INSERT OR REPLACE INTO queues (queue, budget, spending, owner) VALUES (?, ?, ?, ?)",
                                [(a.queue, a.budget, a.spending, a.owner) for a in accounts])

    def delete_account(self, queue: str) -> None:
        with self._tx():
            self.db.execute("DELETE FROM queues WHERE queue = ?", (queue,))

    def grant(self, queue: str, amount: float, budget: float) -> None:
        with self._tx():
            self.db.execute("UPDATE queues SET budget = ? WHERE queue = ?", (budget, queue))
            self.db.execute("INSERT INTO grants (queue, amount, budget, at) VALUES (?, ?, ?, ?)",
                            (queue, amount, budget, time.time()))

    def set_spending(self, queue: str, rate: float) -> None:
        with self._tx():
            self.db.execute("UPDATE queues SET spending = ? WHERE queue = ?", (rate, queue))

    def commit_interval(self, record: Interval) -> list[tuple[str, str]]:
        """Commit the interval in one transaction; the charges the database
        refused, as (queue, why), each rolled back alone (its queue is not
        charged, the others are).  Raises (nothing committed) if the
        interval itself cannot be."""
        refused = []
        with self._tx():
            self.db.execute("INSERT INTO intervals (id, start, end, price) VALUES (?, ?, ?, ?)",
                            (record.interval_id, record.start, record.end, record.price))
            for c in record.charges:
                self.db.execute("SAVEPOINT charge")
                try:
                    self.db.execute("INSERT INTO charges (interval_id, queue, slots, rate, amount, budget) "
                                    "VALUES (?, ?, ?, ?, ?, ?)",
                                    (record.interval_id, c.queue, c.slots, c.rate, c.amount, c.budget))
                    self.db.execute("UPDATE queues SET budget = ? WHERE queue = ?", (c.budget, c.queue))
                except sqlite3.Error as e:
                    self.db.execute("ROLLBACK TO charge")
                    refused.append((c.queue, str(e)))
                self.db.execute("RELEASE charge")
        return refused

    def history(self, limit: int) -> list[dict]:
        if self._db is None and not os.path.exists(self.path):
            return []
        rows = self.db.execute("SELECT id, start, end, price FROM intervals ORDER BY id DESC LIMIT ?",
                               (int(limit),)).fetchall()
        rows.reverse()
        if not rows:
            return []
        charges: dict[int, list] = {}
        for iid, q, slots, rate, amount, budget in self.db.execute(
                "SELECT interval_id, queue, slots, rate, amount, budget FROM charges WHERE interval_id >= ? "
                "ORDER BY interval_id, queue", (rows[0][0],)):
            charges.setdefault(iid, []).append((q, slots, rate, amount, budget))
        return [_row(i, s, e, p, charges.get(i, [])) for i, s, e, p in rows]

    def last_timestamp(self, user: str) -> int | None:
        if self._db is None and not os.path.exists(self.path):
            return None
        row = self.db.execute("SELECT last_timestamp FROM signers WHERE user = ?", (user,)).fetchone()
        return None if row is None else int(row[0])

    def accept_timestamp(self, user: str, ts: int) -> None:
        with self._tx():
            self.db.execute("INSERT OR REPLACE INTO signers (user, last_timestamp) VALUES (?, ?)", (user, ts))

    def restore_timestamp(self, user: str, ts: int | None) -> None:
        """Put back what ``last_timestamp`` said before a request that was refused."""
        if ts is None:
            with self._tx():
                self.db.execute("DELETE FROM signers WHERE user = ?", (user,))
        else:
            self.accept_timestamp(user, ts)

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


class _Transaction:
    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type, *_) -> None:
        self.db.execute("ROLLBACK" if exc_type else "COMMIT")


def _row(iid, start, end, price, charges) -> dict:
    return {"interval": iid, "start": start, "end": end, "price": price,
            "charges": [{"queue": q, "slots": s, "rate": r, "amount": a, "budget": b}
                        for q, s, r, a, b in charges]}
