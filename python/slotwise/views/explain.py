"""Why an app runs no more than it does now: the engine's own checks, read
without changing anything, as a list of holds in words and fields
(``GET /api/v1/apps/{id}/explain``, ``slotwise explain APP``).

Each hold is the check a heartbeat would fail for this app, in the order a
heartbeat meets them: runnable at all (running-app limits), anything to ask
for, the max shares of its queues, the AM limit, delay scheduling, a node with
room, and finally its turn among the others. Beside them: its standing in its
queue (what it runs against its fair share), its queue's starvation and what
preemption will do about it (``starvation``), for an app that has left,
its outcome (``finished``), and for one the placement policy rejected, why. ``as_text`` is what the CLI prints.
"""

from __future__ import annotations

import math

from ..engine import NODE_LOCAL, OFF_SWITCH, RACK_LOCAL, App
from ..engine.preemption import compared
from ..finished import outcome
from ..resources import ZERO, Resource
from .starvation import queue_starvation

LEVELS = {NODE_LOCAL: "node-local", RACK_LOCAL: "rack-local", OFF_SWITCH: "off-switch"}


def explain_app(engine, app_id: str) -> dict:
    """Raises KeyError for an app the engine does not know."""
    app: App = engine.apps[app_id]
    queue = app.queue
    pending = [r for r in app.requests.values() if r.num_containers > 0]
    holds: list[dict] = []

    def hold(code: str, message: str, **fields) -> None:
        holds.append({"code": code, "message": message, **fields})

    if not app.runnable:
        _running_limits(engine, app, hold)
    elif not pending:
        hold("nothing_asked", "it asks for no more containers now"
             + (f" (it runs {len(app.containers)})" if app.containers else ""))
    else:  # what each offer of a node would meet: a container (YARN), or each kind of slot (MRv1)
        for offer in engine.offers:
            key, local = offer.key, offer.local
            mine = [r for r in pending if offer.asked(r.resource)]
            if not mine:
                continue
            smallest = min((r.resource for r in mine), key=lambda r: tuple(r.get(d) for d in engine.dims))
            def per_kind(code, message, _kind=key.split("_")[0] + "s", _key=key, **fields):
                hold(code, f"{_kind}: {message}", slot=_key, **fields)
            say = per_kind if len(engine.offers) > 1 else hold
            before = len(holds)
            _max_shares(engine, app, smallest, say)
            _am_limit(engine, app, smallest, say)  # an MRv1 job has no AM: it says nothing there
            if local:
                _locality(engine, app, mine, say)
            _room(engine, app, smallest, say)
            if len(holds) == before:
                _turn(engine, app, say, key)
    if app.runnable and pending:
        # What the policies say of it: its queue's of the app (Hopper: its work
        # left and allocation), those above of each queue (Dynamic Priority:
        # the budget and rate).
        chain = [(queue, app)] + [(p.parent, p) for p in queue.ancestors() if p.parent is not None]
        for parent, child in chain:
            note = parent.policy.explain_child(parent, child, engine.ctx)
            if note:
                hold("policy", note, policy=parent.policy.name, queue=child.name if child is not app else queue.name)
    state = ("waiting to run" if not app.runnable else "running" if app.containers
             else "pending" if pending else "idle")
    return {
        "id": app.app_id, "name": app.app_name, "user": app.user, "queue": queue.name, "state": state,
        "running_containers": len(app.containers),
        "pending_containers": sum(r.num_containers for r in pending),
        "usage": app.usage.to_dict(engine.dims), "fair_share": app.fair_share.to_dict(engine.dims),
        "holds": holds,
        "standing": _standing(engine, app, pending, holds),
        "queue_starvation": queue_starvation(engine, queue),
        "outcome": None,
        "preempting": [{"container": c.container_id, "node": c.node_id, "killed": c.kill_sent,
                        "why": c.preempt_why} for c in app.containers.values() if c.preempt_time is not None],
    }


