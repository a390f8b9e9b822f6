"""Hopper (Ren et al., "Speculation-aware Cluster Scheduling"): a queue's
capacity divided among its jobs knowing that jobs speculate.

A job with T remaining tasks whose durations have a Pareto tail of index
beta gains most from its first (2/beta) T slots (its virtual size V; the
slots beyond T hold speculative copies) and little from more.  So when the
queue is short, the smallest virtual sizes are filled first; when it is
ample, it is shared in proportion to T (Algorithm 1).  Each free container
goes to the job furthest below its allocation (argmax H_i - S_i).
Algorithm 2 keeps every job at least (1 - epsilon) S / N; Algorithm 3
weights a job by alpha, its downstream (reduce) work over its current
(map) work.

Units: a job's tasks are counted in memory (its containers' sizes), so jobs
with different container sizes share one scale; the queue's share S is its
fair share of memory.  A job's speculative attempts are ordinary requests to
the ResourceManager (MapReduce asks for them at the map or reduce priority),
so T counts a phase's outstanding plus running containers, copies included.

Settings come from the driver's services ("hopper": ``HopperSettings``):
``slotwise serve --hopper-beta/--hopper-epsilon``, or a simulation's.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from .fairshare import DESIGN
from ..resources import Resource
from .schedulable import Schedulable
from .base import PolicyContext, SchedulingPolicy, register_policy

#: MapReduce's reduce request priority on YARN: the downstream phase.
REDUCE_PRIORITY = 10
#: beta until enough tasks have finished to estimate it.
DEFAULT_BETA = 1.5
#: Finished tasks before the online estimate replaces the default.
MIN_SAMPLES = 30
#: Jobs whose finished tasks the estimate remembers.
HISTORY_JOBS = 200


@dataclass(frozen=True)
class HopperSettings:
    """``beta``: the Pareto tail index of task durations, or None to
    estimate it online from finished tasks.  ``epsilon``: 1 is Algorithm 1
    (performance only), 0 perfect fairness (every job S/N)."""

    beta: float | None = None
    epsilon: float = 0.1

    def __post_init__(self) -> None:
        if self.beta is not None and not (self.beta > 0 and math.isfinite(self.beta)):
            raise ValueError(f"hopper beta must be a positive number, got {self.beta!r}")
        if not 0.0 <= self.epsilon <= 1.0:
            raise ValueError(f"hopper epsilon must be between 0 and 1, got {self.epsilon!r}")


# ---------------------------------------------------------------- the model
def speculation_level(beta: float) -> float:
    """Copies per task worth running, 2/beta, held to [1, 2]: a light tail
    (beta >= 2) needs no copies; beta <= 1 (no finite mean) is held at 1."""
    return min(2.0, max(1.0, 2.0 / beta))


def algorithm2(virtual: Sequence[float], slots: float, epsilon: float) -> list[float]:
    """Algorithm 2 on virtual sizes already sorted ascending: every job at
    least F = (1 - epsilon) S / N, the rest filling the smallest virtual
    sizes first (short capacity) or shared in proportion (ample).  With
    epsilon = 1 this is Algorithm 1.  (The paper shares in proportion to T;
    for single-phase jobs V is T times one constant, so it is the same.)"""
    n = len(virtual)
    if n == 0 or slots <= 0:
        return [0.0] * n
    floor = (1.0 - epsilon) * slots / n
    m1 = 0
    while m1 < n and virtual[m1] <= floor:
        m1 += 1
    need = sum(virtual[m1:]) + m1 * floor
    if slots <= need:
        out = [floor] * n
        left = slots - floor * n
        for i in range(m1, n):
            extra = min(virtual[i] - floor, max(left, 0.0))
            out[i] += extra
            left -= extra
        return out
    for m2 in range(n):  # the first m2 jobs get the floor, the rest share in proportion
        rest = sum(virtual[m2:])
        left = slots - m2 * floor
        if rest > 0 and virtual[m2] / rest * left >= max(floor, virtual[m2]):
            return [floor] * m2 + [v / rest * left for v in virtual[m2:]]
    return [slots / n] * n  # unreachable: m2 = m1 always qualifies


def algorithm3(virtual: Sequence[float], alpha: Sequence[float], slots: float) -> list[float]:
    """Algorithm 3 on jobs already sorted (ascending max(T, T'), the larger
    weight first on ties); ``virtual`` = (2/beta) T sqrt(alpha).  Walking j
    = 1..n: fill the first j jobs to V_i / sqrt(alpha_min of the first j),
    the lightest of them last, while S is within that; between two fill
    regions share S among the first j in proportion to V (the paper's case
    3, whose sums we read as running to k+1, the reading under which the
    four cases cover every S once); past the last, in proportion among all.
    With every alpha equal it is Algorithm 1."""
    n = len(virtual)
    if n == 0 or slots <= 0:
        return [0.0] * n
    amin = []
    lo = math.inf
    for a in alpha:
        lo = min(lo, a)
        amin.append(lo)

    def a_of(j: int) -> float:  # alpha_min over the first j jobs (j >= 2, as case 1 reads)
        return amin[min(max(j, 2), n) - 1]

    prefix = 0.0
    for j in range(1, n + 1):
        r = math.sqrt(a_of(j))
        prefix += virtual[j - 1]
        if slots <= prefix / r:
            out = [0.0] * n
            lightest = max(range(j), key=lambda i: (-alpha[i], i))
            left = slots
            for i in [i for i in range(j) if i != lightest] + [lightest]:
                give = min(virtual[i] / r, left)
                out[i] = give
                left -= give
            return out
        nxt = math.sqrt(amin[j]) if j < n else 0.0
        if nxt == 0.0 or slots <= prefix / nxt:
            return [virtual[i] / prefix * slots if i < j else 0.0 for i in range(n)]
    return [v / prefix * slots for v in virtual]  # unreachable


@dataclass
class Job:
    """What Hopper reads of a job: remaining work in its current phase and
    the downstream one, and how much more it could use (None: no cap)."""

    remaining: float
    downstream: float = 0.0
    cap: float | None = None
    #: One task's size: the virtual size is rounded up to whole tasks (a
    #: job of one task may have its one copy); 0: no rounding.
    unit: float = 0.0

    def virtual(self, k: float) -> float:
        v = k * self.remaining
        if self.unit > 0:
            v = math.ceil(v / self.unit - 1e-9) * self.unit
        return v

    @property
    def alpha(self) -> float:
        """Downstream over current work; 1 (neutral) for a last phase, or
        while the downstream work is not yet known."""
        if self.downstream > 0 and self.remaining > 0:
            return self.downstream / self.remaining
        return 1.0


def allocate(jobs: Sequence[Job], slots: float, beta: float, epsilon: float = 1.0) -> list[float]:
    """Each job's allocation H_i, jobs given in submission order (ties go
    to the earlier).  All alphas 1: Algorithm 2 (Algorithm 1 at epsilon 1).
    Otherwise Algorithm 3 at epsilon 1, and at epsilon < 1 Algorithm 2 on
    Algorithm 3's order and weighted sizes (the paper does not combine
    them).  A job is never given more than its cap: what it cannot use goes
    to the others by running the algorithm again without it."""
    n = len(jobs)
    out = [0.0] * n
    live = [i for i in range(n) if jobs[i].remaining > 0]
    left = slots
    k = speculation_level(beta)
    while live and left > 0:
        alphas = [jobs[i].alpha for i in live]
        dag = any(a != 1.0 for a in alphas)
        if dag:
            order = sorted(range(len(live)), key=lambda x: (
                max(jobs[live[x]].remaining, jobs[live[x]].downstream), -alphas[x], x))
            amin_all = min(alphas)
            if epsilon >= 1.0:
                virt = [jobs[live[x]].virtual(k) * math.sqrt(alphas[x]) for x in order]
                got = algorithm3(virt, [alphas[x] for x in order], left)
            else:
                virt = [jobs[live[x]].virtual(k) * math.sqrt(alphas[x] / amin_all) for x in order]
                got = algorithm2(virt, left, epsilon)
        else:
            order = sorted(range(len(live)), key=lambda x: (jobs[live[x]].remaining, x))
            got = algorithm2([jobs[live[x]].virtual(k) for x in order], left, epsilon)
        capped = []
        for x, g in zip(order, got):
            i = live[x]
            cap = jobs[i].cap
            if cap is not None and g >= cap:
                capped.append(i)
            out[i] = g
        if not capped:
            break
        for i in capped:
            out[i] = jobs[i].cap
            left -= jobs[i].cap
        live = [i for i in live if i not in capped]
        for i in live:
            out[i] = 0.0
    return out


# ------------------------------------------------------------ estimating beta
def estimate_beta(groups: Iterable[Sequence[float]]) -> float | None:
    """The Pareto tail index from finished tasks' durations, grouped by job
    (each job has its own scale x_m, the tail is shared).  Within a job,
    ln(x / min) of the other n - 1 tasks are i.i.d. exponential with rate
    beta whatever x_m is, so pooled over jobs with N such terms summing to
    L, (N - 1) / L is unbiased (the Hill / maximum-likelihood estimator
    with its small-sample correction).  None with fewer than two terms."""
    terms = 0
    total = 0.0
    for durations in groups:
        xs = [d for d in durations if d > 0]
        if len(xs) < 2:
            continue
        lo = min(xs)
        terms += len(xs) - 1
        total += sum(math.log(x / lo) for x in xs)
    if terms < 2 or total <= 0:
        return None
    return (terms - 1) / total


class _Tail:
    """One job's finished task times as the estimator needs them: count,
    sum of logs and the minimum (so adding one is O(1))."""

    __slots__ = ("n", "logs", "low")

    def __init__(self) -> None:
        self.n, self.logs, self.low = 0, 0.0, math.inf

    def terms(self) -> tuple[int, float]:
        """(n - 1, sum of ln(x / min)): this job's part of ``estimate_beta``."""
        if self.n < 2:
            return 0, 0.0
        return self.n - 1, self.logs - self.n * math.log(self.low)


