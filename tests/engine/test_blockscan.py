"""winagg.engine.blockscan: block prefix/suffix scans, compared with brute-force folds, pandas and exact arithmetic."""

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from winagg.engine import blockscan, pieces

RNG = np.random.default_rng(2024)
VALUES = RNG.normal(loc=3.0, scale=2.0, size=157)
VALUES[[0, 4, 5, 6, 40, 41, 99]] = np.nan  # rows 4-6: windows of NaN only for windows up to 3
VALUES[[70, 120]] = [np.inf, -np.inf]
CLEAN = RNG.normal(size=157)
WINDOWS = [1, 2, 3, 7, 64, len(VALUES) + 9]
TIMES = np.cumsum(RNG.integers(0, 4, size=len(VALUES)))  # steps of 0: equal times
SPANS = [1, 2, 5, 40, 10_000]


def reduce_valid(window_values, key):
    """The aggregate of one window by numpy on its non-NaN values (the independent formula)."""
    valid = window_values[~np.isnan(window_values)]
    if key == "count":
        return valid.size
    if valid.size == 0:
        return np.nan
    if key in ("sum_f", "mean_f", "max", "min"):
        with np.errstate(invalid="ignore"):
            return {"sum_f": np.sum, "mean_f": np.mean, "max": np.max, "min": np.min}[key](valid)
    ddof = int(key[-1])
    if valid.size <= ddof or not np.isfinite(valid).all():
        return np.nan
    var = np.var(valid, ddof=ddof)
    return np.sqrt(var) if key.startswith("std") else var


def brute_rows(values, window, key):
    return np.array([reduce_valid(values[max(0, i - window + 1):i + 1], key) for i in range(len(values))])


def brute_times(values, times, span, key):
    out = []
    for i in range(len(values)):
        inside = np.array([j for j in range(i + 1) if times[i] - span < times[j] <= times[i]], dtype=np.int64)
        out.append(reduce_valid(values[inside], key))
    return np.array(out)


def same(got, want):
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    return got.shape == want.shape and np.allclose(got, want, rtol=1e-9, atol=1e-12, equal_nan=True)


FLOAT_KEYS = ["sum_f", "mean_f", "max", "min", "count", "var1", "std1", "var0", "std0"]


@pytest.mark.parametrize("key", FLOAT_KEYS)
def test_float_windows_match_brute_force(key):
    for window in WINDOWS:
        got = blockscan.rolling(VALUES, window, key)
        assert same(got, brute_rows(VALUES, window, key)), (key, window)
    for span in SPANS:
        got = blockscan.rolling(VALUES, None, key, times=TIMES, span=span)
        assert same(got, brute_times(VALUES, TIMES, span, key)), (key, span)
    float_times = TIMES * 0.5
    got = blockscan.rolling(VALUES, None, key, times=float_times, span=2.25)
    assert same(got, brute_times(VALUES, float_times, 2.25, key)), key
    if key == "count":
        assert got.dtype == np.int64


def test_means_of_numbers_only_divide_by_the_rows(monkeypatch):
    """Without NaN a mean divides each window's sum by its rows (no count scan): numpy's means of
    every row, time and given-start window, in one piece and in several on threads."""
    starts = np.maximum(np.repeat([0, 30, 31], [30, 1, len(CLEAN) - 31]), np.arange(len(CLEAN)) - 6)
    monkeypatch.setattr(pieces, "ROWS_PER_THREAD", 8)
    for threads in (1, 3):
        for window in WINDOWS:
            assert same(blockscan.rolling(CLEAN, window, "mean_f", threads=threads), brute_rows(CLEAN, window, "mean_f"))
        for span in SPANS:
            got = blockscan.rolling(CLEAN, None, "mean_f", times=TIMES, span=span, threads=threads)
            assert same(got, brute_times(CLEAN, TIMES, span, "mean_f")), span
        want = [np.mean(CLEAN[starts[i]:i + 1]) for i in range(len(CLEAN))]
        assert same(blockscan.rolling(CLEAN, None, "mean_f", starts=starts, threads=threads), want)
    for kwargs in (dict(window=7), dict(window=None, times=TIMES, span=5), dict(window=None, starts=starts)):
        serial = blockscan.rolling(CLEAN, key="mean_f", **kwargs)
        assert np.array_equal(blockscan.rolling(CLEAN, key="mean_f", threads=3, **kwargs), serial), kwargs


