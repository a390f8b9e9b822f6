"""Time sources.  The engine never reads the wall clock itself, so tests and
the simulator can run it on a clock they control."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since an arbitrary epoch; only differences matter."""


class SystemClock:
    """Real time, monotonic so a wall-clock jump cannot fire a preemption."""

    def now(self) -> float:
        return time.monotonic()


class ManualClock:
    """A clock that moves only when told to: for tests and the simulator."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = float(start)

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> float:
        if seconds < 0:
            raise ValueError("a clock cannot go backwards")
        self._now += seconds
        return self._now

    def set(self, when: float) -> None:
        if when < self._now:
            raise ValueError("a clock cannot go backwards")
        self._now = float(when)
