"""`slotwise simulate dynamic-priority`'s experiments, shrunk: the market on
the simulator's engines shows the paper's effects, deterministically."""

import json

from slotwise.sim import dynamic_priority as dp


def test_two_users_spend_four_to_one_run_out_and_differ_after_the_reset():
    r = dp.two_users(seed=3, scale=0.2)
    d = r["dynamic_priority"]
    assert d["queue1_budget_ran_out_s"] is not None and d["queue1_budget_ran_out_s"] < d["phase_s"]
    assert d["spending_ratio_q1_q2"] > 2.5  # twice the rate on more slots (paper ~4)
    assert d["spending_ratio_q1_q2_after_reset"] > 2.5
    assert d["completion_ratio_q1_q2_after_reset"] < 0.8  # queue1 faster once it pays again (paper 1/1.8)
    # Out of budget, queue1 does worse than while funded (here: it starves behind queue2's stream).
    funded = d["mean_completion_s"]["funded"]["queue1"]
    broke = d["mean_completion_s"]["queue1_out_of_budget"]["queue1"]
    assert broke is None or broke > funded
    assert 0.9 < r["fifo"]["completion_ratio_q1_q2"] < 1.1  # FIFO does not differentiate


def test_service_levels_follow_spending():
    r = dp.service_levels(seed=1, scale=0.15, n_users=10, map_time=60.0, horizon=12000.0)
    rows = r["rows"]["dynamic-priority"]
    shares = [x["obtained_share"] for x in rows]
    assert shares[-1] > 3 * shares[0]
    assert sum(shares[5:]) > 2 * sum(shares[:5])
    granted = [x["granted_share"] for x in rows]
    assert abs(sum(granted) - 1) < 1e-3


def test_boost_makes_the_boosted_job_faster():
    r = dp.boost(seed=2, scale=0.1)
    assert r["preemption"]["speedup"] > 1.5
    assert r["no_preemption"]["speedup"] > 1.3


def test_same_seed_same_figures(tmp_path):
    a = dp.two_users(seed=5, scale=0.1)
    b = dp.two_users(seed=5, scale=0.1)
    a.pop("series"), b.pop("series")
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def test_a_recorded_dp_run_with_rate_changes_replays_to_the_same_decisions(tmp_path):
    from slotwise.eventlog import EventLog
    from slotwise.sim.replay import replay
    from slotwise.sim.results import SimSettings
    from slotwise.sim.simulator import Simulation
    from slotwise.sim.workload import Workload
    from slotwise.settings import EngineSettings

    market = dp.new_market(True, {"queue1": 50.0, "queue2": 1000.0}, {"queue1": 2.0, "queue2": 1.0})
    streams = dp.Streams(["queue1", "queue2"], 20.0, 600.0, seed=4, in_flight=2)
    path = tmp_path / "events.jsonl"
    log = EventLog(str(path))
    sim = Simulation(Workload(dp.CLUSTER, streams.first()),
                     EngineSettings(heartbeat_interval=3.0, preemption=False, root_policy="dynamic-priority",
                                    node_locality_delay=0, rack_locality_delay=0),
                     dp.config_for(streams.users), SimSettings(heartbeat_interval=3.0, until=700.0, seed=4),
                     event_log=log, record_inputs=True, services={"market": market}, on_complete=streams.complete)
    sim.at(200.0, lambda s: market.set_spending("queue2", 5.0))
    sim.at(300.0, lambda s: market.add_budget("queue1", 500.0))
    res = sim.run()
    log.close()
    out = replay(str(path))
    assert out.assignments and out.matches, out.first_difference()
    # Without the recorded market changes the decisions differ: they matter.
    lines = [ln for ln in path.read_text().splitlines() if '"call":"market"' not in ln]
    stripped = tmp_path / "stripped.jsonl"
    stripped.write_text("\n".join(lines) + "\n")
    assert not replay(str(stripped)).matches