def explain_finished(rec: dict, now: float, dims) -> dict:
    """The answer for an app that has left (``finished.FinishedApps``): its
    outcome instead of holds."""
    zero = ZERO.to_dict(dims)
    return {"id": rec["id"], "name": rec["name"], "user": rec["user"], "queue": rec["queue"], "state": "finished",
            "running_containers": 0, "pending_containers": 0, "usage": zero, "fair_share": zero, "holds": [],
            "standing": None, "queue_starvation": None, "outcome": outcome(rec, now), "preempting": []}


def explain_rejected(rec: dict, dims) -> dict:
    """The answer for an app the placement policy rejected when the master
    asked where it goes (``StateViews.placement``'s record): never scheduled,
    so no holds; ``rejected`` says why, with the rules tried."""
    zero = ZERO.to_dict(dims)
    asked = f"it asked for queue {rec['asked']}; " if rec.get("asked") else ""
    return {"id": rec["app"], "name": None, "user": rec["user"], "queue": None, "state": "rejected",
            "running_containers": 0, "pending_containers": 0, "usage": zero, "fair_share": zero, "holds": [],
            "standing": None, "queue_starvation": None, "outcome": None, "preempting": [], "preempted_recently": [],
            "rejected": {"asked": rec.get("asked"), "reason": rec["rejected"], "rules": rec["rules"],
                         "message": f"the placement policy rejected it when it was submitted: {asked}"
                                    f"{rec['rejected']}"}}


def _standing(engine, app: App, pending, holds) -> dict:
    """Where the app stands in its queue: what it runs against its fair share
    there, over or under it, and what it still asks for and why that is not
    placed (the holds' codes)."""
    d = engine.dims
    queue = app.queue
    dims = queue.policy.dimensions if engine.kind == "yarn" else d  # what its queue's policy shares
    qdims = compared(engine, queue)  # what the queue's parent shares

    def position(usage: Resource, share: Resource, dims) -> str:
        if any(usage.get(k) > share.get(k) + 1e-9 for k in dims):
            return "over"
        return "under" if any(usage.get(k) < share.get(k) - 1e-9 for k in dims) else "at"

    mine, theirs = position(app.usage, app.fair_share, dims), position(queue.usage, queue.fair_share, qdims)
    asked = sum((r.resource * r.num_containers for r in pending), ZERO)
    count = sum(r.num_containers for r in pending)
    why = [h["code"] for h in holds if h["code"] != "policy"]
    gap = (app.usage - app.fair_share) if mine == "over" else (app.fair_share - app.usage)
    runs = (f"it runs {len(app.containers)} container(s) ({_amount(app.usage, d)})" if app.containers
            else "it runs nothing")
    words = [f"{runs} against a fair share of {_amount(app.fair_share, dims)} in {queue.name}: "
             + ("at it" if mine == "at" else f"{mine} it by {_amount(gap.clamp_zero(), dims)}"),
             f"queue {queue.name} uses {_amount(queue.usage, qdims)} of its fair share of "
             f"{_amount(queue.fair_share, qdims)} ({theirs})"]
    if count:
        short = list(dict.fromkeys(_SHORT.get(c, c) for c in why))
        words.append(f"it asks for {count} more ({_amount(asked, d)})"
                     + (f", not placed: {', '.join(short)}" if short else ""))
    return {"running_containers": len(app.containers), "usage": app.usage.to_dict(d),
            "fair_share": app.fair_share.to_dict(d), "position": mine, "queue": queue.name,
            "queue_usage": queue.usage.to_dict(d), "queue_fair_share": queue.fair_share.to_dict(d),
            "queue_position": theirs, "asks": {"containers": count, "resource": asked.to_dict(d)},
            "not_placed_because": why, "message": "; ".join(words)}


#: Each hold in a few words, for the standing's summary (the holds say it in full).
_SHORT = {"user_max_running_apps": "a running-app limit", "queue_max_running_apps": "a running-app limit",
          "admission": "admitted at the next update pass", "queue_at_max_share": "a queue at its max share",
          "max_am_share": "the AM limit (maxAMShare)", "locality_wait": "delay scheduling",
          "no_node_with_room": "no node has room", "no_nodes": "no nodes", "waiting_turn": "its turn",
          "python_away": "the ResourceManager schedules without Python"}


