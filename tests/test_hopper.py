"""Hopper's allocation (Algorithms 1-3) on cases worked by hand from the
paper's definitions, its tail-index estimator on known Pareto samples, and
the plugin on the engine with a manual clock."""

import math
import random
import statistics

import pytest

from slotwise.clock import ManualClock
from slotwise.engine import Request
from slotwise.engine import Engine
from slotwise.policies import get_policy
from slotwise.policies.hopper import (HopperSettings, Job, algorithm2, algorithm3, allocate, estimate_beta,
                                      speculation_level)
from slotwise.resources import Resource
from support import SLOT, make_config, running


# --------------------------------------------------------------- Algorithm 1
def test_capacity_short_fills_the_smallest_virtual_sizes_first():
    # beta 1: V = 2T = 4, 6, 20; S = 8 < 30: job 1 gets 4, job 2 the 4 left, job 3 none.
    assert allocate([Job(2), Job(3), Job(10)], 8, beta=1.0) == pytest.approx([4, 4, 0])
    # Submission order is not size order: the smallest still goes first.
    assert allocate([Job(10), Job(2), Job(3)], 8, beta=1.0) == pytest.approx([0, 4, 4])


def test_capacity_ample_shares_in_proportion_to_remaining_tasks():
    # S = 60 > sum V = 30: S_i = T_i / sum T x S = 8, 12, 40.
    assert allocate([Job(2), Job(3), Job(10)], 60, beta=1.0) == pytest.approx([8, 12, 40])


def test_the_threshold_between_the_two_cases_is_2_over_beta_times_sum_t():
    # beta 1.6: V = 1.25 T = 5, 10.  At S = 15 both cases agree (5, 10); just
    # under, the larger job loses; just over, proportional.
    assert allocate([Job(4), Job(8)], 15, beta=1.6) == pytest.approx([5, 10])
    assert allocate([Job(4), Job(8)], 14, beta=1.6) == pytest.approx([5, 9])
    assert allocate([Job(4), Job(8)], 18, beta=1.6) == pytest.approx([6, 12])


def test_equal_remaining_work_ties_go_to_the_earlier_job():
    assert allocate([Job(5), Job(5)], 6, beta=1.0) == pytest.approx([6, 0])


def test_speculation_level_is_2_over_beta_within_1_and_2():
    assert speculation_level(1.25) == pytest.approx(1.6)
    assert speculation_level(2.5) == 1.0  # light tail: no copies worth their slot
    assert speculation_level(0.8) == 2.0


def test_a_job_never_gets_more_than_it_can_use_and_the_rest_goes_on():
    # Job 1 could take 4 but asks for 3: the fifth slot goes to job 2.
    assert allocate([Job(2, cap=3), Job(3), Job(10)], 8, beta=1.0) == pytest.approx([3, 5, 0])
    # Ample, every job capped at its demand: work conserving, never above caps.
    got = allocate([Job(2, cap=2), Job(3, cap=3), Job(10, cap=10)], 100, beta=1.0)
    assert got == pytest.approx([2, 3, 10])


# --------------------------------------------------------------- Algorithm 2
def test_epsilon_fairness_short_capacity():
    # beta 1, V = 2, 8, 20; S = 12, N = 3, epsilon 0.5: F = 2.  m1 = 1 (V_1 <= F),
    # need = 8 + 20 + 2 = 30 >= 12: all get 2, the 6 left fill job 2 (8 - 2 = 6).
    assert algorithm2([2, 8, 20], 12, 0.5) == pytest.approx([2, 8, 2])


def test_epsilon_fairness_ample_capacity():
    # S = 60: F = 10, m1 = 2, need = 20 + 20 = 40 < 60.  m2 = 0 fails (2/30 x 60
    # = 4 < 10); m2 = 1: 8/28 x 50 = 14.3 >= max(10, 8).  So 10, then 50 by 8:20.
    assert algorithm2([2, 8, 20], 60, 0.5) == pytest.approx([10, 50 * 8 / 28, 50 * 20 / 28])


