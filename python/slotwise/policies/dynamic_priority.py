"""Dynamic Priority (Sandholm and Lai): a parent queue's capacity divided among
its children by what they pay.

Set as the ``schedulingPolicy`` of a parent queue (or the root).  On each
update pass the children report their slots used and wanted to the market
(``slotwise.market.Market``, shared as the "market" service; an in-memory one
with default settings if the driver gave none), and each child's weight
becomes its spending rate in force: zero without budget, so it drops out and
runs only on what the paying children leave (with no budget anywhere, FIFO).
Shares are then weighted fair shares capped at demand, which is the paper's
(s_i / p) x capacity with the unused part going to the others.  With the
market's preemption on, a child over its paid share past the grace time
loses its newest containers to children below theirs.

The children the allocation file declares under such a queue are the
market's accounts as soon as the file loads (``declared_accounts``, read by
``follow_config`` at ``serve`` start-up and on each reload); a child
made at run time opens its account on the first update pass.
"""

from __future__ import annotations

import math
from typing import Sequence

from .fairshare import DESIGN
from ..resources import OFFERED, Resource
from .schedulable import Schedulable
from .base import PolicyContext, SchedulingPolicy, get_policy, register_policy
from .fair import share_key, share_key_on, shares_by_weight


def market_of(ctx: PolicyContext):
    """The market this engine's driver shares, made on first use if none."""
    market = ctx.services.get("market")
    if market is None:
        from ..market import Market

        market = ctx.services["market"] = Market()
    return market


def declared_accounts(config, root_policy: str | None = None) -> list[str]:
    """The queues ``config`` declares as direct children of a queue whose policy
    is dynamic-priority (its own ``schedulingPolicy``, else the file's
    default; the root's may be set by ``root_policy``), in file order."""
    out: list[str] = []
    for qc in config.root.walk():
        name = qc.scheduling_policy or config.default_queue_scheduling_policy
        if qc.name == "root" and root_policy:
            name = root_policy
        if not qc.children or not name:
            continue
        try:
            policy = get_policy(name)
        except (KeyError, ValueError):  # an unknown name: the validator names it, the engine uses fair
            continue
        if isinstance(policy, DynamicPriorityPolicy):
            out.extend(c.name for c in qc.children)
    return out



def follow_config(market, config, root_policy: str | None = None) -> tuple[list[str], list[str]]:
    """The market's accounts follow the file's dynamic-priority queues
    (``Market.follow_declared``), at ``serve`` start-up and on each reload:
    (opened, closed). Here, not in the market, so market/ needs no policy."""
    return market.follow_declared(declared_accounts(config, root_policy), config.source)

def _share(r: Resource, cluster: Resource, key: str = "memory_mb") -> float:
    """``r``'s share of the cluster in what is on offer: a YARN container's
    dominant one (memory or vcores), or one kind of MRv1 slot's."""
    dims = OFFERED[key] if key != "memory_mb" else ("memory_mb", "vcores")
    return max(r.get(d) / cluster.get(d) if cluster.get(d) > 0 else 0.0 for d in dims)


def _keys(cluster: Resource) -> tuple[str, ...]:
    """What a node of this cluster offers (resources.OFFERS, by the cluster's dimensions)."""
    return ("map_slots", "reduce_slots") if cluster.map_slots or cluster.reduce_slots else ("memory_mb",)


def _first_submit(s) -> float:
    apps = getattr(s, "descendant_apps", None)
    if apps is None:
        return s.start_time
    return min((a.start_time for a in apps() if a.runnable), default=math.inf)


class DynamicPriorityPolicy(SchedulingPolicy):
    name = "dynamic-priority"
    sets_children = ("weight", "fair_share_timeout", "fair_share_threshold")

    def sort_key(self, s: Schedulable, cluster: Resource, key: str = "memory_mb"):
        if not hasattr(s, "children"):  # apps (the policy set on a leaf): as fair
            return (0, share_key(s) if key == "memory_mb" else share_key_on(s, key), s.start_time, s.name)
        w = s.weight
        if w <= 0:  # not paying: after every paying child, first come first served
            return (1, _first_submit(s), s.name)
        # What it holds now plus what it held lately, per unit paid: a queue
        # whose share is under one slot still gets its turn in proportion
        # to its rate (without the history, ties at zero go by name).
        recent = s.policy_state[0].get(key, 0.0) if s.policy_state else 0.0
        return (0, (_share(s.usage, cluster, key) + recent) / w, s.name)

    def compute_shares(self, children: Sequence[Schedulable], total: Resource, steady: bool = False,
                       rule: str = DESIGN, key: str = "memory_mb") -> list[Resource]:
        # Work conserving whatever the file's rule: capped at demand, so what a
        # queue does not use goes to the others in proportion to their rates.
        return shares_by_weight(children, total, steady, DESIGN, OFFERED[key])

    def on_update(self, queue, now: float, ctx: PolicyContext) -> None:
        kids = queue.children
        if not kids:
            return
        market = market_of(ctx)
        market.ensure(c.name for c in kids)
        s = market.settings
        used = {c.name: s.slots(c.usage) for c in kids}
        pending = {c.name: s.slots((c.demand - c.usage).clamp_zero()) for c in kids}
        market.observe(f"{ctx.stream}:{queue.name}", now, used, pending)
        tau = 3 * s.interval
        keys = _keys(ctx.cluster)
        for c in kids:
            c.weight = market.rate_of(c.name)
            # What it held lately, per kind on offer (MRv1: map and reduce
            # slots are contended apart).
            shares = {key: _share(c.usage, ctx.cluster, key) for key in keys}
            if c.policy_state is None:
                c.policy_state = (shares, now)
            else:
                recent, t = c.policy_state
                k = 1.0 - math.exp(-max(now - t, 0.0) / tau)
                c.policy_state = ({key: recent.get(key, 0.0) + (v - recent.get(key, 0.0)) * k
                                   for key, v in shares.items()}, now)
            # Unpaid slots go after the grace time, or (preemption off) never:
            # among these children the paid share is the only fair share.
            c.fair_share_timeout = s.grace if s.preemption else math.inf
            c.fair_share_threshold = 1.0

    def explain_child(self, queue, child, ctx: PolicyContext) -> str | None:
        market = market_of(ctx)
        a = market.accounts.get(child.name)
        if a is None:
            return None
        if a.budget <= 0:
            return (f"{child.name} is out of budget in {queue.name}'s market: it runs only on what the paying "
                    "queues leave (an admin can add budget)")
        return (f"{child.name} pays {a.rate:g} per slot per {market.settings.interval:g} s interval at a price "
                f"of {market.price():g}: granted {market.share(child.name):.0%} of {queue.name}")

    def preempts(self, queue, ctx: PolicyContext) -> bool:
        return market_of(ctx).settings.preemption

    def admits(self, queue, target: str, user: str, ctx: PolicyContext) -> str | None:
        acl = ctx.services.get("dp_acl")
        if acl is None:
            return None
        market = market_of(ctx)
        child = f"{queue.name}.{target[len(queue.name) + 1:].split('.')[0]}"  # the account it pays from
        if acl.may_use(user, child, market.holder(child)):
            return None
        return (f"{child} is a dynamic-priority queue and {user} may not spend its budget "
                f"(not its holder {market.holder(child)!r}, nor an admin, in {acl.path})")


register_policy("dynamic-priority", DynamicPriorityPolicy)
