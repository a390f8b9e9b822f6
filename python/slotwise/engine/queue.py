"""A queue (an MRv1 pools file's pool) at runtime: a node of the scheduling tree with the
same Schedulable shape as an app, plus the settings resolved from the
allocation file (inheriting from parents and the file's defaults).

The heartbeat's walk lives here: a queue offers a node to its children in
its policy's order (``Queue.assign``), a leaf to its apps, each app to its
own asks (``App.assign``); so does the update pass's part that is about a
queue: its demand and how it splits its fair share."""

from __future__ import annotations

import math

from ..config.model import AllocationConfig, QueueConfig
from ..policies import SchedulingPolicy, get_policy
from ..policies.base import compute_shares_of
from ..resources import ZERO, Resource
from . import app_order
from .app import ANYWHERE, App
from .target import Launches, TargetDelay
from ..policies.fairshare import YARN

INF_RESOURCE = Resource(math.inf, math.inf, math.inf, math.inf)
#: What a keyed policy's order of a queue among its siblings reads
#: (``SchedulingPolicy.keyed``): setting one re-places the queue.
ORDER_FIELDS = frozenset(("usage", "demand", "weight", "min_share"))
_set = object.__setattr__


class Queue:
    __slots__ = ("name", "parent", "children", "apps", "config", "policy", "dynamic", "weight",
                 "min_share", "max_share", "max_share_spec", "raise_max_to_min", "max_child_spec", "usage",
                 "demand",
                 "fair_share", "steady_fair_share", "priority", "start_time", "am_usage",
                 "max_running_apps", "max_am_share", "min_share_timeout", "fair_share_timeout",
                 "fair_share_threshold", "allow_preemption_from", "is_parent", "running_apps",
                 "active_apps", "wanting", "last_at_min_share", "last_at_fair_share", "acl_submit",
                 "acl_administer", "policy_state", "min_starved_since", "fair_starved_since",
                 "preempted_at", "orders", "asking_cache", "kept", "moved", "app_order", "apps_moved", "stale", "apps_demand", "split_of",
                 "locality_target", "delay", "launches")

    def __init__(self, name: str, parent: "Queue | None", now: float) -> None:
        self.name = name
        self.parent = parent
        self.children: list[Queue] = []
        self.apps: list[App] = []
        self.config: QueueConfig | None = None
        self.policy: SchedulingPolicy = get_policy("fair")
        self.dynamic = True
        self.is_parent = False
        self.weight = 1.0
        self.min_share = ZERO
        self.max_share = INF_RESOURCE
        self.max_share_spec = None
        self.raise_max_to_min = False
        self.max_child_spec = None
        self.usage = ZERO
        self.demand = ZERO
        self.fair_share = ZERO
        self.steady_fair_share = ZERO
        self.priority = 0
        self.start_time = 0.0
        self.am_usage = ZERO
        self.max_running_apps: float = math.inf
        self.max_am_share = 0.5
        self.min_share_timeout = math.inf
        self.fair_share_timeout = math.inf
        self.fair_share_threshold = 0.5
        self.allow_preemption_from = True
        self.running_apps = 0  # runnable apps beneath this queue
        self.active_apps = 0  # runnable apps beneath with outstanding requests
        #: On a slot cluster: of those, how many ask for each kind of slot.
        self.wanting: dict[str, int] = {}
        # When preemption may act (YARN's lastTimeAtMinShare and
        # lastTimeAtFairShareThreshold): the last update pass that found the
        # queue at its share, so a round that fills the shortfall restarts them.
        self.last_at_min_share = now
        self.last_at_fair_share = now
        # What the operator reads: since when the queue has been below its
        # share (None: not below), kept across the rounds that serve it.
        self.min_starved_since: float | None = None
        self.fair_starved_since: float | None = None
        self.preempted_at: float | None = None  # the last round that took containers for it
        self.acl_submit: str | None = None
        self.acl_administer: str | None = None
        #: What the parent's policy keeps about this queue between updates
        #: (Dynamic Priority: its recent share of the cluster).
        self.policy_state = None
        #: The apps asking for each offer, and a stable-order policy's order
        #: of them, as of the engine's order version they were made at.
        self.orders: dict = {}
        self.asking_cache: dict = {}
        #: A keyed policy's order of the children, per offer, kept between
        #: heartbeats (``kept_order``), and the children whose key may have
        #: moved since (their usage changed beneath them).
        self.kept: dict = {}
        self.moved: set = set()
        #: A keyed policy's order of a leaf's asking apps, per offer, kept
        #: as long as the apps asking are (``asking_cache``), and the apps
        #: whose key may have moved since (``App.changed``: usage, weight).
        self.app_order: dict = {}
        self.apps_moved: set = set()
        #: The update pass is incremental: a queue whose apps changed since
        #: the last pass (their usage, asks, runnability, weight, or the set
        #: of them) is ``stale`` and adds its apps up again; the others keep
        #: the sum (``apps_demand``) and their apps' fair shares, split last
        #: from the share and cluster in ``split_of``.
        self.stale = True
        self.apps_demand = ZERO
        self.split_of = None
        #: The data-local fraction asked for (``localityTarget``, inherited;
        #: None: the engine's waits), the delay rule tuned for it on a leaf
        #: (``target.TargetDelay``; None: the engine's rule), and the
        #: launches it reads (``target.Launches``).
        self.locality_target: float | None = None
        self.delay = None
        self.launches = Launches()

    def __setattr__(self, name: str, value) -> None:
        _set(self, name, value)
        if name in ORDER_FIELDS:
            try:
                parent = self.parent
            except AttributeError:  # set before the parent, as a copy may be
                return
            if parent is not None and parent.__class__ is Queue:
                parent.moved.add(self)

    def __getstate__(self):
        """The tree's links by name (``Engine.__setstate__`` ties them again),
        so a copy of a tree of any depth never recurses along it."""
        state = {k: getattr(self, k) for k in self.__slots__}
        state["parent"] = self.parent.name if self.parent is not None else None
        state["children"] = [c.name for c in self.children]
        state["kept"], state["moved"] = {}, set()
        state["app_order"], state["apps_moved"] = {}, set()
        return state

    def __setstate__(self, state) -> None:
        for k, v in state.items():
            setattr(self, k, v)

    @property
    def is_leaf(self) -> bool:
        return not self.children and not self.is_parent

    @property
    def short_name(self) -> str:
        return self.name.rsplit(".", 1)[-1]

    def ancestors(self):
        """This queue and every queue above it, up to root."""
        p = self
        while p is not None:
            yield p
            p = p.parent

    def count_app(self, app: App, sign: int) -> None:
        """Add (sign=+1) or remove (-1) an app's usage and counts here and
        in every queue above."""
        am = sum((c.resource for c in app.containers.values() if c.is_am), ZERO) * sign
        usage = app.usage * sign
        for p in self.ancestors():
            p.usage = p.usage + usage
            p.am_usage = p.am_usage + am
            if app.runnable:
                p.running_apps += sign
            if app.active:
                p.active_apps += sign
            for k in app.kinds:
                p.wanting[k] = p.wanting.get(k, 0) + sign

    def charge(self, r: Resource, is_am: bool, sign: int) -> None:
        """A container of ``r`` started (sign=+1) or ended (-1) beneath."""
        for p in self.ancestors():
            _set(p, "usage", p.usage + r if sign > 0 else p.usage - r)  # (what __setattr__ does, spelt out)
            if p.parent is not None:
                p.parent.moved.add(p)
            if is_am:
                p.am_usage = p.am_usage + r if sign > 0 else p.am_usage - r

    def charge_am(self, r: Resource, sign: int) -> None:
        """A running container of ``r`` became (sign=+1) or stopped being
        (-1) its app's AM."""
        for p in self.ancestors():
            p.am_usage = p.am_usage + r if sign > 0 else p.am_usage - r

    def fits(self, r: Resource, is_am: bool, cluster: Resource) -> bool:
        """One more container of size ``r`` (an AM when ``is_am``) stays
        within this queue's and every ancestor's max share, and an AM within
        this queue's AM limit."""
        for p in self.ancestors():
            u, cap = p.usage, p.max_share
            if (u.memory_mb + r.memory_mb > cap.memory_mb or u.vcores + r.vcores > cap.vcores
                    or u.map_slots + r.map_slots > cap.map_slots
                    or u.reduce_slots + r.reduce_slots > cap.reduce_slots):
                return False
        return not is_am or self.am_limit(r, cluster) is None

    def am_limit(self, r: Resource, cluster: Resource) -> Resource | None:
        """The AM limit that one more AM of size ``r`` would pass here, or
        None if it fits (the first AM always does)."""
        if not self.am_usage.any_positive():
            return None
        limit = self.am_max(cluster)
        return limit if limit is not None and (self.am_usage + r).memory_mb > limit.memory_mb else None

    def am_max(self, cluster: Resource) -> Resource | None:
        """The AM limit now: maxAMShare x the fair share (of the max share
        while there is none), as YARN's amMaxResources; None: no limit."""
        if self.max_am_share < 0:
            return None
        base = self.fair_share if self.fair_share.memory_mb > 0 else self.max_share.min(cluster)
        return base * self.max_am_share

    # ------------------------------------------------------------ the walk
    def assign(self, walk: "Walk"):
        """Offer ``walk``'s node to the apps beneath this queue, children in
        the policy's order: (app, request, level, is_am) for the first app
        that takes it, or None. Changes nothing but the apps' delay counts."""
        offer = walk.offer
        key = offer.key
        if not self.wanting.get(key) or offer.at_max(self.usage, self.max_share):
            return None
        if self.policy.flatten or not self.children:
            return self.assign_apps(walk)
        if self.policy.keyed:  # the order is kept between heartbeats
            for child in self.kept_order(offer):
                if child.wanting.get(key):
                    pick = child.assign(walk)
                    if pick is not None:
                        return pick
            return None
        kids = [c for c in self.children if c.wanting.get(key)]
        if len(kids) > 1:
            kids = offer.order(self.policy, kids, walk.cluster)
        for child in kids:
            pick = child.assign(walk)
            if pick is not None:
                return pick
        return None

    def kept_order(self, offer) -> list["Queue"]:
        """All the children in a keyed policy's order for ``offer`` (one
        key per child, ties in the children's order, as ``policy.order``
        sorts them), kept between heartbeats: only the children whose key
        may have moved (``moved``: usage changed beneath them) are placed
        again. Demand, weights, min shares and the children themselves
        change on the update pass or a reload, which forget the order
        (``forget_order``)."""
        kept = self.kept.get(offer.key)
        if kept is None:
            policy, children = self.policy, self.children
            ks = sorted((offer.key_of(policy, c), i) for i, c in enumerate(children))
            kept = self.kept[offer.key] = (ks, [children[i] for _, i in ks], {children[i]: (k, i) for k, i in ks},
                                           offer)
        if self.moved:
            policy = self.policy
            for ks, qs, at, of in self.kept.values():  # (one no longer a child is passed by: forget_order follows)
                app_order.rekey(ks, qs, at, self.moved, lambda c, of=of: of.key_of(policy, c))
            self.moved.clear()
        return kept[1]

    def forget_order(self) -> None:
        """The children's keys or the children themselves changed: the
        kept order is made again on the next heartbeat."""
        self.kept = {}
        self.moved = set()
        self.app_order = {}
        self.apps_moved = set()

    def assign_apps(self, walk: "Walk"):
        """Offer the node to this queue's apps (all beneath it, for a
        flattening policy) in policy order until one takes it. Every app
        walked past is counted as passed over (delay scheduling); an app
        after the one that takes it never was. The apps' delay rule is
        asked once for them all, and the order is only needed once one of
        them may run here."""
        key = walk.offer.key
        node = walk.node
        host, rack = node.host, node.rack
        skipped = walk.skipped
        rule = walk.rule
        if self.delay is not None and rule is not ANYWHERE:  # the waits tuned for this queue's target
            rule = self.delay
        if self.policy.stable_order:  # the order is kept: walk it, one app at a time
            for app in self.ordered_apps(walk):
                if key not in app.kinds:  # its last ask of this kind launched earlier on this heartbeat
                    continue
                skipped.add(app)
                level = rule.offered(app, host, rack)
                if level is not None:
                    pick = app.assign(walk, level)
                    if pick is not None:
                        return pick
            return None
        cached = self.asking_cache.get(key)
        if cached is None or cached[0] != walk.version:
            cached = self.keep_asking(key, walk.version, skipped if walk.offer.local else None)
        _, apps, passed, wants = cached
        if wants is None:
            wants = cached[3] = wants_of(apps, walk.now)
        skipped.add_all(passed)
        if rule.pure and self.policy.keyed and not self.children:  # the same walk, cheaper (app_order.py)
            return app_order.walk_kept(self, walk, rule, cached, wants)
        levels = rule.offered_all(apps, host, rack, wants, walk.now)
        if not levels:
            return None
        if len(apps) > 1:
            apps = walk.offer.order(self.policy, apps, walk.cluster)
        for i, app in enumerate(apps):
            level = levels.get(app.app_id)
            if level is None:
                continue
            pick = app.assign(walk, level)
            if pick is not None:
                for later in apps[i + 1:]:  # never offered this node after all
                    if skipped.pop(later):
                        rule.withdrawn(later)
                return pick
        return None

    def ordered_apps(self, walk: "Walk") -> list[App]:
        """The apps asking for the offer, in the policy's order; kept
        between heartbeats by a policy whose order does not move with usage
        (FIFO), until the engine's order version moves."""
        offer = walk.offer
        if self.policy.stable_order:
            cached = self.orders.get(offer.key)
            if cached is not None and cached[0] == walk.version:
                return cached[1]
        apps = self.asking_apps(offer.key)
        if len(apps) > 1:
            apps = offer.order(self.policy, apps, walk.cluster)
        if self.policy.stable_order:
            self.orders[offer.key] = (walk.version, apps)
        return apps

    def keep_asking(self, key: str, version: int, skipped: "Skipped | None") -> list:
        """Keep, until the engine's order version moves, the apps asking for
        ``key``, the group they are passed over in (``Passed``; None: an
        offer that waits for no locality, which credits no wait), and (made
        on the walk's first visit, again whenever one of them asks for other
        places or launches: ``App.wants_moved``) what they want together
        (``wants_of``)."""
        apps = self.asking_apps(key)
        passed = Passed(apps)
        if skipped is not None:
            for app in apps:
                if skipped.has(app):  # passed over earlier on this heartbeat with its old group
                    skipped.add(app)
                app.join(passed)
        cached = self.asking_cache[key] = [version, apps, passed, None]
        return cached

    def asking_apps(self, key: str) -> list[App]:
        """Apps beneath that ask for an offer of ``key``, skipping idle
        subtrees (a flattening policy such as FIFO walks the whole tree)."""
        if not self.children:
            return [a for a in self.apps if key in a.kinds]
        out: list[App] = []
        for child in self.children:
            if child.wanting.get(key):
                out += child.asking_apps(key)
        return out

    # ------------------------------------------------------ the update pass
    def update_demand(self) -> Resource:
        """Demand of the subtree (what its runnable apps use and ask),
        capped at the max share here; returns it uncapped for the parent.
        Only a ``stale`` queue reads its apps again."""
        total = ZERO
        for child in self.children:
            total = total + child.update_demand()
        if self.stale:
            own = ZERO
            for app in self.apps:  # (its kept copy reads the demand again: share_out touches every app here)
                app.demand = app.usage + app.pending if app.runnable else app.usage
                own = own + app.demand
            self.apps_demand = own
            self.split_of = None
            self.stale = False
        if self.apps:
            total = total + self.apps_demand
        self.demand = total.min(self.max_share)
        self.forget_order()  # every child's demand was set: the order is made again, once
        return total

    def share_out(self, offers, rule: str, ctx) -> None:
        """Split this queue's fair share (instantaneous: among children with
        runnable apps; steady: among all) and its apps' shares, down the
        tree, once per offer kind, the kinds added up. A queue whose apps
        and share did not change since its last split keeps its apps' shares."""
        if self.children:
            active = [c for c in self.children if c.running_apps > 0]
            shares = self._split(active, self.fair_share, False, offers, rule, ctx) if active else []
            for c in self.children:
                c.fair_share = ZERO
            for c, share in zip(active, shares):
                c.fair_share = share
            steady = self._split(self.children, self.steady_fair_share, True, offers, rule, ctx)
            for c, share in zip(self.children, steady):
                c.steady_fair_share = share
            for c in self.children:
                c.share_out(offers, rule, ctx)
        if self.apps:
            split_of = (self.fair_share, ctx.cluster)
            if split_of == self.split_of:
                return
            self.split_of = split_of
            runnable = [a for a in self.apps if a.runnable]
            shares = self._split(runnable, self.fair_share, False, offers, rule, ctx) if runnable else []
            for a in self.apps:
                a.touch_share()
                a.fair_share = ZERO
            for a, share in zip(runnable, shares):
                a.fair_share = share

    def _split(self, children, total: Resource, steady: bool, offers, rule: str, ctx) -> list[Resource]:
        out = None
        for offer in offers:
            part = compute_shares_of(self.policy, children, total, steady, rule, self, ctx, offer.key_arg)
            out = part if out is None else [a + b for a, b in zip(out, part)]
        return out

    def leaves(self):
        if not self.children:
            yield self
        for c in self.children:
            yield from c.leaves()

    def walk(self):
        yield self
        for c in self.children:
            yield from c.walk()

    def descendant_apps(self):
        for p in self.leaves():
            yield from p.apps

    def apply_config(self, qc: QueueConfig | None, alloc: AllocationConfig, cluster: Resource,
                     rule: str = YARN) -> None:
        """Resolve this queue's settings: its own element, else the parent's
        value (timeouts, thresholds, preemptability), else the file's defaults."""
        parent = self.parent
        self.config = qc
        self.dynamic = qc is None
        self.is_parent = bool(qc and (qc.is_parent or qc.children))
        self.weight = qc.weight if qc else 1.0
        self.min_share = (qc.min_resources if qc and qc.min_resources else ZERO)
        spec = qc.max_resources if qc and qc.max_resources else None
        if spec is None and qc is None and parent is not None and parent.max_child_spec is not None:
            spec = parent.max_child_spec
        if spec is None and self.name != "root":
            spec = alloc.queue_max_resources_default
        self.max_share_spec = spec
        self.max_child_spec = qc.max_child_resources if qc else None
        self.raise_max_to_min = rule == YARN
        self.resolve_max_share(cluster)
        mra = qc.max_running_apps if qc and qc.max_running_apps is not None else alloc.queue_max_apps_default
        self.max_running_apps = math.inf if mra is None else mra
        mas = qc.max_am_share if qc and qc.max_am_share is not None else alloc.queue_max_am_share_default
        self.max_am_share = mas
        policy_name = (qc.scheduling_policy if qc and qc.scheduling_policy else
                       alloc.default_queue_scheduling_policy)
        policy = get_policy(policy_name)
        if policy.leaf_only and not self.is_leaf:
            policy = get_policy("fair")  # the validator rejects this in files; dynamic parents fall back
        self.policy = policy

        def inherit(own, parent_value, default):
            if own is not None:
                return own
            return parent_value if parent is not None else default

        self.min_share_timeout = inherit(qc.min_share_preemption_timeout if qc else None,
                                         parent.min_share_timeout if parent else None,
                                         alloc.default_min_share_preemption_timeout)
        self.fair_share_timeout = inherit(qc.fair_share_preemption_timeout if qc else None,
                                          parent.fair_share_timeout if parent else None,
                                          alloc.default_fair_share_preemption_timeout)
        self.fair_share_threshold = inherit(qc.fair_share_preemption_threshold if qc else None,
                                            parent.fair_share_threshold if parent else None,
                                            alloc.default_fair_share_preemption_threshold)
        self.allow_preemption_from = inherit(qc.allow_preemption_from if qc else None,
                                             parent.allow_preemption_from if parent else None,
                                             True)
        self.locality_target = inherit(qc.locality_target if qc else None,
                                       parent.locality_target if parent else None,
                                       alloc.default_locality_target)
        self.acl_submit = qc.acl_submit_apps if qc else None
        self.acl_administer = qc.acl_administer_apps if qc else None

    def set_target_rule(self, settings, engine_rule=None):
        """A leaf with a locality target gets its own delay rule, tuned for
        it (``TargetDelay``; a reload keeps the waits it learned), from the
        engine's waits; any other follows the engine's rule (None). The
        rule its apps follow, ``engine_rule`` when it has none of its own."""
        t = self.locality_target
        if t is None or self.children:
            self.delay = None
        elif self.delay is None:
            self.delay = TargetDelay(t, settings.t1, settings.t2, settings.heartbeat_interval, self.name)
        else:
            self.delay.retarget(t)
        return self.delay or engine_rule

    def resolve_max_share(self, cluster) -> None:
        """The max share for this cluster size. In a YARN file a max below the
        min share is raised to it, per dimension, under YARN's rule
        (FSQueue.getMaxShare); under the design document's the min share is
        clipped to the max instead, when shares are computed."""
        m = self.max_share_spec.resolve(cluster) if self.max_share_spec else INF_RESOURCE
        self.max_share = m.max(self.min_share) if self.raise_max_to_min else m


