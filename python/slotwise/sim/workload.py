"""What a simulation runs: a cluster shape and a list of jobs.

Traces (SLS, our JSON lines) and the built-in scenarios all produce these,
so the simulator never needs to know where a workload came from.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..resources import Resource


@dataclass
class ClusterSpec:
    """Nodes in racks.  ``map_slots``/``reduce_slots`` give an MRv1 slot
    cluster (one engine per slot kind, as the original Fair Scheduler);
    with ``node_resource`` set it is a YARN cluster of memory and vcores and
    tasks ask for ``JobSpec.map_resource``/``reduce_resource``."""

    racks: int = 4
    nodes_per_rack: int = 25
    map_slots: int = 4
    reduce_slots: int = 2
    node_resource: Resource | None = None
    #: Explicit (host, rack) pairs; overrides racks x nodes_per_rack.
    hosts: list[tuple[str, str]] | None = None

    def node_list(self) -> list[tuple[str, str]]:
        if self.hosts is not None:
            return list(self.hosts)
        return [(f"node{r * self.nodes_per_rack + i + 1:04d}", f"/rack{r + 1}")
                for r in range(self.racks) for i in range(self.nodes_per_rack)]

    @property
    def slot_mode(self) -> bool:
        return self.node_resource is None


@dataclass
class JobSpec:
    """One job.  Durations are seconds when the task reads its input
    locally on a node of normal speed; ``io`` is the part of a map's time
    spent reading, the part that slows down when the read is remote."""

    job_id: str
    submit: float
    maps: list[float]
    reduces: list[float] = field(default_factory=list)
    user: str = "user"
    queue: str | None = None  # the queue asked for; None: the placement rules decide
    priority: int = 0
    io: float = 0.5
    #: Hosts holding each map's input block; None: placed HDFS-style.
    map_hosts: list[tuple[str, ...]] | None = None
    map_resource: Resource = field(default_factory=lambda: Resource(1024, 1))
    reduce_resource: Resource = field(default_factory=lambda: Resource(1024, 1))
    #: Free-form grouping for reports (a size bin, a workload kind).
    label: str = ""
    kind: str = ""
    #: (x_m, beta, upper) when the maps' times are (bounded) Pareto draws:
    #: a speculative copy then takes a fresh draw (else one of the job's own
    #: times).  ``pareto_draw`` makes them.
    tail: tuple[float, float, float] | None = None

    def __post_init__(self) -> None:
        if self.submit < 0:
            raise ValueError(f"job {self.job_id}: submit time must be >= 0")
        if not self.maps and not self.reduces:
            raise ValueError(f"job {self.job_id}: no tasks")
        if any(d <= 0 for d in self.maps) or any(d <= 0 for d in self.reduces):
            raise ValueError(f"job {self.job_id}: task durations must be positive")
        if not 0.0 <= self.io <= 1.0:
            raise ValueError(f"job {self.job_id}: io must be between 0 and 1")
        if self.map_hosts is not None and len(self.map_hosts) != len(self.maps):
            raise ValueError(f"job {self.job_id}: {len(self.map_hosts)} input locations for "
                             f"{len(self.maps)} maps")


def pareto_draw(rng, x_m: float, beta: float, upper: float = float("inf")) -> float:
    """A Pareto(x_m, beta) draw, bounded above by ``upper`` (inverse CDF of
    the truncated distribution, so one uniform per draw)."""
    cut = 0.0 if upper == float("inf") else (x_m / upper) ** beta
    return x_m * (1.0 - rng.random() * (1.0 - cut)) ** (-1.0 / beta)


@dataclass
class Workload:
    cluster: ClusterSpec
    jobs: list[JobSpec]
    name: str = "workload"

    def __post_init__(self) -> None:
        seen = set()
        for j in self.jobs:
            if j.job_id in seen:
                raise ValueError(f"duplicate job id {j.job_id}")
            seen.add(j.job_id)
        self.jobs.sort(key=lambda j: (j.submit, j.job_id))
