"""The contract, from the Python side: slotwise.protocol binds schema.json as
a real JSON Schema validator reads it, and the examples shared with the
Java tests (MessagesSchemaTest) are accepted or refused alike."""

import json
from pathlib import Path

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from slotwise import protocol as wire

EXAMPLES = Path(wire.__file__).parent / "examples"
VALIDATOR = jsonschema.Draft202012Validator(wire.SCHEMA)


def schema_of(name: str) -> dict:
    return {"$ref": f"#/$defs/{name}", "$defs": wire.SCHEMA["$defs"]}


def schema_accepts(name: str, doc) -> bool:
    return jsonschema.Draft202012Validator(schema_of(name)).is_valid(doc)


def test_the_schema_is_a_valid_json_schema_and_every_call_names_its_messages():
    jsonschema.Draft202012Validator.check_schema(wire.SCHEMA)
    for call, spec in wire.SCHEMA["calls"].items():
        assert spec["argument"] in wire.DEFS and spec["answer"] in wire.DEFS, call
        assert getattr(wire, spec["argument"]) and getattr(wire, spec["answer"])


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.json")), ids=lambda p: p.name)
def test_the_shared_examples_are_valid_for_both_validators(path):
    name = path.name.split(".")[0]
    doc = json.loads(path.read_text())
    assert schema_accepts(name, doc)
    msg = wire.decode(name, path.read_text())
    # Encoding leaves defaults out; what comes back decodes to the same message.
    assert wire.decode(name, wire.encode(msg)) == msg


@pytest.mark.parametrize("path", sorted((EXAMPLES / "invalid").glob("*.json")), ids=lambda p: p.name)
def test_the_shared_bad_examples_are_refused_by_both(path):
    name = path.name.split(".")[0]
    text = path.read_text()
    with pytest.raises(wire.ProtocolError) as e:
        wire.decode(name, text)
    assert str(e.value).startswith(f"{name}: ") and "\n" not in str(e.value)
    doc = json.loads(text)
    one_of = {"PlaceAnswer", "MoveAnswer", "PriorityAnswer", "Registered"}
    assert not schema_accepts(name, doc) or name in one_of  # "exactly one" with nulls is ours


@pytest.mark.parametrize("doc, field", [
    ({"now_ms": -1}, "$.now_ms"),
    ({"now_ms": 1, "nodes": [{"id": "", "host": "h", "rack": "/r", "capacity": {}}]}, "$.nodes[0].id"),
    ({"now_ms": 1, "apps": [{"id": "a", "user": "u", "queue": "q", "priority": 2 ** 31, "submit_ms": 0}]},
     "$.apps[0].priority"),
    ({"now_ms": 1, "apps": [{"id": "a", "user": "u", "queue": "q", "priority": 0, "submit_ms": 0,
                             "requests": [{"priority": 1, "resource": {}, "count": 1, "hosts": {"h": 0}}]}]},
     "$.apps[0].requests[0].hosts"),
    ({"now_ms": 1, "beats": [{"node": "x" * 2000}]}, "$.beats[0].node"),
    ({"now_ms": 1, "apps": [{"id": "a", "user": "u", "name": "x" * 1025, "queue": "q", "priority": 0, "submit_ms": 0}]},
     "$.apps[0].name"),
    ({"now_ms": None}, "$.now_ms"),
    ({"now_ms": 1, "apps_removed": ["a"], "apps_finished": [{"id": "a", "final_state": "DONE"}]},
     "$.apps_finished[0].final_state"),
    ({"now_ms": 1, "apps_removed": ["a"], "apps_finished": [{"id": "a"}]}, "$.apps_finished[0]"),
])
def test_bounds_are_checked_and_the_error_names_the_field(doc, field):
    assert not schema_accepts("Payload", doc)
    with pytest.raises(wire.ProtocolError) as e:
        wire.decode("Payload", json.dumps(doc))
    assert field in str(e.value) and "\n" not in str(e.value)


# Documents shaped like payloads, some fields wrong: the two validators must agree.
scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.integers(2 ** 31 - 1, 2 ** 31 + 1),
                    st.floats(allow_nan=False, allow_infinity=False, width=32).filter(lambda f: not f.is_integer()),
                    st.text(max_size=3))
