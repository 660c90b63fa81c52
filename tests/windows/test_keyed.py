"""winagg.rolling(..., by=keys): one window per key, compared with pandas' groupby-rolling and
brute-force folds per key."""

import numpy as np
import pandas as pd
import pytest

import winagg
from winagg.engine import blockscan, pieces

PANDAS_AGGS = ["sum", "mean", "min", "max", "std", "var", "count"]
RNG = np.random.default_rng(4040)
N = 240
#: keys in any order: one-row keys, long keys, a key that comes back after others
KEYS = np.concatenate([RNG.integers(0, 12, N - 3), [97, 98, 5]])
RNG.shuffle(KEYS)
VALUES = RNG.normal(loc=3.0, scale=2.0, size=N)
VALUES[RNG.random(N) < 0.08] = np.nan
TIMES = pd.Timestamp("2024-03-01") + pd.to_timedelta(np.cumsum(RNG.exponential(900, N)).round(), unit="s")


def pandas_rows(values, keys, window, agg, dropna=True):
    frame = pd.DataFrame({"k": keys, "x": values})
    grouped = frame.groupby("k", dropna=dropna)["x"].rolling(window, min_periods=1)
    return getattr(grouped, agg)().reset_index(level=0, drop=True).sort_index().to_numpy()


def pandas_times(values, keys, times, window, agg):
    frame = pd.DataFrame({"k": keys, "x": values, "row": np.arange(len(values))}, index=pd.DatetimeIndex(times))
    result = getattr(frame.groupby("k")["x"].rolling(window), agg)()
    rows = frame.groupby("k")["row"].rolling(window).max()  # the row of each result, the same order
    out = np.empty(len(values))
    out[rows.to_numpy().astype(int)] = result.to_numpy()
    return out


def brute_force(values, keys, times, window, fold):
    """Row i folds the rows j <= i of its key whose time lies in (times[i] - window, times[i]]."""
    out = []
    for i in range(len(values)):
        items = [values[j] for j in range(i + 1) if keys[j] == keys[i] and times[i] - window < times[j] <= times[i]]
        out.append(fold(items))
    return out


def brute_rows(values, keys, window, fold):
    """Row i folds the last ``window`` rows j <= i of its key."""
    return [fold([values[j] for j in range(i + 1) if keys[j] == keys[i]][-window:]) for i in range(len(values))]


def close(got, want):
    return np.allclose(np.asarray(got, float), np.asarray(want, float), rtol=1e-9, atol=1e-9, equal_nan=True)


@pytest.mark.parametrize("agg", PANDAS_AGGS)
def test_row_and_time_windows_match_pandas_groupby_rolling(agg):
    for window in (1, 3, 10, N + 5):
        assert close(winagg.rolling(VALUES, window, agg, by=KEYS), pandas_rows(VALUES, KEYS, window, agg)), window
    for window in ("30min", "2h"):
        got = winagg.rolling(VALUES, window, agg, by=KEYS, times=TIMES)
        assert close(got, pandas_times(VALUES, KEYS, TIMES, window, agg)), window


@pytest.mark.parametrize("agg", ["sum", "max"])
def test_a_named_in_order_algorithm_matches_pandas(agg):
    assert close(winagg.rolling(VALUES, 7, agg, by=KEYS, algorithm="two_stacks_lite"), pandas_rows(VALUES, KEYS, 7, agg))
    got = winagg.rolling(VALUES, "1h", agg, by=KEYS, times=TIMES, algorithm="two_stacks_lite")
    assert close(got, pandas_times(VALUES, KEYS, TIMES, "1h", agg))


def test_integer_values_and_keys_already_in_order():
    values = RNG.integers(-50, 50, N)
    keys = np.sort(KEYS)
    for agg in ("sum", "mean", "count"):
        assert close(winagg.rolling(values, 5, agg, by=keys), pandas_rows(values.astype(float), keys, 5, agg))


def test_unsorted_times_within_keys_run_out_of_order():
    times = RNG.integers(0, 400, N)  # in any order, within each key too
    values = np.where(np.isnan(VALUES), 0.0, VALUES)
    want = brute_force(values, KEYS, times, 60, lambda items: float(np.sum(items)))
    assert close(winagg.rolling(values, 60, "sum", by=KEYS, times=times), want)
    assert close(winagg.rolling(values, 60, "sum", by=KEYS, times=times, algorithm="fiba"), want)


def test_unsorted_times_within_a_key_refuse_an_in_order_algorithm():
    keys = np.array([1, 2, 1, 2])
    times = np.array([5, 1, 3, 2])  # sorted within key 2, not within key 1 (row 2 is older than row 0)
    with pytest.raises(winagg.OutOfOrderError, match="row 2 is older than row 0 of the same key"):
        winagg.rolling(np.ones(4), 10, "sum", by=keys, times=times, algorithm="daba")
    assert close(winagg.rolling(np.ones(4), 10, "sum", by=np.array([1, 2, 3, 2]), times=times), [1, 1, 1, 2])


