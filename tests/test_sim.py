"""The simulator: the live engine in simulated time, its scenarios, reports
and the replay contract."""

from __future__ import annotations

import json
import random

import pytest

from slotwise.cli import main
from slotwise.eventlog import EventLog, read_events
from slotwise.settings import EngineSettings
from slotwise.sim import metrics
from slotwise.sim.hdfs import place_blocks
from slotwise.sim.policies import variant
from slotwise.sim.replay import replay
from enginecheck import tap_engine
from slotwise.sim.runner import run_scenario
from slotwise.sim.results import NODE, SimSettings
from slotwise.sim.simulator import Simulation
from slotwise.sim.traces import dump_jsonl
from slotwise.sim.workload import ClusterSpec, JobSpec, Workload
from slotwise.resources import Resource


def small_workload(seed=1, jobs=40, maps=(3, 10), reduces=1, cluster=None):
    rng = random.Random(seed)
    out, t = [], 0.0
    for i in range(jobs):
        t += rng.expovariate(0.5)
        n = rng.choice(maps)
        out.append(JobSpec(f"j{i:03d}", t, [rng.uniform(5, 15) for _ in range(n)],
                           [rng.uniform(5, 10) for _ in range(reduces)] if n >= 3 else [],
                           user=f"u{i % 4}", io=1.0, label=f"{n} maps"))
    return Workload(cluster or ClusterSpec(racks=2, nodes_per_rack=5, map_slots=2, reduce_slots=1), out, "small")


def settings(policy="fair+delay", delay=3.0, **kw):
    return variant(policy, EngineSettings(heartbeat_interval=1.0, preemption=False, **kw), delay).settings


def run(workload, policy="fair+delay", sim=None, **kw):
    return Simulation(workload, settings(policy, **kw), sim=sim or SimSettings(heartbeat_interval=1.0),
                      label=policy).run()


# ----------------------------------------------------------------- the model
def test_hdfs_placement_is_rack_aware():
    racks = {"/r1": [f"a{i}" for i in range(5)], "/r2": [f"b{i}" for i in range(5)],
             "/r3": [f"c{i}" for i in range(5)]}
    rack_of = {h: r for r, hs in racks.items() for h in hs}
    blocks = place_blocks(500, racks, 3, random.Random(0))
    for b in blocks:
        assert len(set(b)) == 3
        # First replica on one rack, the other two together on another.
        assert rack_of[b[0]] != rack_of[b[1]] == rack_of[b[2]]
    firsts = {b[0] for b in blocks}
    assert len(firsts) == 15  # spread over every node


def test_every_task_runs_once_and_reduces_follow_their_maps():
    w = small_workload()
    r = run(w)
    assert len(r.jobs) == 40 and all(j.finish is not None for j in r.jobs.values())
    for spec in w.jobs:
        mine = [t for t in r.tasks if t.job == spec.job_id]
        maps = [t for t in mine if t.kind == "map"]
        reds = [t for t in mine if t.kind == "reduce"]
        assert len(maps) == len(spec.maps) and len(reds) == len(spec.reduces)
        if reds:
            assert min(t.start for t in reds) >= max(t.end for t in maps)
        assert r.jobs[spec.job_id].finish == max(t.end for t in mine)
    # Never more tasks on a node than it has slots, at any instant.
    for host in {t.node for t in r.tasks}:
        edges = sorted([(t.start, 1) for t in r.tasks if t.node == host and t.kind == "map"]
                       + [(t.end, -1) for t in r.tasks if t.node == host and t.kind == "map"])
        level = peak = 0
        for _, d in edges:
            level += d
            peak = max(peak, level)
        assert peak <= 2


def test_remote_reads_are_slower_and_slow_nodes_slower_still():
    sim = SimSettings(heartbeat_interval=1.0, rack_read_slowdown=2.0, off_rack_read_slowdown=4.0)
    # Inputs on h1, h2 (rack r1) and on x9, a host outside the cluster; h1
    # fails before its first heartbeat, so its maps read from h2's rack.
    cluster = ClusterSpec(hosts=[("h1", "/r1"), ("h2", "/r1")], map_slots=2, reduce_slots=0)
    spec = JobSpec("j", 0.0, [10.0] * 12, user="u", io=0.5,
                   map_hosts=[("h1",)] * 4 + [("h2",)] * 4 + [("x9",)] * 4)
    r = run(Workload(cluster, [spec]), "fair", sim=SimSettings(**{**vars(sim), "node_failures": 1,
                                                                  "failure_window": (0.0, 1e-6),
                                                                  "repair_time": None}))
    by_level = {}
    for t in r.tasks:
        by_level.setdefault(t.locality, set()).add(round(t.end - t.start, 6))
    assert by_level == {NODE: {10.0}, 1: {15.0}, 2: {25.0}}  # 10 * (1 + 0.5 * (slowdown - 1))
    w = Workload(ClusterSpec(racks=1, nodes_per_rack=2, map_slots=2, reduce_slots=0),
                 [JobSpec("j", 0.0, [10.0] * 8, user="u", io=0.5)])
    slow = run(w, "fair", sim=SimSettings(heartbeat_interval=1.0, slow_nodes=1.0, slow_factor=3.0))
    assert min(t.end - t.start for t in slow.tasks) == pytest.approx(30.0)


