"""Mergeable sketches: Bloom filter, Count-Min sketch, HyperLogLog."""

import collections
import functools
import math

import numpy as np
import pytest

import winagg
from winagg import aggregations as A

FIFO = ["recalc", "soe", "two_stacks", "two_stacks_lite", "daba", "daba_lite"]
FIFO_NO_INVERSE = [name for name in FIFO if name != "soe"]


def sketch(monoid, items):
    """The partial (not lowered) of ``items``: identity ⊗ lift(x0) ⊗ ..."""
    return functools.reduce(monoid.combine, (monoid.lift(x) for x in items), monoid.identity)


# ---------------------------------------------------------------- Bloom filter
def test_bloom_defaults_are_the_papers():
    b = A.get("bloom")
    assert isinstance(b, A.Bloom)
    assert b.identity.size * 64 == 4096
    assert b.hashes == 4
    assert b.commutative and not b.invertible


def test_bloom_has_no_false_negatives():
    b = A.Bloom()
    items = list(range(0, 3000, 3)) + [f"key-{i}" for i in range(300)] + [0.25, -7.5, b"raw"]
    filt = b.lower(sketch(b, items))
    assert isinstance(filt, A.BloomFilter)
    for x in items:
        assert x in filt, x


def test_bloom_empty_filter_holds_nothing():
    b = A.Bloom()
    filt = b.lower(b.identity)
    assert 1 not in filt and "a" not in filt and 0.5 not in filt
    assert None not in filt and float("nan") not in filt
    assert filt.estimated_count() == 0.0


def test_bloom_false_positive_rate_matches_theory():
    b = A.Bloom()
    n, m, k = 1000, 4096, 4
    filt = b.lower(sketch(b, range(n)))
    probes = range(10**6, 10**6 + 20000)
    rate = sum(x in filt for x in probes) / len(probes)
    theory = (1.0 - math.exp(-k * n / m)) ** k  # about 0.151
    assert theory == pytest.approx(0.151, abs=0.001)
    assert rate == pytest.approx(theory, rel=0.2)
    # the estimate of how many distinct items went in (Swamidass and Baldi)
    assert filt.estimated_count() == pytest.approx(n, rel=0.1)


def test_bloom_with_other_parameters():
    b = A.Bloom(bits=1024, hashes=2)
    assert b.identity.size == 16
    filt = b.lower(sketch(b, ["x", "y"]))
    assert "x" in filt and "y" in filt
    with pytest.raises(ValueError, match="multiple of 64"):
        A.Bloom(bits=100)
    with pytest.raises(ValueError, match="hashes"):
        A.Bloom(hashes=0)


def test_bloom_merge_equals_bloom_of_union():
    b = A.Bloom()
    left, right = list(range(200)), [f"s{i}" for i in range(150)] + list(range(100, 300))
    merged = b.combine(sketch(b, left), sketch(b, right))
    assert np.array_equal(merged, sketch(b, left + right))
    assert np.array_equal(merged, sketch(b, right + left))


@pytest.mark.parametrize("algorithm", FIFO_NO_INVERSE)
def test_bloom_through_an_aggregator(algorithm):
    agg = winagg.make(algorithm, "bloom")
    for i in range(40):
        agg.insert(f"user{i}")
    for _ in range(30):
        agg.evict()
    filt = agg.query()
    for i in range(30, 40):
        assert f"user{i}" in filt
    # only 10 items are left: with 4096 bits the evicted ones are (deterministically) gone
    assert sum(f"user{i}" in filt for i in range(30)) == 0
    assert np.array_equal(filt.words, sketch(A.Bloom(), [f"user{i}" for i in range(30, 40)]))


# ---------------------------------------------------------------- Count-Min sketch
def test_countmin_never_underestimates():
    cm = A.CountMin(width=64, depth=3)  # narrow: many collisions
    rng = np.random.default_rng(7)
    items = [int(x) for x in rng.zipf(1.5, size=3000) % 1000]
    true = collections.Counter(items)
    est = cm.lower(sketch(cm, items))
    assert isinstance(est, A.CountMinSketch)
    over = 0
    for item, count in true.items():
        assert est[item] >= count
        over += est[item] > count
    assert over > 0  # the sketch is narrow enough that collisions really happen
    assert est[10**9] >= 0


