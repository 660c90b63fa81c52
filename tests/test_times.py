"""Every input a user can give winagg.rolling: the answer pandas would give, or an error naming it.

Each test here failed before winagg.times existed (a crash, a wrapped sum, a silently wrong
window); expected values come from pandas or from counting by hand, never from winagg.
"""

import math

import numpy as np
import pandas as pd
import pytest

import winagg
from winagg.times import INT64_MAX, INT64_MIN, as_times

# ---------------------------------------------------------------- times at int64's limits


@pytest.mark.parametrize("times", [[6, INT64_MIN], [INT64_MIN, 6], [INT64_MIN, INT64_MIN + 3]])
def test_times_at_int64_min_give_each_row_its_own_window(times):
    # window 10: rows 6 and -2**63 are far apart, so each window holds one row; the last two
    # times are 3 apart, so that window holds both.
    want = [1.0, 2.0] if times[1] - times[0] == 3 else [1.0, 1.0]
    got = winagg.rolling(np.ones(2), 10, times=np.array(times, dtype=np.int64), agg="sum")
    assert got.tolist() == want


def test_times_at_int64_max_and_min_together():
    t = np.array([INT64_MIN + 10, 0, INT64_MAX - 5, INT64_MAX], dtype=np.int64)
    got = winagg.rolling(np.ones(4), 10, times=t, agg="count")
    assert got.tolist() == [1, 1, 1, 2]


def test_times_wider_than_int64_with_the_window_are_refused():
    t = np.array([INT64_MIN, INT64_MAX], dtype=np.int64)
    with pytest.raises(OverflowError, match="times span"):
        winagg.rolling(np.ones(2), 2**62, times=t, agg="sum")


def test_unsigned_times_above_int64_stay_exact():
    t = np.array([2**63 + 10, 2**63 + 11, 2**63 + 20], dtype=np.uint64)
    assert winagg.rolling(np.ones(3), 2, times=t, agg="sum").tolist() == [1.0, 2.0, 1.0]


def test_as_times_keeps_nanoseconds_one_apart_distinct():
    t0 = 1_700_000_000_000_000_000
    t, w = as_times(np.array([t0, t0 + 1, t0 + 2]), 1, 3)
    assert t.dtype == np.int64 and w == 1
    assert winagg.rolling(np.array([1.0, 2.0, 4.0]), 2, times=np.array([t0, t0 + 1, t0 + 2])).tolist() == [1, 3, 6]


def test_fractional_window_on_integer_times_is_exact():
    # (t - 1.5, t] holds the integers t-1 and t: the same rows as a window of 2
    t = np.array([2**62, 2**62 + 1, 2**62 + 2], dtype=np.int64)
    assert winagg.rolling(np.ones(3), 1.5, times=t, agg="sum").tolist() == [1.0, 2.0, 2.0]


def test_infinite_float_times_are_refused():
    with pytest.raises(winagg.InvalidTimeError, match=r"times\[1\] is infinite"):
        winagg.rolling(np.ones(2), 1.0, times=np.array([0.0, np.inf]))


def test_none_in_times_is_refused():
    with pytest.raises(winagg.InvalidTimeError, match=r"times\[1\] is None"):
        winagg.rolling(np.ones(2), 1, times=[0, None])


# ---------------------------------------------------------------- datetime units
@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
def test_numeric_window_is_in_the_times_unit(unit):
    t = np.array([0, 1, 2, 5], dtype=f"datetime64[{unit}]")
    got = winagg.rolling(np.ones(4), 2, times=t, agg="sum")
    want = pd.Series(np.ones(4), index=pd.DatetimeIndex(t.astype("datetime64[ns]"))).rolling(
        pd.Timedelta(2, unit=unit)).sum()
    assert got.tolist() == want.tolist() == [1.0, 2.0, 2.0, 1.0]


def test_duration_window_finer_than_the_times_unit():
    t = np.array([0, 1, 2], dtype="datetime64[s]")
    assert winagg.rolling(np.ones(3), "1500ms", times=t, agg="sum").tolist() == [1.0, 2.0, 2.0]


