"""The read side of one PolicyCore: every view of the live state that the
console, ``/api/v1``, explain, diff, the metrics, the demo and the simulator
read, computed from the engine under the door's lock and changing nothing.

A thing is read one way: starvation and "preemption due" from the engine's
preemption unit (``views.starvation``), the link from ``views.link``, a dry
run from a fork of the engine (``views.dry_run``). The door (``core.py``)
decodes, checks, applies and answers; it holds no view.
"""

from __future__ import annotations

import contextlib
import time

from ..engine import LOCALITY_NAMES, RECOVERY_QUEUE
from ..engine import forward
from ..engine import whatif as _whatif
from ..resources import Resource
from . import dry_run as _dry_run
from .explain import explain_app, explain_finished, explain_rejected
from .link import gone, link_state, master_name
from .starvation import next_round, preemption_scope, queue_starvation, shares_compared, stand_still

__all__ = ["StateViews", "link_state", "gone"]

#: The starvation clocks of a queue row: (below now, seconds below).
CLOCKS = (("below_min_share", "min_share_starved_for"), ("below_fair_share", "fair_share_starved_for"))


class StateViews:
    """Read-only views of one door's engine and of what the door remembers
    (preemptions, placements, apps that left, moves it asked for)."""

    def __init__(self, door) -> None:
        self._door = door

    # ------------------------------------------------------------- queues
    def queues(self) -> list[dict]:
        """One row per queue (``Engine.describe_queues``), for the metrics,
        the history of the charts and the demo: shares, usage, and the
        starvation clocks as the engine keeps them."""
        door = self._door
        with door._lock:
            rows = door._engine.describe_queues()
        for r in rows:
            r["recovery"] = r["queue"] == RECOVERY_QUEUE
        return rows

    def queue_rows(self, link: dict | None = None, now: float | None = None) -> list[dict]:
        """The queue table of the console and ``/api/v1/queues``: each row of
        ``queues`` with its preemption settings in force, how long it has been
        below its min share and its fair-share threshold (0 unless below now;
        None while below but not timed: preemption off, or a parent), and
        when the preemption unit's next round may act for it, as explain says
        it (``preemption_due``; ``next_preemption_in_s``, None where no round
        will; both None for a queue at its shares or a parent). While the
        master is gone (``link``) nothing is preempted: no round is due, and
        the clocks stand at the moment the link was lost."""
        door = self._door
        with door._lock, door._clock:
            e = door._engine
            rows = e.describe_queues()
            timed = bool(e.settings.preemption)
            scope = preemption_scope(e)
            at = e.clock.now()
            extra = {}
            for p in e.root.walk():
                x = {"min_share_timeout": p.min_share_timeout, "fair_share_timeout": p.fair_share_timeout,
                     "fair_share_threshold": p.fair_share_threshold, "compared": list(shares_compared(e, p)),
                     "preemption_due": None, "next_preemption_in_s": None}
                if not p.children:
                    r = next_round(e, p, at, scope)
                    x["preemption_due"], x["next_preemption_in_s"] = r["due"], r["next_round_in_s"]
                extra[p.name] = x
        parents = {r["parent"] for r in rows}
        stopped = gone(link)
        away = max(0.0, (time.time() if now is None else now) - link["lost_at"]) \
            if stopped and link.get("lost_at") else None
        for r in rows:
            r["recovery"] = r["queue"] == RECOVERY_QUEUE
            r.update(extra.get(r["queue"], {}))
            r["preemption"] = timed
            for flag, since in CLOCKS:
                r[flag] = bool(r.get(flag))
                if not r[flag]:
                    r[since] = 0.0
                elif not timed or r["queue"] in parents:
                    r[since] = None
                elif away is not None and r[since] != float("inf"):
                    r[since] = max(0.0, r[since] - away)  # it stood still from the loss on
            if not (r["below_min_share"] or r["below_fair_share"]) or r["queue"] in parents:
                r["preemption_due"] = r["next_preemption_in_s"] = None
            elif stopped:  # as explain says it (starvation.stand_still)
                r["preemption_due"], r["next_preemption_in_s"] = False, None
        return rows

    def queue_starvation(self, name: str) -> dict | None:
        """A leaf queue below its min share or fair-share threshold now: since
        when (Unix time), the timeout, and what preemption will take and when
        (views.starvation, as explain gives it); None when it is at its
        shares, a parent, or unknown. For the console's queue tree."""
        door = self._door
        with door._lock, door._clock:
            queue = door._engine.queues.get(name)
            out = queue_starvation(door._engine, queue) if queue is not None else None
            if out is not None:
                out["since"] = time.time() - out["for_s"]
            return out

    def leaf_queues(self) -> list[str]:
        """Where an app can be moved: the file's leaf queues and any dynamic leaf."""
        door = self._door
        with door._lock:
            return sorted(p.name for p in door._engine.queues.values()
                          if p.is_leaf and p.name != "root" and p.name != RECOVERY_QUEUE)

    def leaf_fair_shares(self) -> dict[str, Resource]:
        """Fair shares of the leaf queues that hold apps (the simulator's samples)."""
        door = self._door
        with door._lock:
            return {name: p.fair_share for name, p in door._engine.queues.items() if p.apps and not p.children}

    def running_by_queue(self) -> dict[str, int]:
        """Containers each leaf queue holds now."""
        return {name: f["containers"] for name, f in self.queue_containers().items() if f["containers"]}

    def queue_containers(self) -> dict[str, dict]:
        """Per leaf queue with apps: the containers its apps hold, the AM
        containers' memory and vcores, and the containers its apps still
        ask for (YARN's allocatedContainers, amUsedResources and
        pendingContainers)."""
        door = self._door
        out: dict[str, dict] = {}
        with door._lock:
            for app in door._engine.apps.values():
                f = out.setdefault(app.queue.name, {"containers": 0, "am": [0.0, 0.0], "pending": 0})
                f["containers"] += len(app.containers)
                for c in app.containers.values():
                    if c.is_am:
                        f["am"][0] += c.resource.memory_mb
                        f["am"][1] += c.resource.vcores
                f["pending"] += sum(r.num_containers for r in app.requests.values())
        return out

    # --------------------------------------------------------------- apps
    def apps(self) -> list[dict]:
        """Each app (``Engine.describe_apps``), with the queue the door is
        moving it to, if any, and its running containers by the locality they
        were placed at ("rm": placed by the master itself: AMs, its fallback)."""
        door = self._door
        with door._lock:
            e = door._engine
            rows = e.describe_apps()
            moves = {k: v.target for k, v in door._moves.items()}
            placed: dict[str, dict[str, int]] = {}
            for c in e.containers.values():
                level = "rm" if c.level is None else LOCALITY_NAMES[c.level]
                counts = placed.setdefault(c.app_id, {})
                counts[level] = counts.get(level, 0) + 1
        for r in rows:
            r["moving_to"] = moves.get(r["id"])
            r["placed"] = placed.get(r["id"], {})
        return rows

    def app_queue(self, app_id: str) -> str | None:
        door = self._door
        with door._lock:
            app = door._engine.apps.get(app_id)
            return app.queue.name if app else None

    def placement(self, app_id: str) -> dict | None:
        """How an app was placed (the queue asked for, each rule tried, the
        queue or the rejection), while remembered; None otherwise."""
        door = self._door
        with door._lock:
            found = door.placements.get(app_id)
            return None if found is None else {**found, "rules": [dict(r) for r in found["rules"]]}

    def explain(self, app_id: str, link: dict | None = None) -> dict | None:
        """Why an app runs no more than it does (views.explain), or how it
        ended if it has left, with the preemptions of its containers still
        remembered, or why the placement policy rejected it; None if it is
        neither scheduled now nor among the finished or rejected ones
        remembered. Times in the answer are Unix times. ``link``: the
        master's (the service's link_status), read as the queue table reads
        it: while it is gone nothing is preempted; while its FIFO schedules,
        that holds the app back first."""
        door = self._door
        with door._lock, door._clock:
            now, wall = door._clock.now(), time.time()
            if app_id in door._engine.apps:
                out = explain_app(door._engine, app_id)
            elif (rec := door.finished.get(app_id)) is not None:
                out = explain_finished(rec, now, door.dims)
            elif (placed := door.placements.get(app_id)) is not None and placed["rejected"] is not None:
                return explain_rejected({**placed, "rules": [dict(r) for r in placed["rules"]]}, door.dims)
            else:
                return None
            starved = out["queue_starvation"]
            if starved is not None:
                starved["since"] = wall - starved["for_s"]
            out["preempted_recently"] = [p for p in reversed(door.recorder.preemptions) if p["app"] == app_id]
        if starved is not None and gone(link):
            stand_still(starved, master_name(link))
        if link and link.get("in_fallback") and out["state"] not in ("finished", "rejected"):
            master = master_name(link)
            out["holds"].insert(0, {"code": "python_away", "message": f"the {master} is scheduling without "
                                    "Python (its FIFO fallback) since it lost the link: "
                                    + str(link.get("reason") or "no reason given"), "since": link.get("since")})
        return out

    # ------------------------------------------------- cluster and nodes
    def cluster(self) -> dict:
        """The cluster as Python sees it: capacity, nodes, in use."""
        door = self._door
        with door._lock:
            e = door._engine
            return {"capacity": e.cluster.to_dict(door.dims), "nodes": len(e.nodes),
                    "usage": e.root.usage.to_dict(door.dims), "share_rule": e.share_rule}

    def nodes(self) -> list[dict]:
        """Each node as the engine last heard of it: capacity, in use, free
        room, containers, and room held for a starved queue (the console)."""
        door = self._door
        with door._lock:
            dims = door.dims
            return [{"node": n.node_id, "host": n.host, "rack": n.rack, "capacity": n.capacity.to_dict(dims),
                     "used": n.used.to_dict(dims), "free": n.free.to_dict(dims), "containers": len(n.containers),
                     "held_for": sorted(n.held)}
                    for n in sorted(door._engine.nodes.values(), key=lambda n: n.node_id)]

    def share_rule(self) -> str:
        """The fair-share rule in force: "yarn" or "design" (docs/fair-shares.md)."""
        door = self._door
        with door._lock:
            return door._engine.share_rule

    def recent_preemptions(self) -> list[dict]:
        """Newest first."""
        door = self._door
        with door._lock:
            return list(reversed(door.recorder.preemptions))

    def market_accounts(self) -> set[str]:
        """The Dynamic Priority accounts this server's allocation file has:
        the children of its dynamic-priority queues (those the file declares
        and those made at run time). A market store shared with another
        serve may hold others; the console shows only these."""
        door = self._door
        with door._lock:
            return {c.name for p in door._engine.queues.values() if p.children
                    and p.policy.name == "dynamic-priority" for c in p.children}

    # ------------------------------------------------------------ what-if
    def dry_run(self, config) -> dict:
        """What ``config`` would do to the live demands, changing nothing
        (views.dry_run): each queue's shares, settings and whether preemption
        is due, before and after; the containers that would become
        preemptable; why the reload would be refused, if it would. The lock
        is held while the engine is forked (heartbeats wait that long;
        docs/admin.md has the figures), the rest runs outside it."""
        door = self._door
        with _dry_run.fork_hold(door._lock, door._engine):
            now = door._clock.now()
            copies = _dry_run.fork(door._engine)
            scope = preemption_scope(door._engine)
            preemption = door._engine.settings.preemption
        return _dry_run.dry_run(copies, now, config, scope, preemption, door.dims)

    @contextlib.contextmanager
    def _to_play(self, quantiles=forward.QUANTILES):
        """``with views._to_play() as (e, now, copies, times):`` one hold of
        the lock, as a dry run's, for what a forward play starts from: the
        engine (read only), its time, a Copier of it and the run times at
        each quantile; the plays go outside it."""
        door = self._door
        with _dry_run.fork_hold(door._lock, door._engine), door._clock:
            e = door._engine
            yield e, door._clock.now(), _dry_run.fork(e), \
                {q: forward.run_times(e, e.durations, q) for q in quantiles}

    def forecasts(self, horizon: float = 3600.0, arrivals: bool | None = None) -> dict:
        """Each app's start and finish, played forward from the live state
        (engine/forward.py; ``arrivals``: with or without the apps still to
        arrive; None: as the settings say). {"at": the engine's time they start from, "apps": app id ->
        Forecast}."""
        with self._to_play() as (e, now, copies, times):
            beat = e.settings.heartbeat_interval
        return {"at": now, "apps": forward.forecast(copies, times, now, horizon, beat, arrivals=arrivals)}

    def whatif(self, change, horizon: float = 600.0) -> dict:
        """Each app's forecast without ``change`` and with it (engine/whatif.py);
        nothing live changes."""
        with self._to_play() as (e, now, copies, times):
            queues = {a.app_id: a.queue.name for a in e.apps.values()}
            beat = e.settings.heartbeat_interval
        out = _whatif.whatif(copies, times, now, change, horizon, beat)
        return {**out, "at": now, "queues": queues, "heartbeat": beat}

    def counterfactual(self, app_id: str, within: float = 60.0, budget: float = 1.0) -> dict | None:
        """The smallest single change that would start a waiting app within
        ``within`` seconds (engine/whatif.py), tried for at most ``budget``
        seconds of CPU; None when none does."""
        with self._to_play((0.5,)) as (e, now, copies, times):
            if app_id not in e.apps:
                return None
            changes = _whatif.candidates(e, app_id)
            beat = e.settings.heartbeat_interval
        return _whatif.counterfactual(copies, times, now, app_id, changes, within, budget, beat)

    # ------------------------------------------------------- driver hints
    # For drivers that may leave out calls that change nothing (the simulator).
    def idle_heartbeat_is_noop(self) -> bool:
        return self._door._engine.idle_heartbeat_is_noop

    def has_pending(self, kind: str | None = None) -> bool:
        return self._door._engine.has_pending(kind)

    def acts_on_update(self) -> bool:
        """Whether an update pass may act with nothing new to apply: preempt,
        or let a policy charge and reweigh (Dynamic Priority)."""
        return self._door._engine.acts_on_update()

    def decisions_need_update(self) -> bool:
        return self._door._engine.decisions_need_update()
