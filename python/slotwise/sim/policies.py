"""Scheduler variants a simulation compares, by name.

``fifo``, ``fair`` and ``drf`` are the registered policy plugins (the root
queue's policy; ``fifo`` at the root is Hadoop's FIFO baseline), and a
``+delay`` suffix turns delay scheduling on.  Without it the locality
delays are zero: a job takes the best slot it is offered, as the default
schedulers did."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..policies import get_policy, known_policy_names
from ..settings import EngineSettings


@dataclass(frozen=True)
class Variant:
    name: str
    settings: EngineSettings


def known_variants() -> list[str]:
    """Every name ``variant`` takes: each registered policy (plugins
    included), alone and with ``+delay``."""
    return [v for p in known_policy_names() for v in (p, f"{p}+delay")]


def variant(name: str, base: EngineSettings, delay: float) -> Variant:
    known = f"known: {', '.join(known_variants())}"
    policy, plus, extra = name.partition("+")
    if plus and extra != "delay":
        raise ValueError(f"unknown policy {name!r}: only a '+delay' suffix is known ({known})")
    try:
        get_policy(policy)
    except (KeyError, ValueError) as e:
        raise ValueError(f"unknown policy {name!r} ({known})") from e
    wait = delay if plus else 0.0
    root = None if policy == "fair" else policy
    return Variant(name, replace(base, root_policy=root, node_locality_delay=wait, rack_locality_delay=wait))
