"""``winagg.rolling`` with times in any order (FiBA), against a brute-force per-row fold and pandas."""

import numpy as np
import pandas as pd
import pytest

import winagg

from oracle import CONCAT


def brute_force(values, times, window, fold):
    """Row i: fold of the values of rows j <= i with times[i] - window < times[j] <= times[i],
    in time order (equal times in arrival order)."""
    out = []
    for i in range(len(values)):
        rows = [j for j in range(i + 1) if times[i] - window < times[j] <= times[i]]
        rows.sort(key=lambda j: (times[j], j))
        out.append(fold([values[j] for j in rows]))
    return out


def shuffled_stream(seed, n, spread, duplicates=True):
    rng = np.random.default_rng(seed)
    times = np.sort(rng.integers(0, spread, n)) if duplicates else np.arange(n) * 3
    times = times + rng.integers(-40, 40, n)  # bounded disorder, as streams have
    values = rng.integers(1, 100, n).astype(np.float64)
    return values, times


# Each (aggregation, time type) compiles the whole tree once: a few shared ones.
@pytest.mark.parametrize("agg,fold,time_type", [("max", lambda v: max(v) if v else np.nan, "int64"),
                                                ("max", lambda v: max(v) if v else np.nan, "float64")])
def test_unsorted_times_match_brute_force(agg, fold, time_type):
    values, times = shuffled_stream(1, 400, 600)
    times = times.astype(time_type)
    got = winagg.rolling(values, window=25, agg=agg, times=times)
    want = brute_force(values, times, 25, fold)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_unsorted_times_with_any_monoid_in_python_keep_time_order():
    values, times = shuffled_stream(2, 120, 200)
    letters = [chr(97 + int(v) % 26) for v in values]
    got = winagg.rolling(np.array(letters, dtype=object), window=15, agg=CONCAT, times=times)
    want = brute_force(letters, times, 15, lambda v: "".join(x + ";" for x in v))
    assert list(got) == want


def test_fractional_window_on_integer_times():
    values, times = shuffled_stream(3, 200, 300)
    got = winagg.rolling(values, window=7.5, agg="max", times=times)
    np.testing.assert_allclose(got, brute_force(values, times, 7.5, max))


def test_missing_values_give_nan_where_a_window_has_none():
    values = np.array([np.nan, 2.0, np.nan, 5.0, np.nan])
    times = np.array([10.0, 3.0, 30.0, 12.0, 50.0])
    got = winagg.rolling(values, window=5, agg="max", times=times)
    np.testing.assert_array_equal(got, [np.nan, 2.0, np.nan, 5.0, np.nan])


def test_sorted_datetimes_through_fiba_match_pandas():
    rng = np.random.default_rng(4)
    stamps = pd.to_datetime("2024-01-01") + pd.to_timedelta(np.sort(rng.integers(0, 10**6, 500)), unit="s")
    series = pd.Series(rng.normal(size=500), index=stamps)
    want = series.rolling("2h").max()
    got = winagg.rolling(series.to_numpy(), window="2h", agg="max", times=stamps.to_numpy(), algorithm="fiba")
    np.testing.assert_allclose(got, want.to_numpy(), rtol=1e-9, atol=1e-9)
    in_order = winagg.rolling(series.to_numpy(), window="2h", agg="max", times=stamps.to_numpy())
    np.testing.assert_allclose(in_order, want.to_numpy(), rtol=1e-9, atol=1e-9)


def test_an_in_order_algorithm_refuses_unsorted_times():
    with pytest.raises(winagg.OutOfOrderError):
        winagg.rolling(np.ones(3), window=2, times=np.array([1, 3, 2]), algorithm="daba_lite")


def test_row_windows_run_fiba_in_order():
    values = np.arange(50, dtype=np.float64) % 7
    got = winagg.rolling(values, window=6, agg="max", algorithm="fiba")
    want = pd.Series(values).rolling(6, min_periods=1).max().to_numpy()
    np.testing.assert_array_equal(got, want)
