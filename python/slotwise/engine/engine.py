"""The scheduling engine: events in, decisions out.

Pure by design: no I/O, no threads, time only from the injected clock.  The
Py4J bridge drives it from a real ResourceManager and the simulator drives
it from a trace; both see the same decisions for the same events.

The Engine keeps the registries (nodes, apps, containers, the queue tree),
applies the events, and runs the two passes: ``heartbeat(node_id)`` offers
the node to the tree from the root (``Queue.assign``: each queue orders its
children with its policy, each app asks its own delay rule) and commits
what the walk chose; ``update()`` is the Fair Scheduler's update thread:
runnability, demand, fair shares, starvation and preemption.
"""

from __future__ import annotations

import bisect
import contextlib
from typing import Iterable, Sequence

from ..clock import Clock, SystemClock
from ..config.model import AllocationConfig, default_config
from ..placement import PlacementRejected, queue_path
from ..policies import PolicyContext
from ..policies.base import SchedulingPolicy
from ..resources import KIND_DIMS, OFFERS, ZERO, Resource
from ..settings import EngineSettings
from . import describe, fork
from .app import ANYWHERE, LOCALITY_NAMES, App, Request, delay_rule
from .decisions import Assignment, Preemption
from .durations import Durations
from .events import NodeEvents
from .limits import MaxRunningApps
from .node import Container, Node
from .preemption import Preemptor
from .queue import Queue, Skipped, Walk
from .tree import QueueTree

__all__ = ["Engine", "PlacementRejected", "RECOVERY_QUEUE"]

#: Where an app goes that the RM holds in a queue no queue can be (root, a
#: parent) and no placement rule places: scheduled like any leaf, shown in
#: the UI (YuniKorn's name; a config file cannot declare it).
RECOVERY_QUEUE = "root.@recovery@"

#: The most containers one node is given in one heartbeat, whatever the
#: settings: the node's room caps it first, but a driver's node of absurd
#: capacity must not keep one call placing for minutes under the lock.
MAX_ASSIGN_PER_HEARTBEAT = 1024


