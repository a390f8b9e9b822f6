"""Dominant Resource Fairness: order by the larger of a schedulable's memory
and vcores shares of the cluster, per unit of weight."""

from __future__ import annotations

import math
from typing import Sequence

from .fairshare import DESIGN
from ..resources import Resource
from .schedulable import Schedulable
from .base import SchedulingPolicy, register_policy
from .fair import shares_by_weight


def _dominant(r: Resource, cluster: Resource) -> float:
    m = r.memory_mb / cluster.memory_mb if cluster.memory_mb > 0 else 0.0
    v = r.vcores / cluster.vcores if cluster.vcores > 0 else 0.0
    return m if m > v else v


class DrfPolicy(SchedulingPolicy):
    name = "drf"
    dimensions = ("memory_mb", "vcores")

    def sort_key(self, s: Schedulable, cluster: Resource):
        floor = s.min_share.min(s.demand)
        used = s.usage
        share = _dominant(used, cluster)
        if used.memory_mb < floor.memory_mb or used.vcores < floor.vcores:
            return (0, share / max(_dominant(floor, cluster), 1e-12), s.start_time, s.name)
        w = s.weight
        return (1, share / w if w > 0 else math.inf, s.start_time, s.name)

    def compute_shares(
        self, children: Sequence[Schedulable], total: Resource, steady: bool = False,
        rule: str = DESIGN,
    ) -> list[Resource]:
        # Both rules share each resource on its own, as YARN's DRF policy does
        # (not by dominant share).
        return shares_by_weight(children, total, steady, rule)


register_policy("drf", DrfPolicy)
