"""Speculation in the simulator (first copy wins, the others die, their
slots come back) and Hopper's scenario (same seed, same report; Hopper
ahead of fair sharing with the same speculation)."""

import json
import random

import pytest

from slotwise.config.model import AllocationConfig, QueueConfig, default_placement_rules
from slotwise.settings import EngineSettings
from slotwise.sim import hopper
from slotwise.sim.results import SimSettings
from slotwise.sim.simulator import Simulation
from slotwise.sim.workload import ClusterSpec, JobSpec, Workload, pareto_draw


def one_queue(policy="fair"):
    cfg = AllocationConfig()
    cfg.placement_rules = default_placement_rules()
    cfg.root.children.append(QueueConfig("root.jobs", scheduling_policy=policy))
    return cfg


def sim_of(jobs, speculation="late", nodes=1, slots=4, cap=1.0, policy="fair", **kw):
    w = Workload(ClusterSpec(racks=1, nodes_per_rack=nodes, map_slots=slots, reduce_slots=1), jobs)
    settings = EngineSettings(heartbeat_interval=1.0, preemption=False, node_locality_delay=0,
                              rack_locality_delay=0)
    return Simulation(w, settings, one_queue(policy), SimSettings(heartbeat_interval=1.0, speculation=speculation,
                                                                 speculative_cap=cap, **kw))


def job(job_id, maps, submit=0.0, reduces=()):
    return JobSpec(job_id, submit, list(maps), list(reduces), queue="root.jobs", io=0.0,
                   map_hosts=[()] * len(maps))


def idle(sim):
    return all(n.free == list(n.capacity) for n in sim.nodes.values()) and not sim.containers


def test_a_straggler_gets_a_copy_the_first_copy_wins_and_the_other_dies():
    sim = sim_of([job("j", [10, 10, 10, 200])])
    sim._copy_time = lambda j, kind: 20.0  # a fresh copy takes 20 s
    res = sim.run()
    # Three maps done at ~10 s (typical 10); the fourth has ~190 s left: it is
    # copied at the next heartbeat and the copy wins at ~31-33 s.
    assert res.speculative == 1 and res.speculative_won == 1 and res.copies_killed == 1
    assert res.jobs["j"].finish == pytest.approx(32, abs=2.5)
    assert idle(sim)  # the loser's slot was freed
    assert len(res.tasks) == 4  # one record per task: the winners


def test_the_original_wins_when_the_copy_is_slower():
    sim = sim_of([job("j", [10, 10, 10, 40])])
    sim._copy_time = lambda j, kind: 100.0
    res = sim.run()
    assert res.speculative == 1 and res.speculative_won == 0 and res.copies_killed == 1
    assert res.jobs["j"].finish == pytest.approx(40, abs=1.5)
    assert idle(sim)


def test_no_speculation_and_no_copy_for_tasks_near_their_end():
    res = sim_of([job("j", [10, 10, 10, 200])], speculation="none").run()
    assert res.speculative == 0 and res.jobs["j"].finish == pytest.approx(200, abs=1.5)
    # 12 s: less left after the first 10 s finish than a typical task takes.
    sim = sim_of([job("j", [10, 10, 10, 12])])
    sim._copy_time = lambda j, kind: 1.0
    assert sim.run().speculative == 0


def test_the_cap_limits_copies_running_at_once():
    jobs = [job("j", [10] * 4 + [300] * 4)]
    free = sim_of(jobs, slots=12, cap=1.0)
    free._copy_time = lambda j, kind: 50.0
    capped = sim_of(jobs, slots=12, cap=1 / 13)  # 13 slots (12 map, 1 reduce): one copy at a time
    capped._copy_time = lambda j, kind: 50.0
    a, b = free.run(), capped.run()
    assert a.speculative == 4 and a.jobs["j"].finish == pytest.approx(61, abs=3)
    # One after another: four copies of 50 s end past 200 s.
    assert b.jobs["j"].finish > 200


def test_a_preempted_or_lost_copy_leaves_the_other_running():
    sim = sim_of([job("j", [10, 10, 10, 200])])
    sim._copy_time = lambda j, kind: 50.0
    # At 20 s the copy runs beside the original: kill the copy only.
    seen = {}

    def kill_copy(s):
        copies = [cid for cid, r in s.containers.items() if r.copy]
        seen["copies"] = len(copies)
        for cid in copies:
            s._kill(cid)

    sim.at(20.0, kill_copy)
    res = sim.run()
    assert seen["copies"] == 1
    # The original went on (no requeue); a new copy may start and win.
    assert res.failed_tasks == 1
    assert res.jobs["j"].finish is not None and idle(sim)


