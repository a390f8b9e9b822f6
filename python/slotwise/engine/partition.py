"""The scheduling engine: events in, decisions out.

Pure by design: no I/O, no threads, time only from the injected clock.  The
Py4J bridge drives it from a real ResourceManager and the simulator drives
it from a trace; both see the same decisions for the same events.

One heartbeat: ``heartbeat(node_id)`` walks the queue tree from the root,
each queue ordering its children with its policy's ``sort_key``, until an app
with a request that fits the node, at a locality level delay scheduling
allows, takes a container.  ``update()`` is the Fair Scheduler's update
thread: runnability, demand, fair shares, starvation and preemption.
"""

from __future__ import annotations

import bisect
from typing import Iterable, Sequence

from ..clock import Clock, SystemClock
from ..config.model import AllocationConfig, default_config
from ..placement import PlacementRejected, may_submit, place, queue_path, valid_queue_name
from ..policies import PolicyContext, get_policy
from ..policies.base import SchedulingPolicy, takes_queue, takes_rule
from ..resources import KIND_DIMS, OFFERS, ZERO, Resource
from ..settings import EngineSettings
from .app import App
from .decisions import Assignment, Preemption
from .locality import LEVELS, LOCALITY_NAMES, NODE_LOCAL, OFF_SWITCH, RACK_LOCAL, TimeDelay, delay_rule
from .node import Container, Node
from .limits import MaxRunningApps
from .queue import Queue
from .preemption import Preemptor, at_least as _at_least, compared
from .request import Request

__all__ = ["Engine", "PlacementRejected", "RECOVERY_QUEUE"]

#: Where an app goes that the RM holds in a queue no queue can be (root, a
#: parent) and no placement rule places: scheduled like any leaf, shown in
#: the UI (YuniKorn's name; a config file cannot declare it).
RECOVERY_QUEUE = "root.@recovery@"

#: The most containers one node is given in one heartbeat, whatever the
#: settings: the node's room caps it first, but a driver's node of absurd
#: capacity must not keep one call placing for minutes under the lock.
MAX_ASSIGN_PER_HEARTBEAT = 1024


