"""PolicyCore: the one door into the engine.

Every driver goes through here: the Py4J bridge (JSON text in and out, one
call per heartbeat), the simulator and replay (the same messages, typed),
the admin service and the web layer (actions and read views).  None of them
touches the engine or the lock.

A message (``slotwise.protocol``: the schema's Payload, PlaceRequest, ...)
is checked whole before any of it is applied, so a bad one changes nothing.
A full payload is reconciled with what the engine holds: what the RM no
longer has goes, what it has comes, and everything else (queues' starvation
timers, apps' locality waits, runnability, the container sequence) stays.
"""

from __future__ import annotations

import collections
import dataclasses
import io
import logging
import pickle
import threading
import time
from dataclasses import dataclass, field

from . import protocol as wire
from .clock import Clock, ManualClock, SystemClock
from .engine import LOCALITY_NAMES, Request
from .config.model import AllocationConfig, QueueConfig
from .engine.decisions import Assignment, Preemption
from .engine import RECOVERY_QUEUE, Engine, PlacementRejected
from .eventlog import EventLog
from .explain import explain_app, explain_finished, explain_rejected
from .finished import FinishedApps
from .starvation import queue_starvation
from .placement import queue_path
from .protocol import ProtocolError
from .resources import KIND_DIMS, Resource
from .settings import EngineSettings

log = logging.getLogger("slotwise.core")

#: How often an unanswered move order is repeated (engine seconds).
MOVE_RETRY = 10.0
#: Placements remembered for `GET /api/v1/apps/{id}/placement` (the latest kept).
MAX_PLACEMENTS = 10_000
#: A queue's settings in force a dry run compares too (the engine's, after
#: inheritance and the file's defaults): every one a reload may change.
DRY_RUN_SETTINGS = ("max_running_apps", "max_am_share", "min_share_timeout", "fair_share_timeout",
                    "fair_share_threshold")
#: Each a dry run reports per queue, ``_before`` and ``_after``.
DRY_RUN_FIELDS = ("fair_share", "steady_fair_share", "weight", "min_share", "max_share", "policy",
                  *DRY_RUN_SETTINGS)
#: Refusals that stay true until the app's asks or the node change: the same
#: offer is not made again until then (the others are races that pass).
LASTING_REFUSALS = frozenset({"locality", "blacklisted", "no_task"})


def _res(r) -> Resource:
    return Resource(r.memory_mb, r.vcores, r.map_slots, r.reduce_slots)


def _sized(r) -> bool:
    """Whether a wire Resource asks for anything the engine counts."""
    return r.memory_mb > 0 or r.vcores > 0 or r.map_slots > 0 or r.reduce_slots > 0


def _shape_problem(r, kind: str) -> str | None:
    """What is wrong with a request's or a task's size on a ``kind``
    cluster: a YARN container has no slots; an MRv1 task is one map slot or
    one reduce slot, never both."""
    if kind == "yarn":
        return "a YARN container holds no slots" if r.map_slots or r.reduce_slots else None
    if r.memory_mb or r.vcores or bool(r.map_slots) == bool(r.reduce_slots):
        return "an MRv1 task holds map slots or reduce slots (one kind), nothing else"
    return None


PREEMPTION_REASONS = {"min_share": "below its min share", "fair_share": "below its fair-share threshold",
                      "warned": "their warning ran out"}


def preemption_line(preempt, containers) -> str:
    """serve's log line of one preemption round: for which starved queue, how
    many containers of which apps (from which queues), and why."""
    groups: dict[tuple, list] = {}
    for p in preempt:
        c = containers.get(p.container_id)
        groups.setdefault((getattr(c, "taken_for", None) or "?", p.reason), []).append(p)
    parts = []
    for (starved, reason), ps in groups.items():
        apps = collections.Counter(p.app_id for p in ps)
        victims = sorted({p.queue for p in ps})
        kills = sum(1 for p in ps if p.kill)
        parts.append(f"{len(ps)} container(s) for {starved} ({PREEMPTION_REASONS.get(reason, reason)}): "
                     + ", ".join(f"{a} ({n})" for a, n in apps.most_common())
                     + f" from {', '.join(victims)}; {kills} killed, {len(ps) - kills} asked back")
    return "preemption: " + "; ".join(parts)


def _amount(r: Resource, dims=KIND_DIMS["yarn"]):
    return wire.Amount(**{d: getattr(r, d) for d in dims})


def _limit(r: Resource, dims=KIND_DIMS["yarn"]):
    inf = float("inf")
    return None if any(getattr(r, d) == inf for d in dims) else _amount(r, dims)


def _same_requests(app, requests) -> bool:
    """Whether the engine already holds exactly these requests for the app."""
    held = app.requests
    if len(held) != len(requests):
        return False
    for r in requests:
        h = held.get(r.priority)
        if (h is None or h.num_containers != r.count or h.relax_locality != r.relax_locality
                or h.resource.memory_mb != r.resource.memory_mb or h.resource.vcores != r.resource.vcores
                or h.resource.map_slots != r.resource.map_slots or h.resource.reduce_slots != r.resource.reduce_slots
                or h.hosts != r.hosts or h.racks != r.racks or h.strict_racks != frozenset(r.strict_racks)):
            return False
    return True


def _by_submit(a) -> tuple:
    return a.submit_ms, a.id


