"""The console's shadow panel: what ``GET /api/v1/shadow`` says, made into
rows the template shows (web/templates/_shadow.html), and the candidate's
diff against the live allocation file. Kept apart from shadow.py so display
choices never reach the comparison."""

from __future__ import annotations

import difflib
import os
import threading

from . import views

#: The diff shown: at most this many lines...
MAX_DIFF_LINES = 400
#: ... of at most this many characters each (a minified file is one long line).
MAX_DIFF_LINE = 300
#: Files longer than this (lines, either side) are not diffed here: difflib
#: on two 4 MiB files would hold the interpreter the heartbeats share.
MAX_DIFFED_LINES = 20_000
#: Diverging decisions listed (the API keeps 50).
MAX_DIVERGING_SHOWN = 10

_cache_lock = threading.Lock()
_cache: dict = {}


def diff(live_text: str, live_name: str, candidate_text: str, candidate_name: str) -> dict:
    """A unified diff of the live file against the candidate, bounded: lines
    as (kind, text) for the template to escape and colour; remembered for
    the last pair of texts (the panel asks every refresh)."""
    key = (live_text, live_name, candidate_text, candidate_name)
    with _cache_lock:
        if _cache.get("key") == key:
            return _cache["out"]
    a, b = live_text.splitlines(), candidate_text.splitlines()
    if max(len(a), len(b)) > MAX_DIFFED_LINES:
        out = {"lines": [], "added": None, "removed": None, "more": 0,
               "too_large": f"{len(a):,} and {len(b):,} lines: too long to diff here"}
    else:
        raw = list(difflib.unified_diff(a, b, f"live: {live_name}", f"candidate: {candidate_name}", n=2,
                                        lineterm=""))
        added = sum(1 for x in raw[2:] if x.startswith("+"))
        removed = sum(1 for x in raw[2:] if x.startswith("-"))
        lines = []
        for x in raw[:MAX_DIFF_LINES]:
            kind = ("file" if x.startswith(("---", "+++")) and len(lines) < 2 else "hunk" if x.startswith("@@")
                    else "add" if x.startswith("+") else "del" if x.startswith("-") else "same")
            lines.append((kind, x if len(x) <= MAX_DIFF_LINE else x[:MAX_DIFF_LINE] + " [...]"))
        out = {"lines": lines, "added": added, "removed": removed, "more": max(0, len(raw) - MAX_DIFF_LINES),
               "too_large": None}
    with _cache_lock:
        _cache.update(key=key, out=out)
    return out


def _placed(d: dict) -> str:
    """One decision of either side, as the panel says it."""
    if "container" in d:  # a preemption of an update pass
        return f"{d['container']} of {d['app']} ({d['queue']}) {'killed' if d.get('kill') else 'asked back'}"
    where = (d.get("locality") or "").replace("_", views.NBH)
    am = " (its AM)" if d.get("am") else ""
    return f"{d['app']}{am} ({d['queue']}) on {d['node']}, {where}, {views.amount(d.get('resource'))}"


def _side(rows: list[dict]) -> list[dict]:
    """One side's decisions, alike ones in a row said once with their count
    (a heartbeat often gives one app several containers on its node)."""
    out: list[dict] = []
    for d in rows:
        text = _placed(d)
        if out and out[-1]["text"] == text and out[-1]["why"] == d.get("why"):
            out[-1]["times"] += 1
            continue
        out.append({"text": text, "app": d.get("app"), "queue": d.get("queue"), "why": d.get("why"), "times": 1})
    return out


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def queue_rows(queues: list[dict]) -> list[dict]:
    """Per queue, each side's containers (with a bar against the most any
    side gave a queue), resources, preemptions and data-local fraction."""
    most = max([1] + [q[s]["containers"] for q in queues for s in ("live", "shadow")])
    rows = []
    for q in queues:
        lv, sh = q["live"], q["shadow"]
        rows.append({
            "queue": q["queue"], "differs": (lv["containers"], lv["preemptions"]) != (sh["containers"],
                                                                                    sh["preemptions"]),
            "sides": [{"side": side, "containers": r["containers"], "bar": round(100 * r["containers"] / most, 1),
                       "resource": views.amount(r["resource"]), "preemptions": r["preemptions"],
                       "data_local": _pct(r["data_local"])} for side, r in (("live", lv), ("shadow", sh))],
        })
    return rows


def diverging_rows(diverging: list[dict]) -> list[dict]:
    out = []
    for d in diverging[:MAX_DIVERGING_SHOWN]:
        what = f"heartbeat of {d['node']}" if d["call"] == "heartbeat" and d.get("node") else \
            "heartbeat" if d["call"] == "heartbeat" else "update pass (preemptions)"
        out.append({"when": views.when(d["t"]), "what": what, "live": _side(d["live"]),
                    "shadow": _side(d["shadow"])})
    return out


def panel(status: dict, live: dict, candidate_text: str | None) -> dict:
    """The template's view of the shadow: ``status`` as the API gives it,
    ``live`` the live file's (``GET /api/v1/config``: path and content)."""
    s = status
    state = s["state"]
    shown = state == "running" or (state == "stopped" and bool(s.get("error")))
    live_name = os.path.basename(live.get("path") or "") or "the live file"
    out = {"state": state, "shown": shown, "file": s.get("file"), "error": s.get("error"),
           "file_errors": s.get("file_errors") or [], "live_name": live_name,
           "started": views.when(s.get("started_at")),
           "compared": s["compared"], "diverged": s["diverged"], "skipped": s["skipped"],
           "diverged_pct": _pct(s["diverged"] / s["compared"]) if s["compared"] else "-",
           "updates_compared": s["updates_compared"], "updates_diverged": s["updates_diverged"],
           "copies": s["copies"], "cpu_s": s["cpu_s"], "window_min": round(s["window_s"] / 60),
           "pid": s.get("pid"), "rss_mb": None if s.get("rss_mb") is None else round(s["rss_mb"]),
           "timeline": s.get("timeline") or [], "diff": None, "queues": [], "diverging": [],
           "diverging_total": len(s.get("diverging") or [])}
    if not shown:
        return out
    if candidate_text is not None:
        out["diff"] = diff(live.get("content") or "", live_name, candidate_text,
                           os.path.basename(s.get("file") or "") or "candidate")
    out["queues"] = queue_rows(s.get("queues") or [])
    out["diverging"] = diverging_rows(s.get("diverging") or [])
    return out
