"""The engine's state as plain rows, for the CLI, the web layer and the
metrics (read only)."""

from __future__ import annotations

from .preemption import at_least, compared

_LEVEL_NAMES = ("node_local", "rack_local", "off_switch")


def queue_rows(engine) -> list[dict]:
    """One row per queue, root first."""
    now = engine.clock.now()
    shown = engine.dims
    rows = []
    for p in engine.root.walk():
        since_min, since_fair = engine.preemption.starvation(p, now)
        dims = compared(engine, p)  # as preemption compares
        rows.append({
            "queue": p.name,
            "parent": p.parent.name if p.parent else None,
            "policy": p.policy.name,
            "weight": p.weight,
            "min_share": p.min_share.to_dict(shown),
            "max_share": p.max_share.to_dict(shown),
            "demand": p.demand.to_dict(shown),
            "usage": p.usage.to_dict(shown),
            "fair_share": p.fair_share.to_dict(shown),
            "steady_fair_share": p.steady_fair_share.to_dict(shown),
            "running_apps": p.running_apps,
            "apps": sum(1 for _ in p.descendant_apps()),
            "dynamic": p.dynamic,
            "min_share_starved_for": since_min if p.min_share.any_positive() else 0.0,
            "fair_share_starved_for": since_fair,
            # Below now: usage under min(min share, demand), resp. min(threshold x fair share, demand).
            "below_min_share": not at_least(p.usage, p.min_share.min(p.demand), dims),
            "below_fair_share": not at_least(p.usage, (p.fair_share * p.fair_share_threshold).min(p.demand), dims),
            **_locality(engine, p, now),
        })
    return rows


def _locality(engine, p, now: float) -> dict:
    """A queue's locality target, the data-local fraction its launches
    reached in the last ten minutes (engine/target.py) and the waits in force
    (its own tuned ones, or the engine's; a count rule's are not times)."""
    rule = p.delay if p.delay is not None else engine.delay
    t1, t2 = getattr(rule, "t1", None), getattr(rule, "t2", None)
    return {"locality_target": p.locality_target, "data_local": None if p.children else p.launches.data_local(now),
            "locality_waits": None if p.children or t1 is None else {"node": t1, "rack": t2},
            "locality_tuned": p.delay is not None}


def app_rows(engine) -> list[dict]:
    """One row per app, in submit order."""
    dims = engine.dims
    rows = []
    for app in sorted(engine.apps.values(), key=lambda a: (a.start_time, a.app_id)):
        rows.append({
            "id": app.app_id, "name": app.app_name, "user": app.user, "queue": app.queue.name,
            "priority": app.priority,
            "weight": app.weight, "submit_time": app.start_time, "runnable": app.runnable,
            "running_containers": len(app.containers), "usage": app.usage.to_dict(dims),
            "demand": (app.usage + app.pending).to_dict(dims), "fair_share": app.fair_share.to_dict(dims),
            "locality_level": _LEVEL_NAMES[app.locality_level], "locality_wait": app.locality_wait,
        })
    return rows
