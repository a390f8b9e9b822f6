"""Fair shares by binary search, as the Fair Scheduler design document
describes: find the weight-to-share ratio r such that

    f(r) = sum_i min(cap_i, max(r * w_i, m_i)) == total

where cap_i is min(demand, max share) for instantaneous shares and the max
share alone for steady shares.  A pure function of numbers, so it can be
tested on its own and reused by every policy that shares by weight.
"""

from __future__ import annotations

from typing import Sequence

ITERATIONS = 25  # bits of precision, as in the design document
_NUMPY_THRESHOLD = 64  # below this, plain Python beats numpy's call overhead (measured)


def compute_shares(
    weights: Sequence[float],
    min_shares: Sequence[float],
    caps: Sequence[float],
    total: float,
) -> list[float]:
    """Each schedulable's share of ``total``.

    Min shares are honoured first; if they add up to more than ``total`` they
    are scaled down proportionally.  No share exceeds its cap.  The shares add
    up to min(total, sum of what each could use).
    """
    n = len(weights)
    if n == 0:
        return []
    if total <= 0:
        return [0.0] * n
    if n == 1:  # the search's answer, directly (a pool with one app: common)
        w, m, c = weights[0], min_shares[0], caps[0]
        return [float(min(c, total) if w > 0 else min(m, c, total))]
    if n >= _NUMPY_THRESHOLD:
        return _compute_numpy(weights, min_shares, caps, total)
    mins = [m if m < c else c for m, c in zip(min_shares, caps)]
    sum_mins = sum(mins)
    if sum_mins >= total:
        scale = total / sum_mins
        return [m * scale for m in mins]
    # The most each can get: its cap, or just its min share if it has no weight.
    limits = [c if w > 0 else m for w, m, c in zip(weights, mins, caps)]
    if sum(limits) <= total:
        return [float(x) for x in limits]
    triples = list(zip(weights, mins, caps))

    def used(r: float) -> float:
        s = 0.0
        for w, m, c in triples:
            x = r * w
            if x < m:
                x = m
            if x > c:
                x = c
            s += x
        return s

    lo, hi = _bracket(used, total)
    r = _refine(triples, lo, hi, total)
    return [min(c, max(r * w, m)) for w, m, c in triples]


def _bracket(used, total: float) -> tuple[float, float]:
    """The design document's search: double r until f(r) reaches the total,
    then halve the interval ITERATIONS times."""
    hi = 1.0
    while used(hi) < total:
        hi *= 2.0
    lo = 0.0
    for _ in range(ITERATIONS):
        mid = (lo + hi) / 2.0
        if used(mid) < total:
            lo = mid
        else:
            hi = mid
    return lo, hi


def _refine(triples, lo: float, hi: float, total: float) -> float:
    """The binary search leaves r within a tiny bracket; inside it f is
    usually linear, so solve that piece exactly to make shares add up."""
    mid = (lo + hi) / 2.0
    fixed = 0.0
    slope = 0.0
    for w, m, c in triples:
        x = mid * w
        if x <= m:
            fixed += m
        elif x >= c:
            fixed += c
        else:
            slope += w
    if slope > 0:
        r = (total - fixed) / slope
        if lo <= r <= hi:
            return r
    return hi


def _compute_numpy(weights, min_shares, caps, total: float) -> list[float]:
    import numpy as np

    w = np.asarray(weights, dtype=float)
    c = np.asarray(caps, dtype=float)
    m = np.minimum(np.asarray(min_shares, dtype=float), c)
    sum_mins = m.sum()
    if sum_mins >= total:
        return (m * (total / sum_mins)).tolist()
    limits = np.where(w > 0, c, m)
    if limits.sum() <= total:
        return limits.tolist()

    def used(r: float) -> float:
        return float(np.minimum(c, np.maximum(r * w, m)).sum())

    lo, hi = _bracket(used, total)
    mid = (lo + hi) / 2.0
    x = mid * w
    low_side = x <= m
    high_side = (x >= c) & ~low_side
    linear = ~(low_side | high_side)
    slope = float(w[linear].sum())
    r = hi
    if slope > 0:
        cand = (total - float(m[low_side].sum()) - float(c[high_side].sum())) / slope
        if lo <= cand <= hi:
            r = cand
    return np.minimum(c, np.maximum(r * w, m)).tolist()


def fill_in_order(caps: Sequence[float], total: float) -> list[float]:
    """FIFO's split: the first in order takes what it can use, then the next."""
    out = []
    left = max(0.0, total)
    for c in caps:
        take = c if c < left else left
        out.append(float(take))
        left -= take
    return out
