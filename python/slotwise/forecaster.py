"""Forecasts kept fresh in the background (issue 41): every few seconds the
live state is played forward (``StateViews.forecasts``: a fork taken in one
short hold of the lock, the plays outside it), never on a heartbeat's path,
and the API, the CLI and the console read the last one made.

A forecast is in the engine's time (a monotonic clock behind a real
master: only its distance from the forecast's ``at`` means anything; add
``made_at - at`` for the wall clock); what a reader is told is relative to
when it was made: "starts in ~40 s (25-70 s)". While the master is gone nothing is forecast (the state
stands still, so its play would say nothing true), and the answer says so.
A start's range is widened by what the server's own forecasts have missed
by so far (``Calibration``): the run-time plays alone give too narrow a
range for a start that waits on AM start-ups, arrivals and the master's
pace. A forecast takes at most 0.3 s of CPU (``forward.BUDGET``; what it had not
reached by then says so) and the next waits at least ten times as long as
the last took: the server's heartbeats share its interpreter.
"""

from __future__ import annotations

import collections
import sys
import threading
import time

from .periodic import Periodic
from .views.link import GONE, link_state

#: The interpreter's thread switch interval while forecasts are made (s).
SWITCH_INTERVAL = 0.0005
#: How often the forecasts are made again, and how far ahead they look.
EVERY = 5.0
HORIZON = 3600.0


def _in(t: float | None, at: float) -> float | None:
    return None if t is None else round(max(0.0, t - at), 1)


def row(app_id: str, f, at: float, made: float, cpu_ms: float) -> dict:
    """One app's forecast as the API gives it: times in the engine's clock
    and in seconds from when it was made."""
    started = f.start is not None and f.start <= at
    return {"app": app_id, "at": at, "made_at": made, "cpu_ms": cpu_ms, "started": started,
            "start": f.start, "start_in_s": None if started else _in(f.start, at),
            "start_in_low_s": None if started else _in(f.start_low, at),
            "start_in_high_s": None if started else _in(f.start_high, at),
            "finish": f.finish, "finish_in_s": _in(f.finish, at), "finish_in_low_s": _in(f.finish_low, at),
            "finish_in_high_s": _in(f.finish_high, at), "why": f.why}


def seconds(s: float) -> str:
    """A duration as a person reads it: 40 s, 3 min, 2 h."""
    if s < 90:
        return f"{s:.0f} s"
    if s < 5400:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h"


def _span(mid: float | None, low: float | None, high: float | None) -> str:
    if mid is None:
        return ""
    if low is None or high is None:
        return f"~{seconds(mid)}" + (" (or later)" if high is None else "")
    if seconds(low) == seconds(high):
        return f"~{seconds(mid)}"
    return f"~{seconds(mid)} ({seconds(low)}-{seconds(high)})"


def as_text(r: dict) -> str:
    """"starts in ~40 s (25-70 s), ends in ~3 min (2-4 min)", or why not."""
    parts = []
    if not r["started"]:
        parts.append("starts in " + _span(r["start_in_s"], r["start_in_low_s"], r["start_in_high_s"])
                     if r["start_in_s"] is not None else "no start within the forecast's horizon")
    if r["finish_in_s"] is not None:
        parts.append("ends in " + _span(r["finish_in_s"], r["finish_in_low_s"], r["finish_in_high_s"]))
    else:
        parts.append(f"no end forecast: {r['why']}")
    return ", ".join(parts)


