"""The simulator speaks plainly: a progress line that counts, and plots an
operator can read (labelled axes with the run's unit, the legend clear of
the data, the fair share drawn beside what a queue used)."""

from __future__ import annotations

import io
import json
import re

import pytest

from slotwise.cli import main
from slotwise.sim import scenario_figures as plots
from slotwise.sim.runner import ProgressBar, run_experiments, run_scenario
from slotwise.sim.scenarios import Experiment
from slotwise.sim.results import SimSettings
from slotwise.sim.traces import dump_jsonl, load_trace
from test_sim_cli_report import two_queue_workload
from test_sim_traces import SLS

LINE = re.compile(r"run (\d+)/(\d+) (\S+) (.*?): (\d+)/(\d+) jobs done, simulated t=([\d,]+) s$")


def test_the_progress_line_counts_each_runs_jobs_and_simulated_time(tmp_path, capsys):
    trace = tmp_path / "two.jsonl"
    dump_jsonl(two_queue_workload(), str(trace))
    assert main(["simulate", "trace", "--trace", str(trace), "--policy", "fifo", "--policy", "fair",
                 "--out", str(tmp_path / "out")]) == 0
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    lines = [m.groups() for m in map(LINE.search, capsys.readouterr().err.splitlines()) if m]
    # Not a terminal: one line as each run ends (and every 10 s of a long one), with its real figures.
    assert [(g[0], g[1], g[2]) for g in lines] == [("1", "2", "fifo"), ("2", "2", "fair")]
    for g, run in zip(lines, report["runs"]):
        assert g[3] == "trace=two"
        assert (int(g[4]), int(g[5])) == (run["jobs_finished"], run["jobs"]) == (8, 8)
        assert int(g[6].replace(",", "")) == round(run["makespan"])


def test_a_run_cut_short_shows_how_far_it_got():
    stream = io.StringIO()
    exp = Experiment({"trace": "two"}, two_queue_workload(), SimSettings(heartbeat_interval=1.0, until=20.0))
    bar = ProgressBar(1, stream=stream, every=0.0)
    (_exp, res), = run_experiments([exp], ["fair"], 0.0, progress=bar)
    done = sum(1 for j in res.jobs.values() if j.finish is not None)
    assert 0 < done < 8
    last = LINE.search(stream.getvalue().splitlines()[-1]).groups()
    assert (int(last[4]), int(last[5]), int(last[6])) == (done, 8, round(res.end_time))
    assert res.end_time <= 20.0


# ------------------------------------------------------------------ plots
def assert_readable(fig) -> None:
    """Every panel labelled on both axes; one legend, the figure's, whose
    box overlaps no panel (so it hides no data)."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert panels
    for ax in panels:
        assert ax.get_xlabel() and ax.get_ylabel(), ax.get_title()
        assert ax.get_legend() is None
    assert len(fig.legends) == 1
    box = fig.legends[0].get_window_extent(renderer)
    for ax in panels:
        assert not box.overlaps(ax.get_window_extent(renderer)), ax.get_title()


@pytest.fixture(scope="module")
def small_jobs():
    return run_scenario("small-jobs", ["fair", "fair+delay"], seed=1, scale=0.02)


def test_every_scenario_plot_is_labelled_with_its_legend_outside_the_data(small_jobs):
    named = plots.figures(*small_jobs)
    assert [n for n, _f in named] == ["locality.png", "utilization.png", "shares.png"]
    for _name, fig in named:
        assert_readable(fig)
    by_name = dict(named)
    # The utilization plot: a panel per experiment, a line per policy, in percent of the slots.
    util = [ax for ax in by_name["utilization.png"].axes if ax.get_visible()]
    assert [ax.get_title() for ax in util] == ["job_maps=3", "job_maps=10", "job_maps=100"]
    assert all(ax.get_ylabel() == "slots busy (%)" and ax.get_ylim() == (0, 105) for ax in util)
    assert [line.get_label() for line in util[0].get_lines()] == ["fair", "fair+delay"]


def test_a_slot_scenarios_shares_are_in_slots_against_a_dashed_fair_share(small_jobs):
    _report, runs = small_jobs
    exp, res = runs[-1]
    fig = plots.shares(exp, res)
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert 1 <= len(panels) <= plots.MAX_QUEUE_PANELS
    peak = 0.0
    for ax in panels:
        assert ax.get_ylabel() == "map slots"
        (used, fair) = ax.get_lines()
        assert (used.get_label(), fair.get_label(), fair.get_linestyle()) == ("in use", "fair share", "--")
        queue = ax.get_title()
        assert list(used.get_ydata()) == [q.get(queue, (0, 0))[0] for _t, q, _b in res.samples]
        assert list(fair.get_ydata()) == [q.get(queue, (0, 0))[1] for _t, q, _b in res.samples]
        assert max(fair.get_ydata()) > 0  # a queue that ran had a fair share
        peak = max(peak, max(used.get_ydata()), max(fair.get_ydata()))
    # Slots, not a memory axis from 0 to 0.1: the range fits what was drawn.
    assert panels[0].get_ylim() == pytest.approx((0, 1.05 * peak))
    assert peak >= 1


def test_a_memory_clusters_shares_are_in_megabytes_or_gigabytes(tmp_path):
    trace = tmp_path / "sls.json"
    trace.write_text(SLS)
    exp = Experiment({"trace": "sls"}, load_trace(str(trace)), SimSettings(heartbeat_interval=1.0))
    (exp, res), = run_experiments([exp], ["fair"], 0.0)
    assert not res.slot_mode
    peak = max(max(u, f) for _t, q, _b in res.samples for u, f in q.values())
    div, unit = plots.share_unit(res)
    assert (div, unit) == ((1024.0, "memory (GB)") if peak >= 2048 else (1.0, "memory (MB)"))
    fig = plots.shares(exp, res)
    assert_readable(fig)
    ax = next(ax for ax in fig.axes if ax.get_visible())
    assert ax.get_ylabel() == unit
    assert max(ax.get_lines()[0].get_ydata()) * div <= peak
    assert ax.get_ylim()[1] == pytest.approx(1.05 * peak / div)
    util = plots.utilization([(exp, res)])
    assert util.axes[0].get_ylabel() == "vcores in use (%)"


def test_the_hopper_and_dynamic_priority_plots_are_labelled_with_outside_legends():
    from slotwise.sim import dynamic_priority as dp
    from slotwise.sim import hopper

    for _name, fig in hopper.figures(hopper.run_all(seed=1, scale=0.05, sweeps=False)):
        assert_readable(fig)
    two = dp.two_users(seed=3, scale=0.1)
    levels = dp.service_levels(seed=1, scale=0.05, n_users=10, map_time=60.0, horizon=3000.0)
    report = {"two_users": two, "service_levels_compared": levels, "service_levels_80_compared": levels,
              "boost": dp.boost(seed=2, scale=0.05)}
    named = dp.figures(report, two["series"])
    assert [n for n, _f in named] == ["dp-budgets.png", "dp-completions.png", "dp-service-levels-10.png",
                                      "dp-service-levels-80.png", "dp-boost.png"]
    for _name, fig in named:
        assert_readable(fig)