def test_epsilon_limits():
    v = [2, 8, 20]
    # epsilon 1 is Algorithm 1; epsilon 0 gives every job S / N.
    assert algorithm2(v, 12, 1.0) == pytest.approx([2, 8, 2])
    assert algorithm2(v, 60, 1.0) == pytest.approx([4, 16, 40])
    assert algorithm2(v, 12, 0.0) == pytest.approx([4, 4, 4])
    assert algorithm2(v, 60, 0.0) == pytest.approx([20, 20, 20])


@pytest.mark.parametrize("eps", [0.0, 0.1, 0.3, 0.7, 1.0])
@pytest.mark.parametrize("slots", [3, 10, 25, 40, 200])
def test_epsilon_fair_guarantee_and_no_slot_lost(eps, slots):
    rng = random.Random(slots * 10 + int(eps * 10))
    v = sorted(rng.uniform(0.5, 30) for _ in range(7))
    got = algorithm2(v, slots, eps)
    assert sum(got) == pytest.approx(min(slots, max(slots, 0)))
    assert min(got) >= (1 - eps) * slots / len(v) - 1e-9


# --------------------------------------------------------------- Algorithm 3
def test_dag_ordering_is_by_max_of_current_and_downstream():
    # A: T 2, T' 8 (alpha 4); B: T 4, T' 1 (alpha 0.25).  max(T, T') = 8 and 4:
    # B first.  beta 1: V_B = 2 x 4 x 0.5 = 4, V_A = 2 x 2 x 2 = 8; alpha_min
    # of the first two is 0.25 (sqrt 0.5).
    a, b = Job(2, 8), Job(4, 1)
    # Case 1: S <= V_1 / sqrt(alpha_min(2)) = 8: all to B.
    assert allocate([a, b], 6, beta=1.0) == pytest.approx([0, 6])
    # Case 2 (k = 1): 8 < S <= 24: V_i / 0.5 in order, the lightest (B) last.
    assert allocate([a, b], 10, beta=1.0) == pytest.approx([10, 0])
    assert allocate([a, b], 20, beta=1.0) == pytest.approx([16, 4])
    # Case 4: S > 24: in proportion to V (8 : 4).
    assert allocate([a, b], 36, beta=1.0) == pytest.approx([24, 12])


def test_dag_case_3_shares_the_first_jobs_in_proportion():
    # Sorted: J1 (T 1, alpha 1), J2 (T 2, alpha 1), J3 (T 3, T' 0.75: alpha
    # 0.25).  beta 1: V = 2, 4, 3.  Fill two jobs up to 6; proportional among
    # the two up to 6 / sqrt(0.25) = 12; fill three up to 9 / 0.5 = 18.
    jobs = [Job(1), Job(2), Job(3, 0.75)]
    assert allocate(jobs, 5, beta=1.0) == pytest.approx([2, 3, 0])
    assert allocate(jobs, 9, beta=1.0) == pytest.approx([3, 6, 0])
    assert allocate(jobs, 15, beta=1.0) == pytest.approx([4, 8, 3])
    assert allocate(jobs, 20, beta=1.0) == pytest.approx([20 * 2 / 9, 20 * 4 / 9, 20 * 3 / 9])


def test_dag_ties_go_to_the_larger_weight():
    # max(T, T') 4 for both; J2 has the larger alpha (4/2 = 2 vs 1): listed first.
    # alpha_min(2) = 1; V_2 = 2 x 2 x sqrt 2 = 5.66, so S = 5 all to J2.
    assert allocate([Job(4, 4), Job(2, 4)], 5, beta=1.0) == pytest.approx([0, 5])


def test_equal_alphas_make_algorithm_3_algorithm_1():
    v = [2.0, 6.0, 20.0]
    for s in (3, 8, 30, 31, 90):
        assert algorithm3(v, [1, 1, 1], s) == pytest.approx(algorithm2(v, s, 1.0))
        assert algorithm3(v, [0.5, 0.5, 0.5], s) == pytest.approx(
            algorithm2([x / math.sqrt(0.5) for x in v], s, 1.0))


