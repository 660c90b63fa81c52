"""Every built-in aggregation's Python monoid against exact arithmetic.

Two or three partials are built by lifting and folding random values (``monoid.lift``,
``monoid.combine`` from ``monoid.identity``); ``lower(combine(a, b))`` must equal the answer
computed exactly (Fractions, Decimal logarithms, plain lists) on the concatenated values,
and the combine must be associative: ``combine(combine(a, b), c)`` and
``combine(a, combine(b, c))`` lower to the same answer (within float rounding) as the
exact one. The sketches are checked by what a merge promises: the merge of two sketches
is the sketch of the union (bit for bit), and it answers for every item of the union.

The numeric answers come from tests/exact_oracle.py, never from the aggregation itself.
A window without a value may lower to the identity's answer (0 for sum, -inf for max: the
monoid's own documented empty answer; ``rolling`` and the windows turn it into NaN) or NaN.
"""

from __future__ import annotations

import math
from decimal import Context, Decimal
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import exact_oracle as X
from winagg import aggregations as A

SETTINGS = X.examples(ci=200, deep=20000)

#: values: moderate magnitudes (so that float sums and squares stay finite: the overflow
#: cases are the differential test's), exact small floats, and the special values
finite = st.one_of(st.integers(-50, 50).map(float), st.floats(-1e6, 1e6), st.floats(-1e-300, 1e-300),
                   st.sampled_from([0.0, -0.0, 5e-324, 1e12, -1e12, 0.1, 2.0 ** 52 + 1]))
special = st.sampled_from([math.nan, None, math.inf, -math.inf])
values = st.one_of(finite, finite, finite, special)
value_lists = st.lists(values, max_size=8)


def fold(monoid, items):
    acc = monoid.identity
    for item in items:
        acc = monoid.combine(acc, monoid.lift(item))
    return acc


def parts(monoid, a, b, c):
    """The three partials, their merges both ways, and the values they hold."""
    pa, pb, pc = fold(monoid, a), fold(monoid, b), fold(monoid, c)
    return (monoid.combine(pa, pb), monoid.combine(monoid.combine(pa, pb), pc),
            monoid.combine(pa, monoid.combine(pb, pc)))


def _missing(v):
    return v is None or (isinstance(v, float) and math.isnan(v))


def with_empty_identity(monoid, expect, items):
    """A window without a value may also lower to the identity's answer (see the module docs)."""
    if any(not _missing(v) for v in items):
        return expect
    empty = monoid.lower(monoid.identity)
    return X.AnyOf(expect, X.Missing() if X.is_missing(empty) else X.Exact(X.as_number(empty)))


def check(expect, got, what):
    message = expect.check(got)
    assert message is None, f"{what}: {message}"


# ---------------------------------------------------------------- pandas-like numeric aggregations
ORACLE = {"count": A.Count(), "sum": A.Sum(), "mean": A.Mean(), "min": A.Min(), "max": A.Max(),
          "var": A.Variance(1), "std": A.Stddev(1)}


@pytest.mark.parametrize("name", list(ORACLE))
@SETTINGS
@given(a=value_lists, b=value_lists, c=value_lists)
def test_numeric_combine_is_exact_and_associative(name, a, b, c):
    monoid = ORACLE[name]
    ab, left, right = parts(monoid, a, b, c)
    check(with_empty_identity(monoid, X.aggregate(name, a + b, integer=False), a + b), monoid.lower(ab), "a+b")
    want = with_empty_identity(monoid, X.aggregate(name, a + b + c, integer=False), a + b + c)
    check(want, monoid.lower(left), "(a+b)+c")
    check(want, monoid.lower(right), "a+(b+c)")


# ---------------------------------------------------------------- population variance and stddev
def _population(items, root):
    xs = [x for x in items if not _missing(x)]
    if not xs or any(math.isinf(x) for x in xs):
        return X.Missing()
    exact = [Fraction(x) for x in xs]
    mean = sum(exact) / len(exact)
    var = sum((x - mean) ** 2 for x in exact) / len(exact)
    biggest = max(abs(x) for x in exact)
    absolute = X.REL * biggest * biggest
    if not root:
        return X.Close(var, Fraction(0), absolute)
    value = Fraction(math.sqrt(float(var)))
    return X.Close(value, Fraction(0), 2 * Fraction(math.sqrt(float(absolute))) + X.REL * value)


@pytest.mark.parametrize("root", [False, True], ids=["var_pop", "std_pop"])
@SETTINGS
@given(a=value_lists, b=value_lists, c=value_lists)
def test_population_variance(root, a, b, c):
    monoid = A.StddevPop() if root else A.VariancePop()
    ab, left, right = parts(monoid, a, b, c)
    check(with_empty_identity(monoid, _population(a + b, root), a + b), monoid.lower(ab), "a+b")
    want = with_empty_identity(monoid, _population(a + b + c, root), a + b + c)
    check(want, monoid.lower(left), "(a+b)+c")
    check(want, monoid.lower(right), "a+(b+c)")


