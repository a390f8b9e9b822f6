"""The door's check of a payload before any of it is applied: what makes a
schema-valid message inconsistent with itself or with what the engine holds
(duplicates, containers of apps or nodes nobody told us about, sizes the
cluster's kind cannot hold). A payload with problems changes nothing."""

from __future__ import annotations


def sized(r) -> bool:
    """Whether a wire Resource asks for anything the engine counts."""
    return r.memory_mb > 0 or r.vcores > 0 or r.map_slots > 0 or r.reduce_slots > 0


def shape_problem(r, kind: str) -> str | None:
    """What is wrong with a request's or a task's size on a ``kind``
    cluster: a YARN container has no slots; an MRv1 task is one map slot or
    one reduce slot, never both."""
    if kind == "yarn":
        return "a YARN container holds no slots" if r.map_slots or r.reduce_slots else None
    if r.memory_mb or r.vcores or bool(r.map_slots) == bool(r.reduce_slots):
        return "an MRv1 task holds map slots or reduce slots (one kind), nothing else"
    return None


def payload_problems(msg, engine, kind: str) -> list[str]:
    """What makes a schema-valid payload inconsistent: duplicates, and
    containers of apps or nodes nobody told us about.  On the hot path:
    lookups only, and nothing at all for what cannot clash."""
    out = []
    nodes = msg.nodes
    if len(nodes) > 1 and len({n.id for n in nodes}) != len(nodes):
        out.append("nodes: the same node twice")
    apps = msg.apps
    if len(apps) > 1 and len({a.id for a in apps}) != len(apps):
        out.append("apps: the same app twice")
    for i, a in enumerate(apps):
        if a.asks:
            out.append(f"apps[{i}] ({a.id}): asks and requests both; an app carries one or the other")
        if len(a.requests) > 1 and len({r.priority for r in a.requests}) != len(a.requests):
            out.append(f"apps[{i}] ({a.id}): two requests at one priority")
        for j, r in enumerate(a.requests):
            if r.count and not sized(r.resource):
                # It would fit on every node forever; the RM itself never
                # asks for less than its minimum allocation.
                out.append(f"apps[{i}].requests[{j}] ({a.id}): {r.count} container(s) of no size; "
                           "a container needs memory or vcores")
            elif r.count and (shape := shape_problem(r.resource, kind)):
                out.append(f"apps[{i}].requests[{j}] ({a.id}): {shape}")
    if msg.apps_finished:
        removed = set(msg.apps_removed)
        ended: set[str] = set()
        for i, x in enumerate(msg.apps_finished):
            if x.id not in removed:
                out.append(f"apps_finished[{i}]: app {x.id} is not in apps_removed")
            elif x.id in ended:
                out.append(f"apps_finished[{i}]: app {x.id} twice")
            ended.add(x.id)
    launched = msg.launched
    if not launched:
        return out
    full = msg.full
    known_nodes = engine.nodes
    known_apps = engine.apps
    new_nodes = {n.id for n in nodes} if nodes else ()
    new_apps = {a.id for a in apps} if apps else ()
    # An app the RM took and dropped between two calls (Python away) may
    # come with containers the FIFO gave it: they end with it.
    gone_apps = set(msg.apps_removed) if msg.apps_removed else ()
    seen: set[str] = set()
    for i, c in enumerate(launched):
        if (shape := shape_problem(c.resource, kind)) is not None:
            out.append(f"launched[{i}]: container {c.id}: {shape}")
        if len(launched) > 1:
            if c.id in seen or (c.engine_id is not None and c.engine_id in seen):
                out.append(f"launched[{i}]: container {c.id} twice")
            seen.add(c.id)
            if c.engine_id is not None:
                seen.add(c.engine_id)
        if c.app not in new_apps and c.app not in gone_apps and (full or c.app not in known_apps):
            out.append(f"launched[{i}]: container {c.id} of unknown app {c.app}")
        if c.node not in new_nodes and (full or c.node not in known_nodes):
            out.append(f"launched[{i}]: container {c.id} on unknown node {c.node}")
        if c.engine_id is not None:
            placed = engine.containers.get(c.engine_id)
            if placed is not None and (placed.app_id != c.app or placed.node_id != c.node):
                out.append(f"launched[{i}]: container {c.id} of {c.app} on {c.node} names assignment "
                           f"{c.engine_id}, which is {placed.app_id}'s on {placed.node_id}")
    return out
