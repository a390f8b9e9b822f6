"""The live state played forward (issue 41): when each app gets its first
container and when its work is done (its last task ends; the RM records
its finish then), by letting a fork of the engine decide, heartbeat after
heartbeat, on a clock of its own.

A running container ends when its run time says (``Durations``: the app's
own ended containers of that priority, else its name's, else the
cluster's): at its launch plus that time, or, when it has already run
longer, a heartbeat from now. A container the fork places runs that long
from then. An AM container runs as long as its app: the app is done when
it has nothing left to run or ask for, and its AM ends the learned tail
later (``Durations.tail``: a MapReduce AM commits, unregisters and lingers;
its room and its place under a running-app limit are held till then; no
tail learned, at once). Nodes heartbeat
every ``heartbeat`` seconds while something waits and they have room, and
the update pass runs every ``update`` seconds, so fair shares, limits and
delay scheduling decide as they do live.

What the live state does not show, the play models (``_Model``, kept apart
from its loop), since each moves a waiting app's start:

- Preemption, as the engine decides it: a kill ends its container at once
  and its app asks again for that task, so the re-run's time counts (a
  starved queue otherwise waits in the play for victims to end on their
  own). Each play counts what it took back, per queue (``Outcomes``).
- The tasks an app whose AM has not asked yet will ask for: what finished
  apps of its name (else its queue, else the cluster) ran
  (``Durations.work_for``), asked the learned delay after its AM started.
- Apps still to arrive: each leaf queue's apps at the rate seen in the last
  ten minutes, evenly spaced (a forecast is reproducible), each a typical
  app of that queue; so waiting apps see the share newcomers will take.
  They are never in the outcomes. On as the engine's settings say
  (``forecast_arrivals``; serve --forecast-arrivals off) or a caller asks.

What it cannot tell it says: an app whose containers have no run time to
go by yet, or whose AM has not asked for its tasks when no finished app
says what it will ask for, has no finish, with the reason; nothing past
``horizon`` is forecast.

The play runs on a copy (``views.dry_run.Copier``, which also copies what
the live engines share and change, a market's budgets) and never touches
the live engine; ``quantile`` picks which run time of each sample to assume, so a
forecast is several plays (say 0.1, 0.5 and 0.9) and gives a range.
"""

from __future__ import annotations

import heapq
import math
import time

from ..placement import PlacementRejected
from ..resources import KIND_DIMS, measure
from .app import Request

#: The run times a forecast plays with: its range and its estimate (the
#: 10th, 50th and 90th percentiles of each sample: an 80% range when run
#: times are what spreads the outcomes).
QUANTILES = (0.1, 0.5, 0.9)

#: Why a forecast has no finish, in the words explain and the console use.
NO_RUN_TIME = "no container of its kind has ended yet, so its run time is unknown"
AM_NOT_ASKED = "its AM has not asked for its tasks yet, so how much it will run is unknown"
PAST_HORIZON = "not within the forecast's horizon"
AT_LIMIT = ("its queue or user is at its running-app limit, and the running apps' ends cannot be told "
            "(no run time seen yet, or an AM that has not asked for its tasks)")
OVER_BUDGET = "not within the CPU the forecast may take (the cluster is too busy to play that far ahead)"
#: CPU seconds one forecast (all its plays) may take; a play that runs out
#: stops where it is, and what it had not reached says so.
BUDGET = 0.3
#: Apps still to arrive one play imagines at most (``arrivals``): a queue
#: that saw a burst must not fill the play with thousands of them.
MAX_ARRIVALS = 500
#: Of those, at most this many of one queue at once: a queue they arrive in
#: faster than it runs them asks for more than its share with these
#: already, and more would cost the play CPU and change no other queue.
ARRIVED_AT_ONCE = 20


class Outcomes(dict):
    """One play's outcomes: app id -> Outcome for the apps there at its
    start (the apps it imagines arriving are never among them), and
    ``preemptions``: leaf queue of the app preempted -> containers the play
    took back."""

    __slots__ = ("preemptions",)

    def __init__(self, *args, **kw) -> None:
        super().__init__(*args, **kw)
        self.preemptions: dict[str, int] = {}


