"""Experiment ``ra_scaling``: the Reactive Aggregator's costs as in the RA paper's Figs. 7, 9 and 10.

* ``per_item``: microseconds per (1,1)-change (evict + insert + query, the
  window driver's loop that ``winagg.rolling(..., algorithm="flatfat")`` runs)
  against window n = 2^3 .. 2^SIZES (default 2^23), in steady state: the
  time of a run over the first n items alone (the fill) is subtracted.
  O(log n) shows as a straight line on the log-x axis.
* ``firing``: a firing of m evicts + m inserts + one query, with the batches
  as FlatFAT's level-by-level updates (``bulk_evict`` / ``bulk_insert``; single
  ones at m = 1), one step of the window driver's bulk build each, for
  m in {1, 4, 64, n/16, n/4, n}: microseconds per firing and per tuple
  (predicted O(1 + log(n/m)) per tuple).
* ``oscillating``: cycles of n inserts then n evicts, one query per
  operation, with capacity fixed at 4n ("fixed") or doubled when full and
  halved below a quarter ("osc.", the driver's resizing build): resizing
  amortizes to O(1) per operation.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..algos import registry
from ..engine.plans import bulk_plan, row_plan
from ..engine.kernels import compiled_driver
from ..engine.loops import run as run_plan
from . import common, ra_common

NAME = "ra_scaling"
DESCRIPTION = "flatfat cost per item vs n to 2^23, per firing vs m, and with oscillating capacity (RA Figs 7, 9, 10)"

DEFAULTS = dict(aggs=("max", "stddev"), rounds=2_000_000, budget=10.0, repeat=3, ra_sizes=23, out="results/ra_scaling")
QUICK = dict(aggs=("max",), rounds=2000, repeat=1, ra_sizes=8)

COLUMNS = ("part", "aggregation", "window", "m", "mode", "rounds", "median_us_per_item", "median_us_per_firing",
           "seconds", "cpu", "cores", "python", "numba", "numpy", "platform", "command")

def add_arguments(group) -> None:
    """The options only this experiment takes."""
    group.add_argument("--ra-sizes", type=int, metavar="K", help="largest window 2^K (default 23; --quick: 8)")


def _driver(agg: str, resize: bool = False):
    """FlatFAT's bulk build of the window driver over ``agg`` (growing and shrinking as it goes
    when ``resize``)."""
    return compiled_driver(registry.info("flatfat"), common.compiled_spec(agg), bulk=True, resize=resize)


def firing_run(agg: str, values, n: int, m: int, firings: int):
    """``run() -> answers``: fill n items in one bulk insert, then ``firings`` steps of m evicts +
    m inserts (FlatFAT's level-by-level ``bulk_evict`` / ``bulk_insert`` when m > 1) + a query,
    through the window driver. The plan is made here, outside the timed ``run``."""
    driver = _driver(agg)
    plan = bulk_plan(np.r_[0, np.full(firings, m)], np.r_[n, np.full(firings, m)], np.r_[False, np.ones(firings, bool)],
                     room=n + m)
    values = values[:n + m * firings]
    return lambda: run_plan(driver, values, plan, driver.init(n + m))[0]


def steady_rounds(agg: str, values, n: int):
    """The answers of ``winagg.rolling(values, n, agg, algorithm="flatfat")``'s loop: the window
    driver's dense row loop (evict once full, insert, query), from an empty window."""
    driver = compiled_driver(registry.info("flatfat"), common.compiled_spec(agg), dense=True)
    plan = row_plan(values.shape[0], n)
    return run_plan(driver, values, plan, driver.init(plan.room + 1))[0]


def oscillating_run(agg: str, values, n: int, cycles: int, fixed: bool):
    """``run() -> answers``: from n/4 items, ``cycles`` cycles of n inserts then n evicts, a query
    after each, through the window driver: with room for 4n items from the start (``fixed``), or
    from room for 16 that doubles when full and halves below a quarter full (its resizing build).
    The plan is made here, outside the timed ``run``."""
    driver = _driver(agg, resize=not fixed)
    one_cycle_inserts = np.r_[np.ones(n, np.int64), np.zeros(n, np.int64)]
    inserts = np.r_[n // 4, np.tile(one_cycle_inserts, cycles)]
    plan = bulk_plan(np.r_[0, np.tile(1 - one_cycle_inserts, cycles)], inserts, np.r_[False, np.ones(2 * n * cycles, bool)],
                     room=4 * n if fixed else 1)
    values = values[:int(inserts.sum())]
    return lambda: run_plan(driver, values, plan, driver.init(4 * n if fixed else 16))[0]


def _settings(args) -> dict:
    get = lambda name: common.option(args, name, DEFAULTS, QUICK)  # noqa: E731
    cfg = dict(aggs=common.names(get("aggs")), rounds=get("rounds"), budget=get("budget"),
               repeat=getattr(args, "repeat", None) or (QUICK if args.quick else DEFAULTS)["repeat"],
               ra_sizes=get("ra_sizes"), quick=bool(args.quick), out=get("out"))
    common.check_names(["flatfat"], cfg["aggs"])
    for agg in cfg["aggs"]:
        if common.compiled_spec(agg) is None:
            raise SystemExit(f"ra_scaling runs compiled aggregations only; {agg!r} has no compiled form")
    return cfg


def _per_item(cfg, agg, extra, bar) -> list:
    rows = []
    for k in range(3, cfg["ra_sizes"] + 1):
        n = 2 ** k
        # at least two passes over the buffer: half the rounds then see a wrapped window,
        # whose query is suffix (+) prefix rather than the root
        rounds = max(cfg["rounds"], 2 * n)
        values = common.paper_values(n + rounds)
        total, _ = ra_common.median_seconds(lambda: steady_rounds(agg, values, n), cfg["repeat"])
        fill, _ = ra_common.median_seconds(lambda: steady_rounds(agg, values[:n], n), cfg["repeat"], warm_up=False)
        per_round = max(total - fill, 1e-12) / rounds
        rows.append(dict(part="per_item", aggregation=agg, window=n, m=1, mode="steady", rounds=rounds,
                         median_us_per_item=round(per_round * 1e6, 5), seconds=round(total, 4), **extra))
        bar.update(1)
    return rows


def _firings(cfg, agg, extra, bar) -> list:
    rows = []
    for k in range(4, min(cfg["ra_sizes"], 20) + 1, 2):
        n = 2 ** k
        for m in sorted({1, 4, 64, n // 16, n // 4, n} - {0}):
            if m > n:
                continue
            firings = max(3, min(cfg["rounds"] // m, cfg["rounds"] // 8))
            values = common.paper_values(n + m * firings + 1)
            median, _ = ra_common.median_seconds(firing_run(agg, values, n, m, firings), cfg["repeat"])
            rows.append(dict(part="firing", aggregation=agg, window=n, m=m, mode="bulk", rounds=firings,
                             median_us_per_item=round(median / (firings * m) * 1e6, 5),
                             median_us_per_firing=round(median / firings * 1e6, 4), seconds=round(median, 4),
                             **extra))
        bar.update(1)
    return rows


def _oscillating(cfg, agg, extra, bar) -> list:
    rows = []
    for k in range(4, min(cfg["ra_sizes"], 20) + 1, 2):
        n = 2 ** k
        cycles = max(1, cfg["rounds"] // (2 * n))
        values = common.paper_values(n // 4 + cycles * n + 1)
        for fixed in (True, False):
            median, _ = ra_common.median_seconds(oscillating_run(agg, values, n, cycles, fixed), cfg["repeat"])
            rows.append(dict(part="oscillating", aggregation=agg, window=n, m=1, mode="fixed" if fixed else "osc.",
                             rounds=2 * n * cycles, median_us_per_item=round(median / (2 * n * cycles) * 1e6, 5),
                             seconds=round(median, 4), **extra))
        bar.update(1)
    return rows


def run(args) -> int:
    """Run the experiment; write ra_scaling.csv and ra_scaling.png."""
    cfg = _settings(args)
    out = Path(cfg["out"])
    extra = ra_common.record(NAME, {k: cfg[k] for k in ("aggs", "rounds", "repeat", "ra_sizes", "quick", "out")})
    steps = len(range(3, cfg["ra_sizes"] + 1)) + 2 * len(range(4, min(cfg["ra_sizes"], 20) + 1, 2))
    rows = []
    with common.progress(steps * len(cfg["aggs"]), NAME) as bar:
        for agg in cfg["aggs"]:
            bar.set_postfix_str(agg)
            rows += _per_item(cfg, agg, extra, bar) + _firings(cfg, agg, extra, bar) + _oscillating(cfg, agg, extra, bar)
    common.write_csv(out / "ra_scaling.csv", rows, COLUMNS)
    plot(rows, cfg["aggs"], out / "ra_scaling.png")
    print(f"wrote {out / 'ra_scaling.csv'} and {out / 'ra_scaling.png'}")
    return 0


def plot(rows: list, aggs, path: Path) -> None:
    """ra_scaling.png from the CSV rows: a row of three panels per aggregation."""
    panels = []
    for agg in aggs:
        pick = lambda part, key, val: [r for r in rows if r["aggregation"] == agg and r["part"] == part  # noqa: E731
                                       and r[key] == val]
        per_item = [r for r in rows if r["aggregation"] == agg and r["part"] == "per_item"]
        panels.append((f"{agg}: (1,1)-change", "window n", "µs per item",
                       {"flatfat": ([r["window"] for r in per_item], [r["median_us_per_item"] for r in per_item])}))
        firing = [r for r in rows if r["aggregation"] == agg and r["part"] == "firing"]
        labels = {}
        for r in firing:
            n, m = r["window"], r["m"]
            # a fixed m wins where it equals n/16 or n/4 (n = 16, 64, 256)
            label = {n // 16: "m=n/16", n // 4: "m=n/4", n: "m=n", 1: "m=1", 4: "m=4", 64: "m=64"}[m]
            labels.setdefault(label, ([], []))
            labels[label][0].append(n)
            labels[label][1].append(r["median_us_per_item"])
        panels.append((f"{agg}: firings of m changes", "window n", "µs per tuple", labels))
        osc = {mode: ([r["window"] for r in pick("oscillating", "mode", mode)],
                      [r["median_us_per_item"] for r in pick("oscillating", "mode", mode)]) for mode in ("fixed", "osc.")}
        panels.append((f"{agg}: capacity fixed vs oscillating", "window n", "µs per operation", osc))
    ra_common.line_png(panels, path, ylog=False, columns=3)
