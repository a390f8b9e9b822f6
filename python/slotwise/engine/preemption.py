"""Preemption, a unit of its own (as YARN's FSPreemptionThread) that the
engine's update pass calls.

- A leaf pool is starved when it has been below its min share, or below
  its fair-share threshold, for longer than that timeout; it then wants
  back what it lacks (min share, or its whole fair share), capped at its
  demand.
- Victims come from pools over their fair share that allow preemption,
  newest container first (it has lost the least work, as the design has
  it), AMs last, never one that would push its pool below its fair share.
- Each victim is taken for one starved pool. Once it has finished, its
  resources are held on its node for that pool (YARN-6432) until the pool
  places a container there, stops asking, or the hold lapses: capacity
  taken for a starved pool does not go to a third. The pool may take it at
  any level its asks allow: delay scheduling would leave it idle while the
  pool waits for a better node, and the victims were chosen newest first,
  not by where the starved pool's data is.
- Nothing is taken twice for one shortfall: what a pool has asked back and
  not yet got (victims still running, capacity held for it) counts against
  what it wants.
"""

from __future__ import annotations

from ..resources import ZERO, Resource
from .decisions import Preemption

#: Seconds the resources of a finished victim wait for the pool they were
#: taken for: long enough for its apps' delay-scheduling waits, short
#: enough that a pool that no longer wants them does not keep a node idle.
HOLD = 10.0


def at_least(a: Resource, b: Resource, dims: tuple[str, ...]) -> bool:
    """``a`` covers ``b`` in every dimension the comparing policy shares."""
    return all(a.get(d) >= b.get(d) for d in dims)


def compared(engine, pool) -> tuple[str, ...]:
    """The dimensions a pool's starvation is judged in: its parent policy's
    (YARN: memory, or memory and vcores for DRF), or on a slot cluster each
    kind of slot (a pool short of map slots is starved whatever its
    reduces)."""
    if engine.kind != "yarn":
        return engine.dims
    return pool.parent.policy.dimensions if pool.parent else ("memory_mb",)


