"""An engine's state copied into an independent engine, for a dry run, a
forecast or a shadow policy, without pickling the world.

A driver holds its lock only for short turns: ``keep`` brings the copies
the engine keeps of its apps and containers up to date with what changed
since the last fork (``Kept``), in as many turns as it likes; ``snapshot``
reads the rest (every mutable part copied, every immutable one, a
Resource, a config, a policy, shared); ``build``, outside the lock, makes
an engine of them, with the links between its objects tied anew.
"""

from __future__ import annotations

import contextlib
import copy
import gc
import operator

from .app import App, CountDelay, Request
from .node import Container, Node
from .preemption import Preemptor
from .queue import Queue, Skipped
from .target import TargetDelay
from .tree import QueueTree

# The engine's own attributes that are plain values or shared immutables.
_ENGINE_PLAIN = ("kind", "dims", "offers", "settings", "cluster", "config", "share_rule", "_has_min_shares",
                 "_policy_hooks", "_order_version", "_without_am", "_last_heartbeat", "_seq", "_batch",
                 "_batch_dirty")


def _copier(cls):
    """A function that copies an object of ``cls`` slot by slot, written
    out (a loop of setattr costs three times as much per object). A class
    that watches its attributes (``Queue.__setattr__`` tells the parent of
    a usage change, and the copy's parent is the live one until ``build``
    ties it) is copied past the watch. The slots of its bases are copied too."""
    names = [name for k in reversed(cls.__mro__) for name in k.__dict__.get("__slots__", ())]
    body = "".join(f"    n.{name} = o.{name}\n" for name in names)
    if cls.__setattr__ is object.__setattr__:
        made, done = cls, ""
    else:  # written as an unwatched twin of the same layout, then made the class again
        made, done = type(cls.__name__, (cls,), {"__slots__": (), "__setattr__": object.__setattr__}), \
            "    n.__class__ = cls\n"
    scope = {"new": object.__new__, "made": made, "cls": cls}
    exec(f"def copy(o):\n    n = new(made)\n{body}{done}    return n\n", scope)  # noqa: S102 (slot names only)
    return scope["copy"]


_copy_app, _copy_queue, _copy_request = _copier(App), _copier(Queue), _copier(Request)
_copy_node, _copy_container = _copier(Node), _copier(Container)
_copy_delay = _copier(TargetDelay)


#: An app's delay state: it moves on most heartbeats (a group's wait,
#: missed opportunities), so it is kept apart from the rest of the app.
WAIT = ("waited", "passed", "joined_at", "missed_opportunities", "locality_level")
_wait_of = operator.attrgetter(*WAIT)
#: What copying an app costs against reading one part of it (about eight
#: times as much, measured here), in ``Kept.sync``'s units of work.
APP_COPY = 8


