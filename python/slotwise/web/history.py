"""Shares and usage over time, kept by the server itself for the console's
charts: each queue's row sampled every few seconds into a bounded ring
(nothing on disk, nothing to set up; a restart starts it afresh)."""

from __future__ import annotations

import collections
import threading
import time

from ..periodic import Periodic
from ..resources import measure
from ..views.link import GONE, link_state

#: Sampled every 5 s, 720 samples hold the last hour.
EVERY = 5.0
CAP = 720
#: What a sample keeps of each queue.
FIELDS = ("usage", "fair_share", "steady_fair_share", "min_share", "demand")


class History(Periodic):
    """The last ``cap`` samples of every queue, taken by ``sample``: by the
    thread ``start`` runs every ``every`` seconds, or by a test directly."""

    name, what = "slotwise-history", "sampling the queues for the console's history"

    def __init__(self, service, every: float = EVERY, cap: int = CAP, clock=time.time, thread: bool = True) -> None:
        """``thread``: False for samples taken only by ``sample`` (a test on a
        manual clock); ``every`` then only says how far apart they are."""
        super().__init__(every, thread)
        self.service = service
        self.cap = cap
        self._clock = clock
        self._samples: collections.deque = collections.deque(maxlen=cap)
        self._lock = threading.Lock()

    def sample(self) -> None:
        """Record the queues now; not while the master is away (its last
        known state would be drawn as if it went on)."""
        if link_state(self.service.link_status()["resource_manager"]) in GONE:
            return
        rows = {r["queue"]: tuple(measure(r.get(f)) for f in FIELDS)
                for r in self.service.queues() if r["queue"] != "root"}
        with self._lock:
            self._samples.append((self._clock(), rows))

    def samples(self) -> list[tuple[float, dict[str, tuple[float, ...]]]]:
        with self._lock:
            return list(self._samples)

    def series(self) -> dict:
        """{"t": [...], "queues": {name: {field: [...]}}}: a queue missing
        from a sample (added later, removed since) has None there."""
        samples = self.samples()
        names = sorted({q for _, rows in samples for q in rows})
        out = {q: {f: [] for f in FIELDS} for q in names}
        for _, rows in samples:
            for q in names:
                row = rows.get(q)
                for i, f in enumerate(FIELDS):
                    out[q][f].append(None if row is None else row[i])
        return {"t": [t for t, _ in samples], "every": self.every, "cap": self.cap, "queues": out}

    tick = sample

    def start(self) -> "History":
        """A first sample at once, then one every ``every`` seconds."""
        if self._thread is None and self._own_thread:
            self.sample()
        return super().start()