def test_countmin_exact_for_few_distinct_items():
    cm = A.get("countmin")
    items = ["a"] * 5 + [3] * 2 + [2.5] * 7 + ["b"]
    est = cm.lower(sketch(cm, items))
    assert (est["a"], est[3], est[2.5], est["b"], est["never"]) == (5, 2, 7, 1, 0)
    assert est.estimate(3.0) == 2
    assert est[None] == 0


def test_countmin_merge_and_inverse():
    cm = A.CountMin(width=128, depth=4)
    left, right = ["x", "y", "x", 1, 2], ["y", 2, 2, "z"]
    merged = cm.combine(sketch(cm, left), sketch(cm, right))
    assert np.array_equal(merged, sketch(cm, left + right))
    assert cm.invertible
    back = cm.combine(cm.inverse(sketch(cm, left)), merged)
    assert np.array_equal(back, sketch(cm, right))


@pytest.mark.parametrize("algorithm", FIFO)
def test_countmin_through_an_aggregator(algorithm):
    agg = winagg.make(algorithm, "countmin")
    for x in ["a", "b", "a", "c", "a", "b"]:
        agg.insert(x)
    agg.evict()
    agg.evict()  # window: a c a b
    est = agg.query()
    assert (est["a"], est["b"], est["c"]) == (2, 1, 1)


# ---------------------------------------------------------------- HyperLogLog
@pytest.mark.parametrize("n", [10_000, 100_000])
@pytest.mark.parametrize("kind", ["int", "str"])
def test_hyperloglog_within_three_standard_errors(n, kind):
    hll = A.get("hll")
    items = range(n) if kind == "int" else (f"item-{i}" for i in range(n))
    estimate = hll.lower(sketch(hll, items))
    registers = 2 ** 10
    standard_error = 1.04 / math.sqrt(registers)
    assert abs(estimate - n) <= 3 * standard_error * n, estimate


def test_hyperloglog_duplicates_do_not_count():
    hll = A.HyperLogLog(precision=12)
    once = hll.lower(sketch(hll, range(5000)))
    thrice = hll.lower(sketch(hll, list(range(5000)) * 3))
    assert once == thrice
    assert hll.lower(hll.identity) == 0.0
    assert hll.lower(sketch(hll, ["only"])) == pytest.approx(1.0, rel=0.01)


def test_hyperloglog_merge_equals_union():
    hll = A.HyperLogLog()
    left, right = range(0, 6000), range(4000, 9000)
    merged = hll.combine(sketch(hll, left), sketch(hll, right))
    assert np.array_equal(merged, sketch(hll, list(left) + list(right)))
    assert hll.lower(merged) == pytest.approx(9000, rel=3 * 1.04 / 32)


def test_hyperloglog_parameters():
    assert A.HyperLogLog(precision=6).identity.size == 64
    for bad in (3, 17):
        with pytest.raises(ValueError, match="precision"):
            A.HyperLogLog(precision=bad)


# ---------------------------------------------------------------- keys
@pytest.mark.parametrize("name", ["bloom", "countmin", "hll"])
def test_same_key_for_equal_numbers(name):
    m = A.get(name)
    for a, b in [(3, 3.0), (3, np.int64(3)), (3, np.float32(3.0)), (-5, -5.0), (0, 0.0)]:
        assert np.array_equal(m.lift(a), m.lift(b)), (a, b)
    assert not np.array_equal(m.lift(3), m.lift(3.5))
    assert not np.array_equal(m.lift(3), m.lift(4))


def test_keys_equal_across_bloom_and_countmin_types():
    b, cm = A.Bloom(), A.CountMin()
    assert 3 in b.lower(sketch(b, [3.0]))
    assert 3.0 in b.lower(sketch(b, [3]))
    assert cm.lower(sketch(cm, [3, 3.0, np.int32(3)]))[3.0] == 3


@pytest.mark.parametrize("name", ["bloom", "countmin", "hll"])
def test_missing_values_lift_to_the_empty_sketch(name):
    m = A.get(name)
    assert np.array_equal(m.lift(None), m.identity)
    assert np.array_equal(m.lift(float("nan")), m.identity)


def test_compiled_bloom_probe_finds_integral_floats():
    # the compiled path keys float inputs; probe=3 (an int) must find 3.0
    out = winagg.rolling(np.array([1.0, 2.0, 3.0, 4.0, 5.0]), window=2, agg=A.Bloom(probe=3))
    assert out.tolist() == [0.0, 0.0, 1.0, 1.0, 0.0]