def test_failed_nodes_lose_their_tasks_which_run_again():
    w = small_workload(jobs=30)
    r = run(w, sim=SimSettings(heartbeat_interval=1.0, node_failures=3, failure_window=(5.0, 40.0),
                               repair_time=30.0))
    assert r.failed_tasks > 0
    assert all(j.finish is not None for j in r.jobs.values())
    for spec in w.jobs:  # every task still completed exactly once
        assert sum(1 for t in r.tasks if t.job == spec.job_id) == len(spec.maps) + len(spec.reduces)


def test_yarn_mode_packs_by_memory():
    jobs = [JobSpec(f"j{i}", 0.0, [10.0] * 8, user=f"u{i}", map_resource=Resource(2048, 1)) for i in range(3)]
    w = Workload(ClusterSpec(hosts=[("h1", "/r1"), ("h2", "/r1")], node_resource=Resource(4096, 8)), jobs)
    r = run(w, "fair")
    assert len(r.tasks) == 24
    for host in ("h1", "h2"):
        starts = [t for t in r.tasks if t.node == host]
        for t in starts:  # two 2 GB maps fit a 4 GB node at once, not three
            overlapping = [u for u in starts if u.start <= t.start < u.end]
            assert len(overlapping) <= 2


# ------------------------------------------------------------ what it shows
def test_delay_scheduling_raises_locality_for_small_jobs():
    report, _ = run_scenario("small-jobs", seed=2, scale=0.05)
    rows = {(r["policy"], r["job_maps"]): r for r in report["locality"]}
    for size in (3, 10, 100):
        assert rows[("fair+delay", size)]["node_local"] > rows[("fair", size)]["node_local"]
    assert rows[("fair", 3)]["node_local"] < 0.2
    assert rows[("fair+delay", 3)]["node_local"] > 0.7
    for r in report["locality"]:
        assert set(r) >= {"policy", "job_maps", "node_local", "rack_local"}
        assert 0 <= r["node_local"] <= r["rack_local"] <= 1


def test_sticky_slots_hurt_fair_sharing_without_delay():
    report, _ = run_scenario("sticky-slots", seed=0, scale=0.1)
    rows = {(r["policy"], r["concurrent_jobs"]): r["node_local"] for r in report["sticky_slots"]}
    assert rows[("fair", 50)] < rows[("fair", 5)]  # more jobs, stickier slots, worse locality
    assert all(rows[("fair+delay", n)] > 0.9 for n in (5, 50))


def test_fair_shares_converge_for_a_newcomer_and_fifo_makes_it_wait():
    """One big job fills the cluster; a second queue's job arrives later.
    Fair sharing hands it half the slots as tasks finish; FIFO does not."""
    cluster = ClusterSpec(racks=1, nodes_per_rack=10, map_slots=2, reduce_slots=0)
    jobs = [JobSpec("big", 0.0, [10.0] * 400, user="alice", io=0.0),
            JobSpec("late", 30.0, [10.0] * 100, user="bob", io=0.0)]
    sim = SimSettings(heartbeat_interval=1.0, sample_interval=1.0)
    fair = run(Workload(cluster, [JobSpec(**vars(j)) for j in jobs]), "fair", sim=sim)
    fifo = run(Workload(cluster, [JobSpec(**vars(j)) for j in jobs]), "fifo", sim=sim)
    ttfs = {r["queue"]: r["seconds"] for r in metrics.time_to_fair_share(fair)}
    assert ttfs["root.bob"] is not None and ttfs["root.bob"] <= 15.0
    late_fair = [t.start for t in fair.tasks if t.job == "late"]
    late_fifo = [t.start for t in fifo.tasks if t.job == "late"]
    assert min(late_fair) < 42.0
    assert min(late_fifo) >= max(t.start for t in fifo.tasks if t.job == "big")
    # Once both run, each queue holds about half the 20 slots.
    mid = [queues for t, queues, _ in fair.samples if 50 <= t <= 110]
    assert mid and all(abs(p["root.bob"][0] - 10) <= 2 for p in mid)


