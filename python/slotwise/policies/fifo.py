"""FIFO: the Hadoop default scheduler's order, priority then submit time.

Inside a pool it is the design document's FIFO mode; at the root it is the
baseline scheduler, ordering every app in the cluster as one queue.
"""

from __future__ import annotations

from typing import Sequence

from .fairshare import DESIGN, YARN, fill_in_order
from ..resources import ZERO, Resource
from .schedulable import Schedulable
from .base import SchedulingPolicy, register_policy


class FifoPolicy(SchedulingPolicy):
    name = "fifo"
    leaf_only = True
    flatten = True
    stable_order = True

    def sort_key(self, s: Schedulable, cluster: Resource):
        return (-s.priority, s.start_time, s.name)

    def compute_shares(
        self, children: Sequence[Schedulable], total: Resource, steady: bool = False,
        rule: str = DESIGN,
    ) -> list[Resource]:
        if rule == YARN and not steady:
            # YARN's FifoPolicy: the earliest app's share is the whole pool's.
            out = [ZERO] * len(children)
            if children:
                first = min(range(len(children)), key=lambda i: (children[i].start_time, children[i].name))
                out[first] = total
            return out
        if steady:  # a steady share is a pool concept; FIFO has no opinion
            n = len(children)
            return [Resource(total.memory_mb / n, total.vcores / n)] * n if n else []
        order = sorted(range(len(children)), key=lambda i: self.sort_key(children[i], total))
        caps = [children[i] for i in order]
        mem = fill_in_order([min(c.demand.memory_mb, c.max_share.memory_mb) for c in caps], total.memory_mb)
        vc = fill_in_order([min(c.demand.vcores, c.max_share.vcores) for c in caps], total.vcores)
        out: list[Resource] = [Resource()] * len(children)
        for k, i in enumerate(order):
            out[i] = Resource(mem[k], vc[k])
        return out


register_policy("fifo", FifoPolicy)
