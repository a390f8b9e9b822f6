"""Fair sharing: the Fair Scheduler's comparator and weighted fair shares."""

from __future__ import annotations

import math
from typing import Sequence

from ..fairshare import compute_shares
from ..resources import Resource
from ..schedulable import Schedulable
from .base import SchedulingPolicy, register_policy


class FairPolicy(SchedulingPolicy):
    """Schedulables below their min share go first, the neediest (by fraction
    of min share) first; then the one with the fewest running per weight."""

    name = "fair"

    def sort_key(self, s: Schedulable, cluster: Resource):
        used = s.usage.memory_mb
        floor = s.min_share.memory_mb
        d = s.demand.memory_mb
        if d < floor:
            floor = d
        if used < floor:
            return (0, used / floor, s.start_time, s.name)
        w = s.weight
        return (1, used / w if w > 0 else math.inf, s.start_time, s.name)

    def order(self, children: list, cluster: Resource) -> list:
        # sort_key as one float per child (needy ones below -1), sorted
        # stably: children arrive in (start_time, name) order, which settles
        # ties exactly as the tuple would.  This runs on every heartbeat.
        inf = math.inf
        keys = []
        for s in children:
            used = s.usage.memory_mb
            floor = s.min_share.memory_mb
            d = s.demand.memory_mb
            if d < floor:
                floor = d
            if used < floor:
                keys.append(used / floor - 2.0)
            else:
                w = s.weight
                keys.append(used / w if w > 0 else inf)
        idx = sorted(range(len(children)), key=keys.__getitem__)
        return [children[i] for i in idx]

    def compute_shares(
        self, children: Sequence[Schedulable], total: Resource, steady: bool = False
    ) -> list[Resource]:
        return shares_by_weight(children, total, steady)


def shares_by_weight(children: Sequence[Schedulable], total: Resource, steady: bool) -> list[Resource]:
    """Weighted fair shares in each dimension independently."""
    weights = [c.weight for c in children]
    out_dims = []
    for dim in ("memory_mb", "vcores"):
        mins = [getattr(c.min_share, dim) for c in children]
        if steady:
            caps = [getattr(c.max_share, dim) for c in children]
        else:
            caps = [min(getattr(c.demand, dim), getattr(c.max_share, dim)) for c in children]
        out_dims.append(compute_shares(weights, mins, caps, getattr(total, dim)))
    return [Resource(m, v) for m, v in zip(*out_dims)]


register_policy("fair", FairPolicy)
