"""Built-in aggregations reachable by name, alias, class and instance; pickling of instances."""

import pickle

import numpy as np
import pytest

import winagg
from winagg import aggregations as A

NAMES = {
    "count": A.Count, "sum": A.Sum, "mean": A.Mean, "avg": A.Mean, "min": A.Min, "max": A.Max,
    "argmin": A.ArgMin, "argmax": A.ArgMax, "mincount": A.MinCount, "maxcount": A.MaxCount,
    "variance": A.Variance, "var": A.Variance, "stddev": A.Stddev, "std": A.Stddev,
    "variance_pop": A.VariancePop, "var_pop": A.VariancePop, "stddev_pop": A.StddevPop, "std_pop": A.StddevPop,
    "geomean": A.GeoMean, "relvar": A.RelativeVariation, "relative_variation": A.RelativeVariation,
    "m4": A.M4, "first": A.First, "last": A.Last, "collect": A.Collect, "bloom": A.Bloom,
    "countmin": A.CountMin, "count_min": A.CountMin, "hll": A.HyperLogLog, "hyperloglog": A.HyperLogLog,
}


@pytest.mark.parametrize("name,cls", sorted(NAMES.items()))
def test_get_by_name(name, cls):
    got = A.get(name)
    assert type(got) is cls
    assert isinstance(got, winagg.Monoid)
    assert A.get(name.upper()) == got  # names are case-insensitive


def test_names_lists_every_alias():
    assert set(NAMES) <= set(A.names())
    assert A.names() == sorted(A.names())


def test_get_class_and_instance():
    assert type(A.get(A.Max)) is A.Max
    inst = A.Stddev(ddof=0)
    assert A.get(inst) is inst
    user = winagg.Monoid(0, max)
    assert A.get(user) is user


def test_unknown_name_lists_known_names():
    with pytest.raises(winagg.UnknownNameError) as err:
        A.get("maximum")
    message = str(err.value)
    assert "maximum" in message
    for name in ("max", "sum", "stddev", "bloom", "hll"):
        assert name in message
    assert isinstance(err.value, KeyError) and isinstance(err.value, winagg.WinaggError)


def test_get_rejects_other_types():
    with pytest.raises(TypeError):
        A.get(42)


def test_variants_are_distinct_aggregations():
    assert A.get("var") != A.get("var_pop")
    assert A.Stddev(ddof=0) != A.Stddev(ddof=1)
    assert A.Stddev() == A.get("std")
    assert A.Bloom(bits=1024) != A.Bloom()
    assert A.Max() != A.Min()


INSTANCES = [cls() for cls in A.BUILTINS] + [
    A.Stddev(ddof=0), A.Variance(ddof=0), A.Bloom(bits=1024, hashes=3), A.Bloom(probe=5),
    A.CountMin(width=64, depth=2), A.HyperLogLog(precision=8),
]


@pytest.mark.parametrize("agg", INSTANCES, ids=repr)
def test_builtin_instances_pickle_and_compare_equal(agg):
    back = pickle.loads(pickle.dumps(agg))
    assert type(back) is type(agg)
    assert back == agg
    assert hash(back) == hash(agg)
    assert back.commutative == agg.commutative and back.invertible == agg.invertible
    # the restored copy aggregates the same way
    items = [(2.0, 0), (5.0, 1), (5.0, 2), (1.0, 3)] if agg.positional else [2.0, 5.0, 5.0, 1.0]
    want, got = agg.fold(items), back.fold(items)
    if isinstance(want, A.BloomFilter):
        assert np.array_equal(want.words, got.words)
    elif isinstance(want, A.CountMinSketch):
        assert np.array_equal(want.counts, got.counts)
    elif isinstance(want, float) and want != want:
        assert got != got
    else:
        assert got == want