class Engine:
    def __init__(self, config: AllocationConfig | None = None, clock: Clock | None = None,
                 settings: EngineSettings | None = None, services: dict | None = None,
                 stream: str = "", kind: str = "yarn") -> None:
        self.clock = clock or SystemClock()
        #: The cluster's kind ("yarn" or "mrv1"): its resource dimensions,
        #: and what a node offers on each heartbeat (resources.OFFERS).
        self.kind = kind
        self.dims = KIND_DIMS[kind]
        self.offers = OFFERS[kind]
        self._no_wait = {k for k, local in self.offers if not local}
        self.settings = settings or EngineSettings()
        #: Handed to every policy hook: objects the driver shares (by name)
        #: and which engine this is.
        self.ctx = PolicyContext({} if services is None else services, stream)
        self.nodes: dict[str, Node] = {}
        #: The one delay-scheduling rule every app follows (time or count).
        self.delay = delay_rule(self.settings, self.nodes)
        self.preemption = Preemptor(self)
        self.apps: dict[str, App] = {}
        self.containers: dict[str, Container] = {}
        self.cluster = ZERO
        self.queues: dict[str, Queue] = {}
        self.root: Queue = Queue("root", None, self.clock.now())
        self._skipped: dict[str, App] = {}
        self._order_version = 0  # bumped when the set, priority or activity of apps changes
        self._orders: dict[tuple, tuple[int, list[App]]] = {}  # stable-order queues' cached orders, per offer
        self._refused_apps: set[str] = set()  # apps holding refusals the shim gave
        self._without_am = 0  # apps whose AM container has not started
        self._last_heartbeat: float | None = None
        self._seq = 0
        self._batch = 0  # > 0: runnability is settled once, when the batch ends
        self._batch_dirty = False
        self._batch_ctx = _Batch(self)
        self.config = config or default_config()
        self.limits = MaxRunningApps(self.config)
        self.set_config(self.config)

    def __setstate__(self, state) -> None:
        """A copied engine: its queues' links come by name (``Queue.__getstate__``)."""
        self.__dict__.update(state)
        queues = self.queues
        for queue in queues.values():
            if isinstance(queue.parent, str):
                queue.parent = queues[queue.parent]
            queue.children = [queues[c] if isinstance(c, str) else c for c in queue.children]

    # ----------------------------------------------------------------- config
    def config_conflicts(self, config: AllocationConfig) -> list[str]:
        """Why ``config`` cannot replace the running one: a queue holding apps
        would become a parent (its apps would never be offered a container
        again).  FILE:LINE: message, like a parse error."""
        out = []
        for qc in config.root.walk():
            queue = self.queues.get(qc.name)
            if queue is not None and queue.apps and (qc.children or qc.is_parent):
                out.append(f"{config.source}:{qc.line}: {qc.name} holds {len(queue.apps)} running app(s) "
                           "and cannot become a parent queue; move or finish them first")
        return out

    def set_config(self, config: AllocationConfig) -> None:
        """Swap in a new allocation file.  Queues keep their runtime state by
        name; queues that vanished from the file but still hold apps stay on as
        dynamic queues, so a reload never loses a running app.  Raises
        ValueError (and changes nothing) on ``config_conflicts``."""
        conflicts = self.config_conflicts(config)
        if conflicts:
            raise ValueError("\n".join(conflicts))
        now = self.clock.now()
        self.config = config
        self.limits.config = config
        self.share_rule = self.settings.rule_for(config.format)
        old = self.queues
        self.queues = {}

        def build(qc, parent):
            queue = old.get(qc.name) or Queue(qc.name, parent, now)
            queue.parent = parent
            queue.children = []
            if parent is not None:
                parent.children.append(queue)
            self.queues[qc.name] = queue
            queue.apply_config(qc, config, self.cluster, self.share_rule)
            for child in qc.children:
                build(child, queue)

        build(config.root, None)
        for queue in self.queues.values():
            queue.children.sort(key=_by_name)
        self.root = self.queues["root"]
        if self.settings.root_policy:
            self.root.policy = get_policy(self.settings.root_policy)
        for name, queue in old.items():
            if name not in self.queues and queue.apps:
                leaf = self._ensure_queue(name, force=True)
                leaf.apps = queue.apps  # already in (start_time, app_id) order
                for app in leaf.apps:
                    app.queue = leaf
        self._has_min_shares = any(p.min_share.any_positive() for p in self.queues.values())
        #: A policy that acts on the update pass (a market charging, weights moving).
        self._policy_hooks = any(type(p.policy).on_update is not SchedulingPolicy.on_update
                                 for p in self.queues.values())
        self._order_version += 1
        self._rebuild_aggregates()
        self._update_runnability()

    def _rebuild_aggregates(self) -> None:
        for p in self.queues.values():
            p.usage = ZERO
            p.am_usage = ZERO
            p.running_apps = 0
            p.active_apps = 0
            p.wanting = {}
        self.limits.user_running = {}
        for app in self.apps.values():
            self._attach(app, app.queue, +1)

    def _attach(self, app: App, queue: Queue, sign: int) -> None:
        """Add (sign=+1) or remove (-1) an app's weight in its queue chain."""
        am = sum((c.resource for c in app.containers.values() if c.is_am), ZERO)
        usage = app.usage * sign
        am = am * sign
        for p in queue.ancestors():
            p.usage = p.usage + usage
            p.am_usage = p.am_usage + am
            if app.runnable:
                p.running_apps += sign
            if app.active:
                p.active_apps += sign
            for k in app.kinds:
                p.wanting[k] = p.wanting.get(k, 0) + sign
        self.limits.count(app, sign)

    # ------------------------------------------------------------------ queues
    def _can_create(self, name: str) -> bool:
        parts = name.split(".")
        if parts[0] != "root" or not valid_queue_name(name):
            return False
        for i in range(len(parts) - 1, 0, -1):
            anc = self.queues.get(".".join(parts[:i]))
            if anc is not None:
                return anc is self.root or anc.is_parent
        return False

    def can_hold(self, name: str) -> str | None:
        """Why an app cannot sit in queue ``name`` (a full name), or None if it
        can: root and parent queues hold no apps, and a queue holding apps
        never becomes a parent, whoever asks."""
        parts = name.split(".")
        if parts[0] != "root" or not valid_queue_name(name):
            return f"{name!r} is not a valid queue name"
        if name == "root":
            return "root is the parent of every queue; apps go in leaf queues"
        queue = self.queues.get(name)
        if queue is not None:
            return f"{name} is a parent queue; apps go in leaf queues" if not queue.is_leaf else None
        for i in range(len(parts) - 1, 0, -1):
            anc = self.queues.get(".".join(parts[:i]))
            if anc is not None:
                if anc.apps:
                    return f"{anc.name} holds apps and cannot become the parent of {name}"
                return None
        return None

    def _ensure_queue(self, name: str, force: bool = False) -> Queue:
        """The queue of this name, made (with missing parents) if the rules
        allow it, or whatever they say when ``force``; never under a queue
        that holds apps."""
        queue = self.queues.get(name)
        if queue is not None:
            return queue
        if not force and not self._can_create(name):
            raise PlacementRejected(f"cannot create queue {name}")
        parent_name = name.rsplit(".", 1)[0]
        parent = self._ensure_queue(parent_name, force=True)
        if parent.apps:
            raise PlacementRejected(f"{parent_name} holds apps and cannot become the parent of {name}")
        queue = Queue(name, parent, self.clock.now())
        bisect.insort(parent.children, queue, key=_by_name)
        parent.is_parent = True
        self.queues[name] = queue
        queue.apply_config(None, self.config, self.cluster, self.share_rule)
        return queue

    def _prune(self, queue: Queue | None) -> None:
        """Forget a dynamic queue once its last app has left, and each empty
        dynamic queue above it, as YARN's FairScheduler removes empty dynamic
        queues: a queue per user must not outlive the user's apps (10,000
        users would leave 10,000 queues in every table and every pass)."""
        while (queue is not None and queue.dynamic and queue.parent is not None and not queue.apps
               and not queue.children and queue.name in self.queues):
            parent = queue.parent
            parent.children.remove(queue)
            del self.queues[queue.name]
            for key, _local in self.offers:
                self._orders.pop((queue.name, key), None)
            queue = parent

    def _may_submit(self, name: str, user: str, groups: Sequence[str]) -> bool:
        def acls(n: str) -> tuple[str | None, str | None]:
            queue = self.queues.get(n)
            return (queue.acl_submit, queue.acl_administer) if queue is not None else (None, None)

        return may_submit(name, user, groups, acls)

    # ------------------------------------------------------------------ nodes
    def add_node(self, node_id: str, host: str, rack: str, capacity: Resource) -> None:
        if node_id in self.nodes:
            self.update_node(node_id, capacity)
            return
        self.nodes[node_id] = Node(node_id, host, rack, capacity)
        self._set_cluster(self.cluster + capacity)
        if self._refused_apps:
            self._node_changed(node_id)

    def update_node(self, node_id: str, capacity: Resource) -> None:
        node = self.nodes[node_id]
        self._set_cluster(self.cluster - node.capacity + capacity)
        node.capacity = capacity
        if self._refused_apps:
            self._node_changed(node_id)

    def remove_node(self, node_id: str) -> list[str]:
        """Forget a node; its containers are gone with it (ids returned)."""
        node = self.nodes.pop(node_id, None)
        if node is None:
            return []
        if self._refused_apps:
            self._node_changed(node_id)
        lost = list(node.containers)
        for cid in lost:
            self.container_finished(cid)
        self._set_cluster(self.cluster - node.capacity)
        return lost

    def _set_cluster(self, total: Resource) -> None:
        self.cluster = total
        for p in self.queues.values():  # percentages in maxResources follow the cluster
            if p.max_share_spec is not None:
                p.resolve_max_share(total)

    # ------------------------------------------------------------------- apps
    def place_app(self, user: str, queue: str | None = None, groups: Sequence[str] = (),
                  recovering: bool = False, trace: list | None = None) -> str:
        """Where the placement policy would put a new app (raises
        PlacementRejected); nothing changes until ``add_app``.  When
        ``recovering`` an app the RM already holds in a queue no app can be
        in, rules that name such a queue (or one its ACLs close to the user)
        fall through to the next."""
        queues = self.queues
        name = place(self.config.placement_rules, queue, user, tuple(groups),
                     configured=lambda n: n in queues and not queues[n].dynamic,
                     leaf=lambda n: n in queues and queues[n].is_leaf, problem=self._placement_problem,
                     may_submit=self._may_submit, passing=recovering, trace=trace)
        if not recovering:
            why = self._vetoed(name, user)
            if why:
                if trace:
                    trace[-1].update(outcome="rejected", why=why)
                raise PlacementRejected(why)
        return name

    def _vetoed(self, name: str, user: str) -> str | None:
        """A policy above queue ``name`` refusing ``user`` there (Dynamic
        Priority: only the queue's holders may spend its budget)."""
        parts = name.split(".")
        for i in range(len(parts) - 1, 0, -1):
            above = self.queues.get(".".join(parts[:i]))
            if above is not None:
                why = above.policy.admits(above, name, user, self.ctx)
                if why:
                    return why
        return None

    def _placement_problem(self, name: str) -> str | None:
        """Why a new app cannot go to queue ``name``: as can_hold, and a new
        queue only under root or a parent queue (YARN never turns a leaf into
        a parent for an app)."""
        why = self.can_hold(name)
        if why is None and name not in self.queues and not self._can_create(name):
            return f"no queue {name}, and it cannot be made under a leaf queue"
        return why

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
        leaf = self._ensure_queue(leaf_name, force=placed)
        if leaf.children:
            raise PlacementRejected(f"{leaf_name} is a parent queue; apps go in leaf queues")
        now = self.clock.now()
        app = App(app_id, user, int(priority), now if submit_time is None else submit_time, groups)
        app.delay = self.delay
        if name:
            app.app_name = name
        app.queue = leaf
        bisect.insort(leaf.apps, app, key=_by_submit)
        self.apps[app_id] = app
        self._order_version += 1
        self.limits.waiting += 1
        self._without_am += 1
        self._update_runnability()
        return leaf.name

    def mark_unmanaged(self, app_id: str) -> None:
        """The app's AM runs outside the cluster (an unmanaged AM, or an MRv1
        app): none of its containers is an AM."""
        app = self.apps[app_id]
        app.unmanaged = True
        if not app.has_am:
            app.has_am = True
            self._without_am -= 1

    def remove_app(self, app_id: str) -> None:
        app = self.apps.get(app_id)
        if app is None:
            return
        for cid in list(app.containers):
            self.container_finished(cid)
        self._attach(app, app.queue, -1)
        app.queue.apps.remove(app)
        del self.apps[app_id]
        self._refused_apps.discard(app_id)
        self._order_version += 1
        if not app.runnable:
            self.limits.waiting -= 1
        if not app.has_am:
            self._without_am -= 1
        self._skipped.pop(app_id, None)
        self._prune(app.queue)
        self._update_runnability()

    def move_target_problem(self, queue: str, may_create: bool = False) -> str | None:
        """Why an app cannot be moved to ``queue``, or None. As YARN: the
        target is an existing leaf queue; a new one only where the placement
        policy's specified rule may create queues (or ``may_create``: a move
        Python itself ordered to where its placement put the app)."""
        name = queue_path(queue)
        target = self.queues.get(name)
        if target is None:
            creating = may_create or any(r.name == "specified" and r.create for r in self.config.placement_rules)
            if not (creating and self._can_create(name)):
                return (f"no queue {name}: moves go to an existing leaf queue (or a new one only where the "
                        f"placement policy's specified rule may create it)")
            return None
        if not target.is_leaf:
            return f"{name} is a parent queue; apps go in leaf queues"
        return None

    def move_app(self, app_id: str, queue: str, force: bool = False, may_create: bool = False) -> str:
        """Move a running app, as ``yarn application -movetoqueue`` does.
        Raises ValueError when the target cannot take it; ``force`` follows a
        move the driver has already made, whatever the limits."""
        app = self.apps[app_id]
        name = queue_path(queue)
        problem = None if force else self.move_target_problem(name, may_create)
        if problem:
            raise ValueError(problem)
        try:
            target = self._ensure_queue(name, force=force)
        except PlacementRejected as e:
            raise ValueError(str(e)) from None
        if not target.is_leaf:
            raise ValueError(f"{name} is a parent queue; apps go in leaf queues")
        if target is app.queue:
            return name
        if app.runnable and not force:
            for p in target.ancestors():
                if p not in set(app.queue.ancestors()) and p.running_apps + 1 > p.max_running_apps:
                    self._prune(target)  # made for this move only
                    raise ValueError(f"moving {app_id} to {name} would exceed maxRunningApps of {p.name}")
        source = app.queue
        self._attach(app, source, -1)
        source.apps.remove(app)
        app.queue = target
        bisect.insort(target.apps, app, key=_by_submit)
        self._attach(app, target, +1)
        self._order_version += 1
        self._prune(source)
        self._update_runnability()
        return name

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
        active = app.runnable and app.pending.any_positive()
        if self.kind != "yarn":  # a slot cluster: which kinds of slot it asks for
            kinds = frozenset(k for k, _ in self.offers if active and getattr(app.pending, k) > 0)
            if kinds != app.kinds:
                for k in kinds ^ app.kinds:
                    d = 1 if k in kinds else -1
                    for p in app.queue.ancestors():
                        p.wanting[k] = p.wanting.get(k, 0) + d
                app.kinds = kinds
                self._order_version += 1
        if active != app.active:
            app.active = active
            self._order_version += 1
            d = 1 if active else -1
            for p in app.queue.ancestors():
                p.active_apps += d

    def batch(self) -> "_Batch":
        """``with engine.batch():`` applies many events and settles the
        running-app limits once at the end (a resync of thousands of apps
        stays linear)."""
        return self._batch_ctx

    def _update_runnability(self) -> None:
        """Running-app limits: waiting apps become runnable in order of
        priority and submit time while their user and every queue above them
        have room.  A runnable app stays runnable."""
        if not self.limits.waiting:
            return
        if self._batch:
            self._batch_dirty = True
            return
        for app in self.limits.settle(self.apps.values()):
            for p in app.queue.ancestors():
                p.running_apps += 1
            self._refresh_active(app)

    @property
    def user_running(self) -> dict[str, int]:
        """Runnable apps per user (the running-app limits' count)."""
        return self.limits.user_running

    # ------------------------------------------------------------- containers
    def container_launched(self, container_id: str, app_id: str, node_id: str, resource: Resource,
                           is_am: bool = False, priority: int = 0,
                           launch_time: float | None = None) -> None:
        """A container the driver started itself (a FIFO fallback, a resync)."""
        if container_id in self.containers or app_id not in self.apps or node_id not in self.nodes:
            return
        now = self.clock.now() if launch_time is None else launch_time
        self._launch(Container(container_id, app_id, node_id, resource, now, is_am, priority))

    def _launch(self, c: Container) -> None:
        app = self.apps[c.app_id]
        node = self.nodes[c.node_id]
        self.containers[c.container_id] = c
        app.containers[c.container_id] = c
        node.containers.add(c.container_id)
        node.used = node.used + c.resource
        app.usage = app.usage + c.resource
        app.ran += 1
        if c.is_am and not app.has_am:
            app.has_am = True
            self._without_am -= 1
        for p in app.queue.ancestors():
            p.usage = p.usage + c.resource
            if c.is_am:
                p.am_usage = p.am_usage + c.resource

    def container_finished(self, container_id: str) -> None:
        c = self.containers.pop(container_id, None)
        if c is None:
            return
        node = self.nodes.get(c.node_id)
        if node is not None:
            node.containers.discard(container_id)
            node.used = node.used - c.resource
            if c.taken_for is not None:
                self.preemption.released(c, node, self.clock.now())
        app = self.apps.get(c.app_id)
        if app is None:
            return
        app.containers.pop(container_id, None)
        app.usage = app.usage - c.resource
        for p in app.queue.ancestors():
            p.usage = p.usage - c.resource
            if c.is_am:
                p.am_usage = p.am_usage - c.resource
        if c.is_am:
            self._sync_has_am(app)

    def container_refused(self, engine_id: str, remember: bool) -> Container | None:
        """The driver did not carry out the assignment ``engine_id``: its
        container goes and its ask comes back (the driver resends the app).
        With ``remember`` (the refusal stays true until something changes)
        the app is not offered that node at that level again until its asks
        or the node change. Returns the container, or None if unknown."""
        c = self.containers.get(engine_id)
        if c is None:
            return None
        self.container_finished(engine_id)
        app = self.apps.get(c.app_id)
        if remember and app is not None and c.level is not None:
            app.refuse(c.node_id, c.level, self.clock.now())
            self._refused_apps.add(c.app_id)
        return c

    def _node_changed(self, node_id: str) -> None:
        """A node added, resized or removed: refusals on it may no longer hold."""
        for app_id in list(self._refused_apps):
            app = self.apps.get(app_id)
            if app is None:
                self._refused_apps.discard(app_id)
                continue
            app.refused = {r for r in app.refused if r[0] != node_id}
            if not app.refused:
                self._refused_apps.discard(app_id)

    def confirm_container(self, engine_id: str, container_id: str, is_am: bool) -> None:
        """The driver started the engine's container ``engine_id`` as
        ``container_id``; whether it is the app's AM is the driver's word
        (an earlier AM assignment may have been refused)."""
        c = self.containers.get(engine_id)
        if c is None:
            return
        self.rename_container(engine_id, container_id)
        if c.is_am != is_am:
            app = self.apps[c.app_id]
            delta = c.resource if is_am else c.resource * -1
            for p in app.queue.ancestors():
                p.am_usage = p.am_usage + delta
            c.is_am = is_am
            self._sync_has_am(app)

    def _sync_has_am(self, app: App) -> None:
        has = app.unmanaged or any(c.is_am for c in app.containers.values())
        if has != app.has_am:
            app.has_am = has
            self._without_am += -1 if has else 1

    def rename_container(self, old_id: str, new_id: str) -> None:
        """The driver's real id for a container the engine placed."""
        if old_id == new_id:
            return
        c = self.containers.pop(old_id, None)
        if c is None:
            return
        c.container_id = new_id
        self.containers[new_id] = c
        app = self.apps[c.app_id]
        app.containers[new_id] = app.containers.pop(old_id)
        node = self.nodes[c.node_id]
        node.containers.discard(old_id)
        node.containers.add(new_id)

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
        if last is not None and self._skipped:
            # Apps passed over on the last heartbeat waited until this one.
            dt = now - last
            for app in self._skipped.values():
                app.locality_wait += dt
        self._skipped = {}
        self._last_heartbeat = now
        node = self.nodes.get(node_id)
        if node is None:
            return []
        s = self.settings
        limit = min(s.max_assign if s.max_assign > 0 else MAX_ASSIGN_PER_HEARTBEAT,
                    MAX_ASSIGN_PER_HEARTBEAT) if s.assign_multiple else 1
        held = None if room is None else (node.capacity - node.used - room).clamp_zero()
        if held is not None and not held.any_positive():
            held = None
        out: list[Assignment] = []
        for key, local in self.offers:
            yarn = key == "memory_mb"
            if not yarn and not self.root.wanting.get(key) and not node.held:
                continue  # no app asks for this kind of slot
            if not local:  # no delay here: nobody is passed over for locality
                saved, self._skipped = self._skipped, {}
            while len(out) < limit:
                free = node.capacity - node.used if held is None else node.capacity - node.used - held
                if (free.memory_mb <= 0 or free.vcores <= 0) if yarn else getattr(free, key) <= 0:
                    break
                a = None
                if node.held:  # what preemption freed here goes to the queue it was taken for first
                    a = self.preemption.assign_held(node, free, now, key)
                    if a is None:
                        free = free - self.preemption.held_on(node, now)
                        if (free.memory_mb <= 0 or free.vcores <= 0) if yarn else getattr(free, key) <= 0:
                            break
                if a is None:
                    a = self.assign_in(self.root, node, free, now, not local, key)
                if a is None:
                    break
                out.append(a)
            if not local:
                self._skipped = saved
        return out

    def assign_in(self, queue: Queue, node: Node, free: Resource, now: float,
                  anywhere: bool = False, key: str = "memory_mb") -> Assignment | None:
        """One container (or slot) on ``node`` for an app under ``queue``, or
        None. ``anywhere``: at any level the asks allow, delay scheduling
        aside (capacity preemption took back for this queue; an offer that
        waits for no locality). ``key``: the dimension on offer, which
        orders the queues and apps (resources.OFFERS)."""
        if queue.active_apps == 0:
            return None
        u, cap = queue.usage, queue.max_share
        if key == "memory_mb":
            if u.memory_mb >= cap.memory_mb or u.vcores >= cap.vcores:
                return None
        elif not queue.wanting.get(key) or getattr(u, key) >= getattr(cap, key):
            return None
        policy = queue.policy
        cluster = self.cluster
        if policy.flatten or not queue.children:
            return self._assign_among_apps(queue, node, free, now, anywhere, key)
        if key == "memory_mb":
            kids = [c for c in queue.children if c.active_apps]
            if len(kids) > 1:
                kids = policy.order(kids, cluster)
        else:
            kids = [c for c in queue.children if c.wanting.get(key)]
            if len(kids) > 1:
                kids = policy.order(kids, cluster, key)
        for child in kids:
            a = self.assign_in(child, node, free, now, anywhere, key)
            if a is not None:
                return a
        return None

    def _assign_among_apps(self, queue: Queue, node: Node, free: Resource,
                           now: float, anywhere: bool = False, key: str = "memory_mb") -> Assignment | None:
        """Offer the node to a queue's apps in policy order.  An app with
        nothing it may run here yet (delay scheduling) is passed over and
        counted as skipped; the order is only needed once some app can run."""
        if queue.policy.stable_order:
            return self._assign_in_stable_order(queue, node, free, now, anywhere, key)
        apps = _active_apps(queue) if key == "memory_mb" else [a for a in _active_apps(queue) if key in a.kinds]
        host, rack = node.host, node.rack
        levels = {}
        skipped = self._skipped
        offered = _anywhere if anywhere else self.delay.offered  # the delay rule, once per walk
        rule = self.delay
        inline = type(rule) is TimeDelay and not anywhere
        if inline:
            t1, t12 = rule.t1, rule.t1 + rule.t2
        for app in apps:
            # Counted as passed over up front (the usual outcome); withdrawn
            # below for the apps after the one that launches.
            skipped[app.app_id] = app
            if inline and app.locality_level == NODE_LOCAL:
                # TimeDelay.offered's common case written out: a call per app
                # walked cost the heartbeat 20-35% (benchmarks/bench_engine.py,
                # docs/benchmarks.md); tests/test_delay_rule.py checks that
                # both give the same decisions.
                w = app.locality_wait
                level = OFF_SWITCH if w >= t12 else RACK_LOCAL if w >= t1 else NODE_LOCAL
                if (level == OFF_SWITCH or app.want_anywhere or host in app.want_hosts
                        or (level == RACK_LOCAL and rack in app.want_racks)):
                    levels[app.app_id] = level
                continue
            level = offered(app, host, rack)
            if level is not None:
                levels[app.app_id] = level
        if not levels:
            return None
        if len(apps) > 1:
            apps = (queue.policy.order(apps, self.cluster) if key == "memory_mb"
                    else queue.policy.order(apps, self.cluster, key))
        for i, app in enumerate(apps):
            level = levels.get(app.app_id)
            if level is None:
                continue
            a = self._try_app(app, node, free, now, level, key)
            if a is not None:
                for later in apps[i + 1:]:  # never offered this node after all
                    if skipped.pop(later.app_id, None) is not None and not anywhere:
                        later.withdrawn()
                return a
        return None

    def _assign_in_stable_order(self, queue: Queue, node: Node, free: Resource,
                                now: float, anywhere: bool = False, key: str = "memory_mb") -> Assignment | None:
        """As ``_assign_among_apps`` for a policy whose order does not move
        with usage (FIFO): the order is kept between heartbeats and walked
        only as far as the first app that launches.  The apps walked past
        are the skipped ones, as before."""
        cached = self._orders.get((queue.name, key))
        if cached is None or cached[0] != self._order_version:
            apps = _active_apps(queue) if key == "memory_mb" else [a for a in _active_apps(queue) if key in a.kinds]
            if len(apps) > 1:
                apps = (queue.policy.order(apps, self.cluster) if key == "memory_mb"
                        else queue.policy.order(apps, self.cluster, key))
            cached = self._orders[(queue.name, key)] = (self._order_version, apps)
        host, rack = node.host, node.rack
        skipped = self._skipped
        offered = _anywhere if anywhere else self.delay.offered  # the delay rule, once per walk
        for app in cached[1]:
            if not app.active or (key != "memory_mb" and key not in app.kinds):  # its last launched earlier on
                continue
            skipped[app.app_id] = app
            level = offered(app, host, rack)
            if level is not None:
                a = self._try_app(app, node, free, now, level, key)
                if a is not None:
                    return a
        return None

    def _try_app(self, app: App, node: Node, free: Resource, now: float,
                 allowed: int, key: str = "memory_mb") -> Assignment | None:
        """The app's first request (by priority) of the kind on offer that
        fits the node's ``free`` room at a level its asks and ``allowed``
        permit."""
        yarn = key == "memory_mb"
        for prio in sorted(app.requests):
            req = app.requests[prio]
            if req.num_containers <= 0:
                continue
            r = req.resource
            if yarn:
                if r.memory_mb > free.memory_mb or r.vcores > free.vcores or not (r.memory_mb > 0 or r.vcores > 0):
                    continue  # a container of no size would fit forever: never placed (the door refuses it)
            elif getattr(r, key) <= 0 or not r.fits_in(free):
                continue
            level = req.locality_on(node)
            # A level the shim refused here: the next one this node allows.
            while level is not None and app.refused and app.is_refused(node.node_id, level, now):
                level = next((lv for lv in LEVELS[level + 1:] if req.allows_on(node, lv)), None)
            if level is None or (level > allowed and req.has_locality and req.relax_locality):
                continue
            is_am = not app.has_am and not app.containers
            if not app.queue.fits(r, is_am, self.cluster):
                continue
            return self._commit(app, req, node, level, is_am, now, key)
        return None

    def _commit(self, app: App, req: Request, node: Node, level: int, is_am: bool,
                now: float, key: str = "memory_mb") -> Assignment:
        app.take(req, node, level)
        r = req.resource
        self._seq += 1
        cid = f"{app.app_id}#{self._seq}"
        c = Container(cid, app.app_id, node.node_id, r, now, is_am, req.priority)
        c.level = level
        self._launch(c)
        if key not in self._no_wait:  # a launch the app waited for locality for
            app.launched(level, req.has_locality)
        self._skipped.pop(app.app_id, None)
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
        if self.settings.preemption or self._policy_hooks:
            return True
        if self._without_am:
            return True  # the AM limit reads fair shares
        return self._has_min_shares

    def update(self) -> list[Preemption]:
        """The periodic pass: runnability, demand, fair shares, starvation,
        and the containers to take back."""
        now = self.clock.now()
        self._update_runnability()
        self._update_demand(self.root)
        ctx = self.ctx
        ctx.cluster = self.cluster
        for queue in self.queues.values():
            queue.policy.on_update(queue, now, ctx)
        self.root.fair_share = self.cluster
        self.root.steady_fair_share = self.cluster
        self._update_shares(self.root)
        on, eligible = self.preemption_scope()
        if not on:
            self.preemption.track(now)  # how long queues wait is worth knowing all the same
            return []
        return self.preemption.plan(now, eligible)

    def preemption_scope(self):
        """Whether preemption may act, and for which leaf queues (a predicate;
        None: all): everywhere when it is on, else under the queues whose
        policy preempts among their own children."""
        if self.settings.preemption:
            return True, None
        under = {p.name for p in self.queues.values() if p.children and p.policy.preempts(p, self.ctx)}
        if not under:
            return False, None
        return True, lambda queue: queue.parent is not None and queue.parent.name in under

    def _update_demand(self, queue: Queue) -> Resource:
        total = ZERO
        for child in queue.children:
            total = total + self._update_demand(child)
        for app in queue.apps:
            app.demand = app.usage + app.pending if app.runnable else app.usage
            total = total + app.demand
        queue.demand = total.min(queue.max_share)
        return total

    def _shares(self, queue: Queue, children: list, total: Resource, steady: bool) -> list[Resource]:
        """The queue's policy splits ``total`` among ``children``: once on a
        YARN cluster, once per kind of slot on an MRv1 one."""
        policy, rule = queue.policy, self.share_rule
        if self.kind == "yarn":
            return _compute_shares(policy, children, total, steady, rule, queue, self.ctx)
        out = None
        for key, _local in self.offers:
            part = _compute_shares(policy, children, total, steady, rule, queue, self.ctx, key)
            out = part if out is None else [a + b for a, b in zip(out, part)]
        return out

    def _update_shares(self, queue: Queue) -> None:
        if queue.children:
            active = [c for c in queue.children if c.running_apps > 0]
            shares = self._shares(queue, active, queue.fair_share, False) if active else []
            for c in queue.children:
                c.fair_share = ZERO
            for c, share in zip(active, shares):
                c.fair_share = share
            steady = self._shares(queue, queue.children, queue.steady_fair_share, True)
            for c, share in zip(queue.children, steady):
                c.steady_fair_share = share
            for c in queue.children:
                self._update_shares(c)
        if queue.apps:
            runnable = [a for a in queue.apps if a.runnable]
            shares = self._shares(queue, runnable, queue.fair_share, False) if runnable else []
            for a in queue.apps:
                a.fair_share = ZERO
            for a, share in zip(runnable, shares):
                a.fair_share = share

    def starvation(self, queue: Queue, now: float | None = None) -> tuple[float, float]:
        """Seconds the queue has been below its min share and its fair share
        threshold, across preemption rounds (``Preemptor.starvation``)."""
        return self.preemption.starvation(queue, self.clock.now() if now is None else now)

    # ------------------------------------------------------------- read side
    def describe_queues(self) -> list[dict]:
        """Plain rows for the CLI, web UI and metrics."""
        now = self.clock.now()
        rows = []
        for p in self.root.walk():
            since_min, since_fair = self.starvation(p, now)
            dims = compared(self, p)  # as preemption compares
            shown = self.dims
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
                "below_min_share": not _at_least(p.usage, p.min_share.min(p.demand), dims),
                "below_fair_share": not _at_least(p.usage, (p.fair_share * p.fair_share_threshold).min(p.demand),
                                                  dims),
            })
        return rows

    def describe_apps(self) -> list[dict]:
        """Plain rows per app for the web UI and API."""
        names = ("node_local", "rack_local", "off_switch")
        dims = self.dims
        rows = []
        for app in sorted(self.apps.values(), key=_by_submit):
            rows.append({
                "id": app.app_id, "name": app.app_name, "user": app.user, "queue": app.queue.name,
                "priority": app.priority,
                "weight": app.weight, "submit_time": app.start_time, "runnable": app.runnable,
                "running_containers": len(app.containers), "usage": app.usage.to_dict(dims),
                "demand": (app.usage + app.pending).to_dict(dims), "fair_share": app.fair_share.to_dict(dims),
                "locality_level": names[app.locality_level], "locality_wait": app.locality_wait,
            })
        return rows


