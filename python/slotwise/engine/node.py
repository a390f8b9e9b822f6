"""A node and the containers on it, as the engine last heard of them."""

from __future__ import annotations

from ..resources import ZERO, Resource


class Node:
    __slots__ = ("node_id", "host", "rack", "capacity", "used", "containers", "held")

    def __init__(self, node_id: str, host: str, rack: str, capacity: Resource) -> None:
        self.node_id = node_id
        self.host = host
        self.rack = rack
        self.capacity = capacity
        self.used = ZERO
        self.containers: set[str] = set()
        #: Resources freed by preemption, held for the queue they were taken
        #: for: queue name -> (amount, until) (engine/preemption.py).
        self.held: dict[str, tuple[Resource, float]] = {}

    @property
    def free(self) -> Resource:
        return self.capacity - self.used

    def held_back(self, room: Resource | None) -> Resource:
        """What the node holds beyond its live containers when the driver
        says it has only ``room`` free (YARN keeps a killed container's
        resources until the NodeManager reports it gone); None: nothing."""
        return ZERO if room is None else (self.capacity - self.used - room).clamp_zero()

    def add(self, c: "Container") -> None:
        self.containers.add(c.container_id)
        self.used = self.used + c.resource

    def remove(self, c: "Container") -> None:
        self.containers.discard(c.container_id)
        self.used = self.used - c.resource

    def rename(self, old_id: str, new_id: str) -> None:
        self.containers.discard(old_id)
        self.containers.add(new_id)


class Container:
    __slots__ = ("container_id", "app_id", "node_id", "resource", "priority", "launch_time", "is_am",
                 "preempt_time", "kill_sent", "preempt_why", "taken_for", "level")

    def __init__(self, container_id: str, app_id: str, node_id: str, resource: Resource,
                 launch_time: float, is_am: bool = False, priority: int = 0) -> None:
        self.container_id = container_id
        self.app_id = app_id
        self.node_id = node_id
        self.resource = resource
        self.priority = priority
        self.launch_time = launch_time
        self.is_am = is_am
        self.preempt_time: float | None = None  # when we first asked for it back
        self.kill_sent = False
        self.preempt_why: str | None = None  # in words, for explain and the UI
        self.taken_for: str | None = None  # the starved queue it is taken back for
        self.level: int | None = None  # the locality Python placed it at (None: the RM's own)