# ---------------------------------------------------------------- argmin, argmax, mincount, maxcount
def _positions(items, offset=0):
    return [(v, offset + k) for k, v in enumerate(items)]


def _arg(items, pick):
    kept = [(x, i) for x, i in items if not _missing(x)]
    if not kept:
        return -1
    best = pick(x for x, _ in kept)
    return min(i for x, i in kept if x == best)  # ties: the oldest


def _how_many(items, pick):
    kept = [x for x in items if not _missing(x)]
    if not kept:
        return 0
    best = pick(kept)
    return sum(1 for x in kept if x == best)


@pytest.mark.parametrize("name", ["argmin", "argmax", "mincount", "maxcount"])
@SETTINGS
@given(a=value_lists, b=value_lists, c=value_lists)
def test_positions_and_counts_of_the_extremes(name, a, b, c):
    monoid = A.get(name)
    pick = min if name.startswith("min") or name == "argmin" else max
    if monoid.positional:
        a, b, c = _positions(a), _positions(b, len(a)), _positions(c, len(a) + len(b))
        exact = lambda items: _arg(items, pick)  # noqa: E731
    else:
        exact = lambda items: _how_many(items, pick)  # noqa: E731
    ab, left, right = parts(monoid, a, b, c)
    assert monoid.lower(ab) == exact(a + b)
    assert monoid.lower(left) == monoid.lower(right) == exact(a + b + c)


# ---------------------------------------------------------------- geomean, relvar
_DECIMAL = Context(prec=60)


def _geomean(items):
    xs = [x for x in items if not _missing(x)]
    if not xs or any(x < 0 for x in xs):
        return X.Missing()
    if any(x == 0 for x in xs) and any(math.isinf(x) for x in xs):
        return X.Missing()  # log 0 + log inf: no geometric mean
    if any(x == 0 for x in xs):
        return X.Exact(0.0)
    if any(math.isinf(x) for x in xs):
        return X.Exact(math.inf)
    logs = sum((Decimal(x).ln(_DECIMAL) for x in xs), Decimal(0))
    value = (logs / len(xs)).exp(_DECIMAL)
    return _relative(Fraction(value), len(xs))


def _relative(value: Fraction, n: int):
    # each log is rounded (an absolute error of eps) and the sum of n logs is exponentiated
    return X.Close(value, Fraction(0), abs(value) * Fraction(n + 2, 10 ** 11))


def _relvar(items):
    xs = [x for x in items if not _missing(x)]
    if not xs:
        return X.Missing()
    lo, hi = min(xs), max(xs)
    if hi == 0 or math.isinf(hi) or math.isinf(lo):
        with np.errstate(all="ignore"):
            value = np.float64(hi - lo) / np.float64(hi) if hi != 0 else math.nan
        return X.Missing() if math.isnan(value) else X.Exact(float(value))
    return X.Close((Fraction(hi) - Fraction(lo)) / Fraction(hi), Fraction(0), Fraction(0))


@pytest.mark.parametrize("name", ["geomean", "relvar"])
@SETTINGS
@given(a=value_lists, b=value_lists, c=value_lists)
def test_geomean_and_relative_variation(name, a, b, c):
    monoid = A.get(name)
    exact = _geomean if name == "geomean" else _relvar
    ab, left, right = parts(monoid, a, b, c)
    check(exact(a + b), monoid.lower(ab), "a+b")
    check(exact(a + b + c), monoid.lower(left), "(a+b)+c")
    check(exact(a + b + c), monoid.lower(right), "a+(b+c)")


# ---------------------------------------------------------------- first, last, collect, m4
objects = st.one_of(values, st.text(max_size=3), st.integers(-(2 ** 70), 2 ** 70))


def _same(got, want):
    if X.is_missing(want):
        return X.is_missing(got)
    return not X.is_missing(got) and got == want and type(got) is type(want)


def _m4(items):
    if not items:
        return None
    numbers = [x for x in items if not _missing(x)]
    return (items[0], items[-1], min(numbers) if numbers else None, max(numbers) if numbers else None)


