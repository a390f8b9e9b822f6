"""The contract between a scheduler shim and the Python policy server.

``schema.json`` beside this file defines every message once (docs/protocol.md
walks through the calls).  At import this module turns each definition of
the schema into a typed class (a msgspec Struct with the schema's fields,
defaults and bounds) and a validating decoder, so a message is checked whole,
in C, before any of it is used: ``decode("Payload", text)`` returns a
``Payload`` or raises ProtocolError naming the field.  The Java shim's records
and checkers (``org.slotwise.shim.Messages``) are generated from the same
file at build time by ``java.py``; both sides'
tests read the shared examples in ``examples/``.

Only the part of JSON Schema the file uses is understood (objects with
properties, required, defaults and no extra fields; maps; arrays, each with
its maxItems; strings, integers and numbers with bounds; booleans; enums;
nullable types; references; "exactly one of" between fields); anything else
is refused at import.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec

HERE = Path(__file__).resolve().parent
SCHEMA: dict = json.loads((HERE / "schema.json").read_text(encoding="utf-8"))
VERSION: int = SCHEMA["version"]
DEFS: dict = SCHEMA["$defs"]


class ProtocolError(ValueError):
    """A message that does not match the schema (or the rules the schema
    states in words); nothing of it was applied."""


def _scalar(spec: dict):
    """The annotation of a non-object schema."""
    if "$ref" in spec:
        name = spec["$ref"].rsplit("/", 1)[-1]
        target = DEFS[name]
        return _TYPES[name] if target.get("type") == "object" else _scalar(target)
    if "enum" in spec:
        return Literal[tuple(spec["enum"])]
    if "anyOf" in spec:
        options = spec["anyOf"]
        if len(options) != 2 or {"type": "null"} not in options:
            raise TypeError(f"schema: unsupported anyOf {options}")
        (other,) = [o for o in options if o != {"type": "null"}]
        return _scalar(other) | None
    kind = spec.get("type")
    if isinstance(kind, list):
        if len(kind) != 2 or "null" not in kind:
            raise TypeError(f"schema: unsupported type list {kind}")
        (other,) = [k for k in kind if k != "null"]
        return _scalar({**spec, "type": other}) | None
    meta = {}
    if kind in ("integer", "number"):
        if "minimum" in spec:
            meta["ge"] = spec["minimum"]
        if "maximum" in spec:
            meta["le"] = spec["maximum"]
        base = int if kind == "integer" else float
    elif kind == "string":
        if "minLength" in spec:
            meta["min_length"] = spec["minLength"]
        if "maxLength" in spec:
            meta["max_length"] = spec["maxLength"]
        base = str
    elif kind == "boolean":
        return bool
    elif kind == "array":
        items = list[_scalar(spec["items"])]
        # Every array is bounded: a message is refused before a huge one is built.
        if "maxItems" not in spec:
            raise TypeError(f"schema: an array without maxItems {spec}")
        return Annotated[items, msgspec.Meta(max_length=spec["maxItems"])]
    elif kind == "object" and isinstance(spec.get("additionalProperties"), dict) and not spec.get("properties"):
        return dict[str, _scalar(spec["additionalProperties"])]
    else:
        raise TypeError(f"schema: unsupported type {spec}")
    return Annotated[base, msgspec.Meta(**meta)] if meta else base


_TYPES: dict[str, type] = {}
#: def name -> the fields of which exactly one must be set ("oneOf" required).
_ONE_OF: dict[str, tuple[str, ...]] = {}


def _refs(spec) -> set[str]:
    if isinstance(spec, dict):
        out = {spec["$ref"].rsplit("/", 1)[-1]} if "$ref" in spec else set()
        for v in spec.values():
            out |= _refs(v)
        return out
    if isinstance(spec, list):
        return set().union(*(_refs(v) for v in spec)) if spec else set()
    return set()


def _build(name: str) -> None:
    if name in _TYPES:
        return
    spec = DEFS[name]
    for dep in sorted(_refs(spec.get("properties", {}))):
        if DEFS[dep].get("type") == "object":
            _build(dep)
    if spec.get("additionalProperties") is not False:
        raise TypeError(f"schema: {name} must say additionalProperties: false")
    required = set(spec.get("required", ()))
    fields = []
    for field, fspec in spec.get("properties", {}).items():
        ann = _scalar(fspec)
        if field in required:
            fields.append((field, ann))
        elif "default" in fspec:
            fields.append((field, ann, fspec["default"]))
        else:
            raise TypeError(f"schema: {name}.{field} is optional and needs a default")
    if "oneOf" in spec:
        _ONE_OF[name] = tuple(alt["required"][0] for alt in spec["oneOf"])
    _TYPES[name] = msgspec.defstruct(name, fields, kw_only=True, omit_defaults=True,
                                     forbid_unknown_fields=True, gc=False, module=__name__)


for _name, _spec in DEFS.items():
    if _spec.get("type") == "object":
        _build(_name)

_DECODERS = {name: msgspec.json.Decoder(t) for name, t in _TYPES.items()}
_ENCODER = msgspec.json.Encoder()

globals().update(_TYPES)  # Payload, App, HeartbeatAnswer, ...: the message classes


def _checked(name: str, obj):
    fields = _ONE_OF.get(name)
    if fields is not None and sum(getattr(obj, f) is not None for f in fields) != 1:
        raise ProtocolError(f"{name}: exactly one of {', '.join(fields)} must be set")
    return obj


def decode(name: str, data: str | bytes):
    """One message of type ``name`` from JSON text; ProtocolError if it does
    not match the schema (the message says which field)."""
    try:
        msg = _checked(name, _DECODERS[name].decode(data))
    except (msgspec.ValidationError, msgspec.DecodeError) as e:
        raise ProtocolError(f"{name}: {_one_line(str(e))}") from None
    except UnicodeError:  # a Java string with a lone surrogate: not UTF-8 text
        raise ProtocolError(f"{name}: the message is not valid Unicode text (a lone surrogate)") from None
    if _has_lone_surrogate(data):
        raise ProtocolError(f"{name}: a string holds a lone surrogate (\\ud800-\\udfff escaped alone), "
                            "which no name can be")
    return msg


def _has_lone_surrogate(data: str | bytes) -> bool:
    """An escaped lone surrogate decodes to a str that cannot be written as
    UTF-8 (the event log, the web layer): refused at the door.  A quick scan
    for an escape in the surrogate range first; only then a precise look."""
    raw = data if isinstance(data, str) else data.decode("utf-8", "replace")
    if not _SURROGATE_ESCAPE.search(raw):
        return False
    try:
        json.dumps(json.loads(raw), ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def convert(name: str, obj: Any):
    """As ``decode``, from Python builtins (a logged message, a test's dict)."""
    try:
        return _checked(name, msgspec.convert(obj, _TYPES[name]))
    except msgspec.ValidationError as e:
        raise ProtocolError(f"{name}: {_one_line(str(e))}") from None


def encode(obj) -> str:
    """Compact JSON; fields at their default are left out."""
    return _ENCODER.encode(obj).decode()


def to_builtins(obj) -> Any:
    return msgspec.to_builtins(obj)


def _one_line(text: str) -> str:
    return " ".join(text.split())