@dataclass
class _QueueState:
    """Per queue: the containers seen running (to time them) and the
    finished tasks' times by job, for the online beta (``estimate_beta``
    kept as running sums over the last HISTORY_JOBS jobs)."""

    running: dict = field(default_factory=dict)  # container id -> (app id, launch time)
    tails: dict = field(default_factory=dict)  # app id -> _Tail
    order: deque = field(default_factory=deque)  # app ids, oldest first
    samples: int = 0
    terms: int = 0
    total: float = 0.0
    beta: float = DEFAULT_BETA
    estimated: bool = False

    def _add(self, app_id: str, duration: float) -> None:
        tail = self.tails.get(app_id)
        if tail is None:
            tail = self.tails[app_id] = _Tail()
            self.order.append(app_id)
            while len(self.order) > HISTORY_JOBS:
                self._forget(self.tails.pop(self.order.popleft()))
        self._forget(tail)
        tail.n += 1
        tail.logs += math.log(duration)
        tail.low = min(tail.low, duration)
        n, total = tail.terms()
        self.samples += tail.n
        self.terms += n
        self.total += total

    def _forget(self, tail: _Tail) -> None:
        n, total = tail.terms()
        self.samples -= tail.n
        self.terms -= n
        self.total -= total

    def observe(self, queue, now: float) -> None:
        seen = {}
        for app in queue.apps:
            for c in app.containers.values():
                if not c.is_am:
                    seen[c.container_id] = (app.app_id, c.launch_time)
        added = False
        for cid, (app_id, start) in self.running.items():
            if cid not in seen and now > start:
                self._add(app_id, now - start)
                added = True
        self.running = seen
        if added and self.samples >= MIN_SAMPLES and self.terms >= 2 and self.total > 0:
            self.beta, self.estimated = (self.terms - 1) / self.total, True


