"""B-Int (Arasu-Widom base intervals): range queries and the combine bound of its queries."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import winagg
from oracle import CONCAT, MATRIX, fifo_range_scripts, run_fifo_range_script

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MONOIDS = [CONCAT, MATRIX, winagg.aggregations.get("max"), winagg.aggregations.get("argmin")]


@pytest.mark.parametrize("monoid", MONOIDS, ids=[m.name for m in MONOIDS])
@SETTINGS
@given(script=fifo_range_scripts)
def test_range_queries_match_oracle(monoid, script):
    run_fifo_range_script(winagg.make("b_int", monoid), monoid, script)


def test_query_reads_at_most_two_intervals_per_level():
    calls = [0]

    def counted(a, b):
        calls[0] += 1
        return a + b

    agg = winagg.make("b_int", winagg.Monoid("", counted, lambda x: f"{x};"))
    agg.bulk_insert(range(1000))
    for _ in range(333):
        agg.evict()
    for lo, hi in ((333, 999), (400, 401), (517, 902)):
        calls[0] = 0
        assert agg.query(lo, hi) == "".join(f"{i};" for i in range(lo, hi + 1))
        assert calls[0] <= 2 * 10  # 1024 leaves: 10 levels, one identity combine included


def test_compiled_rolling_matches_brute_force():
    values = np.random.default_rng(5).normal(size=300)
    got = winagg.rolling(values, window=29, agg="max", algorithm="b_int")
    np.testing.assert_allclose(got, [values[max(0, i - 28):i + 1].max() for i in range(len(values))])