def test_reduces_are_speculated_too_and_requeue_by_index():
    sim = sim_of([job("j", [5, 5], reduces=[10, 10, 10, 300])], nodes=5, slots=2, cap=1.0)
    sim._copy_time = lambda j, kind: 30.0
    res = sim.run()
    assert res.speculative >= 1 and res.jobs["j"].finish < 100
    assert idle(sim)


def test_bounded_pareto_draws_stay_within_bounds_and_keep_the_tail():
    rng = random.Random(1)
    xs = [pareto_draw(rng, 10, 1.4, 300) for _ in range(20000)]
    assert min(xs) >= 10 and max(xs) <= 300
    assert hopper.mean_task_time(1.4) == pytest.approx(sum(xs) / len(xs), rel=0.03)


def test_hopper_estimates_beta_online_without_speculation():
    """With no copies killed, finished containers are the tasks' own times:
    the online estimate comes near the workload's beta."""
    setup = hopper.Setup(jobs=150, beta=1.4)
    res = hopper.run(setup, hopper.Policy("hopper-nospec", "hopper", "none", 1.0))
    # Bounded at 30 x_m, the tail is a little lighter than Pareto(1.4).
    assert res.beta_estimate == pytest.approx(1.4, rel=0.12)


def test_same_seed_same_report_and_hopper_beats_fair_with_speculation(tmp_path):
    a = hopper.run_all(seed=1, scale=0.16, sweeps=False)
    b = hopper.run_all(seed=1, scale=0.16, sweeps=False)
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    rows = {r["policy"]: r for r in a["jct"]}
    assert set(rows) == {p.name for p in hopper.POLICIES}
    for r in rows.values():
        assert r["finished"] == r["jobs"] == 80
        assert set(r["bins"]) == {"1-10", "11-50", "51-150", ">150"}
        assert r["p50_jct"] <= r["p90_jct"]
    assert rows["hopper(eps=1)"]["mean_jct"] < rows["fair+late"]["mean_jct"]
    assert rows["fair+late"]["mean_jct"] < rows["fair"]["mean_jct"]  # speculation pays here
    assert rows["fair+late"]["speculative_copies"] > 0 and rows["fair"]["speculative_copies"] == 0
    written = hopper.write(str(tmp_path), a)
    assert any(p.endswith("hopper-jct-by-size.png") for p in written)
    assert "| hopper(eps=1) |" in (tmp_path / "report.md").read_text()


def test_simulate_hopper_cli(tmp_path, monkeypatch):
    from slotwise.cli import main

    out = tmp_path / "out"
    code = main(["simulate", "hopper", "--scale", "0.05", "--out", str(out), "-q"])
    assert code == 0
    report = json.loads((out / "report.json").read_text())
    assert [r["policy"] for r in report["jct"]][:3] == ["fair+late", "srpt+late", "hopper(eps=1)"]
    assert {"policy", "mean_jct", "p50_jct", "p90_jct", "bins"} <= set(report["jct"][0])
    assert report["sweep_beta"] and report["sweep_load"]


def test_unknown_speculation_is_refused():
    with pytest.raises(ValueError, match="unknown speculation"):
        sim_of([job("j", [1])], speculation="mantri")


def test_a_recorded_hopper_run_replays_to_the_same_decisions(tmp_path):
    """Hopper's state (the containers it times, beta) comes from the inputs,
    and its settings are in the recording: a replay decides the same."""
    from slotwise.eventlog import EventLog
    from slotwise.policies.hopper import HopperSettings
    from slotwise.sim.replay import replay

    from slotwise.config import parse_allocations

    text = ('<?xml version="1.0"?>\n<allocations>\n  <queue name="jobs">\n'
            '    <schedulingPolicy>hopper</schedulingPolicy>\n  </queue>\n</allocations>\n')
    setup = hopper.Setup(jobs=25, seed=2)
    path = tmp_path / "events.jsonl"
    log = EventLog(str(path))
    sim = Simulation(hopper.workload(setup),
                     EngineSettings(heartbeat_interval=3.0, preemption=False, update_interval=1.0,
                                    node_locality_delay=0, rack_locality_delay=0),
                     parse_allocations(text, "jobs.xml"),
                     SimSettings(heartbeat_interval=3.0, seed=2, speculation="late", speculative_cap=1.0),
                     event_log=log, record_inputs=True, config_text=text,
                     services={"hopper": HopperSettings(epsilon=0.5)})
    res = sim.run()
    log.close()
    assert res.speculative > 0
    out = replay(str(path))
    assert out.assignments and out.matches, out.first_difference()
    # Another epsilon decides otherwise: the recorded settings matter.
    text = path.read_text().replace('"epsilon":0.5', '"epsilon":1.0')
    other = tmp_path / "other.jsonl"
    other.write_text(text)
    assert not replay(str(other)).matches