def _running_limits(engine, app: App, hold) -> None:
    """Which running-app limits hold the app back. Whether one does is the
    limits unit's own answer (``engine.limits.may_run``, with its counts);
    the limits named are those at their maximum now."""
    limits = engine.limits
    if limits.may_run(app):  # room opened since the last update pass, which admits it
        hold("admission", "it is admitted at the next update pass (a running-app limit had no room)")
        return
    limit = limits.config.user_max_apps(app.user)
    running = limits.user_running.get(app.user, 0)
    if limit is not None and running >= limit:
        hold("user_max_running_apps", f"user {app.user} already runs {running} app(s), the most it may "
             f"(maxRunningApps {limit})", user=app.user, running=running, limit=limit)
    for p in app.queue.ancestors():
        if p.running_apps >= p.max_running_apps:
            hold("queue_max_running_apps", f"queue {p.name} already runs {p.running_apps} app(s), the most it may "
                 f"(maxRunningApps {p.max_running_apps:g})", queue=p.name, running=p.running_apps,
                 limit=p.max_running_apps)


def _max_shares(engine, app: App, smallest: Resource, hold) -> None:
    """Whether the max shares above the app leave no room for its smallest
    ask is the walk's own check (``Queue.fits``, AM limit aside); the queues
    named are those the ask would take past their max share."""
    if app.queue.fits(smallest, False, engine.cluster):
        return
    d = engine.dims
    for p in app.queue.ancestors():
        u, cap = p.usage, p.max_share
        if not (u + smallest).fits_in(cap):
            hold("queue_at_max_share", f"queue {p.name} uses {_amount(u, d)} of its max share {_amount(cap, d)}: "
                 f"no room for another {_amount(smallest, d)}", queue=p.name, usage=u.to_dict(d),
                 max_share=_finite(cap, d), request=smallest.to_dict(d))


def _am_limit(engine, app: App, smallest: Resource, hold) -> None:
    if app.has_am or app.containers or app.unmanaged:
        return
    queue = app.queue
    limit = queue.am_limit(smallest, engine.cluster)
    if limit is None:
        return
    hold("max_am_share", f"its AM would take queue {queue.name}'s AMs to "
         f"{queue.am_usage.memory_mb + smallest.memory_mb:.0f} MB, over maxAMShare {queue.max_am_share:g} "
         f"x its fair share = {limit.memory_mb:.0f} MB", queue=queue.name,
         am_usage=queue.am_usage.to_dict(), limit=limit.to_dict())


def _locality(engine, app: App, pending, hold) -> None:
    if not any(r.has_locality and r.relax_locality for r in pending) or app.want_anywhere:
        return
    level = app.allowed_level()
    if level == OFF_SWITCH:
        return
    fields = {"level": LEVELS[level], "hosts": sorted(app.want_hosts)[:10], "racks": sorted(app.want_racks)[:10]}
    done, need, unit = app.delay.progress(app)
    if unit == "offers":
        hold("locality_wait", f"it waits for a {LEVELS[level]} container: passed over {done} "
             f"time(s) of the {need:.0f} before it may go further", missed=done, needed=need, **fields)
        return
    why = getattr(app.delay, "why", None)
    if why is not None:  # a queue's locality target (engine/target.py)
        fields["tuned"] = why()
        k = app.delay.spread(app)
        on = f"its data on {k} nodes; " if k > 1 else ""
        hold("locality_wait", f"waiting for locality: {done:.1f} s of {need:.1f} s ({on}{why()}), "
             f"for a {LEVELS[level]} container", waited=done, wait=need, **fields)
        return
    hold("locality_wait", f"it waits for a {LEVELS[level]} container (delay scheduling): waited "
         f"{done:.1f} s of {need:g} s before it may run further from its data",
         waited=done, wait=need, **fields)


