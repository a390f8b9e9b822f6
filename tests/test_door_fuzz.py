"""A mutation fuzz of the door: thousands of messages made from valid ones
by a seeded mutator (fields dropped, retyped, pushed to and past their
bounds, names too long or with lone surrogates, ids pointing nowhere,
zero-size and huge asks, broken JSON) go through PolicyCore's JSON calls.
Every call returns a schema-valid answer (nothing raises out of the door);
a refused message changes nothing; an accepted one leaves the engine's
invariants whole; and every call returns (the test would hang otherwise)."""

from __future__ import annotations

import copy
import json
import random

from enginecheck import check_invariants, truth_state
from slotwise import protocol as wire
from slotwise.clock import ManualClock
from slotwise.config import parse_allocations
from slotwise.core import PolicyCore
from slotwise.settings import EngineSettings

ALLOC = """<allocations>
  <queue name="a"><maxRunningApps>2</maxRunningApps></queue>
  <queue name="b"><weight>2</weight><minResources>2048 mb, 2 vcores</minResources></queue>
  <queue name="users" type="parent"/>
  <queuePlacementPolicy>
    <rule name="specified" create="true"/>
    <rule name="default" queue="b"/>
  </queuePlacementPolicy>
</allocations>"""

MUTATIONS = 2500
ANSWER = {"heartbeat": "HeartbeatAnswer", "update": "UpdateAnswer", "place": "PlaceAnswer", "move": "MoveAnswer"}
EXTREMES = [0, -1, 1, 2**31 - 1, 2**31, 2**53 - 1, 2**53, 2**63, -(2**63), 1e308, -1e308, 0.5, float("nan"),
            float("inf"), None, True, "", "x", [], {}]
STRINGS = ["", "a" * 1025, "a" * 1024, "root", "root.a", "root.users.x", "root..a", " root.a", "\ud800", "a\udfffb",
           "\u00e9\u6f22", "root.a.b.c.d.e.f", "null", "*"]


def _node(i):
    return {"id": f"n{i}:1", "host": f"n{i}", "rack": f"/r{i % 2}", "capacity": {"memory_mb": 8192, "vcores": 8}}


def _app(i, queue="root.a", count=3, mb=1024):
    return {"id": f"app{i}", "user": f"u{i}", "queue": queue, "priority": i % 3, "submit_ms": 1000 + i,
            "requests": [{"priority": 1, "resource": {"memory_mb": mb, "vcores": 1}, "count": count,
                          "hosts": {f"n{i % 3}": 1}, "racks": {f"/r{i % 2}": 1}}]}


def _seeds(core) -> list[tuple[str, dict]]:
    """Valid messages over the core's current state, the shape the shim sends."""
    e = core._engine
    apps = sorted(e.apps)
    conts = sorted(e.containers)
    out = [
        ("heartbeat", {"now_ms": 5000, "beats": [{"node": "n0:1"}]}),
        ("heartbeat", {"now_ms": 5000, "apps": [_app(7, "root.b")], "beats": [{"node": "n1:1", "free": {"memory_mb": 4096, "vcores": 4}}]}),
        ("update", {"now_ms": 6000, "check": [{"app": a, "pending": {"memory_mb": 0}, "allocated": {}, "containers": 0}
                                              for a in apps[:2]]}),
        ("update", {"now_ms": 6000, "nodes": [_node(5)], "apps": [_app(8, "root.users.kim")]}),
        ("heartbeat", {"now_ms": 7000, "launched": [{"id": "c_new", "app": apps[0] if apps else "app1", "node": "n0:1",
                                                     "resource": {"memory_mb": 1024, "vcores": 1}, "priority": 1,
                                                     "engine_id": conts[0] if conts else None}]}),
        ("heartbeat", {"now_ms": 7000, "finished": conts[:1], "apps_removed": apps[-1:]}),
        ("update", {"now_ms": 8000, "full": True, "nodes": [_node(i) for i in range(3)],
                    "apps": [_app(i) for i in range(3)]}),
        ("place", {"app": "app9", "user": "ann", "queue": "root.users.ann", "groups": ["g"], "priority": 0}),
        ("move", {"app": apps[0] if apps else "app1", "queue": "root.b"}),
    ]
    return out


