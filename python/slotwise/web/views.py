"""Web-layer rows: what the UI shows, made from the service's plain rows.
Kept apart from the engine's model so display choices never leak into it."""

from __future__ import annotations

import time

from markupsafe import Markup, escape

from ..forecaster import as_text as forecast_text
from ..views.link import GONE, link_state
from ..resources import measure


NBSP = "\u00a0"  # inside "123 MB": a narrow column breaks an amount only after its comma
NBH = "\u2011"  # a hyphen no line breaks at: "off-switch" stays whole


def amount(r: dict | None, slots: bool = False) -> str:
    if not r:
        return "-"
    if "map_slots" in r:  # an MRv1 JobTracker's queues and apps
        m, red = r.get("map_slots", 0), r.get("reduce_slots", 0)
        if m == float("inf") or red == float("inf"):
            return "unlimited"
        return f"{round(m, 1):g}{NBSP}maps, {round(red, 1):g}{NBSP}reduces"
    mem, vc = r.get("memory_mb", 0), r.get("vcores", 0)
    if mem == float("inf") or vc == float("inf"):
        return "unlimited"
    return f"{mem:.0f}{NBSP}MB, {round(vc, 1):g}{NBSP}vcores"


def seconds(x: float | None) -> str:
    if x is None:
        return "-"
    if x == float("inf"):
        return "never"
    if x >= 120:  # a starvation of 20 minutes reads as such, not as 1234.5 s
        m, s = divmod(round(x), 60)
        return f"{m}{NBSP}min{NBSP}{s}{NBSP}s" if m < 120 else f"{m // 60}{NBSP}h{NBSP}{m % 60}{NBSP}min"
    return f"{x:.1f}{NBSP}s"


def when(ts: float | None) -> str:
    return "-" if not ts else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


def breakable(ident: str) -> Markup:
    """An id (application_1795785664292_0001) that a narrow column may break
    only after an underscore, never inside its numbers."""
    return Markup("_<wbr>").join(escape(part) for part in str(ident).split("_"))


def below(row: dict, flag: str, since: str) -> str:
    """A queue's "below its share" figure: "-" unless it is below now; then
    for how long when that is timed, else "yes"."""
    if not row.get(flag):
        return "-"
    x = row.get(since)
    return "yes" if x is None else seconds(x)


def _finite_or_none(x):
    return None if x is None or x == float("inf") else x


def starvation(row: dict) -> list[dict]:
    """What the console says of a starved queue: below which share, for how
    long, and what preemption will do and when: "due" and "in N s" are the
    preemption unit's next round for the queue (the row's preemption_due and
    next_preemption_in_s, views.StateViews.queue_rows), never a restatement
    from the since-clock, which runs on across the rounds that serve it.
    One dict per share it is below; [] when it is fine."""
    out = []
    for flag, since, timeout, what in (
            ("below_min_share", "min_share_starved_for", "min_share_timeout", "its min share"),
            ("below_fair_share", "fair_share_starved_for", "fair_share_timeout",
             f"{100 * row.get('fair_share_threshold', 0.5):g}% of its fair share")):
        if not row.get(flag):
            continue
        starved_for, limit = row.get(since), _finite_or_none(row.get(timeout))
        said = f"{limit:g}{NBSP}s" if limit is not None else ""  # as the file says it
        head = f"Below {what}" + (f" for {seconds(starved_for)}" if starved_for is not None else "")
        gone = row.get("_gone")
        next_in = row.get("next_preemption_in_s")
        if gone:  # no master, no preemption: the clock stopped when the link was lost
            head += f" when the {gone} was lost"
            then, due = "nothing is preempted while it is gone", None
        elif not row.get("preemption", True):
            then, due = "preemption is off: it gets room as containers end", None
        elif row["queue"] in row.get("_parents", ()):
            then, due = "its leaf queues are timed and preempted for", None
        elif limit is None:
            then, due = "no preemption timeout: it gets room as containers end", None
        elif starved_for is None:
            then, due = f"preemption after {said} below it", None
        elif next_in is None:
            then, due = f"no preemption round is coming for it (timeout {said})", None
        else:
            due = bool(row.get("preemption_due"))
            then = (f"preemption due now (timeout {said}): containers go back from queues over "
                    f"their fair share" if due else
                    f"preemption in {seconds(next_in)} (timeout {said}) unless it gets room first")
        out.append({"text": head, "then": then, "due": due, "kind": flag})
    return out


