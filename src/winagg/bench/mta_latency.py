"""Experiment ``mta_latency``: per-update latency at constant window size, n = 2^4 .. 2^22 (paper 001).

Each round evicts the oldest item, inserts one and queries, in the window
driver's timed loop (that of the ``latency`` experiment, with the same
per-round minimum over ``--trials`` runs). AMTA's
median stays flat as n grows (amortized O(1)), LMTA's grows with log n.
"""

from __future__ import annotations

from pathlib import Path

from . import common, mta_common
from .cycles import cycles_per_ns
from .latency import measure, summarize

NAME = "mta_latency"
DESCRIPTION = "per-update latency (median, p99.9, max) at window n = 2^4 .. 2^22 for the MTAs (paper 001)"

DEFAULTS = dict(algorithms=("amta", "lmta", "daba", "two_stacks"), aggs=("sum",), rounds=200_000, trials=3,
                budget=30.0, latency_log_max=22, out="results/mta_latency")
QUICK = dict(algorithms=("amta", "lmta"), rounds=2000, trials=1, latency_log_max=8)
COLUMNS = (("algorithm", "aggregation", "window", "rounds", "trials")
           + tuple(f"{s}_ns" for s in ("min", "median", "p99", "p99_9", "p99_999", "max"))
           + ("note",) + mta_common.MACHINE_COLUMNS)


def add_arguments(group) -> None:
    """The options only this experiment takes (it also reads --trials of ``latency``)."""
    group.add_argument("--latency-log-max", type=int, metavar="K",
                       help="largest window 2^K, from 2^4 in steps of 2^3 (default 22; --quick: 8)")


def window_sizes(log_max: int) -> list:
    """2^4, 2^7, ... up to 2^log_max (always included)."""
    sizes = [2 ** k for k in range(4, log_max + 1, 3)]
    if not sizes or sizes[-1] != 2 ** log_max:
        sizes.append(2 ** log_max)
    return sizes


def _settings(args) -> dict:
    get = lambda name: common.option(args, name, DEFAULTS, QUICK)  # noqa: E731
    cfg = dict(algorithms=common.names(get("algorithms")), aggs=common.names(get("aggs")), rounds=get("rounds"),
               trials=get("trials"), budget=get("budget"), latency_log_max=get("latency_log_max"),
               quick=bool(args.quick), out=get("out"))
    common.check_names(cfg["algorithms"], cfg["aggs"])
    return cfg


def run(args) -> int:
    """Run the experiment; write mta_latency.csv and mta_latency.png into --out."""
    cfg = _settings(args)
    out = Path(cfg["out"])
    per_ns = cycles_per_ns()
    extra = mta_common.extra_columns(NAME, cfg, ("algorithms", "aggs", "rounds", "trials", "budget",
                                                 "latency_log_max", "quick", "out"))
    sizes = window_sizes(cfg["latency_log_max"])
    rows, series = [], {}
    with common.progress(len(cfg["aggs"]) * len(cfg["algorithms"]) * len(sizes), NAME) as bar:
        for agg in cfg["aggs"]:
            for algorithm in cfg["algorithms"]:
                for window in sizes:
                    bar.set_postfix_str(f"{agg} {algorithm} n={window}")
                    trials, note = measure(algorithm, agg, window, cfg["rounds"], cfg["trials"], per_ns,
                                           cfg["budget"])
                    cycles = trials.min(axis=0)  # per round: the least disturbed trial
                    row = dict(algorithm=algorithm, aggregation=agg, window=window, rounds=len(cycles),
                               trials=len(trials), note=note, load_avg_1min=common.load_average(), **extra)
                    row.update({k: v for k, v in summarize(cycles, per_ns).items() if k.endswith("_ns")})
                    rows.append(row)
                    for stat in ("median", "max"):
                        series.setdefault(f"{algorithm} {agg} {stat}", []).append((window, row[f"{stat}_ns"]))
                    bar.update(1)
                    del trials, cycles
    common.write_csv(out / "mta_latency.csv", rows, COLUMNS)
    mta_common.line_png(series, out / "mta_latency.png", "window size n", "latency per round [ns]",
                        "evict + insert + query at constant n (per-round minimum of trials)")
    print(f"wrote {out / 'mta_latency.csv'} and {out / 'mta_latency.png'}")
    return 0

