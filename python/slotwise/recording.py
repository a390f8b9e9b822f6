"""What the door writes down besides its answers: each call's input (so
``slotwise replay`` re-runs a recorded run exactly), the Dynamic Priority
market's operations, and the decisions and episodes worth an event or a log
line (assignments, preemption rounds, the master's FIFO fallback)."""

from __future__ import annotations

import collections
import dataclasses
import logging
import time

from . import protocol as wire

log = logging.getLogger("slotwise.core")

#: Inputs the door hands a shadow itself, with their answers (or a parsed file).
_OWN_HAND_OFF = frozenset(("heartbeat", "update", "config"))

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


class Recorder:
    """The event log as the door writes it, on the door's call clock."""

    def __init__(self, event_log, clock, stream: str | None, record_inputs: bool, log_decisions: bool,
                 dims) -> None:
        self.log = event_log
        self.clock = clock
        self.stream = stream
        #: Log every call's message with the engine clock, so the run can be
        #: replayed exactly (``slotwise.sim.replay``).
        self.record_inputs = record_inputs
        self.log_decisions = log_decisions
        self.dims = dims
        #: A shadow's hand-off of the inputs no heartbeat or pass carries
        #: (``Shadow.input``); None when no shadow runs.
        self.tap = None
        #: No log lines (a shadow's engines: serve's log is the live one's).
        self.quiet = False
        #: The last preemptions, newest last (the console, explain).
        self.preemptions: collections.deque = collections.deque(maxlen=100)

    def start(self, config, config_text: str | None, settings, services: dict, kind: str) -> None:
        """The recording's first record: the file's text too, since a replay
        must start from the same queues (and from the same market, where one
        is shared); then every market operation as an input."""
        market = services.get("market")
        if market is not None:
            market.on_change = self.market
        if not self.record_inputs:
            return
        hopper = services.get("hopper")
        self.log.write("recording", stream=self.stream, kind=kind, t=self.clock.now(), protocol=wire.VERSION,
                       config=config.source, config_text=config_text, settings=dataclasses.asdict(settings),
                       market=market.snapshot() if market is not None else None,
                       hopper=dataclasses.asdict(hopper) if dataclasses.is_dataclass(hopper) else None)

    def call(self, call: str, msg) -> None:
        """A protocol message, as the door received it."""
        tap = self.tap
        if tap is not None and call not in _OWN_HAND_OFF:
            tap(call, self.clock.now(), msg)
        if self.record_inputs:
            self.log.write("input", call=call, stream=self.stream, t=self.clock.now(), msg=wire.to_builtins(msg))

    def action(self, call: str, msg: dict) -> None:
        """An input that is no protocol message (preemption on or off, a
        reloaded file, an admin's priority)."""
        tap = self.tap
        if tap is not None and call not in _OWN_HAND_OFF:
            tap(call, self.clock.now(), msg)
        if self.record_inputs:
            self.log.write("input", call=call, stream=self.stream, t=self.clock.now(), msg=msg)

    def market(self, op: str, args: dict) -> None:
        """An operator's change to the market: to the shadow, and recorded
        for replay."""
        tap, msg = self.tap, {"op": op, "args": args}
        if tap is not None:
            tap("market", self.clock.now(), msg)
        if self.record_inputs:
            self.log.write("input", call="market", stream=None, t=self.clock.now(), msg=msg)

    def assignments(self, assigned) -> None:
        if assigned and self.log_decisions:
            for a in assigned:
                self.log.write("assign", stream=self.stream, app=a.app_id, queue=a.queue, node=a.node_id,
                               locality=a.locality, priority=a.priority, container=a.container_id,
                               am=a.is_am, **a.resource.to_dict(self.dims))

    def preempted(self, preempt, containers) -> None:
        """A round's preemptions: remembered for the console and explain,
        an event each, and serve's one log line."""
        wall = time.time()
        for p in preempt:
            c = containers.get(p.container_id)
            self.preemptions.append({"time": wall, "container": p.container_id, "app": p.app_id,
                                     "queue": p.queue, "node": p.node_id, "kill": p.kill, "reason": p.reason,
                                     "why": c.preempt_why if c else None})
            self.log.write("preempt", stream=self.stream, container=p.container_id, app=p.app_id, queue=p.queue,
                           node=p.node_id, kill=p.kill, reason=p.reason)
        if preempt and not self.quiet:
            log.info("%s", preemption_line(preempt, containers))

    def fallback(self, ep, master: str) -> float:
        """An episode the master scheduled without Python; its length in seconds."""
        seconds = max(0, ep.ended_ms - ep.started_ms) / 1000.0
        self.log.write("fallback", count=ep.heartbeats, seconds=seconds, reason=ep.reason,
                       started=ep.started_ms / 1000.0, ended=ep.ended_ms / 1000.0)
        # An episode in which no heartbeat came (a call failed, Python answered
        # the next) scheduled nothing by the FIFO: worth a line, not a warning.
        if ep.heartbeats:
            log.warning("the %s scheduled %d heartbeat(s) by its FIFO over %.1f s without Python (%s)",
                        master, ep.heartbeats, seconds, ep.reason)
        else:
            log.info("a call from the %s to Python failed (%s); Python answered again %.1f s later, and no "
                     "heartbeat went to its FIFO", master, ep.reason, seconds)
        return seconds
