"""What ``slotwise demo`` (and docker/demo.py) prints: a few snapshots of
the queues while the jobs run, and a closing summary.

A snapshot is printed when the apps in the queues change (an app starts or
finishes, once that state has held for two samples), at most a handful, and
the busiest moment afterwards if none of them showed it; between them a
one-line note now and then says the demo is alive.  The summary is two
tables (the apps; the queues over the run) and a few sentences: preemptions,
fallback heartbeats, what the locality counts mean.  Everything comes from
the engine's rows, the event log and the protocol messages themselves, so
the counts are what happened, not what was allowed."""

from __future__ import annotations

import textwrap
from collections import Counter

#: The unit each kind of master's tables count in: (field, column word).
UNITS = {"yarn": [("memory_mb", "MB")], "mrv1": [("map_slots", "maps"), ("reduce_slots", "reduces")]}
#: Fair shares to the MB, or to a tenth of a slot (a share of 2.5 slots is real).
SHARE_FMT = {"yarn": ",.0f", "mrv1": ",.1f"}
LEVELS = ("node_local", "rack_local", "off_switch")


def shown(rows: list[dict]) -> list[dict]:
    """The queues a table lists: every queue below the root that the file
    declares, and a dynamic one while it holds apps."""
    parents = {r["parent"] for r in rows}
    return [r for r in rows if r["parent"] is not None and r["queue"] not in parents
            and (r["apps"] or not r["dynamic"])]


def _starved(r: dict) -> str:
    for below, since, what in (("below_min_share", "min_share_starved_for", "min"),
                               ("below_fair_share", "fair_share_starved_for", "fair")):
        if r.get(below):
            s = r.get(since)
            return f"below {what} share" + (f" {s:.0f} s" if s else "")
    return ""


def queue_table(rows: list[dict], kind: str, running: dict[str, int] | None = None) -> str:
    """Each queue's weight, min and fair share, use, apps, and whether it is
    starved; ``running``: containers (tasks) per queue, when known."""
    units = UNITS[kind]
    head = f"  {'queue':<18} {'weight':>6}"
    for _f, word in units:
        head += f" {'min ' + word:>10} {'fair ' + word:>10} {'used ' + word:>10}"
    if running is not None:
        head += f" {'tasks' if kind == 'mrv1' else 'containers':>10}"
    lines = [head + f" {'apps':>4}  note"]
    for r in shown(rows):
        line = f"  {r['queue']:<18} {r['weight']:>6g}"
        for f, _w in units:
            line += f" {r['min_share'][f]:>10,.0f} {r['fair_share'][f]:>10{SHARE_FMT[kind]}} {r['usage'][f]:>10,.0f}"
        if running is not None:
            line += f" {running.get(r['queue'], 0):>10}"
        lines.append((line + f" {r['apps']:>4}  {_starved(r)}").rstrip())
    return "\n".join(lines)