class Preemptor:
    """Decides which containers go back, and holds what they free for the
    pool they were taken for."""

    def __init__(self, engine) -> None:
        self.engine = engine

    # ----------------------------------------------------------- starvation
    def starvation(self, pool, now: float) -> tuple[float, float]:
        """Seconds since the pool was last at its min share and at its fair
        share threshold: what the preemption timeouts are compared with."""
        return now - pool.last_at_min_share, now - pool.last_at_fair_share

    def _wants(self, pool, now: float) -> tuple[Resource, str, str | None]:
        """What a starved leaf pool wants back now, why, and in words."""
        dims = compared(self.engine, pool)
        usage = pool.usage
        min_target = pool.min_share.min(pool.demand)
        if at_least(usage, min_target, dims):
            pool.last_at_min_share = now
        fair_target = (pool.fair_share * pool.fair_share_threshold).min(pool.demand)
        if at_least(usage, fair_target, dims):
            pool.last_at_fair_share = now
        want, reason, words = ZERO, "fair_share", []
        if now - pool.last_at_min_share > pool.min_share_timeout:
            want = (min_target - usage).clamp_zero()
            if want.any_positive():
                reason = "min_share"
                words.append(f"{pool.name} below its min share for {now - pool.last_at_min_share:.0f} s "
                             f"(timeout {pool.min_share_timeout:g} s)")
        if now - pool.last_at_fair_share > pool.fair_share_timeout:
            fair_want = (pool.fair_share.min(pool.demand) - usage).clamp_zero()
            if fair_want.any_positive():
                words.append(f"{pool.name} below {pool.fair_share_threshold:g} x its fair share for "
                             f"{now - pool.last_at_fair_share:.0f} s (timeout {pool.fair_share_timeout:g} s)")
                if not want.any_positive():
                    reason = "fair_share"
            want = want.max(fair_want)
        return want, reason, "; ".join(words) or None

    # ------------------------------------------------------------ the pass
    def plan(self, now: float, eligible=None) -> list[Preemption]:
        """The containers to ask back now (and kills of those whose warning
        ran out). ``eligible``: which leaf pools may preempt and be
        preempted (None: all)."""
        e = self.engine
        out: list[Preemption] = []
        warn = e.settings.preemption_warn_time
        coming: dict[str, Resource] = {}  # per starved pool: asked back, not yet placed
        for c in e.containers.values():
            if c.preempt_time is None:
                continue
            if c.taken_for is not None:
                coming[c.taken_for] = coming.get(c.taken_for, ZERO) + c.resource
            if not c.kill_sent and now - c.preempt_time >= warn:
                c.kill_sent = True
                out.append(Preemption(c.container_id, c.app_id, e.apps[c.app_id].pool.name,
                                      c.node_id, True, "warned"))
        for node in e.nodes.values():
            for name, (amount, until) in node.held.items():
                if until > now:
                    coming[name] = coming.get(name, ZERO) + amount

        dims = e.dims if e.kind != "yarn" else e.root.policy.dimensions
        short: list[list] = []  # [pool, still wanted, reason, words]
        for pool in e.pools.values():
            if pool.children or (eligible is not None and not eligible(pool)):
                continue
            want, reason, words = self._wants(pool, now)
            pool.to_preempt = want
            rest = (want - coming.get(pool.name, ZERO)).clamp_zero()
            if any(rest.get(d) > 0 for d in dims):
                short.append([pool, rest, reason, words])
        if not short:
            return out
        for c in self.victims(eligible, lambda c: any(c.resource.get(d) > 0 and short[0][1].get(d) > 0
                                                      for d in dims)):
            target = short[0]
            pool, _rest, reason, words = target
            app = e.apps[c.app_id]
            c.preempt_time = now
            c.kill_sent = warn <= 0
            c.taken_for = pool.name
            victim = app.pool
            c.preempt_why = (f"for {words or pool.name}: {victim.name} uses "
                             f"{_amount(victim.usage, e)} over its fair share of "
                             f"{_amount(victim.fair_share, e)} and allows preemption; its newest "
                             f"{'AM ' if c.is_am else ''}container, taken without pushing it below its fair share")
            out.append(Preemption(c.container_id, c.app_id, victim.name, c.node_id, c.kill_sent, reason))
            target[1] = target[1] - c.resource
            if not any(target[1].get(d) > 0 for d in dims):
                short.pop(0)
                if not short:
                    break
        return out

    def victims(self, eligible=None, wanted=None):
        """Containers that may be taken back, best first: from pools over
        their fair share that allow it, newest first, AMs last; never one that
        would push its pool below its fair share. ``wanted``: whether the
        shortfall being met can use this one (a map slot is no use to a pool
        short of reduce slots)."""
        e = self.engine
        left: dict[str, Resource] = {}
        candidates = []
        for pool in e.pools.values():
            if pool.children or not pool.allow_preemption_from or (eligible is not None and not eligible(pool)):
                continue
            if not pool.usage.any_positive() or at_least(pool.fair_share, pool.usage,
                                                         ("memory_mb",) if e.kind == "yarn" else e.dims):
                continue
            left[pool.name] = pool.usage
            for app in pool.apps:
                candidates.extend(c for c in app.containers.values() if c.preempt_time is None)
        candidates.sort(key=lambda c: (c.is_am, -c.launch_time))
        for c in candidates:
            pool = e.apps[c.app_id].pool
            if wanted is not None and not wanted(c):
                continue
            after = left[pool.name] - c.resource
            dims = compared(e, pool) if e.kind == "yarn" else [d for d in e.dims if c.resource.get(d)]
            if not at_least(after, pool.fair_share, dims):
                continue
            left[pool.name] = after
            yield c

    # ------------------------------------------- what victims leave behind
    def released(self, c, node, now: float) -> None:
        """A victim finished: its resources wait on its node for the pool it
        was taken for."""
        amount, _until = node.held.get(c.taken_for, (ZERO, now))
        node.held[c.taken_for] = (amount + c.resource, now + HOLD)

    def held_on(self, node, now: float) -> Resource:
        """What the node holds for starved pools now (lapsed holds dropped)."""
        total = ZERO
        for name, (amount, until) in list(node.held.items()):
            pool = self.engine.pools.get(name)
            if until <= now or pool is None or pool.active_apps == 0:
                del node.held[name]
            else:
                total = total + amount
        return total

    def assign_held(self, node, free: Resource, now: float, key: str = "memory_mb"):
        """Offer the node to the pools it holds resources for, first, at any
        level their asks allow: one assignment or None."""
        e = self.engine
        for name, (amount, until) in list(node.held.items()):
            pool = e.pools.get(name)
            if until <= now or pool is None or pool.active_apps == 0:
                node.held.pop(name, None)
                continue
            a = e.assign_in(pool, node, free, now, True, key)
            if a is not None:
                left = (amount - a.resource).clamp_zero()
                if left.any_positive():
                    node.held[name] = (left, until)
                else:
                    del node.held[name]
                return a
        return None


def _amount(r: Resource, engine) -> str:
    if engine.kind == "yarn":
        return f"{r.memory_mb:.0f} MB"
    return ", ".join(f"{r.get(d):.0f} {d.replace('_', ' ')}" for d in engine.dims)