def test_seconds_times_far_from_1970_stay_exact():
    # year 3000 is beyond datetime64[ns]; whole-second windows never need nanoseconds
    t = np.array(["3000-01-01T00:00:00", "3000-01-01T00:00:01", "3000-01-01T01:00:00"], dtype="datetime64[s]")
    # (00:00:00, 01:00:00] holds the second and the third row
    assert winagg.rolling(np.ones(3), "1h", times=t, agg="sum").tolist() == [1.0, 2.0, 2.0]


# ---------------------------------------------------------------- integer values
def test_integer_sum_overflow_names_the_row():
    with pytest.raises(OverflowError, match="row 1"):
        winagg.rolling(np.array([2**62, 2**62]), 2, "sum")
    with pytest.raises(OverflowError, match="row 3"):  # rows 2 and 3 sum to 2**63
        winagg.rolling(np.array([2**62, -2**62, 2**62, 2**62]), 2, "mean")


def test_integer_sum_whose_running_total_wraps_is_still_exact():
    values = np.array([2**62, 2**62, -2**62, -2**62, 5], dtype=np.int64)
    # windows of 2: 2**63 overflows at row 1; a window of 1 never does
    assert winagg.rolling(values, 1, "sum").tolist() == values.tolist()
    with pytest.raises(OverflowError, match="row 1"):
        winagg.rolling(values, 2, "sum")


def test_integer_sum_overflow_in_a_time_window():
    with pytest.raises(OverflowError, match="row 2"):  # 2**62 + 1 + 2**62 is 2**63 + 1
        winagg.rolling(np.array([2**62, 1, 2**62]), 5, times=np.array([0, 1, 2]), agg="sum")
    # 2**62 - 1 + 2**62 is int64's largest value: it fits
    assert winagg.rolling(np.array([2**62, -1, 2**62]), 5, times=np.array([0, 1, 2]), agg="sum").tolist() == \
        [2**62, 2**62 - 1, 2**63 - 1]


def test_integer_sum_overflow_out_of_order():
    # row 1 (time 1) holds itself alone; row 2 (time 2) holds times 1 and 2: 2**63
    with pytest.raises(OverflowError, match="row 2"):
        winagg.rolling(np.array([2**62, 2**62, 2**62]), 5, times=np.array([3, 1, 2]), agg="sum")


def test_unsigned_values_above_int64_are_refused():
    with pytest.raises(OverflowError, match=r"values\[1\]"):
        winagg.rolling(np.array([1, 2**63 + 5], dtype=np.uint64), 2, "sum")


# ---------------------------------------------------------------- missing values
@pytest.mark.parametrize("agg", ["sum", "count", "mean", "max", "min"])
def test_none_is_missing_like_pandas(agg):
    values = [1.0, None, 3.0, None, None]
    got = winagg.rolling(values, 2, agg)
    want = getattr(pd.Series(values, dtype=float).rolling(2, min_periods=1), agg)()
    if agg == "count":
        want = pd.Series([1, 1, 1, 1, 0])  # pandas counts non-missing values too
    np.testing.assert_array_equal(np.asarray(got, dtype=float), want.to_numpy(dtype=float))


def test_integers_with_none_become_floats():
    assert winagg.rolling([1, None, 3], 3, "sum").tolist() == [1.0, 1.0, 4.0]


def test_none_is_missing_per_item_too():
    agg = winagg.make("two_stacks_lite", "sum")
    agg.bulk_insert([1.0, None, 3.0])
    assert agg.query() == 4.0
    count = winagg.make("daba", "count")
    count.bulk_insert([1.0, None])
    assert count.query() == 1


# ---------------------------------------------------------------- shapes and types
def test_a_huge_row_window_allocates_for_the_input_only():
    assert winagg.rolling(np.ones(4), 10**12, "max").tolist() == [1.0] * 4


def test_dataframe_is_rolled_per_column_like_pandas():
    frame = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [4.0, None, 6.0]}, index=[10, 20, 30])
    got = winagg.rolling(frame, 2, "sum")
    pd.testing.assert_frame_equal(got, frame.rolling(2, min_periods=1).sum())


