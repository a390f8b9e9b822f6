"""Preemption, a unit of its own (as YARN's FSPreemptionThread) that the
engine's update pass calls.

- A leaf queue is starved when it has been below its min share, or below
  its fair-share threshold, for longer than that timeout; it then wants
  back what it lacks (min share, or its whole fair share), capped at its
  demand.
- Victims come from queues over their fair share that allow preemption,
  newest container first (it has lost the least work, as the design has
  it), AMs last, never one that would push its queue below its fair share.
- Each victim is taken for one starved queue. Once it has finished, its
  resources are held on its node for that queue (YARN-6432) until the queue
  places a container there, stops asking, or the hold lapses: capacity
  taken for a starved queue does not go to a third. The queue may take it at
  any level its asks allow: delay scheduling would leave it idle while the
  queue waits for a better node, and the victims were chosen newest first,
  not by where the starved queue's data is.
- Nothing is taken twice for one shortfall: what a queue has asked back and
  not yet got (victims still running, capacity held for it) counts against
  what it wants.
"""

from __future__ import annotations

import math
from typing import Mapping, Protocol

from ..resources import ZERO, Resource
from .decisions import Preemption

#: Seconds the resources of a finished victim wait for the queue they were
#: taken for: long enough for its apps' delay-scheduling waits, short
#: enough that a queue that no longer wants them does not keep a node idle.
HOLD = 10.0

#: Seconds, once a round has landed, in which a queue it brought to its
#: share that falls short again is still in the same wait (its starvation
#: clock goes on): an AM the round placed asks for its tasks once it runs.
RELAPSE = 30.0


def at_least(a: Resource, b: Resource, dims: tuple[str, ...]) -> bool:
    """``a`` covers ``b`` in every dimension the comparing policy shares."""
    return all(a.get(d) >= b.get(d) for d in dims)


def compared(engine, queue) -> tuple[str, ...]:
    """The dimensions a queue's starvation is judged in: its parent policy's
    (YARN: memory, or memory and vcores for DRF), or on a slot cluster each
    kind of slot (a queue short of map slots is starved whatever its
    reduces)."""
    if engine.kind != "yarn":
        return engine.dims
    return queue.parent.policy.dimensions if queue.parent else ("memory_mb",)


class Registries(Protocol):
    """All the preemption unit reads of the engine: its registries and
    settings, never a method (it never calls back into the walk)."""

    kind: str  # "yarn" or "mrv1": how starvation is compared
    dims: tuple[str, ...]
    queues: Mapping  # full name -> Queue; its root's policy names the dimensions compared
    apps: Mapping  # app id -> App
    containers: Mapping  # container id -> Container
    nodes: Mapping  # node id -> Node
    settings: object  # preemption_warn_time
    ctx: object  # handed to a policy's ``preempts``


