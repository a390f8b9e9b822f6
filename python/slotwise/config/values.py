"""Scalar values of allocation files: numbers, booleans, policy names and
resource strings.

Each parser takes the raw element text and returns the value or raises
``BadValue`` whose message completes "<element> ...", e.g. "must be a
non-negative integer"; the XML parsers add the element, place and line.
"""

from __future__ import annotations

import re

from ..resources import Resource
from .model import ResourceSpec

BUILTIN_POLICIES = frozenset({"fair", "fifo", "drf"})


class BadValue(ValueError):
    """A value that cannot be used; ``str()`` is the predicate of the message."""


class Adjusted(Exception):
    """A value YARN takes after adjusting it: ``value`` is the one to use,
    ``str()`` the predicate of the warning."""

    def __init__(self, value, message: str) -> None:
        super().__init__(message)
        self.value = value


#: Bounds of what YARN itself can hold: counts are Java ints; amounts and
#: weights must stay finite and far from overflow when multiplied out.
MAX_INT = 2**31 - 1
MAX_NUMBER = 1e15

_INT = re.compile(r"\+?\d+")
_FLOAT = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
# A resource amount: sign kept so that "-5 mb" says "negative", not "garbled".
_AMOUNT = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)"


def _float(text: str) -> float | None:
    text = text.strip()
    if not _FLOAT.fullmatch(text):
        return None
    f = float(text)
    if not abs(f) <= MAX_NUMBER:  # also inf, from 1e999 or a long run of digits
        raise BadValue(f"must be a finite number of at most {MAX_NUMBER:g}")
    return f


def non_negative_int(text: str) -> int:
    text = text.strip()
    if not _INT.fullmatch(text):
        raise BadValue("must be a non-negative integer")
    digits = text.lstrip("+").lstrip("0")
    if len(digits) > len(str(MAX_INT)) or int(digits or "0") > MAX_INT:
        raise BadValue(f"must be an integer of at most {MAX_INT}")
    return int(digits or "0")


def app_count(text: str) -> int:
    """maxRunningApps and its defaults: YARN reads any Java int; below 0 no
    app can run, as with 0."""
    t = text.strip()
    if t.startswith("-") and _INT.fullmatch(t[1:]):
        non_negative_int(t[1:])  # the same bound
        raise Adjusted(0, "is negative: no app can run, as with 0 (YARN)")
    return non_negative_int(t)


def weight(text: str) -> float:
    """A queue's weight: YARN takes any number; at 0 or below the queue gets
    exactly its min share."""
    t = text.strip()
    body = t[1:] if t[:1] in ("-", "+") else t
    f = None if body[:1] in ("-", "+") else _float(body)
    if f is None:
        raise BadValue("must be a number")
    if t.startswith("-") and f != 0:
        raise Adjusted(-f, "is negative: YARN gives such a queue exactly its min share, as with 0")
    return f


def non_negative_float(text: str) -> float:
    f = _float(text)
    if f is None or f < 0:
        raise BadValue("must be a non-negative number")
    return f


def seconds(text: str) -> float:
    """A preemption timeout: whole seconds, as YARN reads it (a Java long);
    below 0 it is over at once, as with 0."""
    t = text.strip()
    if t.startswith("-") and _INT.fullmatch(t[1:]):
        raise Adjusted(0.0, "is negative: the timeout is over at once, as with 0 (YARN)")
    if not _INT.fullmatch(t):
        raise BadValue("must be a whole number of seconds")
    if len(t.lstrip("+").lstrip("0")) > 15:
        raise BadValue(f"must be a whole number of seconds of at most {MAX_NUMBER:g}")
    return float(int(t))


def fraction(text: str) -> float:
    f = _float(text)
    if f is None or not 0 <= f <= 1:
        raise BadValue("must be a number between 0 and 1")
    return f


