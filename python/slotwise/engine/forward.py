"""The live state played forward (issue 41): when each app gets its first
container and when its last one ends, by letting a fork of the engine
decide, heartbeat after heartbeat, on a clock of its own.

A running container ends when its run time says (``Durations``: the app's
own ended containers of that priority, else its name's, else the
cluster's): at its launch plus that time, or, when it has already run
longer, a heartbeat from now. A container the fork places runs that long
from then. An AM container runs as long as its app: it ends when the app has
nothing left to run or ask for, and the app is done then. Nodes heartbeat
every ``heartbeat`` seconds while something waits and they have room, and
the update pass runs every ``update`` seconds, so fair shares, limits and
delay scheduling decide as they do live. Preemption is left out for now.

What it cannot tell it says: an app whose containers have no run time to
go by yet, or whose AM has not asked for its tasks (a YARN app waiting for
its AM: how many tasks it will ask for is not known before), has no finish,
with the reason; nothing past ``horizon`` is forecast.

The play runs on a copy (``views.dry_run.Copier``, which also copies what
the live engines share and change, a market's budgets) and never touches
the live engine; ``quantile`` picks which run time of each sample to assume, so a
forecast is several plays (say 0.1, 0.5 and 0.9) and gives a range.
"""

from __future__ import annotations

import heapq
import time

from ..resources import KIND_DIMS, measure

#: The run times a forecast plays with: its range and its estimate (the
#: 10th, 50th and 90th percentiles of each sample: an 80% range when run
#: times are what spreads the outcomes).
QUANTILES = (0.1, 0.5, 0.9)

#: Why a forecast has no finish, in the words explain and the console use.
NO_RUN_TIME = "no container of its kind has ended yet, so its run time is unknown"
AM_NOT_ASKED = "its AM has not asked for its tasks yet, so how much it will run is unknown"
PAST_HORIZON = "not within the forecast's horizon"
OVER_BUDGET = "not within the CPU the forecast may take (the cluster is too busy to play that far ahead)"
#: CPU seconds one forecast (all its plays) may take; a play that runs out
#: stops where it is, and what it had not reached says so.
BUDGET = 0.3


class Outcome:
    """One app's forecast from one play: ``start`` (when its first
    container starts; its real start when it had one), ``finish`` (when its
    last ends) or ``why`` it has none."""

    __slots__ = ("app_id", "start", "finish", "why")

    def __init__(self, app_id: str, start: float | None) -> None:
        self.app_id, self.start, self.finish, self.why = app_id, start, None, None

    def __repr__(self) -> str:
        return f"Outcome({self.app_id}, start={self.start}, finish={self.finish}, why={self.why})"


def run_times(engine, durations, quantile: float) -> dict:
    """The run time each app's containers of each priority are assumed to
    take, read from the live learner once, before the play (so the play
    needs no lock): {(app id, priority): seconds}; a pair with none seen is
    left out."""
    out = {}
    if durations is None:
        return out
    for app in engine.apps.values():
        prios = set(app.requests) | {c.priority for c in app.containers.values() if not c.is_am}
        for prio in prios:
            est = durations.estimate(app, prio)
            if est is not None:
                out[(app.app_id, prio)] = est.quantile(quantile)
    return out


def forecast(copies, times: dict, now: float, horizon: float = 3600.0,
             heartbeat: float | None = None, budget: float | None = BUDGET) -> dict[str, "Forecast"]:
    """Each app's forecast: one play per quantile of the run times (``times``:
    quantile -> ``run_times``; the middle one the estimate, the outer ones
    its range), each on an engine ``copies`` makes of the live one as it was
    at ``now`` (``views.dry_run.Copier``: forked under the driver's lock,
    with the run times, and played outside it). Quantiles whose run times
    are all the same (no sample has spread yet) are played once: the same
    inputs decide the same, so one play's outcomes stand for each, and the
    budget is shared among the plays made. ``budget`` None: no bound."""
    qs = sorted(times)
    unique: list = []  # the quantiles whose run times differ from every other's: one play each
    for q in qs:
        if not any(times[p] == times[q] for p in unique):
            unique.append(q)
    each = None if budget is None else budget / len(unique)
    played = {q: play(copies.engine(now), times[q], now, horizon, heartbeat, budget=each) for q in unique}
    plays = [played[next(p for p in unique if times[p] == times[q])] for q in qs]
    low, mid, high = plays[0], plays[len(plays) // 2], plays[-1]
    return {app_id: Forecast(o, low[app_id], high[app_id]) for app_id, o in mid.items()}


class Forecast:
    """One app's forecast: ``start`` and ``finish`` (None when it cannot
    tell: ``why``), each with the range the outer plays gave (``*_low``,
    ``*_high``: None when that play could not tell)."""

    __slots__ = ("app_id", "start", "start_low", "start_high", "finish", "finish_low", "finish_high", "why")

    def __init__(self, mid: Outcome, low: Outcome, high: Outcome) -> None:
        self.app_id, self.why = mid.app_id, mid.why
        self.start, self.finish = mid.start, mid.finish
        starts = [o.start for o in (low, mid, high) if o.start is not None]
        finishes = [o.finish for o in (low, mid, high) if o.finish is not None]
        self.start_low, self.start_high = (min(starts), max(starts)) if starts else (None, None)
        self.finish_low, self.finish_high = (min(finishes), max(finishes)) if mid.finish is not None else (None, None)
        if mid.finish is not None and high.finish is None:
            self.finish_high = None  # its long end is past the horizon

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__slots__}


