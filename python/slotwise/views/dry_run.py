"""What an allocation file would do to the live demands, changing nothing
(``slotwise diff``, ``POST /api/v1/config/dry-run``): each queue's shares
and settings before and after, whether preemption would be due for it (read
as the console and explain read it: ``views.starvation.next_round``), the
containers that would become preemptable, and why a reload would be refused.
It runs on independent copies of the engine (``fork``)."""

from __future__ import annotations

import dataclasses
import io
import pickle

from ..clock import ManualClock
from ..config.model import AllocationConfig, QueueConfig
from .starvation import next_round, preemption_scope

#: A queue's settings in force a dry run compares too (the engine's, after
#: inheritance and the file's defaults): every one a reload may change.
DRY_RUN_SETTINGS = ("max_running_apps", "max_am_share", "min_share_timeout", "fair_share_timeout",
                    "fair_share_threshold")
#: Each a dry run reports per queue, ``_before`` and ``_after``.
DRY_RUN_FIELDS = ("fair_share", "steady_fair_share", "weight", "min_share", "max_share", "policy",
                  *DRY_RUN_SETTINGS, "preemption_due")


def fork(engine) -> "Copier":
    """The one place a view copies the live engine, called under the door's
    lock: what it returns makes independent engines (``Copier.engine``) on a
    clock stopped at a given instant, with preemption off, outside the lock.
    Today the copy is a pickle (``_freeze``/``_thaw``); once ``Engine.fork()``
    exists this becomes ``Copier(engine.fork())`` and ``Copier.engine`` forks
    that copy, and nothing else changes."""
    return Copier(_freeze(engine))


class Copier:
    """A copy of the engine taken at one moment, thawed into as many
    independent what-if engines as asked."""

    def __init__(self, frozen) -> None:
        self._frozen = frozen

    def engine(self, now: float):
        return _thaw(self._frozen, now)


def dry_run(copies: "Copier", now: float, config: AllocationConfig, scope, preemption: bool, dims) -> dict:
    """The dry run's answer from a fork of the live engine taken at ``now``
    (outside the lock). ``scope``: the live engine's preemption scope (the
    copies run with preemption off), so "due" reads as it does live."""
    before, after = copies.engine(now), copies.engine(now)
    conflicts = before.config_conflicts(config)
    if conflicts:  # the reload would be refused: nothing would change
        return {"queues": [], "conflicts": conflicts, "share_rule": before.share_rule,
                "preemption": preemption, "newly_preemptable": []}
    after.set_config(config)
    rows, victims = {}, {}
    for when, engine in (("before", before), ("after", after)):
        engine.update()
        rows[when] = {}
        for r in engine.describe_queues():
            q = engine.queues[r["queue"]]
            due = next_round(engine, q, now, scope)["due"] if r["below_min_share"] or r["below_fair_share"] \
                else False
            rows[when][r["queue"]] = {**r, **{k: getattr(q, k) for k in DRY_RUN_SETTINGS},
                                      "preemption_due": due if not q.children else None}
        victims[when] = {c.container_id: c for c in engine.preemption.victims()}
    queues = []
    for name in sorted(set(rows["before"]) | set(rows["after"])):
        b, a = rows["before"].get(name), rows["after"].get(name)
        row = {"queue": name, "status": "added" if b is None else "removed" if a is None else "kept"}
        for key in DRY_RUN_FIELDS:
            row[f"{key}_before"] = b[key] if b else None
            row[f"{key}_after"] = a[key] if a else None
        queues.append(row)
    newly = [c for cid, c in victims["after"].items() if cid not in victims["before"]]
    return {"queues": queues, "conflicts": conflicts, "share_rule": after.share_rule,
            "preemption": preemption,
            "newly_preemptable": [{"container": c.container_id, "app": c.app_id,
                                   "queue": after.apps[c.app_id].queue.name, "node": c.node_id,
                                   "resource": c.resource.to_dict(dims)} for c in newly]}


def live_scope(engine):
    """The live engine's preemption scope, taken with the fork (under the lock)."""
    return preemption_scope(engine)


def _freeze(engine) -> tuple[bytes, dict]:
    """A whole copy of an engine as bytes, without recursion along the queue
    tree or the allocation file's queue tree (any depth the file allows):
    queues are linked by name in the copy, and the parsed file, which nothing
    changes at runtime, is shared by reference."""
    shared: dict[int, object] = {}
    out = io.BytesIO()

    class _Pickler(pickle.Pickler):
        def persistent_id(self, obj):
            if isinstance(obj, (AllocationConfig, QueueConfig)):
                shared[id(obj)] = obj
                return id(obj)
            return None

    _Pickler(out, protocol=pickle.HIGHEST_PROTOCOL).dump(engine)
    return out.getvalue(), shared


def _thaw(frozen: tuple[bytes, dict], now: float):
    """An engine from a frozen one, on a clock stopped at ``now`` and with
    preemption off: for what-if questions that must change nothing."""
    data, shared = frozen

    class _Unpickler(pickle.Unpickler):
        def persistent_load(self, pid):
            return shared[pid]

    engine = _Unpickler(io.BytesIO(data)).load()
    engine.clock = ManualClock(now)
    engine.settings = dataclasses.replace(engine.settings, preemption=False)
    return engine