# ---------------------------------------------------------------- quantile sketch (DDSketch)
ACCURACY = 0.02
SKETCH = A.QuantileSketch(0.9, relative_accuracy=ACCURACY, min_value=1e-6, max_value=1e6)


def _sketch_inputs():
    """Adversarial orders and shapes: sorted, reversed, few distinct values, signs, zeros, NaN."""
    rng = np.random.default_rng(41)
    spread = rng.lognormal(0.0, 3.0, 400) * np.where(rng.random(400) < 0.3, -1.0, 1.0)
    spread[rng.random(400) < 0.05] = 0.0
    spread[rng.random(400) < 0.05] = np.nan
    few = rng.choice([-3.0, 0.5, 7.0, 1e5], 400)
    return {"random": spread, "sorted": np.sort(spread), "reversed": np.sort(spread)[::-1].copy(), "few": few}


def _within_bound(estimate, window_values, q=0.9):
    kept = window_values[~np.isnan(window_values)]
    if not kept.size:
        return estimate != estimate
    exact = float(np.quantile(kept, q, method="lower"))  # the value of rank floor(q (n - 1))
    return abs(estimate - exact) <= ACCURACY * abs(exact) * (1 + 1e-9)


@pytest.mark.parametrize("shape", ["random", "sorted", "reversed", "few"])
def test_quantile_sketch_stays_within_its_bound_on_every_path(shape):
    x = _sketch_inputs()[shape]
    window = 50
    rolled = winagg.rolling(x, window, SKETCH)  # compiled
    stepped = winagg.make("two_stacks", SKETCH)  # Python, per item
    for i, value in enumerate(x):
        rows = x[max(0, i - window + 1):i + 1]
        assert _within_bound(rolled[i], rows), (i, rolled[i])
        stepped.insert(value)
        if i >= window:
            stepped.evict()
        assert stepped.query() == rolled[i] or rolled[i] != rolled[i]
    # out of order: FiBA merges the partials in a tree shaped by arrival, not by time
    fiba = winagg.make("fiba", SKETCH)
    arrival = np.random.default_rng(3).permutation(x.size)
    for start in range(0, x.size, 64):
        batch = np.sort(arrival[start:start + 64])
        fiba.bulk_insert([x[t] for t in batch], times=[int(t) for t in batch])
    assert _within_bound(fiba.query(), x)
    assert _within_bound(fiba.query(100, 299), x[100:300])
    fiba.bulk_evict(199)
    assert _within_bound(fiba.query(), x[200:])
    # tumbling time windows of a Window
    results = winagg.Window(SKETCH, size=100, slide=100).push_batch(np.arange(x.size), x)
    assert results and all(_within_bound(r.value, x[int(r.start):int(r.end)]) for r in results)


def test_quantile_sketch_merges_exactly_and_subtracts_exactly():
    x = _sketch_inputs()["random"]
    a, b = sketch(SKETCH, x[:150]), sketch(SKETCH, x[150:])
    assert np.array_equal(SKETCH.combine(a, b), sketch(SKETCH, x))
    assert np.array_equal(SKETCH.combine(b, a), sketch(SKETCH, x))
    assert np.array_equal(SKETCH.combine(SKETCH.inverse(a), sketch(SKETCH, x)), b)
    np.testing.assert_array_equal(winagg.rolling(x, 30, SKETCH, algorithm="soe"), winagg.rolling(x, 30, SKETCH))


def test_quantile_sketch_edges_and_bad_input():
    assert math.isnan(SKETCH.fold([]))
    assert math.isnan(SKETCH.fold([math.nan, None]))
    assert SKETCH.fold([math.inf] * 10) == math.inf
    assert SKETCH.fold([-math.inf] * 3 + [1.0]) == -math.inf  # rank floor(0.9 * 3) = 2: -inf
    assert SKETCH.fold([1e-9, 0.0]) == 0.0  # below min_value: estimated as 0
    with pytest.raises(ValueError, match="q must be in"):
        A.QuantileSketch(-0.1)
    with pytest.raises(ValueError, match="relative_accuracy"):
        A.QuantileSketch(0.5, relative_accuracy=1.5)
    with pytest.raises(ValueError, match="min_value"):
        A.QuantileSketch(0.5, min_value=10.0, max_value=1.0)
    with pytest.raises(TypeError, match="quantile_sketch needs numbers"):
        SKETCH.lift("a")
    with pytest.raises(TypeError, match="needs numbers"):
        winagg.rolling(np.array(["a", "b"], dtype=object), 2, SKETCH)