def wants_of(apps: list[App], now: float) -> tuple:
    """What ``apps`` want together as of ``now``, for the delay rule
    (``TimeDelay.offered_all``): the hosts, the racks, whether one asks
    for anywhere, the highest level and the longest wait among them, and
    ``now``."""
    if any(a.want_anywhere for a in apps):  # the rule reads nothing else then: left out
        return (None, None, True, None, None, now)
    return (set().union(*[a.want_hosts for a in apps]), set().union(*[a.want_racks for a in apps]),
            False, max([a.locality_level for a in apps], default=0),
            max([a.locality_wait for a in apps], default=0.0), now)


class Passed:
    """A queue's asking apps, as the walk passes them over: together, so a
    heartbeat credits the group's wait once (``acc``, seconds) instead of
    each app's (``App.locality_wait`` adds what the group gained since the
    app joined)."""

    __slots__ = ("apps", "acc")

    def __init__(self, apps: list[App]) -> None:
        self.apps = apps
        self.acc = 0.0


class Skipped:
    """The apps one heartbeat passed over (the engine credits them the time
    to the next heartbeat, once each): whole groups, single apps (a
    stable-order queue's walk), and the apps of those groups taken back
    (``pop``: the app launched, or was never offered the node)."""

    __slots__ = ("groups", "apps", "back")

    def __init__(self) -> None:
        self.groups: set[Passed] = set()
        self.apps: dict[str, App] = {}
        self.back: set[App] = set()

    def add_all(self, passed: Passed) -> None:
        self.groups.add(passed)
        if self.back:
            self.back.difference_update(passed.apps)

    def add(self, app: App) -> None:
        self.apps[app.app_id] = app

    def grouped(self, app: App) -> bool:
        """Whether ``app`` is passed over with its group (and not taken back)."""
        return app.passed in self.groups and app not in self.back

    def has(self, app: App) -> bool:
        return app.app_id in self.apps or self.grouped(app)

    def pop(self, app: App) -> bool:
        """Take ``app`` back; whether it had been passed over."""
        was = self.apps.pop(app.app_id, None) is not None
        if self.grouped(app):
            self.back.add(app)
            was = True
        return was

    def take_back(self, apps) -> None:
        """``pop`` each of ``apps`` (of one group just passed over), for a
        delay rule whose ``withdrawn`` does nothing: an app in ``back``
        whose group is not passed over is read as not passed over, as if
        it were not there."""
        if self.apps:
            for a in apps:
                self.apps.pop(a.app_id, None)
        self.back.update(apps)

    def app_ids(self) -> list[str]:
        return list({a.app_id: None for a in self.each()})

    def each(self):
        """Every app passed over, once."""
        groups, back = self.groups, self.back
        for g in groups:
            for a in g.apps:
                if a.passed is g and a not in back:
                    yield a
        for a in self.apps.values():
            if not self.grouped(a):
                yield a

    def __bool__(self) -> bool:
        return next(self.each(), None) is not None

    def __iter__(self):
        """The ids of the apps passed over."""
        return iter(self.app_ids())

    def credit(self, dt: float) -> None:
        """Each app passed over waited ``dt`` more (the time to the next heartbeat)."""
        groups, back = self.groups, self.back
        for g in groups:
            g.acc += dt
        for a in back:
            if a.passed in groups:
                k = a.kept  # (a.touch_wait(), written out: this reads every app taken back)
                if k is not None:
                    k.waits_changed.add(a)
                a.joined_at += dt
        for a in self.apps.values():
            if not self.grouped(a):
                a.touch_wait()
                a.waited += dt


class Walk:
    """One offer of one node on one heartbeat, as the tree walks it: what
    is offered and how much is free, the apps' delay rule (or
    locality.ANYWHERE), and the apps passed over so far."""

    __slots__ = ("offer", "node", "free", "now", "rule", "skipped", "cluster", "version")

    def __init__(self, offer, node, free: Resource, now: float, rule, skipped: Skipped,
                 cluster: Resource, version: int) -> None:
        self.offer = offer
        self.node = node
        self.free = free
        self.now = now
        self.rule = rule
        self.skipped = skipped
        self.cluster = cluster
        self.version = version