@pytest.mark.parametrize("row", [0, 3, 80, 155, 156])
def test_a_mean_counts_values_wherever_its_one_nan_lies(row, monkeypatch):
    """A mean first takes each window's rows as its count and stops at the first segment with a
    NaN: a lone NaN in the first segment, a later piece or the last row still leaves every window
    its count of values, in one piece and on threads."""
    values = CLEAN.copy()
    values[row] = np.nan
    monkeypatch.setattr(pieces, "ROWS_PER_THREAD", 8)
    for threads in (1, 3):
        for window in (1, 4, 64):
            got = blockscan.rolling(values, window, "mean_f", threads=threads)
            assert same(got, brute_rows(values, window, "mean_f")), (row, window, threads)
        got = blockscan.rolling(values, None, "mean_f", times=TIMES, span=5, threads=threads)
        assert same(got, brute_times(values, TIMES, 5, "mean_f")), (row, threads)


@pytest.mark.parametrize("key", FLOAT_KEYS)
def test_given_starts_and_pieces_on_threads(key, monkeypatch):
    # windows cut at "key" boundaries (rows 0, 30, 31, 90): starts jump forward there
    firsts = np.repeat([0, 30, 31, 90], [30, 1, 59, len(VALUES) - 90])
    starts = np.maximum(firsts, np.arange(len(VALUES)) - 6)
    want = np.array([reduce_valid(VALUES[starts[i]:i + 1], key) for i in range(len(VALUES))])
    assert same(blockscan.rolling(VALUES, None, key, starts=starts), want)
    monkeypatch.setattr(pieces, "ROWS_PER_THREAD", 8)  # pieces of a few segments each
    for threads in (2, 5):
        for args, kwargs in (((VALUES, 5, key), {}), ((VALUES, None, key), dict(times=TIMES, span=5)),
                             ((VALUES, None, key), dict(starts=starts))):
            serial = blockscan.rolling(*args, **kwargs)
            assert np.array_equal(blockscan.rolling(*args, **kwargs, threads=threads), serial, equal_nan=True)


PANDAS = {"sum_f": "sum", "mean_f": "mean", "max": "max", "min": "min", "count": "count", "var1": "var", "std1": "std"}


@pytest.mark.parametrize("key", list(PANDAS))
def test_matches_pandas_without_infinities(key):
    values = CLEAN.copy()
    values[[3, 4, 5, 30]] = np.nan
    for window in (1, 3, 20, 500):
        want = getattr(pd.Series(values).rolling(window, min_periods=1), PANDAS[key])().to_numpy()
        assert same(blockscan.rolling(values, window, key), want), window
    series = pd.Series(values, index=pd.to_datetime(TIMES, unit="s"))
    want = getattr(series.rolling("5s"), PANDAS[key])().to_numpy()
    assert same(blockscan.rolling(values, None, key, times=TIMES, span=5), want)


def test_empty_input_and_window_one():
    for key in FLOAT_KEYS:
        got = blockscan.rolling(np.empty(0), 3, key)
        assert got.shape == (0,) and got.dtype == (np.int64 if key == "count" else np.float64)
        assert blockscan.rolling(np.empty(0), None, key, times=np.empty(0, np.int64), span=5).shape == (0,)
    assert np.array_equal(blockscan.rolling(CLEAN, 1, "max"), CLEAN)
    assert np.array_equal(blockscan.rolling(CLEAN, 1, "sum_f"), CLEAN)


# ---------------------------------------------------------------- exactness: nothing left from evicted items
def test_zeros_after_huge_values_are_exactly_zero():
    cancelling = np.array([1e16, 1.1, -1e16] + [0.0] * 12)
    drift = np.array([1e16, 1.0, 123.456, 1.123456789] + [0.0] * 10)  # bottleneck's move_sum leaves 0.42
    for values in (cancelling, drift):
        zeros = np.flatnonzero(np.arange(len(values)) >= np.flatnonzero(values != 0)[-1] + 3)
        for key in ("sum_f", "mean_f", "var1", "std1", "var0", "max", "min"):
            got = blockscan.rolling(values, 3, key)
            assert np.all(got[zeros] == 0.0), (key, got)
            timed = blockscan.rolling(values, None, key, times=np.arange(len(values)) * 10, span=30)
            assert np.all(timed[zeros] == 0.0), (key, timed)