def threshold(text: str) -> float:
    """fairSharePreemptionThreshold: YARN clamps it into [0, 1]."""
    f = _float(text)
    if f is None:
        raise BadValue("must be a number between 0 and 1")
    if not 0 <= f <= 1:
        raise Adjusted(min(max(f, 0.0), 1.0), f"is outside 0..1: YARN uses {min(max(f, 0.0), 1.0):g}")
    return f


def fraction(text: str) -> float:
    """localityTarget: a fraction of launches, 0 to 1 (Slotwise's own
    element, so out of range is an error, not clamped)."""
    f = _float(text)
    if f is None or not 0 <= f <= 1:
        raise BadValue("must be a number between 0 and 1")
    return f


def am_share(text: str) -> float:
    """maxAMShare: a fraction, or -1 to switch the AM limit off; YARN caps it at 1."""
    f = _float(text)
    if f is not None and f > 1:
        raise Adjusted(1.0, "is above 1: YARN uses 1")
    if f is None or not (0 <= f <= 1 or f == -1):
        raise BadValue("must be a number between 0 and 1, or -1 to disable the check")
    return f


def boolean(text: str) -> bool:
    t = text.strip().lower()
    if t not in ("true", "false"):
        raise BadValue('must be "true" or "false"')
    return t == "true"


def trimmed(text: str) -> str:
    """Free text (class names of the reservation system): kept, trimmed."""
    return text.strip()


def acl(text: str) -> str:
    """An ACL is kept verbatim: a leading space means "groups only"."""
    return text


# --- scheduling policies -------------------------------------------------


def known_policies() -> set[str]:
    """Registered policy names; the built-ins even while their modules are
    missing (the registry imports them and may fail half-way)."""
    try:
        from ..policies import known_policy_names

        names = {n.lower() for n in known_policy_names()}
    except ImportError:
        names = set()
    return names | BUILTIN_POLICIES


def is_leaf_only(name: str) -> bool:
    """True for policies that only order apps, like YARN's fifo."""
    if name == "fifo":
        return True
    try:
        from ..policies import get_policy

        return bool(get_policy(name).leaf_only)
    except (ImportError, KeyError):
        return False


def policy_name(text: str) -> str:
    name = text.strip().lower()
    known = known_policies()
    if name not in known:
        raise BadValue("must be one of " + ", ".join(sorted(known)))
    return name


def mrv1_mode(text: str) -> str:
    """MRv1 schedulingMode: only fair and fifo existed."""
    name = text.strip().lower()
    if name not in ("fair", "fifo"):
        raise BadValue('must be "fair" or "fifo"')
    return name


# --- resources -----------------------------------------------------------

_OLD_PAIR = re.compile(rf"\s*({_AMOUNT})\s*([a-z]+)\s*,?")
_PCT = re.compile(rf"\s*({_AMOUNT})\s*%\s*([a-z]*)\s*")
_NEW_KEYS = {"memory-mb": "memory", "vcores": "vcores"}
_OLD_UNITS = {"mb": "memory", "vcores": "vcores"}
_PCT_UNITS = {"memory": "memory", "cpu": "vcores"}


def _amount(s: str) -> float:
    value = float(s)
    if value < 0:
        raise BadValue("must not be negative")
    if not value <= MAX_NUMBER:
        raise BadValue(f"has an amount over {MAX_NUMBER:g}")
    return int(value) if value.is_integer() and "." not in s else value


def _old_style(s: str) -> dict[str, float]:
    """ "X mb, Y vcores": both parts, either order, comma and spaces optional."""
    pos, found = 0, {}
    while pos < len(s):
        m = _OLD_PAIR.match(s, pos)
        if not m or m.end() == pos:
            raise BadValue('must look like "X mb, Y vcores" or "memory-mb=X, vcores=Y"')
        dim = _OLD_UNITS.get(m.group(2))
        if dim is None:
            raise BadValue(f'has unknown unit "{m.group(2)}" (use mb and vcores)')
        if dim in found:
            raise BadValue(f'gives "{m.group(2)}" twice')
        found[dim] = int(_amount(m.group(1)))  # YARN reads the whole part: "5120.9 mb" is 5120
        pos = m.end()
    if len(found) != 2:
        raise BadValue('must give both memory and vcores, e.g. "1024 mb, 1 vcores"')
    return found


