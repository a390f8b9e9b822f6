"""The Dynamic Priority market (Sandholm and Lai, "Dynamic Proportional Share
Scheduling in Hadoop"): each queue has a budget and a spending rate, the
rate it is willing to pay per slot per allocation interval.  In each interval
the price p is the sum of the rates of the queues with work; queue i is
granted (s_i / p) of the capacity and pays s_i x the slots it used.

Pure bookkeeping: time comes in with each observation, persistence goes
through a store (``slotwise.market.store``), and the scheduling itself is the
``dynamic-priority`` policy's (it reads ``rates`` and feeds ``observe``).

Money is bounded so that no sum can overflow: a budget is a finite number
from 0 to ``MAX_BUDGET`` (1e12) and a spending rate one from 0 to
``MAX_RATE`` (1e9); a request that would leave either outside is refused
(MarketError, 400 on the API) and changes nothing.  Usage reports are taken
as finite slot counts from 0 to ``MAX_SLOTS`` (1e12), so a charge (rate x
slots, at most the budget) is always a finite number.  A store that refuses
one queue's charge leaves that queue uncharged for the interval and every
other queue charged; it is logged and counted (``Market.counters``).
"""

from __future__ import annotations

import collections
import contextlib
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

#: The most a budget may hold.  Far above any real grant, and small enough
#: that a budget stays exact to a hundredth (1e12 x 100 < 2**53).
MAX_BUDGET = 1e12
#: The highest spending rate (per slot per interval).
MAX_RATE = 1e9
#: The most slots a usage report may say a queue uses or wants (beyond any
#: cluster; a larger or non-finite figure is taken as this bound, NaN as 0).
MAX_SLOTS = 1e12


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
    #: What a queue the market first sees (a new child queue) starts with.
    initial_budget: float = 0.0
    initial_spending: float = 1.0

    def __post_init__(self) -> None:
        if not self.interval > 0:
            raise ValueError("the allocation interval must be positive")
        if self.grace < 0:
            raise ValueError("the preemption grace time must be >= 0")
        if not (self.slot_memory_mb > 0 and self.slot_vcores > 0):
            raise ValueError("a slot must have positive memory and vcores")
        if not math.isfinite(self.interval):
            raise ValueError("the allocation interval must be a finite number of seconds")
        if not 0 <= self.initial_budget <= MAX_BUDGET:
            raise ValueError(f"the initial budget must be from 0 to {MAX_BUDGET:g}")
        if not 0 <= self.initial_spending <= MAX_RATE:
            raise ValueError(f"the initial spending rate must be from 0 to {MAX_RATE:g}")

    def slots(self, r: Resource) -> float:
        """Slots held by ``r``: its dominant dimension in slot units (an
        MRv1 task's slot is one already)."""
        return max(r.memory_mb / self.slot_memory_mb, r.vcores / self.slot_vcores,
                   r.map_slots + r.reduce_slots, 0.0)


