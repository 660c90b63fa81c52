"""The front door for values (winagg.values): what users pass reaches every path as the same
exact numbers, or is refused by name. Expected values are written out or computed in plain
Python, never by winagg."""

import fractions

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import winagg
from winagg.values import float_values, numeric_values, to_array


@pytest.mark.parametrize("make_input", [
    lambda v: pd.array(v, dtype="Int64"),
    lambda v: pd.Index(v),
    lambda v: pd.Categorical(v),
    lambda v: pd.Series(v, dtype="int64[pyarrow]"),
    lambda v: pa.chunked_array([v[:2], v[2:]]),
    lambda v: pa.array(v),
])
def test_pandas_and_arrow_containers_read_as_their_numbers(make_input):
    got = winagg.rolling(make_input([1, 2, 3, 4]), 2, "sum")
    assert list(np.asarray(got)) == [1, 3, 5, 7]


def test_nullable_integers_with_a_null_stay_exact_when_float64_holds_them():
    s = pd.Series([2**53, None, 1], dtype="Int64")
    got = winagg.rolling(s, 2, "sum")
    assert got.iloc[0] == 2**53 and got.iloc[1] == 2**53 and got.iloc[2] == 1.0


@pytest.mark.parametrize("column", [pd.Series([2**53 + 1, None, 1], dtype="Int64"),
                                    pa.array([2**53 + 1, None, 1])])
def test_nullable_integers_that_float64_would_round_are_refused_by_row(column):
    with pytest.raises(ValueError, match=r"values\[0\] = 9007199254740993"):
        winagg.rolling(column, 2, "sum")


def test_python_ints_beyond_int64_are_refused_not_recursed():
    with pytest.raises(OverflowError, match=r"values\[0\] = 1180591620717411303424 does not fit int64"):
        winagg.rolling([2**70, 1, 2], 2, "sum")


def test_fractions_are_refused_by_compiled_aggregations_and_exact_in_a_python_monoid():
    thirds = [fractions.Fraction(1, 3), fractions.Fraction(1, 2), fractions.Fraction(1, 6)]
    with pytest.raises(ValueError, match=r"values\[0\] = Fraction\(1, 3\) is a Fraction"):
        winagg.rolling(thirds, 2, "sum")
    exact = winagg.Monoid(fractions.Fraction(0), lambda a, b: a + b, name="exact sum")
    got = winagg.rolling(thirds, 2, exact)
    assert list(got) == [fractions.Fraction(1, 3), fractions.Fraction(5, 6), fractions.Fraction(2, 3)]


def test_a_mixed_list_reaches_a_custom_monoid_as_its_items():
    kinds = winagg.Monoid("", lambda a, b: a + b, lift=lambda v: type(v).__name__ + ",", name="kinds")
    assert list(winagg.rolling(["x", 1, 2.5], 3, kinds)) == ["str,", "str,int,", "str,int,float,"]


def test_pd_na_is_a_missing_value_in_make_and_window():
    agg = winagg.make("daba_lite", "sum")
    agg.insert(pd.NA)
    agg.insert(2.0)
    assert agg.query() == 2.0
    window = winagg.Window("sum", size=10, slide=10)
    closed = window.push_batch([1, 2, 20], [pd.NA, 2.0, 3.0])
    assert [(r.start, r.value) for r in closed] == [(0, 2.0)]


def test_to_array_keeps_missing_markers_as_none_and_floats_as_nan():
    assert to_array(pd.array(["a", None], dtype="string")).tolist() == ["a", None]
    assert np.isnan(to_array(pd.array([1.5, None], dtype="Float64"))[1])
    assert to_array(pd.array([1, None], dtype="Int64")).tolist() == [1, None]


def test_float_values_names_the_first_non_number():
    with pytest.raises(TypeError, match=r"values\[1\] = 'x'"):
        float_values([1.0, "x"])


def test_numeric_values_of_small_ints_with_none_is_float64():
    got = numeric_values(np.array([1, None, 3], dtype=object), "sum")
    assert got.dtype == np.float64 and np.isnan(got[1]) and got[2] == 3.0


def test_multi_in_rolling_gives_every_member():
    got = winagg.rolling(np.array([1.0, 4.0, 2.0, 3.0]), 2, winagg.Multi(total="sum", peak="max"))
    assert list(got.columns) == ["total", "peak"]
    assert got["total"].tolist() == [1.0, 5.0, 6.0, 5.0]
    assert got["peak"].tolist() == [1.0, 4.0, 4.0, 3.0]


def test_multi_in_rolling_keeps_a_series_index():
    s = pd.Series([1.0, 4.0, 2.0], index=["a", "b", "c"])
    got = winagg.rolling(s, 2, winagg.Multi(low="min", n="count"))
    assert list(got.index) == ["a", "b", "c"]
    assert got["low"].tolist() == [1.0, 1.0, 2.0] and got["n"].tolist() == [1, 2, 2]