class _CallClock:
    """The engine's clock: one instant per call, the one the recording
    notes, so a replay on that instant decides exactly as the live call did.
    ``with clock:`` fixes the instant (nested uses keep the outer one)."""

    def __init__(self, base: Clock) -> None:
        self.base = base
        self._t: float | None = None
        self._depth = 0

    def now(self) -> float:
        return self._t if self._t is not None else self.base.now()

    def __enter__(self) -> None:
        if self._depth == 0:
            self._t = self.base.now()
        self._depth += 1

    def __exit__(self, *exc) -> None:
        self._depth -= 1
        if self._depth == 0:
            self._t = None


#: Seconds between update answers that carry the whole queue table, so a shim
#: that dropped an answer (one past its deadline) is whole again soon.
TABLE_REFRESH = 30.0


class TableDiff:
    """What an update answer says of the queue table: the rows that changed
    since the last answer and the queues gone since, or the whole table (at
    first, after a full payload, every TABLE_REFRESH seconds).  10,000 queues
    that do not change cost nothing on the wire."""

    def __init__(self) -> None:
        self._sent: dict | None = None
        self._full_at = 0.0

    def answer(self, rows: list, full: bool) -> dict:
        """UpdateAnswer's fields queues, queues_removed, queues_full."""
        now = time.monotonic()
        sent = self._sent
        table = {r.name: r for r in rows}
        self._sent = table
        if sent is None or full or now - self._full_at >= TABLE_REFRESH:
            self._full_at = now
            return {"queues": rows, "queues_removed": [], "queues_full": True}
        return {"queues": [r for r in rows if sent.get(r.name) != r],
                "queues_removed": [n for n in sent if n not in table], "queues_full": False}


@dataclass
class UpdateResult:
    preempt: list[Preemption] = field(default_factory=list)
    moves: list = field(default_factory=list)  # wire.MoveOrder
    resync: bool = False
    #: Apps a running-app limit holds back (an MRv1 shim leaves them uninitialised).
    waiting: list = field(default_factory=list)


@dataclass
class _PendingMove:
    """An app the RM holds in a queue no queue can be: Python schedules it in
    ``target`` and asks the RM to move it there until it has."""
    source: str
    target: str
    reason: str
    sent: float | None = None


def _freeze(engine: Engine) -> tuple[bytes, dict]:
    """A whole copy of an engine as bytes, without recursion along the queue
    tree or the allocation file's queue tree (any depth the file allows):
    queues are linked by name in the copy, and the parsed file, which nothing
    changes at runtime, is shared by reference."""
    shared: dict[int, object] = {}
    out = io.BytesIO()

    class _Pickler(pickle.Pickler):
        def persistent_id(self, obj):
            if isinstance(obj, (AllocationConfig, QueueConfig)):
                shared[id(obj)] = obj
                return id(obj)
            return None

    _Pickler(out, protocol=pickle.HIGHEST_PROTOCOL).dump(engine)
    return out.getvalue(), shared


def _thaw(frozen: tuple[bytes, dict], now: float) -> Engine:
    """An engine from a frozen one, on a clock stopped at ``now`` and with
    preemption off: for what-if questions that must change nothing."""
    data, shared = frozen

    class _Unpickler(pickle.Unpickler):
        def persistent_load(self, pid):
            return shared[pid]

    engine = _Unpickler(io.BytesIO(data)).load()
    engine.clock = ManualClock(now)
    engine.settings = dataclasses.replace(engine.settings, preemption=False)
    return engine