class RunTimes(dict):
    """What a play goes by, read from the live learner before it
    (``run_times``): (app id, priority) -> seconds; ``work``: app id ->
    the learned ``durations.Work`` of an app that has not asked for its
    tasks yet; ``tails``: app id -> how long its AM runs after its last
    task; ``arrivals``: (leaf queue, first arrival, spacing, Work) of the
    queues apps keep arriving in."""

    __slots__ = ("work", "arrivals", "tails")

    def __init__(self) -> None:
        super().__init__()
        self.work: dict = {}
        self.arrivals: list = []
        self.tails: dict = {}


class Outcome:
    """One app's forecast from one play: ``start`` (when its first
    container starts; its real start when it had one), ``finish`` (when its
    last ends) or ``why`` it has none."""

    __slots__ = ("app_id", "start", "finish", "why")

    def __init__(self, app_id: str, start: float | None) -> None:
        self.app_id, self.start, self.finish, self.why = app_id, start, None, None

    def __repr__(self) -> str:
        return f"Outcome({self.app_id}, start={self.start}, finish={self.finish}, why={self.why})"


def run_times(engine, durations, quantile: float) -> RunTimes:
    """The run time each app's containers of each priority are assumed to
    take, read from the live learner once, before the play (so the play
    needs no lock): {(app id, priority): seconds}; a pair with none seen is
    left out. With them (``RunTimes``), the learned work of each app that
    has not asked for its tasks yet (its tasks' run times added), and the
    queues apps keep arriving in, with a typical app of each."""
    out = RunTimes()
    if durations is None:
        return out
    for app in engine.apps.values():
        prios = set(app.requests) | {c.priority for c in app.containers.values() if not c.is_am}
        for prio in prios:
            est = durations.estimate(app, prio)
            if est is not None:
                out[(app.app_id, prio)] = est.quantile(quantile)
        if not app.unmanaged and engine.kind == "yarn":
            tail = durations.tail(app, quantile)
            if tail:
                out.tails[app.app_id] = tail
        if app.ran <= 1 and not any(not c.is_am for c in app.containers.values()):
            work = durations.work_for(app, quantile)  # it may not have asked for its tasks yet
            if work is not None:
                out.work[app.app_id] = work
                for prio, _res, _n, seconds in work.tasks:  # its name's run times, else the work's own
                    if (app.app_id, prio) not in out:
                        est = durations.estimate(app, prio)
                        out[(app.app_id, prio)] = est.quantile(quantile) \
                            if est is not None and est.source != "cluster" else seconds
    for queue, first, spacing in durations.arrivals(engine.clock.now()):
        work = durations.work_of_queue(queue)
        if work is not None:
            out.arrivals.append((queue, first, spacing, work))
    return out


