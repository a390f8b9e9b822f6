"""``slotwise shadow report``: the recorded last hour (or ``--since``)
played again under the live file and under a candidate, per queue side by
side, beside what really happened.

It reads serve's event log written with inputs (``serve --record``) and
replays it (``sim.replay``) three times:

- ``recorded``: as it happened (the recording's own containers, launched
  and ended when the RM said): what really happened;
- ``live`` and ``candidate``: played, the same way for both, under the live
  file and under the candidate (set, as a reload sets it, at the start of
  the window; recorded reloads inside it are left out). The recorded apps,
  asks and nodes come in as they came; the recorded containers do not: each
  container the play gives runs its app's mean container lifetime in the
  recording (an AM until its app leaves). So an identical candidate plays
  exactly as ``live``, and ``live`` against ``candidate`` is the file's
  effect alone; ``recorded`` against ``live`` is how far the model is from
  the truth.

Per queue over the window: containers given, resource-seconds (each
container held for its app's mean lifetime, cut at the window's end), the
mean wait from an app's submission to its first container, the data-local
fraction of launches that were not AMs, and preemptions. The asks are the
recorded ones, which followed the live decisions: a guide to where the
shares move, not a forecast.

It never runs in serve's interpreter: playing an hour again costs seconds
to minutes of CPU, which there would compete with the live heartbeat, which
the shadow must never slow. ``slotwise shadow report --event-log FILE``
plays it in the caller's process, where the log is; serve's
``GET /api/v1/shadow/report`` runs ``python -m slotwise.shadow_report``
(``main``) as a child at a lower priority (shadow_service.py). It is
bounded: a log over ``max_bytes`` is refused, and plays that spend more
than ``max_cpu_s`` of CPU stop with one line.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time

from .resources import ZERO

#: The largest event log read (bytes).
MAX_BYTES = 2 * 1024**3
#: CPU seconds the three plays may spend together.
MAX_CPU_S = 600.0
#: The longest window asked for (seconds): a week.
MAX_SINCE_S = 7 * 86400
#: Wall seconds serve lets a report's child run before killing it.
CHILD_WALL_S = 300.0
SIDES = ("recorded", "live", "candidate")


class ReportError(Exception):
    """Bad input or a bound passed: one line for the operator."""


class _Side:
    """One play's figures over the window, gathered by wrapping its door;
    ``life`` (app -> seconds) makes it a modelled play: its own containers,
    not the recording's."""

    def __init__(self, start: float, end: float, life: dict | None = None) -> None:
        self.start, self.end, self.life = start, end, life
        self.rows: dict[str, dict] = {}
        self.first: dict[str, float] = {}  # app -> time of its first container
        self.ends: list[tuple] = []  # (end time, container) of the play's own containers
        #: The recording's lifetimes, for the recorded side's resource-seconds.
        self.recorded_life: dict = {}

    def row(self, queue: str) -> dict:
        return self.rows.setdefault(queue, {"containers": 0, "resource_seconds": ZERO, "waits": [],
                                            "local": 0, "placed": 0, "preemptions": 0})

    def _own(self, msg, now: float) -> None:
        """A recorded message made the play's: its containers are the ones
        the play gave, ended when their lifetime is up."""
        if self.life is None:
            return
        msg.launched, msg.check, msg.full = [], None, False
        done = [cid for t, cid in self.ends if t <= now]
        self.ends = [(t, cid) for t, cid in self.ends if t > now]
        msg.finished = done

    def watch(self, core) -> None:
        heartbeat, update = core.handle_heartbeat, core.handle_update

        def on_heartbeat(msg):
            t = core._clock.now()
            self._own(msg, t)
            out = heartbeat(msg)
            for a in out:
                app = core._engine.apps.get(a.app_id)
                if a.app_id not in self.first:
                    self.first[a.app_id] = t
                    if t >= self.start and app is not None:
                        self.row(a.queue)["waits"].append(t - app.start_time)
                held = self.life.get(a.app_id, self.life[""]) if self.life is not None else None
                if held is not None and not a.is_am:
                    self.ends.append((t + held, a.container_id))
                if t < self.start:
                    continue
                r = self.row(a.queue)
                r["containers"] += 1
                if held is not None or self.life is None:
                    span = min(held if held is not None else self.life_of(a.app_id), self.end - t)
                    r["resource_seconds"] = r["resource_seconds"] + a.resource * span
                if not a.is_am:
                    r["placed"] += 1
                    r["local"] += a.locality == "node_local"
            return out

        def on_update(msg):
            self._own(msg, core._clock.now())
            res = update(msg)
            if core._clock.now() >= self.start:
                for p in res.preempt:
                    self.row(p.queue)["preemptions"] += 1
            return res

        core.handle_heartbeat, core.handle_update = on_heartbeat, on_update

    def life_of(self, app: str) -> float:
        return self.recorded_life.get(app, self.recorded_life.get("", 0.0))


