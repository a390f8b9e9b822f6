"""Web-layer rows: what the UI shows, made from the service's plain rows.
Kept apart from the engine's model so display choices never leak into it."""

from __future__ import annotations

import time


NBSP = "\u00a0"  # inside "123 MB": a narrow column breaks an amount only after its comma


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
    return f"{x:.1f}{NBSP}s"


def when(ts: float | None) -> str:
    return "-" if not ts else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


def below(row: dict, flag: str, since: str) -> str:
    """A queue's "below its share" cell: "-" unless it is below now; then
    for how long when that is timed, else "yes"."""
    if not row.get(flag):
        return "-"
    x = row.get(since)
    return "yes" if x is None else seconds(x)


def queue_rows(queues: list[dict]) -> list[dict]:
    return [{
        "name": p["queue"], "depth": p["queue"].count("."), "policy": p["policy"], "weight": f"{p['weight']:g}",
        "min_share": amount(p["min_share"]), "fair_share": amount(p["fair_share"]),
        "steady_fair_share": amount(p["steady_fair_share"]), "usage": amount(p["usage"]),
        "demand": amount(p["demand"]), "running_apps": p["running_apps"], "apps": p["apps"],
        "min_starved": below(p, "below_min_share", "min_share_starved_for"),
        "fair_starved": below(p, "below_fair_share", "fair_share_starved_for"),
        "recovery": p.get("recovery", False),
    } for p in queues if p["queue"] != "root"]


def cluster_line(c: dict) -> dict:
    cap, use = c["capacity"], c["usage"]
    key = "map_slots" if "map_slots" in cap else "memory_mb"
    total = cap.get(key) or 0
    return {"nodes": c["nodes"], "capacity": amount(cap), "usage": amount(use),
            "used_pct": f"{100 * use.get(key, 0) / total:.0f}%" if total else "-"}


def app_rows(apps: list[dict]) -> list[dict]:
    return [{
        "id": j["id"], "name": j.get("name") or j["id"], "named": bool(j.get("name")), "user": j["user"],
        "queue": j["queue"], "priority": j["priority"],
        "running": j["running_containers"], "usage": amount(j["usage"]), "demand": amount(j["demand"]),
        "fair_share": amount(j["fair_share"]), "locality": j["locality_level"].replace("_", "-"),
        "wait": seconds(j["locality_wait"]), "runnable": j["runnable"], "moving_to": j.get("moving_to"),
    } for j in apps]


def preemption_rows(rows: list[dict]) -> list[dict]:
    return [{**r, "when": when(r["time"]), "action": "kill" if r["kill"] else "warn"} for r in rows]


PLOT_W, PLOT_H = 560, 160
PLOT_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")


def _polyline(points: list[tuple[float, float]], x0: float, x1: float, ymax: float) -> str:
    span = (x1 - x0) or 1.0
    top = ymax or 1.0
    return " ".join(f"{(x - x0) / span * PLOT_W:.1f},{PLOT_H - y / top * PLOT_H:.1f}" for x, y in points)


def market_view(market) -> dict | None:
    """The Dynamic Priority panel: the paper's Fig. 2 columns per queue, the
    price, and budgets and price over the committed intervals as SVG lines."""
    if market is None or not market.accounts:
        return None
    rows = [{"queue": r["queue"], "budget": f"{r['budget']:.6g}", "spending": f"{r['spending']:g}",
             "rate": f"{r['rate']:g}", "share": f"{r['share']:.3f}", "used": f"{r['used']:g}",
             "pending": f"{r['pending']:g}"} for r in market.infos()]
    history = market.history(200)
    plots = None
    if len(history) >= 2:
        x0, x1 = history[0]["end"], history[-1]["end"]
        budgets: dict[str, list[tuple[float, float]]] = {}
        last: dict[str, float] = {}
        for h in history:  # a queue not charged in an interval kept its budget
            for c in h["charges"]:
                last[c["queue"]] = c["budget"]
            for q, b in last.items():
                budgets.setdefault(q, []).append((h["end"], b))
        top = max((b for pts in budgets.values() for _, b in pts), default=0.0)
        lines = [{"queue": q, "colour": PLOT_COLOURS[i % len(PLOT_COLOURS)], "points": _polyline(pts, x0, x1, top)}
                 for i, (q, pts) in enumerate(sorted(budgets.items()))]
        prices = [(h["end"], h["price"]) for h in history]
        plots = {"width": PLOT_W, "height": PLOT_H, "budgets": lines, "budget_max": f"{top:.6g}",
                 "price": _polyline(prices, x0, x1, max(p for _, p in prices)),
                 "price_max": f"{max(p for _, p in prices):g}", "intervals": len(history),
                 "span": seconds(x1 - x0)}
    s = market.settings
    return {"rows": rows, "price": f"{market.price():g}", "interval": f"{s.interval:g}",
            "preemption": f"after {s.grace:g} s" if s.preemption else "off", "plots": plots}
