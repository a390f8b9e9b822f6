"""Locality as a target: a queue asks for a fraction of data-local
(node-local) launches, and its apps' waits are tuned online to the shortest
that reaches it, instead of fixed waits an operator must guess.

Every leaf queue keeps its recent launches that named places
(``Launches``: when, at which level, after how long a wait). A queue with a
``localityTarget`` has its own delay rule, ``TargetDelay``: the paper's time
rule (T1, then T2) whose waits the update pass tunes from those launches.
How long an app would have waited for a node-local offer is known for the
launches that were node-local; for the others only that it was longer than
the wait they gave up after. The Kaplan-Meier estimate of that wait's
distribution over both gives the shortest wait at which the target fraction
is node-local. The waits are per host: they are for an app whose data is on
one node, and an app whose asks name k hosts waits 1/k of them, since a node
that holds its data and has room heartbeats k times as often (the paper's
analysis: the wait needed falls as the data spreads); its launches' waits
count k times over, so a queue's large jobs (data everywhere, local at
once) and small ones (data on two or three nodes) are tuned together to the
same fraction; when the launches say the target cannot be reached within the
waits tried, the wait grows. Changes are bounded (at most x1.5 up, x0.5
down, within a ceiling), need fresh launches each time, and small ones are
ignored, so a steady stream settles instead of swinging. It runs on the
engine's clock in the update pass: deterministic, replayable.
"""

from __future__ import annotations

import collections

from .app import NODE_LOCAL, TimeDelay

#: The launches the achieved fraction and the tuner read: the last ten minutes.
WINDOW = 600.0
#: At most this many launches kept per queue (the most recent).
KEEP = 1000
#: Launches that must have come since the waits last changed before they
#: change again (and at least a quarter of the window).
FRESH = 10
#: Bounds on one change of the waits.
UP, DOWN = 1.5, 0.5
#: Waits fall only while the fraction reached is this far above the target.
ROOM = 0.02
#: A change smaller than this fraction of the wait is not made.
DEADBAND = 0.1
#: The data of a typical app is on this many nodes (HDFS's default
#: replication, one block): the per-host waits start at and are bounded by
#: the engine's ones times it.
REPLICAS = 3
#: The tuned wait is this much longer than the estimate, so noise in the
#: estimate falls on the side of the target.
MARGIN = 0.1


class Launches:
    """A leaf queue's recent launches whose asks named places, from offers
    that wait for locality: (time, level, wait since the app's last launch,
    the level the app was at: a launch after a rack-local one starts at
    rack-local and waits for no node-local offer; the hosts its asks named).
    The data-local fraction the console shows and the tuner reads."""

    __slots__ = ("recent", "count")

    def __init__(self) -> None:
        self.recent: collections.deque = collections.deque(maxlen=KEEP)
        self.count = 0  # launches added since the queue was made, for the tuner's "fresh"

    def add(self, now: float, level: int, wait: float, since: int = NODE_LOCAL, hosts: int = 1) -> None:
        self.recent.append((now, level, wait, since, hosts))
        self.count += 1

    def window(self, now: float) -> collections.deque:
        """The launches of the last ``WINDOW`` seconds (older ones dropped)."""
        recent, start = self.recent, now - WINDOW
        while recent and recent[0][0] < start:
            recent.popleft()
        return recent

    def data_local(self, now: float) -> float | None:
        """The fraction of them node-local; None when there were none."""
        w = self.window(now)
        return sum(1 for x in w if x[1] == NODE_LOCAL) / len(w) if w else None

    def copy(self) -> "Launches":
        c = Launches()
        c.recent, c.count = collections.deque(self.recent, maxlen=KEEP), self.count
        return c


def _reached(launches):
    """The Kaplan-Meier estimate, over launches that waited for a node-local
    offer, of the fraction that would have had one by each wait: [(wait,
    fraction)], rising. A node-local launch's wait is seen; any other's is
    censored at the wait it gave up after. Waits are per host: times the
    hosts its asks named."""
    times = sorted((wait * max(1, hosts), level != NODE_LOCAL) for _, level, wait, _, hosts in launches)  # at one time, seen first
    at_risk, survive, i, n, out = len(times), 1.0, 0, len(times), []
    while i < n:
        t, seen, censored = times[i][0], 0, 0
        while i < n and times[i][0] == t:
            if times[i][1]:
                censored += 1
            else:
                seen += 1
            i += 1
        if seen:
            survive *= 1.0 - seen / at_risk
            out.append((t, 1.0 - survive))
        at_risk -= seen + censored
    return out


