"""Dominant Resource Fairness: order by the larger of a schedulable's memory
and vcores shares of the cluster, per unit of weight."""

from __future__ import annotations

import math
from typing import Sequence

from .fairshare import DESIGN
from ..resources import OFFERED, Resource
from .schedulable import Schedulable
from .base import SchedulingPolicy, register_policy
from .fair import shares_by_weight


def _dominant(r: Resource, cluster: Resource) -> float:
    m = r.memory_mb / cluster.memory_mb if cluster.memory_mb > 0 else 0.0
    v = r.vcores / cluster.vcores if cluster.vcores > 0 else 0.0
    if cluster.map_slots or cluster.reduce_slots:  # an MRv1 cluster: its slots
        m = r.map_slots / cluster.map_slots if cluster.map_slots > 0 else 0.0
        v = r.reduce_slots / cluster.reduce_slots if cluster.reduce_slots > 0 else 0.0
    return m if m > v else v


class DrfPolicy(SchedulingPolicy):
    name = "drf"
    dimensions = ("memory_mb", "vcores")

    def sort_key(self, s: Schedulable, cluster: Resource, key: str = "memory_mb"):
        floor = s.min_share.min(s.demand)
        used = s.usage
        share = _dominant(used, cluster)
        if not floor.fits_in(used):
            return (0, share / max(_dominant(floor, cluster), 1e-12), s.start_time, s.name)
        w = s.weight
        return (1, share / w if w > 0 else math.inf, s.start_time, s.name)

    def compute_shares(
        self, children: Sequence[Schedulable], total: Resource, steady: bool = False,
        rule: str = DESIGN, key: str = "memory_mb",
    ) -> list[Resource]:
        # Both rules share each resource on its own, as YARN's DRF policy does
        # (not by dominant share).
        return shares_by_weight(children, total, steady, rule, OFFERED[key])


register_policy("drf", DrfPolicy)