def bar(row: dict, capacity: float) -> dict:
    """Where a queue's usage and its shares fall on a bar of the cluster's
    capacity (memory on YARN, slots on MRv1), in percent."""
    def pct(key):
        x = measure(row.get(key))
        return round(min(100.0, 100.0 * x / capacity), 2) if capacity > 0 else 0.0
    return {"usage": pct("usage"), "fair": pct("fair_share"), "steady": pct("steady_fair_share"),
            "min": pct("min_share"), "demand": pct("demand")}


def shared(r: dict, compared) -> tuple[str, bool]:
    """A fair share in the dimensions it is shared in: YARN's fair policy
    shares memory only (its vcores stay 0), so a 0 there is left out
    rather than shown as a share of nothing. True: vcores were left out."""
    if not r or "map_slots" in r or "vcores" in (compared or ()) or r.get("vcores"):
        return amount(r), False
    mem = r.get("memory_mb", 0)
    return ("unlimited" if mem == float("inf") else f"{mem:.0f}{NBSP}MB"), True


def gone_master(link: dict) -> str | None:
    """The master's name while it is gone (the link lost, or this server no
    longer registered: its FIFO decides, nothing is preempted); else None."""
    return (link.get("master") or "ResourceManager") if link_state(link) in GONE else None


def queue_rows(queues: list[dict], capacity: dict | None = None, gone: str | None = None) -> list[dict]:
    """The Queues table; ``gone``: the master's name while it is gone."""
    parents = {p["parent"] for p in queues}
    cap = measure(capacity)
    rows = []
    for p in queues:
        if p["queue"] == "root":
            continue
        fair, fair_mem_only = shared(p["fair_share"], p.get("compared"))
        steady, steady_mem_only = shared(p["steady_fair_share"], p.get("compared"))
        starved = starvation({**p, "_parents": parents, "_gone": gone})
        rows.append({
            "name": p["queue"], "depth": p["queue"].count("."), "policy": p["policy"], "weight": f"{p['weight']:g}",
            "min_share": amount(p["min_share"]) if any(p["min_share"].values()) else "-", "fair_share": fair, "steady_fair_share": steady,
            "memory_only": fair_mem_only or steady_mem_only, "usage": amount(p["usage"]),
            "demand": amount(p["demand"]), "running_apps": p["running_apps"], "apps": p["apps"],
            "min_starved": below(p, "below_min_share", "min_share_starved_for"),
            "fair_starved": below(p, "below_fair_share", "fair_share_starved_for"),
            "starvation": starved, "starved": bool(starved), "due": any(s["due"] for s in starved),
            "bar": bar(p, cap), "recovery": p.get("recovery", False), "locality": locality(p),
        })
    return rows


def locality(row: dict) -> dict | None:
    """A leaf queue's locality cell: its target, the data-local fraction
    reached (last 10 minutes) and the waits in force."""
    waits = row.get("locality_waits")
    if waits is None and row.get("data_local") is None:
        return None
    target, got = row.get("locality_target"), row.get("data_local")
    return {"target": "-" if target is None else f"{100 * target:.0f}%",
            "achieved": "-" if got is None else f"{100 * got:.0f}%",
            "met": None if target is None or got is None else got >= target,
            "waits": "-" if waits is None else f"{waits['node']:.1f}{NBSP}s + {waits['rack']:.1f}{NBSP}s",
            "tuned": bool(row.get("locality_tuned"))}


