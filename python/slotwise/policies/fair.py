"""Fair sharing: the Fair Scheduler's comparator and weighted fair shares."""

from __future__ import annotations

import math
from typing import Sequence

from ..fairshare import compute_shares
from ..resources import Resource
from ..schedulable import Schedulable
from .base import SchedulingPolicy, register_policy


def share_key(s: Schedulable) -> float:
    """The Fair Scheduler's comparator as one number: below -1 for those
    under their min share (by the fraction of it they hold), else running
    per unit of weight."""
    used = s.usage.memory_mb
    floor = s.min_share.memory_mb
    d = s.demand.memory_mb
    if d < floor:
        floor = d
    if used < floor:
        return used / floor - 2.0
    w = s.weight
    return used / w if w > 0 else math.inf


class FairPolicy(SchedulingPolicy):
    """Schedulables below their min share go first, the neediest (by fraction
    of min share) first; then the one with the fewest running per weight."""

    name = "fair"

    def sort_key(self, s: Schedulable, cluster: Resource):
        return (share_key(s), s.start_time, s.name)

    def order(self, children: list, cluster: Resource) -> list:
        # Children arrive in (start_time, name) order and the sort is stable,
        # so one float per child settles ties exactly as sort_key would.
        keys = [share_key(s) for s in children]
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
