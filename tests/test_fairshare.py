"""The fair-share computation on its own: the design document's rules and
properties that must hold for any input."""

import math

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from slotwise.fairshare import compute_shares, fill_in_order

INF = math.inf


def test_equal_weights_split_evenly():
    assert compute_shares([1, 1, 1, 1], [0] * 4, [INF] * 4, 100) == pytest.approx([25] * 4)


def test_weight_two_gets_twice_the_share():
    assert compute_shares([2, 1], [0, 0], [INF, INF], 90) == pytest.approx([60, 30])


def test_demand_below_share_is_met_and_rest_is_split():
    # A pool that wants 10 of 100 gets 10; the other two split 90.
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
    # The same problem in chunks below the threshold must agree pool by pool.
    from slotwise import fairshare

    old = fairshare._NUMPY_THRESHOLD
    fairshare._NUMPY_THRESHOLD = 10**9
    try:
        small = compute_shares(weights, mins, caps, 50_000)
    finally:
        fairshare._NUMPY_THRESHOLD = old
    assert big == pytest.approx(small, rel=1e-6, abs=1e-6)


def test_fifo_fill_in_order():
    assert fill_in_order([5, 10, 10], 12) == [5, 7, 0]


pools = st.lists(
    st.tuples(
        st.floats(min_value=0.1, max_value=10),  # weight
        st.floats(min_value=0, max_value=500),  # min share
        st.one_of(st.just(INF), st.floats(min_value=0, max_value=2000)),  # cap
    ),
    min_size=1,
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(pools, st.floats(min_value=1, max_value=10_000))
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
@given(pools, st.floats(min_value=1, max_value=10_000), st.integers(min_value=0, max_value=39),
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
