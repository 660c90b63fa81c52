"""winagg.rolling: one result per row, compared with pandas' rolling and brute-force folds."""

import math

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import winagg
from winagg import aggregations as A
from winagg.algos.registry import choose_algorithm

#: The six in-order algorithms checked here (each algorithm x aggregation is one compiled kernel).
FIFO = ["recalc", "soe", "two_stacks", "two_stacks_lite", "daba", "daba_lite"]
FIFO_NO_INVERSE = [name for name in FIFO if name != "soe"]
PANDAS_AGGS = ["sum", "mean", "min", "max", "std", "var", "count"]
INVERTIBLE = {"sum", "mean", "count", "std", "var"}

RNG = np.random.default_rng(12345)
VALUES = RNG.normal(loc=5.0, scale=3.0, size=157)
WINDOWS = [1, 2, 7, 32, len(VALUES) + 9]


def pandas_rolling(values, window, agg):
    return getattr(pd.Series(values, dtype="float64").rolling(window, min_periods=1), agg)().to_numpy()


def close(got, want):
    got = np.asarray(got, dtype="float64")
    want = np.asarray(want, dtype="float64")
    return got.shape == want.shape and np.allclose(got, want, rtol=1e-9, atol=1e-9, equal_nan=True)


# ---------------------------------------------------------------- pandas parity, every algorithm
# Each compiled kernel costs about a second to build, so one test checks everything that runs
# on its kernel: several windows, NaN input, and the default algorithm when it is this one.
CASES = [(alg, agg) for alg in FIFO for agg in PANDAS_AGGS if alg != "soe" or agg in INVERTIBLE]

NAN_VALUES = VALUES.copy()
NAN_VALUES[[0, 3, 4, 5, 6, 20, 21, 90]] = np.nan  # rows 4-6: windows of up to four NaN


@pytest.mark.parametrize("algorithm,agg", CASES, ids=[f"{a}-{g}" for a, g in CASES])
def test_matches_pandas_for_every_fifo_algorithm(algorithm, agg):
    for window in WINDOWS:
        got = winagg.rolling(VALUES, window=window, agg=agg, algorithm=algorithm)
        assert isinstance(got, np.ndarray) and got.shape == VALUES.shape
        want = pandas_rolling(VALUES, window, agg)
        assert close(got, want), (window, np.flatnonzero(~np.isclose(got, want, equal_nan=True))[:5])
    # NaN is skipped like pandas skips it; a window of NaN only is NaN (count: 0), as in pandas
    for window in (1, 3, 10):
        got = winagg.rolling(NAN_VALUES, window=window, agg=agg, algorithm=algorithm)
        want = pandas_rolling(NAN_VALUES, window, agg)
        assert close(got, want), (window, got[:8], want[:8])
    if choose_algorithm(A.get(agg).compiled_for(np.dtype("float64")), False) == algorithm:
        # the default (a block scan where winagg.engine.blockscan has the aggregation) brackets the
        # window differently: equal up to rounding, NaN at the same rows
        for values in (VALUES, NAN_VALUES):
            default = winagg.rolling(values, window=7, agg=agg)
            named = winagg.rolling(values, 7, agg, algorithm=algorithm)
            assert np.allclose(default, named, rtol=1e-12, atol=1e-12, equal_nan=True)


def test_window_one_is_the_input():
    assert np.array_equal(winagg.rolling(VALUES, 1, "max"), VALUES)
    assert np.array_equal(winagg.rolling(VALUES, 1, "sum"), VALUES)


def test_hand_computed():
    assert winagg.rolling(np.array([1.0, 2.0, 3.0, 4.0]), window=2, agg="sum").tolist() == [1.0, 3.0, 5.0, 7.0]
    assert winagg.rolling([3.0, 1.0, 4.0, 1.0, 5.0], window=3, agg="max").tolist() == [3.0, 3.0, 4.0, 4.0, 5.0]
    assert winagg.rolling([3.0, 1.0, 4.0, 1.0, 5.0], window=3, agg="min").tolist() == [3.0, 1.0, 1.0, 1.0, 1.0]
    assert winagg.rolling([2.0, 8.0, 4.0], window=2, agg="geomean") == pytest.approx([2.0, 4.0, np.sqrt(32.0)])