class Preemptor:
    """Decides which containers go back, and holds what they free for the
    queue they were taken for."""

    def __init__(self, engine: Registries) -> None:
        self.engine = engine

    def scope(self, on: bool):
        """Whether preemption may act, and for which leaf queues (a
        predicate; None: all): everywhere when the scheduler's preemption
        is ``on``, else under the queues whose policy preempts among their
        own children."""
        if on:
            return True, None
        ctx = self.engine.ctx
        under = {p.name for p in self.engine.queues.values() if p.children and p.policy.preempts(p, ctx)}
        if not under:
            return False, None
        return True, lambda queue: queue.parent is not None and queue.parent.name in under

    # ----------------------------------------------------------- starvation
    def starvation(self, queue, now: float) -> tuple[float, float]:
        """Seconds the queue has been below its min share and below its fair
        share threshold, counted across the rounds that serve it (what the
        operator reads; 0-ish when it is at its share)."""
        return (now - _first(queue.min_starved_since, queue.last_at_min_share),
                now - _first(queue.fair_starved_since, queue.last_at_fair_share))

    def targets(self, queue) -> tuple[Resource, Resource]:
        """What the queue is judged against: min(min share, demand) and
        min(threshold x fair share, demand)."""
        return (queue.min_share.min(queue.demand),
                (queue.fair_share * queue.fair_share_threshold).min(queue.demand))

    def track(self, now: float) -> None:
        """Each leaf queue's clocks at an update pass, preemption on or off.

        Two clocks per share. When preemption may act restarts whenever the
        pass finds the queue at its share (YARN's lastTimeAtMinShare): a
        round that fills the shortfall must not be followed by another the
        moment the queue asks for more. Since when it has been below does
        not restart for that: a queue the last round brought to its share
        that falls short again within ``settle_time`` is still in the same wait
        (an AM the round placed asks for its tasks only once it runs)."""
        e = self.engine
        for queue in e.queues.values():
            if queue.children:
                continue
            dims = compared(e, queue)
            min_target, fair_target = self.targets(queue)
            settled = queue.preempted_at is None or now >= queue.preempted_at + self.settle_time()
            if at_least(queue.usage, min_target, dims):
                queue.last_at_min_share = now
                if settled:
                    queue.min_starved_since = None
            elif queue.min_starved_since is None:
                queue.min_starved_since = queue.last_at_min_share
            if at_least(queue.usage, fair_target, dims):
                queue.last_at_fair_share = now
                if settled:
                    queue.fair_starved_since = None
            elif queue.fair_starved_since is None:
                queue.fair_starved_since = queue.last_at_fair_share

    def settle_time(self) -> float:
        """Seconds after a round in which the queue it served is not yet
        past that wait: its victims warned and killed, their room held for
        it, then RELAPSE for its apps to ask on the strength of it."""
        return self.engine.settings.preemption_warn_time + HOLD + RELAPSE

    def next_round(self, queue) -> float | None:
        """When a round may first act for the queue's shortfall as things
        stand (its timeout passed since it was last at that share), or None:
        it is short of nothing that has a timeout."""
        dims = compared(self.engine, queue)
        min_target, fair_target = self.targets(queue)
        at = []
        if queue.min_share_timeout < math.inf and not at_least(queue.usage, min_target, dims):
            at.append(queue.last_at_min_share + queue.min_share_timeout)
        fair_full = queue.fair_share.min(queue.demand)
        if queue.fair_share_timeout < math.inf and not at_least(queue.usage, fair_target, dims) \
                and (fair_full - queue.usage).clamp_zero().any_positive():
            at.append(queue.last_at_fair_share + queue.fair_share_timeout)
        return min(at) if at else None

    def wants(self, queue, now: float) -> tuple[Resource, str, str | None]:
        """What a starved leaf queue wants back now, why, and in words
        (reads the clocks ``track`` keeps; changes nothing)."""
        min_due = now - queue.last_at_min_share > queue.min_share_timeout
        if not min_due and now - queue.last_at_fair_share <= queue.fair_share_timeout:
            return ZERO, "fair_share", None  # the common case: at its shares, or not for long
        usage = queue.usage
        min_target = queue.min_share.min(queue.demand)
        since_min, since_fair = self.starvation(queue, now)
        want, reason, words = ZERO, "fair_share", []
        if min_due:
            want = (min_target - usage).clamp_zero()
            if want.any_positive():
                reason = "min_share"
                words.append(f"{queue.name} below its min share for {since_min:.0f} s "
                             f"(timeout {queue.min_share_timeout:g} s)")
        if now - queue.last_at_fair_share > queue.fair_share_timeout:
            fair_want = (queue.fair_share.min(queue.demand) - usage).clamp_zero()
            if fair_want.any_positive():
                words.append(f"{queue.name} below {queue.fair_share_threshold:g} x its fair share for "
                             f"{since_fair:.0f} s (timeout {queue.fair_share_timeout:g} s)")
                if not want.any_positive():
                    reason = "fair_share"
            want = want.max(fair_want)
        return want, reason, "; ".join(words) or None

    # ------------------------------------------------------------ the pass
    def coming(self, now: float) -> dict[str, Resource]:
        """Per starved queue: what has been asked back for it and not yet
        placed (victims still running, capacity held for it)."""
        e = self.engine
        coming: dict[str, Resource] = {}
        for c in e.containers.values():
            if c.preempt_time is not None and c.taken_for is not None:
                coming[c.taken_for] = coming.get(c.taken_for, ZERO) + c.resource
        for node in e.nodes.values():
            for name, (amount, until) in node.held.items():
                if until > now:
                    coming[name] = coming.get(name, ZERO) + amount
        return coming

    def choose(self, now: float, eligible=None) -> list[tuple]:
        """The round's choice at ``now``, changing nothing: (starved queue,
        container, reason, words) for each container it would take. The
        plan acts on it; explain asks it what the next round will take."""
        e = self.engine
        coming = self.coming(now)
        dims = e.dims if e.kind != "yarn" else e.queues["root"].policy.dimensions
        short: list[list] = []  # [queue, still wanted, reason, words]
        for queue in e.queues.values():
            if queue.children or (eligible is not None and not eligible(queue)):
                continue
            want, reason, words = self.wants(queue, now)
            rest = (want - coming.get(queue.name, ZERO)).clamp_zero()
            if any(rest.get(d) > 0 for d in dims):
                short.append([queue, rest, reason, words])
        picks: list[tuple] = []
        if not short:
            return picks
        for c in self.victims(eligible, lambda c: any(c.resource.get(d) > 0 and short[0][1].get(d) > 0
                                                      for d in dims)):
            target = short[0]
            picks.append((target[0], c, target[2], target[3]))
            target[1] = target[1] - c.resource
            if not any(target[1].get(d) > 0 for d in dims):
                short.pop(0)
                if not short:
                    break
        return picks

    def plan(self, now: float, eligible=None) -> list[Preemption]:
        """The containers to ask back now (and kills of those whose warning
        ran out). ``eligible``: which leaf queues may preempt and be
        preempted (None: all)."""
        e = self.engine
        out: list[Preemption] = []
        warn = e.settings.preemption_warn_time
        for c in e.containers.values():
            if c.preempt_time is not None and not c.kill_sent and now - c.preempt_time >= warn:
                e._touch_container(c.container_id)
                c.kill_sent = True
                out.append(Preemption(c.container_id, c.app_id, e.apps[c.app_id].queue.name,
                                      c.node_id, True, "warned"))
        self.track(now)
        for queue, c, reason, words in self.choose(now, eligible):
            app = e.apps[c.app_id]
            e._touch_container(c.container_id)
            c.preempt_time = now
            c.kill_sent = warn <= 0
            c.taken_for = queue.name
            queue.preempted_at = now
            app.preempted += 1
            app.touch()
            victim = app.queue
            c.preempt_why = (f"for {words or queue.name}: {victim.name} uses "
                             f"{_amount(victim.usage, e)} over its fair share of "
                             f"{_amount(victim.fair_share, e)} and allows preemption; its newest "
                             f"{'AM ' if c.is_am else ''}container, taken without pushing it below its fair share")
            out.append(Preemption(c.container_id, c.app_id, victim.name, c.node_id, c.kill_sent, reason))
        return out

    def victims(self, eligible=None, wanted=None):
        """Containers that may be taken back, best first: from queues over
        their fair share that allow it, newest first, AMs last; never one that
        would push its queue below its fair share. ``wanted``: whether the
        shortfall being met can use this one (a map slot is no use to a queue
        short of reduce slots)."""
        e = self.engine
        left: dict[str, Resource] = {}
        candidates = []
        for queue in e.queues.values():
            if queue.children or not queue.allow_preemption_from or (eligible is not None and not eligible(queue)):
                continue
            if not queue.usage.any_positive() or at_least(queue.fair_share, queue.usage,
                                                         ("memory_mb",) if e.kind == "yarn" else e.dims):
                continue
            left[queue.name] = queue.usage
            for app in queue.apps:
                candidates.extend(c for c in app.containers.values() if c.preempt_time is None)
        candidates.sort(key=lambda c: (c.is_am, -c.launch_time))
        for c in candidates:
            queue = e.apps[c.app_id].queue
            if wanted is not None and not wanted(c):
                continue
            after = left[queue.name] - c.resource
            dims = compared(e, queue) if e.kind == "yarn" else [d for d in e.dims if c.resource.get(d)]
            if not at_least(after, queue.fair_share, dims):
                continue
            left[queue.name] = after
            yield c

    # ------------------------------------------- what victims leave behind
    def released(self, c, node, now: float) -> None:
        """A victim finished: its resources wait on its node for the queue it
        was taken for."""
        amount, _until = node.held.get(c.taken_for, (ZERO, now))
        node.held[c.taken_for] = (amount + c.resource, now + HOLD)

    def held_on(self, node, now: float) -> Resource:
        """What the node holds for starved queues now (lapsed holds dropped)."""
        total = ZERO
        for name, (amount, until) in list(node.held.items()):
            queue = self.engine.queues.get(name)
            if until <= now or queue is None or queue.active_apps == 0:
                del node.held[name]
            else:
                total = total + amount
        return total

    def holders(self, node, now: float) -> list[str]:
        """The queues the node holds room for now, to be offered it first
        (lapsed holds, and holds of queues that ask for nothing, dropped)."""
        queues = self.engine.queues
        for name, (_amount, until) in list(node.held.items()):
            queue = queues.get(name)
            if until <= now or queue is None or queue.active_apps == 0:
                del node.held[name]
        return list(node.held)

    def took(self, node, name: str, amount: Resource) -> None:
        """The queue ``name`` placed ``amount`` in the room held for it."""
        held, until = node.held[name]
        left = (held - amount).clamp_zero()
        if left.any_positive():
            node.held[name] = (left, until)
        else:
            del node.held[name]


def _first(since: float | None, last_at: float) -> float:
    return last_at if since is None else since


def _amount(r: Resource, engine) -> str:
    if engine.kind == "yarn":
        return f"{r.memory_mb:.0f} MB"
    return ", ".join(f"{r.get(d):.0f} {d.replace('_', ' ')}" for d in engine.dims)
