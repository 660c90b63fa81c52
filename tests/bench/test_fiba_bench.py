"""The FiBA experiments of ``winagg bench`` in --quick mode: the files they write, not speeds."""

import csv

import numpy as np
import pytest

from winagg.bench import fiba_common, fiba_flights
from winagg.cli import main
from measurements import is_measurement


def read(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def test_fiba_latency_quick_writes_every_measure(tmp_path):
    out = tmp_path / "lat"
    assert main(["bench", "fiba_latency", "--quick", "--algorithms", "b_fiba4,daba_lite", "--aggs", "sum",
                 "--out", str(out)]) == 0
    rows = read(out / "fiba_latency.csv")
    assert {(r["measure"], r["algorithm"]) for r in rows} == {
        ("evict", "b_fiba4"), ("insert_d0", "b_fiba4"), ("insert_d64", "b_fiba4"),
        ("evict", "daba_lite"), ("insert_d0", "daba_lite")}
    assert all(is_measurement(r["median_ns"]) for r in rows)
    for measure in ("evict", "insert_d0", "insert_d64"):
        assert (out / f"fiba_latency_{measure}.png").stat().st_size > 0


def test_fiba_throughput_quick_sweeps(tmp_path):
    out = tmp_path / "thr"
    assert main(["bench", "fiba_throughput", "--quick", "--algorithms", "b_fiba4", "--aggs", "sum",
                 "--fiba-sweeps", "m_bulk,d_m1024", "--out", str(out)]) == 0
    rows = read(out / "fiba_throughput.csv")
    assert {r["sweep"] for r in rows} == {"m_bulk", "d_m1024"}
    assert all(is_measurement(r["median_mitems_s"]) for r in rows)


def test_flights_workload_statistics_on_a_small_stream():
    # window 10: 5 in, 3 in (d=1), 20 in -> evicts 3 and 5 (m=2), 1 too late, 20 again (same time, d=0)
    sizes, bulks, distances = fiba_flights.workload_statistics(np.array([5.0, 3.0, 20.0, 1.0, 20.0]), 10.0)
    assert sizes.tolist() == [1, 2, 1, 1]
    assert bulks.tolist() == [2]
    assert distances.tolist() == [0, 1, 0, 0]


def test_flights_driver_answers_the_closed_window_behind_the_youngest_flight():
    """Late flights are left out; every answer sums the kept flights within ``window`` of the
    youngest so far (summed here in numpy)."""
    times = np.array([5.0, 3.0, 20.0, 1.0, 20.0, 12.0, 30.0, 19.0, 25.0])
    values = np.arange(1.0, 10.0)
    kept, plan = fiba_flights.flights_plan(times, 10.0)
    assert kept.tolist() == [True, True, True, False, True, True, True, False, True]
    out, _ = fiba_flights.run_stream(fiba_flights.flights_driver("b_fiba4", "sum"), times[kept], values[kept],
                                     plan, 4)
    t, v = times[kept], values[kept]
    youngest = np.maximum.accumulate(t)
    want = [v[: k + 1][t[: k + 1] >= youngest[k] - 10.0].sum() for k in range(t.size)]
    assert out.tolist() == want == [1.0, 3.0, 3.0, 8.0, 14.0, 15.0, 24.0]


# b_fiba4 also with single inserts (the rounds' other path): another FiBA variant here would compile
# a whole tree for this test alone (nb_fiba8 took about 15 s); the variants are checked in tests/algos/ooo.
@pytest.mark.parametrize("name,d,bulk_insert", [("b_fiba4", 0, True), ("b_fiba4", 8, True), ("b_fiba4", 8, False),
                                                ("daba_lite", 0, False)])
def test_filled_window_batches_query_the_n_latest_items(name, d, bulk_insert):
    """Batches of several bulk sizes on one filled window: after every round the window holds the
    d far items and the n - d latest in-order ones (values 1 + (i mod 101), summed here in numpy)."""
    n = 64
    window = fiba_common.FilledWindow(name, "sum", n, d, 16)
    values = lambda lo, hi: float((1 + np.arange(lo, hi) % 101).sum())  # noqa: E731
    far = values(0, d)
    clock = n - d
    for m, rounds in ((1, 40), (16, 9), (4, 30)):
        window.batches(m, rounds, bulk_insert, False)
        want = 0.0
        for _ in range(rounds):
            clock += m
            want += values(clock - (n - d), clock) + far
        assert window.checksums[-1] == want, f"m = {m}"
