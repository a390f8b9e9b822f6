"""A leaf queue below its share, read one way for everyone who shows it
(the console, ``/api/v1/queues``, explain, diff): which share, since when,
the timeout, and what preemption will do and when.

Everything here is read from the engine's own preemption unit
(``engine.preemption``): its clocks, when its next round may act for the
queue (``next_round``: "due" is that, never the since-clock, which runs on
across the rounds that serve the queue), and the containers that round
would choose as things stand (its ``choose``, run for that moment, which
changes nothing). Nothing is decided here.

While the master is gone nothing is preempted: ``stand_still`` says so for
a queue row and for explain alike, from the one reading of the link
(``views.link.link_state``).
"""

from __future__ import annotations

import math

from ..engine.preemption import at_least, compared
from ..resources import ZERO, Resource

#: How far past its due time a round is looked at: the first update pass after
#: the timeout (the unit acts once a queue is short for longer than it).
_JUST_AFTER = 0.001


def preemption_scope(engine):
    """(on, eligible): whether preemption may act at all, and for which leaf
    queues (a predicate; None: all); the engine's own answer, asked here
    only, so every view agrees on it."""
    return engine.preemption_scope()


def shares_compared(engine, queue) -> tuple[str, ...]:
    """The dimensions the queue's starvation is judged in (the preemption
    unit's ``compared``)."""
    return compared(engine, queue)


def below(engine, queue) -> list[str]:
    """The shares a leaf queue is below now, as the preemption unit judges
    them ("min_share", "fair_share"); [] at its shares or for a parent."""
    if queue.children:
        return []
    dims = compared(engine, queue)
    min_target, fair_target = engine.preemption.targets(queue)
    return [kind for kind, target in (("min_share", min_target), ("fair_share", fair_target))
            if not at_least(queue.usage, target, dims)]


def next_round(engine, queue, now: float, scope=None) -> dict:
    """When the preemption unit's next round may act for the queue: enabled
    (preemption may act for it at all), next_round_in_s (None: no timeout
    applies to its shortfall, or disabled) and due (the next update pass may
    act). Cheap: no victims are chosen (``queue_starvation`` does that)."""
    on, eligible = scope if scope is not None else preemption_scope(engine)
    enabled = on and (eligible is None or eligible(queue))
    out = {"enabled": enabled, "next_round_in_s": None, "due": False}
    if not enabled or queue.children:
        return out
    at = engine.preemption.next_round(queue)
    if at is not None:
        out["next_round_in_s"] = max(at, now) - now
        out["due"] = at <= now
    return out


def queue_starvation(engine, queue, scope=None) -> dict | None:
    """The starvation of a leaf queue now, in fields and words; None when it
    is at its min share and at its fair share threshold (or is a parent)."""
    kinds = below(engine, queue)
    if not kinds:
        return None
    pre = engine.preemption
    dims = compared(engine, queue)
    min_target, fair_target = pre.targets(queue)
    now = engine.clock.now()
    since_min, since_fair = pre.starvation(queue, now)
    kind = kinds[0]
    if kind == "min_share":
        for_s, timeout, target = since_min, queue.min_share_timeout, min_target
        share = f"its min share ({_amount(queue.min_share, engine, dims)}"
        share += f"; it asks for {_amount(queue.demand, engine, dims)})" if not at_least(
            queue.demand, queue.min_share, dims) else ")"
        timeout_words = "min share preemption timeout"
    else:
        for_s, timeout, target = since_fair, queue.fair_share_timeout, fair_target
        share = (f"{queue.fair_share_threshold:g} x its fair share "
                 f"({_amount(queue.fair_share * queue.fair_share_threshold, engine, dims)})")
        timeout_words = "fair share preemption timeout"
    d = engine.dims
    out = {
        "queue": queue.name, "kind": kind, "below": kinds,
        "usage": queue.usage.to_dict(d), "share": target.to_dict(d),
        "min_share": queue.min_share.to_dict(d), "fair_share": queue.fair_share.to_dict(d),
        "threshold": queue.fair_share_threshold,
        "since": now - for_s, "for_s": for_s, "timeout_s": None if math.isinf(timeout) else timeout,
    }
    outlook = out["preemption"] = _outlook(engine, queue, now, dims, scope)
    timeout_text = f"{timeout_words} {timeout:g} s" if not math.isinf(timeout) else f"no {timeout_words}"
    words = [f"queue {queue.name} has been below {share} for {for_s:.0f} s", timeout_text, outlook["message"]]
    if for_s > timeout and not outlook["due"] and outlook["last_round_s_ago"] is not None \
            and outlook["next_round_in_s"] is not None:
        # Its clock is past the timeout, the next round is not yet due: the
        # last round filled what it asked for then, and the timeout counts
        # again from when it fell short after that (no round twice at once).
        words.append(f"the last round for it, {outlook['last_round_s_ago']:.0f} s ago, met what it asked for "
                     "then; the next may act once it has been short again for the timeout")
    out["message"] = "; ".join(words)
    return out


