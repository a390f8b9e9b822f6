"""What a simulated run is set up with (SimSettings: the simulated world;
the scheduler's own settings are EngineSettings) and what it produced
(Result: tasks, jobs, samples and counts, for metrics and reports)."""

from __future__ import annotations

from dataclasses import dataclass, field

NODE, RACK, OFF = 0, 1, 2
LEVEL_NAMES = ("node_local", "rack_local", "off_rack")


@dataclass
class SimSettings:
    """The simulated world (the scheduler's own settings are EngineSettings)."""

    heartbeat_interval: float = 3.0
    #: How much longer a map's input read takes from another node of the
    #: same rack, and from another rack (only the ``io`` part slows down).
    rack_read_slowdown: float = 1.5
    off_rack_read_slowdown: float = 3.0
    replication: int = 3
    #: Fraction of nodes that are slow, and how much slower they run.
    slow_nodes: float = 0.0
    slow_factor: float = 2.0
    #: Node failures: how many, and how long a failed node stays away
    #: (None: for good).  Failure times fall uniformly in ``failure_window``.
    node_failures: int = 0
    failure_window: tuple[float, float] = (60.0, 600.0)
    repair_time: float | None = 300.0
    #: How often queues' shares and cluster use are sampled for the report.
    sample_interval: float = 5.0
    #: Speculative execution inside jobs (the job's AM, not the scheduler):
    #: "none", or "late": LATE-style, a job with no task of a kind waiting asks
    #: for a copy of each running task whose estimated time left exceeds
    #: what a fresh copy is expected to take (the median of its finished
    #: tasks of that kind), and runs each container it gets on the task with
    #: the longest time left.  At most one copy per task; the first copy to
    #: finish wins and the others are killed.
    speculation: str = "none"
    #: Copies running at once, at most this fraction of the cluster's slots
    #: (LATE's SpeculativeCap; 1 for no cap).
    speculative_cap: float = 0.1
    #: Stop here even if jobs are still running.
    until: float | None = None
    seed: int = 0


@dataclass
class TaskRecord:
    job: str
    kind: str  # map or reduce
    node: str
    locality: int  # NODE, RACK, OFF (reduces: OFF, they read from every map)
    start: float
    end: float


@dataclass
class JobRecord:
    job: str
    queue: str
    label: str
    kind: str
    maps: int
    reduces: int
    submit: float
    finish: float | None = None


@dataclass
class Result:
    """What one run produced, for metrics and reports."""

    label: str
    #: A slot cluster (MRv1: samples count map slots) or a YARN one (memory_mb).
    slot_mode: bool = False
    tasks: list[TaskRecord] = field(default_factory=list)
    jobs: dict[str, JobRecord] = field(default_factory=dict)
    #: (time, {queue: (memory_mb in use, fair share of memory_mb; map slots on MRv1)}, busy_slots)
    samples: list[tuple[float, dict[str, tuple[float, float]], float]] = field(default_factory=list)
    total_slots: float = 0.0
    end_time: float = 0.0
    events: int = 0
    heartbeats: int = 0
    engine_calls: int = 0
    preempted: int = 0
    failed_tasks: int = 0
    #: Speculative copies launched, how many finished first, and the
    #: containers killed because another copy of their task finished.
    speculative: int = 0
    speculative_won: int = 0
    copies_killed: int = 0
    wall_seconds: float = 0.0
    rejected: list[str] = field(default_factory=list)
    #: A shadow's figures (slotwise.shadow: compared, diverged, ...), or None.
    shadow: dict | None = None