def test_same_seed_same_report_other_seed_other_report(tmp_path):
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    for out, seed in ((a, 5), (b, 5), (c, 6)):
        assert main(["simulate", "small-jobs", "--scale", "0.03", "--seed", str(seed), "--out", str(out), "-q"]) == 0
    assert (a / "report.json").read_bytes() == (b / "report.json").read_bytes()
    assert (a / "report.md").read_bytes() == (b / "report.md").read_bytes()
    assert (a / "report.json").read_bytes() != (c / "report.json").read_bytes()
    report = json.loads((a / "report.json").read_text())
    assert {r["policy"] for r in report["locality"]} == {"fair", "fair+delay"}
    assert {r["job_maps"] for r in report["locality"]} == {3, 10, 100}
    for png in ("locality.png", "utilization.png", "shares.png"):
        assert (a / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_macro_compares_fifo_fair_and_delay(tmp_path, capsys):
    assert main(["simulate", "macro", "--scale", "0.1", "--out", str(tmp_path), "-q"]) == 0
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["policies"] == ["fifo", "fair", "fair+delay"]
    assert {r["workload"] for r in report["response_times"]} == {"io", "cpu", "mixed"}
    assert {r["policy"] for r in report["speedup"]} == {"fair", "fair+delay"}
    assert all(r["jobs_finished"] == r["jobs"] for r in report["runs"])
    assert (tmp_path / "response_times.png").exists()
    assert "real time" in capsys.readouterr().out


def test_trace_runs_from_the_cli_and_bad_traces_name_file_and_line(tmp_path, capsys):
    trace = tmp_path / "jobs.jsonl"
    dump_jsonl(small_workload(jobs=10), str(trace))
    assert main(["simulate", "trace", "--trace", str(trace), "--policy", "fifo", "--policy", "fair",
                 "--out", str(tmp_path / "out"), "-q"]) == 0
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert [r["policy"] for r in report["runs"]] == ["fifo", "fair"]
    assert all(r["jobs_finished"] == 10 for r in report["runs"])
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"job": "a", "submit": 0, "maps": [1]}\n{"job": "b", "submit": 0, "maps": [-1]}\n')
    capsys.readouterr()
    assert main(["simulate", "trace", "--trace", str(bad), "--out", str(tmp_path / "o2"), "-q"]) == 1
    err = capsys.readouterr().err
    assert f"{bad}:2" in err and "maps" in err
    assert main(["simulate", "no-such-scenario", "-q"]) == 2
    assert main(["simulate", "small-jobs", "--policy", "lottery", "-q"]) == 1


# ------------------------------------------------------------ the contract
@pytest.mark.parametrize("cluster", [
    ClusterSpec(racks=2, nodes_per_rack=4, map_slots=2, reduce_slots=1),  # two engines (maps, reduces)
    ClusterSpec(racks=2, nodes_per_rack=4, node_resource=Resource(4096, 4)),  # one YARN engine
], ids=["slots", "yarn"])
def test_replaying_the_log_feeds_the_engine_the_same_calls(tmp_path, cluster):
    """The simulator drives the engine through the bridge's protocol and logs
    each message; replaying the log must hand a fresh engine the very same
    calls, at the same instants, and get the very same decisions."""
    log_path = tmp_path / "events.jsonl"
    log = EventLog(str(log_path))
    w = small_workload(jobs=25, cluster=cluster)
    sim = Simulation(w, settings(), sim=SimSettings(heartbeat_interval=1.0, node_failures=1,
                                                     failure_window=(10, 30), repair_time=20),
                     event_log=log, record_inputs=True)
    live_calls = {f.core.stream: [] for f in sim.feeds}
    for f in sim.feeds:
        tap_engine(f.core, live_calls[f.core.stream])
    sim.run()
    log.close()
    replay_calls = {s: [] for s in live_calls}
    result = replay(read_events(str(log_path)),
                    taps={s: (lambda core, s=s: tap_engine(core, replay_calls[s])) for s in live_calls})
    assert result.calls > 100
    for stream in live_calls:
        assert len(live_calls[stream]) > 100
        assert replay_calls[stream] == live_calls[stream]
    assert result.recorded_assignments and result.matches, result.first_difference()
    assert {c[1] for c in live_calls[next(iter(live_calls))]} >= {"add_node", "add_app", "update_requests",
                                                                   "container_finished",
                                                                   "heartbeat", "update", "remove_node"}