def stand_still(starved: dict, master: str) -> dict:
    """An explain answer's ``queue_starvation`` while the master is gone:
    nothing is preempted, so no round is due and none is coming."""
    starved["preemption"].update(due=False, next_round_in_s=None, victims=[])
    what = "its min share" if starved["kind"] == "min_share" else "its fair share threshold"
    starved["message"] = (f"queue {starved['queue']} has been below {what} for {starved['for_s']:.0f} s;"
                          f" the {master} is gone (the link is lost): nothing is preempted while it is gone")
    return starved


def _outlook(engine, queue, now: float, dims, scope=None) -> dict:
    """What the preemption unit will do for the queue: off, nothing (no
    timeout applies), or when its next round may act, what is already on
    its way to the queue, and what that round would take."""
    pre = engine.preemption
    scope = scope if scope is not None else preemption_scope(engine)
    on, eligible = scope
    last = None if queue.preempted_at is None else now - queue.preempted_at
    out = {**next_round(engine, queue, now, scope), "victims": [], "asked_back": [],
           "held": ZERO.to_dict(engine.dims), "last_round_s_ago": last}
    if not out["enabled"]:
        out["message"] = ("preemption is off" if not on else
                          "preemption is off for it (its parent's policy does not preempt)")
        return out
    asked = [c for c in engine.containers.values() if c.preempt_time is not None and c.taken_for == queue.name]
    held = ZERO
    for node in engine.nodes.values():
        amount, until = node.held.get(queue.name, (ZERO, now))
        if until > now:
            held = held + amount
    out["asked_back"] = [{"container": c.container_id, "app": c.app_id, "queue": engine.apps[c.app_id].queue.name,
                          "node": c.node_id, "killed": c.kill_sent} for c in asked]
    out["held"] = held.to_dict(engine.dims)
    words = []
    if asked or held.any_positive():
        words.append(f"{len(asked)} container(s) are being taken back for it already"
                     + (f" and {_amount(held, engine, dims)} freed is held for it" if held.any_positive() else ""))
    if out["next_round_in_s"] is None:
        words.append("no preemption timeout applies to its shortfall, so no round acts for it")
        out["message"] = "; ".join(words)
        return out
    when = now + out["next_round_in_s"]
    due = out["due"]
    picks = [c for q, c, _reason, _words in pre.choose(when + _JUST_AFTER, eligible) if q is queue]
    out["victims"] = [{"container": c.container_id, "app": c.app_id, "queue": engine.apps[c.app_id].queue.name,
                       "node": c.node_id, "am": c.is_am, "resource": c.resource.to_dict(engine.dims)}
                      for c in picks]
    moment = ("at the next update pass" if due else f"at the next round (in about {when - now:.0f} s)")
    if picks:
        total = sum((c.resource for c in picks), ZERO)
        words.append(f"preemption will take {len(picks)} container(s) ({_amount(total, engine, dims)}) from "
                     f"{_sources(out['victims'])} {moment}" + ("" if due else ", as things stand"))
    elif not at_least(pre.coming(when).get(queue.name, ZERO), pre.wants(queue, when + _JUST_AFTER)[0], dims):
        words.append(f"preemption finds nothing to take for it {moment}: no other queue is over its fair "
                     "share and allows preemption")
    else:
        words.append("that covers what it lacks")
    out["message"] = "; ".join(words)
    return out


def _sources(victims: list[dict]) -> str:
    """'root.hog (app hog: 2, app hog2: 1)' for the victims of a round."""
    by_queue: dict[str, dict[str, int]] = {}
    for v in victims:
        apps = by_queue.setdefault(v["queue"], {})
        apps[v["app"]] = apps.get(v["app"], 0) + 1
    return ", ".join(f"{q} (" + ", ".join(f"app {a}: {n}" for a, n in apps.items()) + ")"
                     for q, apps in by_queue.items())


def _amount(r: Resource, engine, dims) -> str:
    if engine.kind == "yarn":
        return ", ".join(f"{r.memory_mb:.0f} MB" if d == "memory_mb" else f"{r.vcores:g} vcores" for d in dims)
    return ", ".join(f"{r.get(d):g} {d.replace('_', ' ')}" for d in dims)