# ---------------------------------------------------------------- input types
def test_pandas_series_gives_a_series_with_the_same_index():
    index = pd.date_range("2024-03-01", periods=len(VALUES), freq="min")
    s = pd.Series(VALUES, index=index, name="price")
    got = winagg.rolling(s, window=5, agg="mean")
    assert isinstance(got, pd.Series)
    assert got.index.equals(index) and got.name == "price"
    assert close(got.to_numpy(), s.rolling(5, min_periods=1).mean().to_numpy())
    odd = pd.Series([4.0, 1.0, 3.0], index=["c", "a", "b"])
    got = winagg.rolling(odd, window=2, agg="sum")
    assert list(got.index) == ["c", "a", "b"] and got.tolist() == [4.0, 5.0, 4.0]


@pytest.mark.parametrize("agg", ["sum", "mean", "max", "count", "std"])
def test_arrow_arrays_with_nulls(agg):
    floats = pa.array([1.5, None, 2.0, 7.0, None, -1.0, 4.0, 4.0], type=pa.float64())
    ints = pa.array([3, None, 5, 1, None, 2, 8, 8], type=pa.int64())
    for arr in (floats, ints):
        as_nan = np.array([np.nan if v is None else float(v) for v in arr.to_pylist()])
        for window in (2, 3, 20):
            got = winagg.rolling(arr, window=window, agg=agg)
            assert close(got, pandas_rolling(as_nan, window, agg)), (arr.type, window)
    chunked = pa.chunked_array([floats[:3], floats[3:]])
    as_nan = np.array([np.nan if v is None else v for v in floats.to_pylist()])
    assert close(winagg.rolling(chunked, window=3, agg=agg), pandas_rolling(as_nan, 3, agg))


def test_arrow_without_nulls():
    arr = pa.array(VALUES)
    assert close(winagg.rolling(arr, window=4, agg="max"), pandas_rolling(VALUES, 4, "max"))


@pytest.mark.parametrize("dtype", ["Int64", "Float64", "int64[pyarrow]", "float64"])
def test_pandas_series_with_missing_values(dtype):
    s = pd.Series([1, None, 3, 4, None, 6], dtype=dtype, index=list("uvwxyz"))
    got = winagg.rolling(s, window=2, agg="mean")
    want = pd.Series([1.0, np.nan, 3.0, 4.0, np.nan, 6.0]).rolling(2, min_periods=1).mean()
    assert isinstance(got, pd.Series) and list(got.index) == list("uvwxyz")
    assert close(got.to_numpy(dtype="float64"), want.to_numpy())


@pytest.mark.parametrize("agg", ["sum", "mean", "max", "count"])
def test_integer_inputs(agg):
    ints = RNG.integers(-1000, 1000, size=120)
    for window in (1, 5, 200):
        got = winagg.rolling(ints, window=window, agg=agg)
        assert close(got, pandas_rolling(ints.astype("float64"), window, agg)), window
    series = pd.Series(ints.astype("int32"))
    assert close(winagg.rolling(series, window=6, agg=agg).to_numpy(),
                 getattr(series.rolling(6, min_periods=1), agg)().to_numpy())
    if agg == "sum":  # integer partials: exact where float64 would round
        big = np.array([2**53, 1, 1, -(2**53), 3, 2**60, -(2**60), 5], dtype=np.int64)
        want = [sum(int(x) for x in big[max(0, i - 2):i + 1]) for i in range(len(big))]
        for algorithm in (None, "daba_lite"):
            got = winagg.rolling(big, window=3, agg="sum", algorithm=algorithm)
            assert got.dtype.kind == "i"
            assert [int(x) for x in got] == want, algorithm
        flags = np.array([True, False, True, True, False])  # booleans count True as one
        assert winagg.rolling(flags, window=2, agg="sum").tolist() == [1, 1, 1, 2, 1]


