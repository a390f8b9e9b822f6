"""What an allocation file would do to the live demands, changing nothing
(``slotwise diff``, ``POST /api/v1/config/dry-run``): each queue's shares
and settings before and after, whether preemption would be due for it (read
as the console and explain read it: ``views.starvation.next_round``), the
containers that would become preemptable, and why a reload would be refused.
It runs on independent copies of the engine (``fork``)."""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import time

from ..clock import ManualClock
from ..config.model import AllocationConfig
from ..engine import fork as engine_fork
from ..engine.fork import collector_paused
from .starvation import next_round, preemption_scope

#: A queue's settings in force a dry run compares too (the engine's, after
#: inheritance and the file's defaults): every one a reload may change.
DRY_RUN_SETTINGS = ("max_running_apps", "max_am_share", "min_share_timeout", "fair_share_timeout",
                    "fair_share_threshold")
#: Each a dry run reports per queue, ``_before`` and ``_after``.
DRY_RUN_FIELDS = ("fair_share", "steady_fair_share", "weight", "min_share", "max_share", "policy",
                  *DRY_RUN_SETTINGS, "preemption_due")


#: Units of work (``fork.keep``) one hold of the door's lock may spend
#: bringing the engine's kept copies up to date: about 1-2 ms here.
CATCH_UP = 1000


def catch_up(lock, engine) -> None:
    """Before a fork: bring what the engine keeps for its forks up to date
    (``fork.keep``) in short holds of ``lock``, the heartbeats let in
    between, until what is left is a small part of one turn (the fork's
    own hold reads it, and copies the nodes and queues whole). Gives up
    (the fork's hold does the rest) when the changes come faster than it
    copies them."""
    left = None
    while True:
        with collector_paused(), lock:  # its collections come between the turns
            now_left = engine_fork.keep(engine, CATCH_UP)
        if now_left <= CATCH_UP // 4 or (left is not None and now_left >= left):
            return
        left = now_left
        time.sleep(0)  # the heartbeats waiting for the lock go first


@contextlib.contextmanager
def fork_hold(lock, engine):
    """``with fork_hold(lock, engine):`` the catch-up's turns, then the one
    hold a fork is taken in (the collector paused), for ``fork`` and what
    must be read with it."""
    catch_up(lock, engine)
    with collector_paused(), lock:
        yield


def fork(engine) -> "Copier":
    """The one place a view copies the live engine, called under the door's
    lock after ``catch_up``: ``engine/fork.py``'s snapshot (the apps changed
    since the last fork copied, the rest shared), from which
    ``Copier.engine`` makes independent engines outside the lock."""
    return Copier(engine_fork.snapshot(engine))


class Copier:
    """A copy of the engine taken at one moment, made into as many
    independent what-if engines as asked: on a clock stopped at a given
    instant, with preemption off (a dry run reads who would be due, it
    takes nothing), or, for a forward play (``preemption=True``), as the
    live engine has it: the play then enacts it on its copy."""

    def __init__(self, snapshot) -> None:
        self._snapshot = snapshot
        self._base = None

    def engine(self, now: float, preemption: bool = False):
        if self._base is None:
            self._base = engine_fork.build(self._snapshot, ManualClock(now))
            self._snapshot = None
        engine = self._base.fork(ManualClock(now))
        if not preemption:
            engine.settings = dataclasses.replace(engine.settings, preemption=False)
        # Its own copies of what the live engines share and change (a Dynamic
        # Priority market's budgets, charged as a forecast's time passes):
        # what defines its own copy for what-if questions (``__getstate__``)
        # is copied, the rest (read only) shared.
        engine.ctx.services = {k: copy.deepcopy(v) if "__getstate__" in type(v).__dict__ else v
                               for k, v in engine.ctx.services.items()}
        return engine


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
