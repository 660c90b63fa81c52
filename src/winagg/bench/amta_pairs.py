"""Experiment ``amta_pairs``: amta against two_stacks in interleaved pairs of winagg.rolling calls.

Both algorithms (``--algorithms A B``: A against B, default amta two_stacks)
run ``winagg.rolling(values, window=n, agg=..., algorithm=...)`` over the same
``--rounds`` + n rows of the papers' stream 1 + (i mod 101): after the first n
rows fill the window, every row is one round of evict + insert + query. The
two calls alternate ``--repeat`` times in one process, so each pair sees the
same moments of a shared machine, and each call is timed in CPU time. Per
window and aggregation the experiment keeps each algorithm's median rate and
the median, least and greatest of the per-pair ratios A / B (above 1: A is
faster).
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from ..windows.rolling import rolling
from . import common, mta_common

NAME = "amta_pairs"
DESCRIPTION = "amta vs two_stacks: interleaved pairs of winagg.rolling calls, CPU time, ratio per pair"

DEFAULTS = dict(algorithms=("amta", "two_stacks"), aggs=("sum", "max", "geomean"), windows=(4096,),
                rounds=4_000_000, repeat=9, out="results/amta_pairs")
QUICK = dict(aggs=("sum",), windows=(64,), rounds=20_000, repeat=2)

COLUMNS = ("window", "aggregation", "first", "second", "rows", "pairs", "first_mrows_s", "second_mrows_s",
           "ratio_median", "ratio_min", "ratio_max") + mta_common.MACHINE_COLUMNS


def add_arguments(group) -> None:
    """No options of its own: it reads --windows of ``reference`` and --repeat (the pairs) of ``throughput``."""


def cpu_rate(values, window: int, agg: str, algorithm: str) -> float:
    """M rows/s of one ``winagg.rolling`` call, in this process's CPU time."""
    start = time.process_time()
    rolling(values, window=window, agg=agg, algorithm=algorithm)
    return values.shape[0] / max(time.process_time() - start, 1e-9) / 1e6


def measure(values, window: int, agg: str, algorithms, pairs: int) -> dict:
    """Interleaved pairs of calls: the median rates and the per-pair ratios first / second."""
    for algorithm in algorithms:  # compile outside the timing
        rolling(values[:10_000], window=window, agg=agg, algorithm=algorithm)
    rates = {algorithm: [] for algorithm in algorithms}
    for _ in range(pairs):
        for algorithm in algorithms:
            rates[algorithm].append(cpu_rate(values, window, agg, algorithm))
    first, second = (rates[algorithm] for algorithm in algorithms)
    ratios = [a / b for a, b in zip(first, second)]
    return dict(first_mrows_s=round(statistics.median(first), 2), second_mrows_s=round(statistics.median(second), 2),
                ratio_median=round(statistics.median(ratios), 3), ratio_min=round(min(ratios), 3),
                ratio_max=round(max(ratios), 3))


def _settings(args) -> dict:
    get = lambda name: common.option(args, name, DEFAULTS, QUICK)  # noqa: E731
    cfg = dict(algorithms=common.names(get("algorithms")), aggs=common.names(get("aggs")),
               windows=list(get("windows")), rounds=get("rounds"), repeat=get("repeat"), quick=bool(args.quick),
               out=get("out"))
    common.check_names(cfg["algorithms"], cfg["aggs"])
    if len(cfg["algorithms"]) != 2:
        raise SystemExit(f"--algorithms: give two algorithms, the first against the second; got {cfg['algorithms']}")
    if cfg["repeat"] < 1 or cfg["rounds"] < 1 or min(cfg["windows"]) < 1:
        raise SystemExit("--repeat, --rounds and --windows must be >= 1")
    return cfg


def run(args) -> int:
    """Run the experiment; write amta_pairs.csv into --out."""
    cfg = _settings(args)
    extra = mta_common.extra_columns(NAME, cfg, ("algorithms", "aggs", "windows", "rounds", "repeat", "quick", "out"))
    path = Path(cfg["out"]) / "amta_pairs.csv"
    first, second = cfg["algorithms"]
    rows = []
    with common.progress(len(cfg["windows"]) * len(cfg["aggs"]), NAME) as bar:
        for window in cfg["windows"]:
            values = common.paper_values(cfg["rounds"] + window)
            for agg in cfg["aggs"]:
                bar.set_postfix_str(f"{window} {agg}")
                row = dict(window=window, aggregation=agg, first=first, second=second, rows=values.shape[0],
                           pairs=cfg["repeat"], **extra)
                row.update(measure(values, window, agg, cfg["algorithms"], cfg["repeat"]))
                row["load_avg_1min"] = common.load_average()
                rows.append(row)
                common.write_csv(path, rows, COLUMNS)
                bar.update(1)
    print(f"wrote {path}")
    return 0
