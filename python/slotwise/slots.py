"""MRv1-style clusters: nodes with map and reduce slots.

As in the original Fair Scheduler, maps and reduces are shared separately:
one engine per slot kind, each on the allocation file's view for that kind
(minMaps/maxMaps or minReduces/maxReduces), each slot ``Resource.slots(1)``.
The engines are the ordinary ones; this only routes events to both.
"""

from __future__ import annotations

from typing import Mapping

from .clock import Clock
from .cluster import Request
from .config.model import AllocationConfig, default_config
from .decisions import Assignment, Preemption
from .engine import Engine
from .resources import Resource
from .settings import EngineSettings

KINDS = ("map", "reduce")
SLOT = Resource.slots(1)


def pool_for_job(config: AllocationConfig, user: str, properties: Mapping[str, str]) -> str:
    """The design document's pool-name property: one pool per user unless
    the job sets the property (e.g. pool.name) itself."""
    return properties.get(config.pool_name_property) or properties.get("pool.name") or user


class SlotScheduler:
    def __init__(self, config: AllocationConfig | None = None, clock: Clock | None = None,
                 settings: EngineSettings | None = None) -> None:
        self.config = config or default_config()
        self.engines = {k: Engine(self.config.slot_view(k), clock, settings) for k in KINDS}

    def set_config(self, config: AllocationConfig) -> None:
        self.config = config
        for k, e in self.engines.items():
            e.set_config(config.slot_view(k))

    def add_node(self, node_id: str, host: str, rack: str, map_slots: int, reduce_slots: int) -> None:
        self.engines["map"].add_node(node_id, host, rack, Resource.slots(map_slots))
        self.engines["reduce"].add_node(node_id, host, rack, Resource.slots(reduce_slots))

    def remove_node(self, node_id: str) -> None:
        for e in self.engines.values():
            e.remove_node(node_id)

    def add_job(self, job_id: str, user: str, properties: Mapping[str, str] | None = None,
                priority: int = 0, submit_time: float | None = None) -> str:
        pool = pool_for_job(self.config, user, properties or {})
        placed = None
        for e in self.engines.values():
            placed = e.add_app(job_id, user, queue=pool, priority=priority, submit_time=submit_time)
            e.mark_unmanaged(job_id)  # MRv1 jobs have no application master container
        return placed

    def remove_job(self, job_id: str) -> None:
        for e in self.engines.values():
            e.remove_app(job_id)

    def set_tasks(self, job_id: str, maps: int, map_hosts: Mapping[str, int] | None = None,
                  map_racks: Mapping[str, int] | None = None, reduces: int = 0) -> None:
        """A job's unlaunched tasks: maps with their input's hosts and racks."""
        self.engines["map"].update_requests(job_id, [Request(0, SLOT, maps, dict(map_hosts or {}),
                                                             dict(map_racks or {}))])
        self.engines["reduce"].update_requests(job_id, [Request(0, SLOT, reduces)])

    def heartbeat(self, node_id: str) -> dict[str, list[Assignment]]:
        return {k: e.heartbeat(node_id) for k, e in self.engines.items()}

    def task_finished(self, kind: str, container_id: str) -> None:
        self.engines[kind].container_finished(container_id)

    def update(self) -> dict[str, list[Preemption]]:
        return {k: e.update() for k, e in self.engines.items()}
