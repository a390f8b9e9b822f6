"""What the engine answers: containers to place and containers to take back.
Drivers (the Py4J bridge, the simulator) carry these out."""

from __future__ import annotations

from dataclasses import dataclass

from ..resources import Resource


@dataclass(frozen=True, slots=True)
class Assignment:
    container_id: str  # the engine's id; a driver may rename it to the real one
    app_id: str
    queue: str
    node_id: str
    priority: int  # the request priority (YARN scheduler key)
    locality: str  # node_local, rack_local or off_switch
    resource: Resource
    is_am: bool


@dataclass(frozen=True, slots=True)
class Preemption:
    container_id: str
    app_id: str
    queue: str  # the victim's queue
    node_id: str
    kill: bool  # False: a warning, the kill follows after the grace time
    reason: str  # min_share or fair_share
