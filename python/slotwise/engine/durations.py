"""How long containers run, learned online from the ones that ended, for
forecasts (issue 41): when will an app start, and when will it end.

A container's run time is known when it ends (launch to end, on the
engine's clock). The ones that ended of its own kind (its priority: a
MapReduce job's maps and its reduces ask at different priorities) are the
best guide to an app's remaining ones (the maps of one job read blocks of
one size with one program); failing enough of those, the same queue, user
and app name's (yesterday's run of the same pipeline); failing those, the
cluster's. AM containers (they run as long as their app) and containers
taken back by preemption (cut short) teach nothing about a task's length
and are left out.

Every key keeps its last ``KEEP`` run times, so a forecast reads a range,
not only a mean; keys of apps that have gone are dropped with them, and at
most ``NAMES`` name keys are kept (the least recently fed go first).

Two more things a forecast cannot see in the live state, learned here too:

- How much an app will run before it has asked (a YARN app's AM asks for
  its tasks only once it runs): as each app goes, what it ran beside its
  AM (``Work``: per priority, how many containers of what size, how long
  they took; its AM's start to its first task's), kept by its name (the
  MapReduce jobs of one name are alike), its queue and the cluster, the
  last ``WORK_KEEP`` of each, at most ``NAMES`` names and ``QUEUES``
  queues. An app that ran nothing beside its AM (killed before it asked,
  most likely) teaches nothing.
- How often apps arrive in each leaf queue: the last ``SUBMITS`` submit
  times per queue (at most ``QUEUES`` queues), read over the last
  ``WINDOW`` seconds (``arrivals``).
"""

from __future__ import annotations

import bisect
import collections
import math

#: Run times kept per key (the most recent).
KEEP = 64
#: Name keys (queue, user, app name, priority) kept at most.
NAMES = 10_000
#: Run times a key needs before it is believed, by how close it is to the
#: app: its own or its name's (one is a good guide), the cluster's.
NEED = {"app": 1, "name": 1, "cluster": 3}
#: Finished apps' work kept per key (the most recent).
WORK_KEEP = 16
#: Queue keys (work, submit times) kept at most.
QUEUES = 10_000
#: Submit times kept per queue (the most recent), and the window a queue's
#: arrival rate is read over, seconds.
SUBMITS = 100
WINDOW = 600.0
#: Submits a queue needs in the window before its rate is believed (two
#: gaps: one is a coincidence).
MIN_SUBMITS = 3


class Sample:
    """The last ``KEEP`` run times of one key, and their order."""

    __slots__ = ("recent", "ordered")

    def __init__(self) -> None:
        self.recent: collections.deque = collections.deque(maxlen=KEEP)
        self.ordered: list[float] = []

    def add(self, seconds: float) -> None:
        if len(self.recent) == KEEP:
            old = self.recent[0]
            del self.ordered[bisect.bisect_left(self.ordered, old)]
        self.recent.append(seconds)
        bisect.insort(self.ordered, seconds)

    def __len__(self) -> int:
        return len(self.recent)

    def quantile(self, q: float) -> float:
        """The run time ``q`` of them were at most (nearest rank)."""
        o = self.ordered
        return o[min(len(o) - 1, max(0, int(q * len(o) + 0.5) - 1))] if q > 0 else o[0]

    def mean(self) -> float:
        return sum(self.recent) / len(self.recent)


class Estimate:
    """What a forecast reads for one app's containers of one priority: the
    run times it believes (``sample``) and where they come from (``source``:
    "app", "name" or "cluster")."""

    __slots__ = ("sample", "source")

    def __init__(self, sample: Sample, source: str) -> None:
        self.sample, self.source = sample, source

    def quantile(self, q: float) -> float:
        return self.sample.quantile(q)


class Work:
    """What one finished app ran beside its AM: ``tasks`` ((priority,
    resource, count, mean run time in seconds) per priority), its ``am``
    ((priority, resource); None: it had none, an MRv1 job), ``delay`` (its
    AM's start to its first task's; None without an AM), ``tail`` (its last
    task's end to its AM's: a MapReduce AM commits the output and
    unregisters before the app is done; None without an AM), its ``user``
    and ``name``."""

    __slots__ = ("tasks", "am", "delay", "user", "name", "tail")

    def __init__(self, tasks: tuple, am, delay: float | None, user: str, name: str | None,
                 tail: float | None = None) -> None:
        self.tasks, self.am, self.delay, self.user, self.name = tasks, am, delay, user, name
        self.tail = tail

    def size(self) -> float:
        """Its containers' seconds, all together."""
        return sum(n * secs for _p, _r, n, secs in self.tasks)

    def __repr__(self) -> str:
        return f"Work({self.name}, tasks={self.tasks}, am={self.am}, delay={self.delay})"