def play(e, times: dict, now: float, horizon: float = 3600.0, heartbeat: float | None = None,
         update: float | None = None, budget: float | None = None, trace: "Trace | None" = None) -> dict[str, Outcome]:
    """Each app's outcome when the fork ``e`` (on a ManualClock at
    ``now``) is played forward for ``horizon`` seconds with run times
    ``times`` (``run_times``), in at most ``budget`` seconds of this
    thread's CPU (None: no bound); ``trace`` (a what-if's) is given each
    leaf queue's share as the play goes."""
    stop_at = None if budget is None else time.thread_time() + budget
    over = False
    clock = e.clock
    heartbeat = heartbeat or e.settings.heartbeat_interval
    update = update or e.settings.update_interval
    out = {a.app_id: Outcome(a.app_id, min((c.launch_time for c in a.containers.values()), default=None))
           for a in e.apps.values()}
    why: dict[str, str] = {}  # apps whose finish cannot be told, and why
    ends: list = []  # (time, seq, container id) of the containers whose run time is known
    seq = 0

    def runs(app_id: str, prio: int, cid: str, since: float, t: float) -> None:
        nonlocal seq
        rt = times.get((app_id, prio))
        if rt is None:  # it holds its room to the horizon
            why.setdefault(app_id, NO_RUN_TIME)
            return
        seq += 1
        heapq.heappush(ends, (max(since + rt, t), seq, cid))

    for c in list(e.containers.values()):
        if not c.is_am:
            runs(c.app_id, c.priority, c.container_id, c.launch_time, now + heartbeat)
    # Only nodes that may have room heartbeat: all at first, then those a
    # container ended on, until a heartbeat leaves one without room (a full
    # cluster's other nodes could place nothing). Only apps something
    # happened to are asked whether they are done.
    order = {n: i for i, n in enumerate(e.nodes)}

    def has_room(node_id: str) -> bool:
        node = e.nodes.get(node_id)
        return node is not None and any(o.has_room(node.capacity - node.used) for o in e.offers)

    room = {n for n in order if has_room(n)}
    touched = set(e.apps)
    t, next_update, last = now, now, now + horizon
    while t <= last:
        if stop_at is not None and time.thread_time() > stop_at:
            over = True
            break
        while ends and ends[0][0] <= t:
            c = e.containers.get(heapq.heappop(ends)[2])
            if c is not None:
                room.add(c.node_id)
                touched.add(c.app_id)
                e.container_finished(c.container_id)
        if t >= next_update:
            e.update()
            next_update = t + update
        for app_id in sorted(touched):
            app = e.apps.get(app_id)
            d = _done(e, app) if app is not None else False
            if d:
                out[app_id].finish = t
                e.remove_app(app_id)
            elif d is None:
                why.setdefault(app_id, AM_NOT_ASKED)
        touched = set()
        if e.root.active_apps and room:
            for node_id in sorted(room, key=order.__getitem__):
                if stop_at is not None and time.thread_time() > stop_at:
                    break
                for a in e.heartbeat(node_id):
                    o = out[a.app_id]
                    if o.start is None:
                        o.start = t
                    touched.add(a.app_id)
                    if not a.is_am:
                        runs(a.app_id, a.priority, a.container_id, t, t)
                if not has_room(node_id):
                    room.discard(node_id)
            if trace is not None:
                trace.sample(e, t - now)
            t += heartbeat
        elif ends:
            if trace is not None:
                trace.sample(e, t - now)
            t = max(ends[0][0], t + 1e-9)  # nothing can be placed until something ends: on to it
        else:
            break
        clock.set(t)
    if trace is not None:
        trace.sample(e, t - now)
        trace.close(horizon if not over else t - now)
    for app_id, o in out.items():
        if o.finish is None:
            o.why = why.get(app_id, OVER_BUDGET if over else PAST_HORIZON)
    return out


class Trace:
    """Each leaf queue's share of the cluster (memory on YARN, slots on
    MRv1: ``resources.measure``) as a play goes, read every ``every``
    seconds of the play: ``t`` (seconds from its start) and ``queues``
    (name -> fractions, one per ``t``). The play tells it the state after
    each of its steps (``at``); a point between two steps reads the
    earlier one, as the shares did not move in between."""

    __slots__ = ("every", "t", "queues", "_now")

    def __init__(self, every: float) -> None:
        self.every, self.t, self.queues, self._now = every, [], {}, None

    def sample(self, e, at: float) -> None:
        self._fill(at)
        dims = KIND_DIMS[e.kind]
        total = measure(e.cluster.to_dict(dims)) or 1.0
        self._now = {q.name: round(measure(q.usage.to_dict(dims)) / total, 4)
                     for q in e.queues.values() if q.is_leaf}

    def close(self, at: float) -> None:
        """The play ended at ``at`` (its horizon, or nothing left to do):
        the points up to it read its last state."""
        self._fill(at + 1e-9)

    def _fill(self, before: float) -> None:
        if self._now is None:
            return
        while (k := len(self.t)) * self.every < before:
            self.t.append(round(k * self.every, 3))
            for name in self._now.keys() | self.queues.keys():
                self.queues.setdefault(name, [0.0] * k).append(self._now.get(name, 0.0))

    def mean(self) -> dict[str, float]:
        """Each queue's mean share over the points."""
        n = len(self.t) or 1
        return {q: round(sum(col) / n, 4) for q, col in self.queues.items()}


def _done(e, app) -> bool | None:
    """True: it has nothing left to run or ask for (its AM ends now);
    False: it runs or asks; None: it will ask for tasks nobody can count
    yet (its AM, or an MRv1 job, has asked for none so far)."""
    if app.pending.any_positive() or any(not c.is_am for c in app.containers.values()):
        return False
    if app.ran == 0 or (e.kind == "yarn" and not app.unmanaged and app.ran <= 1):
        return None
    return True