# ---------------------------------------------------------------- exactness: no residue from evicted items
BIG_THEN_SMALL = np.array([1e16, 1.5, 5e15] + [1.0, 2.0, 3.0] * 6 + [0.0] * 8)


def test_float_sum_has_no_residue_where_pandas_has():
    got = winagg.rolling(BIG_THEN_SMALL, window=3, agg="sum")
    pandas = pandas_rolling(BIG_THEN_SMALL, 3, "sum")
    small = slice(5, 21)  # every window of three from {1, 2, 3}
    zeros = slice(-6, None)  # windows of zeros only
    assert np.all(got[small] == 6.0)
    assert np.all(got[zeros] == 0.0)
    # why this test exists: pandas' running sum keeps a residue of the evicted huge values
    assert np.all(pandas[small] != 6.0)


def test_float_mean_and_variance_have_no_residue():
    mean = winagg.rolling(BIG_THEN_SMALL, window=3, agg="mean")
    var = winagg.rolling(BIG_THEN_SMALL, window=3, agg="var")
    std = winagg.rolling(BIG_THEN_SMALL, window=3, agg="std")
    small, zeros = slice(5, 21), slice(-6, None)
    assert np.all(mean[small] == 2.0) and np.all(mean[zeros] == 0.0)
    assert np.all(var[small] == 1.0) and np.all(var[zeros] == 0.0)
    assert np.all(std[small] == 1.0) and np.all(std[zeros] == 0.0)
    assert np.all(pandas_rolling(BIG_THEN_SMALL, 3, "mean")[small] != 2.0)
    assert np.all(pandas_rolling(BIG_THEN_SMALL, 3, "var")[small] != 1.0)


def test_zeros_after_cancelling_huge_values_sum_to_exactly_zero():
    values = [1e16, 1.0, -1e16] + [0.0] * 10
    for agg in ("sum", "mean", "var"):
        got = winagg.rolling(values, window=3, agg=agg)
        assert np.all(got[5:] == 0.0), (agg, got)
    # (pandas gives 0.0 here as well: it special-cases windows of one repeated value)


# ---------------------------------------------------------------- default algorithm choice
FLOAT_PARTIAL_AGGS = ["sum", "mean", "var", "std", "var_pop", "std_pop", "geomean", "min", "max", "argmax",
                      "argmin", "maxcount", "mincount", "relvar", "bloom", "countmin", "hll"]


@pytest.mark.parametrize("agg", FLOAT_PARTIAL_AGGS)
def test_default_is_never_soe_for_float_inputs(agg):
    spec = A.get(agg).compiled_for(np.dtype("float64"))
    assert spec is not None
    assert choose_algorithm(spec, False) != "soe"
    assert choose_algorithm(spec, False) in FIFO


def test_default_is_soe_for_integer_sum_and_count():
    assert choose_algorithm(A.Sum().compiled_for(np.dtype("int64")), True) == "soe"
    assert choose_algorithm(A.Count().compiled_for(np.dtype("int64")), True) == "soe"
    # float variances and means of integers still avoid subtraction where it is not exact
    assert choose_algorithm(A.Variance().compiled_for(np.dtype("int64")), True) != "soe"
    assert choose_algorithm(A.Max().compiled_for(np.dtype("int64")), True) != "soe"
    # python-mode monoids (no compiled description) get a non-subtracting algorithm
    assert choose_algorithm(None, False) != "soe" and choose_algorithm(None, True) != "soe"


def test_count_of_floats_is_exact_whatever_the_algorithm():
    # count's partials are integers, so subtract-on-evict is exact for it even on float input
    values = BIG_THEN_SMALL.copy()
    values[[4, 9]] = np.nan
    want = pandas_rolling(values, 4, "count")
    for algorithm in ("soe", None):
        assert np.array_equal(winagg.rolling(values, 4, "count", algorithm=algorithm), want)


