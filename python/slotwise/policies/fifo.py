"""FIFO: the Hadoop default scheduler's order, priority then submit time.

Inside a queue it is the design document's FIFO mode; at the root it is the
baseline scheduler, ordering every app in the cluster as one queue.
"""

from __future__ import annotations

from typing import Sequence

from .fairshare import DESIGN, YARN, fill_in_order
from ..resources import OFFERED, ZERO, Resource
from .schedulable import Schedulable
from .base import SchedulingPolicy, register_policy


class FifoPolicy(SchedulingPolicy):
    name = "fifo"
    leaf_only = True
    flatten = True
    stable_order = True

    def sort_key(self, s: Schedulable, cluster: Resource, key: str = "memory_mb"):
        return (-s.priority, s.start_time, s.name)

    def compute_shares(
        self, children: Sequence[Schedulable], total: Resource, steady: bool = False,
        rule: str = DESIGN, key: str = "memory_mb",
    ) -> list[Resource]:
        dims = OFFERED[key]
        mine = total.only(dims)
        if rule == YARN and not steady:
            # YARN's FifoPolicy: the earliest app's share is the whole queue's.
            out = [ZERO] * len(children)
            if children:
                first = min(range(len(children)), key=lambda i: (children[i].start_time, children[i].name))
                out[first] = mine
            return out
        n = len(children)
        if steady:  # a steady share is a queue concept; FIFO has no opinion
            return [mine * (1.0 / n)] * n if n else []
        order = sorted(range(n), key=lambda i: self.sort_key(children[i], total))
        caps = [children[i] for i in order]
        filled = {d: fill_in_order([min(c.demand.get(d), c.max_share.get(d)) for c in caps], total.get(d))
                  for d in dims}
        out: list[Resource] = [ZERO] * n
        for k, i in enumerate(order):
            out[i] = Resource.of({d: filled[d][k] for d in dims})
        return out


register_policy("fifo", FifoPolicy)
