"""Smallest remaining work first: the shortest-remaining-processing-time
baseline Hopper is compared with.  Among a queue's jobs, the one with the
least work left (outstanding plus running containers, in memory) gets every
container it asks for before the next; speculative copies, being requests,
count as work like any other."""

from __future__ import annotations

from typing import Sequence

from .fairshare import DESIGN
from ..resources import ZERO, Resource, along
from .schedulable import Schedulable
from .base import SchedulingPolicy, register_policy


def remaining(s: Schedulable, key: str = "memory_mb") -> float:
    return getattr(s.demand, key)


class SrptPolicy(SchedulingPolicy):
    name = "srpt"
    leaf_only = True

    def sort_key(self, s: Schedulable, cluster: Resource, key: str = "memory_mb"):
        return (remaining(s, key), s.start_time, s.name)

    def compute_shares(self, children: Sequence[Schedulable], total: Resource, steady: bool = False,
                       rule: str = DESIGN, key: str = "memory_mb") -> list[Resource]:
        whole = getattr(total, key)
        if steady or whole <= 0:
            n = max(len(children), 1)
            return [along(key, whole / n, total) for _ in children]
        left = whole
        out = [ZERO] * len(children)
        for i in sorted(range(len(children)), key=lambda i: self.sort_key(children[i], total, key)):
            give = min(getattr(children[i].demand, key), left)
            out[i] = along(key, give, total)
            left -= give
        return out


register_policy("srpt", SrptPolicy)
