"""pandas' order-statistic formulas: a quantile's position and interpolation, a rank's ties.

One source for the compiled kernels (:mod:`winagg.engine.order_stats`) and for the
Python answers of :class:`~winagg.aggregations.Quantile` and :class:`~winagg.aggregations.Rank`
on every other path.
"""

from __future__ import annotations

import bisect
import math

import numba as nb
import numpy as np

#: pandas' interpolations of a quantile between two values, in the order of their codes.
INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")
#: pandas' rank methods for ties, in the order of their codes.
RANK_METHODS = ("average", "min", "max")
#: Interpolation codes the kernels take, in the order of ``INTERPOLATIONS``.
_LINEAR, _LOWER, _HIGHER, _MIDPOINT, _NEAREST = range(5)
#: Rank method codes, in the order of ``RANK_METHODS``.
_AVERAGE, _MIN, _MAX = range(3)


@nb.njit(cache=True, inline="always")
def position_of(count, q):
    """pandas' quantile position among ``count`` sorted values: (index, fraction)."""
    exact = q * (count - 1)
    index = np.int64(exact)
    return index, exact - index


@nb.njit(cache=True, inline="always")
def interpolate(low, high, fraction, index, code):
    """pandas' answer between the sorted values at ``index`` (low) and ``index + 1`` (high)."""
    if fraction == 0.0 or code == _LOWER:
        return low
    if code == _LINEAR:
        if low == high or math.isinf(low) or math.isinf(high):
            return low + high if low != high else low  # an infinity wins over a finite neighbour
        return low + (high - low) * fraction
    if code == _HIGHER:
        return high
    if code == _MIDPOINT:
        return (low + high) / 2.0
    if fraction == 0.5:  # nearest: halves round to the even index, as round() does
        return low if index % 2 == 0 else high
    return low if fraction < 0.5 else high


@nb.njit(cache=True, inline="always")
def rank_answer(below, equal, count, method, pct):
    """pandas' rolling rank of a value with ``below`` smaller and ``equal`` equal values."""
    if method == _MIN:
        rank = below + 1.0
    elif method == _MAX:
        rank = np.float64(below + equal)
    else:
        rank = below + (equal + 1.0) / 2.0
    return rank / count if pct else rank


def quantile_of_sorted(ordered, q, interpolation) -> float:
    """The quantile of a sorted sequence without NaN, by the kernels' formulas (Python mode)."""
    count = len(ordered)
    if count == 0:
        return math.nan
    index, fraction = position_of.py_func(count, q)
    high = ordered[index + 1] if fraction else ordered[index]
    return float(interpolate.py_func(ordered[index], high, fraction, index, INTERPOLATIONS.index(interpolation)))


def rank_in_sorted(ordered, value, method, pct, ascending) -> float:
    """The rank of ``value`` among the sorted ``ordered`` (which holds it), by the kernels' formula."""
    if value != value:
        return math.nan
    below = bisect.bisect_left(ordered, value)
    equal = bisect.bisect_right(ordered, value) - below
    if not ascending:
        below = len(ordered) - below - equal
    return float(rank_answer.py_func(below, equal, len(ordered), RANK_METHODS.index(method), pct))
