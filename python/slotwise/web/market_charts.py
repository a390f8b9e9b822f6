"""The console's Dynamic Priority panel: each account's budget, rate and
share (the paper's Fig. 2 columns), the price, and the budgets and price
over the committed intervals, drawn by web/line_charts.py."""

from __future__ import annotations

from .line_charts import COLOURS, line_chart
from .views import seconds


def market_view(market, accounts: set[str] | None = None) -> dict | None:
    """The Dynamic Priority panel: the paper's Fig. 2 columns per queue, the
    price, and budgets and price over the committed intervals. ``accounts``:
    the ones this server's allocation file has (StateViews.market_accounts);
    a store another serve shares may hold more, which are not shown. None:
    all of them."""
    if market is None or not market.accounts:
        return None
    infos = [r for r in market.infos() if accounts is None or r["queue"] in accounts]
    if not infos:
        return None
    rows = [{"queue": r["queue"], "budget": f"{r['budget']:.6g}", "spending": f"{r['spending']:g}",
             "rate": f"{r['rate']:g}", "share": f"{r['share']:.3f}", "used": f"{r['used']:g}",
             "pending": f"{r['pending']:g}"} for r in infos]
    history = market.history(200)
    plots = None
    if len(history) >= 2:
        x0 = history[0]["end"]
        budgets: dict[str, list[tuple[float, float]]] = {}
        last: dict[str, float] = {}
        for h in history:  # a queue not charged in an interval kept its budget
            for c in h["charges"]:
                if accounts is None or c["queue"] in accounts:
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