def forecast(copies, times: dict, now: float, horizon: float = 3600.0,
             heartbeat: float | None = None, budget: float | None = BUDGET,
             arrivals: bool | None = None) -> dict[str, "Forecast"]:
    """Each app's forecast: one play per quantile of the run times (``times``:
    quantile -> ``run_times``; the middle one the estimate, the outer ones
    its range), each on an engine ``copies`` makes of the live one as it was
    at ``now`` (``views.dry_run.Copier``: forked under the driver's lock,
    with the run times, and played outside it; preempting as the live one
    does). Quantiles whose run times (and AM tails) are all the same (no
    sample has spread yet) are played once: the same inputs decide the
    same, so one play's outcomes stand for each, and the budget is shared
    among the plays made. ``budget`` None: no bound."""
    qs = sorted(times)

    def same(x, y) -> bool:
        return x == y and getattr(x, "tails", None) == getattr(y, "tails", None)

    unique: list = []  # the quantiles whose run times differ from every other's: one play each
    for q in qs:
        if not any(same(times[p], times[q]) for p in unique):
            unique.append(q)
    each = None if budget is None else budget / len(unique)
    played = {q: play(copies.engine(now, preemption=True), times[q], now, horizon, heartbeat, budget=each,
                      arrivals=arrivals) for q in unique}
    plays = [played[next(p for p in unique if same(times[p], times[q]))] for q in qs]
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
         update: float | None = None, budget: float | None = None, trace: "Trace | None" = None,
         arrivals: bool | None = None, until_started: str | None = None) -> Outcomes:
    """Each app's outcome when the fork ``e`` (on a ManualClock at
    ``now``) is played forward for ``horizon`` seconds with run times
    ``times`` (``run_times``), in at most ``budget`` seconds of this
    thread's CPU (None: no bound); ``trace`` (a what-if's) is given each
    leaf queue's share as the play goes; ``arrivals``: whether apps still
    to arrive are imagined (None: as the engine's settings say,
    ``forecast_arrivals``); ``until_started``: an
    app whose start is all that is asked (the play stops once it has one)."""
    stop_at = None if budget is None else time.thread_time() + budget
    over = False
    clock = e.clock
    heartbeat = heartbeat or e.settings.heartbeat_interval
    update = update or e.settings.update_interval
    out = Outcomes((a.app_id, Outcome(a.app_id, min((c.launch_time for c in a.containers.values()), default=None)))
                   for a in e.apps.values())
    why: dict[str, str] = {}  # apps whose finish cannot be told, and why
    ends: list = []  # (time, seq, container id) of the containers whose run time is known
    seq = 0
    made_up: dict = {}  # the run times of the apps the play imagines arriving
    tails = getattr(times, "tails", {})
    closing: set = set()  # apps whose work is done (their finish) and whose AM runs its tail

    def runs(app_id: str, prio: int, cid: str, since: float, t: float) -> None:
        nonlocal seq
        rt = times.get((app_id, prio))
        if rt is None:
            rt = made_up.get((app_id, prio))
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
    # Preemption, the asks of apps whose AM has not asked, apps to arrive.
    if arrivals is None:
        arrivals = e.settings.forecast_arrivals
    model = _Model(e, times, made_up, now, heartbeat, update, arrivals, room, touched, out.preemptions)
    t, next_update, last = now, now, now + horizon
    unfinished = sum(1 for o in out.values() if o.finish is None)
    while t <= last:
        if not unfinished and trace is None:
            break  # every app's end is known: what arrives later changes none of them
        if until_started is not None and getattr(out.get(until_started), "start", 0) is not None:
            break  # (or it is not in the play at all)
        if stop_at is not None and time.thread_time() > stop_at:
            over = True
            break
        model.due(t)
        while ends and ends[0][0] <= t:
            c = e.containers.get(heapq.heappop(ends)[2])
            if c is not None:
                room.add(c.node_id)
                touched.add(c.app_id)
                e.container_finished(c.container_id)
        if t >= next_update:
            model.preempt(e.update(), t)
            next_update = t + update
        for app_id in sorted(touched):
            app = e.apps.get(app_id)
            d = _done(e, app) if app is not None else False
            if d:
                am = next((c for c in app.containers.values() if c.is_am), None)
                if app_id not in closing:  # its work is done now: its finish
                    if app_id in out:
                        out[app_id].finish = t
                        unfinished -= 1
                    if am is not None and app_id in tails:  # its AM ends its tail later, holding its room
                        closing.add(app_id)
                        seq += 1
                        heapq.heappush(ends, (t + tails[app_id], seq, am.container_id))
                        continue
                elif am is not None:
                    continue  # its AM's tail has not ended
                e.remove_app(app_id)
            elif d is None and not model.will_ask(app, t):
                why.setdefault(app_id, AM_NOT_ASKED)
        touched.clear()
        if e.root.active_apps and room:
            for node_id in sorted(room, key=order.__getitem__):
                if stop_at is not None and time.thread_time() > stop_at:
                    break
                for a in e.heartbeat(node_id):
                    o = out.get(a.app_id)
                    if o is not None and o.start is None:
                        o.start = t
                    touched.add(a.app_id)
                    if not a.is_am:
                        runs(a.app_id, a.priority, a.container_id, t, t)
                if not has_room(node_id):
                    room.discard(node_id)
            if trace is not None:
                trace.sample(e, t - now)
            t += heartbeat
        else:  # nothing can be placed until something ends, asks, arrives or is taken back: on to it
            nxt = model.next(next_update)
            if ends and (nxt is None or ends[0][0] < nxt):
                nxt = ends[0][0]
            if nxt is None:
                break
            if trace is not None:
                trace.sample(e, t - now)
            t = max(nxt, t + 1e-9)
        clock.set(t)
    if trace is not None:
        trace.sample(e, t - now)
        trace.close(horizon if not over else t - now)
    for app_id, o in out.items():
        if o.finish is None:
            o.why = why.get(app_id, OVER_BUDGET if over else PAST_HORIZON)
            app = e.apps.get(app_id)
            if o.start is None and app is not None and not app.runnable and o.why == PAST_HORIZON and why:
                o.why = AT_LIMIT  # it waits on apps whose ends the play could not tell
    return out