@pytest.mark.parametrize("name", ["first", "last", "collect", "m4"])
@SETTINGS
@given(a=st.lists(objects, max_size=6), b=st.lists(objects, max_size=6), c=st.lists(objects, max_size=6))
def test_order_aggregations(name, a, b, c):
    if name == "m4":  # min and max compare the items: one kind of item per test
        a, b, c = ([x for x in part if x is None or isinstance(x, float)] for part in (a, b, c))
    monoid = A.get(name)
    exact = {"first": lambda xs: xs[0] if xs else None, "last": lambda xs: xs[-1] if xs else None,
             "collect": list, "m4": _m4}[name]
    ab, left, right = parts(monoid, a, b, c)
    for got, items in ((monoid.lower(ab), a + b), (monoid.lower(left), a + b + c), (monoid.lower(right), a + b + c)):
        want = exact(items)
        if isinstance(want, (list, tuple)):
            got = list(got) if got is not None else None
            assert got is not None and len(got) == len(want), (got, want)
            if name == "m4":  # min and max of equal numbers may be either of them (-0.0 and 0.0)
                assert all(_same(g, w) or (not X.is_missing(w) and g == w) for g, w in zip(got, want)), (got, want)
            else:
                assert all(_same(g, w) for g, w in zip(got, want)), (got, want)
        else:
            assert _same(got, want) or (got is None and want is None), (got, want)


# ---------------------------------------------------------------- order statistics
@pytest.mark.parametrize("name", ["median", "quantile", "rank"])
@SETTINGS
@given(a=value_lists, b=value_lists, c=value_lists)
def test_order_statistics_of_merged_sorted_partials(name, a, b, c):
    monoid = A.get(name)
    kept = sorted(x for x in a + b + c if not _missing(x))
    for partial in parts(monoid, a, b, c)[1:]:
        got = monoid.lower(partial)
        newest = None if not a + b + c else (a + b + c)[-1]
        if name == "rank":  # the rank of the newest value, average of ties
            want = math.nan if _missing(newest) else (sum(x < newest for x in kept)
                                                      + (sum(x == newest for x in kept) + 1) / 2)
        elif not kept:
            want = math.nan
        elif name == "median" or math.isinf(kept[(len(kept) - 1) // 2]) or math.isinf(kept[len(kept) // 2]):
            middle = (kept[(len(kept) - 1) // 2], kept[len(kept) // 2])
            want = middle[0] if middle[0] == middle[1] else (middle[0] + middle[1]) / (2 if name == "median" else 1)
        else:
            low, high = kept[(len(kept) - 1) // 2], kept[len(kept) // 2]  # Quantile(): linear, q = 0.5
            want = low if low == high else low + (high - low) * 0.5
        assert _same(got, want) or math.isclose(got, want, rel_tol=1e-12), (got, want)


@SETTINGS
@given(a=value_lists, b=value_lists, c=value_lists)
def test_a_merged_quantile_sketch_counts_the_union(a, b, c):
    monoid = A.get("quantile_sketch")
    for partial in parts(monoid, a, b, c)[1:]:
        assert np.array_equal(partial, fold(monoid, a + b + c))
    assert partial.sum() == sum(not _missing(x) for x in a + b + c)


# ---------------------------------------------------------------- sketches
keys = st.one_of(st.integers(-(2 ** 63), 2 ** 64 - 1), st.integers(-5, 5), st.text(max_size=4),
                 st.sampled_from([2 ** 53 + 1, 2 ** 53, 1.5, -0.0, 0.0, 1e300, None, math.nan]))
key_lists = st.lists(keys, max_size=12)

@pytest.mark.parametrize("name", ["bloom", "countmin", "hll"])
@SETTINGS
@given(a=key_lists, b=key_lists, c=key_lists)
def test_a_merged_sketch_is_the_sketch_of_the_union(name, a, b, c):
    monoid = A.get(name)
    ab, left, right = parts(monoid, a, b, c)
    union, union3 = fold(monoid, a + b), fold(monoid, a + b + c)
    assert np.array_equal(ab, union)
    assert np.array_equal(left, union3) and np.array_equal(right, union3)
    # merging in any order (all three are commutative) gives the same sketch
    assert np.array_equal(monoid.combine(fold(monoid, b), fold(monoid, a)), union)
    lowered = monoid.lower(ab)
    present = [x for x in a + b if not _missing(x)]
    if name == "bloom":
        assert all(x in lowered for x in present)  # no false negatives
        assert np.array_equal(lowered.words, monoid.lower(union).words)
    elif name == "countmin":
        for x in present:  # never an under-count
            assert lowered[x] >= sum(1 for y in present if y == x and type(y) is type(x))
        assert np.array_equal(lowered.counts, monoid.lower(union).counts)
    else:
        assert lowered == monoid.lower(union)
        assert (lowered == 0) == (not present)


def test_every_builtin_aggregation_is_covered():
    covered = set(ORACLE) | {"var_pop", "std_pop", "argmin", "argmax", "mincount", "maxcount", "geomean",
                             "relvar", "first", "last", "collect", "m4", "bloom", "countmin", "hll", "median",
                             "quantile", "rank", "quantile_sketch"}
    names = {cls.aliases[0] for cls in A.BUILTINS}
    aliases = {"variance": "var", "stddev": "std", "variance_pop": "var_pop", "stddev_pop": "std_pop",
               "relative_variation": "relvar", "count_min": "countmin", "hyperloglog": "hll"}
    assert {aliases.get(n, n) for n in names} <= covered, names
