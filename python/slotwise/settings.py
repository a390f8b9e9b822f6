"""Scheduler-wide settings (YARN's yarn.scheduler.fair.* properties), apart
from the per-pool allocation file."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class EngineSettings:
    #: Place several containers per heartbeat while the node has room.
    assign_multiple: bool = True
    #: Cap on containers per heartbeat with assign_multiple; <= 0: no cap.
    max_assign: int = -1
    #: NodeManager heartbeat interval; sets the default locality delays.
    heartbeat_interval: float = 1.0
    #: "time": the paper's waits T1/T2; "count": YARN's thresholds, a
    #: fraction of the cluster's nodes as missed scheduling opportunities.
    locality_mode: str = "time"
    #: T1, node-local to rack-local, seconds; None: 1.5x heartbeat; 0: off.
    node_locality_delay: float | None = None
    #: T2, rack-local to off-switch, seconds; None: 1.5x heartbeat; 0: off.
    rack_locality_delay: float | None = None
    #: Count mode: negative means no waiting at that level (YARN's -1.0).
    node_locality_threshold: float = -1.0
    rack_locality_threshold: float = -1.0
    preemption: bool = True
    #: Seconds between asking for a container back and killing it.
    preemption_warn_time: float = 0.0
    #: Policy forced at the root, e.g. "fifo" for the baseline scheduler.
    root_policy: str | None = None
    #: How often a driver should call Engine.update, seconds.
    update_interval: float = 0.5

    def __post_init__(self) -> None:
        if self.locality_mode not in ("time", "count"):
            raise ValueError(f"locality_mode must be 'time' or 'count', not {self.locality_mode!r}")
        if self.heartbeat_interval <= 0:
            raise ValueError("heartbeat_interval must be positive")
        for name in ("node_locality_delay", "rack_locality_delay"):
            v = getattr(self, name)
            if v is not None and v < 0:
                raise ValueError(f"{name} must be >= 0")
        if self.preemption_warn_time < 0:
            raise ValueError("preemption_warn_time must be >= 0")

    @property
    def t1(self) -> float:
        d = self.node_locality_delay
        return 1.5 * self.heartbeat_interval if d is None else d

    @property
    def t2(self) -> float:
        d = self.rack_locality_delay
        return 1.5 * self.heartbeat_interval if d is None else d
