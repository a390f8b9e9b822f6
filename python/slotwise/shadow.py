"""A shadow policy: a candidate allocation file decides beside the live one,
on the same heartbeats, and never acts.

The door (``core.PolicyCore``) hands the shadow, under its lock and after
its own answer is made, each input it applied (the message, the engine's
instant) and, for a heartbeat or an update pass, its answer: an append to a
queue, nothing more. In serve the shadow runs in a process of its own
(shadow_process.py, which feeds this class through a pipe); here, on a
thread, or inline in the simulator, two engines follow the stream:

- the **follower**, a replica of the live engine (the live file, every
  input fed as ``slotwise replay`` feeds them): its decisions must be the
  live ones, checked at every heartbeat and pass;
- the **candidate**, the same inputs under the candidate file: it decides
  each heartbeat and pass, and its decisions are compared with the live
  ones. While it decides as the live engine did (the same containers
  and preemptions) its cluster is the live one and it goes on, keeping its
  own delay-scheduling state (which apps it passed over, and since when):
  that state is its file's own, as it would be were the candidate live.
  Once its containers differ it is made again from the follower
  (``Engine.fork``, then the candidate file set as a reload sets it) before
  the next comparison, so it never drifts: every comparison is on the live
  cluster as it was at that heartbeat.

Memory: the follower and the candidate are two more engines. The copies a
fork keeps (``engine.fork.Kept``) are not left on the live engine for the
shadow's sake, and the follower drops its own after ``KEEP_COPIES_FOR``
heartbeats without a copy (docs/benchmarks.md, "Shadow overhead").

An identical candidate never needs a copy (same inputs, same file: the same
decisions, as replay shows); a changed one pays a fork per diverging
heartbeat, on its own thread. It is bounded: a backlog past ``LAG`` items
skips the comparison of heartbeats (counted: ``skipped``; the follower
still reads them), a backlog past ``MAX_BACKLOG`` stops it, and so do a
decision that raises and ``STRIKES`` heartbeats in a row over its CPU
budget. Nothing it does reaches the master or the live engine; the event
log gets a ``shadow`` record per diverging heartbeat or pass, which replay
ignores.
"""

from __future__ import annotations

import collections
import copy
import dataclasses
import logging
import threading
import time

from .clock import ManualClock
from .config.model import AllocationConfig
from .eventlog import EventLog
from .resources import ZERO

log = logging.getLogger("slotwise.shadow")

#: Items waiting past which heartbeats are followed but not compared (skipped).
LAG = 500
#: Items waiting past which the shadow stops (it holds their messages).
MAX_BACKLOG = 20_000
#: CPU seconds one heartbeat (or pass) of the candidate may take...
BUDGET_S = 0.05
#: ... this many times in a row before the shadow is stopped.
STRIKES = 5
#: The window of the per-queue figures, engine seconds.
WINDOW_S = 600.0
#: Launches and preemptions kept for the window (the oldest go first).
MAX_EVENTS = 200_000
#: Heartbeats compared without a copy after which the follower's kept copies
#: go (about half an engine; a candidate diverges on few heartbeats since it
#: keeps its own delay state, and then pays a whole copy).
KEEP_COPIES_FOR = 20
#: Diverging decisions kept, newest last.
MAX_DIVERGING = 50
#: Decisions of one side kept per diverging heartbeat.
MAX_SIDE = 20
#: The timeline's step, engine seconds, and its length (an hour): the
#: console draws divergence over time from it without keeping every heartbeat.
SAMPLE_S = 5.0
MAX_SAMPLES = 720


def decision(a, dims) -> dict:
    """One assignment as the shadow compares and reports it."""
    return {"app": a.app_id, "queue": a.queue, "node": a.node_id, "locality": a.locality,
            "priority": a.priority, "am": a.is_am, "resource": a.resource.to_dict(dims)}


def _key(a) -> tuple:
    r = a.resource
    return (a.app_id, a.node_id, a.locality, a.priority, a.is_am, r.memory_mb, r.vcores, r.map_slots,
            r.reduce_slots)


def _preempt_keys(preempt) -> list:
    return sorted((p.container_id, p.kill) for p in preempt)


def _own_services(services: dict) -> dict:
    """The shared services as a what-if copies them (``views.dry_run.Copier``):
    what has state of its own for what-ifs (a market's budgets) copied, the
    rest shared read-only; so the shadow never charges the live market."""
    return {k: copy.deepcopy(v) if "__getstate__" in type(v).__dict__ else v for k, v in services.items()}