def test_strings_for_a_numeric_aggregation_name_the_value():
    with pytest.raises(TypeError, match=r"sum needs numbers.*values\[1\] = 'b'"):
        winagg.rolling(np.array([1, "b"], dtype=object), 2, "sum")


def test_two_dimensional_values_are_refused():
    with pytest.raises(ValueError, match="one-dimensional"):
        winagg.rolling(np.ones((2, 2)), 2, "sum")


def test_empty_input_gives_empty_output():
    assert winagg.rolling(np.array([], dtype=float), 3, "sum").shape == (0,)
    assert winagg.rolling(np.array([], dtype=float), 3, "max", times=np.array([], dtype=np.int64)).shape == (0,)


# ---------------------------------------------------------------- aggregations at their edges
def test_relvar_of_a_zero_maximum_is_nan_compiled_and_per_item():
    compiled = winagg.rolling(np.array([0.0, -1.0, 2.0]), 2, "relvar")
    assert math.isnan(compiled[0]) and math.isnan(compiled[1]) and compiled[2] == pytest.approx(1.5)
    agg = winagg.make("two_stacks", "relvar")
    agg.insert(0.0)
    assert math.isnan(agg.query())


def test_geomean_of_zero_is_zero_compiled_and_per_item():
    assert winagg.rolling(np.array([0.0, 4.0, 9.0]), 2, "geomean").tolist() == pytest.approx([0.0, 0.0, 6.0])
    agg = winagg.make("two_stacks", "geomean")
    agg.insert(0.0)
    assert agg.query() == 0.0


def test_m4_skips_nan_whatever_the_bracketing():
    m4 = winagg.aggregations.get("m4")
    items = [m4.lift(x) for x in (3.0, float("nan"), 1.0, 5.0)]
    left = m4.combine(m4.combine(m4.combine(items[0], items[1]), items[2]), items[3])
    right = m4.combine(items[0], m4.combine(items[1], m4.combine(items[2], items[3])))
    assert left[2:] == right[2:] == (1.0, 5.0)
    assert left[0] == 3.0 and left[1] == 5.0


# ---------------------------------------------------------------- properties at the limits
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_offsets = st.lists(st.integers(0, 50), min_size=1, max_size=25)
_near = st.sampled_from([INT64_MIN, INT64_MIN + 7, -(2**62), 0, 2**62, INT64_MAX - 200])
_cells = st.one_of(st.floats(-1e3, 1e3, allow_nan=False), st.sampled_from([math.nan, math.inf, -math.inf, None]))


def _by_hand(values, times, window, fold):
    """The window ending at each row, by the definition: rows j <= i with t[i] - w < t[j] <= t[i]."""
    out = []
    for i in range(len(values)):
        inside = [values[j] for j in range(i + 1) if times[i] - window < times[j] <= times[i]]
        out.append(fold([v for v in inside if v is not None and not math.isnan(v)]))
    return out


@settings(max_examples=40, deadline=None)
@given(base=_near, steps=_offsets, window=st.integers(1, 2**63 - 1) | st.integers(1, 60),
       cells=st.lists(_cells, min_size=25, max_size=25), shuffle=st.booleans())
def test_times_near_int64_limits_give_the_windows_of_the_definition(base, steps, window, cells, shuffle):
    times = [min(base + s, INT64_MAX) for s in np.cumsum(steps).tolist()]
    if shuffle:
        times = times[::-1]  # out of order: the finger B-tree's path
    values = cells[:len(times)]
    t = np.array(times, dtype=np.int64)
    counts = winagg.rolling(values, window, "count", times=t).tolist()
    assert counts == _by_hand(values, times, window, len)
    highs = winagg.rolling(values, window, "max", times=t).tolist()
    want = _by_hand(values, times, window, lambda xs: max(xs) if xs else math.nan)
    assert all((math.isnan(w) and math.isnan(g)) or g == w for g, w in zip(highs, want))


