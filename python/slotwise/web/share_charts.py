"""The console's share charts: each queue's usage, fair, steady and min
share over the server's own history (web/history.py), one small chart per
queue.  Drawn by web/line_charts.py, axes and units on every one."""

from __future__ import annotations

import time

from .line_charts import line_chart
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
