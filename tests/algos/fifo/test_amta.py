"""Amortized MTA against the brute-force oracle: bulk evictions of every size, growth, the slide-policy search."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import winagg
from winagg.algos.fifo import amta
from winagg.core.ops import python_ops

from oracle import CONCAT, MATRIX
from test_lmta import run_bulk_script

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

#: (op, amount): insert `amount` items, evict one, or bulk-evict a share of the window (0 .. all).
mta_ops = st.lists(st.one_of(st.tuples(st.just("insert"), st.integers(1, 40)),
                             st.tuples(st.just("evict"), st.just(0)),
                             st.tuples(st.just("bulk"), st.floats(0.0, 1.0))), max_size=40)


@pytest.mark.parametrize("monoid", [CONCAT, MATRIX], ids=["concat", "matrix"])
@SETTINGS
@given(script=mta_ops)
def test_bulk_evictions_of_any_size_match_a_list(monoid, script):
    run_bulk_script(amta, monoid, script)


@pytest.mark.parametrize("count", [0, 1, 2, 57, 511, 999, 1000])
def test_bulk_eviction_of_none_one_some_and_all(count):
    agg = winagg.make("amta", CONCAT)
    agg.bulk_insert(list(range(1000)))
    assert agg.bulk_evict(count - 1) == count  # times are arrival numbers 0..999
    assert agg.query() == "".join(f"{i};" for i in range(count, 1000))
    agg.insert(1000)
    assert agg.query() == "".join(f"{i};" for i in range(count, 1001))


def test_levels_stay_logarithmic_in_the_window_not_the_stream():
    total = winagg.aggregations.get("sum")  # partials (sum, number of values)
    funcs = amta.build(python_ops(total))
    bufs, state = funcs.init(64)
    for i in range(20_000):
        if state[2] - state[1] == 64:
            state = funcs.evict(bufs, state)
        state = funcs.insert(bufs, state, total.lift(1.0))
    assert state[3] <= 8  # h: log2(64) + 2
    assert total.lower(funcs.query(bufs, state)) == 64.0


def test_compiled_time_window_uses_the_native_bulk_eviction(agg="max"):
    # the time kernel evicts everything older than the horizon in one bulk_evict call
    rng = np.random.default_rng(5)
    values = rng.integers(0, 100, 3000).astype(np.float64)
    times = np.cumsum(rng.choice([0, 0, 1, 1, 2, 40], 3000)).astype(np.int64)
    got = winagg.rolling(values, 30, agg, times=times, algorithm="amta")
    monoid = winagg.aggregations.get(agg)
    for i in range(0, 3000, 7):
        inside = values[(times > times[i] - 30) & (np.arange(3000) <= i)]
        assert got[i] == pytest.approx(monoid.fold(inside.tolist()))


def test_slide_policy_search_finds_the_longest_removable_prefix():
    funcs = amta.build(python_ops(CONCAT))
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


def test_single_evictions_stay_amortized_constant():
    # every eviction pops the next oldest-tree aggregate; R is rebuilt only when a tree empties
    funcs = amta.build(python_ops(MATRIX))
    bufs, state = funcs.init(300)
    items = [MATRIX.lift(i) for i in range(257)]
    for item in items:
        state = funcs.insert(bufs, state, item)
    for k in range(1, 257):
        state = funcs.evict(bufs, state)
        want = MATRIX.identity
        for item in items[k:]:
            want = MATRIX.combine(want, item)
        assert funcs.query(bufs, state) == want


@pytest.mark.parametrize("count", [3, 4, 5, 40])
def test_bulk_switches_to_the_tree_path_after_about_log_n_items(count):
    # h is about log2(n) + 1; fewer items go by single evictions, more by the O(log n) path
    funcs = amta.build(python_ops(CONCAT))
    bufs, state = funcs.init(64)
    for i in range(50):
        state = funcs.insert(bufs, state, f"{i};")
    state = funcs.bulk_evict(bufs, state, count)
    assert funcs.query(bufs, state) == "".join(f"{i};" for i in range(count, 50))
    state = funcs.insert(bufs, state, "50;")
    state = funcs.evict(bufs, state)
    assert funcs.query(bufs, state) == "".join(f"{i};" for i in range(count + 1, 51))


@pytest.mark.parametrize("log_block", [1, 2, 3, amta.LOG_BLOCK])
@SETTINGS
@given(script=mta_ops)
def test_blocks_of_any_size_match_a_list(log_block, script):
    # small blocks cross the block-mode boundaries (h = log_block + 1) within a few dozen items
    run_bulk_script(amta, MATRIX, script, log_block=log_block)


@pytest.mark.parametrize("log_block", [1, 2, 3, amta.LOG_BLOCK])
@SETTINGS
@given(script=mta_ops)
def test_every_node_holds_its_items_and_levels_never_share_a_slot(log_block, script):
    # The per-item operations address nodes by in-order number and keep no level ranges, and
    # with blocks the levels below the block's are not kept (read, they are folded from the
    # items). After every step, read every node that is not on the leftmost branch back by
    # (level, index), and where its level is kept also straight from its slot, and check it
    # against the items it covers; check that the ranges the other operations derive from
    # (first, end) never put two live elements of kept levels in one slot of the ring,
    # growth included.
    from winagg.algos.fifo.mta_tree import FOLD, build_tree

    ops = python_ops(CONCAT)
    funcs = amta.build(ops, log_block=log_block)
    get = build_tree(ops, in_order=True).get
    bufs, state = funcs.init(2)
    items = []
    folded_once = False
    for op, amount in script:
        if op == "insert":
            for _ in range(amount):
                if state[2] - state[1] > state[0]:
                    bufs, state = funcs.grow(bufs, state)
                state = funcs.insert(bufs, state, f"{len(items)};")
                items.append(f"{len(items)};")
                _check_nodes(bufs, state, items, get)
        elif state[2] > state[1]:
            count = 1 if op == "evict" else int(amount * (state[2] - state[1]))
            state = funcs.evict(bufs, state) if op == "evict" else funcs.bulk_evict(bufs, state, count)
            _check_nodes(bufs, state, items, get)
        folded_once |= bufs[1][FOLD] > 1
    assert log_block > 1 or not folded_once  # log_block 1 is the plain algorithm: every level kept
    if state[2] > state[1]:
        assert funcs.query(bufs, state) == "".join(items[state[1]:state[2]])


def _check_nodes(bufs, state, items, get):
    from winagg.algos.fifo.mta_tree import FOLD, MASK, in_order_slot_of

    (vals, meta), (first, end, h) = bufs, state[1:4]
    if first == end:
        return
    assert 1 <= meta[FOLD] <= max(h - 1, 1)  # the block's level is below the top
    kept_from = meta[FOLD]
    slots = set()
    live = 0
    for level in range(h):
        lo, hi = first >> level, ((end + 1) >> level) - 1
        kept = level == 0 or level >= kept_from
        for index in range(lo, hi):
            if kept:
                slots.add(in_order_slot_of(meta[MASK], level, index))
                live += 1
            if level > 0 and index > lo:  # not on the leftmost branch: all its items are in
                want = "".join(items[index << level:(index + 1) << level])
                assert get(vals, meta, level, index) == want, (level, index, state)
                if kept:
                    assert vals[in_order_slot_of(meta[MASK], level, index)] == want, (level, index, state)
    assert len(slots) == live  # no two live elements in one slot of the ring


def test_log_block_out_of_range_is_refused():
    with pytest.raises(ValueError, match="log_block"):
        amta.build(python_ops(CONCAT), log_block=0)
    with pytest.raises(ValueError, match="log_block"):
        amta.build(python_ops(CONCAT), log_block=amta.MAX_LOG_BLOCK + 1)


@pytest.mark.parametrize("window", [16, 64, 1000])
def test_a_steady_window_keeps_its_block_level(window):
    # The tree's height swings between two values as the window slides; the block's level
    # must not follow it (each change rebuilds R, and a smaller block rebuilds levels).
    from winagg.algos.fifo.mta_tree import FOLD

    total = winagg.aggregations.get("sum")  # partials (sum, number of values)
    funcs = amta.build(python_ops(total))
    bufs, state = funcs.init(window)
    levels = set()
    for i in range(40 * window):
        if state[2] - state[1] == window:
            state = funcs.evict(bufs, state)
        state = funcs.insert(bufs, state, total.lift(1.0))
        if i >= 4 * window:
            levels.add(bufs[1][FOLD])
    assert len(levels) == 1 and levels.pop() > 1
    assert total.lower(funcs.query(bufs, state)) == window