class Timeline:
    """Fed a sample of the queues every few seconds (``observe``); says
    what to print now, and keeps each queue's figures for the summary."""

    def __init__(self, kind: str, max_tables: int = 5, note_every: float = 20.0) -> None:
        self.kind = kind
        self.max_tables = max_tables
        self.note_every = note_every
        self.tables = 0
        self._prev: dict[str, int] | None = None
        self._printed: dict[str, int] = {}
        self._last_said = 0.0
        self._last_t: float | None = None
        self._last_rows: list[dict] = []
        self.busiest: tuple[float, float, str] | None = None  # (t, use, table)
        self._shown_use = 0.0  # the most in use any snapshot printed showed
        #: queue -> [seconds with apps, fair x s, used x s (per unit), peak used, weight, min share]
        self.queues: dict[str, dict] = {}

    def _use(self, rows: list[dict]) -> float:
        return sum(r["usage"][f] for r in shown(rows) for f, _w in UNITS[self.kind])

    def observe(self, t: float, rows: list[dict], running: dict[str, int] | None = None) -> list[str]:
        if self._last_t is not None:  # the time since the last sample counts as that sample saw it
            self._accumulate(t - self._last_t, self._last_rows)
        self._last_t, self._last_rows = t, rows
        active = {r["queue"]: r["apps"] for r in shown(rows) if r["apps"]}
        use = self._use(rows)
        table = None
        if use > 0 and (self.busiest is None or use > self.busiest[1]):
            table = queue_table(rows, self.kind, running)
            self.busiest = (t, use, table)
        stable, self._prev = active == self._prev, active
        if stable and active and active != self._printed and self.tables < self.max_tables:
            change = _change(self._printed, active)
            self._printed = active
            self.tables += 1
            self._last_said = t
            self._shown_use = max(self._shown_use, use)
            return [f"-- t+{t:.0f} s: {change}", table or queue_table(rows, self.kind, running)]
        if use > 0 and t - self._last_said >= self.note_every:
            self._last_said = t
            return [f"   t+{t:.0f} s: " + ", ".join(f"{q} {v:,.0f}" for q, v in _uses(rows, self.kind).items())
                    + f" {UNITS[self.kind][0][1]} in use"]
        return []

    def closing(self) -> list[str]:
        """The busiest moment, if no snapshot showed as much in use."""
        if self.busiest is None or self.busiest[1] <= self._shown_use:
            return []
        t, use, table = self.busiest
        return [f"-- the busiest moment, t+{t:.0f} s ({use:,.0f} {' + '.join(w for _f, w in UNITS[self.kind])} "
                "in use):", table]

    def _accumulate(self, dt: float, rows: list[dict]) -> None:
        for r in shown(rows):
            q = self.queues.setdefault(r["queue"], {"seconds": 0.0, "weight": r["weight"], "min": r["min_share"],
                                                   "fair": Counter(), "used": Counter(), "peak": Counter()})
            q["weight"], q["min"] = r["weight"], r["min_share"]
            for f, _w in UNITS[self.kind]:
                q["peak"][f] = max(q["peak"][f], r["usage"][f])
            if r["apps"] and dt > 0:
                q["seconds"] += dt
                for f, _w in UNITS[self.kind]:
                    q["fair"][f] += r["fair_share"][f] * dt
                    q["used"][f] += r["usage"][f] * dt

    def queue_summary(self) -> list[str]:
        """Each queue that held apps: for how long, its mean fair share and
        use over that time (time-weighted), and its peak."""
        units = UNITS[self.kind]
        head = f"  {'queue':<18} {'weight':>6} {'had apps':>8}"
        for _f, word in units:
            head += f" {'min ' + word:>10} {'mean fair':>10} {'mean used':>10} {'used/fair':>9} {'peak':>8}"
        lines = [head]
        for name, q in self.queues.items():
            s = q["seconds"]
            if not s:
                continue
            line = f"  {name:<18} {q['weight']:>6g} {f'{s:.0f} s':>8}"
            for f, _w in units:
                fair, used = (q["fair"][f] / s, q["used"][f] / s) if s else (0.0, 0.0)
                ratio = f"{100 * used / fair:.0f}%" if fair else "-"
                line += (f" {q['min'][f]:>10,.0f} {fair:>10{SHARE_FMT[self.kind]}} {used:>10,.0f} {ratio:>9} "
                         f"{q['peak'][f]:>8,.0f}")
            lines.append(line)
        return lines


def _uses(rows: list[dict], kind: str) -> dict[str, float]:
    f = UNITS[kind][0][0]
    return {r["queue"]: r["usage"][f] for r in shown(rows) if r["apps"]}


def _change(before: dict[str, int], after: dict[str, int]) -> str:
    """What changed between two {queue: apps} states, in words."""
    started = [f"{q}" + (f" (+{n - before.get(q, 0)})" if n - before.get(q, 0) > 1 else "")
               for q, n in after.items() if n > before.get(q, 0)]
    ended = [q for q, n in before.items() if after.get(q, 0) < n]
    words = []
    if started:
        words.append("app started in " + ", ".join(started))
    if ended:
        words.append("app finished in " + ", ".join(ended))
    total = sum(after.values())
    return "; ".join(words) + f" ({total} app{'s' if total != 1 else ''} in {len(after)} "\
        f"queue{'s' if len(after) != 1 else ''})"


# ------------------------------------------------------------- recorders
class LaunchRecorder:
    """Each container (MRv1: task) the master launched, once, as its
    protocol messages report it: placed by Python when the shim names the
    assignment it carried out (``engine_id``), else by the master's built-in
    FIFO while Python was away.  Wraps the core's two message handlers."""

    def __init__(self, core) -> None:
        self.launched: dict[str, tuple[str, str | None]] = {}  # container -> (app, Python's id or None)
        for name in ("handle_heartbeat", "handle_update"):
            self._wrap(core, name)

    def _wrap(self, core, name: str) -> None:
        inner = getattr(core, name)

        def handle(msg):
            for c in getattr(msg, "launched", None) or ():
                if c.id not in self.launched:
                    self.launched[c.id] = (c.app, c.engine_id or None)
            return inner(msg)

        setattr(core, name, handle)

    def counts(self, events: list[dict]) -> dict[str, Counter]:
        """Per app: ``python``, ``fifo``, and Python's placements by the
        locality the assign event recorded (joined on Python's id)."""
        level = {e.get("container"): e.get("locality") for e in events if e.get("event") == "assign"}
        out: dict[str, Counter] = {}
        for app, engine_id in list(self.launched.values()):  # the server still runs
            c = out.setdefault(app, Counter())
            if engine_id is None:
                c["fifo"] += 1
            else:
                c["python"] += 1
                c[level.get(engine_id) or "unknown"] += 1
        return out


