"""Log MTA against the brute-force oracle: bulk evictions of every size, growth, the slide-policy search."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import winagg
from winagg.algos.fifo import lmta
from winagg.core.ops import python_ops

from oracle import CONCAT, MATRIX

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

#: (op, amount): insert `amount` items, evict one, or bulk-evict a share of the window (0 .. all).
mta_ops = st.lists(st.one_of(st.tuples(st.just("insert"), st.integers(1, 40)),
                             st.tuples(st.just("evict"), st.just(0)),
                             st.tuples(st.just("bulk"), st.floats(0.0, 1.0))), max_size=40)


def run_bulk_script(module, monoid, script, **options):
    """Drive the algorithm's Funcs directly (bulk_evict by count) next to a list; compare each step."""
    funcs = module.build(python_ops(monoid), **options)
    bufs, state = funcs.init(2)
    window, counter = [], 0
    for op, amount in script:
        if op == "insert":
            for _ in range(amount):
                if state[2] - state[1] > state[0]:
                    bufs, state = funcs.grow(bufs, state)
                item = monoid.lift(counter)
                counter += 1
                state = funcs.insert(bufs, state, item)
                window.append(item)
        elif op == "evict" and window:
            state = funcs.evict(bufs, state)
            window.pop(0)
        elif op == "bulk":
            count = round(amount * len(window))
            state = funcs.bulk_evict(bufs, state, count)
            del window[:count]
        want = monoid.identity
        for item in window:
            want = monoid.combine(want, item)
        assert funcs.query(bufs, state) == want, (op, amount, len(window))
        assert state[2] - state[1] == len(window)


@pytest.mark.parametrize("monoid", [CONCAT, MATRIX], ids=["concat", "matrix"])
@SETTINGS
@given(script=mta_ops)
def test_bulk_evictions_of_any_size_match_a_list(monoid, script):
    run_bulk_script(lmta, monoid, script)


@pytest.mark.parametrize("count", [0, 1, 2, 57, 511, 999, 1000])
def test_bulk_eviction_of_none_one_some_and_all(count):
    agg = winagg.make("lmta", CONCAT)
    agg.bulk_insert(list(range(1000)))
    assert agg.bulk_evict(count - 1) == count  # times are arrival numbers 0..999
    assert agg.query() == "".join(f"{i};" for i in range(count, 1000))
    agg.insert(1000)
    assert agg.query() == "".join(f"{i};" for i in range(count, 1001))


def test_levels_stay_logarithmic_in_the_window_not_the_stream():
    total = winagg.aggregations.get("sum")  # partials (sum, number of values)
    funcs = lmta.build(python_ops(total))
    bufs, state = funcs.init(64)
    for i in range(20_000):
        if state[2] - state[1] == 64:
            state = funcs.evict(bufs, state)
        state = funcs.insert(bufs, state, total.lift(1.0))
    assert state[3] <= 8  # h: log2(64) + 2
    assert total.lower(funcs.query(bufs, state)) == 64.0


def test_compiled_time_window_uses_the_native_bulk_eviction(agg="mean"):
    # the time kernel evicts everything older than the horizon in one bulk_evict call
    rng = np.random.default_rng(5)
    values = rng.integers(0, 100, 3000).astype(np.float64)
    times = np.cumsum(rng.choice([0, 0, 1, 1, 2, 40], 3000)).astype(np.int64)
    got = winagg.rolling(values, 30, agg, times=times, algorithm="lmta")
    monoid = winagg.aggregations.get(agg)
    for i in range(0, 3000, 7):
        inside = values[(times > times[i] - 30) & (np.arange(3000) <= i)]
        assert got[i] == pytest.approx(monoid.fold(inside.tolist()))


def test_slide_policy_search_finds_the_longest_removable_prefix():
    funcs = lmta.build(python_ops(CONCAT))
    bufs, state = funcs.init(2)
    for i in range(300):
        if state[2] - state[1] > state[0]:
            bufs, state = funcs.grow(bufs, state)
        state = funcs.insert(bufs, state, f"{i};")
    total = funcs.query(bufs, state)
    for keep_out in (0, 1, 150, 299, 300):
        def wsp(total, old, limit=keep_out):
            return old.count(";") <= limit
        assert funcs.removable(bufs, state, total, "", wsp) == keep_out


@pytest.mark.parametrize("algorithm", ["lmta", "amta"])
@pytest.mark.parametrize("count", [1.5, "2", None, True])
def test_evict_oldest_needs_a_whole_count_and_changes_nothing_otherwise(algorithm, count):
    agg = winagg.make(algorithm, "sum")
    agg.bulk_insert([1.0, 2.0, 4.0])
    with pytest.raises(TypeError, match="count must be a whole number"):
        agg.evict_oldest(count)
    assert (len(agg), agg.query()) == (3, 7.0)
    assert agg.evict_oldest(np.int64(2)) == 2 and agg.query() == 4.0