def _room(engine, app: App, smallest: Resource, hold) -> None:
    """Whether a node has room for the app's smallest ask, as a heartbeat
    counts room: the node's free resources (``Node.free``) less what it
    holds for another starved queue (``Preemptor.held_on``, which drops
    lapsed holds as the next heartbeat would; what it holds for the app's
    own queue is the app's to take)."""
    best = ZERO
    d = engine.dims
    now = engine.clock.now()
    mine = app.queue.name
    for node in engine.nodes.values():
        free = node.free
        if node.held:
            held = engine.preemption.held_on(node, now)
            own = node.held.get(mine)
            free = free - (held - own[0] if own is not None else held).clamp_zero()
        free = free.clamp_zero()
        if smallest.fits_in(free):
            return
        if tuple(free.get(k) for k in d) > tuple(best.get(k) for k in d):
            best = free
    if not engine.nodes:
        hold("no_nodes", "the cluster has no nodes")
        return
    hold("no_node_with_room", f"no node has {_amount(smallest, d)} free now (the most free on one node: "
         f"{_amount(best, d)})", request=smallest.to_dict(d), most_free=best.to_dict(d))


def _turn(engine, app: App, hold, key: str = "memory_mb") -> None:
    queue = app.queue
    d = engine.dims
    fields = dict(queue=queue.name, queue_usage=queue.usage.to_dict(d), queue_fair_share=queue.fair_share.to_dict(d),
                  app_usage=app.usage.to_dict(d), app_fair_share=app.fair_share.to_dict(d))
    shares = f"queue {queue.name} uses {_amount(queue.usage, d)} of a fair share of {_amount(queue.fair_share, d)}"
    if queue.usage.get(key) < queue.fair_share.get(key):
        hold("waiting_turn", f"it is among the first offered the next free container ({shares}); it waits for "
             "a node with room to report in", **fields)
        return
    hold("waiting_turn", f"it waits its turn ({shares}): free containers go first to queues further below "
         "their share", **fields)


_UNITS = {"memory_mb": "MB", "vcores": "vcores", "map_slots": "map slots", "reduce_slots": "reduce slots"}


def _amount(r: Resource, dims=("memory_mb", "vcores")) -> str:
    if any(math.isinf(r.get(d)) for d in dims):
        return "unlimited"
    return ", ".join(f"{r.get(d):.0f} MB" if d == "memory_mb" else f"{r.get(d):g} {_UNITS[d]}" for d in dims)


def _finite(r: Resource, dims) -> dict:
    return {k: (None if math.isinf(v) else v) for k, v in r.to_dict(dims).items()}


def as_text(out: dict) -> str:
    """An explain answer as ``slotwise explain`` prints it."""
    name = f" ({out['name']})" if out.get("name") else ""
    state = out["state"]
    if state == "finished":
        end = (out.get("outcome") or {}).get("final_state")
        detail = f": {end}" if end else ""
    elif state == "running":
        detail = f"; {out['running_containers']} container(s) running, {out['pending_containers']} more asked for"
    else:
        detail = f"; {out['pending_containers']} container(s) asked for"
    if state == "rejected":
        return f"{out['id']}, user {out['user']}: rejected at placement, never scheduled\n{out['rejected']['message']}"
    lines = [f"{out['id']}{name}, user {out['user']}, queue {out['queue']}: {state}{detail}"]
    if out.get("outcome"):
        lines.append(out["outcome"]["message"])
    if out.get("standing"):
        lines.append(f"standing: {out['standing']['message']}")
    if out.get("forecast"):
        lines.append(f"forecast: {out['forecast']}")
    if out.get("counterfactual"):
        lines.append(f"to start within a minute: {out['counterfactual']}")
    if out.get("queue_starvation"):
        lines.append(out["queue_starvation"]["message"])
    if out["holds"]:
        lines.append("held back by:")
        lines += [f"  - {h['message']}" for h in out["holds"]]
    elif state != "finished":
        lines.append("nothing holds it back")
    taken = out.get("preempting", []) + out.get("preempted_recently", [])
    if taken:
        lines.append("preemptions of its containers:")
        lines += [f"  - {p['container']}: {p.get('why') or p.get('reason')}" for p in taken]
    return "\n".join(lines)
