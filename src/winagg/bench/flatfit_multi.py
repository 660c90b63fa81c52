"""Experiment ``flatfit``: FlatFIT vs FlatFAT vs B-Int, one query and all ranges (FlatFIT paper, Exp. 1 and 2).

* ``single``: one query over the whole window after every tuple, window
  n = 2^0 .. 2^SIZES (default 2^20), through ``winagg.rolling(values,
  window=n, agg="max", algorithm=...)``; slides per second.
* ``multi``: every range 1..n answered after every tuple (the paper's
  max-multi-query), largest range first, with the compiled multi-query
  kernel; the window is filled without queries, then ``slides`` slides are
  timed (each does n queries, so slides are budgeted: about
  ``--multi-work`` combines per point for FlatFAT, at least 3 slides). The
  all-ranges case is quadratic in n per slide for everyone but FlatFIT; it
  stops at 2^MULTI_SIZES (default 2^16, see ``--multi-sizes``).

Ratios FlatFIT / FlatFAT are reported per n, with their mean and maximum
over n (the paper: 1.8x mean, 2.6x max for one query; 10x mean, 17x max
for all ranges, C++ on DEBS 2012 data).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ..algos.fifo.multi_query import descending, multi_query
from ..algos.registry import info
from ..windows.rolling import rolling
from . import common, ra_common

NAME = "flatfit"
DESCRIPTION = "flatfit vs flatfat vs b_int for max: one query and all ranges 1..n per slide (FlatFIT Exp 1, 2)"

ALGORITHMS = ("flatfit", "flatfat", "b_int")
DEFAULTS = dict(algorithms=ALGORITHMS, aggs=("max",), rounds=2_000_000, budget=10.0, repeat=3, ff_sizes=20,
                multi_sizes=16, multi_work=3e7, out="results/flatfit")
QUICK = dict(rounds=3000, repeat=1, ff_sizes=6, multi_sizes=5, multi_work=1e5)

COLUMNS = ("case", "algorithm", "aggregation", "window", "slides", "median_slides_per_s", "median_seconds",
           "ratio_flatfit_over_flatfat", "cpu", "cores", "python", "numba", "numpy", "platform", "command")


def add_arguments(group) -> None:
    """The options only this experiment takes."""
    group.add_argument("--ff-sizes", type=int, metavar="K", help="largest single-query window 2^K (default 20)")
    group.add_argument("--multi-sizes", type=int, metavar="K",
                       help="largest all-ranges window 2^K (default 16: quadratic per slide beyond)")
    group.add_argument("--multi-work", type=float, metavar="C", help="combines budgeted per all-ranges point")


def _settings(args) -> dict:
    get = lambda name: common.option(args, name, DEFAULTS, QUICK)  # noqa: E731
    cfg = dict(algorithms=common.names(get("algorithms")), aggs=common.names(get("aggs")), rounds=get("rounds"),
               repeat=getattr(args, "repeat", None) or (QUICK if args.quick else DEFAULTS)["repeat"],
               ff_sizes=get("ff_sizes"), multi_sizes=get("multi_sizes"), multi_work=get("multi_work"),
               quick=bool(args.quick), out=get("out"))
    common.check_names(cfg["algorithms"], cfg["aggs"])
    for name in cfg["algorithms"]:
        if name not in ALGORITHMS:
            raise SystemExit(f"the flatfit experiment compares {', '.join(ALGORITHMS)}; not {name!r}")
    return cfg


def _single(cfg, agg, algorithm, extra, bar) -> list:
    rows = []
    rolling(common.paper_values(64), window=8, agg=agg, algorithm=algorithm)  # compile or load the kernel
    for k in range(cfg["ff_sizes"] + 1):
        n = 2 ** k
        values = common.paper_values(n + cfg["rounds"])
        median, _ = ra_common.median_seconds(lambda: rolling(values, window=n, agg=agg, algorithm=algorithm),
                                             cfg["repeat"], warm_up=False)
        rows.append(dict(case="single", algorithm=algorithm, aggregation=agg, window=n, slides=len(values),
                         median_slides_per_s=round(len(values) / median, 1), median_seconds=round(median, 4),
                         **extra))
        bar.update(1)
    return rows


def _multi(cfg, agg, algorithm, extra, bar) -> list:
    rows = []
    algo, spec = info(algorithm), common.compiled_spec(agg)
    for k in range(cfg["multi_sizes"] + 1):
        n = 2 ** k
        slides = int(max(3, min(cfg["rounds"], cfg["multi_work"] / (n * (math.log2(n) + 1)))))
        values = common.paper_values(n + slides)
        ranges = descending(range(1, n + 1))
        median, _ = ra_common.median_seconds(lambda: multi_query(algo, spec, values, n, ranges, n), cfg["repeat"])
        rows.append(dict(case="multi", algorithm=algorithm, aggregation=agg, window=n, slides=slides,
                         median_slides_per_s=round(slides / median, 1), median_seconds=round(median, 5), **extra))
        bar.update(1)
    return rows


def add_ratios(rows: list) -> dict:
    """Fill ``ratio_flatfit_over_flatfat`` in the flatfit rows; ``{(case, agg): (mean, max)}`` over n."""
    fat = {(r["case"], r["aggregation"], r["window"]): r["median_slides_per_s"] for r in rows
           if r["algorithm"] == "flatfat"}
    summary: dict = {}
    for r in rows:
        key = (r["case"], r["aggregation"], r["window"])
        if r["algorithm"] == "flatfit" and key in fat:
            r["ratio_flatfit_over_flatfat"] = round(r["median_slides_per_s"] / fat[key], 3)
            summary.setdefault(key[:2], []).append(r["ratio_flatfit_over_flatfat"])
    return {key: (float(np.mean(v)), float(np.max(v))) for key, v in summary.items()}


def run(args) -> int:
    """Run the experiment; write flatfit.csv and flatfit.png."""
    cfg = _settings(args)
    out = Path(cfg["out"])
    extra = ra_common.record(NAME, {k: cfg[k] for k in ("algorithms", "aggs", "rounds", "repeat", "ff_sizes",
                                                          "multi_sizes", "multi_work", "quick", "out")})
    steps = len(cfg["aggs"]) * len(cfg["algorithms"]) * (cfg["ff_sizes"] + cfg["multi_sizes"] + 2)
    rows = []
    with common.progress(steps, NAME) as bar:
        for agg in cfg["aggs"]:
            for algorithm in cfg["algorithms"]:
                bar.set_postfix_str(f"{agg} {algorithm}")
                rows += _single(cfg, agg, algorithm, extra, bar) + _multi(cfg, agg, algorithm, extra, bar)
    summary = add_ratios(rows)
    common.write_csv(out / "flatfit.csv", rows, COLUMNS)
    panels = []
    for agg in cfg["aggs"]:
        for case, title in (("single", "one query"), ("multi", "all ranges 1..n")):
            lines = {}
            for algorithm in cfg["algorithms"]:
                pts = [r for r in rows if r["case"] == case and r["aggregation"] == agg and r["algorithm"] == algorithm]
                lines[algorithm] = ([r["window"] for r in pts], [r["median_slides_per_s"] for r in pts])
            panels.append((f"{agg}: {title}", "window n", "slides / s", lines))
    ra_common.line_png(panels, out / "flatfit.png")
    for (case, agg), (mean, top) in sorted(summary.items()):
        print(f"{agg} {case}: flatfit / flatfat mean {mean:.2f}x, max {top:.2f}x")
    print(f"wrote {out / 'flatfit.csv'} and {out / 'flatfit.png'}")
    return 0