@settings(max_examples=30, deadline=None)
@given(unit=st.sampled_from(["s", "ms", "us", "ns", "m", "h", "D"]), steps=_offsets, window=st.integers(1, 40))
def test_a_numeric_window_counts_in_the_unit_of_datetime_times(unit, steps, window):
    ticks = np.cumsum(steps).astype(np.int64)
    t = ticks.astype(f"datetime64[{unit}]")
    got = winagg.rolling(np.ones(len(t)), window, "sum", times=t).tolist()
    assert got == [float(c) for c in _by_hand([1.0] * len(t), ticks.tolist(), window, len)]


# ---------------------------------------------------------------- duration windows (issue 38)
import datetime  # noqa: E402

_SECONDS = np.array([0, 0, 1, 2, 2, 2, 5, 9], dtype="datetime64[s]")


def _ns(times) -> list:
    """Times as int nanoseconds since the epoch, by numpy's own cast (the reference)."""
    return np.asarray(times).astype("datetime64[ns]").astype(np.int64).tolist()


@pytest.mark.parametrize("window, window_ns", [
    (np.timedelta64(3, "ns"), 3),  # shorter than one tick of the times: equal times only
    (np.timedelta64(1500, "ms"), 1_500_000_000),
    (np.timedelta64(3, "s"), 3_000_000_000),
    (np.timedelta64(1, "m"), 60_000_000_000),
    (datetime.timedelta(seconds=3), 3_000_000_000),
    (datetime.timedelta(microseconds=1), 1_000),
    (pd.Timedelta(3, "s"), 3_000_000_000),
    (pd.offsets.Second(2), 2_000_000_000),
])
@pytest.mark.parametrize("unit", ["s", "ns"])
def test_a_duration_window_is_the_length_it_is_on_times_of_any_unit(window, window_ns, unit):
    times = _SECONDS.astype(f"datetime64[{unit}]")
    values = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0]
    want = _by_hand(values, _ns(times), window_ns, sum)
    assert winagg.rolling(np.array(values), window, "sum", times=times).tolist() == want
    shuffled = [3, 0, 7, 1, 6, 2, 5, 4]  # out of order: the finger B-tree's path
    want = _by_hand([values[i] for i in shuffled], [_ns(times)[i] for i in shuffled], window_ns, sum)
    assert winagg.rolling(np.array(values)[shuffled], window, "sum", times=times[shuffled]).tolist() == want


def test_a_nanosecond_window_on_second_times_is_not_three_seconds():
    # the symptom: 3 ns read as 3 ticks of the times (3 s) summed rows 1 s apart
    got = winagg.rolling(np.ones(3), np.timedelta64(3, "ns"), "sum", times=np.array([0, 1, 2], "datetime64[s]"))
    assert got.tolist() == [1.0, 1.0, 1.0]


def test_a_second_window_on_nanosecond_times_like_pandas():
    times = pd.DatetimeIndex(["2024-01-01 00:00:00", "2024-01-01 00:00:01.5", "2024-01-01 00:00:02.999999999",
                              "2024-01-01 00:00:03", "2024-01-01 00:00:04"])
    s = pd.Series([1.0, 2.0, 4.0, 8.0, 16.0], index=times)
    want = s.rolling("3s").sum()
    for window in (np.timedelta64(3, "s"), datetime.timedelta(seconds=3), pd.Timedelta("3s")):
        pd.testing.assert_series_equal(winagg.rolling(s, window, "sum", times=s.index), want)


@pytest.mark.parametrize("window", [np.timedelta64(3, "s"), np.timedelta64(3, "ns"), datetime.timedelta(seconds=3),
                                    pd.Timedelta("3s"), "3s"])
@pytest.mark.parametrize("times", [np.array([0, 1, 2]), np.array([0.0, 1.0, 2.0]), np.array([0, 1, 2], np.uint32)])
def test_a_duration_window_on_numeric_times_is_refused_naming_window(window, times):
    with pytest.raises(ValueError, match="window .* is a duration, which needs datetime times"):
        winagg.rolling(np.ones(3), window, "sum", times=times)


@pytest.mark.parametrize("window", [np.timedelta64(1, "M"), np.timedelta64(1, "Y"), pd.offsets.MonthEnd(1), "1M",
                                    np.timedelta64("NaT"), np.timedelta64(5), "soon"])
