"""The per-item aggregator: times, bulk operations, the error contract and pickling."""

import math
import operator
import pickle

import numpy as np
import pytest

import winagg

#: The six in-order algorithms without range queries (the DABA paper family, recalc and soe).
FIFO = ["recalc", "soe", "two_stacks", "two_stacks_lite", "daba", "daba_lite"]


def snapshot(agg):
    """Everything observable about a window (lists for collect, so equality is by content)."""
    answer = agg.query()
    answer = "NaN" if isinstance(answer, float) and answer != answer else answer  # NaN != NaN
    return (len(agg), answer, agg.oldest_time(), agg.youngest_time())


def filled(algorithm, agg="sum", values=(1.0, 2.0, 4.0, 8.0), times=(10, 20, 20, 30)):
    a = winagg.make(algorithm, agg)
    for v, t in zip(values, times):
        a.insert(v, t)
    return a


# ---------------------------------------------------------------- times
@pytest.mark.parametrize("algorithm", FIFO)
def test_insert_without_time_uses_arrival_numbers(algorithm):
    agg = winagg.make(algorithm, "sum")
    for v in (5.0, 6.0, 7.0):
        agg.insert(v)
    assert (agg.oldest_time(), agg.youngest_time()) == (0, 2)
    agg.evict()
    agg.insert(1.0)
    assert (agg.oldest_time(), agg.youngest_time()) == (1, 3)
    agg.bulk_insert([2.0, 3.0])
    assert agg.youngest_time() == 5
    assert agg.bulk_evict(3) == 3  # arrivals 1, 2, 3
    assert agg.query() == 5.0 and len(agg) == 2


@pytest.mark.parametrize("algorithm", FIFO)
def test_bulk_evict_drops_items_with_time_at_most_t(algorithm):
    agg = winagg.make(algorithm, "count")
    times = [1, 2, 2, 2, 5, 7, 7, 9]
    agg.bulk_insert([float(t) for t in times], times)
    assert len(agg) == 8  # equal times are separate items, like rows
    assert agg.query() == 8
    assert agg.bulk_evict(0) == 0 and len(agg) == 8
    assert agg.bulk_evict(1.5) == 1
    assert agg.bulk_evict(2) == 3  # all three items at time 2
    assert agg.oldest_time() == 5 and len(agg) == 4
    assert agg.bulk_evict(6.999) == 1
    assert agg.bulk_evict(7) == 2
    assert agg.query() == 1 and agg.oldest_time() == agg.youngest_time() == 9
    assert agg.bulk_evict(100) == 1
    assert len(agg) == 0 and agg.query() == 0 and agg.oldest_time() is None
    assert agg.bulk_evict(200) == 0


@pytest.mark.parametrize("algorithm", FIFO)
def test_equal_times_are_kept_as_separate_items(algorithm):
    agg = winagg.make(algorithm, "sum")
    for v in (1.0, 2.0, 4.0):
        agg.insert(v, 3)
    assert len(agg) == 3 and agg.query() == 7.0
    agg.evict()
    assert len(agg) == 2 and agg.query() == 6.0 and agg.oldest_time() == 3


@pytest.mark.parametrize("algorithm", FIFO)
def test_datetime_times(algorithm):
    agg = winagg.make(algorithm, "sum")
    t0 = np.datetime64("2024-01-01T00:00")
    for k in range(5):
        agg.insert(float(k), t0 + np.timedelta64(k, "m"))
    assert agg.bulk_evict(t0 + np.timedelta64(2, "m")) == 3
    assert agg.query() == 7.0
    with pytest.raises(winagg.InvalidTimeError):
        agg.insert(1.0, np.datetime64("NaT"))
    with pytest.raises(winagg.OutOfOrderError):
        agg.insert(1.0, t0)
    assert agg.query() == 7.0 and len(agg) == 2


def test_growth_beyond_the_initial_capacity():
    for algorithm in FIFO:
        agg = winagg.make(algorithm, "sum")
        agg.bulk_insert([1.0] * 100)
        for _ in range(40):
            agg.evict()
        for v in range(50):
            agg.insert(2.0)
        assert len(agg) == 110 and agg.query() == 160.0, algorithm