# ---------------------------------------------------------------- time-based windows
def timed_series(seed=3, n=300):
    rng = np.random.default_rng(seed)
    minutes = np.sort(rng.integers(0, 24 * 60, size=n))  # many equal timestamps
    index = pd.Timestamp("2024-05-01") + pd.to_timedelta(minutes, unit="min")
    return pd.Series(rng.normal(size=n) * 10, index=pd.DatetimeIndex(index))


def brute_time_window(values, times, window, reduce):
    out = []
    for i in range(len(values)):
        inside = [values[j] for j in range(i + 1) if times[i] - window < times[j] <= times[i]]
        out.append(reduce(inside) if inside else np.nan)
    return np.array(out, dtype="float64")


INT_TIMES = np.cumsum(np.random.default_rng(11).integers(0, 4, size=200))  # steps of 0 give equal times
INT_TIME_VALUES = np.random.default_rng(12).normal(size=200)


@pytest.mark.parametrize("agg", ["sum", "mean", "max", "count"])
def test_time_window_matches_pandas(agg):
    s = timed_series()
    assert s.index.has_duplicates
    want = getattr(s.rolling("1h"), agg)().to_numpy()
    got = winagg.rolling(s, window="1h", agg=agg, times=s.index)
    assert isinstance(got, pd.Series) and got.index.equals(s.index)
    assert close(got.to_numpy(), want)
    # times as a numpy datetime64 array, window as a Timedelta, values as numpy
    got = winagg.rolling(s.to_numpy(), window=pd.Timedelta(minutes=60), agg=agg, times=s.index.to_numpy())
    assert close(got, want)
    # integer times with an integer window (the same kernel): pandas with the times read as seconds
    by_seconds = pd.Series(INT_TIME_VALUES, index=pd.to_datetime(INT_TIMES, unit="s"))
    got = winagg.rolling(INT_TIME_VALUES, window=7, agg=agg, times=INT_TIMES)
    assert close(got, getattr(by_seconds.rolling("7s"), agg)().to_numpy())
    reduce = {"sum": sum, "mean": np.mean, "max": max, "count": len}[agg]
    assert close(got, brute_time_window(INT_TIME_VALUES, INT_TIMES, 7, reduce))
    if agg == "sum":
        times = pd.to_datetime(["2024-01-01 00:00", "2024-01-01 00:00", "2024-01-01 00:30",
                                "2024-01-01 01:00", "2024-01-01 01:00", "2024-01-01 02:30"])
        values = np.array([1.0, 2.0, 4.0, 8.0, 16.0, 32.0])
        # (t - 1h, t]: at 01:00 the rows at 00:00 are out; equal times enter one row at a time
        assert winagg.rolling(values, "1h", "sum", times=times).tolist() == [1.0, 3.0, 7.0, 12.0, 28.0, 32.0]
        assert pd.Series(values, index=times).rolling("1h").sum().tolist() == [1.0, 3.0, 7.0, 12.0, 28.0, 32.0]


@pytest.mark.parametrize("agg,reduce", [("sum", sum), ("max", max)])
def test_float_times_with_float_window(agg, reduce):
    rng = np.random.default_rng(13)
    times = np.cumsum(rng.uniform(0.0, 2.0, size=200))
    times[50:53] = times[50]  # equal times
    values = rng.normal(size=200)
    for window in (0.5, 5.5, 1000.0):
        got = winagg.rolling(values, window=window, agg=agg, times=times)
        assert close(got, brute_time_window(values, times, window, reduce)), window


def test_unsorted_times_raise_out_of_order_for_in_order_algorithms():
    # Unsorted times without a named algorithm run fiba (tests/algos/ooo/test_fiba_rolling.py).
    times = np.array([1.0, 2.0, 5.0, 4.0, 6.0])
    with pytest.raises(winagg.OutOfOrderError, match="row 3"):
        winagg.rolling(np.ones(5), window=2.0, agg="sum", times=times, algorithm="daba_lite")
    with pytest.raises(winagg.OutOfOrderError):
        winagg.rolling(np.ones(5), window=2.0, agg="collect", times=times, algorithm="two_stacks")  # python mode
    dt = pd.to_datetime(["2024-01-01 10:00", "2024-01-01 09:00"])
    with pytest.raises(winagg.OutOfOrderError):
        winagg.rolling(np.ones(2), window="1h", agg="max", times=dt, algorithm="daba")