def lifetimes(events: list[dict]) -> dict[str, float]:
    """Each app's mean container lifetime in the recording (launch to
    finish, engine seconds); ``""``: every app's."""
    started: dict[str, tuple] = {}
    spans: dict[str, list] = {}
    for ev in events:
        if ev.get("event") != "input" or ev.get("call") not in ("heartbeat", "update"):
            continue
        t, msg = ev["t"], ev["msg"]
        for c in msg.get("launched") or ():
            started.setdefault(c["id"], (c["app"], t))
        for cid in msg.get("finished") or ():
            if cid in started:
                app, t0 = started.pop(cid)
                spans.setdefault(app, []).append(t - t0)
    out = {app: sum(v) / len(v) for app, v in spans.items()}
    every = [x for v in spans.values() for x in v]
    out[""] = sum(every) / len(every) if every else 0.0
    return out


def _read(path: str, max_bytes: int) -> list[dict]:
    try:
        size = os.path.getsize(path)
    except OSError as e:
        raise ReportError(f"{path}: cannot read: {e.strerror or e}") from None
    if size > max_bytes:
        raise ReportError(f"{path}: {size / 2**20:.0f} MiB, over the {max_bytes / 2**20:.0f} MiB this report "
                          "reads (rotate the log, or raise --max-bytes)")
    events = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.endswith("\n"):
                break  # a last line serve is still writing
            if line.strip():
                try:
                    events.append(json.loads(line))
                except ValueError:
                    raise ReportError(f"{path}:{n}: not a JSON line: is this a Slotwise event log?") from None
    if not any(e.get("event") == "recording" for e in events):
        raise ReportError(f"{path}: no inputs recorded: serve must run with --record for a shadow report")
    return events


def _bounded(events, deadline_cpu: float):
    for i, ev in enumerate(events):
        if i % 2000 == 0 and time.process_time() > deadline_cpu:
            raise ReportError("the replay passed its CPU bound (--max-cpu): report a shorter --since")
        yield ev


class _Every(dict):
    """Every stream's door watched (replay taps the streams it is given)."""

    def __init__(self, fn) -> None:
        super().__init__()
        self.fn = fn

    def __bool__(self):
        return True

    def __contains__(self, key):
        return True

    def __getitem__(self, key):
        return self.fn


def report(path: str, candidate, since_s: float, dims=("memory_mb", "vcores"), max_bytes: int = MAX_BYTES,
           max_cpu_s: float = MAX_CPU_S) -> dict:
    """The three plays of the log at ``path`` over its last ``since_s``
    seconds (engine time): ``{"window": [start, end], "queues": [{queue,
    recorded, live, candidate}]}``."""
    from .sim.replay import replay

    events = _read(path, max_bytes)
    times = [e["t"] for e in events if e.get("event") == "input" and "t" in e]
    if not times:
        raise ReportError(f"{path}: no recorded inputs")
    end = max(times)
    start = max(min(times), end - since_s)
    deadline = time.process_time() + max_cpu_s
    life = lifetimes(events)
    sides = {"recorded": _Side(start, end), "live": _Side(start, end, life), "candidate": _Side(start, end, life)}
    sides["recorded"].recorded_life = life
    replay(_bounded(events, deadline), taps=_Every(sides["recorded"].watch))
    replay(_bounded(events, deadline), taps=_Every(sides["live"].watch))

    def at_start(_t, cores):
        for core in cores.values():
            core.set_config(candidate)  # ValueError: the candidate would strand running apps

    kept = [e for e in events if not (e.get("event") == "input" and e.get("call") == "config" and e["t"] >= start)]
    try:
        replay(_bounded(kept, deadline), taps=_Every(sides["candidate"].watch), checkpoints=[start],
               at_checkpoint=at_start)
    except ValueError as e:
        raise ReportError(f"{candidate.source}: cannot be set on the recorded state: {e}") from None
    return {"log": path, "candidate": candidate.source, "window": [start, end],
            "queues": _rows(sides, dims)}


