"""Window Slide Policies and several aggregations in one window, against brute-force lists."""

import random

import math

import numpy as np
import pytest

import winagg
from winagg.aggregations import Multi
from winagg.windows.slide_policies import (CountWithMaxSize, SlidePolicy, enforce_policy, max_size_policy,
                                           max_size_wsp, max_time_policy)

from oracle import CONCAT

ALGORITHMS = ["amta", "lmta", "daba_lite", "two_stacks", "recalc"]


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_paper_policy_keeps_the_newest_items_up_to_the_newest_size(algorithm):
    monoid, wsp = max_size_policy()
    window = SlidePolicy(monoid, wsp, algorithm)
    rng = random.Random(3)
    kept = []
    for step in range(600):
        size = rng.choice([1, 2, 5, 30, 30, 30, 200, 200])
        evicted = window.insert(size)
        kept.append(size)
        want_evicted = max(0, len(kept) - size)
        del kept[:want_evicted]
        assert evicted == want_evicted, step
        assert len(window) == len(kept)
        assert window.query() == len(kept)
        assert window.partial() == (len(kept), size)


def _keep_newest(total, old):
    # items are "v;" strings; the newest item v asks to keep v % 7 + 1 items
    newest = int(total.rstrip(";").rsplit(";", 1)[-1])
    return total.count(";") - old.count(";") >= newest % 7 + 1


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_policy_over_a_non_commutative_monoid_evicts_exactly_the_oldest(algorithm):
    window = SlidePolicy(CONCAT, _keep_newest, algorithm)
    rng = random.Random(4)
    kept = []
    for _ in range(400):
        value = rng.randrange(1000)
        window.insert(value)
        kept.append(value)
        del kept[:max(0, len(kept) - (value % 7 + 1))]
        assert window.query() == "".join(f"{v};" for v in kept)


@pytest.mark.parametrize("algorithm", ["amta", "lmta"])
def test_native_policy_does_a_bulk_eviction_of_any_size(algorithm):
    monoid, wsp = max_size_policy()
    agg = winagg.make(algorithm, monoid)
    agg.bulk_insert([5000] * 5000)
    before = 5000
    for size in [4999, 4000, 17, 1]:
        agg.insert(size)
        assert enforce_policy(agg, wsp) == before + 1 - size
        before = size
        assert len(agg) == size
        assert agg.query() == size
        assert agg.partial() == (size, size)


def test_enforce_policy_refuses_an_algorithm_without_one():
    with pytest.raises(TypeError, match="SlidePolicy"):
        enforce_policy(winagg.make("daba_lite", "sum"), lambda total, old: True)


def test_a_policy_may_empty_the_window():
    # a sum's partial is (sum, number of values): an empty window's sum is NaN, not 0
    window = SlidePolicy("sum", lambda total, old: total[0] > 100, "amta")
    for value in [10.0, 20.0, 30.0]:
        window.insert(value)
    assert window.insert(50.0) == 4  # the total 110 > 100: everything goes
    assert len(window) == 0 and math.isnan(window.query())


@pytest.mark.parametrize("algorithm", ["amta", "daba_lite"])
def test_time_policy_of_listing_1(algorithm):
    monoid, wsp = max_time_policy(10)
    window = SlidePolicy(monoid, wsp, algorithm)
    times = [0, 3, 4, 9, 10, 11, 25, 26, 40]
    for i, t in enumerate(times):
        window.insert(t)
        assert len(window) == len([u for u in times[:i + 1] if t - u < 10])


def test_count_with_max_size_identity_is_neutral_on_both_sides():
    m = CountWithMaxSize()
    a = m.lift(7)
    assert m.combine(m.identity, a) == a == m.combine(a, m.identity)
    assert m.combine(m.lift(3), m.lift(9)) == (2, 9)
    assert max_size_wsp((10, 4), (6, 3)) and not max_size_wsp((10, 4), (7, 3))


# ---------------------------------------------------------------- several aggregations
def test_multi_lowers_each_member_from_one_partial():
    m = Multi(count="count", total="sum", peak="max")
    agg = winagg.make("amta", m)
    items = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0]
    for x in items:
        agg.insert(x)
    agg.evict()
    agg.evict()
    answer = agg.query()
    assert answer == {"count": 6, "total": 27.0, "peak": 9.0}


def test_multi_of_order_sensitive_members_keeps_order():
    m = Multi(text=CONCAT, first="first", last="last")
    assert m.fold([1, 2, 3]) == {"text": "1;2;3;", "first": 1, "last": 3}


def test_compiled_multi_gives_every_member_through_lowers_and_rolling(algorithm="daba_lite"):
    m = Multi(total="sum", peak="max", count="count")
    spec = m.compiled_for(np.dtype(np.float64))
    assert spec is not None and spec.layout.name == "tuple[float64,float64,int64]"
    values = np.random.default_rng(2).integers(0, 50, 500).astype(np.float64)
    got = winagg.rolling(values, 16, m, algorithm=algorithm)  # every member, a column each
    want = np.array([values[max(0, i - 15):i + 1].sum() for i in range(500)])
    assert np.array_equal(got["total"].to_numpy(), want)
    assert np.array_equal(got["peak"].to_numpy(), [values[max(0, i - 15):i + 1].max() for i in range(500)])
    assert m.lowers((np.float64(2.0), np.float64(7.0), np.int64(3))) == (2.0, 7.0, 3)


def test_multi_with_a_vector_member_runs_in_python_only():
    assert Multi(total="sum", seen="bloom").compiled_for(np.dtype(np.float64)) is None
    assert Multi(total="sum").compiled_for(np.dtype(np.float64)) is None
