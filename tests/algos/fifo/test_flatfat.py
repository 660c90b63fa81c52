"""FlatFAT (the Reactive Aggregator): range queries, non-FIFO removes/updates, batches, resizing."""

import pickle

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import winagg
from oracle import CONCAT, MATRIX, fifo_range_scripts, run_fifo_range_script, same_answer

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MONOIDS = [CONCAT, MATRIX, winagg.aggregations.get("max"), winagg.aggregations.get("argmax"),
           winagg.aggregations.get("mean")]


@pytest.mark.parametrize("monoid", MONOIDS, ids=[m.name for m in MONOIDS])
@SETTINGS
@given(script=fifo_range_scripts)
def test_range_queries_match_oracle(monoid, script):
    run_fifo_range_script(winagg.make("flatfat", monoid), monoid, script)


def test_wrapped_buffer_keeps_window_order():
    agg = winagg.make("flatfat", CONCAT)  # 16 leaves
    agg.bulk_insert(range(14))
    for _ in range(10):
        agg.evict()
    agg.bulk_insert(range(14, 20))  # positions 16..19 wrap to leaves 0..3
    mask, first, end = agg._state
    assert mask == 15 and (first & mask) > ((end - 1) & mask)
    assert agg.query() == "".join(f"{i};" for i in range(10, 20))
    assert agg.query(12, 17) == "12;13;14;15;16;17;"


# ---------------------------------------------------------------- non-FIFO operations
non_fifo_operation = st.one_of(
    st.tuples(st.just("insert"), st.integers(1, 20)),
    st.tuples(st.just("insert"), st.integers(1, 20)),
    st.tuples(st.just("bulk_insert"), st.lists(st.integers(1, 20), max_size=10)),
    st.tuples(st.just("remove"), st.integers(0, 40)),
    st.tuples(st.just("remove"), st.integers(0, 40)),
    st.tuples(st.just("update"), st.integers(0, 40), st.integers(1, 20)),
    st.tuples(st.just("update_many"), st.lists(st.integers(0, 40), max_size=6, unique=True), st.integers(1, 20)),
    st.tuples(st.just("evict")),
    st.tuples(st.just("bulk_evict"), st.integers(-1, 6)),
    st.tuples(st.just("range"), st.integers(-2, 30), st.integers(-2, 30)),
)


def check_against_list(agg, monoid, items, context):
    """``items`` is the brute-force window: a list of (time, item), oldest first."""
    assert len(agg) == len(items), context
    assert agg.oldest_time() == (items[0][0] if items else None), context
    assert agg.youngest_time() == (items[-1][0] if items else None), context
    got, want = agg.query(), monoid.fold([x for _, x in items])
    assert same_answer(got, want), f"{context}: got {got!r}, want {want!r}"


@pytest.mark.parametrize("monoid", [CONCAT, MATRIX], ids=["concat", "matrix"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(script=st.lists(non_fifo_operation, max_size=80))
def test_removes_and_updates_match_a_list(monoid, script):
    agg = winagg.make("flatfat", monoid)
    items, clock = [], 0
    for step, op in enumerate(script):
        context = f"step {step} {op}"
        kind = op[0]
        if kind == "insert":
            clock += 1
            agg.insert(op[1], clock)
            items.append((clock, op[1]))
        elif kind == "bulk_insert":
            times = list(range(clock + 1, clock + 1 + len(op[1])))
            clock += len(op[1])
            agg.bulk_insert(op[1], times)
            items.extend(zip(times, op[1]))
        elif kind in ("remove", "update") and items:
            index = op[1] % len(items)
            if kind == "remove":
                agg.remove(index)
                del items[index]
            else:
                agg.update(index, op[2])
                items[index] = (items[index][0], op[2])
        elif kind == "update_many" and items:
            indices = sorted({i % len(items) for i in op[1]})
            values = [op[2] + k for k in range(len(indices))]
            agg.update_many(indices, values)
            for i, v in zip(indices, values):
                items[i] = (items[i][0], v)
        elif kind == "evict" and items:
            agg.evict()
            items.pop(0)
        elif kind == "bulk_evict":
            cut = (items[0][0] if items else 0) + op[1]
            kept = [(t, x) for t, x in items if t > cut]
            assert agg.bulk_evict(cut) == len(items) - len(kept), context
            items = kept
        elif kind == "range":
            want = monoid.fold([x for t, x in items if op[1] <= t <= op[2]])
            assert same_answer(agg.query(op[1], op[2]), want), context
        check_against_list(agg, monoid, items, context)
        mask, first, end = agg._state
        assert end - first <= mask + 1, context


def test_remove_out_of_range_raises_and_keeps_the_window():
    agg = winagg.make("flatfat", "sum")
    agg.bulk_insert([1, 2, 3])
    with pytest.raises(IndexError):
        agg.remove(3)
    agg.remove(-1)  # the youngest
    assert (len(agg), agg.query(), agg.youngest_time()) == (2, 3, 1)


def test_resize_policy_grows_compacts_and_shrinks():
    agg = winagg.make("flatfat", CONCAT)
    for i in range(64):
        agg.insert(i)
    assert agg._state[0] + 1 == 64
    for _ in range(20):  # holes in the middle: 44 live of 64 slots <= 3/4, so the next insert compacts
        agg.remove(10)
    agg.insert(64)
    assert agg._state[0] + 1 == 64 and not agg._holes
    for _ in range(40):
        agg.evict()
    assert agg._state[0] + 1 <= 32  # below a quarter live: halved
    assert agg.query() == "60;61;62;63;64;"  # 0..9, 30..64 were live


def test_pickle_keeps_holes():
    agg = winagg.make("flatfat", CONCAT)
    agg.bulk_insert("abcdef")
    agg.remove(2)
    copy = pickle.loads(pickle.dumps(agg))
    assert copy.query() == "a;b;d;e;f;" and len(copy) == 5
    copy.remove(1)
    assert copy.query() == "a;d;e;f;"


def test_compiled_rolling_matches_brute_force():
    values = np.random.default_rng(3).normal(size=300)
    for agg, fold in (("max", np.max), ("sum", np.sum)):
        got = winagg.rolling(values, window=37, agg=agg, algorithm="flatfat")
        want = [fold(values[max(0, i - 36):i + 1]) for i in range(len(values))]
        np.testing.assert_allclose(got, want)


def test_compiled_time_window_uses_the_batched_eviction():
    rng = np.random.default_rng(11)
    values, times = rng.normal(size=400), np.cumsum(rng.integers(0, 4, size=400))
    got = winagg.rolling(values, times=times, window=23, agg="max", algorithm="flatfat")
    # row i covers the rows j <= i with times[i] - 23 < times[j] (equal times: only the rows so far)
    want = [values[:i + 1][times[:i + 1] > times[i] - 23].max() for i in range(len(values))]
    np.testing.assert_allclose(got, want)
