"""Every built-in aggregation against an independent numpy formula, never through its monoid.

``winagg.rolling`` (compiled where the aggregation compiles, plain Python otherwise) is
compared row by row with a formula applied to the window's slice. Inputs mix NaN, None,
infinities, repeated values and windows longer than the input. The sketches are checked
by what they promise (a Bloom filter holds every item of the window; a Count-Min sketch
never under-counts) rather than by their hashes.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import winagg


def _skip_missing(window):
    return np.array([x for x in window if x is not None and not math.isnan(x)], dtype=float)


def _nan_if_empty(f):
    return lambda w: f(w) if w.size else math.nan


def _first_index(w, f):
    kept = [(x, i) for i, x in w if not math.isnan(x)]
    if not kept:
        return -1
    best = f(x for x, _ in kept)
    return min(i for x, i in kept if x == best)


def _relvar(w):
    if not w.size or w.max() == 0:
        return math.nan
    return (w.max() - w.min()) / w.max()


def _geomean(w):
    if not w.size:
        return math.nan
    if (w < 0).any():
        return math.nan
    if (w == 0).any():
        return 0.0
    return float(np.exp(np.mean(np.log(w))))


#: aggregation -> formula over the window's non-missing values (as a float array)
FORMULAS = {
    "count": lambda w: w.size,
    "sum": _nan_if_empty(np.sum),  # pandas' min_periods=1: NaN for no values
    "mean": _nan_if_empty(np.mean),
    "min": _nan_if_empty(np.min),
    "max": _nan_if_empty(np.max),
    "variance": lambda w: float(np.var(w, ddof=1)) if w.size > 1 else math.nan,
    "variance_pop": lambda w: float(np.var(w)) if w.size else math.nan,
    "stddev": lambda w: float(np.std(w, ddof=1)) if w.size > 1 else math.nan,
    "stddev_pop": lambda w: float(np.std(w)) if w.size else math.nan,
    "maxcount": lambda w: int(np.sum(w == w.max())) if w.size else 0,
    "mincount": lambda w: int(np.sum(w == w.min())) if w.size else 0,
    "geomean": _geomean,
    "relvar": _relvar,
}

finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)
entries = st.one_of(finite, finite, finite, st.sampled_from([0.0, 1.0, 2.0, math.nan, None]))
series = st.lists(entries, min_size=0, max_size=60)
positive = st.lists(st.one_of(st.floats(min_value=1e-3, max_value=1e3), st.sampled_from([0.0, math.nan, None])),
                    max_size=60)


def _windows(values, window):
    for i in range(len(values)):
        yield values[max(0, i - window + 1):i + 1]


def _close(got, want, scale):
    if isinstance(want, float) and math.isnan(want):
        return isinstance(got, float) and math.isnan(got)
    return math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-9 * max(1.0, scale))


def _check_against_formula(agg, values, window):
    got = winagg.rolling(values, window, agg).tolist()
    for i, raw in enumerate(_windows(values, window)):
        w = _skip_missing(raw)
        want = FORMULAS[agg](w)
        scale = float(np.sum(np.abs(w)) if w.size else 0.0)
        if agg.startswith(("variance", "stddev")):
            scale = scale * scale
        assert _close(float(got[i]), want, scale), f"{agg} row {i} window {raw}: got {got[i]!r}, want {want!r}"


@pytest.mark.parametrize("agg", [a for a in FORMULAS if a != "geomean"])
@given(values=series, window=st.integers(1, 80))
def test_numeric_aggregations_equal_numpy(agg, values, window):
    _check_against_formula(agg, values, window)


@given(values=positive, window=st.integers(1, 80))
def test_geomean_equals_numpy(values, window):
    _check_against_formula("geomean", values, window)


@pytest.mark.parametrize("agg,pick", [("argmax", max), ("argmin", min)])
@given(values=series, window=st.integers(1, 80))
def test_argmax_and_argmin_are_the_oldest_extreme_row(agg, pick, values, window):
    got = winagg.rolling(values, window, agg).tolist()
    floats = [math.nan if x is None else x for x in values]
    for i in range(len(values)):
        start = max(0, i - window + 1)
        assert got[i] == _first_index(list(enumerate(floats))[start:i + 1], pick), f"row {i}"


@given(values=st.lists(st.integers(-5, 5), max_size=40), window=st.integers(1, 50))
def test_order_aggregations_are_slices(values, window):
    firsts, lasts = winagg.rolling(values, window, "first"), winagg.rolling(values, window, "last")
    collects, m4s = winagg.rolling(values, window, "collect"), winagg.rolling(values, window, "m4")
    for i, w in enumerate(_windows(values, window)):
        assert firsts[i] == w[0] and lasts[i] == w[-1] and list(collects[i]) == w
        assert tuple(m4s[i]) == (w[0], w[-1], min(w), max(w))


@given(values=st.lists(st.integers(0, 10**6), min_size=1, max_size=40), window=st.integers(1, 50))
def test_sketches_keep_their_promises(values, window):
    bloom = winagg.make("two_stacks_lite", "bloom")
    countmin = winagg.make("two_stacks_lite", "countmin")
    for i, value in enumerate(values):
        for agg in (bloom, countmin):
            if len(agg) == window:
                agg.evict()
            agg.insert(value)
        window_items = values[max(0, i - window + 1):i + 1]
        assert all(item in bloom.query() for item in window_items)
        sketch = countmin.query()
        assert all(sketch.estimate(item) >= window_items.count(item) for item in set(window_items))
