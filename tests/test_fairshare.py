"""The fair-share computation on its own: the design document's rule, YARN's
rule, and properties that must hold for any input.  (YARN's own code checks
the YARN rule in tests/test_yarn_differential.py.)"""

import math

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from slotwise.policies.fairshare import compute_shares, fill_in_order, yarn_shares

INF = math.inf


def test_equal_weights_split_evenly():
    assert compute_shares([1, 1, 1, 1], [0] * 4, [INF] * 4, 100) == pytest.approx([25] * 4)


def test_weight_two_gets_twice_the_share():
    assert compute_shares([2, 1], [0, 0], [INF, INF], 90) == pytest.approx([60, 30])


def test_demand_below_share_is_met_and_rest_is_split():
    # A queue that wants 10 of 100 gets 10; the other two split 90.
    assert compute_shares([1, 1, 1], [0, 0, 0], [10, INF, INF], 100) == pytest.approx([10, 45, 45])


def test_min_share_is_honoured_even_above_the_even_split():
    # The design doc: the fair share is at least the min share.
    assert compute_shares([1, 1], [80, 0], [INF, INF], 100) == pytest.approx([80, 20])


def test_min_share_is_capped_by_demand():
    assert compute_shares([1, 1], [80, 0], [30, INF], 100) == pytest.approx([30, 70])


def test_min_shares_beyond_the_cluster_are_scaled_down_proportionally():
    assert compute_shares([1, 1, 1], [60, 90, 0], [INF, INF, INF], 100) == pytest.approx([40, 60, 0])


def test_total_demand_below_capacity_gives_everyone_their_demand():
    assert compute_shares([1, 5], [0, 0], [3, 4], 100) == pytest.approx([3, 4])


def test_zero_weight_gets_only_its_min_share():
    assert compute_shares([0, 1], [10, 0], [INF, INF], 100) == pytest.approx([10, 90])


def test_empty_and_zero_capacity():
    assert compute_shares([], [], [], 10) == []
    assert compute_shares([1, 1], [5, 5], [INF, INF], 0) == [0, 0]


def test_large_inputs_take_the_vectorised_path_and_agree():
    n = 1000
    weights = [1 + (i % 7) for i in range(n)]
    mins = [(i % 5) * 3 for i in range(n)]
    caps = [10 + (i % 13) * 20 for i in range(n)]
    big = compute_shares(weights, mins, caps, 50_000)
    # The same problem in chunks below the threshold must agree queue by queue.
    from slotwise.policies import fairshare

    old = fairshare._NUMPY_THRESHOLD
    fairshare._NUMPY_THRESHOLD = 10**9
    try:
        small = compute_shares(weights, mins, caps, 50_000)
    finally:
        fairshare._NUMPY_THRESHOLD = old
    assert big == pytest.approx(small, rel=1e-6, abs=1e-6)


def test_fifo_fill_in_order():
    assert fill_in_order([5, 10, 10], 12) == [5, 7, 0]


