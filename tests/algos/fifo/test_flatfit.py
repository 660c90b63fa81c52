"""FlatFIT: range queries, the paper's worked example and costs, and multi-query answers."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import winagg
from winagg.algos.fifo.multi_query import descending, multi_query
from winagg.algos.registry import info
from oracle import CONCAT, MATRIX, fifo_range_scripts, run_fifo_range_script, same_answer

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MONOIDS = [CONCAT, MATRIX, winagg.aggregations.get("max"), winagg.aggregations.get("first")]


@pytest.mark.parametrize("monoid", MONOIDS, ids=[m.name for m in MONOIDS])
@SETTINGS
@given(script=fifo_range_scripts)
def test_range_queries_match_oracle(monoid, script):
    run_fifo_range_script(winagg.make("flatfit", monoid), monoid, script)


def counting_max():
    calls = [0]

    def combine(a, b):
        calls[0] += 1
        return max(a, b)

    return winagg.Monoid(float("-inf"), combine, name="counted_max"), calls


def test_paper_example_answers():
    # FlatFIT paper, Examples 2 and 3: MAX over the last 5 (Q1) and last 2 (Q2) items
    agg = winagg.make("flatfit", "max")
    q1, q2 = [], []
    for x in (2, 4, 0, 3, 7, 6, 1, 8, 9, 5):
        if len(agg) == 5:
            agg.evict()
        agg.insert(float(x))
        a1, a2 = agg.query_ranges([5, 2])
        q1.append(a1)
        q2.append(a2)
    assert q1 == [2, 4, 4, 4, 7, 7, 7, 8, 9, 9]
    assert q2 == [2, 4, 4, 3, 7, 7, 6, 8, 9, 9]


@pytest.mark.parametrize("n", [5, 64])
def test_one_query_costs_under_three_combines_per_slide(n):
    monoid, calls = counting_max()
    agg = winagg.make("flatfit", monoid)
    for i in range(n):
        agg.insert(i % 7)
    calls[0] = 0
    slides = 10 * (n + 1)  # whole wReset periods
    for i in range(slides):
        agg.evict()
        agg.insert(i % 13)
        agg.query()
    assert calls[0] / slides <= 3  # the paper: 3(n - 1) per n + 1 slides


def test_all_ranges_cost_n_minus_1_combines_per_slide():
    n = 32
    monoid, calls = counting_max()
    agg = winagg.make("flatfit", monoid)
    for i in range(n):
        agg.insert(i % 7)
    agg.query_ranges(range(1, n + 1))  # the one full pass
    calls[0] = 0
    for i in range(20):
        agg.evict()
        agg.insert(i % 13)
        agg.query_ranges(range(1, n + 1))
    assert calls[0] == 20 * (n - 1)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=st.lists(st.integers(1, 20), min_size=1, max_size=40), window=st.integers(1, 12),
       ranges=st.lists(st.integers(0, 15), min_size=1, max_size=5))
def test_query_ranges_match_brute_force_folds(values, window, ranges):
    agg = winagg.make("flatfit", CONCAT)
    for i, x in enumerate(values):
        if len(agg) == window:
            agg.evict()
        agg.insert(x)
        kept = values[max(0, i + 1 - window):i + 1]
        want = [CONCAT.fold(kept[len(kept) - min(r, len(kept)):]) for r in ranges]
        assert agg.query_ranges(ranges) == want


@pytest.mark.parametrize("algorithm", ["flatfit", "flatfat", "b_int"])
def test_compiled_multi_query_matches_brute_force(algorithm):
    spec = winagg.aggregations.get("max").compiled_for(np.dtype(np.float64))
    values = np.random.default_rng(7).integers(0, 100, size=200).astype(np.float64)
    window, ranges = 16, descending(range(1, 17))
    out = multi_query(info(algorithm), spec, values, window, ranges)
    for i in range(200):
        kept = values[max(0, i + 1 - window):i + 1]
        want = [kept[len(kept) - min(r, len(kept)):].max() for r in ranges]
        assert all(same_answer(g, w) for g, w in zip(out[i].tolist(), want)), i