def test_python_monoid_per_key():
    collect = winagg.Monoid((), lambda a, b: a + b, lift=lambda v: (v,), name="tuple")
    values = np.arange(N, dtype=float)
    got = winagg.rolling(values, 3, collect, by=KEYS)
    want = brute_rows(values, KEYS, 3, tuple)
    assert list(got) == list(want)
    times = RNG.integers(0, 50, N)
    got = winagg.rolling(values, 10, collect, by=KEYS, times=times)
    fold = (lambda items: tuple(v for _, v in sorted((times[int(v)], v) for v in items)))  # time order
    assert list(got) == list(brute_force(values, KEYS, times, 10, fold))


def test_argmax_reports_input_rows():
    values = RNG.normal(size=N)
    got = winagg.rolling(values, 4, "argmax", by=KEYS)
    rows = np.arange(N)
    want = brute_rows(rows, KEYS, 4, lambda items: max(items, key=lambda j: (values[j], -j)))
    assert np.array_equal(got, want)


def test_series_keys_and_index_and_empty_input():
    series = pd.Series(VALUES, index=pd.RangeIndex(1000, 1000 + N), name="x")
    got = winagg.rolling(series, 4, "mean", by=pd.Series(KEYS, index=series.index))
    assert got.index.equals(series.index) and got.name == "x"
    assert close(got, pandas_rows(VALUES, KEYS, 4, "mean"))
    assert winagg.rolling(np.empty(0), 3, "sum", by=np.empty(0, int)).shape == (0,)
    assert winagg.rolling(np.empty(0), 3, "sum", by=np.empty(0, int), times=np.empty(0, int)).shape == (0,)


def test_missing_keys_are_one_group_like_dropna_false():
    keys = np.array(["a", None, "b", np.nan, "a", None], dtype=object)
    values = np.arange(6, dtype=float)
    got = winagg.rolling(values, 2, "sum", by=keys)
    assert close(got, pandas_rows(values, keys, 2, "sum", dropna=False))
    assert close(got, [0, 1, 2, 4, 4, 8])


def test_dataframe_by_column_names_gives_a_frame_of_value_columns():
    frame = pd.DataFrame({"k": KEYS, "x": VALUES, "y": RNG.normal(size=N), "j": KEYS % 2})
    got = winagg.rolling(frame, 5, "max", by="k")
    assert list(got.columns) == ["x", "y", "j"] and got.index.equals(frame.index)
    for name in ("x", "y", "j"):
        assert close(got[name], pandas_rows(frame[name].astype(float), KEYS, 5, "max"))
    two = winagg.rolling(frame, 5, "sum", by=["k", "j"], threads=2)
    assert list(two.columns) == ["x", "y"]
    assert close(two["y"], pandas_rows(frame["y"], KEYS, 5, "sum"))  # j is a function of k: same groups
    assert close(winagg.rolling(frame[["x", "y"]], 5, "sum", by=KEYS, threads=1)["x"], pandas_rows(VALUES, KEYS, 5, "sum"))


def test_threads_give_the_serial_bits(monkeypatch):
    monkeypatch.setattr(pieces, "ROWS_PER_THREAD", 16)
    values = RNG.normal(loc=1e6, size=4000)
    values[::37] = np.nan
    keys = RNG.integers(0, 30, values.size)
    times = np.cumsum(RNG.integers(0, 5, values.size))
    for agg in ("sum", "std", "min"):
        for kwargs in (dict(window=25), dict(window=40, times=times)):
            for by in (None, keys):
                serial = winagg.rolling(values, agg=agg, by=by, threads=1, **kwargs)
                assert np.array_equal(winagg.rolling(values, agg=agg, by=by, threads=3, **kwargs), serial, equal_nan=True)


def test_bad_keys_and_threads_are_named():
    with pytest.raises(ValueError, match="by has 3 keys but values has 4 rows"):
        winagg.rolling(np.ones(4), 2, "sum", by=[1, 2, 3])
    with pytest.raises(TypeError, match="by must be"):
        winagg.rolling(np.ones(4), 2, "sum", by=7)
    with pytest.raises(KeyError, match="by names columns"):
        winagg.rolling(pd.DataFrame({"x": [1.0]}), 2, "sum", by="nope")
    with pytest.raises(ValueError, match="threads must be at least 1"):
        winagg.rolling(np.ones(4), 2, "sum", threads=0)
    with pytest.raises(TypeError, match="threads must be"):
        winagg.rolling(np.ones(4), 2, "sum", threads=1.5)


def test_median_per_key():
    got = winagg.rolling(VALUES, 4, "median", by=KEYS)
    assert close(got, pandas_rows(VALUES, KEYS, 4, "median"))


def test_key_order_and_bounds_on_threads_match_one_thread(monkeypatch):
    from winagg.windows import keyed

    monkeypatch.setattr(pieces, "ROWS_PER_THREAD", 10)
    keys = RNG.integers(0, 7, 500)
    serial, split = keyed.groups_of(keys, 500, 1), keyed.groups_of(keys, 500, 4)
    assert np.array_equal(split.order, np.argsort(keys, kind="stable"))
    assert np.array_equal(serial.order, split.order)
    times = np.sort(RNG.integers(0, 100, 500))[split.order]  # sorted within each key
    for bounds in (lambda g: keyed.row_bounds(g, 9), lambda g: keyed.time_bounds(g, times, 12)):
        assert np.array_equal(bounds(serial).starts, bounds(split).starts)
    values = RNG.normal(size=500)
    assert np.array_equal(split.to_rows(split.in_key_order(values)), values)
