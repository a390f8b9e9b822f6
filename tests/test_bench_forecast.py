"""The forecast benchmark's scoring: what counts as a right forecast (25%
of the time to the event, or 30 s), the naive queue-position ETA it is set
beside, and the rows its report and goals are read from."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_forecast.py"
spec = importlib.util.spec_from_file_location("bench_forecast", BENCH)
bench = importlib.util.module_from_spec(spec)
sys.modules.setdefault("bench_forecast", bench)  # its dataclasses look themselves up there
spec.loader.exec_module(bench)


def test_a_forecast_is_right_within_a_quarter_of_the_time_to_the_event_or_30_s():
    # 200 s ahead: 50 s off is right, 51 s is not (strictly); 20 s ahead, 29 s off is right by the floor only.
    assert bench.right(1250.0, 1200.0, 1000.0) == {"scored": True, "err_s": 50.0, "within_25pct": True,
                                                   "strict_25pct": True, "within_60s": True}
    late = bench.right(1251.0, 1200.0, 1000.0)
    assert not late["within_25pct"] and not late["strict_25pct"] and late["within_60s"]
    near = bench.right(1049.0, 1020.0, 1000.0)
    assert near["within_25pct"] and not near["strict_25pct"]
    assert bench.right(None, 1200.0, 1000.0)["within_25pct"] is False  # no forecast is a miss
    assert bench.right(1200.0, None, 1000.0) == {"scored": False}      # the event never came: not scored


def test_the_naive_eta_is_the_apps_ahead_in_its_queue_times_the_mean_length():
    submitted = {"x": ("root.a", 1.0), "y": ("root.a", 2.0), "z": ("root.b", 3.0), "w": ("root.a", 4.0)}
    # At 10: x runs (started at 5), y has not started, z is in another queue: one app ahead of w.
    start, finish = bench.naive("w", "root.a", 10.0, submitted, {"x": 5.0}, [40.0, 60.0], None)
    assert (start, finish) == (60.0, 110.0)
    # Started already: its start is known, its end its start plus the mean length.
    assert bench.naive("x", "root.a", 10.0, submitted, {"x": 5.0}, [40.0, 60.0], 5.0) == (5.0, 55.0)
    # Nothing finished yet: it says start now (no length to multiply) and no finish.
    assert bench.naive("w", "root.a", 10.0, submitted, {"x": 5.0}, [], None) == (10.0, None)


def test_rows_count_the_scored_forecasts_and_their_median_error():
    marks = [bench.right(1010.0, 1000.0, 900.0), bench.right(1100.0, 1000.0, 900.0), bench.right(None, 1000.0, 900.0),
             bench.right(1000.0, None, 900.0)]
    row = bench.summarise("slotwise", "start", marks)
    assert row == {"predictor": "slotwise", "what": "start", "apps": 3, "within_25pct": 33.3, "strict_25pct": 33.3,
                   "within_60s": 33.3, "median_abs_err_s": 55.0, "no_forecast": 1}


def test_the_stream_is_seeded_and_mixes_the_three_kinds_as_6_4_2():
    jobs = bench.workload(3, 24)
    assert jobs == bench.workload(3, 24) and jobs != bench.workload(4, 24)
    kinds = [j.kind.name for j in jobs]
    assert (kinds.count("small"), kinds.count("medium"), kinds.count("large")) == (12, 8, 4)
    assert {j.queue for j in jobs} == set(bench.QUEUES) and jobs[0].at == 0.0
