"""The policy interface and its registry."""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass, field
from importlib import metadata
from typing import Callable, Sequence

from .fairshare import DESIGN
from ..resources import Resource
from .schedulable import Schedulable

ENTRY_POINT_GROUP = "slotwise.policies"


@dataclass
class PolicyContext:
    """What an engine hands its policies besides the schedulables: objects
    the driver shares by name (``services``; e.g. "market", the Dynamic
    Priority ledger every engine of a server pays into) and which engine
    this is (``stream``: "map" or "reduce" on MRv1, else "")."""

    services: dict = field(default_factory=dict)
    stream: str = ""
    #: The cluster's capacity as of this update pass.
    cluster: Resource = field(default_factory=Resource)


class SchedulingPolicy:
    """How a queue orders its children for a free container and splits its
    fair share among them.  Stateless: everything it needs is on the
    schedulables, so one instance serves every queue.

    Extension points (implement only what you need):
      sort_key        -- order children for the next container (ascending)
      compute_shares  -- split a share among children (pure; may take
                         ``queue`` and ``ctx`` keywords to read its state)
      on_update       -- periodic hook, before shares: e.g. to set weights
      preempts        -- take back containers for this queue's children even
                         when the scheduler's own preemption is off
      admits          -- veto a new app in a queue beneath this one
      explain_child   -- a child's standing, in words, for `explain`
    """

    name = "base"
    #: True for policies that only make sense between apps (like YARN's fifo).
    leaf_only = False
    #: True: a queue with this policy orders all apps beneath it as one list,
    #: ignoring sub-queues (how the baseline FIFO scheduler sees the cluster).
    flatten = False
    #: True when ``sort_key`` reads only what changes with an app's identity
    #: (priority, submit time, name), never usage: the engine may then keep
    #: the order between heartbeats instead of sorting on each one.
    stable_order = False
    #: True when ``order`` sorts by one number per child (``order_key``),
    #: ties in the order the children arrive in, and that number reads
    #: only the child's usage, demand, weight and min share: the engine may
    #: then keep a parent's order of its children between heartbeats and
    #: place again only those whose usage changed (``Queue.kept_order``).
    keyed = False
    #: The dimensions compared for starvation and preemption.
    dimensions: tuple[str, ...] = ("memory_mb",)
    #: The children's settings ``on_update`` sets (a market's weights): a
    #: reload keeps them under the same parent and policy until the next pass,
    #: instead of the file's, so a reload (or a shadow's copy) decides as before it.
    sets_children: tuple[str, ...] = ()

    def sort_key(self, s: Schedulable, cluster: Resource, key: str = "memory_mb"):
        """``key``: the dimension on offer (resources.OFFERS): memory for a
        YARN container, or one kind of MRv1 slot. The engine leaves it out
        for a YARN container, so a plugin without it runs on YARN."""
        raise NotImplementedError

    def order_key(self, s: Schedulable, key: str = "memory_mb") -> float:
        """A keyed policy's number for ``s`` (see ``keyed``)."""
        raise NotImplementedError

    def order(self, children: list, cluster: Resource, key: str = "memory_mb") -> list:
        """Children in the order they are offered a container (or a slot of
        kind ``key``).  They arrive sorted by (start_time, name).  Override
        only to make it faster; it must agree with ``sort_key``."""
        if key == "memory_mb":
            return sorted(children, key=lambda s: self.sort_key(s, cluster))
        return sorted(children, key=lambda s: self.sort_key(s, cluster, key))

    def compute_shares(
        self, children: Sequence[Schedulable], total: Resource, steady: bool = False,
        rule: str = DESIGN, key: str = "memory_mb",
    ) -> list[Resource]:
        """``rule``: "yarn" or "design" (slotwise.fairshare), the rule in
        force. ``key``: the dimension being shared; a slot kind's shares
        hold that dimension only (the engine adds the kinds up)."""
        raise NotImplementedError

    def on_update(self, queue, now: float, ctx: PolicyContext) -> None:
        """Called on every update pass for each queue with this policy, after
        demands and before fair shares are computed."""
        return None

    def preempts(self, queue, ctx: PolicyContext) -> bool:
        return False

    def explain_child(self, queue, child, ctx: PolicyContext) -> str | None:
        return None

    def admits(self, queue, target: str, user: str, ctx: PolicyContext) -> str | None:
        """Why ``user`` may not run an app in queue ``target`` (beneath
        ``queue``), or None."""
        return None


@functools.lru_cache(maxsize=None)
def _share_params(cls: type) -> frozenset:
    try:
        return frozenset(inspect.signature(cls.compute_shares).parameters)
    except (TypeError, ValueError):
        return frozenset()


def takes_rule(policy: SchedulingPolicy) -> bool:
    """Whether ``policy.compute_shares`` accepts the share rule (plugins
    written before it existed do not)."""
    return "rule" in _share_params(type(policy))


def takes_queue(policy: SchedulingPolicy) -> bool:
    """Whether ``policy.compute_shares`` wants the queue being split and the
    PolicyContext (``queue=``, ``ctx=``): for a policy whose shares read what
    its ``on_update`` learnt (Hopper's tail index)."""
    return "queue" in _share_params(type(policy))


def compute_shares_of(policy: SchedulingPolicy, children, total: Resource, steady: bool, rule: str,
                      queue=None, ctx=None, key: str | None = None) -> list[Resource]:
    """``policy``'s shares under the rule in force, each plugin called as it
    was written: without ``rule`` if it predates it, without ``queue`` and
    ``ctx`` unless it takes them, without ``key`` for a YARN container
    (``key``: the kind of slot being shared on MRv1)."""
    kw = {"steady": steady}
    if takes_rule(policy):
        kw["rule"] = rule
    if takes_queue(policy):
        kw["queue"] = queue
        kw["ctx"] = ctx
    if key is not None:
        kw["key"] = key
    return policy.compute_shares(children, total, **kw)


_REGISTRY: dict[str, Callable[[], SchedulingPolicy]] = {}
_INSTANCES: dict[str, SchedulingPolicy] = {}
_entry_points_loaded = False


def register_policy(name: str, factory: Callable[[], SchedulingPolicy]) -> None:
    _REGISTRY[name.lower()] = factory
    _INSTANCES.pop(name.lower(), None)


def _load_builtins_and_entry_points() -> None:
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    from . import drf, dynamic_priority, fair, fifo, hopper, srpt  # noqa: F401  (register themselves)

    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ep.name.lower() in _REGISTRY:
            continue
        try:
            register_policy(ep.name, ep.load())
        except Exception:  # a broken plugin must not take the scheduler down
            import logging

            logging.getLogger(__name__).exception("cannot load policy plugin %s", ep.name)


def known_policy_names() -> list[str]:
    _load_builtins_and_entry_points()
    return sorted(_REGISTRY)


def get_policy(name: str) -> SchedulingPolicy:
    _load_builtins_and_entry_points()
    key = name.lower()
    if key not in _INSTANCES:
        if key not in _REGISTRY:
            raise KeyError(f"unknown scheduling policy {name!r} (known: {', '.join(sorted(_REGISTRY))})")
        _INSTANCES[key] = _REGISTRY[key]()
    return _INSTANCES[key]
