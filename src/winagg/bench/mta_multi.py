"""Experiment ``mta_multi``: one window computing count, sum and max at once vs three windows (paper 001).

The paper's multi-dimensional partials: one aggregator whose partial holds
every member's, with one eviction path, against one aggregator per
aggregation over the same stream. Two modes: ``compiled`` times
``winagg.rolling`` over ``--rows`` rows (the 3-member
:class:`winagg.aggregations.Multi` compiles to a tuple partial) against three
``rolling`` calls; ``python`` times the per-item aggregators of
``winagg.make`` (insert, evict when full, query) over ``--rows`` / 64 rows.
Medians of ``--repeat`` runs; the paper reports the one window costing about
half of the three.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from .. import make
from ..windows.rolling import rolling
from ..aggregations.multi import Multi
from . import common, mta_common

NAME = "mta_multi"
DESCRIPTION = "one 3-field window (count, sum, max) vs three windows, compiled and per item (paper 001)"

DEFAULTS = dict(algorithms=("amta", "lmta", "daba_lite"), aggs=("count", "sum", "max"), rounds=0, budget=0.0,
                repeat=5, window=4096, multi_rows=2 ** 22, out="results/mta_multi")
#: ``--quick``: DABA Lite, whose compile of a three-member partial takes seconds where AMTA's takes about 20.
QUICK = dict(algorithms=("daba_lite",), repeat=2, window=64, multi_rows=2 ** 12)
COLUMNS = (("mode", "algorithm", "members", "window", "rows", "repeats", "one_window_s", "three_windows_s",
            "ratio_one_to_three") + mta_common.MACHINE_COLUMNS)
PYTHON_ROWS_DIVISOR = 64


def add_arguments(group) -> None:
    """The options only this experiment takes (it also reads --window and --repeat)."""
    group.add_argument("--multi-rows", type=int, metavar="N",
                       help="rows of the compiled runs; the per-item runs take N/64 (default 2^22; --quick: 2^12)")


def _median_seconds(action, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return float(np.median(times))


def _per_item(aggregator, values, window):
    for value in values:
        if len(aggregator) == window:
            aggregator.evict()
        aggregator.insert(value)
        aggregator.query()


def _settings(args) -> dict:
    get = lambda name: common.option(args, name, DEFAULTS, QUICK)  # noqa: E731
    cfg = dict(algorithms=common.names(get("algorithms")), aggs=common.names(get("aggs")), repeat=get("repeat"),
               window=get("window"), multi_rows=get("multi_rows"), quick=bool(args.quick), out=get("out"))
    common.check_names(cfg["algorithms"], cfg["aggs"])
    if not 2 <= len(cfg["aggs"]) <= 4:
        raise SystemExit("--aggs: 2 to 4 one-number aggregations for the shared window")
    return cfg


def run(args) -> int:
    """Run the experiment; write mta_multi.csv and mta_multi.png into --out."""
    cfg = _settings(args)
    out = Path(cfg["out"])
    extra = mta_common.extra_columns(NAME, cfg, ("algorithms", "aggs", "repeat", "window", "multi_rows",
                                                 "quick", "out"))
    members = cfg["aggs"]
    multi = Multi(**{f"m{i}": agg for i, agg in enumerate(members)})
    values = common.paper_values(cfg["multi_rows"])
    python_values = values[:max(cfg["multi_rows"] // PYTHON_ROWS_DIVISOR, 1)].tolist()
    window, repeat = cfg["window"], cfg["repeat"]
    rows = []
    with common.progress(2 * len(cfg["algorithms"]), NAME) as bar:
        for algorithm in cfg["algorithms"]:
            bar.set_postfix_str(f"compiled {algorithm}")
            for agg in [multi, *members]:  # compile outside the timing
                rolling(values[:64], window, agg, algorithm=algorithm)
            one = _median_seconds(lambda: rolling(values, window, multi, algorithm=algorithm), repeat)
            three = _median_seconds(lambda: [rolling(values, window, agg, algorithm=algorithm) for agg in members],
                                    repeat)
            rows.append(dict(mode="compiled", algorithm=algorithm, rows=len(values), one_window_s=one,
                             three_windows_s=three))
            bar.update(1)
            bar.set_postfix_str(f"python {algorithm}")
            one = _median_seconds(lambda: _per_item(make(algorithm, multi), python_values, window), repeat)
            three = _median_seconds(lambda: [_per_item(make(algorithm, agg), python_values, window)
                                             for agg in members], repeat)
            rows.append(dict(mode="python", algorithm=algorithm, rows=len(python_values), one_window_s=one,
                             three_windows_s=three))
            bar.update(1)
    for row in rows:
        row.update(members=" ".join(members), window=window, repeats=repeat, load_avg_1min=common.load_average(),
                   ratio_one_to_three=round(row["one_window_s"] / row["three_windows_s"], 3),
                   one_window_s=round(row["one_window_s"], 7), three_windows_s=round(row["three_windows_s"], 7),
                   **extra)
    common.write_csv(out / "mta_multi.csv", rows, COLUMNS)
    _png(rows, cfg["algorithms"], out / "mta_multi.png")
    print(f"wrote {out / 'mta_multi.csv'} and {out / 'mta_multi.png'}")
    return 0


def _png(rows: list, algorithms: list, path: Path) -> None:
    from . import plots

    fig, axes = plots._figure(2, width=4.5, height=3.8)
    for ax, mode in zip(axes, ("compiled", "python")):
        picked = [r for r in rows if r["mode"] == mode]
        x = np.arange(len(picked))
        ax.bar(x - 0.2, [r["one_window_s"] for r in picked], 0.4, label="one window, 3 fields", color="C0")
        ax.bar(x + 0.2, [r["three_windows_s"] for r in picked], 0.4, label="three windows", color="C1")
        ax.set_xticks(x, [r["algorithm"] for r in picked])
        ax.set_title(f"{mode}: {picked[0]['rows']:,} rows, n = {picked[0]['window']}" if picked else mode)
        ax.set_ylabel("seconds (median)")
        ax.legend(fontsize="small")
    plots._save(fig, path)