def _paths(obj, prefix=()):
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, prefix + (i,))


def _set(obj, path, value):
    for p in path[:-1]:
        obj = obj[p]
    obj[path[-1]] = value


def _get(obj, path):
    for p in path:
        obj = obj[p]
    return obj


def mutate(rnd: random.Random, msg: dict) -> str:
    """One hostile text from a valid message."""
    m = copy.deepcopy(msg)
    for _ in range(rnd.choice((1, 1, 1, 2, 3))):
        paths = [p for p in _paths(m) if p]
        if not paths:
            break
        path = rnd.choice(paths)
        kind = rnd.randrange(9)
        try:
            if kind == 0:  # a value at or past a bound
                _set(m, path, rnd.choice(EXTREMES))
            elif kind == 1:  # a string of the wrong kind or length
                _set(m, path, rnd.choice(STRINGS))
            elif kind == 2:  # drop a field
                parent = _get(m, path[:-1])
                if isinstance(parent, dict):
                    del parent[path[-1]]
                else:
                    parent.pop(path[-1])
            elif kind == 3:  # an unknown field
                parent = _get(m, path[:-1])
                if isinstance(parent, dict):
                    parent["surprise"] = 1
            elif kind == 4:  # a list element twice (duplicate ids)
                parent = _get(m, path[:-1])
                if isinstance(parent, list):
                    parent.append(copy.deepcopy(parent[path[-1]]))
            elif kind == 5:  # a zero-size or huge ask
                _set(m, path, rnd.choice([{"memory_mb": 0, "vcores": 0}, {"memory_mb": 1, "vcores": 0},
                                          {"memory_mb": 2**53 - 1, "vcores": 2**53 - 1}]))
            elif kind == 6:  # an id that points nowhere, or at another object
                _set(m, path, rnd.choice(["nowhere", "n9:1", "app0", "app1", "c_new", "app0#1", "app1#2"]))
            elif kind == 7:  # many of one thing
                v = _get(m, path)
                if isinstance(v, list) and v:
                    v.extend(copy.deepcopy(v[0]) for _ in range(rnd.choice((10, 100))))
            else:  # counts to the limit
                _set(m, path, rnd.choice([2**31 - 1, 0, 1]))
        except (KeyError, IndexError, TypeError):
            pass
    text = json.dumps(m, allow_nan=True)
    r = rnd.random()
    if r < 0.03:
        return text[: rnd.randrange(len(text) + 1)]  # cut short
    if r < 0.05:
        return "[" * 5000 + "]" * 5000  # deep nesting
    if r < 0.06:
        return text.replace("}", "", 1)
    return text


def test_thousands_of_mutated_messages_never_escape_the_door_and_refusals_change_nothing():
    rnd = random.Random(25)
    clock = ManualClock(100.0)
    core = PolicyCore(parse_allocations(ALLOC, "fuzz.xml"),
                      EngineSettings(node_locality_delay=0, rack_locality_delay=0), clock)
    core.update(json.dumps({"now_ms": 0, "full": True, "nodes": [_node(i) for i in range(3)],
                            "apps": [_app(i) for i in range(3)]}))
    refused = accepted = 0
    for i in range(MUTATIONS):
        call, msg = rnd.choice(_seeds(core))
        text = mutate(rnd, msg)
        before = truth_state(core._engine)
        answer_text = getattr(core, call)(text)  # raises: the test fails here
        answer = wire.decode(ANSWER[call], answer_text)  # a schema-valid answer, always
        error = getattr(answer, "error", None) if call in ("heartbeat", "update", "move") else answer.reject
        if call in ("heartbeat", "update") and error is not None:
            refused += 1
            assert "internal error" not in error, f"mutation {i}: {text[:300]}"
            assert truth_state(core._engine) == before, f"mutation {i} was refused but changed state: {text[:300]}"
        else:
            accepted += 1
        check_invariants(core._engine)
        clock.advance(0.1)
    assert refused > 1000 and accepted > 200, (refused, accepted)
    assert core.counters["internal_errors"] == 0