# ---------------------------------------------------------------- errors leave the window as it was
def error_cases():
    """(label, action, exception) for every bad call on a filled window (times 10, 20, 20, 30)."""
    nan = float("nan")
    return [
        ("insert older time", lambda a: a.insert(1.0, 29), winagg.OutOfOrderError),
        ("insert NaN time", lambda a: a.insert(1.0, nan), winagg.InvalidTimeError),
        ("insert NaT time", lambda a: a.insert(1.0, np.datetime64("NaT")), winagg.InvalidTimeError),
        ("bulk_insert unsorted", lambda a: a.bulk_insert([1.0, 2.0, 3.0], [31, 40, 35]), winagg.OutOfOrderError),
        ("bulk_insert older than window", lambda a: a.bulk_insert([1.0, 2.0], [25, 40]), winagg.OutOfOrderError),
        ("bulk_insert NaN time", lambda a: a.bulk_insert([1.0, 2.0], [31, nan]), winagg.InvalidTimeError),
        ("bulk_insert None time", lambda a: a.bulk_insert([1.0, 2.0], [None, 40]), winagg.InvalidTimeError),
        ("bulk_insert length mismatch", lambda a: a.bulk_insert([1.0, 2.0], [40]), ValueError),
        ("bulk_evict NaN", lambda a: a.bulk_evict(nan), winagg.InvalidTimeError),
        ("bulk_evict None", lambda a: a.bulk_evict(None), winagg.InvalidTimeError),
        ("range query", lambda a: a.query(10, 20), winagg.UnsupportedOperationError),
        ("range query open end", lambda a: a.query(t_from=10), winagg.UnsupportedOperationError),
    ]


CASES = error_cases()


# collect has no inverse, so soe runs only sum (soe refusing collect is tested in test_registry)
ERROR_CASES = [(alg, agg) for alg in FIFO for agg in ("sum", "collect") if not (alg == "soe" and agg == "collect")]


@pytest.mark.parametrize("algorithm,agg", ERROR_CASES, ids=[f"{a}-{g}" for a, g in ERROR_CASES])
def test_errors_leave_the_aggregator_unchanged(algorithm, agg):
    a = filled(algorithm, agg)
    before = snapshot(a)
    assert before[0] == 4 and before[2:] == (10, 30)
    for label, action, exc in CASES:
        with pytest.raises(exc) as err:
            action(a)
        assert str(err.value), label  # the message names the problem
        assert snapshot(a) == before, label
    # and the aggregator still works afterwards, with the times it had
    a.insert(16.0, 30)
    a.evict()
    assert a.oldest_time() == 20 and a.youngest_time() == 30 and len(a) == 4
    assert a.bulk_evict(20) == 2
    want = 24.0 if agg == "sum" else [8.0, 16.0]
    assert a.query() == want


@pytest.mark.parametrize("algorithm", FIFO)
def test_evict_on_empty_window(algorithm):
    a = winagg.make(algorithm, "sum")
    with pytest.raises(winagg.EmptyWindowError, match="empty"):
        a.evict()
    a.insert(2.0)
    a.evict()
    for _ in range(2):
        with pytest.raises(winagg.EmptyWindowError):
            a.evict()
        assert snapshot(a) == (0, "NaN", None, None)  # an empty sum is NaN, as in pandas
    a.insert(3.0)  # still usable
    assert a.query() == 3.0 and len(a) == 1


@pytest.mark.parametrize("algorithm", FIFO)
def test_out_of_order_names_the_times(algorithm):
    a = filled(algorithm)
    with pytest.raises(winagg.OutOfOrderError) as err:
        a.insert(1.0, 5)
    assert "5" in str(err.value) and "30" in str(err.value)


def test_errors_are_winagg_errors_and_builtin_types():
    assert issubclass(winagg.OutOfOrderError, ValueError)
    assert issubclass(winagg.InvalidTimeError, ValueError)
    assert issubclass(winagg.EmptyWindowError, IndexError)
    assert issubclass(winagg.NotInvertibleError, TypeError)
    assert issubclass(winagg.UnknownNameError, KeyError)
    assert issubclass(winagg.UnsupportedOperationError, NotImplementedError)
    for exc in (winagg.OutOfOrderError, winagg.InvalidTimeError, winagg.EmptyWindowError,
                winagg.NotInvertibleError, winagg.UnknownNameError, winagg.UnsupportedOperationError):
        assert issubclass(exc, winagg.WinaggError)


def _log_of_positive(x):
    return math.log(x)  # ValueError for x <= 0


LOG_SUM = winagg.Monoid(0.0, lambda a, b: a + b, _log_of_positive, math.exp, commutative=True,
                        inverse=lambda a: -a, name="log_sum")


@pytest.mark.parametrize("algorithm", FIFO)
def test_failing_lift_leaves_the_window_unchanged(algorithm):
    a = filled(algorithm, LOG_SUM, values=(1.0, 2.0, 4.0, 8.0))
    before = snapshot(a)
    with pytest.raises(ValueError):
        a.insert(-1.0, 40)  # log of a negative number
    assert snapshot(a) == before
    with pytest.raises(ValueError):
        a.bulk_insert([2.0, -1.0], [40, 50])
    assert snapshot(a) == before
    assert before[1] == pytest.approx(64.0)


@pytest.mark.parametrize("algorithm", ["two_stacks_lite", "daba"])
def test_geomean_of_a_zero_is_zero_and_of_a_negative_is_nan(algorithm):
    a = winagg.make(algorithm, "geomean")
    a.bulk_insert([4.0, 0.0, 9.0])
    assert a.query() == 0.0
    a.evict(), a.evict()
    assert a.query() == pytest.approx(9.0)
    a.insert(-1.0)
    assert math.isnan(a.query())


