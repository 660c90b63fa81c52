"""Exact rolling median, quantiles and rank against pandas and a brute force over every window."""

import math

import numpy as np
import pandas as pd
import pytest

import winagg
from winagg.aggregations import Median, Quantile, Rank

INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")
QS = (0.0, 0.1, 0.25, 0.5, 0.9, 1.0)


def _values(n, seed, infinities=False):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 6, n).astype(float) + np.where(rng.random(n) < 0.3, rng.normal(size=n), 0.0)  # ties
    x[rng.random(n) < 0.12] = np.nan
    x[5:9] = np.nan  # a window of NaN only
    if infinities:
        x[rng.random(n) < 0.08] = np.inf
        x[rng.random(n) < 0.08] = -np.inf
    return x


def _window_rows(times, window, n):
    """Row i's window, brute force: rows j <= i with times[i] - window < times[j] <= times[i]."""
    if times is None:
        return [np.arange(max(0, i - window + 1), i + 1) for i in range(n)]
    return [np.array([j for j in range(i + 1) if times[i] - window < times[j] <= times[i]], dtype=int)
            for i in range(n)]


def _quantile(window_values, q, interpolation):
    """numpy's quantile of the non-NaN values; with an infinity in the window, the sorted
    neighbours by the documented rule (an infinity beside a finite neighbour wins)."""
    kept = np.sort(window_values[~np.isnan(window_values)])
    if not kept.size:
        return math.nan
    if np.isfinite(kept).all():
        return float(np.quantile(kept, q, method=interpolation))
    exact = q * (kept.size - 1)
    low, high = kept[int(math.floor(exact))], kept[int(math.ceil(exact))]
    if interpolation == "nearest":
        return kept[int(np.round(exact))]
    if low == high or interpolation == "lower":
        return low
    if interpolation == "higher":
        return high
    if interpolation == "midpoint":
        return (low + high) / 2
    return low + high if np.isinf([low, high]).any() else low + (high - low) * (exact - math.floor(exact))


def _rank(window_values, value, method, ascending, pct):
    kept = window_values[~np.isnan(window_values)]
    if value != value:
        return math.nan
    below = np.sum(kept < value) if ascending else np.sum(kept > value)
    equal = np.sum(kept == value)
    rank = {"min": below + 1, "max": below + equal, "average": below + (equal + 1) / 2}[method]
    return rank / kept.size if pct else float(rank)


def _check_quantiles(x, window, times=None):
    windows = _window_rows(times, window, x.size)
    for interpolation in INTERPOLATIONS:
        for q in QS:
            want = [_quantile(x[rows], q, interpolation) for rows in windows]
            got = winagg.rolling(x, window, Quantile(q, interpolation), times=times)
            np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=f"{q} {interpolation}")
    median = [_quantile(x[rows], 0.5, "midpoint") for rows in windows]
    np.testing.assert_allclose(winagg.rolling(x, window, "median", times=times), median, rtol=1e-12)


def _check_ranks(x, window, times=None):
    windows = _window_rows(times, window, x.size)
    for method in ("average", "min", "max"):
        for ascending in (True, False):
            for pct in (False, True):
                want = [_rank(x[rows], x[i], method, ascending, pct) for i, rows in enumerate(windows)]
                got = winagg.rolling(x, window, Rank(method, ascending, pct), times=times)
                np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=f"{method} {ascending} {pct}")


@pytest.mark.parametrize("window", [1, 2, 5, 40])
def test_row_windows_equal_pandas(window):
    x = pd.Series(_values(160, seed=window))
    rolled = x.rolling(window, min_periods=1)
    np.testing.assert_array_equal(winagg.rolling(x, window, "median").to_numpy(), rolled.median().to_numpy())
    for interpolation in INTERPOLATIONS:
        for q in QS:
            np.testing.assert_array_equal(winagg.rolling(x.to_numpy(), window, Quantile(q, interpolation)),
                                          rolled.quantile(q, interpolation=interpolation).to_numpy())
    for method in ("average", "min", "max"):
        for ascending in (True, False):
            got = winagg.rolling(x.to_numpy(), window, Rank(method, ascending, pct=True))
            np.testing.assert_allclose(got, rolled.rank(method=method, ascending=ascending, pct=True), rtol=1e-12)


def test_sorted_time_windows_equal_pandas():
    x = _values(150, seed=3)
    index = pd.Timestamp("2024-01-01") + pd.to_timedelta(np.cumsum(np.random.default_rng(4).integers(0, 5, 150)), "s")
    series = pd.Series(x, index=index)
    got = winagg.rolling(x, "10s", Quantile(0.3, "nearest"), times=index)
    np.testing.assert_array_equal(got, series.rolling("10s").quantile(0.3, interpolation="nearest").to_numpy())
    np.testing.assert_array_equal(winagg.rolling(x, "10s", "median", times=index),
                                  series.rolling("10s").median().to_numpy())