def test_small_values_after_huge_ones_are_exact():
    values = np.array([1e16, 1.5, 5e15] + [1.0, 2.0, 3.0] * 6 + [0.0] * 8)
    small = slice(5, 21)  # every window of three from {1, 2, 3}
    assert np.all(blockscan.rolling(values, 3, "sum_f")[small] == 6.0)
    assert np.all(blockscan.rolling(values, 3, "mean_f")[small] == 2.0)
    assert np.all(blockscan.rolling(values, 3, "var1")[small] == 1.0)
    assert np.all(blockscan.rolling(values, 3, "std1")[small] == 1.0)


def exact_variance(values):
    fractions = [Fraction(float(v)) for v in values]
    mean = sum(fractions) / len(fractions)
    return sum((f - mean) ** 2 for f in fractions) / (len(fractions) - 1)


@pytest.mark.parametrize("offset", [0.0, 1e9])
def test_variance_against_exact_arithmetic(offset):
    rng = np.random.default_rng(5)
    values = offset + rng.normal(size=600)
    values[rng.random(600) < 0.002] = 1e6 + offset  # rare outliers inside some windows
    window = 150
    got = blockscan.rolling(values, window, "var1")
    for i in rng.choice(np.arange(window, len(values)), 6, replace=False):
        exact = exact_variance(values[i - window + 1:i + 1])
        assert abs(Fraction(float(got[i])) - exact) <= exact * Fraction(1, 10**12), i
    # time windows of varying length: irregular gaps, a span of about 150 rows
    times = np.cumsum(rng.integers(1, 20, size=600))
    span = 1500
    timed = blockscan.rolling(values, None, "var1", times=times, span=span)
    for i in rng.choice(np.arange(window, len(values)), 6, replace=False):
        exact = exact_variance(values[(times > times[i] - span) & (np.arange(600) <= i)])
        assert abs(Fraction(float(timed[i])) - exact) <= exact * Fraction(1, 10**12), i


# ---------------------------------------------------------------- integer input
def test_integer_sums_are_exact():
    big = np.array([2**53, 1, 1, -(2**53), 3, 2**60, -(2**60), 5, 2**62, -3], dtype=np.int64)
    for window in (1, 2, 3, 20):
        want = [sum(int(v) for v in big[max(0, i - window + 1):i + 1]) for i in range(len(big))]
        got = blockscan.rolling(big, window, "sum_i")
        assert got.dtype == np.int64 and got.tolist() == want, window
        means = blockscan.rolling(big, window, "mean_i")
        assert means.tolist() == [float(s) / min(i + 1, window) for i, s in enumerate(want)]
    times = np.array([0, 0, 1, 5, 5, 6, 9, 9, 9, 12])
    want = [sum(int(big[j]) for j in range(i + 1) if times[i] - 3 < times[j]) for i in range(len(big))]
    assert blockscan.rolling(big, None, "sum_i", times=times, span=3).tolist() == want
    assert blockscan.rolling(big, None, "sum_i", times=times, span=2.5).tolist() == want  # (t - 3, t] on integers
    assert blockscan.rolling(big, None, "count", times=times, span=3).tolist() == \
        [sum(1 for j in range(i + 1) if times[i] - 3 < times[j]) for i in range(len(big))]


def test_integer_overflow_names_the_row():
    values = np.array([1, 2**62, 2**62, -(2**62), 7], dtype=np.int64)
    with pytest.raises(OverflowError, match="window ending at row 2 overflows"):
        blockscan.rolling(values, 3, "sum_i")
    with pytest.raises(OverflowError, match="at row 2"):
        blockscan.rolling(values, 2, "mean_i")
    assert blockscan.rolling(values, 1, "sum_i").tolist() == values.tolist()  # each row alone fits
    low = np.array([-(2**63), -1], dtype=np.int64)
    with pytest.raises(OverflowError, match="row 1"):
        blockscan.rolling(low, 2, "sum_i")