class _Batch:
    __slots__ = ("engine",)

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def __enter__(self) -> Engine:
        self.engine._batch += 1
        return self.engine

    def __exit__(self, *exc) -> None:
        e = self.engine
        e._batch -= 1
        if not e._batch and e._batch_dirty:
            e._batch_dirty = False
            e._update_runnability()


def _compute_shares(policy, children, total: Resource, steady: bool, rule: str, queue=None,
                    ctx=None, key: str | None = None) -> list[Resource]:
    """A policy's shares under the rule in force; a plugin written before
    the rule existed (no ``rule`` parameter) is called as it was. ``key``:
    the kind of slot being shared (MRv1); None for a YARN container."""
    if key is not None:
        if takes_queue(policy):
            return policy.compute_shares(children, total, steady=steady, rule=rule, queue=queue, ctx=ctx, key=key)
        return policy.compute_shares(children, total, steady=steady, rule=rule, key=key)
    if takes_queue(policy):
        return policy.compute_shares(children, total, steady=steady, rule=rule, queue=queue, ctx=ctx)
    if takes_rule(policy):
        return policy.compute_shares(children, total, steady=steady, rule=rule)
    return policy.compute_shares(children, total, steady=steady)


def _active_apps(queue: Queue) -> list[App]:
    """Apps with something to run under ``queue``, skipping idle subtrees
    (a flattening policy such as FIFO walks the whole tree per heartbeat)."""
    if not queue.children:
        return [a for a in queue.apps if a.active]
    out: list[App] = []
    for child in queue.children:
        if child.active_apps:
            out += _active_apps(child)
    return out


def _anywhere(app: App, host: str, rack: str) -> int:
    """Capacity preemption took back for the app's queue: any level its asks allow."""
    return OFF_SWITCH


def _by_name(queue: Queue) -> str:
    return queue.name


def _by_submit(app: App) -> tuple:
    """Apps are kept in this order so policies can sort them stably."""
    return (app.start_time, app.app_id)