def test_missing_times_raise_invalid_time():
    with pytest.raises(winagg.InvalidTimeError, match="NaT"):
        winagg.rolling(np.ones(3), window="1h", agg="sum",
                       times=pd.to_datetime(["2024-01-01 10:00", None, "2024-01-01 11:00"]))
    with pytest.raises(winagg.InvalidTimeError, match="NaN"):
        winagg.rolling(np.ones(3), window=1.0, agg="sum", times=np.array([0.0, np.nan, 2.0]))
    with pytest.raises(winagg.InvalidTimeError):
        winagg.rolling(["a", "b"], window=1.0, agg=A.Collect(), times=np.array([np.nan, 1.0]))


def test_bad_arguments():
    with pytest.raises(ValueError):
        winagg.rolling(VALUES, window=0, agg="sum")
    with pytest.raises(TypeError):
        winagg.rolling(VALUES, window=2.5, agg="sum")
    with pytest.raises(ValueError):
        winagg.rolling(np.ones((3, 2)), window=2, agg="sum")
    with pytest.raises(ValueError):
        winagg.rolling(np.ones(3), window=2, agg="sum", times=np.arange(4))
    with pytest.raises(winagg.UnknownNameError):
        winagg.rolling(VALUES, window=2, agg="sum", algorithm="fastest")
    with pytest.raises(winagg.UnknownNameError):
        winagg.rolling(VALUES, window=2, agg="summ")
    with pytest.raises(winagg.NotInvertibleError):
        winagg.rolling(VALUES, window=2, agg="max", algorithm="soe")


# ---------------------------------------------------------------- python mode: user monoids
def concat(a, b):
    return a + b


def tag(x):
    return f"{x}."


CONCAT = winagg.Monoid("", concat, tag, name="concat")


@pytest.mark.parametrize("algorithm", FIFO_NO_INVERSE)
def test_user_monoid_runs_in_python_mode(algorithm):
    words = [f"w{i}" for i in range(23)]
    for window in (1, 4, 30):
        got = winagg.rolling(words, window=window, agg=CONCAT, algorithm=algorithm)
        want = ["".join(f"{w}." for w in words[max(0, i - window + 1):i + 1]) for i in range(len(words))]
        assert list(got) == want, window


def test_user_monoid_with_times_and_series():
    words = pd.Series(["a", "b", "c", "d", "e"], index=[5, 6, 7, 8, 9])
    times = np.array([0, 1, 1, 3, 10])
    got = winagg.rolling(words, window=2, agg=CONCAT, times=times)
    assert isinstance(got, pd.Series) and list(got.index) == [5, 6, 7, 8, 9]
    assert got.tolist() == ["a.", "a.b.", "a.b.c.", "d.", "e."]


def test_collect_through_rolling():
    got = winagg.rolling(np.array([1.0, 2.0, 3.0, 4.0]), window=3, agg="collect")
    assert [list(x) for x in got] == [[1.0], [1.0, 2.0], [1.0, 2.0, 3.0], [2.0, 3.0, 4.0]]


def test_user_numeric_monoid_gives_numbers():
    prod = winagg.Monoid(1.0, lambda a, b: a * b, name="product")
    got = winagg.rolling(np.array([2.0, 3.0, 0.5, 4.0]), window=2, agg=prod)
    assert got.tolist() == [2.0, 6.0, 1.5, 2.0]


# ---------------------------------------------------------------- argmax / argmin: row positions
def brute_arg(values, window, pick):
    out = []
    for i in range(len(values)):
        lo = max(0, i - window + 1)
        out.append(lo + int(pick(values[lo:i + 1])))  # numpy: the first occurrence wins ties
    return np.array(out)


