"""The locality benchmark's readings: the JobTracker's slot use, the job
clients' counters (Hadoop 1 and 3 print them differently) and the
per-size rows its report and goals are computed from."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_locality.py"
spec = importlib.util.spec_from_file_location("bench_locality", BENCH)
bench = importlib.util.module_from_spec(spec)
sys.modules.setdefault("bench_locality", bench)  # its dataclasses look themselves up there
spec.loader.exec_module(bench)

# Hadoop 1.2.1's jobtracker.jsp, as the docker cluster's JobTracker served it
# mid-run (4 TaskTrackers of 2 map and 1 reduce slots).
JOBTRACKER_PAGE = """<h2>Cluster Summary (Heap Size is 123.75 MB/494.94 MB)</h2>
<table border="1" cellpadding="5" cellspacing="0">
<tr><th>Running Map Tasks</th><th>Running Reduce Tasks</th><th>Total Submissions</th><th>Nodes</th><th>Occupied Map Slots</th><th>Occupied Reduce Slots</th><th>Reserved Map Slots</th><th>Reserved Reduce Slots</th><th>Map Task Capacity</th><th>Reduce Task Capacity</th><th>Avg. Tasks/Node</th><th>Blacklisted Nodes</th><th>Graylisted Nodes</th><th>Excluded Nodes</th></tr>
<tr><td>6</td><td>0</td><td>11</td><td><a href="machines.jsp?type=active">4</a></td><td>6</td><td>0</td><td>0</td><td>0</td><td>8</td><td>4</td><td>3.00</td><td><a href="machines.jsp?type=blacklisted">0</a></td><td><a href="machines.jsp?type=graylisted">0</a></td><td><a href="machines.jsp?type=excluded">0</a></td></tr></table>
<h2>Scheduling Information</h2>
<table><tr><th>Queue Name</th></tr><tr><td>0</td></tr></table>
"""

HADOOP1_COUNTERS = """\
21:30:08 INFO  JobClient:   Job Counters 
21:30:08 INFO  JobClient:     Launched map tasks=3
21:30:08 INFO  JobClient:     SLOTS_MILLIS_MAPS=38754
21:30:08 INFO  JobClient:     Data-local map tasks=2
21:30:08 INFO  JobClient:     Rack-local map tasks=1
"""

HADOOP3_COUNTERS = """\
\tJob Counters 
\t\tLaunched map tasks=4
\t\tData-local map tasks=3
\t\tRack-local map tasks=1
\t\tTotal time spent by all map tasks (ms)=91910
"""


def test_jobtracker_summary_reads_columns_by_name_not_position():
    summary = bench.jobtracker_summary(JOBTRACKER_PAGE)
    assert summary["Occupied Map Slots"] == 6
    assert summary["Map Task Capacity"] == 8
    assert summary["Nodes"] == 4
    assert "Avg. Tasks/Node" not in summary  # not a whole number


def test_counters_of_both_hadoop_clients_are_read():
    one = {k: int(v) for k, v in bench.COUNTER.findall(HADOOP1_COUNTERS)}
    three = {k: int(v) for k, v in bench.COUNTER.findall(HADOOP3_COUNTERS)}
    assert (one["Launched map tasks"], one["Data-local map tasks"], one["Rack-local map tasks"]) == (3, 2, 1)
    assert (three["Launched map tasks"], three["Data-local map tasks"]) == (4, 3)


def result(job, maps, launched, data_local, rack_local, response=10.0):
    return {"job": job, "maps": maps, "queue": "prod", "exit": 0, "response_s": response,
            "launched": launched, "data_local": data_local, "rack_local": rack_local, "utilisation": 0.9}


def test_rows_count_maps_not_jobs_and_leave_out_jobs_without_counters():
    results = [result(0, 1, 1, 1, 0, 20.0), result(1, 3, 3, 1, 2, 40.0), result(2, 3, 0, 0, 0, 99.0),
               result(3, 10, 10, 6, 3, 60.0)]
    rows = {r["job_maps"]: r for r in bench.rows_of("yarn", "slotwise", results)}
    small = rows["<=3"]
    assert small["jobs"] == 2 and small["failed"] == 1
    assert small["data_local_pct"] == 50.0 and small["rack_local_pct"] == 50.0  # 2 of 4 maps
    assert small["mean_response_s"] == 30.0
    ten = rows["10"]
    assert (ten["data_local_pct"], ten["rack_local_pct"], ten["off_switch_pct"]) == (60.0, 30.0, 10.0)
    assert "50" not in rows


def test_utilisation_is_time_weighted_over_the_time_jobs_were_outstanding():
    # Busy 100% until 4 s, then 50% to the end at 6 s: (4 * 1 + 2 * 0.5) / 6.
    samples = [(2.0, 1.0), (4.0, 0.5)]
    assert abs(bench.time_weighted(samples, 6.0) - 5 / 6) < 1e-9
    assert abs(bench.time_weighted(samples, 3.0) - 1.0) < 1e-9  # the first 80% of a shorter span
    assert bench.time_weighted([], 6.0) is None
    rows = {r["job_maps"]: r for r in bench.rows_of("yarn", "slotwise", [
        {**result(0, 1, 1, 1, 0), "utilisation": 0.834, "utilisation_body": 0.9, "map_ms": 12000}])}
    assert rows["1"]["utilisation_pct"] == 83 and rows["1"]["utilisation_body_pct"] == 90
    assert rows["1"]["mean_map_s"] == 12.0


def test_map_times_by_locality_come_from_one_map_jobs_only():
    results = [{**result(0, 1, 1, 1, 0), "map_ms": 6000}, {**result(1, 1, 1, 0, 1), "map_ms": 8000},
               {**result(2, 1, 1, 0, 0), "map_ms": 18000}, {**result(3, 1, 1, 0, 0), "map_ms": 16000},
               {**result(4, 3, 3, 3, 0), "map_ms": 90000},   # 3 maps: which was where is not known
               {**result(5, 1, 2, 1, 0), "map_ms": 30000}]   # a speculative second attempt: left out
    assert bench.map_times_by_locality(results) == {"node-local": {"maps": 1, "mean_s": 6.0},
                                                    "rack-local": {"maps": 1, "mean_s": 8.0},
                                                    "off-rack": {"maps": 2, "mean_s": 17.0}}


def test_slotwise_target_asks_for_90_percent_node_local_in_both_file_formats():
    from slotwise.config import parse_allocations
    labels = {(s.cluster, s.label) for s in bench.SCHEDULERS}
    assert {("yarn", "slotwise-target"), ("mrv1", "slotwise-target")} <= labels
    assert "slotwise-target" in bench.QUICK
    target = next(s for s in bench.SCHEDULERS if s.label == "slotwise-target")
    for template in (bench.SLOTWISE_ALLOCATIONS, bench.MRV1_POOLS):
        assert parse_allocations(template.format(top=target.top)).default_locality_target == 0.9
        assert parse_allocations(template.format(top="")).default_locality_target is None
