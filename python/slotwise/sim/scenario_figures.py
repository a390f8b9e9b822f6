"""The figures of the delay-scheduling scenarios and of traces (locality,
response times, utilization, each queue's share over time), and the drawing
helpers the Hopper and Dynamic Priority figures share. Drawn one way: every
axis labelled with its unit, the legend outside the data (beside the figure,
so no line hides under it), one small panel per queue or experiment rather
than many crossing lines, and the fair share drawn as a reference where the
samples have it.

``figures`` returns (file name, matplotlib Figure) pairs, so tests can read
the labels and legends; ``save`` writes and closes them."""

from __future__ import annotations

import math
import os

from . import metrics

#: Queues drawn in the shares plot (the busiest; the title says how many more).
MAX_QUEUE_PANELS = 6
#: Experiments drawn side by side in the utilization plot.
MAX_RUN_PANELS = 6


def pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def new_figure(panels: int = 1, cols: int = 1, width: float = 7.0, height: float = 3.2, **kw):
    """A figure with constrained layout (which makes room for a legend
    placed outside) and ``panels`` axes in ``cols`` columns; returns (fig,
    flat list of the axes in use)."""
    plt = pyplot()
    rows = max(1, math.ceil(panels / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(width, height * rows if rows > 1 else height),
                             squeeze=False, layout="constrained", **kw)
    flat = [ax for row in axes for ax in row]
    for ax in flat[panels:]:
        ax.set_visible(False)
    return fig, flat[:panels]


def legend_outside(fig, ax=None, **kw):
    """The figure's legend below its panels (clear of the data and of the
    title), from ``ax``'s labelled artists (default: every panel's, each
    label once)."""
    handles, labels = [], []
    for a in ([ax] if ax is not None else fig.axes):
        for h, lab in zip(*a.get_legend_handles_labels()):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    if not handles:
        return None
    return fig.legend(handles, labels, loc="outside lower center", ncols=min(len(labels), 5), fontsize="small",
                      frameon=False, **kw)


def save(fig, out_dir: str, name: str, dpi: int = 90) -> str:
    path = os.path.join(out_dir, name)
    fig.savefig(path, dpi=dpi)
    pyplot().close(fig)
    return path


def write_all(out_dir: str, named) -> list[str]:
    return [save(fig, out_dir, name) for name, fig in named]


# ------------------------------------------------------------ units
def share_unit(result) -> tuple[float, str]:
    """(divisor, axis label) for a run's queue samples: map slots on a slot
    cluster; memory in GB, or MB when no queue reaches 2 GB."""
    if result.slot_mode:
        return 1.0, "map slots"
    peak = max((max(used, fair) for _t, queues, _b in result.samples for used, fair in queues.values()),
               default=0.0)
    return (1024.0, "memory (GB)") if peak >= 2048 else (1.0, "memory (MB)")


def busy_label(result) -> str:
    """What the utilization plot's percentage is of (Result.total_slots)."""
    return "slots busy (%)" if result.slot_mode else "vcores in use (%)"


# ------------------------------------------------------------ figures
def figures(report: dict, runs) -> list[tuple[str, object]]:
    """The delay-scheduling scenarios' and traces' plots (sim/report.py)."""
    out = []
    sc = report["scenario"]
    if sc == "small-jobs":
        out.append(("locality.png", small_jobs_locality(report)))
    if sc == "sticky-slots":
        out.append(("locality.png", sticky_locality(report)))
    if sc == "macro":
        out.append(("response_times.png", macro_response_times(report)))
    if runs:
        out.append(("utilization.png", utilization(runs)))
        out.append(("shares.png", shares(*runs[-1])))
    return out


def grouped_bars(ax, groups: list, series: dict[str, list[float]]) -> None:
    """One bar per series in each group, the groups' names under them."""
    width = 0.8 / max(1, len(series))
    for k, (name, vals) in enumerate(series.items()):
        ax.bar([i + k * width for i in range(len(groups))], vals, width, label=name)
    ax.set_xticks([i + width * (len(series) - 1) / 2 for i in range(len(groups))], [str(g) for g in groups])


def small_jobs_locality(report: dict):
    fig, (ax,) = new_figure()
    policies = report["policies"]
    sizes = sorted({r["job_maps"] for r in report["locality"]})
    series = {pol: [100 * next((r["node_local"] for r in report["locality"]
                                if r["job_maps"] == s and r["policy"] == pol), 0) for s in sizes]
              for pol in policies}
    grouped_bars(ax, [f"{s} maps" for s in sizes], series)
    width = 0.8 / max(1, len(policies))
    for k, pol in enumerate(policies):
        pts = [(i + k * width, 100 * p[pol]["node_local"]) for i, s in enumerate(sizes)
               for p in report.get("paper", []) if p["job_maps"] == s and pol in p]
        if pts:
            ax.scatter(*zip(*pts), marker="_", s=400, color="black", zorder=3,
                       label="the paper's figure" if k == 0 else None)
    ax.set_xlabel("job size")
    ax.set_ylabel("node-local maps (%)")
    ax.set_ylim(0, 105)
    ax.set_title("Map locality by job size")
    legend_outside(fig, ax)
    return fig


def sticky_locality(report: dict):
    fig, (ax,) = new_figure()
    for pol in report["policies"]:
        rows = sorted((r["concurrent_jobs"], r["node_local"]) for r in report["sticky_slots"] if r["policy"] == pol)
        ax.plot([a for a, _ in rows], [100 * b for _, b in rows], marker="o", label=pol)
    ax.set_xlabel("concurrent jobs")
    ax.set_ylabel("node-local maps (%)")
    ax.set_ylim(0, 105)
    ax.set_title("Map locality by number of concurrent jobs")
    legend_outside(fig, ax)
    return fig


def macro_response_times(report: dict):
    workloads = sorted({r["workload"] for r in report["response_times"]})
    fig, axes = new_figure(len(workloads), cols=len(workloads), width=4.5 * len(workloads) + 1.5)
    for ax, w in zip(axes, workloads):
        bins = sorted({r["bin"] for r in report["response_times"] if r["workload"] == w},
                      key=lambda b: int(str(b).split()[-1]))
        series = {pol: [next((r["mean"] for r in report["response_times"] if r["workload"] == w
                              and r["policy"] == pol and r["bin"] == b), 0) for b in bins]
                  for pol in report["policies"]}
        grouped_bars(ax, [str(b).split()[-1] for b in bins], series)
        ax.set_yscale("log")
        ax.set_title(f"{w} workload")
        ax.set_xlabel("bin (job size class)")
        ax.set_ylabel("mean response time (s)")
    legend_outside(fig)
    return fig


def _experiment(exp) -> str:
    return " ".join(f"{k}={v}" for k, v in exp.key.items())


def utilization(runs):
    """One panel per experiment (the first MAX_RUN_PANELS), a line per policy."""
    by_exp: dict[str, list] = {}
    for exp, res in runs:
        by_exp.setdefault(_experiment(exp), []).append(res)
    names = list(by_exp)[:MAX_RUN_PANELS]
    cols = min(3, len(names))
    fig, axes = new_figure(len(names), cols=cols, width=3.2 * cols + 1.5, height=2.8, sharey=True)
    for ax, name in zip(axes, names):
        for res in by_exp[name]:
            u = metrics.utilization(res)
            ax.plot([t for t, _ in u], [100 * x for _, x in u], lw=1, label=res.label)
        ax.set_title(name, fontsize="medium")
        ax.set_xlabel("simulated time (s)")
        ax.set_ylabel(busy_label(by_exp[name][0]))
        ax.set_ylim(0, 105)
    more = len(by_exp) - len(names)
    fig.suptitle("Cluster utilization over time" + (f" (the first {len(names)} of {len(by_exp)} experiments)"
                                                     if more else ""))
    legend_outside(fig)
    return fig


def shares(exp, res):
    """One run's busiest queues, one panel each: what the queue held (solid)
    against its fair share (dashed), in the run's unit."""
    totals: dict[str, float] = {}
    for _t, queues, _b in res.samples:
        for name, (used, _fair) in queues.items():
            totals[name] = totals.get(name, 0.0) + used
    top = sorted(totals, key=lambda q: (-totals[q], q))[:MAX_QUEUE_PANELS]
    div, unit = share_unit(res)
    times = [t for t, _q, _b in res.samples]
    cols = 2 if len(top) > 1 else 1
    fig, axes = new_figure(max(1, len(top)), cols=cols, width=3.6 * cols + 1.5, height=2.2,
                           sharex=True, sharey=True)
    for ax, name in zip(axes, top):
        used = [queues.get(name, (0.0, 0.0))[0] / div for _t, queues, _b in res.samples]
        fair = [queues.get(name, (0.0, 0.0))[1] / div for _t, queues, _b in res.samples]
        ax.plot(times, used, lw=1.2, color="C0", label="in use")
        ax.plot(times, fair, lw=1.0, ls="--", color="C3", label="fair share")
        ax.set_title(name, fontsize="medium")
        ax.set_xlabel("simulated time (s)")
        ax.set_ylabel(unit)
    peak = max((max(u, f) for _t, queues, _b in res.samples for u, f in queues.values()), default=0.0) / div
    axes[0].set_ylim(0, 1.05 * peak if peak > 0 else 1.0)  # shared by every panel
    if not top:
        axes[0].set_xlabel("simulated time (s)")
        axes[0].set_ylabel(unit)
        axes[0].text(0.5, 0.5, "no queue ran anything", ha="center", va="center", transform=axes[0].transAxes)
    more = len(totals) - len(top)
    fig.suptitle(f"Queues' usage against their fair share ({res.label}"
                 + (f", {_experiment(exp)}" if exp.key else "") + ")"
                 + (f": the {len(top)} busiest of {len(totals)} queues" if more else ""))
    legend_outside(fig)
    return fig
