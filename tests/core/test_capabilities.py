"""winagg.core.capabilities: what each algorithm offers, read from its functions and checked when registered."""

import dataclasses
import types

import numpy as np
import pytest

import winagg
from oracle import CONCAT
from winagg.algos import registry
from winagg.core.capabilities import BulkEvict, BulkInsert, FifoWindow, SubWindow, TimeWindow, Updates
from winagg.core.ops import python_ops


def _python_funcs(name):
    algorithm = registry.info(name)
    return algorithm.load().build(python_ops(winagg.aggregations.get("sum")), **algorithm.options)


def test_protocols_follow_the_functions_an_algorithm_returns():
    assert isinstance(_python_funcs("two_stacks"), FifoWindow)
    assert not isinstance(_python_funcs("two_stacks"), BulkEvict)
    assert isinstance(_python_funcs("b_int"), SubWindow) and isinstance(_python_funcs("b_int"), BulkEvict)
    assert isinstance(_python_funcs("flatfat"), Updates) and isinstance(_python_funcs("flatfat"), BulkInsert)
    assert isinstance(_python_funcs("fiba"), TimeWindow)
    assert not isinstance(_python_funcs("flatfit"), TimeWindow)


def test_registry_describes_every_algorithm_by_what_it_offers():
    infos = {a.name: a for a in winagg.algorithms()}
    assert infos["daba"].native == ("insert", "evict", "query") and not infos["daba"].offers(SubWindow)
    assert infos["flatfat"].offers(Updates) and {"update", "remove"} <= set(infos["flatfat"].native)
    assert infos["amta"].native == ("insert", "evict", "query", "bulk_evict", "slide_policy")
    assert "query_ranges" in infos["flatfit"].native  # named in INFO: it lives beside the functions
    out_of_order = [a for a in infos.values() if a.order == "any"]
    assert out_of_order and all(a.offers(TimeWindow) and a.offers(SubWindow) for a in out_of_order)


def _module(order, build, **info):
    return types.SimpleNamespace(INFO=dict(order=order, needs_inverse=False, time="-", space="-", paper="-", **info),
                                 build=build)


def test_an_out_of_order_algorithm_without_time_window_functions_is_refused_by_name():
    fifo_build = registry.info("two_stacks").load().build
    with pytest.raises(TypeError, match=r"'sorted_only' .*'any'.*TimeWindow"):
        registry._register("sorted_only", "fifo.sorted_only", _module("any", fifo_build))


def test_a_native_operation_without_its_function_is_refused_by_name():
    fifo_build = registry.info("daba").load().build
    with pytest.raises(TypeError, match="'boasts' .*declares bulk_evict native"):
        registry._register("boasts", "fifo.boasts", _module("fifo", fifo_build, native=("bulk_evict",)))
    ok = registry._register("plain", "fifo.plain", _module("fifo", fifo_build))
    assert ok.protocols == (FifoWindow,) and ok.native == ("insert", "evict", "query")


def test_a_second_out_of_order_algorithm_is_found_by_rolling_and_window_without_their_naming_it(monkeypatch):
    # The same functions under a new name, first in the table: the registry is the only place
    # that learns of it, and the out-of-order paths take it (plain Python: no compile).
    twin = dataclasses.replace(registry.info("fiba"), name="twin")
    monkeypatch.setattr(registry, "_ALGORITHMS", {"twin": twin, **registry._ALGORITHMS})
    assert registry.out_of_order() is twin
    window = winagg.Window(CONCAT, size=3, allowed_lateness=10)
    assert window.algorithm == "twin"
    results = window.push_batch([5, 1, 3], ["a", "b", "c"]) + window.flush()
    assert [(r.end, r.value) for r in results] == [(1, "b;"), (3, "b;c;"), (5, "c;a;")]
    got = winagg.rolling(np.array(["a", "b", "c"], dtype=object), 3, CONCAT, times=np.array([5, 1, 3]))
    assert list(got) == ["a;", "b;", "b;c;"]
    # and winagg.make wraps it in the one per-item aggregator, out of order
    agg = winagg.make("twin", CONCAT)
    agg.bulk_insert(["x", "y"], [7, 9])
    agg.insert("w", 8)
    assert agg.query() == "x;w;y;" and agg.query(8, 9) == "w;y;" and agg.bulk_evict(7) == 1