def reason(engine, a, under: str = "the candidate") -> str:
    """Why ``a`` was given (explain's words for an app's turn: its queue's
    usage against its fair share and weight, in what the queue's parent
    shares), on ``engine``: the candidate's, or the replica of the live one."""
    from .engine.preemption import compared
    from .views.explain import _amount

    q = engine.queues.get(a.queue)
    if q is None:
        return f"{a.app_id} in {a.queue}"
    d = compared(engine, q)
    below = any(q.usage.get(k) < q.fair_share.get(k) for k in d)
    return (f"queue {q.name} (weight {q.weight:g}) uses {_amount(q.usage, d)} of a fair share of "
            f"{_amount(q.fair_share, d)} under {under}: "
            + ("among the first offered a free container" if below else "its turn came"))


@dataclasses.dataclass
class Start:
    """The live state a shadow starts from, taken in one hold of the door's
    lock: what the follower is built of (in this process or, pickled, in a
    shadow process of its own: slotwise/shadow_process.py)."""

    snap: object  # engine.fork.Snapshot, or None for a door with no state yet
    moves: dict
    suspects: set
    settings: object
    config: AllocationConfig  # the live file
    t: float
    services: dict
    kind: str
    dims: tuple
    #: The follower's engine built of ``snap`` already (to be pickled: a
    #: snapshot shares the live engine's objects, a built engine does not).
    engine: object = None

    def build(self) -> None:
        """``snap`` made into an engine of its own (outside the door's lock)."""
        from .engine import fork as engine_fork

        if self.snap is not None:
            self.engine = engine_fork.build(self.snap, ManualClock(self.t))
            self.engine.ctx.services = self.services
            self.snap = None


def check_candidate(core, config: AllocationConfig) -> None:
    """A candidate is validated as a reload is: ValueError (its FILE:LINE:
    lines) if the live state cannot take it (a queue holding apps made a
    parent)."""
    with core._lock:
        conflicts = core._engine.config_conflicts(config)
    if conflicts:
        raise ValueError("\n".join(conflicts))


def capture(core, shadow) -> Start:
    """``core``'s state now, and from this hold on every input it applies
    handed to ``shadow`` (``PolicyCore.swap_shadow``)."""
    from .engine import fork as engine_fork
    from .views.dry_run import fork_hold

    live = core._engine
    snap = None
    # The copies a fork keeps on the live engine cost about half its
    # memory: kept only if something else (a dry run, forecasts) keeps them.
    had_kept = live._kept is not None
    with fork_hold(core._lock, live):
        if live.apps or live.nodes or live.containers:
            snap = engine_fork.snapshot(live)
        if not had_kept:
            engine_fork.forget(live)
        # the market copied in the same hold: a change after it reaches the shadow once, as an input
        start = Start(snap, copy.deepcopy(core._moves), set(core._suspects), core.settings, live.config,
                      core._clock.now(), _own_services(core.services), core.kind, core.dims)
        replaced = core.swap_shadow(shadow)
    if replaced is not None:
        replaced.stop("replaced by another candidate")
    return start


class _Stopped(Exception):
    pass