def cluster_line(c: dict) -> dict:
    cap, use = c["capacity"], c["usage"]
    key = "map_slots" if "map_slots" in cap else "memory_mb"
    total = cap.get(key) or 0
    return {"nodes": c["nodes"], "capacity": amount(cap), "usage": amount(use),
            "used_pct": f"{100 * use.get(key, 0) / total:.0f}%" if total else "-"}


LEVELS = (("node_local", "node-local"), ("rack_local", "rack-local"), ("off_switch", "off-switch"),
          ("rm", "placed by the master"))


def app_rows(apps: list[dict], forecasts: dict | None = None) -> list[dict]:
    """The apps table's rows; ``forecasts``: the Forecaster's last (app id
    -> its row), said in words in the Forecast column."""
    forecasts = forecasts or {}
    return [{
        "forecast": forecast_text(forecasts[j["id"]]) if j["id"] in forecasts else "not forecast yet",
        "id": j["id"], "name": j.get("name") or j["id"], "named": bool(j.get("name")), "user": j["user"],
        "queue": j["queue"], "priority": j["priority"],
        "running": j["running_containers"], "usage": amount(j["usage"]), "demand": amount(j["demand"]),
        "fair_share": shared(j["fair_share"], ())[0], "locality": j["locality_level"].replace("_", "-"),
        "wait": seconds(j["locality_wait"]), "runnable": j["runnable"], "moving_to": j.get("moving_to"),
        "placed": ", ".join(f"{j['placed'][k]} {name.replace('-', NBH)}" for k, name in LEVELS if j.get("placed", {}).get(k)),
    } for j in apps]


def preemption_rounds(rows: list[dict], limit: int = 10) -> list[dict]:
    """Preemptions (newest first) grouped by the update pass that decided
    them (one time each): a round's count, from which queues and apps, why."""
    rounds: list[dict] = []
    for r in rows:
        if not rounds or rounds[-1]["time"] != r["time"]:
            if len(rounds) == limit:
                break
            rounds.append({"time": r["time"], "when": when(r["time"]), "rows": []})
        rounds[-1]["rows"].append({**r, "when": when(r["time"]), "action": "kill" if r["kill"] else "warn"})
    for g in rounds:
        rs = g["rows"]
        g["count"] = len(rs)
        g["kills"] = sum(1 for r in rs if r["kill"])
        g["from"] = ", ".join(f"{q} ({n})" for q, n in _counts(r["queue"] for r in rs))
        g["apps"] = ", ".join(f"{a} ({n})" for a, n in _counts(r["app"] for r in rs))
        g["reasons"] = sorted({r["reason"] for r in rs if r.get("reason")})
        g["key"] = f"{g['time']:.6f}"
    return rounds


def _counts(items) -> list[tuple[str, int]]:
    out: dict[str, int] = {}
    for x in items:
        out[x] = out.get(x, 0) + 1
    return sorted(out.items(), key=lambda kv: (-kv[1], kv[0]))


def node_rows(nodes: list[dict]) -> dict:
    """The nodes with their free room, most room first (where the next
    container can go), and a line for all of them."""
    rows = [{"node": n["node"], "host": n["host"], "rack": n["rack"], "capacity": amount(n["capacity"]),
             "used": amount(n["used"]), "free": amount(n["free"]), "containers": n["containers"],
             "held_for": ", ".join(n["held_for"]),
             "used_pct": round(100 * measure(n["used"]) / measure(n["capacity"]), 1) if measure(n["capacity"]) else 0,
             "_free": measure(n["free"])} for n in nodes]
    rows.sort(key=lambda r: (-r["_free"], r["node"]))
    full = sum(1 for r in rows if r["_free"] <= 0)
    return {"rows": rows, "count": len(rows), "full": full}


def link_view(link: dict) -> dict:
    """What the banner says of the master (ResourceManager or JobTracker),
    and whether the page shows a last known state rather than a live one."""
    master = link.get("master") or "ResourceManager"
    state = link_state(link)
    return {"master": master, "state": state, "stale": state in GONE, "lost_at": when(link.get("lost_at")),
            "waiting": link.get("waiting"), "since": when(link.get("since"))}
