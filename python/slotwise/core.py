"""PolicyCore: the one door into the engine.

Every driver goes through here: the Py4J bridge (JSON text in and out, one
call per heartbeat), the simulator and replay (the same messages, typed).
The door decodes, checks, applies and answers, and nothing else: what the
state looks like is read through ``core.views`` (slotwise.views), an
operator's actions go through ``core.actions`` (slotwise.actions), and what
is written down besides the answers through ``core.recorder``
(slotwise.recording). None of their callers touches the engine or the lock.

A message (``slotwise.protocol``: the schema's Payload, PlaceRequest, ...)
is checked whole before any of it is applied (slotwise.payload_checks), so a
bad one changes nothing. A full payload is reconciled with what the engine
holds: what the RM no longer has goes, what it has comes, and everything
else (queues' starvation timers, apps' locality waits, runnability, the
container sequence) stays.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import threading
import time
from dataclasses import dataclass, field

from . import protocol as wire
from .actions import AdminActions
from .clock import Clock, SystemClock
from .config.model import AllocationConfig
from .engine import LOCALITY_NAMES, RECOVERY_QUEUE, Engine, PlacementRejected, Request
from .engine.decisions import Assignment, Preemption
from .eventlog import EventLog
from .finished import FinishedApps
from .payload_checks import payload_problems
from .placement import queue_path
from .protocol import ProtocolError
from .queue_table import TableDiff, queue_rows
from .recording import Recorder
from .resources import KIND_DIMS, Resource
from .settings import EngineSettings
from .views import StateViews

log = logging.getLogger("slotwise.core")

#: How often an unanswered move order is repeated (engine seconds).
MOVE_RETRY = 10.0
#: Placements remembered for `GET /api/v1/apps/{id}/placement` (the latest kept).
MAX_PLACEMENTS = 10_000
#: Refusals that stay true until the app's asks or the node change: the same
#: offer is not made again until then (the others are races that pass).
LASTING_REFUSALS = frozenset({"locality", "blacklisted", "no_task"})
INT32_MAX = 2**31 - 1


def _res(r) -> Resource:
    return Resource(r.memory_mb, r.vcores, r.map_slots, r.reduce_slots)


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


def _requests_of(asks) -> list:
    """YARN's ResourceRequests (App.asks, as the YARN shim sends them) as
    the protocol's requests, one per request priority: the ANY ask's count,
    size and relaxLocality; the hosts' and racks' counts above 0; and the
    racks whose own ask may not be relaxed, with or without a count (what
    YARN's canDelayTo reads). A priority whose ANY ask counts no container
    is no request."""
    by_priority: dict[int, list] = {}
    for a in asks:
        by_priority.setdefault(a.priority, []).append(a)
    out = []
    for priority in sorted(by_priority):
        count, size, relax, hosts, racks, strict = 0, None, True, {}, {}, []
        for a in by_priority[priority]:
            if a.name == "*":
                count, size, relax = count + a.count, a.resource, a.relax_locality
                continue
            rack = a.name.startswith("/")
            if rack and not a.relax_locality:
                strict.append(a.name)
            if a.count > 0:
                where = racks if rack else hosts
                where[a.name] = min(INT32_MAX, where.get(a.name, 0) + a.count)
        if count > 0:
            out.append(wire.Request(priority=priority, resource=size, count=min(INT32_MAX, count), hosts=hosts,
                                    racks=racks, relax_locality=relax, strict_racks=strict))
    return out


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
        #: Which engine a record belongs to when several share one log (an
        #: MRv1 simulation runs one per slot kind).
        self.stream = stream
        self.recorder = Recorder(self.log, self._clock, stream, record_inputs, log_decisions, self.dims)
        self._lock = threading.RLock()
        #: The apps that have left, for explain (the last 1,000).
        self.finished = FinishedApps()
        #: How the last apps were placed, for `slotwise cluster submit` to say why (bounded).
        self.placements: collections.OrderedDict = collections.OrderedDict()
        self._moves: dict[str, _PendingMove] = {}
        self._suspects: set[str] = set()  # apps whose view differed from the RM's at the last check
        self._table = TableDiff()
        self._resynced = False  # a full payload since the last update answer: the shim starts afresh
        self._diverged = False  # the last heartbeat's truth confirmed a divergence: its answer asks for a resync
        self.counters = collections.Counter()  # calls, resyncs, rejected messages, divergences, recoveries
        self._episodes_seen: collections.deque = collections.deque(maxlen=64)  # the last fallback episodes counted
        self.refusals = collections.Counter()  # the shim's refused assignments, by reason
        #: The read side (slotwise.views) and an operator's actions (slotwise.actions).
        self.views = StateViews(self)
        self.actions = AdminActions(self)
        #: A candidate file deciding beside this engine (slotwise.shadow), or None.
        self.shadow = None
        with self._clock:
            # services: what the driver shares with the policies (the Dynamic
            # Priority market); one dict for the engines of one server.
            self.services = {} if services is None else services
            self._engine = Engine(config, self._clock, self.settings, services=self.services,
                                  kind=kind)
            self.recorder.start(config, config_text, self.settings, self.services, kind)

    @property
    def record_inputs(self) -> bool:
        """Whether every call's message is logged, for ``slotwise replay``."""
        return self.recorder.record_inputs

    def set_preemption(self, on: bool) -> None:
        """Preemption on or off from now on (the master's configuration, or
        serve --preemption, told at registration)."""
        with self._lock, self._clock:
            self.settings = dataclasses.replace(self.settings, preemption=bool(on))
            self._engine.settings = self.settings
            # a replay must preempt from here on as the live run did
            self.recorder.action("preemption", {"on": bool(on)})

    # ------------------------------------------------ the protocol, as JSON
    def heartbeat(self, text: str) -> str:
        try:
            msg = wire.decode("Payload", text)
            with self._lock:  # the verdict on the truth msg carries, if any, is this call's
                assigned = self.handle_heartbeat(msg)
                resync, self._diverged = self._diverged, False
        except ProtocolError as e:
            return wire.encode(wire.HeartbeatAnswer(error=str(e)))
        except Exception:  # a bug: the shim falls back and resyncs, which repairs what it half did
            return wire.encode(wire.HeartbeatAnswer(error=self._internal_error("heartbeat")))
        return wire.encode(wire.HeartbeatAnswer(assign=[
            wire.Assignment(app=a.app_id, node=a.node_id, priority=a.priority, locality=a.locality,
                            engine_id=a.container_id, resource=self._wire_resource(a.resource)) for a in assigned],
            resync=resync))

    def _wire_resource(self, r: Resource):
        return wire.Resource(**{d: int(getattr(r, d)) for d in self.dims})

    def update(self, text: str) -> str:
        try:  # decoded before the lock: it holds only the apply, the pass and the queue table
            msg = wire.decode("Payload", text)
        except ProtocolError as e:
            return wire.encode(wire.UpdateAnswer(error=str(e)))
        with self._lock:  # the table must describe the engine the update just ran on
            try:
                result = self.handle_update(msg)
            except ProtocolError as e:
                return wire.encode(wire.UpdateAnswer(error=str(e)))
            except Exception:
                return wire.encode(wire.UpdateAnswer(error=self._internal_error("update")))
            table = self._table.answer(queue_rows(self._engine, self.kind), self.take_resynced())
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
        """Apply a Payload, check the RM's truth if it carries it (the YARN
        shim's update sends its deltas and the truth as a heartbeat with no
        beats: docs/shim.md), then decide for its beats.  Raises ProtocolError
        (nothing applied) if the payload is not consistent."""
        with self._lock, self._clock:
            recorder = self.recorder
            if recorder.record_inputs:
                recorder.call("heartbeat", msg)
            stats = self.stats
            started = time.perf_counter() if stats is not None else 0.0
            self._apply(msg)
            if msg.check is not None:
                self._diverged = self._check_truth(msg.check)
            assigned: list[Assignment] = []
            for beat in msg.beats:
                assigned += self._engine.heartbeat(beat.node, None if beat.free is None else _res(beat.free))
            if stats is not None:
                stats.on_heartbeat(time.perf_counter() - started, len(assigned))
            if assigned:
                recorder.assignments(assigned)
            shadow = self.shadow
            if shadow is not None:  # a hand-off: the shadow decides elsewhere (its process)
                shadow.offer("heartbeat", self._clock.now(), msg, assigned)
            return assigned

    def handle_update(self, msg) -> UpdateResult:
        """Apply a Payload, check the RM's truth it carries, run the periodic
        pass: preemptions, moves to ask for, whether to resync."""
        with self._lock, self._clock:
            self.recorder.call("update", msg)
            self._apply(msg)
            resync = self._check_truth(msg.check) if msg.check is not None else False
            preempt = self._engine.update()
            if preempt:
                self.recorder.preempted(preempt, self._engine.containers)
            e = self._engine
            waiting = sorted(a.app_id for a in e.apps.values() if not a.runnable) if e.limits.waiting else []
            shadow = self.shadow
            if shadow is not None:
                shadow.offer("update", self._clock.now(), msg, preempt)
            return UpdateResult(preempt, self._due_moves(), resync, waiting)

    def handle_place(self, req):
        with self._lock, self._clock:
            self.recorder.call("place", req)
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
        self.placements[req.app] = {"app": req.app, "user": req.user, "asked": req.queue, "queue": queue,
                                     "rejected": rejected, "rules": trace}
        while len(self.placements) > MAX_PLACEMENTS:
            self.placements.popitem(last=False)

    def handle_move(self, req):
        """The RM's move (yarn application -movetoqueue, an admin move, or a
        move this core ordered): where the app goes, or why not."""
        with self._lock, self._clock:
            self.recorder.call("move", req)
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
            self.recorder.action("config", {"source": config.source, "text": text})
            self._engine.set_config(config)
            if self.shadow is not None:  # its follower reloads too (the candidate keeps its file)
                self.shadow.offer("config", self._clock.now(), config)
            self.log.write("reload", file=config.source, queues=sum(1 for _ in config.root.walk()) - 1)

    def swap_shadow(self, new, old=None):
        """From now on every input applied goes to shadow ``new`` too (None:
        to none), under the lock (``Shadow.attach`` calls it in the hold it
        copies the state in); with ``old``, only if ``old`` is the one now.
        Returns the shadow ``new`` replaced, for the caller to stop once it
        holds the lock no more (a stop may wait for a shadow process)."""
        with self._lock:
            prev = self.shadow
            if old is not None and prev is not old:
                return None
            self.shadow = new
            self.recorder.tap = None if new is None else new.input
        return prev if new is not None and prev is not None and prev is not new else None

    def take_resynced(self) -> bool:
        """Whether a full payload came since the last call (the next update
        answer then carries the whole queue table)."""
        was, self._resynced = self._resynced, False
        return was

    def queue_table(self) -> list:
        """The queue table an update answer carries (queue_table.queue_rows)."""
        with self._lock:
            return queue_rows(self._engine, self.kind)

    def config_failed(self, errors: list[str]) -> None:
        self.log.write("reload_failed", errors=errors)

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

    def _refuse_if_inconsistent(self, msg) -> None:
        """ProtocolError (counted and logged) if a payload clashes with itself
        or the engine; changes nothing else."""
        problems = payload_problems(msg, self._engine, self.kind)
        if problems:
            self.counters["rejected_messages"] += 1
            self.log.write("bad_message", errors=problems[:10])
            raise ProtocolError("Payload: " + "; ".join(problems[:3])
                                + (f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""))

    def _apply(self, msg) -> None:
        """Check a payload against itself and the engine, then apply it whole."""
        for a in msg.apps:
            if a.asks and not a.requests:  # the YARN shim's: grouped here (both: refused below)
                a.requests, a.asks = _requests_of(a.asks), []
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
        """An episode the master scheduled without Python, once: a call that
        carried it and timed out in the shim after Python had read it is
        sent again with the next payload (bench_sls counted such twice)."""
        key = (ep.started_ms, ep.ended_ms, ep.reason, ep.heartbeats)
        if key in self._episodes_seen:
            return
        self._episodes_seen.append(key)
        seconds = self.recorder.fallback(ep, "JobTracker" if self.kind == "mrv1" else "ResourceManager")
        self.counters["fallback_episodes"] += 1
        self.counters["fallback_heartbeats"] += ep.heartbeats
        if self.stats is not None:
            self.stats.on_fallback_episode(ep.heartbeats, seconds)
