"""An engine's state copied into an independent engine, for a dry run, a
forecast or a shadow policy, without pickling the world.

Two steps, so a driver holds its lock only for the first: ``snapshot``
reads the live engine into plain tuples (every mutable part copied, every
immutable one, a Resource, a config, a policy, shared), and ``build``
makes an engine of them, with the links between its objects tied anew.
"""

from __future__ import annotations

import copy

from .app import App
from .locality import CountDelay
from .node import Container, Node
from .preemption import Preemptor
from .queue import Queue, Skipped
from .request import Request
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
    ties it) is copied past the watch."""
    if cls.__setattr__ is object.__setattr__:
        body = "".join(f"    n.{name} = o.{name}\n" for name in cls.__slots__)
    else:
        body = "".join(f"    put(n, {name!r}, o.{name})\n" for name in cls.__slots__)
    scope = {"new": object.__new__, "cls": cls, "put": object.__setattr__}
    exec(f"def copy(o):\n    n = new(cls)\n{body}    return n\n", scope)  # noqa: S102 (slot names only)
    return scope["copy"]


_copy_app, _copy_queue, _copy_request = _copier(App), _copier(Queue), _copier(Request)
_copy_node, _copy_container = _copier(Node), _copier(Container)


class Snapshot:
    """Copies of an engine's objects at one moment, their links to each
    other still pointing into the live engine until ``build`` ties them."""

    __slots__ = ("engine", "apps", "containers", "nodes", "queues", "services", "user_running",
                 "waiting", "skipped", "refused_apps", "stream", "delay")


def snapshot(engine) -> Snapshot:
    """Copy ``engine``'s state (under its driver's lock; changes nothing)."""
    s = Snapshot()
    s.engine = {name: getattr(engine, name) for name in _ENGINE_PLAIN}
    s.delay = engine.delay
    containers = s.containers = {cid: _copy_container(c) for cid, c in engine.containers.items()}
    nodes = s.nodes = {}
    for nid, n in engine.nodes.items():
        m = nodes[nid] = _copy_node(n)
        m.containers, m.held = set(n.containers), dict(n.held)
    apps = s.apps = {}
    for aid, a in engine.apps.items():
        b = apps[aid] = _copy_app(a)
        b.want_hosts, b.want_racks, b.refused = dict(a.want_hosts), dict(a.want_racks), set(a.refused)
        b.waited, b.passed = a.locality_wait, None  # the groups it is passed over in stay behind
        b.containers = {cid: containers[cid] for cid in a.containers}
        reqs = b.requests = {}
        for prio, r in a.requests.items():
            q = reqs[prio] = _copy_request(r)
            q.hosts, q.racks = dict(r.hosts), dict(r.racks)
    queues = s.queues = {}
    for name, q in engine.queues.items():
        p = queues[name] = _copy_queue(q)
        p.wanting, p.policy_state, p.orders = dict(q.wanting), copy.deepcopy(q.policy_state), {}
        p.asking_cache = {}
        p.forget_order()
        p.children, p.apps = list(q.children), list(q.apps)
    s.services = engine.ctx.services
    s.stream = engine.ctx.stream
    s.user_running = dict(engine.limits.user_running)
    s.waiting = engine.limits.waiting
    s.skipped = engine._skipped.app_ids()
    s.refused_apps = set(engine._refused_apps)
    return s


def build(s: Snapshot, clock):
    """An independent engine of the copies in ``s``, on ``clock``: their
    links tied to each other (no lock needed: the live engine is not read)."""
    from ..policies import PolicyContext
    from .engine import Engine
    from .limits import MaxRunningApps

    e = Engine.__new__(Engine)
    for name, value in s.engine.items():
        setattr(e, name, value)
    e.clock = clock
    e.ctx = PolicyContext(s.services, s.stream)
    e.ctx.cluster = e.cluster
    e.containers, e.nodes, e.apps = s.containers, s.nodes, s.apps
    rule = s.delay  # a time rule is two numbers, shared; a count rule reads its engine's nodes
    e.delay = CountDelay(rule.node_threshold, rule.rack_threshold, e.nodes) if isinstance(rule, CountDelay) else rule
    queues = s.queues
    for q in queues.values():
        q.parent = queues[q.parent.name] if q.parent is not None else None
        q.children = [queues[c.name] for c in q.children]
        q.apps = [s.apps[a.app_id] for a in q.apps]
    for a in s.apps.values():
        a.queue = queues[a.queue.name]
        a.delay = e.delay
    tree = QueueTree.__new__(QueueTree)
    tree.config, tree.ctx, tree.queues, tree.root = e.config, e.ctx, queues, queues["root"]
    e.tree = tree
    e.limits = MaxRunningApps(e.config)
    e.limits.user_running, e.limits.waiting = s.user_running, s.waiting
    e.preemption = Preemptor(e)
    e._skipped = Skipped()
    for a in s.skipped:
        if a in s.apps:
            e._skipped.add(s.apps[a])
    e._refused_apps = s.refused_apps
    return e
