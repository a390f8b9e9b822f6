"""Why an app runs no more than it does now: the engine's own checks, read
without changing anything, as a list of holds in words and fields
(``GET /api/v1/apps/{id}/explain``, ``slotwise explain APP``).

Each hold is the check a heartbeat would fail for this app, in the order a
heartbeat meets them: runnable at all (running-app limits), anything to ask
for, the max shares of its queues, the AM limit, delay scheduling, a node with
room, and finally its turn among the others.
"""

from __future__ import annotations

import math

from .engine import NODE_LOCAL, OFF_SWITCH, RACK_LOCAL, App
from .resources import ZERO, Resource

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
        for key, local in engine.offers:
            mine = pending if key == "memory_mb" else [r for r in pending if r.resource.get(key) > 0]
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
            _room(engine, smallest, say)
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
    state = ("waiting to run" if not app.runnable else "pending" if pending
             else "running" if app.containers else "idle")
    return {
        "id": app.app_id, "name": app.app_name, "user": app.user, "queue": queue.name, "state": state,
        "running_containers": len(app.containers),
        "pending_containers": sum(r.num_containers for r in pending),
        "usage": app.usage.to_dict(engine.dims), "fair_share": app.fair_share.to_dict(engine.dims),
        "holds": holds,
        "preempting": [{"container": c.container_id, "node": c.node_id, "killed": c.kill_sent,
                        "why": c.preempt_why} for c in app.containers.values() if c.preempt_time is not None],
    }


def _running_limits(engine, app: App, hold) -> None:
    limit = engine.config.user_max_apps(app.user)
    running = engine.user_running.get(app.user, 0)
    full = False
    if limit is not None and running >= limit:
        full = True
        hold("user_max_running_apps", f"user {app.user} already runs {running} app(s), the most it may "
             f"(maxRunningApps {limit})", user=app.user, running=running, limit=limit)
    for p in app.queue.ancestors():
        if p.running_apps >= p.max_running_apps:
            full = True
            hold("queue_max_running_apps", f"queue {p.name} already runs {p.running_apps} app(s), the most it may "
                 f"(maxRunningApps {p.max_running_apps:g})", queue=p.name, running=p.running_apps,
                 limit=p.max_running_apps)
    if not full:  # room opened since the last update pass, which admits it
        hold("admission", "it is admitted at the next update pass (a running-app limit had no room)")


def _max_shares(engine, app: App, smallest: Resource, hold) -> None:
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
    hold("locality_wait", f"it waits for a {LEVELS[level]} container (delay scheduling): waited "
         f"{done:.1f} s of {need:g} s before it may run further from its data",
         waited=done, wait=need, **fields)


def _room(engine, smallest: Resource, hold) -> None:
    best = ZERO
    d = engine.dims
    for node in engine.nodes.values():
        free = (node.capacity - node.used).clamp_zero()
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
    _since_min, since_fair = engine.starvation(queue)
    fields = dict(queue=queue.name, queue_usage=queue.usage.to_dict(d), queue_fair_share=queue.fair_share.to_dict(d),
                  app_usage=app.usage.to_dict(d), app_fair_share=app.fair_share.to_dict(d))
    shares = f"queue {queue.name} uses {_amount(queue.usage, d)} of a fair share of {_amount(queue.fair_share, d)}"
    if queue.usage.get(key) < queue.fair_share.get(key):
        hold("waiting_turn", f"it is among the first offered the next free container ({shares}); it waits for "
             "a node with room to report in", **fields)
        return
    late = (f"; below its share for {since_fair:.0f} s, preemption after {queue.fair_share_timeout:g} s"
            if 0 < since_fair and not math.isinf(queue.fair_share_timeout) else "")
    hold("waiting_turn", f"it waits its turn ({shares}): free containers go first to queues further below "
         f"their share{late}", **fields)


_UNITS = {"memory_mb": "MB", "vcores": "vcores", "map_slots": "map slots", "reduce_slots": "reduce slots"}


def _amount(r: Resource, dims=("memory_mb", "vcores")) -> str:
    if any(math.isinf(r.get(d)) for d in dims):
        return "unlimited"
    return ", ".join(f"{r.get(d):.0f} MB" if d == "memory_mb" else f"{r.get(d):g} {_UNITS[d]}" for d in dims)


def _finite(r: Resource, dims) -> dict:
    return {k: (None if math.isinf(v) else v) for k, v in r.to_dict(dims).items()}
