"""The simulated cluster's state: its nodes, the containers running on
them (a task's original or a speculative copy), and each job's tasks as its
MapReduce AM sees them (which maps wait, where their input lives)."""

from __future__ import annotations

import statistics
from collections import deque

from .. import protocol as wire
from .results import NODE, OFF, RACK
from .workload import JobSpec


class SimNode:
    __slots__ = ("node_id", "host", "rack", "speed", "alive", "free", "capacity", "running", "epoch")

    def __init__(self, node_id: str, host: str, rack: str) -> None:
        self.node_id = node_id
        self.host = host
        self.rack = rack
        self.speed = 1.0
        self.alive = True
        self.free: list[float] = []  # free in the cluster's two dimensions (Simulation.dims)
        self.capacity: tuple[float, float] = (0.0, 0.0)
        self.running: set[str] = set()
        self.epoch = 0  # bumped on failure: heartbeats of an earlier life are dropped


class TaskRun:
    """One running container: a task's original or a speculative copy."""

    __slots__ = ("job", "kind", "i", "node", "level", "start", "size", "end", "copy")

    def __init__(self, job, kind, i, node, level, start, size, end, copy) -> None:
        self.job, self.kind, self.i, self.node, self.level = job, kind, i, node, level
        #: what it holds in the cluster's two dimensions (Simulation.dims)
        self.start, self.size, self.end, self.copy = start, size, end, copy


class JobTasks:
    """A job's tasks as the simulated MapReduce AM sees them: which maps
    still wait, where their input lives, and the request that follows."""

    def __init__(self, spec: JobSpec, blocks: list[tuple[str, ...]], rack_of: dict[str, str]) -> None:
        self.spec = spec
        self.queue = ""
        # The asks' container sizes, as the wire carries them (whole MB and vcores).
        self.map_resource = wire.Resource(memory_mb=int(spec.map_resource.memory_mb),
                                          vcores=int(spec.map_resource.vcores))
        self.reduce_resource = wire.Resource(memory_mb=int(spec.reduce_resource.memory_mb),
                                             vcores=int(spec.reduce_resource.vcores))
        self.blocks = blocks
        self.block_racks = [tuple(sorted({rack_of.get(h, "/unknown") for h in b})) for b in blocks]
        self.pending_maps: set[int] = set(range(len(spec.maps)))
        self.by_host: dict[str, list[int]] = {}
        self.by_rack: dict[str, list[int]] = {}
        self.host_count: dict[str, int] = {}
        self.rack_count: dict[str, int] = {}
        for i in range(len(spec.maps)):
            self._index(i)
        self.order = list(range(len(spec.maps) - 1, -1, -1))  # any map, first-to-last
        self.maps_done = 0
        self.reduce_queue: deque[int] = deque() if spec.maps else deque(range(len(spec.reduces)))
        self.reduces_done = 0
        #: (kind, task index) -> container ids of its running copies.
        self.running: dict[tuple[str, int], list[str]] = {}
        #: Winning copies' durations by kind, for the speculation threshold.
        self.durations: dict[str, list[float]] = {"map": [], "reduce": []}
        self.typical: dict[str, float | None] = {"map": None, "reduce": None}
        #: Copies asked for now, by kind (on top of the waiting tasks).
        self.asks: dict[str, int] = {"map": 0, "reduce": 0}

    @property
    def pending_reduces(self) -> int:
        return len(self.reduce_queue)

    def waiting(self, kind: str) -> int:
        return len(self.pending_maps) if kind == "map" else len(self.reduce_queue)

    def finished_one(self, kind: str, duration: float) -> None:
        d = self.durations[kind]
        d.append(duration)
        self.typical[kind] = statistics.median(d) if len(d) < 64 or len(d) % 8 == 0 else self.typical[kind]

    def _index(self, i: int) -> None:
        for h in self.blocks[i]:
            self.by_host.setdefault(h, []).append(i)
            self.host_count[h] = self.host_count.get(h, 0) + 1
        for r in self.block_racks[i]:
            self.by_rack.setdefault(r, []).append(i)
            self.rack_count[r] = self.rack_count.get(r, 0) + 1

    def take_map(self, host: str, rack: str) -> tuple[int, int]:
        """The best waiting map for a slot on (host, rack), and its locality."""
        for level, stack in ((NODE, self.by_host.get(host)), (RACK, self.by_rack.get(rack)),
                             (OFF, self.order)):
            while stack:
                i = stack.pop()
                if i in self.pending_maps:
                    self._remove(i)
                    if level == OFF:  # it may still be closer than the engine knew
                        level = NODE if host in self.blocks[i] else RACK if rack in self.block_racks[i] else OFF
                    return i, level
        raise LookupError(f"job {self.spec.job_id} has no waiting map")

    def _remove(self, i: int) -> None:
        self.pending_maps.discard(i)
        for counts, keys in ((self.host_count, self.blocks[i]), (self.rack_count, self.block_racks[i])):
            for k in keys:
                n = counts[k] - 1
                if n:
                    counts[k] = n
                else:
                    del counts[k]

    def requeue_map(self, i: int) -> None:
        """A map lost with its node or preempted runs again."""
        self.pending_maps.add(i)
        self._index(i)
        self.order.append(i)

    @property
    def done(self) -> bool:
        s = self.spec
        return self.maps_done == len(s.maps) and self.reduces_done == len(s.reduces)
