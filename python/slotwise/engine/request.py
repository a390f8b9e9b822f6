"""An app's outstanding containers at one priority, and the locality rule
that says where one of them may run."""

from __future__ import annotations

from collections.abc import Iterable

from .locality import NODE_LOCAL, OFF_SWITCH, RACK_LOCAL
from .node import Node
from ..resources import Resource


class Request:
    """An app's outstanding containers at one request priority, in YARN's
    shape: a total (``*``) plus counts per host and per rack that prefer them."""

    __slots__ = ("priority", "resource", "num_containers", "hosts", "racks", "relax_locality", "strict_racks")

    def __init__(self, priority: int, resource: Resource, num_containers: int,
                 hosts: dict[str, int] | None = None, racks: dict[str, int] | None = None,
                 relax_locality: bool = True, strict_racks: Iterable[str] = ()) -> None:
        if num_containers < 0:
            raise ValueError("num_containers must be >= 0")
        self.priority = priority
        self.resource = resource
        self.num_containers = num_containers
        self.hosts = dict(hosts or {})
        self.racks = dict(racks or {})
        self.relax_locality = relax_locality
        self.strict_racks = frozenset(strict_racks)

    @property
    def has_locality(self) -> bool:
        return bool(self.hosts) or bool(self.racks)

    def locality_on(self, node: Node) -> int | None:
        """The best level this request can run at on ``node``, or None, by
        YARN's relaxLocality rules as the shim checks them (FifoFallback):
        node-local needs the node's host and rack asked for (a request that
        names no racks at all, the simulator's shorthand, needs the host
        only); rack-local the rack asked for, on a rack whose own ask allows
        relaxing; off-switch a relaxable ANY ask, on such a rack. An AM whose
        rack names differ from the RM's topology gets no node-local
        container, or Java would refuse each one and Python offer it again."""
        rack = node.rack  # allows_on's rule, written out: this runs for every app a heartbeat walks
        if self.hosts.get(node.host, 0) > 0 and (not self.racks or self.racks.get(rack, 0) > 0):
            return NODE_LOCAL
        if rack in self.strict_racks:
            return None
        if self.racks.get(rack, 0) > 0:
            return RACK_LOCAL
        return OFF_SWITCH if self.relax_locality else None

    def allows_on(self, node: Node, level: int) -> bool:
        """Whether one container may go on ``node`` at ``level``
        (locality_on is the best level this allows)."""
        rack = node.rack
        if level == NODE_LOCAL:
            return self.hosts.get(node.host, 0) > 0 and (not self.racks or self.racks.get(rack, 0) > 0)
        if rack in self.strict_racks:
            return False
        if level == RACK_LOCAL:
            return self.racks.get(rack, 0) > 0
        return self.relax_locality

    def take(self, node: Node, level: int) -> None:
        """Count one container as placed, as YARN's AppSchedulingInfo does."""
        self.num_containers -= 1
        if level == NODE_LOCAL:
            dec(self.hosts, node.host)
        if level <= RACK_LOCAL:
            dec(self.racks, node.rack)


def dec(counts: dict[str, int], key: str) -> None:
    n = counts.get(key, 0)
    if n > 1:
        counts[key] = n - 1
    elif key in counts:
        del counts[key]