class Calibration:
    """How far the forecasts' starts have been off, learned from this
    server's own forecasts: an app's first forecast while it waited against
    the start it then had (real wait over forecast wait, for forecasts at
    least ``AHEAD`` s ahead). A start's range is widened to the 10th and 90th
    percentile of those ratios once ``NEED`` are known, so it says what the
    forecasts have really missed by (what the run-time plays alone leave
    out: AM start-ups, arrivals, the master's pace), not only how run
    times spread."""

    KEEP, NEED, AHEAD, APPS = 200, 10, 5.0, 10_000

    def __init__(self) -> None:
        self.first: collections.OrderedDict = collections.OrderedDict()  # app -> (made at, start said)
        self.ratios: collections.deque = collections.deque(maxlen=self.KEEP)

    def observe(self, forecasts: dict, at: float) -> None:
        """One forecast's apps (app id -> forward.Forecast) made at ``at``."""
        for app_id, f in forecasts.items():
            if f.start is None:
                continue
            if f.start > at:  # still waiting: its first forecast is kept
                if app_id not in self.first:
                    self.first[app_id] = (at, f.start)
                    if len(self.first) > self.APPS:
                        self.first.popitem(last=False)
                continue
            said = self.first.pop(app_id, None)
            if said is not None and said[1] - said[0] >= self.AHEAD:
                self.ratios.append((f.start - said[0]) / (said[1] - said[0]))

    def bounds(self) -> tuple[float, float] | None:
        """The 10th and 90th percentile ratios; None before ``NEED``."""
        if len(self.ratios) < self.NEED:
            return None
        r = sorted(self.ratios)
        return r[int(0.1 * (len(r) - 1))], r[int(0.9 * (len(r) - 1) + 0.5)]

    def widen(self, r: dict) -> dict:
        """An API row with its start's range widened by the ratios seen, and
        its finish's by as much as its start's moved."""
        b = self.bounds()
        mid = r["start_in_s"]
        if b is None or mid is None or r["started"]:
            return r
        low = round(min(x for x in (r["start_in_low_s"], mid * b[0]) if x is not None), 1)
        high = round(max(x for x in (r["start_in_high_s"], mid * b[1]) if x is not None), 1)
        out = {**r, "start_in_low_s": low, "start_in_high_s": high}
        f = r["finish_in_s"]
        if f is not None:  # an app ends no sooner (later) than its start moves it
            if r["finish_in_low_s"] is not None:
                out["finish_in_low_s"] = round(max(0.0, min(r["finish_in_low_s"], f - (mid - low))), 1)
            if r["finish_in_high_s"] is not None:
                out["finish_in_high_s"] = round(max(r["finish_in_high_s"], f + (high - mid)), 1)
        return out


class Forecaster(Periodic):
    """The last forecast of every app, made by ``refresh``: by the thread
    ``start`` runs every ``every`` seconds, or by a test directly."""

    name, what = "slotwise-forecasts", "forecasting the apps"

    def __init__(self, service, every: float = EVERY, horizon: float = HORIZON, clock=time.time,
                 thread: bool = True) -> None:
        super().__init__(every, thread)
        self.service = service
        self.horizon = horizon
        self._clock = clock
        self._lock = threading.Lock()
        self._latest: dict | None = None
        self._gone = False
        self.cpu_ms = 0.0  # the last forecast's CPU
        self.calibration = Calibration()

    def refresh(self) -> None:
        """Play the live state forward now (not while the master is gone)."""
        if link_state(self.service.link_status()["resource_manager"]) in GONE:
            with self._lock:
                self._gone = True
            return
        cpu = time.thread_time()
        out = self.service.core.views.forecasts(self.horizon)
        cpu_ms = self.cpu_ms = round((time.thread_time() - cpu) * 1000, 1)
        made = self._clock()
        at = out["at"]
        self.calibration.observe(out["apps"], at)
        rows = {app_id: self.calibration.widen(row(app_id, f, at, made, cpu_ms)) for app_id, f in out["apps"].items()}
        with self._lock:
            self._latest, self._gone = rows, False

    def of(self, app_id: str) -> dict | None:
        """The app's last forecast; None when none was made for it. While
        the master is gone, the last made, with ``why`` saying so."""
        with self._lock:
            r = (self._latest or {}).get(app_id)
            gone = self._gone
        if r is None:
            return None
        if gone:
            return {**r, "why": "the master is gone: nothing is forecast until it is back (this is the last "
                                "forecast made before)"}
        return r

    def all(self) -> dict[str, dict]:
        with self._lock:
            return dict(self._latest or {})

    tick = refresh

    def start(self) -> "Forecaster":
        """Its thread, and the interpreter's thread switches made finer: a
        play holds the GIL for up to its whole budget, and a heartbeat's
        thread waiting for it would wait a switch interval (5 ms by
        default) each time it needs it back (bench_roundtrip --forecast)."""
        if self._own_thread and sys.getswitchinterval() > SWITCH_INTERVAL:
            sys.setswitchinterval(SWITCH_INTERVAL)
        return super().start()

    def pause(self) -> float:
        """At most a tenth of a core: the server's heartbeats share its interpreter."""
        return max(self.every, 10 * self.cpu_ms / 1000.0)


def counterfactual_text(cf: dict) -> str:
    """"with weight 2 on root.adhoc it starts in ~40 s instead of ~3 min"."""
    without = cf.get("start_in_s_without")
    instead = f"~{seconds(without)}" if without is not None else "not within the forecast's horizon"
    now = "now" if cf["start_in_s"] < 1 else f"in ~{seconds(cf['start_in_s'])}"
    return f"with {cf['change']} it starts {now} instead of {instead}"