def test_integer_var_reads_floats():
    ints = RNG.integers(-1000, 1000, size=90)
    for key in ("var1", "count"):
        got = blockscan.rolling(ints, 6, key)
        assert same(got, brute_rows(ints.astype(np.float64), 6, key)), key


def test_integer_max_and_min_are_the_integers_themselves(monkeypatch):
    """int64 max and min beyond 2**53 (where float64 rounds) and at int64's ends: each answer is
    the window's largest (smallest) integer, an int64, in row, time and given-start windows, in
    one piece or several on threads."""
    ints = RNG.integers(-2 ** 63, 2 ** 63 - 1, size=90, endpoint=True)
    ints[[3, 40]] = [2 ** 63 - 1, -2 ** 63]
    times = np.cumsum(RNG.integers(0, 3, size=90))
    starts = np.maximum(np.repeat([0, 30, 31], [30, 1, 59]), np.arange(90) - 6)
    monkeypatch.setattr(pieces, "ROWS_PER_THREAD", 8)
    for key, best in (("max_i", max), ("min_i", min)):
        cases = [(dict(window=6), [range(max(0, i - 5), i + 1) for i in range(90)]),
                 (dict(window=None, times=times, span=4), [[j for j in range(i + 1) if times[j] > times[i] - 4]
                                                            for i in range(90)]),
                 (dict(window=None, starts=starts), [range(starts[i], i + 1) for i in range(90)])]
        for kwargs, rows in cases:
            want = [best(int(ints[j]) for j in window) for window in rows]
            for threads in (1, 3):
                got = blockscan.rolling(ints, key=key, threads=threads, **kwargs)
                assert got.dtype == np.int64 and got.tolist() == want, (key, kwargs, threads)


# ---------------------------------------------------------------- what it leaves to the caller
def test_returns_none_for_what_it_does_not_handle():
    assert blockscan.rolling(CLEAN, 3, "geomean") is None
    assert blockscan.rolling(CLEAN, 3, "sum_i") is None  # float input has float keys
    assert blockscan.rolling(np.arange(5), 3, "sum_f") is None
    assert blockscan.rolling(CLEAN, 3, "max_i") is None  # integer keys take integers only
    assert blockscan.rolling(CLEAN.astype(np.float32), 3, "sum_f") is None
    unsorted = np.arange(len(CLEAN))[::-1].copy()
    assert blockscan.rolling(CLEAN, None, "max", times=unsorted, span=3) is None


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="window"):
        blockscan.rolling(CLEAN, 0, "sum_f")
    with pytest.raises(ValueError, match="window"):
        blockscan.rolling(CLEAN, 2.5, "sum_f")
    with pytest.raises(ValueError, match="span"):
        blockscan.rolling(CLEAN, None, "sum_f", times=np.arange(len(CLEAN)), span=0)
    with pytest.raises(ValueError, match="times"):
        blockscan.rolling(CLEAN, None, "sum_f", times=np.arange(3), span=1)


def test_warm_leaves_the_kernels_a_later_process_needs_in_the_cache(tmp_path):
    import os
    import subprocess
    import sys

    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    subprocess.run([sys.executable, "-m", "winagg.cli", "warm", "--groups", "rolling", "--aggs", "sum", "max"],
                   env=env, check=True, capture_output=True)
    warmed = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*.nbc"))
    calls = ("import numpy as np, winagg\n"
             "x = np.array([1.0, np.nan, 3.0, 4.0])\n"
             "winagg.rolling(x, 2, 'sum'); winagg.rolling(x, 2, 'max')\n"
             "winagg.rolling(np.arange(5), 2, 'sum')\n"
             "winagg.rolling(x, 2, 'max', times=np.array([0, 1, 1, 5]))\n")
    subprocess.run([sys.executable, "-c", calls], env=env, check=True, capture_output=True)
    assert warmed, "winagg warm compiled nothing into the cache"
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*.nbc")) == warmed  # nothing new compiled
