"""The parsed allocation file: plain data, both formats mapped onto YARN's
vocabulary (an MRv1 pool is a YARN queue).  Values left as None inherit from the parent
queue or the file's defaults; ``Queue.apply_config`` applies that rule."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..resources import Resource

INFINITE = math.inf


#: The longest full queue name (root.a.b): the protocol's Name bound, so a
#: queue the file declares or a rule makes can always be named on the wire.
MAX_QUEUE_NAME = 1024


@dataclass(frozen=True)
class ResourceSpec:
    """An absolute resource or a percentage of the cluster (maxResources may be either).

    Each dimension is absolute (``memory_mb``/``vcores``; an MRv1 pool's
    ``maxMaps``/``maxReduces`` as ``map_slots``/``reduce_slots``) or a
    percentage (``memory_pct``/``vcores_pct``); a missing dimension means
    unlimited.
    """

    memory_mb: float | None = None
    vcores: float | None = None
    memory_pct: float | None = None
    vcores_pct: float | None = None
    map_slots: float | None = None
    reduce_slots: float | None = None

    def resolve(self, cluster: Resource) -> Resource:
        mem = self.memory_mb
        if mem is None:
            mem = cluster.memory_mb * self.memory_pct / 100.0 if self.memory_pct is not None else INFINITE
        vc = self.vcores
        if vc is None:
            vc = cluster.vcores * self.vcores_pct / 100.0 if self.vcores_pct is not None else INFINITE
        maps, reduces = self.map_slots, self.reduce_slots
        return Resource(mem, vc, INFINITE if maps is None else maps, INFINITE if reduces is None else reduces)

    @classmethod
    def of(cls, r: Resource) -> "ResourceSpec":
        """Exactly ``r``, in every dimension."""
        return cls(memory_mb=r.memory_mb, vcores=r.vcores, map_slots=r.map_slots, reduce_slots=r.reduce_slots)


@dataclass
class QueueConfig:
    name: str  # full dotted name, e.g. "root.prod.etl"
    line: int = 0
    is_parent: bool = False  # type="parent": may get children at runtime
    min_resources: Resource | None = None
    max_resources: ResourceSpec | None = None
    max_child_resources: ResourceSpec | None = None
    max_running_apps: int | None = None
    max_am_share: float | None = None
    weight: float = 1.0
    scheduling_policy: str | None = None
    min_share_preemption_timeout: float | None = None
    fair_share_preemption_timeout: float | None = None
    fair_share_preemption_threshold: float | None = None
    allow_preemption_from: bool | None = None
    #: localityTarget: the fraction of data-local launches to tune waits for.
    locality_target: float | None = None
    acl_submit_apps: str | None = None
    acl_administer_apps: str | None = None
    # MRv1 slot limits: min and max map/reduce slots.
    min_maps: int | None = None
    min_reduces: int | None = None
    max_maps: int | None = None
    max_reduces: int | None = None
    children: list["QueueConfig"] = field(default_factory=list)
    #: The fields its element set (a queue declared twice merges these).
    declared: set[str] = field(default_factory=set, repr=False, compare=False)

    @property
    def short_name(self) -> str:
        return self.name.rsplit(".", 1)[-1]

    def walk(self):
        yield self
        for c in self.children:
            yield from c.walk()


@dataclass
class UserConfig:
    name: str
    max_running_apps: int | None = None
    line: int = 0


@dataclass
class PlacementRule:
    """One rule of queuePlacementPolicy.

    name: specified, user, primaryGroup, secondaryGroupExistingQueue,
    nestedUserQueue, default or reject.  ``queue`` is the default rule's
    target, ``parent`` the nested rule of nestedUserQueue.
    """

    name: str
    create: bool = True
    queue: str | None = None
    parent: "PlacementRule | None" = None
    line: int = 0


@dataclass
class AllocationConfig:
    source: str = "<default>"
    format: str = "yarn"  # "yarn" or "mrv1"
    root: QueueConfig = field(default_factory=lambda: QueueConfig("root"))
    users: dict[str, UserConfig] = field(default_factory=dict)
    user_max_apps_default: int | None = None
    queue_max_apps_default: int | None = None
    queue_max_resources_default: ResourceSpec | None = None
    queue_max_am_share_default: float = 0.5
    default_queue_scheduling_policy: str = "fair"
    default_min_share_preemption_timeout: float = INFINITE
    default_fair_share_preemption_timeout: float = INFINITE
    default_fair_share_preemption_threshold: float = 0.5
    #: defaultLocalityTarget: None keeps the engine's fixed waits.
    default_locality_target: float | None = None
    placement_rules: list[PlacementRule] = field(default_factory=list)
    # MRv1: the job property naming the pool (the pool-name property); one pool per user by default.
    pool_name_property: str = "mapreduce.job.user.name"
    #: FILE:LINE: warning: ... for what YARN ignores or adjusts; the file loads.
    warnings: list[str] = field(default_factory=list, compare=False)

    def queues(self) -> dict[str, QueueConfig]:
        return {q.name: q for q in self.root.walk()}

    def user_max_apps(self, user: str) -> int | None:
        u = self.users.get(user)
        if u is not None and u.max_running_apps is not None:
            return u.max_running_apps
        return self.user_max_apps_default


def default_placement_rules() -> list[PlacementRule]:
    """YARN's behaviour with no queuePlacementPolicy: the queue the app asked
    for, else one queue per user; both created on demand."""
    return [PlacementRule("specified", create=True), PlacementRule("user", create=True)]


def default_config() -> AllocationConfig:
    cfg = AllocationConfig()
    cfg.placement_rules = default_placement_rules()
    return cfg
