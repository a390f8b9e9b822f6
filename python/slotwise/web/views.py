"""Web-layer rows: what the UI shows, made from the service's plain rows.
Kept apart from the engine's model so display choices never leak into it."""

from __future__ import annotations

import time


def amount(r: dict | None, slots: bool = False) -> str:
    if not r:
        return "-"
    mem, vc = r.get("memory_mb", 0), r.get("vcores", 0)
    if mem == float("inf") or vc == float("inf"):
        return "unlimited"
    return f"{mem:.0f} MB, {round(vc, 1):g} vcores"


def seconds(x: float | None) -> str:
    if x is None:
        return "-"
    if x == float("inf"):
        return "never"
    return f"{x:.1f} s"


def when(ts: float | None) -> str:
    return "-" if not ts else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


def pool_rows(pools: list[dict]) -> list[dict]:
    return [{
        "name": p["pool"], "depth": p["pool"].count("."), "policy": p["policy"], "weight": f"{p['weight']:g}",
        "min_share": amount(p["min_share"]), "fair_share": amount(p["fair_share"]),
        "steady_fair_share": amount(p["steady_fair_share"]), "usage": amount(p["usage"]),
        "demand": amount(p["demand"]), "running_apps": p["running_apps"], "apps": p["apps"],
        "min_starved": seconds(p["min_share_starved_for"]) if p["min_share_starved_for"] else "-",
        "fair_starved": seconds(p["fair_share_starved_for"]) if p["fair_share_starved_for"] >= 0.05 else "-",
        "recovery": p.get("recovery", False),
    } for p in pools if p["pool"] != "root"]


def job_rows(jobs: list[dict]) -> list[dict]:
    return [{
        "id": j["id"], "user": j["user"], "pool": j["pool"], "priority": j["priority"],
        "running": j["running_containers"], "usage": amount(j["usage"]), "demand": amount(j["demand"]),
        "fair_share": amount(j["fair_share"]), "locality": j["locality_level"].replace("_", "-"),
        "wait": seconds(j["locality_wait"]), "runnable": j["runnable"], "moving_to": j.get("moving_to"),
    } for j in jobs]


def preemption_rows(rows: list[dict]) -> list[dict]:
    return [{**r, "when": when(r["time"]), "action": "kill" if r["kill"] else "warn"} for r in rows]
