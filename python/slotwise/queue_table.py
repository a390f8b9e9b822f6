"""The queue table an update answer carries to the shim (the RM's own
queue views read it): one row per queue, and only the rows that changed
since the last answer (``TableDiff``)."""

from __future__ import annotations

import time

from . import protocol as wire
from .engine import RECOVERY_QUEUE
from .resources import KIND_DIMS, Resource

#: Seconds between update answers that carry the whole queue table, so a shim
#: that dropped an answer (one past its deadline) is whole again soon.
TABLE_REFRESH = 30.0


class TableDiff:
    """What an update answer says of the queue table: the rows that changed
    since the last answer and the queues gone since, or the whole table (at
    first, after a full payload, every TABLE_REFRESH seconds).  10,000 queues
    that do not change cost nothing on the wire."""

    def __init__(self) -> None:
        self._sent: dict | None = None
        self._full_at = 0.0

    def answer(self, rows: list, full: bool) -> dict:
        """UpdateAnswer's fields queues, queues_removed, queues_full."""
        now = time.monotonic()
        sent = self._sent
        table = {r.name: r for r in rows}
        self._sent = table
        if sent is None or full or now - self._full_at >= TABLE_REFRESH:
            self._full_at = now
            return {"queues": rows, "queues_removed": [], "queues_full": True}
        return {"queues": [r for r in rows if sent.get(r.name) != r],
                "queues_removed": [n for n in sent if n not in table], "queues_full": False}


def _amount(r: Resource, dims=KIND_DIMS["yarn"]):
    return wire.Amount(**{d: getattr(r, d) for d in dims})


def _limit(r: Resource, dims=KIND_DIMS["yarn"]):
    inf = float("inf")
    return None if any(getattr(r, d) == inf for d in dims) else _amount(r, dims)


def queue_rows(engine, kind: str) -> list:
    """The table's rows (wire.QueueRow), from the root down."""
    rows = []
    d = KIND_DIMS[kind]
    for p in engine.root.walk():
        mra = p.max_running_apps
        am_max = p.am_max(engine.cluster) if p.is_leaf and kind == "yarn" else None
        rows.append(wire.QueueRow(
            name=p.name, parent=p.parent.name if p.parent else None, weight=p.weight,
            min=_amount(p.min_share, d), max=_limit(p.max_share, d), fair=_amount(p.fair_share, d),
            steady=_amount(p.steady_fair_share, d), usage=_amount(p.usage, d), demand=_amount(p.demand, d),
            running_apps=p.running_apps, apps=len(p.apps),
            max_running_apps=None if mra == float("inf") else int(mra), recovery=p.name == RECOVERY_QUEUE,
            policy=p.policy.name, am_max=None if am_max is None else _amount(am_max, d),
            preemptable=p.allow_preemption_from, is_parent=p.is_parent and not p.children))
    return rows