def test_replay_under_another_config_reports_the_difference(tmp_path, capsys):
    log_path = tmp_path / "events.jsonl"
    trace = tmp_path / "jobs.jsonl"
    dump_jsonl(small_workload(jobs=12), str(trace))
    assert main(["simulate", "trace", "--trace", str(trace), "--policy", "fair+delay", "--event-log",
                 str(log_path), "--out", str(tmp_path / "out"), "-q"]) == 0
    assert main(["replay", str(log_path)]) == 0
    assert "decisions identical" in capsys.readouterr().out
    alloc = tmp_path / "alloc.xml"
    alloc.write_text("<allocations><queue name='u0'><maxRunningApps>0</maxRunningApps></queue>"
                     "</allocations>")
    assert main(["replay", str(log_path), "--allocations", str(alloc)]) == 0
    assert "decisions differ" in capsys.readouterr().out
    assert main(["replay", str(log_path), "--json"]) == 0
    same = json.loads(capsys.readouterr().out)
    assert same["identical"] and same["first_difference"] is None and same["assignments"] == \
        same["recorded_assignments"] > 0
    assert main(["replay", str(log_path), "--allocations", str(alloc), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["first_difference"]


def test_replay_covers_reloads_and_admin_actions(tmp_path):
    """A live log with a config reload, an admin move and a priority change
    in it replays to the same engine calls and decisions."""
    from slotwise.clock import ManualClock
    from slotwise.config import parse_allocations
    from slotwise.core import PolicyCore
    from wiretools import app as wapp, node, payload, req

    first = "<allocations><queue name='a'><weight>3</weight></queue><queue name='b'/></allocations>"
    second = "<allocations><queue name='a'><weight>4</weight></queue><queue name='b'/></allocations>"
    log_path = tmp_path / "events.jsonl"
    log = EventLog(str(log_path))
    clock = ManualClock(10.0)
    core = PolicyCore(parse_allocations(first, "f.xml"), EngineSettings(preemption=False), clock, log,
                      record_inputs=True, config_text=first)
    live = []
    tap_engine(core, live)
    app = lambda i, q: wapp(f"app{i}", q, [req(0, 1024, 1, 8)], user=f"u{i}", submit_ms=i * 1000)
    first_ids = [a.container_id for a in core.handle_heartbeat(payload(
        10_000, nodes=[node("n1", "h1", "/r", 4096, 4)], apps=[app(1, "root.a"), app(2, "root.b")], node="n1"))]
    clock.advance(1)
    second_ids = [a.container_id for a in core.handle_heartbeat(payload(11_000, finished=first_ids[:2], node="n1"))]
    core.set_config(parse_allocations(second, "f.xml"), second)
    core.actions.move("app2", "root.a")
    core.actions.priority("app1", 2)
    clock.advance(1)
    core.handle_update(payload(12_000))
    core.handle_heartbeat(payload(12_000, finished=(first_ids[2:] + second_ids)[:2], node="n1"))
    log.close()
    replayed = []
    # The recording carries the allocation file: no --allocations needed.
    result = replay(str(log_path), taps={None: lambda c: tap_engine(c, replayed)})
    assert result.matches and len(result.assignments) == 8, result.first_difference()
    assert not replay(str(log_path), config=parse_allocations("<allocations/>", "other.xml")).matches
    assert replayed == live
    names = {c[1] for c in live}
    assert {"move_app", "set_app_priority", "set_config"} <= names
    assert result.calls == 7


def test_a_node_back_from_failure_is_back_in_the_engine():
    """Its removal reaches the engine before its return, even when nothing
    else happened in between (an idle cluster sends no heartbeat calls)."""
    cluster = ClusterSpec(hosts=[("h1", "/r1"), ("h2", "/r1")], map_slots=2, reduce_slots=0)
    jobs = [JobSpec("j0", 0.0, [5.0] * 2, user="a"), JobSpec("j1", 1000.0, [50.0] * 16, user="b")]
    sim = Simulation(Workload(cluster, jobs), settings("fair"),
                     sim=SimSettings(heartbeat_interval=1.0, node_failures=1, failure_window=(100, 110),
                                     repair_time=0.5))  # back before its next beat was due
    r = sim.run()
    nodes = set()
    sim.feeds[0].core.trace_engine_calls(lambda e: nodes.update(e.nodes))
    assert nodes == {"h1", "h2"}
    assert {t.node for t in r.tasks if t.job == "j1"} == {"h1", "h2"}
    # One heartbeat chain per node, old lives' beats dropped.
    pending = [e for e in sim._events if e[1] == 5]
    assert len(pending) <= 2
