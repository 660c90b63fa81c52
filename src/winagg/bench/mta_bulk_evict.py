"""Experiment ``mta_bulk_evict``: latency of evicting k items at once from a 2^22 window (paper 001).

A compiled kernel fills the window with n items, then for each eviction
size k (1, 2, 4, ..., n/2, n - 1) times ``bulk_evict(k)`` followed by the
query (the answer after the eviction) with the cycle counter, ``--repeat``
times, re-inserting k items after each so the window is back to n. LMTA and
AMTA drop whole branches (O(log n) for any k); DABA and Recalc evict one by
one (their ``bulk_evict`` is a loop), and Recalc's query recomputes the
window, so Recalc is capped at ``--recalc-cap`` items.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .. import jitcache, registry
from ..driver import compiled_funcs
from . import common, mta_common
from .cycles import cycles_after, cycles_per_ns, read_cycles

NAME = "mta_bulk_evict"
DESCRIPTION = "latency of one bulk eviction of k = 1 .. n-1 items from an n = 2^22 window (paper 001)"

DEFAULTS = dict(algorithms=("lmta", "amta", "daba", "recalc"), aggs=("sum",), rounds=0, budget=0.0, repeat=5,
                evict_log_window=22, recalc_cap=2 ** 16, out="results/mta_bulk_evict")
QUICK = dict(algorithms=("lmta", "amta"), repeat=2, evict_log_window=10)
COLUMNS = (("algorithm", "aggregation", "window", "count", "repeats", "median_us", "min_us", "max_us", "note")
           + mta_common.MACHINE_COLUMNS)

_kernels: dict = {}


def add_arguments(group) -> None:
    """The options only this experiment takes (it also reads --repeat of ``throughput``)."""
    group.add_argument("--evict-log-window", type=int, metavar="K",
                       help="window n = 2^K to evict from (default 22; --quick: 10)")
    group.add_argument("--recalc-cap", type=int, metavar="N",
                       help="largest eviction size run for recalc (default 65536)")


def eviction_sizes(window: int) -> list:
    """1, 2, 4, ... below ``window``, and ``window - 1``."""
    sizes = [1 << k for k in range(window.bit_length()) if (1 << k) < window]
    if window - 1 not in sizes and window > 1:
        sizes.append(window - 1)
    return sizes


def bulk_evict_kernel(algorithm, spec):
    """``kernel(values, window, counts, cycles) -> checksum`` for one algorithm x aggregation.

    ``cycles[c, r]``: cycles of the r-th ``bulk_evict(counts[c])`` + query.

    A loop of its own rather than the window driver's timed build: through the driver, the
    same evictions from a window of 2^16 took about twice as long for AMTA at 64 to 65,535
    items (at 4,096: 1.02 against 0.49 us, median of 5; the cause was not found), while
    single evictions, LMTA's and DABA's took about the same.
    """
    key = (algorithm.name, spec.key)
    if key in _kernels:
        return _kernels[key]
    funcs, evict_many = compiled_funcs(algorithm, spec)
    init, insert, evict, query, grow = funcs[:5]
    lift, lower = spec.lift, spec.lower

    @jitcache.njit  # a closure over one algorithm's functions: the cache key must tell them apart
    def kernel(values, window, counts, cycles):
        bufs, st = init(window + 1)  # never grows
        period = values.shape[0]
        position = 0
        for _ in range(window):
            st = insert(bufs, st, lift(values[position % period], position))
            position += 1
        checksum = 0.0
        for c in range(counts.shape[0]):
            count = counts[c]
            for r in range(cycles.shape[1]):
                start = read_cycles()
                st = evict_many(bufs, st, count)
                result = np.float64(lower(query(bufs, st)))
                cycles[c, r] = cycles_after(result) - start
                checksum += result
                for _ in range(count):  # back to a full window, untimed
                    st = insert(bufs, st, lift(values[position % period], position))
                    position += 1
        return checksum

    _kernels[key] = kernel
    return kernel


def _settings(args) -> dict:
    get = lambda name: common.option(args, name, DEFAULTS, QUICK)  # noqa: E731
    cfg = dict(algorithms=common.names(get("algorithms")), aggs=common.names(get("aggs")), repeat=get("repeat"),
               evict_log_window=get("evict_log_window"), recalc_cap=get("recalc_cap"), quick=bool(args.quick),
               out=get("out"))
    common.check_names(cfg["algorithms"], cfg["aggs"])
    if cfg["repeat"] < 1:
        raise SystemExit("--repeat must be >= 1")
    return cfg


def run(args) -> int:
    """Run the experiment; write mta_bulk_evict.csv and mta_bulk_evict.png into --out."""
    cfg = _settings(args)
    out = Path(cfg["out"])
    per_us = cycles_per_ns() * 1000.0
    extra = mta_common.extra_columns(NAME, cfg, ("algorithms", "aggs", "repeat", "evict_log_window",
                                                 "recalc_cap", "quick", "out"))
    window = 2 ** cfg["evict_log_window"]
    sizes = eviction_sizes(window)
    values = common.paper_values(1 << 16)
    rows, series = [], {}
    with common.progress(len(cfg["aggs"]) * len(cfg["algorithms"]), NAME) as bar:
        for agg in cfg["aggs"]:
            spec = common.compiled_spec(agg)
            for algorithm in cfg["algorithms"]:
                bar.set_postfix_str(f"{agg} {algorithm}")
                run_sizes = [k for k in sizes if algorithm != "recalc" or k <= cfg["recalc_cap"]]
                kernel = bulk_evict_kernel(registry.info(algorithm), spec)
                kernel(values, 16, np.array([1, 8], np.int64), np.empty((2, 1), np.int64))  # compile
                cycles = np.empty((len(run_sizes), cfg["repeat"]), np.int64)
                kernel(values, window, np.array(run_sizes, np.int64), cycles)
                for count in sizes:
                    row = dict(algorithm=algorithm, aggregation=agg, window=window, count=count,
                               load_avg_1min=common.load_average(), **extra)
                    if count in run_sizes:
                        us = cycles[run_sizes.index(count)] / per_us
                        row.update(repeats=len(us), median_us=round(float(np.median(us)), 3),
                                   min_us=round(float(us.min()), 3), max_us=round(float(us.max()), 3), note="")
                        series.setdefault(f"{algorithm} {agg}", []).append((count, row["median_us"]))
                    else:
                        row["note"] = f"skipped: above --recalc-cap {cfg['recalc_cap']}"
                    rows.append(row)
                bar.update(1)
    common.write_csv(out / "mta_bulk_evict.csv", rows, COLUMNS)
    mta_common.line_png(series, out / "mta_bulk_evict.png", "items evicted at once (k)",
                        "bulk evict + query [µs], median", f"bulk eviction from a window of n = {window:,}")
    print(f"wrote {out / 'mta_bulk_evict.csv'} and {out / 'mta_bulk_evict.png'}")
    return 0
