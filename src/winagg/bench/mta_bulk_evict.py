"""Experiment ``mta_bulk_evict``: latency of evicting k items at once from a 2^22 window (paper 001).

The window driver's timed bulk build fills the window with n items, then for
each eviction size k (1, 2, 4, ..., n/2, n - 1) times ``bulk_evict(k)`` and the
query after it (the answer after the eviction) with the cycle counter,
``--repeat`` times, re-inserting k items after each so the window is back to n. LMTA and
AMTA drop whole branches (O(log n) for any k); DABA and Recalc evict one by
one (their ``bulk_evict`` is a loop), and Recalc's query recomputes the
window, so Recalc is capped at ``--recalc-cap`` items.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..algos import registry
from ..engine.plans import bulk_plan
from ..engine.kernels import compiled_driver
from ..engine.loops import run as run_plan
from . import common, mta_common
from .cycles import CLOCK, cycles_per_ns

NAME = "mta_bulk_evict"
DESCRIPTION = "latency of one bulk eviction of k = 1 .. n-1 items from an n = 2^22 window (paper 001)"

DEFAULTS = dict(algorithms=("lmta", "amta", "daba", "recalc"), aggs=("sum",), rounds=0, budget=0.0, repeat=5,
                evict_log_window=22, recalc_cap=2 ** 16, out="results/mta_bulk_evict")
QUICK = dict(algorithms=("lmta", "amta"), repeat=2, evict_log_window=10)
COLUMNS = (("algorithm", "aggregation", "window", "count", "repeats", "median_us", "min_us", "max_us", "note")
           + mta_common.MACHINE_COLUMNS)

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


def bulk_evict_cycles(algorithm, spec, values, window: int, counts, repeat: int):
    """``(cycles, checksum)`` of one algorithm x aggregation, through the window driver's timed bulk
    build (:func:`winagg.engine.kernels.compiled_driver` with ``timed`` and ``bulk``).

    The window is filled with ``window`` items, then for each count c one run of the driver
    repeats ``repeat`` times a step that evicts the c oldest and answers, and one that inserts
    c items (untimed), so the window is full again. ``cycles[c, r]`` is the r-th eviction of
    ``counts[c]`` items with the answer after it. Item p's value is ``values[p mod len(values)]``;
    ``checksum`` sums the answers after the evictions.
    """
    driver = compiled_driver(algorithm, spec, clock=CLOCK, bulk=True)
    stream = lambda first, count: values[np.arange(first, first + count) % values.shape[0]]  # noqa: E731
    _, _, state = run_plan(driver, stream(0, window), bulk_plan([0], [window], [False]), driver.init(window + 1))
    cycles = np.empty((len(counts), repeat), np.int64)
    checksum, position = 0.0, window
    for c, count in enumerate(counts):
        # one run for all repetitions: nothing between two evictions but the refill
        plan = bulk_plan(np.tile([count, 0], repeat), np.tile([0, count], repeat), np.tile([True, False], repeat))
        out, parts, state = run_plan(driver, stream(position, count * repeat), plan, state, want_counts=True)
        cycles[c] = parts[4 * repeat::2]  # the evicting steps' answers, which count the evictions too
        checksum += out[::2].sum()
        position += count * repeat
    return cycles, checksum


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
                info = registry.info(algorithm)
                bulk_evict_cycles(info, spec, values, 16, [1, 8], 1)  # compile
                cycles, _ = bulk_evict_cycles(info, spec, values, window, run_sizes, cfg["repeat"])
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