@dataclass
class _Source:
    """One engine's view of one dynamic-priority queue: the usage it last
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
        #: What went wrong that the market got past: "charges_refused" (a
        #: queue's charge the store refused; that queue went uncharged for
        #: the interval), "intervals_uncharged" (an interval the store could
        #: not commit at all), "accounts_repaired" (an account loaded out of
        #: bounds, brought within them), "declare_failed" (an account from the
        #: allocation file the store could not open).
        self.counters: collections.Counter = collections.Counter()
        #: The accounts the allocation file in force declares (``follow_declared``).
        self._declared: set[str] = set()
        for a in self.accounts.values():
            self._repair(a)
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
        #: Held around each change an operator makes (serve sets the door's
        #: lock): a change then falls between two of the engine's calls, in
        #: the order a shadow and a replay see it.
        self.guard = contextlib.nullcontext()

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
         "set_spending": self.set_spending, "declare": self.declare}[op](**args)

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
        state["guard"] = None  # nor takes the live door's lock
        return state

    def __setstate__(self, state) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()
        self.guard = contextlib.nullcontext()
        self.store.save_accounts(list(self.accounts.values()))  # a copy that follows changes (a shadow) can apply them

    # ------------------------------------------------------------- queries
    def resolve(self, queue: str) -> str:
        """The account a request names: its full queue path, or a short name
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
        with self.guard, self._lock:
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
        with self.guard, self._lock:
            q = self.resolve(queue)
            self.store.delete_account(q)
            del self.accounts[q]
            self._slot_seconds.pop(q, None)
            self._changed("remove_queue", queue=q)
            return q

    def add_budget(self, queue: str, amount: float) -> float:
        amount = _amount(amount, "addBudget")
        with self.guard, self._lock:
            q = self.resolve(queue)
            a = self.accounts[q]
            budget = a.budget + amount
            if budget < 0:
                raise MarketError(f"addBudget: {q} has {a.budget:g}; cannot take {-amount:g}")
            if budget > MAX_BUDGET:
                raise MarketError(f"addBudget: {q} has {a.budget:g}; adding {amount:g} would take it past "
                                  f"{MAX_BUDGET:g}, the most a budget may hold")
            self.store.grant(q, amount, budget)
            a.budget = budget
            self._changed("add_budget", queue=q, amount=amount)
            return budget

    def set_spending(self, queue: str, rate: float) -> float:
        rate = _amount(rate, "setSpending")
        if not 0 <= rate <= MAX_RATE:
            raise MarketError(f"setSpending: the rate must be >= 0 and at most {MAX_RATE:g}, not {rate:g}")
        with self.guard, self._lock:
            q = self.resolve(queue)
            a = self.accounts[q]
            self.store.set_spending(q, rate)
            a.spending = rate
            self._changed("set_spending", queue=q, rate=rate)
            return rate

    def signed(self, user: str, ts: int, carry_out):
        """Carry out a signed request from ``user`` stamped ``ts``, once:
        None (nothing done) if ``ts`` is not newer than the last request
        accepted from ``user``; else what ``carry_out()`` answers, as
        ``(answer, done)``.  ``ts`` becomes the last accepted only when
        ``done``: a request refused for its role or its input changes
        nothing, replay guard included.  All of it under the market's lock,
        so two copies of one request cannot both pass; the timestamp is
        stored before the request is carried out (and put back if it is
        refused), so not even a crash between the two lets it through twice."""
        with self._lock:
            last = self.store.last_timestamp(user)
            if last is not None and ts <= last:
                return None
            self.store.accept_timestamp(user, ts)
            done = False
            try:
                answer, done = carry_out()
                return answer
            finally:
                if not done:
                    self.store.restore_timestamp(user, last)

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

    # ------------------------------------------------- the allocation file
    def follow_declared(self, queues: list[str], source: str = "the allocation file") -> tuple[list[str], list[str]]:
        """Accounts for the queues the allocation file declares under a
        ``dynamic-priority`` queue (``policies.dynamic_priority.follow_config``
        reads them from the file, so the market knows no policy), at start-up
        and on each reload: (opened, closed).  A queue that left
        the file since the last call keeps its account while it holds budget
        or has work (money is never dropped by an edit; an admin's
        ``removeQueue`` drops it) and is closed otherwise, at this call or a
        later one.  Accounts opened some other way (``addQueue``, a child
        queue made at run time) are left alone.  Never raises: a store
        failure is logged and counted."""
        with self._lock:
            opened = self.declare([q for q in queues if q not in self.accounts])
            closed, kept = [], []
            wanted = set(queues)
            for q in sorted(self._declared - wanted):
                a = self.accounts.get(q)
                if a is None:
                    continue
                if a.budget > 0 or self._work.get(q):
                    kept.append(q)
                    continue
                try:
                    self.remove_queue(q)
                    closed.append(q)
                except Exception:  # the store failed: it stays, and goes at a later reload
                    log.exception("dynamic priority: cannot close the account of %s", q)
                    kept.append(q)
            if kept:
                log.info("dynamic priority: %s left the allocation file but keep their accounts (budget or "
                         "work left; removeQueue closes them)", ", ".join(kept))
            self._declared = wanted | set(kept)
            if opened or closed:
                log.info("dynamic priority: accounts from %s: opened %s; closed %s", source,
                         ", ".join(opened) or "none", ", ".join(closed) or "none")
            return opened, closed

    def declare(self, queues) -> list[str]:
        """Open an account (initial budget and rate) for each of ``queues``
        that has none, in one store transaction, and record it; the ones
        opened.  If the store cannot save them, none is opened: logged and
        counted ("declare_failed"; the next reload or update pass tries again)."""
        with self.guard, self._lock:
            todo = list(dict.fromkeys(q for q in queues if q not in self.accounts))
            if not todo:
                return []
            try:
                self.ensure(todo)
            except Exception:
                log.exception("dynamic priority: cannot open accounts for %s", ", ".join(todo))
                self.counters["declare_failed"] += len(todo)
                return []
            self._changed("declare", queues=todo)
            return todo

    # ---------------------------------------------------- the engines' side
    def ensure(self, queues) -> None:
        """Open an account for each queue of a dynamic-priority queue that has none."""
        with self._lock:
            s = self.settings
            new = [Account(q, s.initial_budget, s.initial_spending, s.initial_spending)
                   for q in dict.fromkeys(queues) if q not in self.accounts]
            if new:
                self.store.save_accounts(new)  # one transaction
                for a in new:
                    self.accounts[a.queue] = a

    def observe(self, source: str, now: float, used: dict[str, float], pending: dict[str, float]) -> None:
        """One engine reports, for the queues of one dynamic-priority queue,
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
            src.used = {q: _slots(n) for q, n in used.items()}
            src.pending = {q: _slots(n) for q, n in pending.items()}
            used, pending = src.used, src.pending
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
            slots = _slots(self._slot_seconds.get(q, 0.0) / length)
            rate = self.rate_of(q)
            # rate <= MAX_RATE, slots <= MAX_SLOTS, budget <= MAX_BUDGET: all finite.
            amount = max(min(rate * slots, a.budget), 0.0) if slots > 0 else 0.0
            if slots > 0 or amount > 0:
                charges.append(Charge(q, slots, rate, amount, a.budget - amount))
        record = Interval(self.interval_id, self.interval_start, end, self.price(), charges)
        refused: dict[str, str] = {}
        try:
            if self.accounts:
                # One transaction; a charge the store refuses is left out of
                # it alone (that queue goes uncharged), the others commit.
                refused = dict(self.store.commit_interval(record) or ())
        except Exception:  # the store failed as a whole: nothing of this interval is charged (never half)
            log.exception("dynamic priority: cannot commit interval %d; it goes uncharged", self.interval_id)
            self.counters["intervals_uncharged"] += 1
            record.charges = []
        if refused:
            for q, why in sorted(refused.items()):
                log.error("dynamic priority: the store refused %s's charge for interval %d (%s); %s goes "
                          "uncharged for it, the other queues are charged", q, self.interval_id, why, q)
            self.counters["charges_refused"] += len(refused)
            record.charges = [c for c in record.charges if c.queue not in refused]
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

    def _repair(self, a: Account) -> None:
        """Bring an account loaded from the store within the bounds (a store
        written before they existed may hold an infinite budget)."""
        budget = _within(a.budget, MAX_BUDGET)
        spending = _within(a.spending, MAX_RATE)
        if (budget, spending) != (a.budget, a.spending):
            log.warning("dynamic priority: %s was stored with budget %r and spending rate %r; now %g and %g "
                        "(the bounds are %g and %g)", a.queue, a.budget, a.spending, budget, spending,
                        MAX_BUDGET, MAX_RATE)
            a.budget, a.spending, a.rate = budget, spending, spending
            self.counters["accounts_repaired"] += 1
            try:
                self.store.save_account(a)
            except Exception:
                log.exception("dynamic priority: cannot store the repaired account of %s", a.queue)


def _within(x, top: float) -> float:
    """``x`` as a number from 0 to ``top`` (NaN or None: 0, +inf: top)."""
    try:
        x = float(x)
    except (TypeError, ValueError):
        return 0.0
    if math.isnan(x) or x < 0:
        return 0.0
    return min(x, top)


def _slots(n) -> float:
    return _within(n, MAX_SLOTS)


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
