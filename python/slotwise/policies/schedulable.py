"""The one shape shared by queues and apps, as in the Fair Scheduler's
``Schedulable``: the same sharing algorithm works between queues and inside a
queue because both answer the same questions."""

from __future__ import annotations

from typing import Protocol

from ..resources import Resource


class Schedulable(Protocol):
    name: str
    weight: float
    min_share: Resource  # configured min share (zero for apps)
    max_share: Resource  # resolved cap, may be infinite
    demand: Resource  # usage + outstanding requests (zero if not runnable)
    usage: Resource
    fair_share: Resource  # instantaneous: among active schedulables
    steady_fair_share: Resource  # among all configured queues, active or not
    priority: int  # apps: higher runs first / weighs more; queues: 0
    start_time: float