class _Model:
    """What a play models beyond heartbeats and ends, kept apart from its
    loop: preemption enacted as the master would (``preempt``), the tasks
    an app whose AM has not asked yet will ask for, from what finished apps
    ran (``will_ask``, then ``due``), apps still to arrive (``due``), and
    when the next of these acts (``next``), for the loop's jumps.

    A victim's kill ends it at once, as the master reports a preempted
    container (its room held for the queue it was taken for:
    ``Engine.container_finished``), and its app asks again for that task
    (an MR AM re-asks), so the re-run's time counts; a victim whose AM is
    taken ends its app's attempt: every container of the app ends and is
    asked for again. A warning leaves the container running until its kill
    or its own end."""

    def __init__(self, e, times, made_up: dict, now: float, heartbeat: float, update: float, arrivals: bool,
                 room: set, touched: set, counts: dict) -> None:
        self.e, self.heartbeat, self.update = e, heartbeat, update
        self.room, self.touched, self.counts = room, touched, counts
        warn = e.settings.preemption_warn_time
        #: Warned victims: container id -> when its kill is due.
        self.warned = {c.container_id: c.preempt_time + warn for c in e.containers.values()
                       if c.preempt_time is not None and not c.kill_sent}
        self.last_pass: float | None = None
        self.work = dict(getattr(times, "work", {}))  # app id -> the learned Work it will ask for
        self.asks: list = []  # (when, seq, app id) of learned asks to make
        self.asked: set[str] = set()
        self.times = made_up  # run times of the apps it makes up: (app id, priority) -> seconds
        self.seq = 0
        #: [next arrival, spacing, queue, Work] per queue apps keep arriving in.
        self.arriving = [[max(at, now), gap, q, w, []] for q, at, gap, w in getattr(times, "arrivals", ())
                         if gap > 0] if arrivals else []
        self.made = 0

    # ------------------------------------------------------------ preemption
    def preempt(self, preemptions, t: float) -> None:
        """An update pass at ``t`` decided ``preemptions``: warnings wait,
        kills end their containers now and their tasks are asked again."""
        self.last_pass = t
        e = self.e
        kills = []
        for p in preemptions:
            if not p.kill:
                self.warned[p.container_id] = t + e.settings.preemption_warn_time
            elif p.container_id in e.containers and p.app_id in e.apps:
                self.warned.pop(p.container_id, None)
                self.counts[p.queue] = self.counts.get(p.queue, 0) + 1
                kills.append(p)
        for p in kills:
            c = e.containers.get(p.container_id)
            if c is None:  # its app's AM was taken in this pass too: it ended with the attempt
                continue
            app = e.apps[p.app_id]
            lost = [c] + ([x for x in app.containers.values() if x is not c] if c.is_am else [])
            for x in lost:
                e.container_finished(x.container_id)
                self.room.add(x.node_id)
            _ask(e, app, [(x.priority, x.resource, 1) for x in lost])
            self.touched.add(app.app_id)

    def _round(self) -> float | None:
        """The earliest moment an update pass may preempt that the last
        pass did not: a warned victim's kill, or a starved queue's timeout
        run out (rounds already due at the last pass found nothing to take,
        and nothing has changed since: the loop jumps only when idle)."""
        e = self.e
        on, eligible = e.preemption_scope()
        if not on:
            return None
        due = []
        for cid, at in list(self.warned.items()):
            c = e.containers.get(cid)
            if c is None or c.kill_sent:
                del self.warned[cid]
            else:
                due.append(at - 1e-9)
        last = self.last_pass
        for q in e.queues.values():
            if q.children or not q.active_apps or (eligible is not None and not eligible(q)):
                continue
            for at in (q.last_at_min_share + q.min_share_timeout, q.last_at_fair_share + q.fair_share_timeout):
                if at < math.inf and (last is None or at > last):
                    due.append(at)
        return min(due) if due else None

    def _pass_after(self, w: float, next_update: float) -> float:
        """The first update pass strictly after ``w``, on the play's cadence."""
        if w < next_update:
            return next_update
        return next_update + (math.floor((w - next_update) / self.update) + 1) * self.update

    # ------------------------------------------------- asks not made yet
    def will_ask(self, app, t: float) -> bool:
        """``app`` has asked for nothing beside its AM: whether what
        finished apps like it ran says what it will ask for (then it asks
        for it the learned delay after its AM started, or a heartbeat)."""
        if app.app_id in self.asked:
            return True
        w = self.work.get(app.app_id)
        if w is None or not app.has_am:
            return False
        am = next((c.launch_time for c in app.containers.values() if c.is_am), t)
        at = max(t, am + (w.delay if w.delay is not None else self.heartbeat))
        self.seq += 1
        heapq.heappush(self.asks, (at, self.seq, app.app_id))
        self.asked.add(app.app_id)
        return True

    def due(self, t: float) -> None:
        """The learned asks and the arrivals due by ``t``."""
        e = self.e
        while self.asks and self.asks[0][0] <= t:
            app = e.apps.get(heapq.heappop(self.asks)[2])
            if app is not None:
                _ask(e, app, [(prio, res, n) for prio, res, n, _s in self.work[app.app_id].tasks])
                self.touched.add(app.app_id)
        for a in self.arriving:
            while a[0] <= t and self.made < MAX_ARRIVALS:
                a[4] = [x for x in a[4] if x in e.apps]
                if len(a[4]) < ARRIVED_AT_ONCE:
                    a[4].append(self._arrive(a[2], a[3], a[0]))
                a[0] += a[1]

    def _arrive(self, queue: str, w, at: float) -> str:
        """An app like ``w`` submitted to ``queue`` at ``at``: it asks for
        its AM (then its tasks, as ``will_ask`` has it), or, without one,
        for its tasks at once."""
        e = self.e
        self.made += 1
        app_id = f"~arrival-{self.made}"
        try:
            e.add_app(app_id, w.user, queue, submit_time=at, placed=True, name=w.name)
        except (PlacementRejected, ValueError):
            return app_id
        for prio, _res, _n, seconds in w.tasks:
            self.times[(app_id, prio)] = seconds
        if w.am is None:
            e.mark_unmanaged(app_id)
            _ask(e, e.apps[app_id], [(prio, res, n) for prio, res, n, _s in w.tasks])
        else:
            self.work[app_id] = w
            _ask(e, e.apps[app_id], [(w.am[0], w.am[1], 1)])
        self.touched.add(app_id)
        return app_id

    def next(self, next_update: float) -> float | None:
        """When the next learned ask, arrival or preemption acts (None: none will)."""
        cands = [self.asks[0][0]] if self.asks else []
        if self.made < MAX_ARRIVALS:
            cands += [a[0] for a in self.arriving]
        w = self._round()
        if w is not None:
            cands.append(self._pass_after(w, next_update))
        return min(cands) if cands else None


def _ask(e, app, more) -> None:
    """``app`` asks for ``more`` containers, (priority, resource, count)
    each, beside what it asks for now (an ask of the play's own, as an
    app's master would make it)."""
    reqs = {p: Request(r.priority, r.resource, r.num_containers, r.hosts, r.racks, r.relax_locality,
                       r.strict_racks) for p, r in app.requests.items()}
    for prio, res, n in more:
        r = reqs.get(prio)
        if r is None or r.num_containers <= 0:
            reqs[prio] = Request(prio, res, n)
        else:
            r.num_containers += n
    e.update_requests(app.app_id, list(reqs.values()))


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
