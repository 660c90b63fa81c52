"""winagg.algorithms() and winagg.make()."""

import math
import operator

import numpy as np
import pytest

import winagg
from winagg.windows.aggregator import Aggregator

FIFO = ["recalc", "soe", "two_stacks", "two_stacks_lite", "daba", "daba_lite"]


def test_algorithms_lists_the_fifo_algorithms():
    infos = {a.name: a for a in winagg.algorithms()}
    assert set(FIFO) <= set(infos)
    for name in FIFO:
        info = infos[name]
        assert isinstance(info, winagg.AlgorithmInfo)
        assert info.order == "fifo"
        assert info.needs_inverse == (name == "soe")
        assert info.time and info.space and info.paper
        assert {"insert", "evict", "query"} <= set(info.native)


def test_algorithm_bounds_follow_the_papers():
    infos = {a.name: a for a in winagg.algorithms()}
    assert "worst" in infos["daba"].time and "O(1)" in infos["daba"].time
    assert "worst" in infos["daba_lite"].time and "n + 2" == infos["daba_lite"].space
    assert "amortized" in infos["two_stacks"].time
    assert "O(n)" in infos["recalc"].time


@pytest.mark.parametrize("name", FIFO)
def test_make_returns_an_empty_aggregator(name):
    agg = winagg.make(name, "sum")
    assert isinstance(agg, Aggregator)
    assert len(agg) == 0
    assert math.isnan(agg.query())  # an empty sum is NaN, as in pandas
    assert agg.oldest_time() is None and agg.youngest_time() is None
    assert name in repr(agg)


def test_make_accepts_names_classes_instances_and_monoids():
    for spec in ("max", winagg.aggregations.Max, winagg.aggregations.Max(), winagg.Monoid(float("-inf"), max)):
        agg = winagg.make("daba_lite", spec)
        for v in (3.0, 9.0, 4.0):
            agg.insert(v)
        agg.evict()
        assert agg.query() == 9.0


def test_unknown_algorithm_lists_the_known_ones():
    with pytest.raises(winagg.UnknownNameError) as err:
        winagg.make("dabba", "sum")
    message = str(err.value)
    assert "dabba" in message
    for name in FIFO:
        assert name in message


def test_unknown_aggregation_lists_the_known_ones():
    with pytest.raises(winagg.UnknownNameError) as err:
        winagg.make("daba", "medianish")
    message = str(err.value)
    assert "medianish" in message
    for name in ("count", "sum", "mean", "max", "argmax", "collect", "bloom"):
        assert name in message


@pytest.mark.parametrize("agg", ["max", "min", "argmax", "maxcount", "collect", "first", "bloom", "hll", "relvar"])
def test_soe_refuses_non_invertible_builtins(agg):
    with pytest.raises(winagg.NotInvertibleError, match="soe"):
        winagg.make("soe", agg)


def test_soe_refuses_a_user_monoid_without_inverse():
    with pytest.raises(winagg.NotInvertibleError) as err:
        winagg.make("soe", winagg.Monoid(0, operator.add, name="plus"))
    assert "plus" in str(err.value)
    # with an inverse it is accepted
    agg = winagg.make("soe", winagg.Monoid(0, operator.add, inverse=operator.neg))
    agg.insert(5)
    agg.insert(7)
    agg.evict()
    assert agg.query() == 7


@pytest.mark.parametrize("agg", ["sum", "mean", "count", "variance", "stddev", "geomean", "countmin"])
def test_soe_accepts_invertible_builtins(agg):
    winagg.make("soe", agg)


def test_fifo_algorithms_take_no_options():
    with pytest.raises(TypeError):
        winagg.make("daba", "sum", min_arity=4)


def test_the_out_of_order_default_is_the_registered_algorithm_that_takes_any_order():
    from winagg.algos.registry import algorithms, out_of_order

    chosen = out_of_order()
    assert chosen.order == "any" and chosen.name == "fiba"
    assert [a.name for a in algorithms() if a.order == "any"][0] == chosen.name


def test_an_algorithm_defined_outside_the_package_is_registered_and_runs_in_rolling_and_make(monkeypatch):
    import types

    from winagg.algos import registry

    monkeypatch.setattr(registry, "_ALGORITHMS", dict(registry._ALGORITHMS))  # the table as it was, after
    twin = types.ModuleType("outside.recalc_twin")
    twin.INFO = dict(registry.info("recalc").load().INFO)
    twin.build = registry.info("recalc").load().build
    entry = registry.register(twin)
    assert entry.name == "recalc_twin" and winagg.algorithms()[-1] is entry
    x = np.array([3.0, 1.0, 4.0, 1.0, 5.0])
    want = [max(x[max(0, k - 1):k + 1]) for k in range(len(x))]
    assert winagg.rolling(x, 2, "max", algorithm="recalc_twin").tolist() == want
    agg = winagg.make("recalc_twin", "sum")
    agg.insert(2.0)
    agg.insert(5.0)
    assert agg.query() == 7.0
    with pytest.raises(ValueError, match="recalc_twin"):
        registry.register(twin)
