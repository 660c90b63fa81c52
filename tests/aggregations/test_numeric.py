"""Built-in numeric aggregations: lift/combine/identity/lower checked against numpy and statistics.

Every expected value comes from numpy, statistics, math or a hand-computed literal,
never from winagg. Folds are done here with functools.reduce (not Monoid.fold) so
that this file checks the aggregation's functions themselves.
"""

import functools
import math
import statistics

import numpy as np
import pytest

import winagg
from winagg import aggregations as A

#: The six in-order algorithms of the DABA paper family this file covers (soe needs an inverse).
FIFO = ["recalc", "soe", "two_stacks", "two_stacks_lite", "daba", "daba_lite"]
FIFO_NO_INVERSE = [name for name in FIFO if name != "soe"]

RNG = np.random.default_rng(20240601)
SAMPLE = [float(x) for x in RNG.normal(loc=3.0, scale=2.0, size=37)]
POSITIVE = [float(x) for x in RNG.uniform(0.5, 20.0, size=29)]
TIES = [3.0, 7.0, 1.0, 7.0, 2.0, 1.0, 7.0, 0.5, 1.0]


def fold(monoid, items):
    """identity ⊗ lift(x0) ⊗ lift(x1) ⊗ ..., then lower (written here, independently of Monoid.fold)."""
    return monoid.lower(functools.reduce(monoid.combine, (monoid.lift(x) for x in items), monoid.identity))


def positional(items):
    return [(v, i) for i, v in enumerate(items)]