class PreemptionRecorder:
    """Each container the policy takes back, from which queue, and for which:
    the leaf queues below their min share or fair-share threshold at that
    moment (the engine preempts for those).  Wraps the core's periodic pass."""

    def __init__(self, core) -> None:
        self.rows: list[dict] = []
        self._seen: set[str] = set()
        for sub in getattr(core, "cores", {"": core}).values():  # an MRv1 core has one per slot kind
            self._wrap(sub)

    def _wrap(self, core) -> None:
        inner = core.handle_update

        def handle_update(msg):
            result = inner(msg)
            if result.preempt:
                queues = core.views.queues()
                parents = {p["parent"] for p in queues}
                below = [p["queue"] for p in queues if p["queue"] not in parents
                         and (p.get("below_min_share") or p.get("below_fair_share"))]
                for p in result.preempt:
                    if p.container_id not in self._seen:
                        self._seen.add(p.container_id)
                        self.rows.append({"container": p.container_id, "from": p.queue, "for": below,
                                          "reason": p.reason})
            return result

        core.handle_update = handle_update


# --------------------------------------------------------------- summary
def app_table(apps: list[dict], counts: dict[str, Counter], kind: str) -> list[str]:
    """``apps``: {app, program, queue, user, state, seconds} per job the demo
    ran.  Containers placed by Python and by the FIFO, and the locality of
    Python's placements."""
    word = "tasks" if kind == "mrv1" else "containers"
    lines = [f"  {'app':<32} {'program':<8} {'queue':<16} {'user':<14} {'state':<10} {'time':>6} "
             f"{'by Python':>9} {'by FIFO':>7} {'node-local':>10} {'rack-local':>10} {'off-switch':>10}"]
    for a in apps:
        c = counts.get(a["app"] or "", Counter())
        secs = f"{a['seconds']:.0f} s" if a.get("seconds") is not None else "-"
        lines.append(f"  {a['app'] or '(no id)':<32} {a['program']:<8} {a['queue'] or '-':<16} "
                     f"{a['user'] or '-':<14} {a['state'] or '-':<10} {secs:>6} {c['python']:>9} {c['fifo']:>7} "
                     f"{c['node_local']:>10} {c['rack_local']:>10} {c['off_switch']:>10}")
    total = Counter()
    for a in apps:
        total.update(counts.get(a["app"] or "", Counter()))
    lines.append(f"  {word} launched: {total['python']} placed by Python, {total['fifo']} by the built-in FIFO; "
                 f"of Python's, {total['node_local']} node-local, {total['rack_local']} rack-local, "
                 f"{total['off_switch']} off-switch")
    return lines


LOCALITY_NOTE = textwrap.wrap("locality: where each container Python placed ran, against what its request named. A request "
                 "that names no node or rack (an AM, a reduce, a map that reads no input, like sleep's) can "
                 "only be off-switch. The console's 'Placed' column counts the same; its 'Delay scheduling' column is "
                 "the level an app may use next, not where its containers ran. On the local cluster every node is "
                 "this one host, so node-local says little here (docs/local-cluster.md).",
                 width=100, subsequent_indent="    ", break_on_hyphens=False)


def preemption_summary(rows: list[dict]) -> list[str]:
    """How many containers were preempted, from which queues for which."""
    if not rows:
        return ["containers preempted: none (no queue stayed below its min share or its fair-share "
                "threshold past its preemption timeout)"]
    words = {"min_share": "min share", "fair_share": "fair share"}
    groups = Counter((r["from"], ", ".join(r["for"]) or "no queue below its share any more",
                      words.get(r["reason"], r["reason"])) for r in rows)
    out = [f"containers preempted: {len(rows)}"]
    for (src, dst, why), n in sorted(groups.items(), key=lambda kv: (-kv[1], kv[0])):
        out.append(f"    {n} from {src} for {dst} ({why} preemption)")
    return out


def fallback_summary(link: dict, episodes: list[dict], master: str = "ResourceManager") -> list[str]:
    """The fallback count, in words: heartbeats the master (ResourceManager
    or JobTracker) scheduled with its own FIFO because Python was away."""
    fifo = link.get("fallback_heartbeats")
    if fifo is None:
        fifo = sum(e.get("count", 0) for e in episodes)
    total = link.get("heartbeats")
    deadline = link.get("deadline_ms")
    of = f" of {total} node heartbeats" if total else " node heartbeats"
    share = f" ({100 * fifo / total:.1f}%)" if total else ""
    away = ("not registered yet, still busy with the previous call, or no answer within the "
            + (f"{deadline} ms deadline" if deadline else "shim's deadline"))
    if not fifo:
        return [f"fallback: 0{of}: Python scheduled every one. (This counts the heartbeats the "
                f"{master} schedules with its built-in FIFO while Python is away: {away}.)"]
    reasons = sorted({e["reason"] for e in episodes if e.get("reason")})
    out = [f"fallback: {fifo}{of}{share} were scheduled by the {master}'s built-in FIFO instead "
           f"of Python, because Python was away ({away}); Python scheduled all the others."]
    if episodes:
        out.append(f"    in {len(episodes)} episode(s)" + (f": {'; '.join(reasons)}" if reasons else ""))
    return out