class Shadow:
    """One candidate file deciding beside the live engine of one door."""

    def __init__(self, config: AllocationConfig, text: str | None = None, source: str | None = None,
                 event_log: EventLog | None = None, threaded: bool = True, budget_s: float = BUDGET_S,
                 window_s: float = WINDOW_S) -> None:
        self.config = config
        self.text = text
        self.source = source or config.source
        self.event_log = event_log or EventLog()
        self.threaded = threaded
        self.budget_s = budget_s
        self.window_s = window_s
        self.state = "off"  # off (not attached yet), running, stopped
        self.error: str | None = None
        self.started_at: float | None = None
        self.compared = self.diverged = self.skipped = 0
        self.updates_compared = self.updates_diverged = 0
        self.remakes = 0
        self.cpu_s = 0.0
        self.diverging: collections.deque = collections.deque(maxlen=MAX_DIVERGING)
        self._timeline: collections.deque = collections.deque(maxlen=MAX_SAMPLES)  # (t, compared, diverged)
        self._events: collections.deque = collections.deque(maxlen=MAX_EVENTS)  # (t, side, queue, res, local)
        self._last_t = 0.0
        self._stats_lock = threading.Lock()
        self._items: collections.deque = collections.deque()
        self._wake = threading.Event()
        self._overflow = False
        self._strikes = 0
        self._core = None
        self._follower = self._candidate = None
        self._stale = False  # the candidate differs from the live state: made again before it compares
        self._remade_at = 0  # ``compared`` at the last copy
        self._thread: threading.Thread | None = None
        self._dims = ("memory_mb", "vcores")

    # ------------------------------------------------------------ the door's side
    def attach(self, core) -> None:
        """Start following ``core``: its state copied (in the short holds of
        its lock a dry run takes), then every input it applies from that
        hold on handed over."""
        self._core = core
        self.begin(capture(core, self))

    def begin(self, start: Start) -> None:
        """The follower built of ``start``, the candidate copied from it."""
        from .core import PolicyCore

        self._dims = start.dims
        self._clock = ManualClock(start.t)
        services = start.services
        try:
            f = PolicyCore(start.config, start.settings, self._clock, EventLog(), services=services,
                           kind=start.kind)
            start.build()
            if start.engine is not None:
                f._engine = start.engine
                f._engine.clock = f._clock
            f._moves, f._suspects = start.moves, start.suspects
            self._follower = f
            self._candidate = PolicyCore(self.config, start.settings, self._clock, EventLog(),
                                         services=_own_services(services), kind=start.kind)
            f.recorder.quiet = self._candidate.recorder.quiet = True
            self._stale = start.engine is not None
            if self._stale:
                self._remake()
        except Exception as e:
            self._stop(f"the candidate cannot start: {type(e).__name__}: {e}")
            return
        t = start.t
        self.state, self.started_at = "running", time.time()
        self._last_t = t
        self._timeline.append((t, 0, 0))
        log.info("shadow of %s started", self.source)
        if self.threaded:
            self._thread = threading.Thread(target=self._run, name="slotwise-shadow", daemon=True)
            self._thread.start()

    def offer(self, call: str, t: float, msg, answer=None) -> None:
        """The door's hand-off (under its lock): cheap, and never raises."""
        items = self._items
        if len(items) >= MAX_BACKLOG:
            self._overflow = True
            self._wake.set()
            return
        items.append((call, t, msg, answer))
        if self.threaded:
            if not self._wake.is_set():
                self._wake.set()
        else:
            self._drain()

    def input(self, call: str, t: float, msg) -> None:
        """An input that is no heartbeat or pass (``Recorder.tap``)."""
        self.offer(call, t, msg)

    def set_candidate(self, config: AllocationConfig, text: str | None = None) -> None:
        """A new version of the candidate file, validated as a reload is
        (raises ValueError with FILE:LINE: lines if the live state cannot
        take it); applied in the stream's order."""
        if self._core is not None:
            check_candidate(self._core, config)
        self.offer("candidate", self._last_t, (config, text))

    def stop(self, why: str = "stopped by the operator") -> None:
        self._stop(why, error=False)

    # ---------------------------------------------------------- the shadow's side
    def _run(self) -> None:
        while self.state == "running":
            if not self._items and not self._overflow:
                self._wake.wait(0.5)
                self._wake.clear()
            self._drain()
            time.sleep(0)  # the door's calls waiting for the interpreter go first

    def _drain(self) -> None:
        items = self._items
        while items and self.state == "running":
            if self._overflow:
                self._stop(f"fell behind by {MAX_BACKLOG:,} inputs")
                return
            item = items.popleft()
            try:
                self._step(item, len(items))
            except _Stopped:
                return
            except Exception as e:  # the candidate's policy raised, or the follower lost step
                log.exception("shadow of %s failed", self.source)
                self._stop(f"{type(e).__name__}: {e}")
                return
            if self.threaded:
                time.sleep(0)
        if self._overflow and self.state == "running":
            self._stop(f"fell behind by {MAX_BACKLOG:,} inputs")

    def _step(self, item, backlog: int) -> None:
        call, t, msg, answer = item
        if t > self._clock.now():
            self._clock.set(t)
        self._last_t = max(self._last_t, t)
        f = self._follower
        if call in ("heartbeat", "update"):
            compare = backlog <= LAG
            began = time.thread_time()
            if compare and self._stale:
                self._remake()  # from the follower as it is before this input
            if call == "heartbeat":
                mine = f.handle_heartbeat(msg)
                if [_key(a) for a in mine] != [_key(a) for a in answer]:
                    raise RuntimeError("the follower decided a heartbeat otherwise than the live engine "
                                       "(an input it did not get?)")
            else:
                mine = f.handle_update(msg).preempt
                if _preempt_keys(mine) != _preempt_keys(answer):
                    raise RuntimeError("the follower's update pass preempted otherwise than the live engine")
            if not compare:
                self._stale = True
                self.skipped += call == "heartbeat"
                return
            if call == "heartbeat":
                self._launches("live", t, answer)
                self._heartbeat(t, msg, answer)
                self._forget_copies()
            else:
                self._preemptions("live", t, answer)
                self._update(t, msg, answer)
            self._charge(time.thread_time() - began)
        elif call == "candidate":
            self.config, self.text = msg
            self._stale = True  # made again from the follower under the new file
        else:
            self._feed(f, call, msg)
            if not self._stale:
                self._feed(self._candidate, call, msg)

    def _charge(self, spent: float) -> None:
        """The CPU one comparison took (with its copy, if one was made)
        against the budget."""
        self.cpu_s += spent
        self._strikes = self._strikes + 1 if spent > self.budget_s else 0
        if self._strikes >= STRIKES:
            self._stop(f"over its CPU budget: {STRIKES} heartbeats or passes in a row took more than "
                       f"{self.budget_s * 1000:.0f} ms (the last {spent * 1000:.0f} ms)")
            raise _Stopped

    def _heartbeat(self, t: float, msg, answer) -> None:
        c = self._candidate
        mine = c.handle_heartbeat(msg)
        self._launches("shadow", t, mine)
        self.compared += 1
        same = [_key(a) for a in mine] == [_key(a) for a in answer]
        if not same:
            self.diverged += 1
            self._diverging("heartbeat", t, msg, answer, mine)
        if not self._timeline or t - self._timeline[-1][0] >= SAMPLE_S:
            with self._stats_lock:
                self._timeline.append((t, self.compared, self.diverged))
        if not same or [a.container_id for a in mine] != [a.container_id for a in answer]:
            self._stale = True  # its containers are no longer the live ones

    def _update(self, t: float, msg, answer) -> None:
        c = self._candidate
        mine = c.handle_update(msg).preempt
        self._preemptions("shadow", t, mine)
        self.updates_compared += 1
        if _preempt_keys(mine) != _preempt_keys(answer):
            self.updates_diverged += 1
            self._stale = True
            live = [{"container": p.container_id, "app": p.app_id, "queue": p.queue, "kill": p.kill}
                    for p in answer[:MAX_SIDE]]
            shadow = [{"container": p.container_id, "app": p.app_id, "queue": p.queue, "kill": p.kill}
                      for p in mine[:MAX_SIDE]]
            self.event_log.write("shadow", call="update", t=t, live=live, shadow=shadow)
            with self._stats_lock:
                self.diverging.append({"t": t, "call": "update", "node": None, "live": live, "shadow": shadow})

    def _feed(self, core, call: str, msg) -> None:
        """An input that is no heartbeat or pass, as replay feeds it."""
        if call == "place":
            core.handle_place(msg)
        elif call == "move":
            core.handle_move(msg)
        elif call == "priority":
            core.actions.priority(msg["app"], msg["priority"])
        elif call == "preemption":
            core.set_preemption(msg["on"])
        elif call == "market":  # an operator's change to the Dynamic Priority market, as replay applies it
            market = core._engine.ctx.services.get("market")
            if market is not None:
                market.apply(msg["op"], msg["args"])
        elif call == "config":  # the live file reloaded: the follower's; the candidate keeps its own
            if core is self._follower:
                core.set_config(msg)

    def _remake(self) -> None:
        """The candidate made again from the follower: the live state now,
        under the candidate file (set as a reload sets it)."""
        f, c = self._follower, self._candidate
        e = f._engine.fork(c._clock)
        e.ctx.services = _own_services(f._engine.ctx.services)
        with c._clock:
            e.set_config(self.config)
        c._engine = e
        c.settings = f.settings
        c._moves, c._suspects = copy.deepcopy(f._moves), set(f._suspects)
        self._stale = False
        self.remakes += 1
        self._remade_at = self.compared

    def _forget_copies(self) -> None:
        """The follower's kept copies (about half an engine) dropped once no
        copy was made for ``KEEP_COPIES_FOR`` heartbeats: a candidate that
        rarely diverges pays a whole copy the next time instead."""
        e = self._follower._engine
        if e._kept is not None and self.compared - self._remade_at >= KEEP_COPIES_FOR:
            from .engine import fork as engine_fork

            engine_fork.forget(e)

    # ------------------------------------------------------------------ figures
    def _launches(self, side: str, t: float, assigned) -> None:
        if assigned:
            with self._stats_lock:
                for a in assigned:
                    self._events.append((t, side, a.queue, a.resource, None if a.is_am else a.locality))

    def _preemptions(self, side: str, t: float, preempt) -> None:
        if preempt:
            with self._stats_lock:
                for p in preempt:
                    self._events.append((t, side, p.queue, None, "preempt"))

    def _diverging(self, call: str, t: float, msg, live, mine) -> None:
        shadow = self._explained(mine, self._candidate._engine, "the candidate")
        live_d = self._explained(live, self._follower._engine, "the live file")
        nodes = [b.node for b in msg.beats][:MAX_SIDE]
        self.event_log.write("shadow", call=call, t=t, nodes=nodes, live=live_d, shadow=shadow)
        with self._stats_lock:
            self.diverging.append({"t": t, "call": call, "node": nodes[0] if nodes else None,
                                   "live": live_d, "shadow": shadow})

    def _explained(self, assigned, engine, under: str) -> list[dict]:
        """One side's decisions of a diverging heartbeat, each with why."""
        out = []
        for a in assigned[:MAX_SIDE]:
            d = decision(a, self._dims)
            try:
                d["why"] = reason(engine, a, under)
            except Exception:  # a sentence is not worth a stop
                d["why"] = None
            out.append(d)
        return out

    def queues(self) -> list[dict]:
        """Per queue over the window: containers and resources each side
        gave, preemptions each would make, the data-local fraction of each
        side's launches that were not AMs."""
        dims = self._dims
        with self._stats_lock:
            events = list(self._events)
            now = self._last_t
        rows: dict[str, dict] = {}
        for t, side, queue, res, local in events:
            if t < now - self.window_s:
                continue
            r = rows.setdefault(queue, {s: {"containers": 0, "resource": ZERO, "preemptions": 0, "local": 0,
                                            "placed": 0} for s in ("live", "shadow")})[side]
            if local == "preempt":
                r["preemptions"] += 1
                continue
            r["containers"] += 1
            r["resource"] = r["resource"] + res
            if local is not None:
                r["placed"] += 1
                r["local"] += local == "node_local"
        out = []
        for name in sorted(rows):
            row = {"queue": name}
            for side, r in rows[name].items():
                row[side] = {"containers": r["containers"], "resource": r["resource"].to_dict(dims),
                             "preemptions": r["preemptions"],
                             "data_local": r["local"] / r["placed"] if r["placed"] else None}
            out.append(row)
        return out

    def timeline(self) -> list[list[float]]:
        """[t, compared, diverged] every ``SAMPLE_S`` engine seconds of
        heartbeats (the last hour), ending at the last heartbeat seen: the
        counts as they stood then, so any interval's divergence is a difference."""
        with self._stats_lock:
            out = [list(x) for x in self._timeline]
        if out and (self._last_t > out[-1][0] or out[-1][1:] != [self.compared, self.diverged]):
            out.append([max(self._last_t, out[-1][0]), self.compared, self.diverged])
        return out

    def status(self) -> dict:
        """What ``GET /api/v1/shadow`` says."""
        with self._stats_lock:
            diverging = list(self.diverging)
        return {"state": self.state, "file": self.source, "error": self.error, "started_at": self.started_at,
                "compared": self.compared, "diverged": self.diverged, "skipped": self.skipped,
                "updates_compared": self.updates_compared, "updates_diverged": self.updates_diverged,
                "copies": self.remakes, "backlog": len(self._items), "cpu_s": round(self.cpu_s, 3),
                "window_s": self.window_s, "queues": self.queues(), "diverging": diverging[::-1],
                "timeline": self.timeline()}

    def summary(self) -> dict:
        """The counts alone (a simulation's report)."""
        return {"state": self.state, "error": self.error, "compared": self.compared, "diverged": self.diverged,
                "skipped": self.skipped, "updates_compared": self.updates_compared,
                "updates_diverged": self.updates_diverged, "copies": self.remakes}

    def _stop(self, why: str, error: bool = True) -> None:
        if self.state == "stopped":
            return
        self.state = "stopped"
        self.error = why if error else None
        core = self._core
        if core is not None:
            core.swap_shadow(None, self)
        self._items.clear()
        self._follower = self._candidate = None  # their memory goes
        self._wake.set()
        (log.warning if error else log.info)("shadow of %s stopped: %s", self.source, why)


def off_status() -> dict:
    """``GET /api/v1/shadow`` when no shadow was ever started."""
    return {"state": "off", "file": None, "error": None, "started_at": None, "compared": 0, "diverged": 0,
            "skipped": 0, "updates_compared": 0, "updates_diverged": 0, "copies": 0, "backlog": 0,
            "cpu_s": 0.0, "window_s": WINDOW_S, "queues": [], "diverging": [], "timeline": []}