def settings_of(ctx: PolicyContext | None) -> HopperSettings:
    s = ctx.services.get("hopper") if ctx is not None else None
    return s if isinstance(s, HopperSettings) else HopperSettings()


def _phase_work(app) -> tuple[float, float, float]:
    """(map, reduce) memory outstanding plus running, the AM aside, and
    the size of one task of the current phase."""
    maps = reduces = 0.0
    unit = {}
    for r in app.requests.values():
        unit.setdefault(r.priority == REDUCE_PRIORITY, r.resource.memory_mb)
        w = r.resource.memory_mb * r.num_containers
        if r.priority == REDUCE_PRIORITY:
            reduces += w
        else:
            maps += w
    for c in app.containers.values():
        if c.is_am:
            continue
        unit.setdefault(c.priority == REDUCE_PRIORITY, c.resource.memory_mb)
        if c.priority == REDUCE_PRIORITY:
            reduces += c.resource.memory_mb
        else:
            maps += c.resource.memory_mb
    return maps, reduces, unit.get(maps <= 0, 0.0)


def job_of(app) -> Job:
    """An app as Hopper sees it: the current phase is the map phase while
    any map is outstanding or running, then the reduce phase."""
    maps, reduces, unit = _phase_work(app)
    am = sum(c.resource.memory_mb for c in app.containers.values() if c.is_am)
    cap = max(app.demand.memory_mb - am, 0.0)
    if maps > 0:
        return Job(maps, reduces, cap, unit)
    return Job(reduces, 0.0, cap, unit)


