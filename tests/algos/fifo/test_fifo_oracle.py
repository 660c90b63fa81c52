"""Every FIFO algorithm against the brute-force oracle, in Python and compiled."""

import numpy as np
import pytest
from hypothesis import given, settings, HealthCheck
from hypothesis import strategies as st

import winagg
from winagg.engine.plans import OP_BULK_EVICT, OP_EVICT, OP_INSERT, OP_QUERY
from winagg.engine.kernels import compiled_driver
from winagg.engine.loops import run_script
from winagg.algos.registry import info

from oracle import CONCAT, MATRIX, Reference, fifo_scripts, run_fifo_script, same_answer

FIFO = [a.name for a in winagg.algorithms() if a.order == "fifo"]
BUILTIN_NAMES = ["count", "sum", "mean", "min", "max", "argmin", "argmax", "mincount", "maxcount",
                 "variance", "stddev", "stddev_pop", "geomean", "relvar", "m4", "first", "last",
                 "collect", "bloom", "countmin", "hll"]

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# Subtracting float moments leaves rounding residue (sqrt makes it ~1e-8 on a stddev of 0),
# which is why rolling never picks soe for floats; soe is held to exactness on the others.
INEXACT_UNDER_SUBTRACTION = ("variance", "stddev", "stddev_pop")


def monoids_for(algorithm):
    candidates = [CONCAT, MATRIX] + [winagg.aggregations.get(n) for n in BUILTIN_NAMES]
    if info(algorithm).needs_inverse:
        return [m for m in candidates
                if m.invertible and not any(m.name.startswith(n) for n in INEXACT_UNDER_SUBTRACTION)]
    return candidates


CASES = [(alg, m) for alg in FIFO for m in monoids_for(alg)]


@pytest.mark.parametrize("algorithm,monoid", CASES, ids=[f"{a}-{m.name}" for a, m in CASES])
@SETTINGS
@given(script=fifo_scripts)
def test_python_mode_matches_oracle(algorithm, monoid, script):
    run_fifo_script(winagg.make(algorithm, monoid), monoid, script)


@pytest.mark.parametrize("algorithm,exact", [("soe", False), ("daba_lite", True), ("two_stacks", True)])
def test_only_subtract_on_evict_carries_residue_of_evicted_floats(algorithm, exact):
    agg = winagg.make(algorithm, "stddev_pop")
    agg.bulk_insert([1e6 + 0.1 * i for i in range(1000)] + [1.0] * 10)
    for _ in range(1000):
        agg.evict()
    # the window now holds ten 1.0: the exact answer is 0.0
    assert (agg.query() == 0.0) is exact


def test_soe_is_checked_with_a_non_commutative_group():
    # The oracle's matrix monoid must really be non-commutative for the soe cases to mean anything.
    a, b = MATRIX.lift(2), MATRIX.lift(3)
    assert MATRIX.combine(a, b) != MATRIX.combine(b, a)
    assert MATRIX.combine(MATRIX.inverse(a), MATRIX.combine(a, b)) == b


# ---------------------------------------------------------------- compiled
compiled_scripts = st.lists(
    st.one_of(st.tuples(st.just(OP_INSERT), st.integers(1, 20)), st.tuples(st.just(OP_INSERT), st.integers(1, 20)),
              st.tuples(st.just(OP_EVICT), st.just(0)), st.tuples(st.just(OP_QUERY), st.just(0)),
              st.tuples(st.just(OP_BULK_EVICT), st.integers(0, 12))),
    max_size=120)

COMPILED_EVERYWHERE = ["sum", "max", "argmax", "mean", "bloom"]
COMPILED_DABA_LITE = ["count", "min", "argmin", "mincount", "maxcount", "variance", "stddev", "geomean",
                      "relvar", "countmin", "hll"]
COMPILED_CASES = [(alg, agg) for alg in FIFO for agg in COMPILED_EVERYWHERE
                  if not (info(alg).needs_inverse and not winagg.aggregations.get(agg).invertible)]
COMPILED_CASES += [("daba_lite", agg) for agg in COMPILED_DABA_LITE]
# The MTAs compile slowly (many small tree helpers): one aggregation per layout each
# (scalar, tuple, vector); tests/algos/fifo/test_lmta.py and test_amta.py add their bulk paths.
COMPILED_SLOW = {"lmta": ["max", "mean", "bloom"], "amta": ["sum", "argmax", "bloom"]}
COMPILED_CASES = [(alg, agg) for alg, agg in COMPILED_CASES
                  if alg not in COMPILED_SLOW or agg in COMPILED_SLOW[alg]]


def as_number(answer):
    """The number the compiled path reports for a Python-mode answer."""
    if isinstance(answer, winagg.aggregations.BloomFilter):
        return answer.estimated_count()
    if isinstance(answer, winagg.aggregations.CountMinSketch):
        return float(answer.counts[:512].sum())
    return answer


@pytest.mark.parametrize("algorithm,agg", COMPILED_CASES, ids=[f"{a}-{g}" for a, g in COMPILED_CASES])
@SETTINGS
@given(raw=compiled_scripts)
def test_compiled_matches_oracle(algorithm, agg, raw):
    monoid = winagg.aggregations.get(agg)
    # the counted kernels (as winagg.Window runs them): NaN over no value, as the oracle says
    spec = monoid.compiled_counted(np.dtype(np.float64))
    driver = compiled_driver(info(algorithm), spec)
    codes, values, size = [], [], 0
    for code, value in raw:
        if code == OP_EVICT and size == 0:
            continue  # the kernel's caller guarantees a non-empty window
        if code == OP_BULK_EVICT:
            value = min(value, size)  # and never bulk-evicts more than the window holds
        size += {OP_INSERT: 1, OP_EVICT: -1, OP_QUERY: 0, OP_BULK_EVICT: -value}[code]
        codes.append(code)
        values.append(float(value))
    # In pieces of 7 operations from a window of capacity 2: buffers grow while they hold items.
    out = run_script(driver, np.array(codes, dtype=np.int64), np.array(values, dtype=np.float64), chunk=7)
    ref = Reference(monoid)
    for k, (code, value) in enumerate(zip(codes, values)):
        if code == OP_INSERT:
            ref.insert((value, k) if monoid.positional else value)
        elif code == OP_EVICT:
            ref.evict()
        elif code == OP_BULK_EVICT:
            for _ in range(int(value)):
                ref.evict()
        else:
            want = as_number(ref.query())
            assert same_answer(out[k].item(), want), f"op {k}: compiled {out[k]!r}, oracle {want!r}"