@pytest.mark.parametrize("window", [1, 3, 25])
def test_row_windows_with_infinities_equal_brute_force(window):
    x = _values(120, seed=10 + window, infinities=True)
    _check_quantiles(x, window)
    _check_ranks(x, window)


@pytest.mark.parametrize("sort", [True, False], ids=["sorted times", "unsorted times"])
@pytest.mark.parametrize("window", [0.5, 4, 30])
def test_time_windows_equal_brute_force(sort, window):
    rng = np.random.default_rng(int(window * 10))
    times = rng.integers(0, 60, 130).astype(np.int64)  # equal times too
    times = np.sort(times) if sort else times
    window = window if window != 0.5 else 1  # integer times: a one-tick window holds equal times only
    x = _values(130, seed=window, infinities=True)
    _check_quantiles(x, window, times)
    _check_ranks(x, window, times)


def test_float_times_in_any_order_and_empty_input():
    times = np.random.default_rng(8).random(90) * 10
    x = _values(90, seed=8)
    _check_quantiles(x, 2.5, times)
    assert winagg.rolling(np.array([], dtype=float), 3, "median").shape == (0,)
    assert winagg.rolling(np.array([], dtype=float), 3.0, "rank", times=np.array([], dtype=float)).shape == (0,)


def test_every_path_answers_like_rolling():
    """The Python monoids behind make, Window and a named algorithm agree with the compiled trees."""
    x = _values(60, seed=2, infinities=True)
    for agg in (Median(), Quantile(0.8, "linear"), Quantile(0.25, "nearest"), Rank("max", False, True)):
        compiled = winagg.rolling(x, 7, agg)
        np.testing.assert_allclose(winagg.rolling(x, 7, agg, algorithm="two_stacks"), compiled, rtol=1e-12)
        window = winagg.make("daba", agg)
        answers = []
        for i, value in enumerate(x):
            window.insert(value)
            if i >= 7:
                window.evict()
            answers.append(window.query())
        np.testing.assert_allclose(answers, compiled, rtol=1e-12)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="q must be in"):
        Quantile(1.5)
    with pytest.raises(TypeError, match="q must be a number"):
        Quantile("0.5")
    with pytest.raises(ValueError, match="interpolation must be one of"):
        Quantile(0.5, "cubic")
    with pytest.raises(ValueError, match="method must be one of"):
        Rank("dense")
    with pytest.raises(TypeError, match="values must be numbers"):
        winagg.rolling(np.array(["a", "b"], dtype=object), 2, "median")
    with pytest.raises(TypeError, match="median needs numbers"):
        winagg.make("two_stacks", "median").insert("a")


def test_answers_across_chunks_and_sort_batches(monkeypatch):
    """Small chunks and batches: windows that reach back into the previous chunk's rows."""
    from winagg.engine import order_stats

    monkeypatch.setattr(order_stats, "MIN_CHUNK", 4)
    monkeypatch.setattr(order_stats, "SORT_BATCH", 40)
    x = _values(150, seed=21, infinities=True)
    for window in (1, 3, 11):
        _check_quantiles(x, window)
        _check_ranks(x, window)
    times = np.sort(np.random.default_rng(5).integers(0, 100, 150))
    _check_quantiles(x, 9, times)


def test_values_apart_only_in_their_lowest_bits():
    """The sort keys drop a float's lowest bits for the row's place: values that differ only there
    (and signed zeros) still come out in order."""
    rng = np.random.default_rng(12)
    x = 1.0 + rng.integers(0, 400, 300) * 2.0 ** -50
    x[rng.random(300) < 0.1] = np.nan
    x[::17] = -0.0
    x[::19] = 0.0
    for window in (7, 60):
        _check_quantiles(x, window)
        _check_ranks(x, window)


def test_threads_give_the_same_bits(monkeypatch):
    """Runs of chunks on several threads answer as one thread does, to the bit."""
    from winagg.engine import order_stats

    monkeypatch.setattr(order_stats, "ROWS_PER_THREAD", 16)
    monkeypatch.setattr(order_stats, "MIN_CHUNK", 8)
    x = _values(400, seed=31, infinities=True)
    times = np.sort(np.random.default_rng(6).integers(0, 300, 400))
    for agg in (Median(), Quantile(0.9, "nearest"), Rank("average", False, True)):
        for window, at in ((5, None), (40, None), (12, times)):
            one = order_stats.rolling(x, window, agg, times=at, threads=1)
            for threads in (2, 3, 7):
                many = order_stats.rolling(x, window, agg, times=at, threads=threads)
                np.testing.assert_array_equal(many.view(np.uint64), one.view(np.uint64))