@pytest.mark.parametrize("algorithm", [None, "daba_lite", "two_stacks_lite", "flatfat", "soe"])
def test_an_int64_sum_that_just_fits_is_exact_on_every_algorithm(algorithm):
    values = np.array([2**62, 2**62 - 1, -5], dtype=np.int64)
    got = winagg.rolling(values, 2, "sum", algorithm=algorithm)
    assert got.tolist() == [2**62, 2**63 - 1, 2**62 - 6]


@pytest.mark.parametrize("algorithm", [None, "daba_lite", "soe"])
def test_an_int64_sum_one_past_the_limit_raises(algorithm):
    with pytest.raises(OverflowError, match="row 1"):
        winagg.rolling(np.array([2**62, 2**62, 0], dtype=np.int64), 2, "sum", algorithm=algorithm)


def test_sketches_key_int64_values_above_2_53_apart():
    values = np.array([2**53, 2**53 + 1, 2**53 + 2, 2**53 + 3], dtype=np.int64)
    distinct = winagg.rolling(values, 4, "hll")
    assert round(float(distinct[-1])) == 4  # four keys; as floats they are two


def test_sketches_in_rolling_take_strings_as_make_does():
    words = ["a", "b", "c", "a"]
    got = winagg.rolling(np.array(words), 3, "hll")
    agg = winagg.make("two_stacks_lite", "hll")
    for word in words[1:]:
        agg.insert(word)
    assert got[-1] == agg.query()
    assert [round(x) for x in got] == [1, 2, 3, 3]


def test_sketches_in_rolling_skip_missing_strings():
    got = winagg.rolling(["a", None, "c", "a"], 3, "bloom")
    assert [round(x) for x in got] == [1, 1, 2, 2]


def test_make_keeps_integer_sums_exact_past_int64_too():
    agg = winagg.make("daba_lite", "sum")
    agg.insert(2**62)
    agg.insert(2**62 - 1)
    assert agg.query() == 2**63 - 1  # float64 would say 9223372036854775808.0
    agg.insert(1)
    assert agg.query() == 2**63 and isinstance(agg.query(), int)  # Python ints: no int64 to leave
    agg.evict()
    assert agg.query() == 2**62


def test_a_python_mode_count_window_answers_only_the_windows_it_reports():
    window = winagg.Window("sum", rows=2, slide=3, compiled=False)
    top, bottom = 2**63 - 1, -2**63
    for value in (top, top):  # one at a time: the window [top, top] is never reported
        assert window.push_batch(None, [value]) == []
    assert [r.value for r in window.push_batch(None, [bottom])] == [-1]


@pytest.mark.parametrize("values", [np.array([2**53 + 1, 1]), [2**53 + 1, 1]])
def test_a_compiled_window_refuses_integers_that_float64_would_round(values):
    window = winagg.Window("sum", size=10, slide=10)
    with pytest.raises(ValueError, match=r"values\[0\] = 9007199254740993 is an integer beyond 2\*\*53"):
        window.push_batch([1, 2], values)
    exact = winagg.Window("sum", size=10, slide=10, compiled=False)
    assert [r.value for r in exact.push_batch([1, 2, 30], [2**53 + 1, 1, 0])] == [2**53 + 2]


@pytest.mark.parametrize("compiled", [True, False])
def test_a_window_of_missing_values_only_is_nan_in_a_window(compiled):
    window = winagg.Window("max", size=10, slide=10, compiled=compiled)
    closed = window.push_batch([1, 2, 30], [np.nan, None, 3.0])
    assert len(closed) == 1 and closed[0].start == 0 and np.isnan(closed[0].value)


@pytest.mark.parametrize("name", ["sum", "max", "min"])
def test_an_empty_or_all_missing_window_is_nan_in_make_as_in_rolling(name):
    agg = winagg.make("two_stacks_lite", name)
    assert np.isnan(agg.query())
    agg.insert(np.nan)
    assert np.isnan(agg.query()) and np.isnan(winagg.rolling(np.array([np.nan]), 1, name)[0])


def test_a_missing_value_beside_integers_keeps_the_sum_an_exact_int():
    agg = winagg.make("daba", "sum")
    agg.insert(2**53 + 1)
    agg.insert(None)
    agg.insert(pd.NA)
    assert agg.query() == 2**53 + 1 and isinstance(agg.query(), int)


@pytest.mark.parametrize("compiled", [True, False])
def test_variance_of_finite_values_whose_means_lie_beyond_float64_is_inf(compiled):
    agg = winagg.make("recalc", "var")
    agg.insert(1e300)
    agg.insert(-1.7976931348623157e308)
    assert agg.query() == np.inf  # exactly about 1.6e616: beyond float64, not NaN
    window = winagg.Window("var", rows=2, compiled=compiled)
    assert window.push_batch(None, [1e300, -1.7976931348623157e308])[-1].value == np.inf


def test_subtract_on_evict_keeps_an_integer_mean_exact_in_make():
    agg = winagg.make("soe", "mean")
    agg.insert(2**63 - 1)
    agg.insert(1)
    agg.evict()  # float64 partials would cancel to 0 here
    agg.insert(0)
    assert agg.query() == 0.5