def _old_percent(s: str) -> dict[str, float]:
    """ "X%" for every resource, or "X% cpu, Y% memory"."""
    parts = s.split(",")
    if len(parts) == 1:
        m = _PCT.fullmatch(parts[0])
        if not m or m.group(2):
            raise BadValue('must look like "X%" or "X% cpu, Y% memory"')
        pct = _amount(m.group(1))
        return {"memory": pct, "vcores": pct}
    found = {}
    for part in parts:
        m = _PCT.fullmatch(part)
        dim = _PCT_UNITS.get(m.group(2)) if m else None
        if dim is None:
            raise BadValue('must look like "X%" or "X% cpu, Y% memory"')
        if dim in found:
            raise BadValue(f'gives "{m.group(2)}" twice')
        found[dim] = _amount(m.group(1))
    if len(found) != 2:
        raise BadValue("must give both cpu and memory percentages")
    return found


def _new_style(s: str) -> tuple[dict[str, float], bool]:
    """ "memory-mb=X, vcores=Y" (or all values "X%"); returns (values, is_percent)."""
    found, kinds = {}, set()
    parts = s.split(",")
    while len(parts) > 1 and not parts[-1].strip():  # as Java's split: trailing empty pieces go
        parts.pop()
    for part in parts:
        key, eq, val = part.partition("=")
        key, val = key.strip(), val.strip()
        if not eq or not key or not val:
            raise BadValue('must look like "memory-mb=X, vcores=Y": every part needs name=value')
        dim = _NEW_KEYS.get(key)
        if dim is None:
            raise BadValue(f'names unknown resource "{key}" (known: memory-mb, vcores)')
        if dim in found:
            raise BadValue(f'gives "{key}" twice')
        pct = val.endswith("%")
        number = val[:-1].strip() if pct else val
        if not re.fullmatch(_AMOUNT, number) or (not pct and not re.fullmatch(r"[+-]?\d+", number)):
            raise BadValue(f'has a bad value "{val}" for {key} (a whole number, or a percentage)')
        kinds.add(pct)
        found[dim] = _amount(number)
    if len(kinds) > 1:
        raise BadValue("must give either all values as percentages or none")
    return found, kinds == {True}


def min_resource(text: str) -> Resource:
    """minResources: absolute only; a key missing in key=value form is 0."""
    s = text.strip().lower()
    if not s:
        raise BadValue("must not be empty")
    if "=" in s:
        found, pct = _new_style(s)
    else:
        pct = "%" in s
        found = {} if pct else _old_style(s)
    if pct:
        raise Adjusted(Resource(0, 0), "is a percentage, which YARN reads as no min share at all (0); "
                                       "only maximum limits may be percentages")
    return Resource(found.get("memory", 0), found.get("vcores", 0))


def max_resource(text: str) -> ResourceSpec:
    """maxResources and friends: absolute or percentages of the cluster; a key
    missing in key=value form is unlimited."""
    s = text.strip().lower()
    if not s:
        raise BadValue("must not be empty")
    if "=" in s:
        found, pct = _new_style(s)
    elif "%" in s:
        found, pct = _old_percent(s), True
    else:
        found, pct = _old_style(s), False
    if pct:
        return ResourceSpec(memory_pct=found.get("memory"), vcores_pct=found.get("vcores"))
    spec = ResourceSpec(memory_mb=found.get("memory"), vcores=found.get("vcores"))
    if "=" in s and "vcores" not in found:
        # YARN documents a missing type as unlimited, but 3.5 overflows it into 0 vcores.
        raise Adjusted(spec, "names no vcores: Slotwise reads that as unlimited vcores, as YARN documents it, "
                             "but YARN 3.5 ends with 0 vcores; give vcores=N to mean the same in both")
    return spec