class HopperPolicy(SchedulingPolicy):
    name = "hopper"
    leaf_only = True  # it divides a queue among jobs

    def sort_key(self, s: Schedulable, cluster: Resource, key: str = "memory_mb"):
        # argmax(H_i - S_i): the job furthest below its allocation first.
        return (getattr(s.usage, key) - getattr(s.fair_share, key), s.start_time, s.name)

    def order(self, children: list, cluster: Resource, key: str = "memory_mb") -> list:
        keys = [getattr(s.usage, key) - getattr(s.fair_share, key) for s in children]
        idx = sorted(range(len(children)), key=keys.__getitem__)  # stable: (start_time, name) on ties
        return [children[i] for i in idx]

    def on_update(self, queue, now: float, ctx: PolicyContext) -> None:
        if not queue.apps and queue.policy_state is None:
            return
        state = queue.policy_state
        if not isinstance(state, _QueueState):
            state = queue.policy_state = _QueueState()
        state.observe(queue, now)
        fixed = settings_of(ctx).beta
        if fixed is not None:
            state.beta = fixed
        # Published for the driver's read views (the simulator's report).
        ctx.services.setdefault("hopper_beta", {})[f"{ctx.stream}:{queue.name}".lstrip(":")] = {
            "beta": state.beta, "source": "configured" if fixed is not None else
            "estimated" if state.estimated else "default", "finished_tasks": state.samples}

    def compute_shares(self, children: Sequence[Schedulable], total: Resource, steady: bool = False,
                       rule: str = DESIGN, queue=None, ctx: PolicyContext | None = None,
                       key: str = "memory_mb") -> list[Resource]:
        if not children:
            return []
        if key != "memory_mb":  # MRv1: each kind of slot is a phase of its own
            return self._slot_shares(children, total, steady, queue, ctx, key)
        if total.memory_mb <= 0:
            return [Resource(0, 0) for _ in children]
        settings = settings_of(ctx)
        state = queue.policy_state if queue is not None else None
        beta = settings.beta or (state.beta if isinstance(state, _QueueState) else DEFAULT_BETA)
        jobs = [job_of(a) if hasattr(a, "containers") else Job(a.demand.memory_mb, 0.0, a.demand.memory_mb)
                for a in children]
        if steady:  # no work to weigh: equal shares
            return [Resource(total.memory_mb / len(children), total.vcores / len(children)) for _ in children]
        got = allocate(jobs, total.memory_mb, beta, settings.epsilon)
        out = []
        for a, g in zip(children, got):
            h = g + _am_memory(a)  # the AM's container is the job's too
            f = h / total.memory_mb
            out.append(Resource(h, f * total.vcores))
        return out

    def _slot_shares(self, children, total: Resource, steady: bool, queue, ctx, key: str) -> list[Resource]:
        whole = getattr(total, key)
        if whole <= 0 or steady:
            return [Resource.of({key: whole / len(children)}) for _ in children]
        state = queue.policy_state if queue is not None else None
        settings = settings_of(ctx)
        beta = settings.beta or (state.beta if isinstance(state, _QueueState) else DEFAULT_BETA)
        jobs = [Job(getattr(a.demand, key), 0.0, getattr(a.demand, key), 1.0) for a in children]
        return [Resource.of({key: g}) for g in allocate(jobs, whole, beta, settings.epsilon)]

    def explain_child(self, queue, child, ctx: PolicyContext) -> str | None:
        state = queue.policy_state
        beta = settings_of(ctx).beta or (state.beta if isinstance(state, _QueueState) else DEFAULT_BETA)
        how = "configured" if settings_of(ctx).beta else (
            "estimated from finished tasks" if isinstance(state, _QueueState) and state.estimated else "default")
        if not hasattr(child, "containers"):
            return None
        j = job_of(child)
        return (f"{child.name} has {j.remaining:g} MB of tasks left in its phase (alpha {j.alpha:.2g}); "
                f"Hopper allocates it {child.fair_share.memory_mb:g} MB at beta {beta:.2f} ({how})")


def _am_memory(app) -> float:
    cs = getattr(app, "containers", None)
    if not cs:
        return 0.0
    return sum(c.resource.memory_mb for c in cs.values() if c.is_am)


register_policy("hopper", HopperPolicy)