def same_partial(a, b, rel=0.0):
    """Equality of partials: numbers (optionally with a relative tolerance), tuples, arrays."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(np.asarray(a), np.asarray(b))
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(same_partial(x, y, rel) for x, y in zip(a, b))
    if isinstance(a, (float, np.floating)) or isinstance(b, (float, np.floating)):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        if rel == 0.0:
            return a == b
        return math.isclose(a, b, rel_tol=rel, abs_tol=rel)
    return a == b


# ---------------------------------------------------------------- fold vs numpy / statistics
FOLD_CASES = [
    ("count", SAMPLE, len(SAMPLE)),
    ("sum", SAMPLE, math.fsum(SAMPLE)),
    ("mean", SAMPLE, statistics.fmean(SAMPLE)),
    ("avg", SAMPLE, statistics.fmean(SAMPLE)),
    ("min", SAMPLE, min(SAMPLE)),
    ("max", SAMPLE, max(SAMPLE)),
    ("variance", SAMPLE, statistics.variance(SAMPLE)),
    ("var", SAMPLE, statistics.variance(SAMPLE)),
    ("variance_pop", SAMPLE, statistics.pvariance(SAMPLE)),
    ("var_pop", SAMPLE, statistics.pvariance(SAMPLE)),
    ("stddev", SAMPLE, statistics.stdev(SAMPLE)),
    ("std", SAMPLE, statistics.stdev(SAMPLE)),
    ("stddev_pop", SAMPLE, statistics.pstdev(SAMPLE)),
    ("std_pop", SAMPLE, statistics.pstdev(SAMPLE)),
    ("geomean", POSITIVE, statistics.geometric_mean(POSITIVE)),
    ("relvar", POSITIVE, (max(POSITIVE) - min(POSITIVE)) / max(POSITIVE)),
    ("relative_variation", POSITIVE, (max(POSITIVE) - min(POSITIVE)) / max(POSITIVE)),
    ("maxcount", TIES, 3),
    ("mincount", TIES, 1),
    ("mincount", TIES[:7], 2),
    ("maxcount", SAMPLE, 1),
]


@pytest.mark.parametrize("name,items,expected", FOLD_CASES, ids=[c[0] for c in FOLD_CASES])
def test_fold_by_name_matches_reference(name, items, expected):
    got = fold(A.get(name), items)
    assert got == pytest.approx(expected, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("name,items,expected", [
    ("argmax", SAMPLE, int(np.argmax(SAMPLE))),
    ("argmin", SAMPLE, int(np.argmin(SAMPLE))),
    ("argmax", TIES, 1),   # 7.0 at positions 1, 3, 6: the oldest wins
    ("argmin", TIES, 7),   # 0.5 is unique
    ("argmin", [2.0, 1.0, 5.0, 1.0, 1.0], 1),
])
def test_argmin_argmax_positions_ties_to_oldest(name, items, expected):
    got = fold(A.get(name), positional(items))
    assert got == expected
    # numpy's argmax/argmin also return the first occurrence
    ref = np.argmax(items) if name == "argmax" else np.argmin(items)
    assert got == int(ref)


def test_argmax_is_not_commutative():
    m = A.ArgMax()
    assert m.commutative is False
    a, b = m.lift((5.0, 0)), m.lift((5.0, 1))
    assert m.lower(m.combine(a, b)) == 0
    assert m.lower(m.combine(b, a)) == 1


def test_classes_with_parameters():
    assert fold(A.Variance(ddof=0), SAMPLE) == pytest.approx(statistics.pvariance(SAMPLE), rel=1e-12)
    assert fold(A.Variance(ddof=1), SAMPLE) == pytest.approx(statistics.variance(SAMPLE), rel=1e-12)
    assert fold(A.Stddev(ddof=0), SAMPLE) == pytest.approx(statistics.pstdev(SAMPLE), rel=1e-12)
    assert fold(A.Stddev(), SAMPLE) == pytest.approx(np.std(SAMPLE, ddof=1), rel=1e-12)
    assert fold(A.StddevPop(), SAMPLE) == pytest.approx(np.std(SAMPLE, ddof=0), rel=1e-12)
    assert fold(A.VariancePop(), SAMPLE) == pytest.approx(np.var(SAMPLE, ddof=0), rel=1e-12)
    with pytest.raises(ValueError, match="ddof"):
        A.Variance(ddof=2)
    with pytest.raises(ValueError, match="ddof"):
        A.Stddev(ddof=-1)


def test_small_hand_computed_values():
    items = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]  # textbook: mean 5, population stddev 2
    assert fold(A.Mean(), items) == 5.0
    assert fold(A.Stddev(ddof=0), items) == pytest.approx(2.0, rel=1e-15)
    assert fold(A.Variance(ddof=0), items) == pytest.approx(4.0, rel=1e-15)
    assert fold(A.Variance(), items) == pytest.approx(32.0 / 7.0, rel=1e-15)
    assert fold(A.GeoMean(), [1.0, 4.0, 16.0]) == pytest.approx(4.0, rel=1e-14)
    assert fold(A.RelativeVariation(), [5.0, 10.0, 7.5]) == 0.5
    assert fold(A.Sum(), [1, 2, 3]) == 6
    assert fold(A.Count(), [1.0, 2.0]) == 2


# ---------------------------------------------------------------- empty windows
@pytest.mark.parametrize("name,expected", [
    ("count", 0), ("argmax", -1), ("argmin", -1),
    ("maxcount", 0), ("mincount", 0),
])
def test_identity_lowering(name, expected):
    m = A.get(name)
    assert m.lower(m.identity) == expected


@pytest.mark.parametrize("name", ["sum", "max", "min", "mean", "variance", "stddev", "stddev_pop", "variance_pop",
                                  "geomean", "relvar"])
def test_identity_lowers_to_nan(name):
    m = A.get(name)
    assert math.isnan(m.lower(m.identity))


def test_variance_of_one_item():
    assert math.isnan(fold(A.Variance(), [3.0]))
    assert fold(A.Variance(ddof=0), [3.0]) == 0.0
    assert fold(A.Stddev(ddof=0), [3.0]) == 0.0


# ---------------------------------------------------------------- NaN skipped like pandas
NAN_ITEMS = [1.5, float("nan"), 4.0, -2.0, float("nan"), 3.25, 4.0]
NAN_ARRAY = np.array(NAN_ITEMS)


@pytest.mark.parametrize("name,expected", [
    ("count", int(np.count_nonzero(~np.isnan(NAN_ARRAY)))),
    ("sum", float(np.nansum(NAN_ARRAY))),
    ("mean", float(np.nanmean(NAN_ARRAY))),
    ("min", float(np.nanmin(NAN_ARRAY))),
    ("max", float(np.nanmax(NAN_ARRAY))),
    ("variance", float(np.nanvar(NAN_ARRAY, ddof=1))),
    ("stddev", float(np.nanstd(NAN_ARRAY, ddof=1))),
    ("stddev_pop", float(np.nanstd(NAN_ARRAY, ddof=0))),
    ("maxcount", 2),
    ("mincount", 1),
    ("relvar", (4.0 - -2.0) / 4.0),
])
def test_nan_items_are_skipped(name, expected):
    assert fold(A.get(name), NAN_ITEMS) == pytest.approx(expected, rel=1e-12)


def test_nan_skipped_geomean_and_argmax():
    items = [2.0, float("nan"), 8.0]
    assert fold(A.GeoMean(), items) == pytest.approx(4.0, rel=1e-14)
    assert fold(A.ArgMax(), positional(NAN_ITEMS)) == int(np.nanargmax(NAN_ARRAY))
    assert fold(A.ArgMin(), positional(NAN_ITEMS)) == int(np.nanargmin(NAN_ARRAY))
    assert fold(A.ArgMax(), positional([float("nan"), float("nan")])) == -1


def test_all_nan_is_like_an_empty_window():
    nans = [float("nan")] * 3
    assert fold(A.Count(), nans) == 0
    assert math.isnan(fold(A.Sum(), nans))  # pandas: a sum over no value is NaN
    assert math.isnan(fold(A.Max(), nans)) and math.isnan(fold(A.Min(), nans))
    assert fold(A.Max(), [float("-inf"), float("nan")]) == -math.inf  # a value, unlike the empty window
    assert math.isnan(fold(A.Mean(), nans))


# ---------------------------------------------------------------- monoid laws on sample partials
LAW_NAMES = ["count", "sum", "mean", "min", "max", "argmin", "argmax", "mincount", "maxcount",
             "variance", "variance_pop", "stddev", "stddev_pop", "geomean", "relvar"]
LAW_ITEMS = [2.5, -1.0, 7.0, 7.0, 0.125, float("nan"), 3.0, 1e6, 4.0]


def sample_partials(m):
    items = [abs(x) + 0.5 if m.name == "geomean" and x == x else x for x in LAW_ITEMS]
    items = positional(items) if getattr(m, "positional", False) else items
    lifted = [m.lift(x) for x in items]
    combined = [m.combine(lifted[i], lifted[i + 1]) for i in range(len(lifted) - 1)]
    return lifted + combined + [m.identity]


@pytest.mark.parametrize("name", LAW_NAMES)
def test_identity_is_two_sided(name):
    m = A.get(name)
    for p in sample_partials(m):
        assert same_partial(m.combine(m.identity, p), p), p
        assert same_partial(m.combine(p, m.identity), p), p


@pytest.mark.parametrize("name", LAW_NAMES)
def test_associative_on_sample_partials(name):
    m = A.get(name)
    parts = sample_partials(m)
    checked = 0
    for i, a in enumerate(parts):
        for b in parts[i::3]:
            for c in parts[::4]:
                left = m.combine(m.combine(a, b), c)
                right = m.combine(a, m.combine(b, c))
                assert same_partial(left, right, rel=1e-9), (a, b, c)
                assert same_partial(m.lower(left), m.lower(right), rel=1e-9), (a, b, c)
                checked += 1
    assert checked > 50


@pytest.mark.parametrize("name", ["count", "sum", "mean", "variance", "stddev", "geomean"])
def test_inverse_undoes_combine(name):
    m = A.get(name)
    assert m.invertible
    items = [1.5, 2.0, 8.0, 3.0]
    total = functools.reduce(m.combine, (m.lift(x) for x in items), m.identity)
    rest = functools.reduce(m.combine, (m.lift(x) for x in items[1:]), m.identity)
    got = m.lower(m.combine(m.inverse(m.lift(items[0])), total))
    assert got == pytest.approx(m.lower(rest), rel=1e-12)


@pytest.mark.parametrize("name", ["min", "max", "argmin", "argmax", "mincount", "maxcount", "relvar"])
def test_not_invertible(name):
    assert not A.get(name).invertible
    assert A.get(name).inverse is None


def test_commutativity_declarations():
    for name in ["count", "sum", "mean", "min", "max", "variance", "stddev", "geomean", "relvar",
                 "maxcount", "mincount", "bloom", "countmin", "hll"]:
        assert A.get(name).commutative, name
    for name in ["argmax", "argmin", "first", "last", "collect", "m4"]:
        assert not A.get(name).commutative, name


# ---------------------------------------------------------------- the DABA paper's maxCount trace
MAXCOUNT_TRACE = [
    # (operation, argument, expected max, expected count)
    ("evict", None, 5.0, 1),
    ("evict", None, 4.0, 3),
    ("insert", 2.0, 4.0, 3),
    ("insert", 6.0, 6.0, 1),
]


@pytest.mark.parametrize("algorithm", FIFO_NO_INVERSE)
def test_maxcount_golden_trace(algorithm):
    counter = winagg.make(algorithm, "maxcount")
    maximum = winagg.make(algorithm, "max")
    for v in [4.0, 5.0, 3.0, 4.0, 0.0, 4.0, 4.0]:
        counter.insert(v)
        maximum.insert(v)
    assert (maximum.query(), counter.query()) == (5.0, 1)
    for op, arg, want_max, want_count in MAXCOUNT_TRACE:
        for agg in (counter, maximum):
            agg.evict() if op == "evict" else agg.insert(arg)
        assert (maximum.query(), counter.query()) == (want_max, want_count), (op, arg)
    assert len(counter) == 7


def test_maxcount_needs_an_inverse_for_soe():
    with pytest.raises(winagg.NotInvertibleError):
        winagg.make("soe", "maxcount")


@pytest.mark.parametrize("algorithm", FIFO)
def test_aggregator_skips_nan(algorithm):
    agg = winagg.make(algorithm, "mean")
    for v in [1.0, float("nan"), 5.0, float("nan")]:
        agg.insert(v)
    assert agg.query() == 3.0
    agg.evict()  # drops 1.0
    assert agg.query() == 5.0
    assert len(agg) == 3  # NaN items are still items of the window
