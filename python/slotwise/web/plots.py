"""The console's charts: each queue's usage and shares over the server's
own history (web/history.py), and the Dynamic Priority market's budgets
and price.  Drawn by web/charts.py, axes and units on every one."""

from __future__ import annotations

import time

from .charts import COLOURS, line_chart
from .views import seconds

#: Small multiples: more queues than this are listed, not drawn.
MAX_CHARTS = 12
#: (field, legend name, colour, dash, width) of each line in a queue's chart,
#: in drawing order: the min share first, a wide pale band, so that where it
#: equals the fair share (or the steady one) it shows around that line.
LINES = (("min_share", "min share", "#9fd89f", None, 6.0), ("usage", "usage", "#1f77b4", None, 2.4),
         ("fair_share", "fair share", "#d62728", None, 1.5), ("steady_fair_share", "steady fair share", "#555", "5 3", 1.3))


def _unit(top: float, slots: bool) -> tuple[str, float]:
    if slots:
        return "slots", 1.0
    return ("GB", 1024.0) if top >= 10240 else ("MB", 1.0)


def history_charts(series: dict, slots: bool) -> dict:
    """One small chart per queue that held, was owed or was promised
    anything in the samples (usage, fair, steady fair and min share)."""
    t = series["t"]
    out = {"charts": [], "samples": len(t), "every": seconds(series["every"]), "legend": [
        {"name": name, "colour": colour, "dash": dash, "width": width} for _, name, colour, dash, width in LINES], "more": []}
    if len(t) < 2:
        return out
    now = t[-1]
    minutes = now - t[0] > 180
    scale = 60.0 if minutes else 1.0
    xs = [(x - now) / scale for x in t]
    out["span"] = seconds(now - t[0])
    x_title = f"{'minutes' if minutes else 'seconds'} before {time.strftime('%H:%M:%S', time.localtime(now))}"
    active = [q for q, f in sorted(series["queues"].items())
              if any(v for key, *_ in LINES for v in f[key] if v)]
    top = max((v for q in active for key, *_ in LINES for v in series["queues"][q][key] if v), default=0.0)
    unit, div = _unit(top, slots)
    for q in active[:MAX_CHARTS]:
        fields = series["queues"][q]
        lines = [{"name": name, "colour": colour, "dash": dash, "width": width,
                  "points": [(x, v / div) for x, v in zip(xs, fields[key]) if v is not None]}
                 for key, name, colour, dash, width in LINES]
        out["charts"].append({"queue": q, "svg": line_chart(
            lines, x_title=x_title, y_title=unit, chart_id=f"history-{q}", x_range=(xs[0], 0.0),
            x_labels=lambda v: f"{v:g}", title=f"{q}: usage and shares")})
    out["more"] = active[MAX_CHARTS:]
    out["unit"] = unit
    return out


def market_view(market) -> dict | None:
    """The Dynamic Priority panel: the paper's Fig. 2 columns per queue, the
    price, and budgets and price over the committed intervals."""
    if market is None or not market.accounts:
        return None
    rows = [{"queue": r["queue"], "budget": f"{r['budget']:.6g}", "spending": f"{r['spending']:g}",
             "rate": f"{r['rate']:g}", "share": f"{r['share']:.3f}", "used": f"{r['used']:g}",
             "pending": f"{r['pending']:g}"} for r in market.infos()]
    history = market.history(200)
    plots = None
    if len(history) >= 2:
        x0 = history[0]["end"]
        budgets: dict[str, list[tuple[float, float]]] = {}
        last: dict[str, float] = {}
        for h in history:  # a queue not charged in an interval kept its budget
            for c in h["charges"]:
                last[c["queue"]] = c["budget"]
            for q, b in last.items():
                budgets.setdefault(q, []).append((h["end"] - x0, b))
        lines = [{"name": q, "colour": COLOURS[i % len(COLOURS)], "points": pts}
                 for i, (q, pts) in enumerate(sorted(budgets.items()))]
        prices = [{"name": "price", "colour": "#333", "points": [(h["end"] - x0, h["price"]) for h in history]}]
        x_title = "seconds since the first interval shown"
        plots = {"intervals": len(history), "span": seconds(history[-1]["end"] - x0),
                 "legend": [{"name": l["name"], "colour": l["colour"]} for l in lines],
                 "budgets": line_chart(lines, x_title=x_title, y_title="budget", chart_id="dp-budgets",
                                       width=560, height=180, title="budgets"),
                 "price": line_chart(prices, x_title=x_title, y_title="price / slot / interval",
                                     chart_id="dp-price-plot", width=560, height=180, title="price")}
    s = market.settings
    return {"rows": rows, "price": f"{market.price():g}", "interval": f"{s.interval:g}",
            "preemption": f"after {s.grace:g} s" if s.preemption else "off", "plots": plots}
