"""What a change would do (issue 41): the live state played forward twice,
without the change and with it, on two copies of the engine; nothing live
changes.

A change is one of: a new allocation file; one queue setting
(``QUEUE.weight=3``, ``.minResources``, ``.maxRunningApps``,
``.localityTarget``, ``.maxAMShare``), read as the allocation file reads it;
an app moved to another queue; an app's priority. ``parse_set`` and
``Change`` check a change against the live state before anything is played:
a bad one is one clear line (the queue or app that does not exist, the value
that does not parse), and nothing is played.

Both plays preempt as the live engine would (a change of min share or
weight often acts through preemption), and say how many containers each
took back from each queue.
"""

from __future__ import annotations

import copy
import dataclasses

from ..config import values as v
from . import forward

#: The queue settings ``--set`` may change: the element's name -> (the
#: QueueConfig field, the allocation file's own parser of its value).
SETTABLE = {
    "weight": ("weight", v.weight),
    "minResources": ("min_resources", v.min_resource),
    "maxRunningApps": ("max_running_apps", v.app_count),
    "maxAMShare": ("max_am_share", v.am_share),
    "localityTarget": ("locality_target", v.fraction),
}


@dataclasses.dataclass(frozen=True)
class Change:
    """One change: ``kind`` "allocations" (``value``: an AllocationConfig),
    "set" (``target`` a queue, ``field`` its QueueConfig field, ``value``),
    "move" (``target`` an app, ``value`` a queue) or "priority" (``target``
    an app, ``value`` an int)."""

    kind: str
    target: str = ""
    field: str = ""
    value: object = None
    said: str = ""  # the change as the operator wrote it

    def apply(self, e) -> None:
        """Make the change on the copy ``e`` (ValueError: it cannot be made)."""
        if self.kind == "allocations":
            e.set_config(self.value)
        elif self.kind == "set":
            config = copy.deepcopy(e.config)
            q = next((q for q in config.root.walk() if q.name == self.target), None)
            if q is None:
                raise ValueError(f"{self.said}: no queue {self.target} in the allocation file")
            setattr(q, self.field, self.value)
            e.set_config(config)
        elif self.kind == "move":
            e.move_app(self.target, self.value)
        elif self.kind == "priority":
            e.set_app_priority(self.target, self.value)
        else:
            raise ValueError(f"unknown change {self.kind}")


def parse_set(text: str) -> Change:
    """``QUEUE.SETTING=VALUE`` (e.g. ``root.adhoc.weight=3``) as a Change;
    ValueError naming what is wrong."""
    name, eq, value = text.partition("=")
    queue, dot, setting = name.rpartition(".")
    if not eq or not dot or not queue:
        raise ValueError(f"--set {text}: expected QUEUE.SETTING=VALUE, e.g. root.adhoc.weight=3")
    if setting not in SETTABLE:
        raise ValueError(f"--set {text}: {setting} cannot be set (settable: {', '.join(SETTABLE)})")
    field, parse = SETTABLE[setting]
    said = f"--set {text}"
    try:
        parsed = parse(value.strip())
    except v.Adjusted as e:  # the file's reader takes such a value adjusted, with a warning: so does this
        parsed, said = e.value, f"{said} ({setting} {e})"
    except (ValueError, TypeError) as e:
        raise ValueError(f"--set {text}: {setting} {value.strip()!r}: {e}") from None
    queue = queue if queue == "root" or queue.startswith("root.") else f"root.{queue}"
    return Change("set", queue, field, getattr(parsed, "value", parsed), said)


#: How many points each queue's share over the horizon is sampled at.
TRACE_POINTS = 120
#: CPU seconds a what-if's plays (six: three quantiles, without and with
#: the change) may take in all; what a play had not reached says so.
BUDGET = 2.0


