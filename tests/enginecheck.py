"""Checks on an engine's whole state, for the property tests: its
invariants, and a canonical view of what the RM's truth determines (leaving
out what is history: timers, locality waits, runnability, the sequence)."""

from __future__ import annotations

from collections import Counter

from slotwise.resources import ZERO


def _sum(resources):
    total = ZERO
    for r in resources:
        total = total + r
    return total


def check_invariants(e) -> None:
    """Raise AssertionError naming the first broken invariant."""
    for cid, c in e.containers.items():
        assert c.container_id == cid, cid
        assert c.app_id in e.apps, f"container {cid} of unknown app {c.app_id}"
        assert c.node_id in e.nodes, f"container {cid} on unknown node {c.node_id}"
        assert e.apps[c.app_id].containers.get(cid) is c, cid
        assert cid in e.nodes[c.node_id].containers, cid
    for n in e.nodes.values():
        assert all(cid in e.containers for cid in n.containers), n.node_id
        assert n.used == _sum(e.containers[c].resource for c in n.containers), n.node_id
    assert e.cluster == _sum(n.capacity for n in e.nodes.values())
    for a in e.apps.values():
        assert all(e.containers.get(cid) is c for cid, c in a.containers.items()), a.app_id
        assert a.usage == _sum(c.resource for c in a.containers.values()), a.app_id
        assert a.pending == _sum(r.resource * r.num_containers for r in a.requests.values()
                                 if r.num_containers > 0), a.app_id
        assert a.queue is e.queues.get(a.queue.name), a.app_id
        assert a in a.queue.apps, a.app_id
        assert not a.queue.children and a.queue.name != "root", f"{a.app_id} in {a.queue.name}"
        assert a.active == (a.runnable and a.pending.any_positive()), a.app_id
    for p in e.queues.values():
        apps = list(p.descendant_apps())
        assert p.usage == _sum(a.usage for a in apps), p.name
        assert p.am_usage == _sum(c.resource for a in apps for c in a.containers.values() if c.is_am), p.name
        assert p.running_apps == sum(a.runnable for a in apps), p.name
        assert p.active_apps == sum(a.active for a in apps), p.name
        wanting = Counter(k for a in apps for k in a.kinds)
        assert {k: n for k, n in p.wanting.items() if n} == dict(wanting), p.name
        assert not (p.apps and p.children), f"{p.name} holds jobs and has children"
        keys = [(a.start_time, a.app_id) for a in p.apps]
        assert keys == sorted(keys), p.name
        for child in p.children:
            assert child.parent is p and e.queues.get(child.name) is child, child.name
    running = Counter(a.user for a in e.apps.values() if a.runnable)
    assert {u: n for u, n in e.limits.user_running.items() if n} == dict(running)
    assert e.limits.waiting == sum(not a.runnable for a in e.apps.values())
    assert e._without_am == sum(not a.has_am for a in e.apps.values())


def truth_state(e) -> dict:
    """What the RM's truth alone decides."""
    res = lambda r: (float(r.memory_mb), float(r.vcores))
    return {
        "nodes": {n.node_id: (n.host, n.rack, res(n.capacity), res(n.used), frozenset(n.containers))
                  for n in e.nodes.values()},
        "apps": {a.app_id: (a.user, a.queue.name, a.priority, round(a.start_time, 6), res(a.usage), res(a.pending),
                            frozenset(a.containers),
                            tuple(sorted((r.priority, res(r.resource), r.num_containers, tuple(sorted(r.hosts.items())),
                                          tuple(sorted(r.racks.items())), r.relax_locality)
                                         for r in a.requests.values())))
                 for a in e.apps.values()},
        "containers": {c.container_id: (c.app_id, c.node_id, res(c.resource), c.is_am, c.priority)
                       for c in e.containers.values()},
        "queues": {p.name: (res(p.usage), res(p.am_usage)) for p in e.queues.values() if p.usage.any_positive()
                  or p.apps},
    }


#: The engine calls a driver makes, which tap_engine records (the replay contract tests).
ENGINE_CALLS = ("set_config", "add_node", "update_node", "remove_node", "add_app", "remove_app", "move_app",
                "set_app_priority", "update_requests", "mark_unmanaged", "container_launched",
                "container_finished", "rename_container", "confirm_container", "heartbeat", "update")


def tap_engine(core, calls: list) -> None:
    """Record every call into ``core``'s engine as (time, method, args),
    with requests written out, so two drivers' sequences can be compared."""

    def install(engine):
        def wrap(name, fn):
            def recorded(*args, **kwargs):
                calls.append((engine.clock.now(), name, _plain(args), _plain(kwargs)))
                return fn(*args, **kwargs)
            return recorded

        for name in ENGINE_CALLS:
            setattr(engine, name, wrap(name, getattr(engine, name)))

    core.trace_engine_calls(install)


def _plain(x):
    from slotwise.config.model import AllocationConfig
    from slotwise.engine import Request
    from slotwise.resources import Resource

    if isinstance(x, AllocationConfig):
        return ("AllocationConfig", x.source, tuple((q.name, q.weight) for q in x.root.walk()))
    if isinstance(x, Request):
        return ("Request", x.priority, _plain(x.resource), x.num_containers, sorted(x.hosts.items()),
                sorted(x.racks.items()), x.relax_locality, sorted(x.strict_racks))
    if isinstance(x, Resource):
        return (float(x.memory_mb), float(x.vcores))
    if isinstance(x, dict):
        return tuple(sorted((k, _plain(v)) for k, v in x.items()))
    if isinstance(x, (list, tuple)):
        return tuple(_plain(v) for v in x)
    if isinstance(x, float) and x.is_integer():
        return x  # 3.0 and 3 compare equal anyway
    return x
