"""Locality as a target in the simulator: the paper's small jobs under
``fair+target`` (every queue asking for 90% data-local) reach it within 5
points, on the same code the live scheduler runs."""

from __future__ import annotations

import pytest

from slotwise.sim.runner import run_scenario


@pytest.mark.parametrize("seed", [0, 1])
def test_small_jobs_reach_the_target_within_five_points(seed):
    report, _ = run_scenario("small-jobs", ["fair", "fair+target"], seed=seed, scale=0.25)
    runs = {(r["policy"], r["job_maps"]): r for r in report["runs"]}
    for maps in (3, 10):
        got = runs[("fair+target", maps)]["locality"]["node_local"]
        assert abs(got - 0.9) <= 0.05, (maps, got)
        # and it pays: without any wait these jobs barely run data-local, and wait longer for it
        assert runs[("fair", maps)]["locality"]["node_local"] < 0.5
        assert runs[("fair+target", maps)]["mean_response"] < runs[("fair", maps)]["mean_response"]