class PolicyCore:
    """The protocol's calls on one engine; thread-safe (Py4J calls in on its
    own threads, the web layer on others)."""

    def __init__(self, config: AllocationConfig, settings: EngineSettings | None = None,
                 clock: Clock | None = None, event_log: EventLog | None = None,
                 record_inputs: bool = False, log_decisions: bool = True,
                 stream: str | None = None, stats=None, config_text: str | None = None,
                 services: dict | None = None, kind: str = "yarn") -> None:
        #: The shim kind this core decides for: "yarn" (containers of memory
        #: and vcores) or "mrv1" (map and reduce slots); resources.KIND_DIMS.
        self.kind = kind
        self.dims = KIND_DIMS[kind]
        self._clock = _CallClock(clock or SystemClock())
        #: Observer of calls (``slotwise.metrics.Metrics``); None: nobody.
        self.stats = stats
        self.settings = settings or EngineSettings()
        self.log = event_log or EventLog()
        #: Log every call's message with the engine clock, so the run can be
        #: replayed exactly (``slotwise.sim.replay``).
        self.record_inputs = record_inputs
        self.log_decisions = log_decisions
        #: Which engine a record belongs to when several share one log (an
        #: MRv1 simulation runs one per slot kind).
        self.stream = stream
        self._lock = threading.RLock()
        self._preemptions: collections.deque = collections.deque(maxlen=100)
        #: The apps that have left, for explain (the last 1,000).
        self.finished = FinishedApps()
        #: How the last apps were placed, for `slotwise cluster submit` to say why (bounded).
        self._placements: collections.OrderedDict = collections.OrderedDict()
        self._moves: dict[str, _PendingMove] = {}
        self._suspects: set[str] = set()  # apps whose view differed from the RM's at the last check
        self._table = TableDiff()
        self._resynced = False  # a full payload since the last update answer: the shim starts afresh
        self.counters = collections.Counter()  # calls, resyncs, rejected messages, divergences, recoveries
        self.refusals = collections.Counter()  # the shim's refused assignments, by reason
        with self._clock:
            # services: what the driver shares with the policies (the Dynamic
            # Priority market); one dict for the engines of one server.
            self.services = {} if services is None else services
            self._engine = Engine(config, self._clock, self.settings, services=self.services, stream=stream or "",
                                  kind=kind)
            if record_inputs:
                # The file's text too: a replay must start from the same queues
                # (and from the same market, where one is shared).
                market = self.services.get("market")
                hopper = self.services.get("hopper")
                self.log.write("recording", stream=stream, kind=kind, t=self._clock.now(), protocol=wire.VERSION,
                               config=config.source, config_text=config_text,
                               settings=dataclasses.asdict(self.settings),
                               market=market.snapshot() if market is not None else None,
                               hopper=dataclasses.asdict(hopper) if dataclasses.is_dataclass(hopper) else None)
                if market is not None:
                    market.on_change = self._record_market

    def set_preemption(self, on: bool) -> None:
        """Preemption on or off from now on (the master's configuration, or
        serve --preemption, told at registration)."""
        with self._lock, self._clock:
            self.settings = dataclasses.replace(self.settings, preemption=bool(on))
            self._engine.settings = self.settings
            if self.record_inputs:  # a replay must preempt from here on as the live run did
                self.log.write("input", call="preemption", stream=self.stream, t=self._clock.now(),
                               msg={"on": bool(on)})

    # ------------------------------------------------ the protocol, as JSON
    def heartbeat(self, text: str) -> str:
        try:
            assigned = self.handle_heartbeat(wire.decode("Payload", text))
        except ProtocolError as e:
            return wire.encode(wire.HeartbeatAnswer(error=str(e)))
        except Exception:  # a bug: the shim falls back and resyncs, which repairs what it half did
            return wire.encode(wire.HeartbeatAnswer(error=self._internal_error("heartbeat")))
        return wire.encode(wire.HeartbeatAnswer(assign=[
            wire.Assignment(app=a.app_id, node=a.node_id, priority=a.priority, locality=a.locality,
                            engine_id=a.container_id, resource=self._wire_resource(a.resource)) for a in assigned]))

    def _wire_resource(self, r: Resource):
        return wire.Resource(**{d: int(getattr(r, d)) for d in self.dims})

    def update(self, text: str) -> str:
        with self._lock:  # the table must describe the engine the update just ran on
            try:
                result = self.handle_update(wire.decode("Payload", text))
            except ProtocolError as e:
                return wire.encode(wire.UpdateAnswer(error=str(e)))
            except Exception:
                return wire.encode(wire.UpdateAnswer(error=self._internal_error("update")))
            table = self._table.answer(self._queue_table(), self.take_resynced())
        return wire.encode(wire.UpdateAnswer(
            preempt=[wire.Preemption(container=p.container_id, kill=p.kill) for p in result.preempt],
            move=result.moves, resync=result.resync, waiting=result.waiting, **table))

    def place(self, text: str) -> str:
        try:
            return wire.encode(self.handle_place(wire.decode("PlaceRequest", text)))
        except ProtocolError as e:
            return wire.encode(wire.PlaceAnswer(reject=f"bad request: {e}"))
        except Exception:  # a bug: the app is refused with a reason, the server goes on
            return wire.encode(wire.PlaceAnswer(reject=self._internal_error("place")))

    def move(self, text: str) -> str:
        try:
            return wire.encode(self.handle_move(wire.decode("MoveRequest", text)))
        except ProtocolError as e:
            return wire.encode(wire.MoveAnswer(error=f"bad request: {e}"))
        except Exception:
            return wire.encode(wire.MoveAnswer(error=self._internal_error("move")))

    # ------------------------------------------------ the protocol, typed
    def handle_heartbeat(self, msg) -> list[Assignment]:
        """Apply a Payload, then decide for its beats.  Raises ProtocolError
        (nothing applied) if the payload is not consistent."""
        with self._lock, self._clock:
            self._record("heartbeat", msg)
            stats = self.stats
            started = time.perf_counter() if stats is not None else 0.0
            self._apply(msg)
            assigned: list[Assignment] = []
            for beat in msg.beats:
                assigned += self._engine.heartbeat(beat.node, None if beat.free is None else _res(beat.free))
            if stats is not None:
                stats.on_heartbeat(time.perf_counter() - started, len(assigned))
            if assigned and self.log_decisions:
                for a in assigned:
                    self.log.write("assign", stream=self.stream, app=a.app_id, queue=a.queue, node=a.node_id,
                                   locality=a.locality, priority=a.priority, container=a.container_id,
                                   am=a.is_am, **a.resource.to_dict(self.dims))
            return assigned

    def handle_update(self, msg) -> UpdateResult:
        """Apply a Payload, check the RM's truth it carries, run the periodic
        pass: preemptions, moves to ask for, whether to resync."""
        with self._lock, self._clock:
            self._record("update", msg)
            self._apply(msg)
            resync = self._check_truth(msg.check) if msg.check is not None else False
            preempt = self._engine.update()
            wall = time.time()
            containers = self._engine.containers
            for p in preempt:
                c = containers.get(p.container_id)
                self._preemptions.append({"time": wall, "container": p.container_id, "app": p.app_id,
                                          "queue": p.queue, "node": p.node_id, "kill": p.kill, "reason": p.reason,
                                          "why": c.preempt_why if c else None})
                self.log.write("preempt", stream=self.stream, container=p.container_id, app=p.app_id, queue=p.queue,
                               node=p.node_id, kill=p.kill, reason=p.reason)
            if preempt:
                log.info("%s", preemption_line(preempt, containers))
            e = self._engine
            waiting = sorted(a.app_id for a in e.apps.values() if not a.runnable) if e.limits.waiting else []
            return UpdateResult(preempt, self._due_moves(), resync, waiting)

    def handle_place(self, req):
        with self._lock, self._clock:
            self._record("place", req)
            trace: list = []
            try:
                queue = self._engine.place_app(req.user, req.queue, req.groups, trace=trace)
            except PlacementRejected as e:
                self._remember_placement(req, None, str(e), trace)
                self.log.write("reject", app=req.app, user=req.user, reason=str(e))
                return wire.PlaceAnswer(reject=str(e))
            self._remember_placement(req, queue, None, trace)
            self.log.write("place", app=req.app, user=req.user, asked=req.queue, queue=queue,
                           rule=trace[-1]["rule"] if trace else None)
            return wire.PlaceAnswer(queue=queue)

    def _remember_placement(self, req, queue: str | None, rejected: str | None, trace: list) -> None:
        self._placements[req.app] = {"app": req.app, "user": req.user, "asked": req.queue, "queue": queue,
                                     "rejected": rejected, "rules": trace}
        while len(self._placements) > MAX_PLACEMENTS:
            self._placements.popitem(last=False)

    def placement(self, app_id: str) -> dict | None:
        """How an app was placed (the queue asked for, each rule tried, the
        queue or the rejection), while remembered; None otherwise."""
        with self._lock:
            found = self._placements.get(app_id)
            return None if found is None else {**found, "rules": [dict(r) for r in found["rules"]]}

    def handle_move(self, req):
        """The RM's move (yarn application -movetoqueue, an admin move, or a
        move this core ordered): where the app goes, or why not."""
        with self._lock, self._clock:
            self._record("move", req)
            if req.app not in self._engine.apps:
                return wire.MoveAnswer(error=f"unknown application {req.app}")
            pending = self._moves.get(req.app)
            ordered = pending is not None and pending.target == queue_path(req.queue)
            try:
                queue = self._engine.move_app(req.app, req.queue, may_create=ordered)
            except ValueError as e:
                return wire.MoveAnswer(error=str(e))
            if pending is not None and pending.target == queue:
                pending.sent = self._clock.now()  # under way: no new order until the RM reports it
            self.log.write("move", app=req.app, queue=queue)
            return wire.MoveAnswer(queue=queue)

    # ----------------------------------------------------- runtime admin
    def set_config(self, config: AllocationConfig, text: str | None = None) -> None:
        """Swap in a reloaded allocation file, between two calls.  Raises
        ValueError (FILE:LINE: message lines) and changes nothing if the file
        would strand running apps."""
        with self._lock, self._clock:
            conflicts = self._engine.config_conflicts(config)
            if conflicts:
                raise ValueError("\n".join(conflicts))
            if self.record_inputs:
                self.log.write("input", call="config", stream=self.stream, t=self._clock.now(),
                               msg={"source": config.source, "text": text})
            self._engine.set_config(config)
            self.log.write("reload", file=config.source, queues=sum(1 for _ in config.root.walk()) - 1)

    def take_resynced(self) -> bool:
        """Whether a full payload came since the last call (the next update
        answer then carries the whole queue table)."""
        was, self._resynced = self._resynced, False
        return was

    def config_conflicts(self, config: AllocationConfig) -> list[str]:
        """Why ``set_config(config)`` would be refused (FILE:LINE: lines), or []."""
        with self._lock:
            return self._engine.config_conflicts(config)

    def queue_table(self) -> list:
        with self._lock:
            return self._queue_table()

    def config_failed(self, errors: list[str]) -> None:
        self.log.write("reload_failed", errors=errors)

    def admin_move(self, app_id: str, queue: str) -> str:
        """An operator's move with no ResourceManager to carry it out (with
        one, the RM's own move reaches ``move``).  Raises KeyError/ValueError."""
        with self._lock, self._clock:
            if app_id not in self._engine.apps:
                raise KeyError(app_id)
            self._record("move", wire.MoveRequest(app=app_id, queue=queue))
            target = self._engine.move_app(app_id, queue, may_create=False)
            self.log.write("move", app=app_id, queue=target, by="admin")
            return target

    def move_target_problem(self, queue: str) -> str | None:
        """Why no app may be moved to ``queue`` now (YARN's rule, MRv1's too), or None."""
        with self._lock:
            return self._engine.move_target_problem(queue)

    def admin_priority(self, app_id: str, priority: int) -> None:
        with self._lock, self._clock:
            if app_id not in self._engine.apps:
                raise KeyError(app_id)
            if self.record_inputs:
                self.log.write("input", call="priority", stream=self.stream, t=self._clock.now(),
                               msg={"app": app_id, "priority": int(priority)})
            self._engine.set_app_priority(app_id, int(priority))
            self.log.write("priority", app=app_id, priority=int(priority), by="admin")

    # -------------------------------------------------------- read views
    def queues(self) -> list[dict]:
        """One row per queue (``Engine.describe_queues``), for the UI, API and metrics."""
        with self._lock:
            rows = self._engine.describe_queues()
        for r in rows:
            r["recovery"] = r["queue"] == RECOVERY_QUEUE
        return rows

    def apps(self) -> list[dict]:
        with self._lock:
            rows = self._engine.describe_apps()
            moves = {k: v.target for k, v in self._moves.items()}
        for r in rows:
            r["moving_to"] = moves.get(r["id"])
        return rows

    def app_queue(self, app_id: str) -> str | None:
        with self._lock:
            app = self._engine.apps.get(app_id)
            return app.queue.name if app else None

    def leaf_queues(self) -> list[str]:
        """Where an app can be moved: the file's leaf queues and any dynamic leaf."""
        with self._lock:
            return sorted(p.name for p in self._engine.queues.values()
                          if p.is_leaf and p.name != "root" and p.name != RECOVERY_QUEUE)

    def explain(self, app_id: str) -> dict | None:
        """Why an app runs no more than it does (slotwise.explain), or how it
        ended if it has left, with the preemptions of its containers still
        remembered, or why the placement policy rejected it; None if it is
        neither scheduled now nor among the finished or rejected ones
        remembered. Times in the answer are Unix times."""
        with self._lock, self._clock:
            now, wall = self._clock.now(), time.time()
            if app_id in self._engine.apps:
                out = explain_app(self._engine, app_id)
            elif (rec := self.finished.get(app_id)) is not None:
                out = explain_finished(rec, now, self.dims)
            elif (placed := self._placements.get(app_id)) is not None and placed["rejected"] is not None:
                return explain_rejected({**placed, "rules": [dict(r) for r in placed["rules"]]}, self.dims)
            else:
                return None
            starved = out["queue_starvation"]
            if starved is not None:
                starved["since"] = wall - starved["for_s"]
            out["preempted_recently"] = [p for p in reversed(self._preemptions) if p["app"] == app_id]
            return out

    def queue_starvation(self, name: str) -> dict | None:
        """A leaf queue below its min share or fair-share threshold now: since
        when (Unix time), the timeout, and what preemption will take and when
        (slotwise.starvation, as explain gives it); None when it is at its
        shares, a parent, or unknown. For the console's queue tree."""
        with self._lock, self._clock:
            queue = self._engine.queues.get(name)
            out = queue_starvation(self._engine, queue) if queue is not None else None
            if out is not None:
                out["since"] = time.time() - out["for_s"]
            return out

    def dry_run(self, config: AllocationConfig) -> dict:
        """What ``config`` would do to the live demands, changing nothing:
        each queue's fair and steady shares before and after, the containers
        that would become preemptable (over their queue's new fair share), and
        why the reload would be refused, if it would.  Runs on copies of the
        engine: the lock is held while one copy is made (heartbeats wait that
        long; docs/admin.md has the figures), the rest runs outside it."""
        with self._lock:
            now = self._clock.now()
            state = _freeze(self._engine)  # the fastest whole copy
        before, after = _thaw(state, now), _thaw(state, now)
        conflicts = before.config_conflicts(config)
        if conflicts:  # the reload would be refused: nothing would change
            return {"queues": [], "conflicts": conflicts, "share_rule": before.share_rule,
                    "preemption": self.settings.preemption, "newly_preemptable": []}
        after.set_config(config)
        rows, victims = {}, {}
        for when, engine in (("before", before), ("after", after)):
            engine.update()
            rows[when] = {r["queue"]: {**r, **{k: getattr(engine.queues[r["queue"]], k) for k in DRY_RUN_SETTINGS}}
                          for r in engine.describe_queues()}
            victims[when] = {c.container_id: c for c in engine.preemption.victims()}
        queues = []
        for name in sorted(set(rows["before"]) | set(rows["after"])):
            b, a = rows["before"].get(name), rows["after"].get(name)
            row = {"queue": name, "status": "added" if b is None else "removed" if a is None else "kept"}
            for key in DRY_RUN_FIELDS:
                row[f"{key}_before"] = b[key] if b else None
                row[f"{key}_after"] = a[key] if a else None
            queues.append(row)
        newly = [c for cid, c in victims["after"].items() if cid not in victims["before"]]
        return {"queues": queues, "conflicts": conflicts, "share_rule": after.share_rule,
                "preemption": self.settings.preemption,
                "newly_preemptable": [{"container": c.container_id, "app": c.app_id,
                                       "queue": after.apps[c.app_id].queue.name, "node": c.node_id,
                                       "resource": c.resource.to_dict(self.dims)} for c in newly]}

    def cluster(self) -> dict:
        """The cluster as Python sees it: capacity, nodes, in use."""
        with self._lock:
            e = self._engine
            return {"capacity": e.cluster.to_dict(self.dims), "nodes": len(e.nodes),
                    "usage": e.root.usage.to_dict(self.dims),
                    "share_rule": e.share_rule}

    def recent_preemptions(self) -> list[dict]:
        """Newest first."""
        with self._lock:
            return list(reversed(self._preemptions))

    def running_by_queue(self) -> dict[str, int]:
        """Containers each leaf queue holds now."""
        with self._lock:
            out: dict[str, int] = {}
            for app in self._engine.apps.values():
                if app.containers:
                    out[app.queue.name] = out.get(app.queue.name, 0) + len(app.containers)
            return out

    def nodes(self) -> list[dict]:
        """Each node as the engine last heard of it: capacity, in use, free
        room, containers, and room held for a starved queue (the console)."""
        with self._lock:
            dims = self.dims
            return [{"node": n.node_id, "host": n.host, "rack": n.rack, "capacity": n.capacity.to_dict(dims),
                     "used": n.used.to_dict(dims), "free": n.free.to_dict(dims), "containers": len(n.containers),
                     "held_for": sorted(n.held)}
                    for n in sorted(self._engine.nodes.values(), key=lambda n: n.node_id)]

    def queue_timers(self) -> dict[str, dict]:
        """Each queue's preemption settings in force (its own, inherited or the
        file's default) and the dimensions its shares are compared in."""
        from .engine.preemption import compared
        with self._lock:
            e = self._engine
            return {p.name: {"min_share_timeout": p.min_share_timeout, "fair_share_timeout": p.fair_share_timeout,
                             "fair_share_threshold": p.fair_share_threshold, "compared": list(compared(e, p))}
                    for p in e.root.walk()}

    def app_localities(self) -> dict[str, dict[str, int]]:
        """Each app's running containers by the locality Python placed them
        at ("rm" for those the master placed itself: AMs, its fallback)."""
        with self._lock:
            out: dict[str, dict[str, int]] = {}
            for c in self._engine.containers.values():
                level = "rm" if c.level is None else LOCALITY_NAMES[c.level]
                counts = out.setdefault(c.app_id, {})
                counts[level] = counts.get(level, 0) + 1
            return out

    def share_rule(self) -> str:
        """The fair-share rule in force: "yarn" or "design" (docs/fair-shares.md)."""
        with self._lock:
            return self._engine.share_rule

    def leaf_fair_shares(self) -> dict[str, Resource]:
        """Fair shares of the leaf queues that hold apps (the simulator's samples)."""
        with self._lock:
            return {name: p.fair_share for name, p in self._engine.queues.items() if p.apps and not p.children}

    # Hints for drivers that may leave out calls that change nothing (the simulator).
    def idle_heartbeat_is_noop(self) -> bool:
        return self._engine.idle_heartbeat_is_noop

    def has_pending(self, kind: str | None = None) -> bool:
        return self._engine.has_pending(kind)

    def acts_on_update(self) -> bool:
        """Whether an update pass may act with nothing new to apply: preempt,
        or let a policy charge and reweigh (Dynamic Priority)."""
        return self._engine.acts_on_update()

    def decisions_need_update(self) -> bool:
        return self._engine.decisions_need_update()

    def trace_engine_calls(self, wrap) -> None:
        """Debugging and the replay contract tests: ``wrap(engine)`` may wrap
        the engine's methods to watch the calls this core makes."""
        wrap(self._engine)

    # ------------------------------------------------------------ applying
    def _internal_error(self, call: str) -> str:
        log.exception("%s failed inside the policy server", call)
        self.counters["internal_errors"] += 1
        self.log.write("internal_error", call=call)
        return f"{call}: internal error in the policy server (see its log)"

    def _record_market(self, op: str, args: dict) -> None:
        self.log.write("input", call="market", stream=None, t=self._clock.now(), msg={"op": op, "args": args})

    def _record(self, call: str, msg) -> None:
        if self.record_inputs:
            self.log.write("input", call=call, stream=self.stream, t=self._clock.now(), msg=wire.to_builtins(msg))

    def _refuse_if_inconsistent(self, msg) -> None:
        """ProtocolError (counted and logged) if a payload clashes with itself
        or the engine; changes nothing else."""
        problems = self._problems(msg)
        if problems:
            self.counters["rejected_messages"] += 1
            self.log.write("bad_message", errors=problems[:10])
            raise ProtocolError("Payload: " + "; ".join(problems[:3])
                                + (f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""))

    def _apply(self, msg) -> None:
        """Check a payload against itself and the engine, then apply it whole."""
        self._refuse_if_inconsistent(msg)
        self.counters["calls"] += 1
        if msg.full:
            self._resynced = True
        for ep in msg.fallbacks:
            self._fallback_episode(ep)
        if not (msg.full or msg.nodes or msg.apps or msg.launched or msg.rejected or msg.finished
                or msg.apps_removed or msg.nodes_removed):
            return
        e = self._engine
        with e.batch():
            if msg.full:
                self._forget_what_the_rm_lost(msg)
            for n in msg.nodes:
                e.add_node(n.id, n.host, n.rack, _res(n.capacity))
            # Oldest first: when two apps want one queue in ways that exclude each
            # other (an app and a sub-queue under it), the earlier one keeps it.
            for a in (sorted(msg.apps, key=_by_submit) if len(msg.apps) > 1 else msg.apps):
                self._apply_app(a, msg.now_ms)
            for c in msg.launched:
                if c.id in e.containers or c.app not in e.apps:
                    continue  # known already (a full payload lists every live one), or of an app gone already
                if c.engine_id and c.engine_id in e.containers:
                    e.confirm_container(c.engine_id, c.id, c.am)
                else:
                    e.container_launched(c.id, c.app, c.node, _res(c.resource), c.am, c.priority)
            for r in msg.rejected:
                self._refused(r)
            for cid in msg.finished:
                e.container_finished(cid)
            ends = {x.id: x.final_state for x in msg.apps_finished} if msg.apps_finished else {}
            for app_id in msg.apps_removed:
                self._app_left(app_id, "removed", ends.get(app_id))
            for node_id in msg.nodes_removed:
                e.remove_node(node_id)

    def _problems(self, msg) -> list[str]:
        """What makes a schema-valid payload inconsistent: duplicates, and
        containers of apps or nodes nobody told us about.  On the hot path:
        lookups only, and nothing at all for what cannot clash."""
        out = []
        nodes = msg.nodes
        if len(nodes) > 1 and len({n.id for n in nodes}) != len(nodes):
            out.append("nodes: the same node twice")
        apps = msg.apps
        if len(apps) > 1 and len({a.id for a in apps}) != len(apps):
            out.append("apps: the same app twice")
        for i, a in enumerate(apps):
            if len(a.requests) > 1 and len({r.priority for r in a.requests}) != len(a.requests):
                out.append(f"apps[{i}] ({a.id}): two requests at one priority")
            for j, r in enumerate(a.requests):
                if r.count and not _sized(r.resource):
                    # It would fit on every node forever; the RM itself never
                    # asks for less than its minimum allocation.
                    out.append(f"apps[{i}].requests[{j}] ({a.id}): {r.count} container(s) of no size; "
                               "a container needs memory or vcores")
                elif r.count and (shape := _shape_problem(r.resource, self.kind)):
                    out.append(f"apps[{i}].requests[{j}] ({a.id}): {shape}")
        if msg.apps_finished:
            removed = set(msg.apps_removed)
            ended: set[str] = set()
            for i, x in enumerate(msg.apps_finished):
                if x.id not in removed:
                    out.append(f"apps_finished[{i}]: app {x.id} is not in apps_removed")
                elif x.id in ended:
                    out.append(f"apps_finished[{i}]: app {x.id} twice")
                ended.add(x.id)
        launched = msg.launched
        if not launched:
            return out
        full = msg.full
        known_nodes = self._engine.nodes
        known_apps = self._engine.apps
        new_nodes = {n.id for n in nodes} if nodes else ()
        new_apps = {a.id for a in apps} if apps else ()
        # An app the RM took and dropped between two calls (Python away) may
        # come with containers the FIFO gave it: they end with it.
        gone_apps = set(msg.apps_removed) if msg.apps_removed else ()
        seen: set[str] = set()
        for i, c in enumerate(launched):
            if (shape := _shape_problem(c.resource, self.kind)) is not None:
                out.append(f"launched[{i}]: container {c.id}: {shape}")
            if len(launched) > 1:
                if c.id in seen or (c.engine_id is not None and c.engine_id in seen):
                    out.append(f"launched[{i}]: container {c.id} twice")
                seen.add(c.id)
                if c.engine_id is not None:
                    seen.add(c.engine_id)
            if c.app not in new_apps and c.app not in gone_apps and (full or c.app not in known_apps):
                out.append(f"launched[{i}]: container {c.id} of unknown app {c.app}")
            if c.node not in new_nodes and (full or c.node not in known_nodes):
                out.append(f"launched[{i}]: container {c.id} on unknown node {c.node}")
            if c.engine_id is not None:
                placed = self._engine.containers.get(c.engine_id)
                if placed is not None and (placed.app_id != c.app or placed.node_id != c.node):
                    out.append(f"launched[{i}]: container {c.id} of {c.app} on {c.node} names assignment "
                               f"{c.engine_id}, which is {placed.app_id}'s on {placed.node_id}")
        return out

    def _app_left(self, app_id: str, how: str, final_state: str | None = None) -> None:
        """An app leaves the scheduler: remembered for explain (with how it
        ended, if the master said), then removed."""
        app = self._engine.apps.get(app_id)
        if app is not None:
            self.finished.record(app, self._clock.now(), time.time(), how, self.dims,
                                 "JobTracker" if self.kind == "mrv1" else "ResourceManager", final_state)
        self._engine.remove_app(app_id)
        self._moves.pop(app_id, None)

    def _forget_what_the_rm_lost(self, msg) -> None:
        """A full payload: drop the containers, apps and nodes the RM no
        longer has (what it has is applied as usual, and what stays keeps
        its timers and locality state)."""
        e = self._engine
        live = {c.id for c in msg.launched} | {c.engine_id for c in msg.launched if c.engine_id}
        for cid in [cid for cid in e.containers if cid not in live]:
            e.container_finished(cid)
        apps = {a.id for a in msg.apps}
        for app_id in [a for a in e.apps if a not in apps]:
            self._app_left(app_id, "resync")
        nodes = {n.id for n in msg.nodes}
        for node_id in [n for n in e.nodes if n not in nodes]:
            e.remove_node(node_id)
        self.counters["resyncs"] += 1
        self.log.write("resync", nodes=len(msg.nodes), apps=len(msg.apps), containers=len(msg.launched))
        if self.stats is not None:
            self.stats.on_resync()

    def _apply_app(self, a, now_ms: int) -> None:
        e = self._engine
        asked = queue_path(a.queue)
        known = e.apps.get(a.id)
        if known is None:
            why = e.can_hold(asked)
            queue = asked if why is None else self._recover(a, asked, why)
            submit = self._clock.now() - max(0, now_ms - a.submit_ms) / 1000.0
            e.add_app(a.id, a.user, queue=queue, priority=a.priority, submit_time=submit, placed=True, name=a.name)
            if a.unmanaged:
                e.mark_unmanaged(a.id)  # its AM runs outside the cluster: no AM container
        else:
            pending = self._moves.get(a.id)
            if pending is not None and asked == pending.target:
                del self._moves[a.id]  # the RM has moved it
                self.log.write("recovered", app=a.id, queue=asked)
            elif asked != known.queue.name and not (pending is not None and asked == pending.source):
                why = e.can_hold(asked)
                if why is None:
                    self._moves.pop(a.id, None)
                    e.move_app(a.id, asked, force=True)  # the RM moved it already: follow
                else:
                    e.move_app(a.id, self._recover(a, asked, why), force=True)
            if a.priority != known.priority:
                e.set_app_priority(a.id, a.priority)
            if a.unmanaged and not known.unmanaged:
                e.mark_unmanaged(a.id)
        if not _same_requests(e.apps[a.id], a.requests):  # a resync mostly repeats what Python knows
            e.update_requests(a.id, [Request(r.priority, _res(r.resource), r.count, r.hosts, r.racks,
                                             r.relax_locality, r.strict_racks) for r in a.requests])

    def _recover(self, a, asked: str, why: str) -> str:
        """An app the RM holds where no app can be: the queue the placement
        rules give it, else the recovery queue; the RM is asked to move it."""
        try:
            target = self._engine.place_app(a.user, asked, recovering=True)
        except PlacementRejected:
            target = RECOVERY_QUEUE
        self._moves[a.id] = _PendingMove(asked, target, f"{why}; placed in {target}")
        self.counters["recoveries"] += 1
        self.log.write("recover", app=a.id, asked=asked, queue=target, reason=why)
        log.warning("%s is in %s, where no app can be (%s): scheduling it in %s and asking the "
                    "ResourceManager to move it there", a.id, asked, why, target)
        return target

    def _due_moves(self) -> list:
        now = self._clock.now()
        out = []
        for app_id, m in self._moves.items():
            if m.sent is None or now - m.sent >= MOVE_RETRY:
                m.sent = now
                out.append(wire.MoveOrder(app=app_id, queue=m.target, reason=m.reason))
        return out

    def _check_truth(self, rows) -> bool:
        """Compare each app with the RM's truth; an app that differs at two
        checks in a row (a single difference can be a change in flight) is
        a divergence: logged, counted, and repaired by a full resync."""
        e = self._engine
        suspects = set()
        for c in rows:
            app = e.apps.get(c.app)
            if (app is None or app.pending != _res(c.pending) or app.usage != _res(c.allocated)
                    or len(app.containers) != c.containers):
                suspects.add(c.app)
        truth_ids = {c.app for c in rows}
        suspects.update(a for a in e.apps if a not in truth_ids)
        confirmed = suspects & self._suspects
        self._suspects = suspects - confirmed
        if not confirmed:
            return False
        truth = {c.app: c for c in rows}
        details = []
        for app_id in sorted(confirmed)[:5]:
            app, c = e.apps.get(app_id), truth.get(app_id)
            details.append({
                "app": app_id,
                "python": None if app is None else {"pending": app.pending.to_dict(), "allocated": app.usage.to_dict(),
                                                    "containers": len(app.containers)},
                "rm": None if c is None else wire.to_builtins(c)})
        self.counters["divergences"] += 1
        self.log.write("divergence", apps=len(confirmed), details=details)
        log.warning("Python's view of %d app(s) differs from the ResourceManager's (e.g. %s); resyncing",
                    len(confirmed), details[0])
        if self.stats is not None:
            self.stats.on_divergence(len(confirmed))
        return True

    def _refused(self, r) -> None:
        """The shim did not carry out one of Python's assignments: its
        container goes, counted and logged with why. Where the reason stays
        true until the app's asks or the node change (locality, blacklisted,
        no_task) that offer is not made again until then: an app whose asks
        the shim reads differently would otherwise be offered the same node
        on every heartbeat."""
        c = self._engine.container_refused(r.engine_id, remember=r.reason in LASTING_REFUSALS)
        self.counters["refused"] += 1
        self.refusals[r.reason] += 1
        if c is not None:
            self.log.write("refused", stream=self.stream, app=c.app_id, node=c.node_id, reason=r.reason,
                           locality=None if c.level is None else LOCALITY_NAMES[c.level])
        if self.stats is not None:
            self.stats.on_refusal(r.reason)

    def _fallback_episode(self, ep) -> None:
        seconds = max(0, ep.ended_ms - ep.started_ms) / 1000.0
        self.counters["fallback_episodes"] += 1
        self.counters["fallback_heartbeats"] += ep.heartbeats
        self.log.write("fallback", count=ep.heartbeats, seconds=seconds, reason=ep.reason,
                       started=ep.started_ms / 1000.0, ended=ep.ended_ms / 1000.0)
        # An episode in which no heartbeat came (a call failed, Python answered
        # the next) scheduled nothing by the FIFO: worth a line, not a warning.
        log.log(logging.WARNING if ep.heartbeats else logging.INFO,
                "the %s scheduled %d heartbeat(s) by its FIFO over %.1f s without Python (%s)",
                "JobTracker" if self.kind == "mrv1" else "ResourceManager", ep.heartbeats, seconds, ep.reason)
        if self.stats is not None:
            self.stats.on_fallback_episode(ep.heartbeats, seconds)

    def _queue_table(self) -> list:
        rows = []
        d = self.dims
        for p in self._engine.root.walk():
            mra = p.max_running_apps
            am_max = p.am_max(self._engine.cluster) if p.is_leaf and self.kind == "yarn" else None
            rows.append(wire.QueueRow(
                name=p.name, parent=p.parent.name if p.parent else None, weight=p.weight,
                min=_amount(p.min_share, d), max=_limit(p.max_share, d), fair=_amount(p.fair_share, d),
                steady=_amount(p.steady_fair_share, d), usage=_amount(p.usage, d), demand=_amount(p.demand, d),
                running_apps=p.running_apps, apps=len(p.apps),
                max_running_apps=None if mra == float("inf") else int(mra), recovery=p.name == RECOVERY_QUEUE,
                policy=p.policy.name, am_max=None if am_max is None else _amount(am_max, d),
                preemptable=p.allow_preemption_from, is_parent=p.is_parent and not p.children))
        return rows