def _rows(sides: dict, dims) -> list[dict]:
    out = []
    for name in sorted(set().union(*(s.rows for s in sides.values()))):
        row = {"queue": name}
        for side, s in sides.items():
            r = s.row(name)
            row[side] = {"containers": r["containers"],
                         "resource_seconds": {d: round(r["resource_seconds"].get(d), 1) for d in dims},
                         "mean_wait_s": round(sum(r["waits"]) / len(r["waits"]), 2) if r["waits"] else None,
                         "data_local": round(r["local"] / r["placed"], 4) if r["placed"] else None,
                         "preemptions": r["preemptions"]}
        out.append(row)
    return out


def text(out: dict) -> str:
    """The report as ``slotwise shadow report`` prints it: per queue, each
    figure as recorded / live played / candidate played."""
    start, end = out["window"]
    dim = "memory_mb"

    def f(v, fmt):
        return "-" if v is None else format(v, fmt)

    lines = [f"{out['log']}: the last {end - start:.0f} s as recorded, played under the live file, and played "
             f"under {out['candidate']}",
             f"{'queue':<24} {'containers':>20} {'memory GB-s':>26} {'mean wait s':>20} {'data-local':>17} "
             f"{'preempted':>14}",
             f"{'':<24} {'rec / live / cand':>20} {'rec / live / cand':>26} {'rec / live / cand':>20} "
             f"{'rec / live / cand':>17} {'rec/live/cand':>14}"]
    for r in out["queues"]:
        s = [r[k] for k in SIDES]
        lines.append(f"{r['queue']:<24} {' / '.join(str(x['containers']) for x in s):>20} "
                     f"{' / '.join(f(x['resource_seconds'].get(dim, 0) / 1024, '.0f') for x in s):>26} "
                     f"{' / '.join(f(x['mean_wait_s'], '.1f') for x in s):>20} "
                     f"{' / '.join(f(x['data_local'], '.0%') for x in s):>17} "
                     f"{'/'.join(str(x['preemptions']) for x in s):>14}")
    return "\n".join(lines)


def _candidate(path: str, name: str | None):
    """The candidate file, or (``-``) its text on stdin: serve sends the one
    its shadow runs, which may have no file."""
    from .config import ConfigErrors, load_allocations, parse_allocations

    try:
        if path == "-":  # as serve encodes it, whatever this locale's
            return parse_allocations(sys.stdin.buffer.read().decode("utf-8", "replace"), name or "the candidate sent")
        return load_allocations(path)
    except ConfigErrors as e:
        raise ReportError("; ".join(str(x) for x in e.errors)) from None


def main(argv=None) -> int:
    """``python -m slotwise.shadow_report``: one report as JSON on stdout, or
    its error as one line on stderr (status 1). serve runs it as a child
    (``--nice``), so the plays never share the live heartbeat's interpreter."""
    import argparse

    p = argparse.ArgumentParser(prog="python -m slotwise.shadow_report", description=main.__doc__)
    p.add_argument("--event-log", required=True, metavar="FILE", help="serve's event log, written with --record")
    p.add_argument("--candidate", required=True, metavar="FILE", help="the candidate file, or - for its text on stdin")
    p.add_argument("--name", metavar="NAME", help="with -: the name the report gives the candidate")
    p.add_argument("--since", type=float, default=3600.0, metavar="S", help="the window, in seconds (default 3600)")
    p.add_argument("--max-bytes", type=int, default=MAX_BYTES, metavar="N", help="the largest event log read")
    p.add_argument("--max-cpu", type=float, default=MAX_CPU_S, metavar="S", help="CPU seconds the plays may spend")
    p.add_argument("--nice", type=int, default=0, metavar="N", help="lower this process's priority by N first")
    p.add_argument("--max-memory", type=int, default=0, metavar="MB",
                   help="the most address space this process may take (0: no bound)")
    args = p.parse_args(argv)
    try:
        if not (math.isfinite(args.since) and 0 < args.since <= MAX_SINCE_S):
            raise ReportError(f"--since {args.since:g}: from over 0 to {MAX_SINCE_S} seconds")
        if args.nice:
            os.nice(args.nice)
        if args.max_memory > 0:  # a MemoryError then, not the host's OOM killer beside the live policy
            import resource

            limit = args.max_memory * 2**20
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        out = report(args.event_log, _candidate(args.candidate, args.name), args.since,
                     max_bytes=args.max_bytes, max_cpu_s=args.max_cpu)
    except ReportError as e:
        print("; ".join(str(e).splitlines()), file=sys.stderr)
        return 1
    except MemoryError:
        print(f"{args.event_log}: the replay needed more than its {args.max_memory} MB: rotate the event log, or "
              "run slotwise shadow report --event-log FILE where the log is", file=sys.stderr)
        return 1
    json.dump(out, sys.stdout, separators=(",", ":"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
