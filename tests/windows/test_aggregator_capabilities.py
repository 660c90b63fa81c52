"""The one per-item aggregator: what it does for each capability, checked against plain Python."""

import math
import random

import numpy as np
import pytest

import winagg
from winagg.algos import registry
from winagg.core.capabilities import BulkEvict, SlidePolicyWindow, SubWindow, Updates

ALL = [a.name for a in winagg.algorithms()]


@pytest.mark.parametrize("algorithm", ALL)
def test_every_algorithm_is_the_same_aggregator_class(algorithm):
    assert type(winagg.make(algorithm, "sum")) is winagg.windows.aggregator.Aggregator


@pytest.mark.parametrize("algorithm", [a for a in ALL if a != "soe"])
def test_evict_oldest_drops_the_oldest_items_of_every_algorithm(algorithm):
    rng = random.Random(3)
    agg = winagg.make(algorithm, "collect")
    kept: list = []
    for step in range(300):
        if rng.random() < 0.7:
            agg.insert(step, step)
            kept.append(step)
        else:
            count = rng.randint(0, 5)
            assert agg.evict_oldest(count) == min(count, len(kept))
            del kept[:count]
        assert list(agg.query()) == kept and len(agg) == len(kept)
    with pytest.raises(TypeError, match="count"):
        agg.evict_oldest(1.5)
    with pytest.raises(ValueError, match="count must be >= 0"):
        agg.evict_oldest(-1)


@pytest.mark.parametrize("algorithm", [a for a in ALL if registry.info(a).offers(SubWindow) and a != "fiba"])
def test_query_ranges_of_every_positional_range_algorithm(algorithm):
    agg = winagg.make(algorithm, "sum")
    values = [float(2 ** k) for k in range(12)]
    agg.bulk_insert(values)
    for _ in range(3):
        agg.evict()
    live = values[3:]
    empty, *ranges = agg.query_ranges([0, 1, 4, 100])
    assert math.isnan(empty) and ranges == [live[-1], sum(live[-4:]), sum(live)]  # no item: NaN
    with pytest.raises(ValueError, match="range sizes"):
        agg.query_ranges([-1])


@pytest.mark.parametrize("algorithm", ALL)
def test_an_operation_the_algorithm_lacks_is_refused_by_name(algorithm):
    info = registry.info(algorithm)
    agg = winagg.make(algorithm, "sum")
    agg.bulk_insert([1.0, 2.0, 3.0], [0, 1, 2])
    checks = [(Updates, lambda: agg.update(0, 5.0)), (Updates, lambda: agg.remove(0)),
              (SlidePolicyWindow, lambda: agg.enforce(lambda total, old: True)),
              (SubWindow, lambda: agg.query(0, 1))]
    for protocol, call in checks:
        if not info.offers(protocol):
            with pytest.raises(winagg.UnsupportedOperationError, match=repr(algorithm)):
                call()
            assert agg.query() == 6.0 and len(agg) == 3
    if info.offers(BulkEvict) or not info.offers(Updates):
        assert agg.bulk_evict(0) == 1 and agg.query() == 5.0


def test_removed_items_with_updates_are_gone_from_len_times_and_ranges():
    agg = winagg.make("flatfat", "sum")
    agg.bulk_insert([1.0, 2.0, 4.0, 8.0, 16.0], [10, 20, 30, 40, 50])
    agg.remove(1)  # the 2.0 at time 20
    agg.remove(-1)  # the 16.0 at time 50: a hole at the end goes at once
    assert len(agg) == 3 and agg.youngest_time() == 40 and agg.query() == 13.0
    assert agg.query(15, 35) == 4.0 and agg.query_ranges([2]) == [12.0]
    assert agg.evict_oldest(2) == 2 and agg.query() == 8.0 and agg.oldest_time() == 40
    assert np.isclose(agg.partial()[0], 8.0) and agg.partial()[1] == 1  # (sum, number of values)
