"""Scheduler variants a simulation compares, by name.

``fifo``, ``fair`` and ``drf`` are the registered policy plugins (the root
queue's policy; ``fifo`` at the root is Hadoop's FIFO baseline), and a
``+delay`` suffix turns delay scheduling on, with fixed waits; ``+target``
gives every queue a data-local target (``TARGET`` unless the allocation
file sets one; engine/target.py), its waits tuned from the delay given.
Without either the locality delays are zero: a job takes the best slot it
is offered, as the default schedulers did."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..config.model import default_config
from ..policies import get_policy, known_policy_names
from ..settings import EngineSettings


#: The data-local fraction ``+target`` asks for.
TARGET = 0.9


@dataclass(frozen=True)
class Variant:
    name: str
    settings: EngineSettings
    #: The allocation file's defaultLocalityTarget for this run (None: as the file has it).
    locality_target: float | None = None

    def config_for(self, config):
        """The allocation file this variant runs with."""
        if self.locality_target is None:
            return config
        config = config or default_config()
        if config.default_locality_target is not None:
            return config
        return replace(config, default_locality_target=self.locality_target)


def known_variants() -> list[str]:
    """Every name ``variant`` takes: each registered policy (plugins
    included), alone, with ``+delay`` and with ``+target``."""
    return [v for p in known_policy_names() for v in (p, f"{p}+delay", f"{p}+target")]


def variant(name: str, base: EngineSettings, delay: float) -> Variant:
    known = f"known: {', '.join(known_variants())}"
    policy, plus, extra = name.partition("+")
    if plus and extra not in ("delay", "target"):
        raise ValueError(f"unknown policy {name!r}: only a '+delay' or '+target' suffix is known ({known})")
    try:
        get_policy(policy)
    except (KeyError, ValueError) as e:
        raise ValueError(f"unknown policy {name!r} ({known})") from e
    wait = delay if plus else 0.0
    root = None if policy == "fair" else policy
    return Variant(name, replace(base, root_policy=root, node_locality_delay=wait, rack_locality_delay=wait),
                   TARGET if extra == "target" else None)
