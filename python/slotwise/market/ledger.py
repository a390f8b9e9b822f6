"""The Dynamic Priority market (Sandholm and Lai, "Dynamic Proportional Share
Scheduling in Hadoop"): each queue has a budget and a spending rate, the
rate it is willing to pay per slot per allocation interval.  In each interval
the price p is the sum of the rates of the queues with work; queue i is
granted (s_i / p) of the capacity and pays s_i x the slots it used.

Pure bookkeeping: time comes in with each observation, persistence goes
through a store (``slotwise.market.store``), and the scheduling itself is the
``dynamic-priority`` policy's (it reads ``rates`` and feeds ``observe``).
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import math
import threading
from dataclasses import dataclass, field

from ..placement import queue_path
from ..resources import Resource
from .records import Account, Charge, Interval
from .store import MemoryStore

log = logging.getLogger(__name__)


class MarketError(ValueError):
    """A request the market refuses (unknown queue, bad amount); nothing changed."""


@dataclass
class MarketSettings:
    #: Seconds per allocation interval (the paper: 10 s to 1 min).
    interval: float = 20.0
    #: Take back slots a queue no longer pays for (used over its share).
    preemption: bool = True
    #: How long a queue may stay over its paid share before its slots go.
    grace: float = 60.0
    #: One slot in YARN resources: a queue's slots are its dominant usage in
    #: these units.  On MRv1 (a slot is Resource(1, 1)) the vcores count it.
    slot_memory_mb: float = 1024.0
    slot_vcores: float = 1.0
    #: What a queue the market first sees (a new child pool) starts with.
    initial_budget: float = 0.0
    initial_spending: float = 1.0

    def __post_init__(self) -> None:
        if not self.interval > 0:
            raise ValueError("the allocation interval must be positive")
        if self.grace < 0:
            raise ValueError("the preemption grace time must be >= 0")
        if not (self.slot_memory_mb > 0 and self.slot_vcores > 0):
            raise ValueError("a slot must have positive memory and vcores")
        if self.initial_budget < 0 or self.initial_spending < 0:
            raise ValueError("initial budget and spending must be >= 0")

    def slots(self, r: Resource) -> float:
        """Slots held by ``r``: its dominant dimension in slot units."""
        return max(r.memory_mb / self.slot_memory_mb, r.vcores / self.slot_vcores, 0.0)


@dataclass
class _Source:
    """One engine's view of one dynamic-priority pool: the usage it last
    reported per queue and when."""
    at: float
    used: dict[str, float] = field(default_factory=dict)
    pending: dict[str, float] = field(default_factory=dict)
    work: dict[str, bool] = field(default_factory=dict)


class Market:
    """Budgets, rates, the price and the charges of one scheduler.  Shared by
    every engine of a server (an MRv1 JobTracker's map and reduce engines pay
    from one budget) and by the REST API; thread-safe."""

    def __init__(self, settings: MarketSettings | None = None, store=None) -> None:
        self.settings = settings or MarketSettings()
        self.store = store if store is not None else MemoryStore()
        self._lock = threading.RLock()
        accounts, last_id = self.store.load()
        self.accounts: dict[str, Account] = {a.queue: a for a in accounts}
        self.interval_id = last_id + 1
        self.interval_start: float | None = None  # set by the first observation
        self._slot_seconds: dict[str, float] = {}
        self._sources: dict[str, _Source] = {}
        self._work: dict[str, bool] = {}
        self.last_interval: Interval | None = None
        #: Called as (op, args) under the market's lock after each change an
        #: operator makes (``slotwise serve --record`` logs them, so a replay
        #: applies them at the same point between the engine's calls).
        self.on_change = None

    # ----------------------------------------------------------- recording
    def snapshot(self) -> dict:
        """Settings, accounts and the next interval's id: where a replay starts."""
        with self._lock:
            return {"settings": dataclasses.asdict(self.settings), "interval_id": self.interval_id,
                    "accounts": [dataclasses.asdict(a) for a in self.accounts.values()]}

    @classmethod
    def from_snapshot(cls, snap: dict) -> "Market":
        from .records import Account

        m = cls(MarketSettings(**snap["settings"]))
        m.accounts = {a["queue"]: Account(**a) for a in snap["accounts"]}
        for a in m.accounts.values():
            m.store.save_account(a)
        m.interval_id = snap["interval_id"]
        return m

    def apply(self, op: str, args: dict) -> None:
        """Replay one recorded change."""
        {"add_queue": self.add_queue, "remove_queue": self.remove_queue, "add_budget": self.add_budget,
         "set_spending": self.set_spending}[op](**args)

    def _changed(self, op: str, **args) -> None:
        if self.on_change is not None:
            self.on_change(op, args)

    # ------------------------------------------------------------ pickling
    def __getstate__(self):
        """A copy for what-if questions: no lock, and a store that writes nothing."""
        with self._lock:
            state = dict(self.__dict__)
        state.pop("_lock")
        state["store"] = MemoryStore()
        state["on_change"] = None  # a what-if copy records nothing
        return state

    def __setstate__(self, state) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()

    # ------------------------------------------------------------- queries
    def resolve(self, queue: str) -> str:
        """The account a request names: its full pool path, or a short name
        that only one account ends with.  MarketError if none."""
        with self._lock:
            q = queue.strip()
            if not q:
                raise MarketError("queue: empty name")
            full = queue_path(q)
            if full in self.accounts:
                return full
            ends = [name for name in self.accounts if name.rsplit(".", 1)[-1] == q]
            if len(ends) == 1:
                return ends[0]
            if len(ends) > 1:
                raise MarketError(f"queue {q!r} is ambiguous: {', '.join(sorted(ends))}")
            raise MarketError(f"no queue {q!r} in the market")

    def rate_of(self, queue: str) -> float:
        """The rate in force for ``queue``: 0 for an unknown queue or one out
        of budget (it drops out of the market)."""
        a = self.accounts.get(queue)
        if a is None or a.budget <= 0:
            return 0.0
        return a.rate

    def price(self) -> float:
        """Sum of the rates in force of the queues with pending or running work."""
        with self._lock:
            return float(sum(self.rate_of(q) for q, w in self._work.items() if w))

    def share(self, queue: str) -> float:
        """The fraction of capacity granted: s_i / p (0 without work or budget)."""
        with self._lock:
            p = self.price()
            if p <= 0 or not self._work.get(queue):
                return 0.0
            return self.rate_of(queue) / p

    def usage(self) -> dict[str, tuple[float, float]]:
        """Per queue (slots used, slots pending) summed over the engines' last reports."""
        with self._lock:
            out: dict[str, list[float]] = {}
            for src in self._sources.values():
                for q, used in src.used.items():
                    out.setdefault(q, [0.0, 0.0])[0] += used
            for src in self._sources.values():
                for q, pend in src.pending.items():
                    out.setdefault(q, [0.0, 0.0])[1] += pend
            return {q: (u, p) for q, (u, p) in out.items()}

    def info(self, queue: str) -> dict:
        with self._lock:
            q = self.resolve(queue)
            a = self.accounts[q]
            used, pending = self.usage().get(q, (0.0, 0.0))
            return {"queue": q, "budget": a.budget, "spending": a.spending, "rate": a.rate,
                    "share": self.share(q), "used": used, "pending": pending, "owner": a.owner}

    def infos(self) -> list[dict]:
        with self._lock:
            return [self.info(q) for q in sorted(self.accounts)]

    def holder(self, queue: str) -> str:
        """The user who holds ``queue``: its owner, else its last name part."""
        a = self.accounts.get(queue)
        return a.owner if a is not None and a.owner else queue.rsplit(".", 1)[-1]

    # ------------------------------------------------------------- changes
    def add_queue(self, queue: str, owner: str | None = None) -> str:
        with self._lock:
            q = queue_path(_name(queue))
            if q in self.accounts:
                raise MarketError(f"queue {q} is already in the market")
            s = self.settings
            a = Account(q, s.initial_budget, s.initial_spending, s.initial_spending, owner)
            self.store.save_account(a)
            self.accounts[q] = a
            self._changed("add_queue", queue=q, owner=owner)
            return q

    def remove_queue(self, queue: str) -> str:
        with self._lock:
            q = self.resolve(queue)
            self.store.delete_account(q)
            del self.accounts[q]
            self._slot_seconds.pop(q, None)
            self._changed("remove_queue", queue=q)
            return q

    def add_budget(self, queue: str, amount: float) -> float:
        amount = _amount(amount, "addBudget")
        with self._lock:
            q = self.resolve(queue)
            a = self.accounts[q]
            budget = a.budget + amount
            if budget < 0:
                raise MarketError(f"addBudget: {q} has {a.budget:g}; cannot take {-amount:g}")
            self.store.grant(q, amount, budget)
            a.budget = budget
            self._changed("add_budget", queue=q, amount=amount)
            return budget

    def set_spending(self, queue: str, rate: float) -> float:
        rate = _amount(rate, "setSpending")
        if rate < 0:
            raise MarketError("setSpending: the rate must be >= 0")
        with self._lock:
            q = self.resolve(queue)
            a = self.accounts[q]
            self.store.set_spending(q, rate)
            a.spending = rate
            self._changed("set_spending", queue=q, rate=rate)
            return rate

    def accept_timestamp(self, user: str, ts: int) -> bool:
        """Whether ``ts`` is newer than the last signed request accepted from
        ``user`` (then it becomes the last).  Checked and recorded as one
        step, in the store, so neither two copies of a request nor a
        restart lets a request through twice."""
        with self._lock:
            last = self.store.last_timestamp(user)
            if last is not None and ts <= last:
                return False
            self.store.accept_timestamp(user, ts)
            return True

    # ---------------------------------------------------- the engines' side
    def ensure(self, queues) -> None:
        """Open an account for each queue of a dynamic-priority pool that has none."""
        with self._lock:
            s = self.settings
            for q in queues:
                if q not in self.accounts:
                    a = Account(q, s.initial_budget, s.initial_spending, s.initial_spending)
                    self.store.save_account(a)
                    self.accounts[q] = a

    def observe(self, source: str, now: float, used: dict[str, float], pending: dict[str, float]) -> None:
        """One engine reports, for the queues of one dynamic-priority pool,
        the slots they use and want more of now.  Usage counts as constant
        since the source's last report; intervals that ended meanwhile are
        charged and committed, one transaction each."""
        with self._lock:
            if self.interval_start is None:
                self.interval_start = now
            src = self._sources.get(source)
            if src is None:
                src = self._sources[source] = _Source(now)
            length = self.settings.interval
            end = self.interval_start + length
            while now >= end:
                for s in self._sources.values():
                    self._integrate(s, end)
                self._close(end)
                end = self.interval_start + length
                if now - end > length:
                    # No reports for more than an interval (Python was away, the
                    # cluster ran on the shim's FIFO): what was used meanwhile is
                    # unknown, so that time goes uncharged and a new interval starts now.
                    log.warning("dynamic priority: no usage reports for %.0f s; that time goes uncharged",
                                now - end + length)
                    self.interval_start, end = now, now + length
                    for s in self._sources.values():
                        s.at = max(s.at, now)
            self._integrate(src, now)
            src.used = dict(used)
            src.pending = dict(pending)
            src.work = {q: used.get(q, 0) > 0 or pending.get(q, 0) > 0 for q in set(used) | set(pending)}
            work: dict[str, bool] = {}
            for s in self._sources.values():
                for q, w in s.work.items():
                    work[q] = work.get(q, False) or w
            self._work = work

    def _integrate(self, src: _Source, until: float) -> None:
        # A report counts for at most one interval: older usage is not known.
        dt = min(until, src.at + self.settings.interval) - src.at
        if dt > 0:
            for q, n in src.used.items():
                if n > 0:
                    self._slot_seconds[q] = self._slot_seconds.get(q, 0.0) + n * dt
        src.at = max(src.at, until)

    def _close(self, end: float) -> None:
        """Charge the interval that ends at ``end``, commit it, open the next
        with the rates asked for meanwhile."""
        length = self.settings.interval
        charges = []
        for q in sorted(self.accounts):
            a = self.accounts[q]
            slots = self._slot_seconds.get(q, 0.0) / length
            rate = self.rate_of(q)
            amount = min(rate * slots, a.budget) if slots > 0 else 0.0
            if slots > 0 or amount > 0:
                charges.append(Charge(q, slots, rate, amount, a.budget - amount))
        record = Interval(self.interval_id, self.interval_start, end, self.price(), charges)
        try:
            if self.accounts:
                self.store.commit_interval(record)
        except Exception:  # the store failed: this interval is not charged (never half charged)
            log.exception("dynamic priority: cannot commit interval %d; it goes uncharged", self.interval_id)
            record.charges = []
        for c in record.charges:
            self.accounts[c.queue].budget = c.budget
        for a in self.accounts.values():
            a.rate = a.spending
        self.last_interval = record
        self.interval_id += 1
        self.interval_start = end
        self._slot_seconds = {}

    def history(self, limit: int = 500) -> list[dict]:
        """The last committed intervals, oldest first: price and each queue's budget after it."""
        with self._lock:
            return self.store.history(limit)


def _name(queue: str) -> str:
    q = (queue or "").strip()
    if not q or any(not part or part != part.strip() for part in q.split(".")):
        raise MarketError(f"bad queue name {queue!r}")
    return q


def _amount(value, what: str) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise MarketError(f"{what}: not a number: {value!r}") from None
    if not math.isfinite(x):
        raise MarketError(f"{what}: not a finite number: {value!r}")
    return x
