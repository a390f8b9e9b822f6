"""Line charts as inline SVG, drawn on the server: every chart has both
axes with tick labels and says its units, so a figure never stands alone.
No script and no chart library: the page stays light and works offline."""

from __future__ import annotations

import math
from html import escape

from markupsafe import Markup

COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")
#: Room around the plot for the tick labels and the axis titles.
LEFT, RIGHT, TOP, BOTTOM = 52, 10, 8, 34


def nice_ticks(lo: float, hi: float, count: int = 4) -> list[float]:
    """About ``count`` round values (1, 2 or 5 times a power of ten) from
    ``lo`` to at least ``hi``."""
    if not hi > lo:
        hi = lo + 1.0
    raw = (hi - lo) / count
    mag = 10 ** math.floor(math.log10(raw))
    step = min((m * mag for m in (1, 2, 5, 10)), key=lambda st: abs((hi - lo) / st - count))
    first = math.floor(lo / step) * step
    ticks, t = [], first
    while t < hi + step * 0.999:
        ticks.append(round(t, 10))
        t += step
    return ticks


def _corners(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The points where a line turns: a share that holds still for an hour
    is two points, not 720 (the page polls; it stays light)."""
    out = points[:1]
    for i in range(1, len(points) - 1):
        if not points[i - 1][1] == points[i][1] == points[i + 1][1]:
            out.append(points[i])
    return out + points[-1:] if len(points) > 1 else out


def label(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 100 or x == int(x) else f"{x:.3g}"


def line_chart(series: list[dict], *, x_title: str, y_title: str, width: int = 320, height: int = 150,
               chart_id: str = "", x_labels=label, x_range: tuple[float, float] | None = None,
               title: str = "") -> Markup:
    """``series``: dicts with ``name``, ``points`` [(x, y)], and optional
    ``colour``, ``dash`` (an SVG dasharray) and ``width``.  The y axis
    starts at 0; the x axis spans ``x_range`` or the points."""
    xs = [x for s in series for x, _ in s["points"]]
    ys = [y for s in series for _, y in s["points"]]
    x0, x1 = x_range or ((min(xs), max(xs)) if xs else (0.0, 1.0))
    if x1 <= x0:
        x1 = x0 + 1.0
    yt = nice_ticks(0.0, max(ys, default=0.0) or 1.0)
    xt = [t for t in nice_ticks(x0, x1) if x0 - 1e-9 <= t <= x1 + 1e-9]
    pw, ph = width - LEFT - RIGHT, height - TOP - BOTTOM
    ytop = yt[-1]

    def px(x: float) -> float:
        return LEFT + (x - x0) / (x1 - x0) * pw

    def py(y: float) -> float:
        return TOP + ph - y / ytop * ph

    id_attr = f'id="{escape(chart_id)}" ' if chart_id else ""
    out = [f'<svg class="chart" {id_attr}viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
           f'aria-label="{escape(title or y_title)} over {escape(x_title)}">']
    out.append('<g class="grid">' + "".join(
        f'<line x1="{LEFT}" x2="{LEFT + pw}" y1="{py(t):.1f}" y2="{py(t):.1f}"/>' for t in yt[1:]) + "</g>")
    for s in series:
        if not s["points"]:
            continue
        pts = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in _corners(s["points"]))
        dash = f' stroke-dasharray="{s["dash"]}"' if s.get("dash") else ""
        out.append(f'<polyline class="series" data-series="{escape(s["name"])}" fill="none" '
                   f'stroke="{s.get("colour", COLOURS[0])}" stroke-width="{s.get("width", 1.8)}"{dash} '
                   f'points="{pts}"><title>{escape(s["name"])}</title></polyline>')
    # The axes last, over the data.
    out.append(f'<g class="axis y-axis"><line x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{TOP + ph}"/>')
    for t in yt:
        out.append(f'<text class="tick" x="{LEFT - 4}" y="{py(t) + 3.5:.1f}" text-anchor="end">{escape(label(t))}</text>')
    out.append(f'<text class="axis-title" transform="translate(11 {TOP + ph / 2:.0f}) rotate(-90)" '
               f'text-anchor="middle">{escape(y_title)}</text></g>')
    out.append(f'<g class="axis x-axis"><line x1="{LEFT}" x2="{LEFT + pw}" y1="{TOP + ph}" y2="{TOP + ph}"/>')
    for t in xt:
        out.append(f'<text class="tick" x="{px(t):.1f}" y="{TOP + ph + 13}" text-anchor="middle">'
                   f'{escape(x_labels(t))}</text>')
    out.append(f'<text class="axis-title" x="{LEFT + pw / 2:.0f}" y="{height - 3}" text-anchor="middle">'
               f'{escape(x_title)}</text></g></svg>')
    return Markup("".join(out))