class Kept:
    """The apps and containers as forks last copied them, so the next fork
    copies under the driver's lock only what changed since (``App.touch``,
    ``touch_wait``, ``touch_share``; ``Engine._touch_container``): an app
    changed is copied again (``apps``); one whose delay state (``waits``)
    or demand and fair share (``shares``) alone moved has just that read
    again. A kept copy is never written: snapshots share the maps
    (``shared``: the next change copies a map before writing it), and
    ``build`` copies each app again for its engine.
    ``groups`` counts the apps passed over with each group (``queue.Passed``):
    a group's wait moves without its apps changing, so a snapshot reads it
    from the group."""

    __slots__ = ("apps", "waits", "shares", "groups", "containers", "changed", "waits_changed", "shares_changed",
                 "containers_changed", "shared")

    def __init__(self) -> None:
        self.apps: dict[str, App] = {}
        self.waits: dict[str, tuple] = {}
        self.shares: dict = {}
        self.groups: dict = {}
        self.containers: dict[str, Container] = {}
        self.changed: set[App] = set()
        self.waits_changed: set[App] = set()
        self.shares_changed: set[App] = set()
        self.containers_changed: set[str] = set()  # container ids
        self.shared = False

    def pending(self) -> int:
        """The work left, in ``sync``'s units."""
        return (APP_COPY * len(self.changed) + len(self.waits_changed) + len(self.shares_changed)
                + len(self.containers_changed))

    def sync(self, engine, most: int | None = None) -> int:
        """Read again from ``engine`` what changed, up to ``most`` units of
        work (None: all; an app copied again counts APP_COPY, the rest 1);
        the work left."""
        if self.shared:
            self.apps, self.waits, self.shares = dict(self.apps), dict(self.waits), dict(self.shares)
            self.containers = dict(self.containers)
            self.shared = False
        budget = float("inf") if most is None else most
        cids, kept, containers = self.containers_changed, self.containers, engine.containers
        while cids and budget > 0:
            cid = cids.pop()
            budget -= 1
            c = containers.get(cid)
            if c is None:
                kept.pop(cid, None)
            else:
                kept[cid] = _copy_container(c)
        live = engine.apps
        for pending, read, cost in ((self.changed, self._copy, APP_COPY), (self.waits_changed, self._wait, 1),
                                    (self.shares_changed, self._share, 1)):
            while pending and budget > 0:
                a = pending.pop()
                budget -= cost
                b = live.get(a.app_id)
                if b is not a:  # gone (an app since added under its id touched itself)
                    if b is None:
                        self._drop(a.app_id)
                    continue
                read(a)
        return self.pending()

    def _copy(self, a: App) -> None:
        self.waits_changed.discard(a)
        self.shares_changed.discard(a)
        self.apps[a.app_id] = _keep(a)
        self._wait(a)
        self._share(a)

    def _wait(self, a: App) -> None:
        old = self.waits.get(a.app_id)
        if old is not None and old[1] is not None:
            self._ungroup(old[1])
        self.waits[a.app_id] = _wait_of(a)
        if a.passed is not None:
            self.groups[a.passed] = self.groups.get(a.passed, 0) + 1

    def _share(self, a: App) -> None:
        self.shares[a.app_id] = (a.demand, a.fair_share)

    def _drop(self, app_id: str) -> None:
        self.apps.pop(app_id, None)
        self.shares.pop(app_id, None)
        old = self.waits.pop(app_id, None)
        if old is not None and old[1] is not None:
            self._ungroup(old[1])

    def _ungroup(self, g) -> None:
        n = self.groups[g] - 1
        if n:
            self.groups[g] = n
        else:
            del self.groups[g]


def keep(engine, most: int | None = None) -> int:
    """Bring what ``engine`` keeps for its forks up to date, at most
    ``most`` units of it (under the driver's lock, in as many short holds
    as it likes before the snapshot); the work left, in those units. The first
    call starts keeping: every app and container is left."""
    kept = engine._kept
    if kept is None:
        kept = engine._kept = Kept()
        for a in engine.apps.values():
            a.kept = kept
        kept.changed.update(engine.apps.values())
        kept.containers_changed.update(engine.containers)
    return kept.sync(engine, most)


def forget(engine) -> None:
    """Drop what ``engine`` keeps of its apps (a reload makes the tree
    again): the next fork copies every app."""
    if engine._kept is not None:
        for a in engine.apps.values():
            a.kept = None
        engine._kept = None


def touch_all(engine) -> None:
    """Every app may have changed (a policy's update hook ran)."""
    if engine._kept is not None:
        engine._kept.changed.update(engine.apps.values())


def _keep(a: App) -> App:
    """A copy of ``a`` to keep: its own maps copied, its containers by id
    (its delay state and fair share are kept apart: ``Kept``)."""
    b = _copy_app(a)
    b.kept = None
    b.want_hosts, b.want_racks, b.refused = dict(a.want_hosts), dict(a.want_racks), set(a.refused)
    b.containers = tuple(a.containers)
    reqs = b.requests = {}
    for prio, r in a.requests.items():
        q = reqs[prio] = _copy_request(r)
        q.hosts, q.racks = dict(r.hosts), dict(r.racks)
    return b


class Snapshot:
    """Copies of an engine's objects at one moment, their links to each
    other still pointing into the live engine until ``build`` ties them;
    the apps are the engine's kept copies (``Kept``), shared, with the
    waits of the groups they are passed over in."""

    __slots__ = ("engine", "apps", "waits", "shares", "accs", "containers", "order", "nodes", "queues", "services", "user_running",
                 "waiting", "skipped", "refused_apps", "stream", "delay")