resources = st.one_of(st.fixed_dictionaries({}, optional={"memory_mb": scalars, "vcores": scalars,
                                                          "slots": scalars}), scalars)
requests = st.fixed_dictionaries({"priority": scalars, "resource": resources, "count": scalars},
                                 optional={"hosts": st.dictionaries(st.text(max_size=2), scalars, max_size=2),
                                           "relax_locality": scalars, "extra": scalars,
                                           "strict_racks": st.one_of(scalars, st.lists(scalars, max_size=2))})
apps = st.fixed_dictionaries({"id": scalars, "user": scalars, "queue": scalars, "priority": scalars},
                             optional={"submit_ms": scalars, "requests": st.lists(requests, max_size=2),
                                       "unmanaged": scalars})
payloads = st.fixed_dictionaries({}, optional={"now_ms": scalars, "full": scalars, "apps": st.lists(apps, max_size=2),
                                               "finished": st.lists(scalars, max_size=2),
                                               "apps_finished": st.lists(st.fixed_dictionaries(
                                                   {"id": scalars, "final_state": st.one_of(scalars, st.sampled_from(
                                                       ["SUCCEEDED", "FAILED", "KILLED", "UNDEFINED"]))}),
                                                   max_size=2),
                                               "rejected": st.lists(st.one_of(scalars, st.fixed_dictionaries(
                                                   {"engine_id": scalars},
                                                   optional={"reason": st.one_of(scalars, st.sampled_from(
                                                       ["locality", "no_room", "no_task"]))})), max_size=2),
                                               "beats": st.lists(st.fixed_dictionaries({"node": scalars}),
                                                                 max_size=2),
                                               "check": st.one_of(st.none(), st.lists(st.fixed_dictionaries(
                                                   {"app": scalars, "pending": resources, "allocated": resources,
                                                    "containers": scalars}), max_size=1))})


# Not the too_slow health check: it times the drawing, which a loaded machine slows.
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(payloads)
def test_slotwise_protocol_accepts_exactly_what_json_schema_accepts(doc):
    try:
        wire.decode("Payload", json.dumps(doc))
        ours = True
    except wire.ProtocolError:
        ours = False
    assert ours == schema_accepts("Payload", doc), doc


def _arrays():
    for name, spec in wire.DEFS.items():
        for field, fspec in spec.get("properties", {}).items():
            kind = fspec.get("type")
            if kind == "array" or (isinstance(kind, list) and "array" in kind):
                yield name, field, fspec


def test_every_array_is_bounded_by_its_max_items_in_the_binding():
    """Each array's maxItems is the bound msgspec checks (a limit added to
    the file binds without a new line; an array without one fails the import)."""
    import msgspec

    arrays = list(_arrays())
    assert len(arrays) >= 19
    for name, field, fspec in arrays:
        t = {f.name: f for f in msgspec.inspect.type_info(getattr(wire, name)).fields}[field].type
        if isinstance(t, msgspec.inspect.UnionType):  # nullable
            (t,) = [x for x in t.types if not isinstance(x, msgspec.inspect.NoneType)]
        assert t.max_length == fspec["maxItems"], f"{name}.{field}"


@pytest.mark.parametrize("name,field,item", [
    ("PlaceRequest", "groups", '"g"'),
    ("Payload", "fallbacks", '{"reason": "r", "started_ms": 0, "ended_ms": 1, "heartbeats": 1}'),
    ("Payload", "apps_finished", '{"id": "a", "final_state": "KILLED"}'),
])
def test_an_array_one_item_past_its_max_items_is_refused_naming_the_field(name, field, item):
    limit = wire.DEFS[name]["properties"][field]["maxItems"]
    base = {"PlaceRequest": '"app": "a", "user": "u", "queue": "q", "priority": 0, ', "Payload": '"now_ms": 1, '}[name]
    at = "{" + base + f'"{field}": [' + ",".join([item] * limit) + "]}"
    past = "{" + base + f'"{field}": [' + ",".join([item] * (limit + 1)) + "]}"
    assert len(getattr(wire.decode(name, at), field)) == limit
    with pytest.raises(wire.ProtocolError) as e:
        wire.decode(name, past)
    assert f"$.{field}" in str(e.value) and str(limit) in str(e.value), str(e.value)