def whatif(copies, times: dict, now: float, change: Change, horizon: float = 3600.0,
           heartbeat: float | None = None, budget: float | None = BUDGET) -> dict:
    """Each app's forecast without ``change`` and with it, from two copies
    of the live engine as it was at ``now`` (``views.dry_run.Copier``):
    {"apps": app id -> {"before": Forecast, "after": Forecast}, "traces":
    {"before": Trace, "after": Trace} (each leaf queue's share over the
    horizon, in the median plays), "preemptions": {"before": {queue: n},
    "after": {queue: n}} (the containers the median plays took back, by the
    queue of the app they were taken from), "error": why the change cannot
    be made (then nothing is played)}. The plays preempt as the live engine
    would."""
    after = copies.engine(now, preemption=True)
    try:
        change.apply(after)
    except (ValueError, KeyError) as e:
        return {"apps": {}, "traces": None, "preemptions": None,
                "error": str(e).strip("'") or f"{change.said}: cannot be made"}
    qs = sorted(times)
    mid = len(qs) // 2
    each = None if budget is None else budget / (2 * len(qs))
    traces = {"before": forward.Trace(max(horizon / TRACE_POINTS, heartbeat or 0.0)),
              "after": forward.Trace(max(horizon / TRACE_POINTS, heartbeat or 0.0))}
    before_plays = [forward.play(copies.engine(now, preemption=True), times[q], now, horizon, heartbeat,
                                 budget=each, trace=traces["before"] if k == mid else None)
                    for k, q in enumerate(qs)]
    after_plays = []
    for k, q in enumerate(qs):
        e = after if k == 0 else copies.engine(now, preemption=True)
        if k:
            change.apply(e)
        after_plays.append(forward.play(e, times[q], now, horizon, heartbeat, budget=each,
                                        trace=traces["after"] if k == mid else None))

    def combined(plays):
        low, mid, high = plays[0], plays[len(plays) // 2], plays[-1]
        return {a: forward.Forecast(o, low[a], high[a]) for a, o in mid.items()}

    b, a = combined(before_plays), combined(after_plays)
    return {"apps": {app_id: {"before": b[app_id], "after": a.get(app_id)} for app_id in b}, "error": None,
            "traces": traces,
            "preemptions": {"before": dict(before_plays[mid].preemptions), "after": dict(after_plays[mid].preemptions)}}


def candidates(live, app_id: str) -> list[Change]:
    """The single changes a counterfactual tries for a waiting app, the
    smallest first: its priority one up, its queue's weight doubled, then
    moved to each other leaf queue (the least used first, at most five), its
    queue's weight four times. Read from the live engine under the lock."""
    app = live.apps.get(app_id)
    if app is None:
        return []
    q = app.queue
    out = []
    if live.kind == "yarn":
        out.append(Change("priority", app_id, value=app.priority + 1,
                          said=f"priority {app.priority + 1} for {app_id}"))
    out.append(Change("set", q.name, "weight", q.weight * 2, f"weight {q.weight * 2:g} on {q.name}"))
    others = sorted((x for x in live.queues.values() if not x.children and x is not q and x.name != "root"),
                    key=lambda x: (x.usage.memory_mb + x.usage.map_slots, x.name))[:5]
    out += [Change("move", app_id, value=x.name, said=f"a move to {x.name}") for x in others]
    out.append(Change("set", q.name, "weight", q.weight * 4, f"weight {q.weight * 4:g} on {q.name}"))
    return out


def counterfactual(copies, times: dict, now: float, app_id: str, changes: list[Change], within: float = 60.0,
                   budget: float = 1.0, heartbeat: float | None = None, horizon: float = 3600.0,
                   clock=None) -> dict | None:
    """The first of ``changes`` (smallest first) under which ``app_id``
    starts within ``within`` seconds, played with the median run times, as
    long as ``budget`` seconds of ``clock`` (process time) last: {"change",
    "start_in_s", "start_in_s_without", "tried"}; None when none does (or the
    app starts that soon anyway). Every play stops once the app has started
    (its start is all that is asked), a change's at ``within``; the play
    without a change takes at most half the budget (explain asks this on
    a read, so it is bounded whatever the cluster)."""
    import time as _time

    clock = clock or _time.process_time
    started = clock()
    mid = times[sorted(times)[len(times) // 2]]
    base = forward.play(copies.engine(now, preemption=True), mid, now, horizon, heartbeat, budget=budget / 2,
                        until_started=app_id).get(app_id)
    if base is None or (base.start is not None and base.start - now <= within):
        return None
    tried = 0
    for c in changes:
        if clock() - started > budget:
            break
        e = copies.engine(now, preemption=True)
        try:
            c.apply(e)
        except (ValueError, KeyError):
            continue
        tried += 1
        left = budget - (clock() - started)
        o = forward.play(e, mid, now, within, heartbeat, budget=max(0.0, left), until_started=app_id).get(app_id)
        if o is not None and o.start is not None and o.start - now <= within:
            return {"change": c.said, "start_in_s": round(max(0.0, o.start - now), 1),
                    "start_in_s_without": None if base.start is None else round(base.start - now, 1),
                    "tried": tried}
    return None