def snapshot(engine) -> Snapshot:
    """Copy ``engine``'s state (under its driver's lock; changes nothing
    the engine decides by). The apps changed since the last snapshot are
    copied; the rest are the copies kept from it. A driver holding a lock
    pauses the collector around the hold (``collector_paused``)."""
    s = Snapshot()
    s.engine = {name: getattr(engine, name) for name in _ENGINE_PLAIN}
    s.delay = engine.delay
    keep(engine)
    kept = engine._kept
    s.apps, s.waits, s.shares, s.containers = kept.apps, kept.waits, kept.shares, kept.containers
    kept.shared = True
    s.order = (list(engine.apps), list(engine.containers))  # the live maps' order: decisions read it
    s.accs = {g: g.acc for g in kept.groups}
    nodes = s.nodes = {}
    for nid, n in engine.nodes.items():
        m = nodes[nid] = _copy_node(n)
        m.containers, m.held = set(n.containers), dict(n.held)
    queues = s.queues = {}
    for name, q in engine.queues.items():
        p = queues[name] = _copy_queue(q)
        p.wanting, p.orders, p.asking_cache = dict(q.wanting), {}, {}
        p.policy_state = copy.deepcopy(q.policy_state) if q.policy_state is not None else None
        p.forget_order()
        p.children, p.apps = list(q.children), list(q.apps)
        p.launches = q.launches.copy()
        if q.delay is not None:
            p.delay = _copy_delay(q.delay)
    s.services = engine.ctx.services
    s.stream = engine.ctx.stream
    s.user_running = dict(engine.limits.user_running)
    s.waiting = engine.limits.waiting
    s.skipped = engine._skipped.app_ids()
    s.refused_apps = set(engine._refused_apps)
    return s


@contextlib.contextmanager
def collector_paused():
    """Python's collector paused, for a driver's hold of its lock around
    ``snapshot``: the collections the copies would cause come after the
    hold instead of inside it."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def build(s: Snapshot, clock):
    """An independent engine of the copies in ``s``, on ``clock``: their
    links tied to each other (no lock needed: the live engine is not read)."""
    return _build(s, clock)


def _build(s: Snapshot, clock):
    from ..policies import PolicyContext
    from .engine import Engine
    from .limits import MaxRunningApps

    e = Engine.__new__(Engine)
    for name, value in s.engine.items():
        setattr(e, name, value)
    e.clock = clock
    e.ctx = PolicyContext(s.services, s.stream)
    e.ctx.cluster = e.cluster
    app_order, container_order = s.order
    kept_containers = s.containers
    containers = e.containers = {cid: _copy_container(kept_containers[cid]) for cid in container_order}
    e.nodes = s.nodes
    apps, accs = {}, s.accs
    e.apps = apps
    waits, shares = s.waits, s.shares
    kept_apps = s.apps
    for app_id in app_order:
        k = kept_apps[app_id]
        b = apps[app_id] = _copy_app(k)
        b.want_hosts, b.want_racks, b.refused = dict(k.want_hosts), dict(k.want_racks), set(k.refused)
        b.containers = {cid: containers[cid] for cid in k.containers}
        reqs = b.requests = {}
        for prio, r in k.requests.items():
            q = reqs[prio] = _copy_request(r)
            q.hosts, q.racks = dict(r.hosts), dict(r.racks)
        b.waited, g, b.joined_at, b.missed_opportunities, b.locality_level = waits[app_id]  # WAIT
        if g is not None:  # the groups it is passed over in stay behind: its wait as of the snapshot
            b.waited += accs[g] - b.joined_at
        b.passed = None
        b.demand, b.fair_share = shares[app_id]
    e._kept = None
    e.durations = None  # a fork learns nothing: its ends are imagined (engine/durations.py)
    rule = s.delay  # a time rule is two numbers, shared; a count rule reads its engine's nodes
    e.delay = CountDelay(rule.node_threshold, rule.rack_threshold, e.nodes) if isinstance(rule, CountDelay) else rule
    queues = s.queues
    for q in queues.values():
        q.parent = queues[q.parent.name] if q.parent is not None else None
        q.children = [queues[c.name] for c in q.children]
        q.apps = [apps[a.app_id] for a in q.apps]
    for a in apps.values():
        a.queue = queues[a.queue.name]
        a.delay = a.queue.delay or e.delay
    tree = QueueTree.__new__(QueueTree)
    tree.config, tree.ctx, tree.queues, tree.root = e.config, e.ctx, queues, queues["root"]
    e.tree = tree
    e.limits = MaxRunningApps(e.config)
    e.limits.user_running, e.limits.waiting = s.user_running, s.waiting
    e.preemption = Preemptor(e)
    e._skipped = Skipped()
    for a in s.skipped:
        if a in apps:
            e._skipped.add(apps[a])
    e._refused_apps = s.refused_apps
    return e
