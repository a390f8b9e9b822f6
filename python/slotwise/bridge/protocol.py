"""Payloads in, answers out: the engine behind the shim's four calls.

No Py4J here: a ``PolicyCore`` takes and returns JSON strings, so it can be
driven by the live gateway, by a recorded log, or by a test.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import threading
import time

from ..clock import Clock, SystemClock
from ..cluster import Request
from ..config.model import AllocationConfig
from ..decisions import Assignment, Preemption
from ..engine import Engine, PlacementRejected
from ..eventlog import EventLog
from ..resources import Resource
from ..settings import EngineSettings


def _pair(r: Resource):
    inf = float("inf")
    if r.memory_mb == inf or r.vcores == inf:
        return None
    return [r.memory_mb, r.vcores]


class _CallClock:
    """The engine's clock: one instant per call, the one the recording
    notes, so a replay on that instant decides exactly as the live call did.
    ``with clock.frozen():`` fixes the instant (nested uses keep the outer one)."""

    def __init__(self, base: Clock) -> None:
        self.base = base
        self._t: float | None = None
        self._depth = 0

    def now(self) -> float:
        return self._t if self._t is not None else self.base.now()

    def frozen(self) -> "_CallClock":
        return self

    def __enter__(self) -> None:
        if self._depth == 0:
            self._t = self.base.now()
        self._depth += 1

    def __exit__(self, *exc) -> None:
        self._depth -= 1
        if self._depth == 0:
            self._t = None


class PolicyCore:
    """All four protocol calls; thread-safe, since Py4J calls in on its own
    threads."""

    def __init__(self, config: AllocationConfig, settings: EngineSettings | None = None,
                 clock: Clock | None = None, event_log: EventLog | None = None,
                 record_inputs: bool = False, log_decisions: bool = True,
                 stream: str | None = None, stats=None, config_text: str | None = None) -> None:
        self.clock = _CallClock(clock or SystemClock())
        #: Observer of calls (``slotwise.metrics.Metrics``); None: nobody.
        self.stats = stats
        #: The latest preemptions, newest last, for the web UI.
        self.recent_preemptions: collections.deque = collections.deque(maxlen=100)
        self.settings = settings or EngineSettings()
        self.log = event_log or EventLog()
        #: Log every call's message with the engine clock, so the run can be
        #: replayed exactly (``slotwise.sim.replay``).
        self.record_inputs = record_inputs
        self.log_decisions = log_decisions
        #: Which engine a record belongs to when several share one log (an
        #: MRv1 simulation runs one per slot kind).
        self.stream = stream
        self.lock = threading.RLock()
        self.calls = 0
        with self.clock.frozen():
            self.engine = Engine(config, self.clock, self.settings)
            if record_inputs:
                # The file's text too: a replay must start from the same pools.
                self.log.write("recording", stream=stream, t=self.clock.now(), config=config.source,
                               config_text=config_text, settings=dataclasses.asdict(self.settings))

    # -------------------------------------------------------------- the calls
    def heartbeat(self, payload: str) -> str:
        assigned = self.handle_heartbeat(json.loads(payload))
        return json.dumps({"assign": [[a.app_id, a.node_id, a.priority, a.locality, a.container_id]
                                      for a in assigned], "preempt": []}, separators=(",", ":"))

    def handle_heartbeat(self, msg: dict) -> list[Assignment]:
        """The heartbeat call on a decoded message (the simulator calls this
        directly; the gateway through ``heartbeat``)."""
        with self.lock, self.clock:
            if "apps" in msg:
                self._resolve(msg)
            if self.record_inputs:
                self.log.write("input", call="heartbeat", stream=self.stream, t=self.clock.now(), msg=msg)
            stats = self.stats
            started = time.perf_counter() if stats is not None else 0.0
            if len(msg) > 1 or "node" not in msg:
                self._apply(msg)
            else:
                self.calls += 1
            node = msg.get("node")
            assigned = self.engine.heartbeat(node) if node else []
            if stats is not None:
                stats.on_heartbeat(time.perf_counter() - started, len(assigned))
            if assigned and self.log_decisions:
                for a in assigned:
                    self.log.write("assign", stream=self.stream, app=a.app_id, pool=a.pool, node=a.node_id,
                                   locality=a.locality, priority=a.priority, container=a.container_id,
                                   memory_mb=a.resource.memory_mb, vcores=a.resource.vcores, am=a.is_am)
            return assigned

    def update(self, payload: str) -> str:
        with self.lock:  # the table must describe the engine the update just ran on
            preempt = self.handle_update(json.loads(payload))
            table = self.queue_table()
        return json.dumps({"preempt": [[p.container_id, p.kill] for p in preempt], "queues": table},
                          separators=(",", ":"))

    def handle_update(self, msg: dict) -> list[Preemption]:
        with self.lock, self.clock.frozen():
            self._resolve(msg)
            if self.record_inputs:
                self.log.write("input", call="update", stream=self.stream, t=self.clock.now(), msg=msg)
            self._apply(msg)
            preempt = self.engine.update()
            wall = time.time()
            for p in preempt:
                self.recent_preemptions.append({"time": wall, "container": p.container_id, "app": p.app_id,
                                                "pool": p.pool, "node": p.node_id, "kill": p.kill,
                                                "reason": p.reason})
                self.log.write("preempt", stream=self.stream, container=p.container_id, app=p.app_id, pool=p.pool,
                               node=p.node_id, kill=p.kill, reason=p.reason)
            return preempt

    def place(self, app: str) -> str:
        with self.lock, self.clock.frozen():
            msg = json.loads(app)
            if self.record_inputs:
                self.log.write("input", call="place", stream=self.stream, t=self.clock.now(), msg=msg)
            try:
                pool = self.engine.place_app(msg.get("user", ""), msg.get("queue"), msg.get("groups") or ())
            except PlacementRejected as e:
                self.log.write("reject", app=msg.get("id"), user=msg.get("user"), reason=str(e))
                return json.dumps({"reject": str(e)})
            self.log.write("place", app=msg.get("id"), user=msg.get("user"), asked=msg.get("queue"), pool=pool)
            return json.dumps({"queue": pool})

    def move(self, app_id: str, queue: str) -> str:
        with self.lock, self.clock.frozen():
            if self.record_inputs:
                self.log.write("input", call="move", stream=self.stream, t=self.clock.now(),
                               msg={"app": app_id, "queue": queue})
            if app_id not in self.engine.apps:
                return json.dumps({"error": f"unknown application {app_id}"})
            try:
                pool = self.engine.move_app(app_id, queue)
            except ValueError as e:
                return json.dumps({"error": str(e)})
            self.log.write("move", app=app_id, pool=pool)
            return json.dumps({"queue": pool})

    # ------------------------------------------------------- runtime admin
    def set_config(self, config: AllocationConfig, text: str | None = None) -> None:
        """Swap in a reloaded allocation file, between two calls."""
        with self.lock, self.clock.frozen():
            conflicts = self.engine.config_conflicts(config)
            if conflicts:
                raise ValueError("\n".join(conflicts))
            if self.record_inputs:
                self.log.write("input", call="config", stream=self.stream, t=self.clock.now(),
                               msg={"source": config.source, "text": text})
            self.engine.set_config(config)
            self.log.write("reload", file=config.source, pools=sum(1 for _ in config.root.walk()) - 1)

    def config_failed(self, errors: list[str]) -> None:
        self.log.write("reload_failed", errors=errors)

    def admin_move(self, app_id: str, pool: str) -> str:
        """An operator's move with no ResourceManager to carry it out (with
        one, the RM's own move reaches ``move``).  Raises KeyError/ValueError."""
        with self.lock, self.clock.frozen():
            if app_id not in self.engine.apps:
                raise KeyError(app_id)
            if self.record_inputs:
                self.log.write("input", call="move", stream=self.stream, t=self.clock.now(),
                               msg={"app": app_id, "queue": pool})
            target = self.engine.move_app(app_id, pool)
            self.log.write("move", app=app_id, pool=target, by="admin")
            return target

    def admin_priority(self, app_id: str, priority: int) -> None:
        with self.lock, self.clock.frozen():
            if app_id not in self.engine.apps:
                raise KeyError(app_id)
            if self.record_inputs:
                self.log.write("input", call="priority", stream=self.stream, t=self.clock.now(),
                               msg={"app": app_id, "priority": int(priority)})
            self.engine.set_app_priority(app_id, int(priority))
            self.log.write("priority", app=app_id, priority=int(priority), by="admin")

    # ----------------------------------------------------------------- deltas
    def _resolve(self, msg: dict) -> None:
        """Turn wall-clock submit times into engine-clock ones in the message
        itself, so a recorded message replays with the same app order."""
        for app in msg.get("apps", ()):
            if "submit_t" not in app and app.get("submit"):
                app["submit_t"] = self._submit_time(app["submit"])

    def _apply(self, msg: dict) -> None:
        self.calls += 1
        e = self.engine
        if msg.get("fallbacks"):
            self.log.write("fallback", count=msg["fallbacks"])
            if self.stats is not None:
                self.stats.on_fallbacks(msg["fallbacks"])
        if msg.get("full"):
            # A resync: start from the shim's view alone.
            self.engine = e = Engine(e.config, self.clock, self.settings)
            self.log.write("resync", nodes=len(msg.get("nodes", ())), apps=len(msg.get("apps", ())))
        # The shim's order: what exists first, then what happened, then what left.
        for node_id, host, rack, mem, vc in msg.get("nodes", ()):
            e.add_node(node_id, host, rack, Resource(mem, vc))
        for app in msg.get("apps", ()):
            self._apply_app(app)
        for cid, app_id, node_id, mem, vc, is_am, prio, engine_id in msg.get("launched", ()):
            if engine_id and engine_id in e.containers:
                e.rename_container(engine_id, cid)
            else:
                e.container_launched(cid, app_id, node_id, Resource(mem, vc), bool(is_am), prio)
        for engine_id in msg.get("rejected", ()):
            e.container_finished(engine_id)
        for cid in msg.get("finished", ()):
            e.container_finished(cid)
        for app_id in msg.get("apps_removed", ()):
            e.remove_app(app_id)
        for node_id in msg.get("nodes_removed", ()):
            e.remove_node(node_id)

    def _apply_app(self, app: dict) -> None:
        e = self.engine
        app_id = app["id"]
        known = e.apps.get(app_id)
        if known is None:
            e.add_app(app_id, app.get("user", "unknown"), queue=app.get("queue") or "default",
                      priority=int(app.get("prio", 0)), submit_time=app.get("submit_t"), placed=True)
            if app.get("unmanaged"):
                e.mark_unmanaged(app_id)  # its AM runs outside the cluster: no AM container
        else:
            queue = app.get("queue")
            if queue and queue != known.pool.name:
                e.move_app(app_id, queue, force=True)  # the shim moved it already: follow
            if "prio" in app and int(app["prio"]) != known.priority:
                e.set_app_priority(app_id, int(app["prio"]))
        if "req" in app:
            e.update_requests(app_id, [Request(p, Resource(mem, vc), n, hosts, racks, relax)
                                       for p, mem, vc, n, hosts, racks, relax in app["req"]])

    def _submit_time(self, submit_ms) -> float | None:
        """The shim sends epoch milliseconds; the engine's clock is its own.
        Both run on this machine, so the age of the app carries over."""
        if not submit_ms:
            return None
        age = max(0.0, time.time() - submit_ms / 1000.0)
        return self.clock.now() - age

    # ------------------------------------------------------------------ reads
    def queue_table(self) -> list[dict]:
        rows = []
        for p in self.engine.root.walk():
            rows.append({
                "name": p.name, "parent": p.parent.name if p.parent else None, "weight": p.weight,
                "min": _pair(p.min_share), "max": _pair(p.max_share), "fair": _pair(p.fair_share),
                "steady": _pair(p.steady_fair_share), "usage": _pair(p.usage), "demand": _pair(p.demand),
                "running_apps": p.running_apps, "apps": len(p.apps),
            })
        return rows