queues = st.lists(
    st.tuples(
        st.floats(min_value=0.1, max_value=10),  # weight
        st.floats(min_value=0, max_value=500),  # min share
        st.one_of(st.just(INF), st.floats(min_value=0, max_value=2000)),  # cap
    ),
    min_size=1,
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(queues, st.floats(min_value=1, max_value=10_000))
def test_properties(spec, total):
    weights = [w for w, _, _ in spec]
    mins = [m for _, m, _ in spec]
    caps = [c for _, _, c in spec]
    shares = compute_shares(weights, mins, caps, total)
    tol = 1e-6 * max(1.0, total)
    # Shares add up to min(capacity, what all could use).
    assert sum(shares) == pytest.approx(min(total, sum(caps)), rel=1e-6, abs=1e-6)
    for s, m, c in zip(shares, mins, caps):
        assert s <= c + tol  # never above demand / max share
        assert s >= -tol
    # Min shares are honoured when they fit.
    if sum(min(m, c) for m, c in zip(mins, caps)) <= total:
        for s, m, c in zip(shares, mins, caps):
            assert s >= min(m, c) - tol


@settings(max_examples=200, deadline=None)
@given(queues, st.floats(min_value=1, max_value=10_000), st.integers(min_value=0, max_value=39),
       st.floats(min_value=1.01, max_value=10))
def test_monotone_in_weight(spec, total, idx, factor):
    assume(idx < len(spec))
    weights = [w for w, _, _ in spec]
    mins = [m for _, m, _ in spec]
    caps = [c for _, _, c in spec]
    before = compute_shares(weights, mins, caps, total)[idx]
    weights[idx] *= factor
    after = compute_shares(weights, mins, caps, total)[idx]
    assert after >= before - 1e-6 * max(1.0, total)


# ---------------------------------------------------------------- YARN's rule
def test_yarn_grants_over_committed_min_shares_in_full():
    assert yarn_shares([1, 1, 1], [60, 90, 0], [INF] * 3, 100) == pytest.approx([60, 90, 0])


def test_yarn_weight_zero_or_below_means_exactly_the_min_share():
    # Taken off the top: the others split what is left.
    assert yarn_shares([0, -1, 1], [10, 0, 0], [INF] * 3, 100) == pytest.approx([10, 0, 90])
    # Even above the max share YARN knows nothing of caps for fixed shares (queues' max >= min anyway).
    assert yarn_shares([0, 1], [200, 0], [INF, INF], 100) == pytest.approx([200, 0])


def test_yarn_max_share_zero_gives_zero_even_with_a_min():
    assert yarn_shares([1, 1], [50, 0], [0, INF], 100) == pytest.approx([0, 100])


def test_yarn_shares_stop_at_the_max_shares():
    assert yarn_shares([1, 5], [0, 0], [3, 4], 100) == pytest.approx([3, 4])
    assert yarn_shares([1, 1, 2], [0, 0, 0], [10, INF, INF], 100) == pytest.approx([10, 30, 60])


whole_queues = st.lists(
    st.tuples(
        st.sampled_from([0.0, 0.25, 0.5, 1.0, 1.0, 2.0, 3.0, 7.5]),  # weight
        st.integers(min_value=0, max_value=3000),  # min share
        st.one_of(st.just(INF), st.integers(min_value=0, max_value=5000)),  # max share
    ),
    min_size=1,
    max_size=80,  # past the numpy threshold too
)


@settings(max_examples=300, deadline=None)
@given(whole_queues, st.integers(min_value=0, max_value=20_000))
def test_yarn_properties(spec, total):
    """YARN's resources are whole units: so are its shares."""
    weights = [w for w, _, _ in spec]
    mins = [m for _, m, _ in spec]
    maxes = [max(c, m) for _, m, c in spec]  # a queue's max is raised to its min
    shares = yarn_shares(weights, mins, maxes, total)
    assert all(s == int(s) for s in shares)
    fixed = sum(m for w, m, c in zip(weights, mins, maxes) if w <= 0 and c > 0)
    free = [i for i, (w, c) in enumerate(zip(weights, maxes)) if w > 0 and c > 0]
    left = min(sum(maxes[i] for i in free), max(total - fixed, 0))
    for s, w, m, c in zip(shares, weights, mins, maxes):
        if c <= 0:
            assert s == 0
        elif w <= 0:
            assert s == m
        else:
            assert m <= s <= c  # every one at least its min share
    if free and sum(mins[i] for i in free) < left:
        # All that is left is handed out, give or take YARN's rounding down.
        assert left <= sum(shares[i] for i in free) <= left + len(free)
        # One ratio r: a share strictly between its min and max is floor(weight * r).
        inner = [i for i in free if mins[i] < shares[i] < maxes[i]]
        if inner:
            assert max(shares[i] / weights[i] for i in inner) <= min((shares[i] + 1) / weights[i] for i in inner)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.0]), st.integers(0, 3000),
                          st.one_of(st.just(INF), st.integers(0, 5000))), min_size=64, max_size=300),
       st.integers(0, 200_000))
def test_yarn_vectorised_path_agrees_unit_for_unit(spec, total):
    from slotwise.policies import fairshare

    weights, mins, maxes = [w for w, _, _ in spec], [m for _, m, _ in spec], [max(c, m) for _, m, c in spec]
    big = yarn_shares(weights, mins, maxes, total)
    old = fairshare._NUMPY_THRESHOLD
    fairshare._NUMPY_THRESHOLD = 10**9
    try:
        small = yarn_shares(weights, mins, maxes, total)
    finally:
        fairshare._NUMPY_THRESHOLD = old
    assert big == small