# ---------------------------------------------------------------- pickling
def tag_concat(a, b):
    return a + b


def tag(x):
    return f"<{x}>"


def plus(a, b):
    return a + b


def minus(a):
    return -a


USER_CONCAT = winagg.Monoid("", tag_concat, tag, name="tags")
USER_PLUS = winagg.Monoid(0, plus, inverse=minus, commutative=True, name="plus")


def item(agg_name, value, position):
    if agg_name == "argmax":
        return (float(value % 7), position)
    if agg_name in ("collect", "tags"):
        return f"v{value}"
    if agg_name == "bloom":
        return f"k{value}"
    return float(value)


def answer(x):
    """Comparable form of a lowered answer."""
    if isinstance(x, winagg.aggregations.BloomFilter):
        return ("bloom", x.words.tobytes())
    return x


PICKLE_AGGS = ["sum", "collect", "argmax", "bloom", "tags", "plus", "stddev"]
PICKLE_CASES = [(alg, agg) for alg in FIFO for agg in PICKLE_AGGS
                if not (alg == "soe" and agg in ("collect", "argmax", "bloom", "tags"))]


def monoid_for(name):
    return {"tags": USER_CONCAT, "plus": USER_PLUS}.get(name, name)


@pytest.mark.parametrize("algorithm,agg_name", PICKLE_CASES, ids=[f"{a}-{g}" for a, g in PICKLE_CASES])
def test_pickle_mid_stream_then_continue(algorithm, agg_name):
    original = winagg.make(algorithm, monoid_for(agg_name))
    pos = 0
    # fill, evict part of it (so internal stacks/pointers are in a non-trivial state)
    for k in range(13):
        original.insert(item(agg_name, k * 3, pos), pos)
        pos += 1
    for _ in range(5):
        original.evict()
    original.insert(item(agg_name, 100, pos), pos)
    pos += 1
    copy = pickle.loads(pickle.dumps(original))
    assert type(copy) is type(original)
    assert answer(copy.query()) == answer(original.query())
    assert snapshot_times(copy) == snapshot_times(original)
    # the same operations on both give the same results
    for step in range(25):
        if step % 3 == 2:
            original.evict()
            copy.evict()
        else:
            x = item(agg_name, step * 5 + 1, pos)
            original.insert(x, pos)
            copy.insert(x, pos)
            pos += 1
        assert answer(copy.query()) == answer(original.query()), step
        assert snapshot_times(copy) == snapshot_times(original)
    assert original.bulk_evict(pos - 4) == copy.bulk_evict(pos - 4) > 0
    assert answer(copy.query()) == answer(original.query())
    copy.insert(item(agg_name, 1, pos))  # arrival numbers continue in the copy
    assert copy.youngest_time() == pos  # every earlier insert had time == its arrival number


def snapshot_times(agg):
    return (len(agg), agg.oldest_time(), agg.youngest_time())


def test_pickled_copy_is_independent():
    a = winagg.make("daba_lite", "collect")
    a.bulk_insert(["a", "b", "c"])
    b = pickle.loads(pickle.dumps(a))
    b.evict()
    b.insert("d")
    assert a.query() == ["a", "b", "c"]
    assert b.query() == ["b", "c", "d"]


@pytest.mark.parametrize("algorithm", FIFO)
def test_pickle_empty_and_drained(algorithm):
    a = winagg.make(algorithm, "sum")
    b = pickle.loads(pickle.dumps(a))
    assert snapshot(b) == (0, "NaN", None, None)
    a.bulk_insert([1.0, 2.0, 3.0])
    a.bulk_evict(10)
    b = pickle.loads(pickle.dumps(a))
    assert snapshot(b) == (0, "NaN", None, None)
    b.insert(4.0)
    assert b.query() == 4.0 and b.oldest_time() == 3


# ---------------------------------------------------------------- per-item Python
_NO_NUMBA_PROBE = """
import gc, json
import numpy as np
import winagg
from numba.core.dispatcher import Dispatcher

for algorithm in winagg.algorithms():
    a = winagg.make(algorithm.name, "sum" if algorithm.needs_inverse else "max")
    times = np.arange(3000) if algorithm.order == "any" else None
    a.bulk_insert(np.arange(3000.0), times)  # past the first capacity: the window grows
    a.insert(1.0, 3000)
    a.evict()
    a.query()
print(json.dumps(sorted(d.py_func.__qualname__ for d in gc.get_objects()
                        if isinstance(d, Dispatcher) and d.overloads)))
"""


def test_per_item_windows_of_every_algorithm_run_without_compiling_or_loading_a_kernel():
    """make() runs per item in plain Python: no kernel is compiled or loaded from numba's cache (a
    first load costs more than a small window's whole work)."""
    import json
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _NO_NUMBA_PROBE], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []
