"""Worst-case combine counts and structural invariants of the in-order algorithms (DABA paper)."""

import random

import pytest

import winagg


class CountingConcat:
    """A non-commutative monoid (string concatenation) that counts its combines."""

    def __init__(self):
        self.calls = 0
        self.monoid = winagg.Monoid("", self.combine, lambda x: f"{x};", name="counting-concat")

    def combine(self, a, b):
        self.calls += 1
        return a + b


def operation_mix(seed, length=3000):
    """Fill-and-drain, bursts of evicts and random interleavings, never evicting from empty."""
    rng = random.Random(seed)
    ops, size = [], 0
    for phase in range(12):
        kind = phase % 3
        for _ in range(rng.randint(1, length // 12)):
            if kind == 0:
                do_insert = True                                   # fill
            elif kind == 1:
                do_insert = size == 0                              # drain
            else:
                do_insert = size == 0 or rng.random() < 0.5        # random
            ops.append("insert" if do_insert else "evict")
            size += 1 if do_insert else -1
    return ops


# (query, insert, evict) worst-case combines from the DABA paper's theorems
BOUNDS = {"daba": (1, 4, 3), "daba_lite": (1, 3, 2)}


@pytest.mark.parametrize("algorithm", sorted(BOUNDS))
@pytest.mark.parametrize("seed", range(5))
def test_worst_case_combines_per_operation(algorithm, seed):
    counter = CountingConcat()
    agg = winagg.make(algorithm, counter.monoid)
    most = {"insert": 0, "evict": 0, "query": 0}
    expected_window = []
    for step, op in enumerate(operation_mix(seed)):
        before = counter.calls
        if op == "insert":
            agg.insert(step)
            expected_window.append(step)
        else:
            agg.evict()
            expected_window.pop(0)
        most[op] = max(most[op], counter.calls - before)
        before = counter.calls
        assert agg.query() == "".join(f"{x};" for x in expected_window)
        most["query"] = max(most["query"], counter.calls - before)
    q, i, e = BOUNDS[algorithm]
    assert most["query"] <= q and most["insert"] <= i and most["evict"] <= e, most
    assert most["insert"] == i and most["evict"] == e  # the bounds are reached: the counter counts


@pytest.mark.parametrize("algorithm,per_pair", [("daba", 4), ("daba_lite", 3)])
def test_steady_state_average_combines(algorithm, per_pair):
    counter = CountingConcat()
    agg = winagg.make(algorithm, counter.monoid)
    window = 257
    for i in range(window):
        agg.insert(i)
    before = counter.calls
    rounds = 20 * window
    for i in range(rounds):
        agg.evict()
        agg.insert(window + i)
    assert (counter.calls - before) / rounds == pytest.approx(per_pair, abs=0.05)


@pytest.mark.parametrize("algorithm", ["two_stacks", "two_stacks_lite"])
def test_two_stacks_insert_and_query_cost_one_combine_and_a_flip_costs_the_window(algorithm):
    counter = CountingConcat()
    agg = winagg.make(algorithm, counter.monoid)
    for i in range(100):
        before = counter.calls
        agg.insert(i)
        assert counter.calls - before == 1
    before = counter.calls
    agg.query()
    assert counter.calls - before == 1
    before = counter.calls
    agg.evict()  # the first evict flips the whole back stack
    flip_cost = counter.calls - before
    assert flip_cost >= 99
    before = counter.calls
    agg.evict()
    assert counter.calls - before == 0


def daba_positions(agg):
    """(F, L, R, A, B, E) of a DABA or DABA Lite aggregator's state tuple (mask, F, E, L, R, A, B, ...)."""
    _, f, e, l, r, a, b = agg._state[:7]
    return f, l, r, a, b, e


@pytest.mark.parametrize("algorithm", ["daba", "daba_lite"])
def test_pointer_order_and_size_invariants_hold_after_every_operation(algorithm):
    agg = winagg.make(algorithm, "sum")
    for step, op in enumerate(operation_mix(seed=11, length=2000)):
        agg.insert(step) if op == "insert" else agg.evict()
        f, l, r, a, b, e = daba_positions(agg)
        assert f <= l <= r <= a <= b <= e, (op, step, (f, l, r, a, b, e))
        if e > f:  # non-empty: |l_L| = |l_R| and L - F = |l_B| + 1
            assert r - l == a - r
            assert l - f == (e - b) + 1


def test_max_count_golden_trace_from_the_daba_paper():
    for algorithm in ("two_stacks", "two_stacks_lite", "daba", "daba_lite", "recalc"):
        agg = winagg.make(algorithm, winagg.Monoid(
            (float("-inf"), 0),
            lambda x, y: x if x[0] > y[0] else y if x[0] < y[0] else (x[0], x[1] + y[1]),
            lambda v: (v, 1)))
        agg.bulk_insert([4, 5, 3, 4, 0, 4, 4])
        assert agg.query() == (5, 1)
        agg.evict()
        assert agg.query() == (5, 1)
        agg.evict()
        assert agg.query() == (4, 3)
        agg.insert(2)
        assert agg.query() == (4, 3)
        agg.insert(6)
        assert agg.query() == (6, 1)
