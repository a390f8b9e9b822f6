"""Fair shares by binary search: find the weight-to-share ratio r such that

    f(r) = sum_i min(cap_i, max(r * w_i, m_i)) == total

Two rules use it (docs/fair-shares.md sets them side by side):

- ``design``, the MRv1 Fair Scheduler design document's: cap_i is
  min(demand, max share) for instantaneous shares (the max share alone for
  steady ones); min shares that add up to more than the total are scaled
  down to fit.  ``compute_shares``.
- ``yarn``, YARN 3.5's ComputeFairShares: demand plays no part (the caller
  leaves out inactive queues), min shares are granted in full even when they
  over-commit, and a weight of 0 or less means exactly the min share.
  ``yarn_shares``.

Pure functions of numbers, so they can be tested on their own and reused by
every policy that shares by weight.
"""

from __future__ import annotations

import math
from typing import Sequence

ITERATIONS = 25  # bits of precision, as in the design document
DESIGN = "design"
YARN = "yarn"
SHARE_RULES = (YARN, DESIGN)
_NUMPY_THRESHOLD = 64  # below this, plain Python beats numpy's call overhead (measured)


#: The last answers of the two searches, by their inputs: an update pass
#: finds most queues as the last one left them (YARN's rule does not even
#: read demand), so it looks up instead of searching again. Bounded; a pure
#: function's answers, so forks and threads may share it.
_MEMO: dict = {}
_MEMO_MAX = 4096


def _remembered(fn):
    def search(weights, min_shares, caps, total):
        key = (fn, tuple(weights), tuple(min_shares), tuple(caps), total)
        out = _MEMO.get(key)
        if out is None:
            out = fn(weights, min_shares, caps, total)
            if len(_MEMO) >= _MEMO_MAX:
                _MEMO.clear()
            _MEMO[key] = out
        return list(out)

    search.__name__, search.__doc__, search.__wrapped__ = fn.__name__, fn.__doc__, fn
    return search


@_remembered
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
    if n == 1:  # the search's answer, directly (a queue with one app: common)
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


@_remembered
def yarn_shares(
    weights: Sequence[float],
    min_shares: Sequence[float],
    max_shares: Sequence[float],
    total: float,
) -> list[float]:
    """Each schedulable's share of ``total`` by YARN's rule, for one resource.

    A max share of 0 gives 0; a weight of 0 or less gives exactly the min
    share, taken off the top.  The rest split what is left, never more than
    their max shares add up to: each gets max(r * weight, min) capped at its
    max, in whole units.  When their min shares alone reach what is left,
    each gets its min share and the shares add up to more than ``total``:
    YARN grants them.  The search is YARN's (25 halvings, whole units, the
    upper end of the bracket), so shares come out as YARN's do, unit for unit.
    """
    n = len(weights)
    if n >= _NUMPY_THRESHOLD:
        return _yarn_shares_numpy(weights, min_shares, max_shares, total)
    out = [0.0] * n
    free = []
    taken = 0.0
    for i in range(n):
        if max_shares[i] <= 0:
            continue
        if weights[i] <= 0:
            out[i] = float(max(int(min_shares[i]), 0))
            taken += out[i]
        else:
            free.append(i)
    if not free:
        return out
    w = [float(weights[i]) for i in free]
    # YARN's resources are whole units.
    mins = [_whole(min_shares[i]) for i in free]
    caps = [_whole(max_shares[i]) for i in free]
    left = min(sum(caps), _whole(max(total - taken, 0.0)))
    shares = _yarn_search(w, mins, caps, left)
    for i, share in zip(free, shares):
        out[i] = float(share)
    return out


def _whole(x: float) -> float:
    return x if math.isinf(x) else float(math.floor(x))


def _yarn_unit_share(w: float, m: float, c: float, r: float) -> int:
    x = w * r
    if x < m:
        x = m
    if x > c:
        x = c
    return int(x)


def _yarn_search(w, mins, caps, left) -> list[int]:
    triples = list(zip(w, mins, caps))

    def used(r: float) -> int:
        return sum(_yarn_unit_share(wi, mi, ci, r) for wi, mi, ci in triples)

    hi = _yarn_bracket(used, left)
    return [_yarn_unit_share(wi, mi, ci, hi) for wi, mi, ci in triples]


def _yarn_shares_numpy(weights, min_shares, max_shares, total: float) -> list[float]:
    """``yarn_shares`` vectorised, for many schedulables (the same steps)."""
    import numpy as np

    w = np.asarray(weights, dtype=float)
    m = np.floor(np.asarray(min_shares, dtype=float))
    c = np.asarray(max_shares, dtype=float)
    c = np.where(np.isinf(c), c, np.floor(c))
    zero = c <= 0
    fixed = ~zero & (w <= 0)
    free = ~zero & ~fixed
    out = np.where(fixed, np.maximum(m, 0.0), 0.0)
    if not free.any():
        return out.tolist()
    wf, cf = w[free], c[free]
    mf = np.minimum(m[free], cf)
    left = min(float(cf.sum()), _whole(max(total - float(out.sum()), 0.0)))

    def shares(r: float):
        return np.floor(np.minimum(np.maximum(wf * r, mf), cf))

    hi = _yarn_bracket(lambda r: float(shares(r).sum()), left)
    out[free] = shares(hi)
    return out.tolist()


def _yarn_bracket(used, left: float) -> float:
    """YARN's search for r: double until enough is used, then halve the
    bracket ITERATIONS times (stopping at an exact fit); the upper end wins."""
    hi = 1.0
    while used(hi) < left and hi < 1e300:
        hi *= 2.0
    lo = 0.0
    for _ in range(ITERATIONS):
        mid = (lo + hi) / 2.0
        u = used(mid)
        if u == left:
            return mid
        if u < left:
            lo = mid
        else:
            hi = mid
    return hi


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
