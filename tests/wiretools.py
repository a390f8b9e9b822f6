"""Protocol messages for tests, written as the shim sends them (plain
dicts, checked against the schema by ``slotwise.protocol.convert``)."""

from __future__ import annotations

from slotwise import protocol as wire


def node(node_id: str, host: str, rack: str, mb: int, vcores: int) -> dict:
    return {"id": node_id, "host": host, "rack": rack, "capacity": {"memory_mb": mb, "vcores": vcores}}


def req(priority: int, mb: int, vcores: int, count: int, hosts=None, racks=None, relax: bool = True) -> dict:
    return {"priority": priority, "resource": {"memory_mb": mb, "vcores": vcores}, "count": count,
            "hosts": hosts or {}, "racks": racks or {}, "relax_locality": relax}


def app(app_id: str, queue: str, requests=(), user: str = "ann", priority: int = 0, submit_ms: int = 0,
        unmanaged: bool = False) -> dict:
    return {"id": app_id, "user": user, "queue": queue, "priority": priority, "submit_ms": submit_ms,
            "unmanaged": unmanaged, "requests": list(requests)}


def container(cid: str, app_id: str, node_id: str, mb: int, vcores: int, am: bool = False, priority: int = 0,
              engine_id: str | None = None) -> dict:
    return {"id": cid, "app": app_id, "node": node_id, "resource": {"memory_mb": mb, "vcores": vcores},
            "am": am, "priority": priority, "engine_id": engine_id}


def payload(now_ms: int = 0, node: str | None = None, **fields):
    """A Payload; ``node`` is the one that heartbeats."""
    if node is not None:
        fields["beats"] = [{"node": node}]
    return wire.convert("Payload", {"now_ms": now_ms, **fields})