def test_a_window_of_no_fixed_length_is_refused_naming_window(window):
    with pytest.raises(ValueError, match="window"):
        winagg.rolling(np.ones(3), window, "sum", times=np.array([0, 1, 2], "datetime64[s]"))


def test_a_window_finer_than_the_times_unit_counts_whole_ticks_exactly():
    # times in picoseconds, window 1.5 ns: (t - 1500 ps, t] holds the rows within 1499 ps
    times = np.array([0, 1000, 1499, 1500, 3000], dtype="datetime64[ps]")
    got = winagg.rolling(np.ones(5), np.timedelta64(1500, "ps"), "count", times=times).tolist()
    assert got == _by_hand([1.0] * 5, [0, 1000, 1499, 1500, 3000], 1500, len)


# ---------------------------------------------------------------- tz-aware times (issue 38)
def _around_dst(zone: str, start: str, rows: int, seed: int) -> pd.Series:
    """Irregular tz-aware times around a daylight-saving change, with random values."""
    rng = np.random.default_rng(seed)
    steps = np.cumsum(rng.integers(0, 40, rows)).astype("timedelta64[m]")
    utc = pd.DatetimeIndex(np.datetime64(start, "ns") + steps).tz_localize("UTC")
    return pd.Series(rng.normal(size=rows), index=utc.tz_convert(zone))


@pytest.mark.parametrize("zone, start", [("Europe/Berlin", "2024-03-30T22:00"),  # spring forward 02:00 -> 03:00
                                         ("Europe/Berlin", "2024-10-26T22:00"),  # fall back 03:00 -> 02:00
                                         ("America/New_York", "2024-03-10T03:00"), ("UTC", "2024-01-01")])
@pytest.mark.parametrize("agg", ["mean", "sum", "max", "count"])
def test_tz_aware_times_give_pandas_windows_across_a_dst_change(zone, start, agg):
    s = _around_dst(zone, start, 300, seed=len(zone) + len(agg))
    want = getattr(s.rolling("1h"), agg)()
    same = dict(check_freq=False, check_dtype=False)  # winagg counts in int64, pandas in float64
    pd.testing.assert_series_equal(winagg.rolling(s, "1h", agg, times=s.index), want, **same)
    # the same times given as a tz-aware Series, or with the window as a timedelta
    pd.testing.assert_series_equal(winagg.rolling(s, pd.Timedelta("1h"), agg, times=s.index.to_series()), want,
                                   **same)


def test_tz_aware_times_out_of_order_are_the_utc_instants():
    s = _around_dst("Europe/Berlin", "2024-03-30T22:00", 200, seed=3)
    order = np.random.default_rng(4).permutation(200)
    shuffled = s.iloc[order]
    want = _by_hand(shuffled.tolist(), _ns(shuffled.index.tz_convert(None)), 3_600_000_000_000, sum)
    got = winagg.rolling(shuffled, "1h", "sum", times=shuffled.index)
    assert got.index.equals(shuffled.index)
    np.testing.assert_allclose(got.to_numpy(), want)


def test_tz_aware_arrow_times_and_lists_of_timestamps():
    pa = pytest.importorskip("pyarrow")
    s = _around_dst("Europe/Berlin", "2024-03-30T22:00", 50, seed=5)
    want = s.rolling("1h").sum().to_numpy()
    np.testing.assert_allclose(winagg.rolling(s.to_numpy(), "1h", "sum", times=pa.array(s.index)), want)
    np.testing.assert_allclose(winagg.rolling(s.to_numpy(), "1h", "sum", times=list(s.index)), want)
    naive = list(s.index[:2]) + [s.index[2].tz_localize(None)]
    with pytest.raises(winagg.InvalidTimeError, match=r"times\[2\] is a tz-naive datetime"):
        winagg.rolling(np.ones(3), "1h", "sum", times=naive)


def test_timedelta_times_roll_like_pandas():
    times = pd.to_timedelta([0, 1, 2, 2, 5, 9], unit="s")
    s = pd.Series([1.0, 2.0, 4.0, 8.0, 16.0, 32.0], index=times)
    pd.testing.assert_series_equal(winagg.rolling(s, "2s", "sum", times=s.index), s.rolling("2s").sum())
