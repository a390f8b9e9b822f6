"""Smallest remaining work first: the shortest-remaining-processing-time
baseline Hopper is compared with.  Among a pool's jobs, the one with the
least work left (outstanding plus running containers, in memory) gets every
container it asks for before the next; speculative copies, being requests,
count as work like any other."""

from __future__ import annotations

from typing import Sequence

from .fairshare import DESIGN
from ..resources import Resource
from .schedulable import Schedulable
from .base import SchedulingPolicy, register_policy


def remaining(s: Schedulable) -> float:
    return s.demand.memory_mb


class SrptPolicy(SchedulingPolicy):
    name = "srpt"
    leaf_only = True

    def sort_key(self, s: Schedulable, cluster: Resource):
        return (remaining(s), s.start_time, s.name)

    def compute_shares(self, children: Sequence[Schedulable], total: Resource, steady: bool = False,
                       rule: str = DESIGN) -> list[Resource]:
        if steady or total.memory_mb <= 0:
            n = max(len(children), 1)
            return [Resource(total.memory_mb / n, total.vcores / n) for _ in children]
        left = total.memory_mb
        out = [Resource(0, 0)] * len(children)
        for i in sorted(range(len(children)), key=lambda i: self.sort_key(children[i], total)):
            give = min(children[i].demand.memory_mb, left)
            out[i] = Resource(give, give / total.memory_mb * total.vcores)
            left -= give
        return out


register_policy("srpt", SrptPolicy)