def test_settings_are_checked():
    with pytest.raises(ValueError, match="epsilon"):
        HopperSettings(epsilon=1.5)
    with pytest.raises(ValueError, match="beta"):
        HopperSettings(beta=0)


# ---------------------------------------------------------------- estimating beta
def pareto(rng, xm, beta):
    return xm * (1.0 - rng.random()) ** (-1.0 / beta)


@pytest.mark.parametrize("beta", [1.1, 1.4, 1.8])
def test_beta_estimate_on_pareto_samples_of_many_scales(beta):
    rng = random.Random(7)
    groups = []
    for _ in range(300):  # each job its own scale x_m
        xm = rng.uniform(2, 60)
        groups.append([pareto(rng, xm, beta) for _ in range(rng.randint(2, 40))])
    est = estimate_beta(groups)
    assert est == pytest.approx(beta, rel=0.05)


def test_beta_estimate_is_unbiased_on_small_samples():
    rng = random.Random(3)
    ests = [estimate_beta([[pareto(rng, 10, 1.5) for _ in range(4)] for _ in range(3)]) for _ in range(4000)]
    assert statistics.fmean(ests) == pytest.approx(1.5, rel=0.03)
    # The uncorrected maximum-likelihood estimate (N / L) would sit N/(N-1) = 9/8 high.
    assert statistics.fmean(ests) < 1.5 * 1.06


def test_beta_estimate_needs_two_terms():
    assert estimate_beta([]) is None
    assert estimate_beta([[5.0], [3.0]]) is None
    assert estimate_beta([[5.0, 5.0, 5.0]]) is None  # no spread: no tail to measure


# ---------------------------------------------------------------- on the engine
def hopper_engine(nodes=2, slots=4, **settings):
    clock = ManualClock()
    cfg = make_config({"jobs": {"scheduling_policy": "hopper"}})
    e = Engine(cfg, clock, EngineSettings_(), services={"hopper": HopperSettings(**settings)})
    for i in range(nodes):
        e.add_node(f"n{i}", f"host{i}", "/r", Resource.units(slots))
    return e, clock


def EngineSettings_():
    from slotwise.settings import EngineSettings

    return EngineSettings(node_locality_delay=0, rack_locality_delay=0)


def submit(e, app_id, maps, reduces=0):
    e.add_app(app_id, "u", queue="root.jobs")
    reqs = [Request(20, SLOT, maps)]
    if reduces:
        reqs.append(Request(10, SLOT, reduces))
    e.update_requests(app_id, reqs)
    e.apps[app_id].has_am = True


def fill(e):
    out = []
    for n in list(e.nodes):
        out += e.heartbeat(n)
    return out


def test_hopper_is_leaf_only_and_registered():
    p = get_policy("hopper")
    assert p.leaf_only


def test_engine_gives_slots_by_argmax_of_allocation_minus_held():
    # 8 slots, beta 1 (k = 2): jobs of 2, 3 and 10 tasks, each asking for its
    # tasks plus copies (demand 2T).  Short (sum V = 30 > 8): 4 to the first,
    # 4 to the second, none to the third.
    e, clock = hopper_engine(beta=1.0, epsilon=1.0)
    submit(e, "a", 4)  # 2 tasks + 2 copies asked
    submit(e, "b", 6)
    submit(e, "c", 20)
    e.update()
    # T counts outstanding containers (copies included): 4, 6, 20 -> V 8, 12, 40.
    shares = {a: e.apps[a].fair_share.memory_mb for a in "abc"}
    assert shares == pytest.approx({"a": 4, "b": 4, "c": 0})
    fill(e)
    assert {a: len(e.apps[a].containers) for a in "abc"} == {"a": 4, "b": 4, "c": 0}


def test_engine_work_conserving_when_the_small_jobs_cannot_use_their_allocation():
    e, clock = hopper_engine(beta=1.0, epsilon=1.0)
    submit(e, "a", 1)
    submit(e, "b", 30)
    e.update()
    assert e.apps["a"].fair_share.memory_mb == pytest.approx(1)
    assert e.apps["b"].fair_share.memory_mb == pytest.approx(7)
    fill(e)
    assert {a: len(e.apps[a].containers) for a in "ab"} == {"a": 1, "b": 7}