class _Tally:
    """What a live app has run so far (becomes its Work when it goes)."""

    __slots__ = ("name", "queue", "user", "am", "first", "tasks", "last", "tail")

    def __init__(self, app) -> None:
        self.name, self.user = app.app_name, app.user
        self.queue = app.queue.name if app.queue is not None else ""
        self.am = None  # (priority, resource, launch time)
        self.first: float | None = None  # its first task's launch
        self.tasks: dict[int, list] = {}  # priority -> [resource, count, seconds in all]
        self.last: float | None = None  # its last task's end
        self.tail: float | None = None  # that to its AM's end


def _keep(keys: collections.OrderedDict, key, w: Work, most: int) -> None:
    d = keys.get(key)
    if d is None:
        d = keys[key] = collections.deque(maxlen=WORK_KEEP)
        if len(keys) > most:
            keys.popitem(last=False)
    else:
        keys.move_to_end(key)
    d.append(w)


def _typical(works, quantile: float = 0.5) -> Work | None:
    """The one of ``works`` at ``quantile`` by size (the middle one by
    default; a forecast's outer plays take the outer ones, so an app whose
    like ran very different jobs gets a range that says so), with the
    shortest AM-to-task delay among them (the others include waits for
    room, which a play makes for itself)."""
    if not works:
        return None
    ws = sorted(works, key=Work.size)
    w = ws[min(len(ws) - 1, max(0, round(quantile * (len(ws) - 1))))]
    delays = [x.delay for x in works if x.delay is not None]
    return Work(w.tasks, w.am, min(delays) if delays else None, w.user, w.name, w.tail)


def _tails(works) -> list[float]:
    return sorted(x.tail for x in works if x.tail is not None)


