"""Experiment ``ra_breakeven``: where the Reactive Aggregator (flatfat) overtakes recalc (RA paper, Table 3).

For each aggregation, the smallest window (to the nearest 10) at which
flatfat's throughput beats recalc's, and the smallest at which it is 10x
recalc's, found by bisection over multiples of 10 (the ratio is assumed to
grow with the window, as it does in O(n) vs O(log n)). Each point times
``winagg.rolling(values, window=n, agg=..., algorithm=...)`` over n + rounds
rows (compiled for the numeric aggregations; collect has no compiled form
and runs the same algorithms in Python, with fewer rounds). A search that
does not reach the ratio by ``--max-window`` reports "never (<= max)".
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..windows.rolling import rolling
from . import common, ra_common

NAME = "ra_breakeven"
DESCRIPTION = "smallest window where flatfat beats recalc, and is 10x faster, per aggregation (RA Table 3)"

DEFAULTS = dict(algorithms=("flatfat", "recalc"), aggs=("sum", "max", "mean", "stddev", "argmax", "count", "collect"),
                rounds=200_000, budget=2.0, repeat=3, max_window=20_000, out="results/ra_breakeven")
QUICK = dict(aggs=("sum", "collect"), rounds=2000, repeat=1, max_window=200)

#: Python-mode aggregations get this fraction of the rounds (and windows at most PYTHON_MAX_WINDOW).
PYTHON_SHARE = 200
PYTHON_MAX_WINDOW = 500
COLUMNS = ("aggregation", "mode", "break_even_window", "ten_x_window", "max_window", "rounds",
           "cpu", "cores", "python", "numba", "numpy", "platform", "command")
POINT_COLUMNS = ("aggregation", "window", "flatfat_mitems_s", "recalc_mitems_s", "ratio")


def add_arguments(group) -> None:
    """The options only this experiment takes."""
    group.add_argument("--max-window", type=int, metavar="N",
                       help="largest window searched (default 20000; --quick: 200)")


def _settings(args) -> dict:
    get = lambda name: common.option(args, name, DEFAULTS, QUICK)  # noqa: E731
    cfg = dict(aggs=common.names(get("aggs")), rounds=get("rounds"), budget=get("budget"),
               repeat=getattr(args, "repeat", None) or (QUICK if args.quick else DEFAULTS)["repeat"],
               max_window=getattr(args, "max_window", None) or get("max_window"), quick=bool(args.quick),
               out=get("out"))
    common.check_names(["flatfat", "recalc"], cfg["aggs"])
    return cfg


def _compiled(agg: str) -> bool:
    return common.compiled_spec(agg) is not None


def _throughput(values, n: int, agg: str, algorithm: str, repeat: int) -> float:
    seconds, _ = ra_common.median_seconds(lambda: rolling(values, window=n, agg=agg, algorithm=algorithm), repeat)
    return len(values) / seconds / 1e6


class _Ratios:
    """flatfat / recalc throughput per window, measured once per window."""

    def __init__(self, cfg, agg):
        self.cfg, self.agg, self.points = cfg, agg, {}
        compiled = _compiled(agg)
        self.rounds = cfg["rounds"] if compiled else max(50, cfg["rounds"] // PYTHON_SHARE)
        self.max_window = cfg["max_window"] if compiled else min(cfg["max_window"], PYTHON_MAX_WINDOW)

    def __call__(self, n: int) -> float:
        if n not in self.points:
            rounds = self.rounds
            # recalc folds n items per row: keep its work near the budget
            per_row = 2e-9 * n if _compiled(self.agg) else 3e-7 * n * (n if self.agg == "collect" else 1)
            rounds = int(max(50, min(rounds, self.cfg["budget"] / per_row)))
            values = common.paper_values(n + rounds)
            if not _compiled(self.agg):
                values = values.astype(object)
            fat = _throughput(values, n, self.agg, "flatfat", self.cfg["repeat"])
            rec = _throughput(values, n, self.agg, "recalc", self.cfg["repeat"])
            self.points[n] = (fat, rec, fat / rec)
        return self.points[n][2]


def smallest_window(ratio, target: float, max_window: int):
    """The smallest multiple of 10 in [10, max_window] with ratio(n) >= target (bisection), or None."""
    lo, hi = 1, max_window // 10  # in tens
    if ratio(10 * hi) < target:
        return None
    if ratio(10 * lo) >= target:
        return 10
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ratio(10 * mid) >= target:
            hi = mid
        else:
            lo = mid
    return 10 * hi


def run(args) -> int:
    """Run the experiment; write ra_breakeven.csv, ra_breakeven_points.csv and ra_breakeven.png."""
    cfg = _settings(args)
    out = Path(cfg["out"])
    extra = ra_common.record(NAME, {k: cfg[k] for k in ("aggs", "rounds", "budget", "max_window", "quick", "out")})
    rows, points = [], []
    with common.progress(len(cfg["aggs"]), NAME) as bar:
        for agg in cfg["aggs"]:
            bar.set_postfix_str(agg)
            ratio = _Ratios(cfg, agg)
            even = smallest_window(ratio, 1.0, ratio.max_window)
            ten = smallest_window(ratio, 10.0, ratio.max_window) if even else None
            never = f"never (<= {ratio.max_window})"
            rows.append(dict(aggregation=agg, mode="compiled" if _compiled(agg) else "python",
                             break_even_window=even or never, ten_x_window=ten or never,
                             max_window=ratio.max_window, rounds=ratio.rounds, **extra))
            for n, (fat, rec, r) in sorted(ratio.points.items()):
                points.append(dict(aggregation=agg, window=n, flatfat_mitems_s=round(fat, 3),
                                   recalc_mitems_s=round(rec, 3), ratio=round(r, 3)))
            bar.update(1)
    common.write_csv(out / "ra_breakeven.csv", rows, COLUMNS)
    common.write_csv(out / "ra_breakeven_points.csv", points, POINT_COLUMNS)
    lines = {agg: ([p["window"] for p in points if p["aggregation"] == agg],
                   [p["ratio"] for p in points if p["aggregation"] == agg]) for agg in cfg["aggs"]}
    ra_common.line_png([("flatfat / recalc throughput", "window n", "ratio", lines)], out / "ra_breakeven.png")
    for row in rows:
        print(f"{row['aggregation']:8s} break-even {row['break_even_window']!s:>18}  10x {row['ten_x_window']!s:>18}")
    print(f"wrote {out / 'ra_breakeven.csv'} and {out / 'ra_breakeven.png'}")
    return 0
