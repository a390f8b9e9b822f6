"""Re-run a recorded event log through a fresh engine.

A log written with inputs recorded (``slotwise serve --record``, or a
simulation with ``--event-log``) holds every message the engine's
PolicyCore received, with the engine clock.  Feeding them back, in order,
on a ManualClock set to each message's time gives the engine the very same
event sequence; the decisions must come out the same.  With another
allocation file or other settings, the same messages answer "what would
this config have decided" (the decisions then drift from the recording,
since the real cluster acted on the old ones).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Iterable

from .. import protocol as wire
from ..clock import ManualClock
from ..core import PolicyCore
from ..config.model import AllocationConfig, default_config
from ..eventlog import EventLog, read_events
from ..settings import EngineSettings


@dataclass
class ReplayResult:
    calls: int = 0
    #: (stream, app, node, locality, container) per assignment, in order.
    assignments: list[tuple] = field(default_factory=list)
    preemptions: list[tuple] = field(default_factory=list)
    recorded_assignments: list[tuple] = field(default_factory=list)
    recorded_preemptions: list[tuple] = field(default_factory=list)

    @property
    def matches(self) -> bool:
        return (self.assignments == self.recorded_assignments
                and self.preemptions == self.recorded_preemptions)

    def first_difference(self) -> str | None:
        for i, (a, b) in enumerate(zip(self.assignments, self.recorded_assignments)):
            if a != b:
                return f"assignment {i}: replay {a}, recorded {b}"
        if len(self.assignments) != len(self.recorded_assignments):
            return (f"replay made {len(self.assignments)} assignments, the recording "
                    f"{len(self.recorded_assignments)}")
        if self.preemptions != self.recorded_preemptions:
            return f"preemptions differ: replay {self.preemptions[:5]}, recorded {self.recorded_preemptions[:5]}"
        return None


def settings_from(record: dict) -> EngineSettings:
    known = {f.name for f in fields(EngineSettings)}
    return EngineSettings(**{k: v for k, v in (record.get("settings") or {}).items() if k in known})


def replay(events: Iterable[dict] | str, config: AllocationConfig | None = None,
           settings: EngineSettings | None = None, taps: dict | None = None,
           event_log: EventLog | None = None, checkpoints: Iterable[float] = (),
           at_checkpoint=None) -> ReplayResult:
    """``taps``, if given, maps stream -> callable(core) run on each new core
    (tests use it to watch the engine's calls); ``at_checkpoint(t, cores)``
    is called at each of ``checkpoints`` (engine times, ascending), with the
    engine as it was then: every input before it fed, none after (a
    benchmark's forecasts, made again from the recorded state)."""
    pending = sorted(checkpoints)
    if isinstance(events, str):
        events = read_events(events)
    result = ReplayResult()
    cores: dict = {}
    services: dict = {}  # shared by the streams, as serve shares them
    clock: ManualClock | None = None
    for ev in events:
        kind = ev.get("event")
        stream = ev.get("stream")
        if kind == "assign":
            result.recorded_assignments.append((stream, ev["app"], ev["node"], ev["locality"], ev["container"]))
            continue
        if kind == "preempt":
            result.recorded_preemptions.append((stream, ev["container"], ev["kill"]))
            continue
        if kind == "recording":
            if ev.get("protocol") != wire.VERSION:
                raise ValueError(f"the log was recorded with protocol version {ev.get('protocol')}; "
                                 f"this Slotwise speaks {wire.VERSION}")
            if clock is None:
                clock = ManualClock(ev.get("t", 0.0))
            cfg = config
            if cfg is None and ev.get("config_text"):
                from ..config import parse_allocations

                cfg = parse_allocations(ev["config_text"], ev.get("config") or "<recorded>")
            cfg = cfg or default_config()
            if stream in ("map", "reduce"):
                raise ValueError("recorded by an earlier Slotwise, with an engine per kind of slot; "
                                 "record it again (MRv1 runs on one engine now)")
            if ev.get("market") and "market" not in services:
                from ..market import Market

                services["market"] = Market.from_snapshot(ev["market"])
            if ev.get("hopper") and "hopper" not in services:
                from ..policies.hopper import HopperSettings

                services["hopper"] = HopperSettings(**ev["hopper"])
            core = PolicyCore(cfg, settings or settings_from(ev), clock, event_log or EventLog(),
                              stream=stream, services=services, kind=ev.get("kind", "yarn"))
            cores[stream] = core
            if taps and stream in taps:
                taps[stream](core)
            continue
        if kind != "input":
            continue
        if ev.get("call") == "market":  # an operator's change, between two engine calls
            if "market" in services:
                services["market"].apply(ev["msg"]["op"], ev["msg"]["args"])
            continue
        core = cores.get(stream)
        if core is None:
            raise ValueError(f"input for stream {stream!r} before its 'recording' record: "
                             "was the log written with inputs recorded?")
        t = ev.get("t", 0.0)
        while pending and pending[0] < t and at_checkpoint is not None:
            if pending[0] > clock.now():
                clock.set(pending[0])
            at_checkpoint(pending.pop(0), cores)
        if t > clock.now():
            clock.set(t)
        call, msg = ev["call"], ev["msg"]
        result.calls += 1
        if call == "heartbeat":
            try:
                decided = core.handle_heartbeat(wire.convert("Payload", msg))
            except wire.ProtocolError:
                decided = []  # refused live too, with the same answer
            for a in decided:
                result.assignments.append((stream, a.app_id, a.node_id, a.locality, a.container_id))
        elif call == "update":
            try:
                preempt = core.handle_update(wire.convert("Payload", msg)).preempt
            except wire.ProtocolError:
                preempt = []
            for p in preempt:
                result.preemptions.append((stream, p.container_id, p.kill))
        elif call == "place":
            core.handle_place(wire.convert("PlaceRequest", msg))
        elif call == "move":
            core.handle_move(wire.convert("MoveRequest", msg))
        elif call == "priority":
            core.actions.priority(msg["app"], msg["priority"])
        elif call == "preemption":  # the master's switch, told at registration
            core.set_preemption(msg["on"])
        elif call == "config":
            if config is not None:
                continue  # a what-if keeps the file it was given
            from ..config import parse_allocations

            cfg = parse_allocations(msg["text"], msg.get("source") or "<recorded>")
            core.set_config(cfg, msg["text"])
    if clock is None:
        raise ValueError("no 'recording' record: the log was written without inputs "
                         "(run `slotwise serve --record` or `slotwise simulate --event-log`)")
    return result