def test_engine_epsilon_zero_is_an_equal_split():
    e, clock = hopper_engine(beta=1.0, epsilon=0.0)
    submit(e, "a", 10)
    submit(e, "b", 30)
    e.update()
    assert [e.apps[a].fair_share.memory_mb for a in "ab"] == pytest.approx([4, 4])


def test_engine_alpha_from_reduces_asked_during_the_map_phase():
    # a: 2 maps + 8 reduces asked (alpha 4); b: 4 maps + 1 reduce (alpha 0.25).
    e, clock = hopper_engine(nodes=1, slots=6, beta=1.0, epsilon=1.0)
    submit(e, "a", 2, reduces=8)
    submit(e, "b", 4, reduces=1)
    e.update()
    # As test_dag_ordering_is_by_max_of_current_and_downstream with S = 6: all to
    # b, but b asks for 5 (4 maps + 1 reduce), so the sixth goes to a.
    assert [e.apps[a].fair_share.memory_mb for a in "ab"] == pytest.approx([1, 5])


def test_beta_estimated_online_from_finished_containers():
    """Tasks whose lifetimes are Pareto(beta 1.3) samples: after enough finish,
    the queue's beta is near 1.3 and explain says it was estimated."""
    rng = random.Random(11)
    e, clock = hopper_engine(nodes=4, slots=10)  # beta not configured
    queue = e.queues["root.jobs"]
    ends = {}
    for j in range(12):
        app = f"app{j}"
        submit(e, app, 30)
    e.update()
    fill(e)
    for app in e.apps.values():
        for cid in app.containers:
            ends[cid] = pareto(rng, 2.0, 1.3)
    t = 0.0
    for cid, end in sorted(ends.items(), key=lambda kv: kv[1]):
        t_next = end
        clock.advance(t_next - t)
        t = t_next
        e.container_finished(cid)
        e.update()
    state = queue.policy_state
    assert state.estimated
    assert state.beta == pytest.approx(1.3, rel=0.2)
    words = get_policy("hopper").explain_child(queue, next(iter(e.apps.values())), e.ctx)
    assert "estimated from finished tasks" in words


def test_explain_says_what_hopper_reads_and_grants():
    from slotwise.views.explain import explain_app

    e, clock = hopper_engine(nodes=1, slots=2, beta=1.25, epsilon=1.0)
    submit(e, "a", 4)
    submit(e, "b", 6)
    e.update()
    fill(e)
    e.update()
    words = [h["message"] for h in explain_app(e, "b")["holds"] if h["code"] == "policy"]
    assert words and "has 6 MB of tasks left in its phase" in words[0]
    assert "beta 1.25 (configured)" in words[0]


def test_allocation_files_hopper_on_a_leaf_only(tmp_path):
    from slotwise.config import ConfigErrors, load_allocations

    root = __import__("pathlib").Path(__file__).resolve().parent.parent
    cfg = load_allocations(str(root / "conf" / "hopper.xml"))
    assert {q.name: q.scheduling_policy for q in cfg.root.children}["root.adhoc"] == "hopper"
    bad = tmp_path / "bad.xml"
    bad.write_text('<?xml version="1.0"?>\n<allocations>\n  <queue name="a">\n'
                   '    <schedulingPolicy>hopper</schedulingPolicy>\n    <queue name="b"/>\n  </queue>\n</allocations>\n')
    with pytest.raises(ConfigErrors) as e:
        load_allocations(str(bad))
    assert f"{bad}:4:" in str(e.value.errors[0]) and "leaf queues only" in str(e.value.errors[0])


def test_serve_refuses_a_bad_epsilon_in_one_line():
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "slotwise.cli", "serve", "--allocations", "conf/hopper.xml",
                        "--hopper-epsilon", "2"], capture_output=True, text=True, timeout=60,
                       cwd=__import__("pathlib").Path(__file__).resolve().parent.parent)
    assert r.returncode == 2
    assert r.stderr.strip() == "slotwise serve: hopper epsilon must be between 0 and 1, got 2.0"