class Engine(NodeEvents):
    """The registries (nodes, apps, containers, the queue tree), the events
    that change them (those about nodes and containers in
    ``engine/events.py``), the heartbeat's offers and commit, and the
    update pass."""

    def __init__(self, config: AllocationConfig | None = None, clock: Clock | None = None,
                 settings: EngineSettings | None = None, services: dict | None = None,
                 kind: str = "yarn") -> None:
        self.clock = clock or SystemClock()
        #: The cluster's kind ("yarn" or "mrv1"): its resource dimensions,
        #: and what a node offers on each heartbeat (resources.OFFERS).
        self.kind = kind
        self.dims = KIND_DIMS[kind]
        self.offers = OFFERS[kind]
        self.settings = settings or EngineSettings()
        #: Handed to every policy hook: objects the driver shares by name.
        self.ctx = PolicyContext({} if services is None else services)
        self.nodes: dict[str, Node] = {}
        #: The one delay-scheduling rule every app follows (time or count).
        self.delay = delay_rule(self.settings, self.nodes)
        self.preemption = Preemptor(self)
        self.apps: dict[str, App] = {}
        self.containers: dict[str, Container] = {}
        self.cluster = ZERO
        self.tree = QueueTree(self.clock.now())
        self.tree.ctx = self.ctx
        self._skipped = Skipped()  # apps passed over on the last heartbeat
        self._order_version = 0  # bumped when the set, priority or asks of apps change
        self._refused_apps: set[str] = set()  # apps holding refusals the shim gave
        self._without_am = 0  # apps whose AM container has not started
        self._last_heartbeat: float | None = None
        self._seq = 0
        self._batch = 0  # > 0: runnability is settled once, when the batch ends
        self._batch_dirty = False
        #: The copies the last fork made of the apps (``fork.Kept``); None
        #: until the first fork, and again after a reload.
        self._kept = None
        #: Container run times learned as containers end, for forecasts
        #: (engine/durations.py); None in a fork, which must not teach it.
        self.durations: Durations | None = Durations()
        self.config = config or default_config()
        self.limits = MaxRunningApps(self.config)
        self.set_config(self.config)

    @property
    def queues(self) -> dict[str, Queue]:
        return self.tree.queues

    @property
    def root(self) -> Queue:
        return self.tree.root

    def fork(self, clock: Clock | None = None) -> "Engine":
        """An independent engine in the same state (a dry run, a forecast, a
        shadow), on ``clock`` (default: this one's). Nothing it does reaches
        this one; the services the driver shares (a market) are shared.
        A driver that holds a lock may hold it for ``fork.snapshot`` alone."""
        return fork.build(fork.snapshot(self), clock or self.clock)

    # ----------------------------------------------------------------- config
    def config_conflicts(self, config: AllocationConfig) -> list[str]:
        """Why ``config`` cannot replace the running one (FILE:LINE: lines)."""
        return self.tree.conflicts(config)

    def set_config(self, config: AllocationConfig) -> None:
        """Swap in a new allocation file; queues keep their state by name
        and a reload never loses a running app (QueueTree.rebuild). Raises
        ValueError (and changes nothing) on ``config_conflicts``."""
        conflicts = self.config_conflicts(config)
        if conflicts:
            raise ValueError("\n".join(conflicts))
        self.config = config
        self.limits.config = config
        fork.forget(self)  # the tree is made again: the next fork copies every app
        self.share_rule = self.settings.rule_for(config.format)
        shape = self.tree.shape()
        self.tree.rebuild(config, self.cluster, self.share_rule, self.settings.root_policy, self.clock.now())
        queues = self.queues.values()
        self._has_min_shares = any(p.min_share.any_positive() for p in queues)
        #: A policy that acts on the update pass (a market charging, weights moving).
        self._policy_hooks = any(type(p.policy).on_update is not SchedulingPolicy.on_update for p in queues)
        self._order_version += 1
        for p in queues:
            p.stale = True
            p.forget_order()
            p.set_target_rule(self.settings)
        # The counts of apps beneath each queue and per user stand on the same tree
        # (a shadow's candidate, made per diverging heartbeat, spent half its copy here).
        if self.tree.shape() != shape:
            self.limits.user_running = {}
            for p in queues:
                p.usage = p.am_usage = ZERO
                p.running_apps = p.active_apps = 0
                p.wanting = {}
            for app in self.apps.values():
                self._attach(app, app.queue, +1)
        for app in self.apps.values():
            app.delay = app.queue.set_target_rule(self.settings, self.delay)
        self._update_runnability()

    def _attach(self, app: App, queue: Queue, sign: int) -> None:
        """Add (sign=+1) or remove (-1) an app in its queue chain and its
        user's count."""
        queue.count_app(app, sign)
        self.limits.count(app, sign)

    def can_hold(self, name: str) -> str | None:
        """Why an app cannot sit in queue ``name`` (QueueTree.can_hold)."""
        return self.tree.can_hold(name)

    def place_app(self, user: str, queue: str | None = None, groups: Sequence[str] = (),
                  recovering: bool = False, trace: list | None = None) -> str:
        """Where the placement policy would put a new app (raises
        PlacementRejected); nothing changes until ``add_app``."""
        return self.tree.place(user, queue, groups, recovering, trace)

    def move_target_problem(self, queue: str, may_create: bool = False) -> str | None:
        """Why an app cannot be moved to ``queue``, or None."""
        return self.tree.move_problem(None, queue, may_create)

    # ------------------------------------------------------------------- apps
    def add_app(self, app_id: str, user: str, queue: str | None = None, priority: int = 0,
                groups: Sequence[str] = (), submit_time: float | None = None,
                placed: bool = False, name: str | None = None) -> str:
        """Admit an app; returns its queue's full name.  ``placed=True`` takes
        ``queue`` as final (a driver restoring state), else the placement
        policy decides.  Raises PlacementRejected."""
        if app_id in self.apps:
            return self.apps[app_id].queue.name
        groups = tuple(groups)
        leaf_name = queue_path(queue or "default") if placed else self.place_app(user, queue, groups)
        now = self.clock.now()
        leaf = self.tree.ensure(leaf_name, self.cluster, self.share_rule, now, force=placed)
        if leaf.children:
            raise PlacementRejected(f"{leaf_name} is a parent queue; apps go in leaf queues")
        app = App(app_id, user, int(priority), now if submit_time is None else submit_time, groups)
        if name:
            app.app_name = name
        app.queue = leaf
        app.delay = app.queue.set_target_rule(self.settings, self.delay)
        if self._kept is not None:
            app.kept = self._kept
            app.touch()
        bisect.insort(leaf.apps, app, key=_by_submit)
        leaf.stale = True
        self.apps[app_id] = app
        if self.durations is not None:  # how often apps arrive here, for forecasts
            self.durations.submitted(leaf.name, app.start_time)
        self._order_version += 1
        self.limits.waiting += 1
        self._without_am += 1
        self._update_runnability()
        return leaf.name

    def mark_unmanaged(self, app_id: str) -> None:
        """The app's AM runs outside the cluster (an unmanaged AM, or an MRv1
        app): none of its containers is an AM."""
        app = self.apps[app_id]
        app.touch()
        app.unmanaged = True
        self._sync_has_am(app)

    def remove_app(self, app_id: str) -> None:
        app = self.apps.get(app_id)
        if app is None:
            return
        for cid in list(app.containers):
            self.container_finished(cid)
        self._attach(app, app.queue, -1)
        app.queue.apps.remove(app)
        app.queue.stale = True
        del self.apps[app_id]
        if self.durations is not None:
            self.durations.forget(app_id)
        app.touch()  # the next fork drops its copy
        self._refused_apps.discard(app_id)
        self._order_version += 1
        if not app.runnable:
            self.limits.waiting -= 1
        if not app.has_am:
            self._without_am -= 1
        self._skipped.pop(app)
        self.tree.prune(app.queue)
        self._update_runnability()

    def move_app(self, app_id: str, queue: str, force: bool = False, may_create: bool = False) -> str:
        """Move a running app, as ``yarn application -movetoqueue`` does.
        Raises ValueError when the target cannot take it (QueueTree.target);
        ``force`` follows a move the driver has already made, whatever the limits."""
        app = self.apps[app_id]
        target = self.tree.target(app, queue, force, may_create, self.cluster, self.share_rule, self.clock.now(),
                                  self.limits)
        if target is app.queue:
            return target.name
        source = app.queue
        self._attach(app, source, -1)
        source.apps.remove(app)
        app.touch()
        app.queue = target
        app.delay = app.queue.set_target_rule(self.settings, self.delay)
        bisect.insort(target.apps, app, key=_by_submit)
        source.stale = target.stale = True
        self._attach(app, target, +1)
        self._order_version += 1
        self.tree.prune(source)
        self._update_runnability()
        return target.name

    def set_app_priority(self, app_id: str, priority: int) -> None:
        self.apps[app_id].set_priority(int(priority))
        self._order_version += 1
        self._update_runnability()

    def update_requests(self, app_id: str, requests: Iterable[Request]) -> None:
        """Replace an app's outstanding requests with the driver's view."""
        app = self.apps[app_id]
        app.set_requests(requests)
        if not app.refused:
            self._refused_apps.discard(app_id)
        self._refresh_active(app)

    def _refresh_active(self, app: App) -> None:
        """Whether the app asks for anything, and for which offers; a change
        moves the order version (the walk's kept orders)."""
        if app.refresh_asking(self.offers):
            self._order_version += 1

    @contextlib.contextmanager
    def batch(self):
        """``with engine.batch():`` applies many events and settles the
        running-app limits once at the end (a resync of thousands of apps
        stays linear)."""
        self._batch += 1
        try:
            yield self
        finally:
            self._batch -= 1
            if not self._batch and self._batch_dirty:
                self._batch_dirty = False
                self._update_runnability()

    def _update_runnability(self) -> None:
        """Waiting apps become runnable as the running-app limits allow
        (MaxRunningApps.settle); a runnable app stays runnable."""
        if not self.limits.waiting:
            return
        if self._batch:
            self._batch_dirty = True
            return
        for app in self.limits.settle(self.apps.values()):
            self._refresh_active(app)

    # -------------------------------------------------------------- heartbeat
    @property
    def idle_heartbeat_is_noop(self) -> bool:
        """True when a heartbeat from a node with no room, or with nothing
        pending anywhere, would change nothing: no app is waiting to be
        credited for a skipped opportunity.  Drivers may then leave it out."""
        return not self._skipped

    def has_pending(self, kind: str | None = None) -> bool:
        """Whether any app asks for something (``kind``: that kind of slot)."""
        return self.root.active_apps > 0 if kind is None else self.root.wanting.get(kind, 0) > 0

    def heartbeat(self, node_id: str, room: Resource | None = None) -> list[Assignment]:
        """Decide which containers start on ``node_id`` now.  ``room``, when
        the driver knows it, is what the node really has free: less than its
        capacity minus the live containers while killed ones still hold their
        resources on the node; never assign beyond it."""
        now = self.clock.now()
        last = self._last_heartbeat
        if last is not None:
            # Apps passed over on the last heartbeat waited until this one.
            self._skipped.credit(now - last)
        self._skipped = Skipped()
        self._last_heartbeat = now
        node = self.nodes.get(node_id)
        if node is None:
            return []
        s = self.settings
        limit = min(s.max_assign if s.max_assign > 0 else MAX_ASSIGN_PER_HEARTBEAT,
                    MAX_ASSIGN_PER_HEARTBEAT) if s.assign_multiple else 1
        held = node.held_back(room)
        out: list[Assignment] = []
        root = self.root
        for offer in self.offers:
            if not root.wanting.get(offer.key) and not node.held:
                continue  # no app asks for this offer
            # An offer that waits for no locality passes nobody over for it.
            skipped = self._skipped if offer.local else Skipped()
            while len(out) < limit:
                free = node.capacity - node.used
                if held is not ZERO:  # (x - 0 is x: one Resource less per container when nothing is held)
                    free = free - held
                if not offer.has_room(free):
                    break
                rule = self.delay if offer.local else ANYWHERE
                walk = Walk(offer, node, free, now, rule, skipped, self.cluster, self._order_version)
                pick = None
                if node.held:  # what preemption freed here goes to the queue it was taken for first
                    pick, holder = self._walk_holders(walk)
                    if pick is None:
                        walk.free = free = free - self.preemption.held_on(node, now)
                        if not offer.has_room(free):
                            break
                    else:
                        self.preemption.took(node, holder, pick[1].resource)
                if pick is None:
                    walk.rule = rule
                    pick = root.assign(walk)
                if pick is None:
                    break
                out.append(self._commit(walk, *pick))
        return out

    def _walk_holders(self, walk: Walk):
        """Offer the node first to the queues it holds room for, at any
        level their asks allow: (pick, queue name) or (None, None)."""
        walk.rule = ANYWHERE
        for name in self.preemption.holders(walk.node, walk.now):
            pick = self.queues[name].assign(walk)
            if pick is not None:
                return pick, name
        return None, None

    def _commit(self, walk: Walk, app: App, req: Request, level: int, is_am: bool) -> Assignment:
        node, now = walk.node, walk.now
        hosts = len(app.want_hosts)  # before the take: where its data was while it waited
        app.take(req, node, level)
        r = req.resource
        self._seq += 1
        cid = f"{app.app_id}#{self._seq}"
        c = Container(cid, app.app_id, node.node_id, r, now, is_am, req.priority)
        c.level = level
        self._launch(c)
        if walk.offer.local:  # a launch the app waited for locality for
            app.launched(level, req.has_locality, now, hosts)
        walk.skipped.pop(app)
        self._refresh_active(app)
        return Assignment(cid, app.app_id, app.queue.name, node.node_id, req.priority,
                          LOCALITY_NAMES[level], r, is_am)

    # ----------------------------------------------------------------- update
    def acts_on_update(self) -> bool:
        return self.settings.preemption or self._policy_hooks

    def decisions_need_update(self) -> bool:
        """Whether heartbeat decisions read what ``update`` computes: demand
        against min shares, fair shares for AM limits, starvation for
        preemption.  When they do not, a driver that only wants the figures
        (the simulator) may call ``update`` less often without changing a
        single decision."""
        return bool(self.settings.preemption or self._policy_hooks or self._without_am or self._has_min_shares)

    def update(self) -> list[Preemption]:
        """The periodic pass: runnability, demand, fair shares, starvation,
        and the containers to take back."""
        now = self.clock.now()
        self._update_runnability()
        root = self.root
        root.update_demand()
        ctx = self.ctx
        ctx.cluster = self.cluster
        for queue in self.queues.values():
            queue.policy.on_update(queue, now, ctx)
            if self._policy_hooks:  # a policy that moves weights or charges: every share split again
                queue.split_of = None
        if self._policy_hooks:
            fork.touch_all(self)  # and may have written any app
        root.fair_share = root.steady_fair_share = self.cluster
        root.share_out(self.offers, self.share_rule, ctx)
        for queue in self.queues.values():
            if queue.delay is not None:  # a locality target: its waits tuned (engine/target.py)
                queue.delay.tune(queue.launches, now)
        on, eligible = self.preemption_scope()
        if not on:
            self.preemption.track(now)  # how long queues wait is worth knowing all the same
            return []
        return self.preemption.plan(now, eligible)

    def preemption_scope(self):
        """Whether preemption may act, and for which leaf queues (Preemptor.scope)."""
        return self.preemption.scope(self.settings.preemption)

    # ------------------------------------------------------------- read side
    def describe_queues(self) -> list[dict]:
        """Plain rows per queue for the CLI, web UI and metrics."""
        return describe.queue_rows(self)

    def describe_apps(self) -> list[dict]:
        """Plain rows per app for the web UI and API."""
        return describe.app_rows(self)


def _by_submit(app: App) -> tuple:
    """Apps are kept in this order so policies can sort them stably."""
    return (app.start_time, app.app_id)