@pytest.mark.parametrize("algorithm", FIFO_NO_INVERSE)
def test_argmax_returns_row_positions_ties_to_earliest(algorithm):
    values = np.random.default_rng(5).integers(0, 4, size=90).astype("float64")  # many ties
    for window in (1, 3, 8, 100):
        got = winagg.rolling(values, window=window, agg="argmax", algorithm=algorithm)
        assert got.dtype.kind == "i"
        assert np.array_equal(got, brute_arg(values, window, np.argmax)), window


def test_argmin_returns_row_positions():
    values = np.random.default_rng(6).integers(0, 4, size=90).astype("float64")
    for window in (2, 9):
        assert np.array_equal(winagg.rolling(values, window, "argmin"), brute_arg(values, window, np.argmin))


def test_argmax_time_window():
    values = np.array([5.0, 1.0, 5.0, 2.0, 9.0, 9.0, 0.0])
    times = np.array([0, 1, 2, 3, 4, 4, 20])
    assert winagg.rolling(values, window=3, agg="argmax", times=times).tolist() == [0, 0, 0, 2, 4, 4, 6]


# ---------------------------------------------------------------- one semantics on every algorithm
EVERY_IN_ORDER = [None, "daba_lite", "two_stacks", "flatfat", "soe"]


def _exact_variance(window, ddof=1):
    """The variance of finite floats from exact fractions, rounded once (inf beyond float64)."""
    from fractions import Fraction

    items = [Fraction(v) for v in window]
    mean = sum(items) / len(items)
    exact = sum((v - mean) ** 2 for v in items) / (len(items) - ddof)
    try:
        return float(exact)
    except OverflowError:
        return math.inf


@pytest.mark.parametrize("algorithm", EVERY_IN_ORDER)
def test_variance_with_an_infinite_item_is_nan_on_every_algorithm(algorithm):
    got = winagg.rolling(np.array([1.0, np.inf, 2.0, 3.0]), 2, "var", algorithm=algorithm)
    assert np.isnan(got[:3]).all() and got[3] == 0.5  # pandas: NaN, NaN, NaN, 0.5


@pytest.mark.parametrize("algorithm", EVERY_IN_ORDER)
@pytest.mark.parametrize("agg", ["var", "std"])
def test_variance_of_huge_values_is_the_rounded_exact_answer(algorithm, agg):
    values = np.array([-1e300, 1.0, 0.0, 1.4e154, 3e200, 3e200])
    got = winagg.rolling(values, 2, agg, algorithm=algorithm)
    for i in range(1, values.size):
        want = _exact_variance(values[i - 1:i + 1])
        want = math.sqrt(want) if agg == "std" and want != math.inf else want
        if agg == "std" and want == math.inf:
            want = math.sqrt(_exact_variance(values[i - 1:i + 1] / 1e200)) * 1e200
        assert got[i] == pytest.approx(want, rel=1e-12), i


@pytest.mark.parametrize("agg,want", [("sum", [np.inf, np.inf, 3.0, 5.0, -np.inf, np.nan, np.inf, 11.0]),
                                      ("mean", [np.inf, np.inf, 1.5, 2.5, -np.inf, np.nan, np.inf, 5.5])])
@pytest.mark.parametrize("algorithm", EVERY_IN_ORDER)
def test_an_infinity_that_left_the_window_leaves_no_trace(agg, want, algorithm):
    values = np.array([np.inf, 1.0, 2.0, 3.0, -np.inf, np.inf, 5.0, 6.0])
    got = winagg.rolling(values, 2, agg, algorithm=algorithm)
    np.testing.assert_array_equal(got, want)


def test_a_rolling_median_on_threads_gives_the_bits_of_one_thread():
    x = np.random.default_rng(5).normal(size=3 * 2**16)  # three pieces of rows (pieces.ROWS_PER_THREAD)
    x[::97] = np.nan
    one = winagg.rolling(x, 300, "median", threads=1)
    assert np.array_equal(winagg.rolling(x, 300, "median", threads=3), one, equal_nan=True)
    want = pd.Series(x).rolling(300, min_periods=1).median().to_numpy()
    np.testing.assert_allclose(one, want, rtol=0, atol=0)