class Durations:
    """The engine's learner of container run times (``ended`` as each
    container ends, ``estimate`` for a forecast), of the work apps do
    (``work_for``) and of how often they arrive (``submitted``,
    ``arrivals``)."""

    __slots__ = ("apps", "names", "cluster", "tallies", "work_names", "work_queues", "work_cluster", "submits")

    def __init__(self) -> None:
        self.apps: dict[str, dict[int, Sample]] = {}  # app id -> priority -> its run times
        self.names: collections.OrderedDict = collections.OrderedDict()
        self.cluster: dict[int, Sample] = {}
        self.tallies: dict[str, _Tally] = {}  # live app id -> what it ran so far
        self.work_names: collections.OrderedDict = collections.OrderedDict()  # app name -> deque of Work
        self.work_queues: collections.OrderedDict = collections.OrderedDict()  # leaf queue -> deque of Work
        self.work_cluster: collections.deque = collections.deque(maxlen=WORK_KEEP)
        self.submits: collections.OrderedDict = collections.OrderedDict()  # leaf queue -> sorted submit times

    @staticmethod
    def name_key(app, priority: int) -> tuple:
        return (app.queue.name if app.queue is not None else "", app.user, app.app_name or "", priority)

    def ended(self, app, container, now: float) -> None:
        """``container`` of ``app`` ended at ``now``: learn its run time,
        unless it was an AM or taken back."""
        if container.preempt_time is not None or container.kill_sent:
            return
        tally = self.tallies.get(app.app_id)
        if tally is None:
            tally = self.tallies[app.app_id] = _Tally(app)
        if container.is_am:
            tally.am = (container.priority, container.resource, container.launch_time)
            if tally.last is not None:
                tally.tail = max(0.0, now - tally.last)
            return
        if tally.last is None or now > tally.last:
            tally.last = now
        seconds = max(0.0, now - container.launch_time)
        prio = container.priority
        row = tally.tasks.get(prio)
        if row is None:
            tally.tasks[prio] = [container.resource, 1, seconds]
        else:
            row[0], row[1], row[2] = container.resource, row[1] + 1, row[2] + seconds
        if tally.first is None or container.launch_time < tally.first:
            tally.first = container.launch_time
        self.apps.setdefault(app.app_id, {}).setdefault(prio, Sample()).add(seconds)
        key = self.name_key(app, prio)
        names = self.names
        s = names.get(key)
        if s is None:
            s = names[key] = Sample()
            if len(names) > NAMES:
                names.popitem(last=False)
        else:
            names.move_to_end(key)
        s.add(seconds)
        self.cluster.setdefault(prio, Sample()).add(seconds)

    def forget(self, app_id: str) -> None:
        """An app has gone: its own run times with it (its name's stay),
        and what it ran, if anything beside its AM, is learned."""
        self.apps.pop(app_id, None)
        tally = self.tallies.pop(app_id, None)
        if tally is None or not tally.tasks:
            return
        am = tally.am
        delay = max(0.0, tally.first - am[2]) if am is not None and tally.first is not None else None
        w = Work(tuple((prio, res, n, total / n) for prio, (res, n, total) in sorted(tally.tasks.items())),
                 None if am is None else (am[0], am[1]), delay, tally.user, tally.name, tally.tail)
        if tally.name:
            _keep(self.work_names, (tally.user, tally.name), w, NAMES)  # the same pipeline's runs first
            _keep(self.work_names, tally.name, w, NAMES)
        _keep(self.work_queues, tally.queue, w, QUEUES)
        self.work_cluster.append(w)

    def _works(self, app):
        """The finished apps most like ``app``: its user's of its name, else
        its name's, else its queue's, else the cluster's (empty: none)."""
        for works in (self.work_names.get((app.user, app.app_name)) if app.app_name else None,
                      self.work_names.get(app.app_name) if app.app_name else None,
                      self.work_queues.get(app.queue.name) if app.queue is not None else None,
                      self.work_cluster):
            if works:
                return works
        return ()

    def work_for(self, app, quantile: float = 0.5) -> Work | None:
        """What ``app`` will likely run beside its AM: the work at
        ``quantile`` by size of the finished apps most like it
        (``_works``); None when none has finished."""
        return _typical(self._works(app), quantile)

    def tail(self, app, quantile: float) -> float | None:
        """How long ``app``'s AM will run after its last task ends, at
        ``quantile`` of what the AMs of the finished apps most like it
        did; None when none was seen."""
        tails = next((t for works in (self._works(app),) if (t := _tails(works))), None)
        if not tails:
            return None
        return tails[min(len(tails) - 1, max(0, int(quantile * len(tails) + 0.5) - 1))] if quantile > 0 else tails[0]

    def work_of_queue(self, queue: str) -> Work | None:
        """A typical app of ``queue`` (its finished apps', else the cluster's)."""
        return _typical(self.work_queues.get(queue) or self.work_cluster)

    def submitted(self, queue: str, at: float) -> None:
        """An app was submitted to leaf ``queue`` at ``at`` (its own submit
        time: a resync after a restart adds the apps the RM holds with
        theirs, not as a burst now)."""
        times = self.submits.get(queue)
        if times is None:
            times = self.submits[queue] = []
            if len(self.submits) > QUEUES:
                self.submits.popitem(last=False)
        else:
            self.submits.move_to_end(queue)
        bisect.insort(times, at)
        if len(times) > SUBMITS:
            del times[0]

    def arrivals(self, now: float) -> list[tuple[str, float, float]]:
        """(queue, next arrival, spacing) for each leaf queue that saw
        ``MIN_SUBMITS`` or more apps submitted in the last ``WINDOW`` seconds: one every
        mean gap between them, or every time since the last when that is
        longer (a queue gone quiet slows down); the next at the last plus
        whole spacings, after ``now``. A burst at one instant gives none."""
        out = []
        for queue, times in self.submits.items():
            recent = times[bisect.bisect_left(times, now - WINDOW):bisect.bisect_right(times, now)]
            if len(recent) < MIN_SUBMITS or recent[-1] <= recent[0]:
                continue
            last = recent[-1]
            spacing = max((last - recent[0]) / (len(recent) - 1), now - last)
            out.append((queue, last + (math.floor((now - last) / spacing) + 1) * spacing, spacing))
        return out

    def estimate(self, app, priority: int) -> Estimate | None:
        """The run times to believe for ``app``'s containers of
        ``priority``, from the closest key with enough of them; None when
        no key has (a forecast then says it cannot tell)."""
        for source, sample in (("app", self.apps.get(app.app_id, {}).get(priority)),
                               ("name", self.names.get(self.name_key(app, priority))),
                               ("cluster", self.cluster.get(priority))):
            if sample is not None and len(sample) >= NEED[source]:
                return Estimate(sample, source)
        return None
