"""Fair sharing: the Fair Scheduler's comparator and weighted fair shares."""

from __future__ import annotations

import math
from typing import Sequence

from .fairshare import DESIGN, YARN, compute_shares, yarn_shares
from ..resources import ALL_DIMS, Resource
from .schedulable import Schedulable
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


def share_key_on(s: Schedulable, key: str) -> float:
    """``share_key`` for a slot of kind ``key`` (MRv1)."""
    used = getattr(s.usage, key)
    floor = min(getattr(s.min_share, key), getattr(s.demand, key))
    if used < floor:
        return used / floor - 2.0
    w = s.weight
    return used / w if w > 0 else math.inf


class FairPolicy(SchedulingPolicy):
    """Schedulables below their min share go first, the neediest (by fraction
    of min share) first; then the one with the fewest running per weight."""

    name = "fair"
    keyed = True

    def sort_key(self, s: Schedulable, cluster: Resource, key: str = "memory_mb"):
        return (share_key(s) if key == "memory_mb" else share_key_on(s, key), s.start_time, s.name)

    def order_key(self, s: Schedulable, key: str = "memory_mb") -> float:
        return share_key(s) if key == "memory_mb" else share_key_on(s, key)

    def order(self, children: list, cluster: Resource, key: str = "memory_mb") -> list:
        # Children arrive in (start_time, name) order and the sort is stable,
        # so one float per child settles ties exactly as sort_key would.
        if key == "memory_mb":
            keys = [share_key(s) for s in children]
        else:
            keys = [share_key_on(s, key) for s in children]
        idx = sorted(range(len(children)), key=keys.__getitem__)
        return [children[i] for i in idx]

    def compute_shares(
        self, children: Sequence[Schedulable], total: Resource, steady: bool = False,
        rule: str = DESIGN, key: str = "memory_mb",
    ) -> list[Resource]:
        if key != "memory_mb":
            return shares_by_weight(children, total, steady, rule, (key,))
        if rule == YARN:  # YARN's FairSharePolicy shares memory only; vcores stay 0
            return shares_by_weight(children, total, steady, rule, ("memory_mb",))
        return shares_by_weight(children, total, steady, rule)


def shares_by_weight(children: Sequence[Schedulable], total: Resource, steady: bool, rule: str = DESIGN,
                     dims: tuple[str, ...] = ("memory_mb", "vcores")) -> list[Resource]:
    """Weighted fair shares in each of ``dims`` independently (others 0)."""
    weights = [c.weight for c in children]
    out = {}
    for dim in dims:
        mins = [getattr(c.min_share, dim) for c in children]
        maxes = [getattr(c.max_share, dim) for c in children]
        if rule == YARN:
            out[dim] = yarn_shares(weights, mins, maxes, getattr(total, dim))
            continue
        caps = maxes if steady else [min(getattr(c.demand, dim), m) for c, m in zip(children, maxes)]
        out[dim] = compute_shares(weights, mins, caps, getattr(total, dim))
    zeros = [0.0] * len(children)
    if "map_slots" not in out and "reduce_slots" not in out:
        return [Resource(m, v) for m, v in zip(out.get("memory_mb", zeros), out.get("vcores", zeros))]
    return [Resource(*v) for v in zip(*(out.get(d, zeros) for d in ALL_DIMS))]


register_policy("fair", FairPolicy)