def wait_for(target: float, launches) -> float | None:
    """The shortest wait after which at least ``target`` of these launches
    would be node-local; None when they cannot tell (too few reach a
    node-local offer within the waits they had).

    A launch that waited for a node-local offer has one by a wait as
    ``_reached`` estimates. One that did not wait (its app ran rack-local
    since its last launch: it waits for no node-local offer until its next,
    as the paper's rule has it) comes after a launch that missed; such
    launches come ``after`` per miss, node-local ``luck`` of the time,
    whatever the wait. So with a fraction F of the waiting launches reached,
    (F + (1 - F) after luck) / (1 + (1 - F) after) of all are node-local."""
    if target <= 0:
        return 0.0
    waited = [x for x in launches if x[3] == NODE_LOCAL]
    rest = len(launches) - len(waited)
    misses = sum(1 for x in waited if x[1] != NODE_LOCAL)
    after = rest / misses if misses else 0.0
    luck = sum(1 for x in launches if x[3] != NODE_LOCAL and x[1] == NODE_LOCAL) / rest if rest else 0.0
    for t, f in _reached(waited):
        if (f + (1 - f) * after * luck) / (1 + (1 - f) * after) >= target - 1e-12:
            return t
    return None


class TargetDelay(TimeDelay):
    """A queue's delay rule tuned for a data-local target: the time rule
    with waits (``t1``, ``t2``, in the ratio of the engine's own) that the
    update pass moves (``tune``) towards the shortest that reaches
    ``target``, between 0 and ``ceiling``."""

    __slots__ = ("target", "queue", "ratio", "ceiling", "step", "tuned_at", "changes")
    per_host = True

    def __init__(self, target: float, t1: float, t2: float, heartbeat: float, queue: str) -> None:
        super().__init__(0.0, 0.0)
        self.queue = queue
        self.ratio = t2 / t1 if t1 > 0 else 1.0
        # The waits are per host (for data on one node); an app whose data
        # has HDFS's default three replicas starts at the engine's waits, and
        # its waits stay within these bounds.
        #: No wait beyond 20 heartbeats: on a cluster where even that does not
        #: reach the target, waiting longer costs more than it buys.
        self.ceiling = max(20 * heartbeat, t1) * REPLICAS
        #: The smallest wait a rise starts from (from no wait at all).
        self.step = heartbeat / 2 * REPLICAS
        self.tuned_at = -1  # Launches.count when the waits last moved
        self.changes = 0
        self.target = -1.0
        self.retarget(target, t1 * REPLICAS)

    def retarget(self, target: float, start: float | None = None) -> None:
        """The target set (a reload keeps the waits learned unless it changed)."""
        if target == self.target:
            return
        self.target = target
        self._set(0.0 if target <= 0 else min(self.t1 if start is None else start, self.ceiling))

    def _set(self, t1: float) -> None:
        self.t1, self.t2 = t1, t1 * self.ratio

    def tune(self, launches: Launches, now: float) -> None:
        """Move the waits towards the shortest that reaches the target, from
        the queue's launches of the last ten minutes, when enough have come
        since the last move (``wait_for``)."""
        recent = launches.window(now)
        fresh = launches.count - self.tuned_at if self.tuned_at >= 0 else len(recent)
        if self.target <= 0 or len(recent) < FRESH or fresh < max(FRESH, len(recent) // 4):
            return  # a quarter of what it reads must have come under the waits in force
        cur = self.t1
        need = wait_for(self.target, recent)
        if need is None:  # not reached within the waits tried: wait longer
            new = max(cur * UP, self.step)
        else:
            new = min(max(need * (1 + MARGIN), cur * DOWN), max(cur * UP, self.step))
        new = min(new, self.ceiling)
        got = launches.data_local(now)
        if abs(new - cur) <= DEADBAND * cur or (need is not None and new > cur and cur > need) \
                or (got >= self.target if new > cur else got < self.target + ROOM):
            return  # too small a move, or one the launches do not ask for (a rise while the target is met, a fall without room)
        self._set(new)
        self.tuned_at = launches.count
        self.changes += 1

    def why(self) -> str:
        """How the waits came about, for ``explain`` and the console."""
        return f"tuned for {self.target:.0%} data-local in {self.queue}"
