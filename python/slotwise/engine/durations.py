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
"""

from __future__ import annotations

import bisect
import collections

#: Run times kept per key (the most recent).
KEEP = 64
#: Name keys (queue, user, app name, priority) kept at most.
NAMES = 10_000
#: Run times a key needs before it is believed, by how close it is to the
#: app: its own or its name's (one is a good guide), the cluster's.
NEED = {"app": 1, "name": 1, "cluster": 3}


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


class Durations:
    """The engine's learner of container run times (``ended`` as each
    container ends, ``estimate`` for a forecast)."""

    __slots__ = ("apps", "names", "cluster")

    def __init__(self) -> None:
        self.apps: dict[str, dict[int, Sample]] = {}  # app id -> priority -> its run times
        self.names: collections.OrderedDict = collections.OrderedDict()
        self.cluster: dict[int, Sample] = {}

    @staticmethod
    def name_key(app, priority: int) -> tuple:
        return (app.queue.name if app.queue is not None else "", app.user, app.app_name or "", priority)

    def ended(self, app, container, now: float) -> None:
        """``container`` of ``app`` ended at ``now``: learn its run time,
        unless it was an AM or taken back."""
        if container.is_am or container.preempt_time is not None or container.kill_sent:
            return
        seconds = max(0.0, now - container.launch_time)
        prio = container.priority
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
        """An app has gone: its own run times with it (its name's stay)."""
        self.apps.pop(app_id, None)

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
