"""Experiment ``reference``: each in-order algorithm against the C++ reference, side by side, in one run.

The reference is IBM's sliding-window-aggregators (the papers' artifact,
:mod:`winagg.bench.reference_build`): its ``benchmark_driver`` fills a window of
n items, then times rounds of evict + insert + query over the values
``1 + (i mod 101)``. winagg runs the same rows through
``winagg.rolling(values, window=n, agg=..., algorithm=...)``; the reference times
only its rounds, so winagg's time is fill-corrected: time(rolling over n + rounds
rows) - time(rolling over the first n rows). Each cell (window, algorithm,
aggregation) runs the reference and winagg alternately ``--repeat`` times and
keeps the medians; its ratio is winagg's rate over the reference's (above 1:
winagg is faster). Every answer of winagg's first timed call is checked against
an independent computation (:func:`check`); a cell that disagrees says so in its
``check`` column.

Rounds per cell are the papers' sizes times ``--scale`` (see :func:`cell_rounds`),
or ``--rounds`` for every cell. Recalc runs only up to n = 4096 and not on
Bloom (its query folds the whole window).
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Optional

import numpy as np

from ..windows.rolling import rolling
from . import common, mta_common
from . import reference_build as build

NAME = "reference"
DESCRIPTION = "each in-order algorithm vs the papers' C++ implementation (--reference-src), same run"

#: winagg's algorithm -> the reference driver's name for it.
REFERENCE_NAMES = {"two_stacks_lite": "two_stacks_lite", "daba_lite": "daba_lite", "daba": "daba",
                   "two_stacks": "two_stacks", "flatfit": "flatfit", "flatfat": "reactive",
                   "fiba": "bfinger4", "recalc": "recalc"}
DEFAULTS = dict(algorithms=tuple(REFERENCE_NAMES), aggs=("sum", "max", "geomean", "bloom"),
                windows=(4096, 1 << 22), scale=1.0, rounds=None, repeat=3, reference_src=None,
                out="results/reference")
QUICK = dict(windows=(64,), algorithms=("two_stacks_lite",), aggs=("sum",), scale=0.001, repeat=1)

#: The stream of the reference's driver repeats with this period.
PERIOD = 101
#: How far a Bloom filter's distinct-count estimate may be from the true count (4096 bits, 4 hashes,
#: at most 101 distinct items: the estimate's error is far below this).
BLOOM_TOLERANCE = 0.05
#: Recalc folds its window on every query: it runs only up to this window.
RECALC_LARGEST = 4096

COLUMNS = ("window", "algorithm", "reference_name", "aggregation", "rounds", "repeats", "reference_mrounds_s",
           "winagg_mrounds_s", "ratio", "check", "note") + mta_common.MACHINE_COLUMNS


def add_arguments(group) -> None:
    """The options only this experiment takes (it also reads --repeat of ``throughput``)."""
    group.add_argument("--reference-src", metavar="PATH",
                       help=f"the cpp/ folder of a checkout of {build.SOURCE_URL} (its Makefile and src/); "
                            f"its drivers are built once under ${build.CACHE_VARIABLE}, by default "
                            "~/.cache/winagg-reference")
    group.add_argument("--windows", type=int, nargs="+", metavar="N",
                       help="window sizes n in items (default 4096 4194304)")
    group.add_argument("--scale", type=float, metavar="X",
                       help="multiply each cell's rounds (default 1.0: 30,000,000 rounds of sum and max)")


def cell_rounds(algorithm: str, agg: str, window: int, scale: float) -> Optional[int]:
    """Timed rounds of one cell: enough for each side's timed part to last a fraction of a second
    (costlier rounds get fewer), or None where the cell is not run."""
    if algorithm == "recalc":
        base = None if window > RECALC_LARGEST or agg == "bloom" else 300_000
    elif algorithm == "flatfat":
        base = 200_000 if agg == "bloom" else 3_000_000
    elif agg == "bloom":
        base = 1_000_000 if algorithm == "fiba" else 2_000_000
    else:
        base = 10_000_000 if agg == "geomean" else 30_000_000
    return None if base is None else max(1, int(base * scale))


def stream(count: int) -> np.ndarray:
    """The reference driver's items: 1 + (i mod 101), as int64 (the driver's are integers)."""
    return 1 + np.arange(count, dtype=np.int64) % PERIOD


def winagg_round_seconds(values: np.ndarray, window: int, agg: str, algorithm: str):
    """``(seconds, answers)``: seconds of winagg's rounds after the fill of ``window`` items
    (a call over every row less a call over the fill), and the answers of the call over every row."""
    start = time.perf_counter()
    rolling(values[:window], window=window, agg=agg, algorithm=algorithm)
    fill = time.perf_counter() - start
    start = time.perf_counter()
    answers = rolling(values, window=window, agg=agg, algorithm=algorithm)
    return time.perf_counter() - start - fill, answers


def expected(values: np.ndarray, window: int, agg: str) -> np.ndarray:
    """The answer of every row's window (the ``window`` rows ending there, fewer at the start),
    from running totals (numpy) and pandas' rolling max; Bloom's is the true distinct count."""
    import pandas as pd

    if agg == "max":
        return pd.Series(values).rolling(window, min_periods=1).max().to_numpy()
    rows = np.minimum(np.arange(1, values.shape[0] + 1), window)
    if agg == "bloom":  # every run of PERIOD consecutive items holds each value once
        return np.minimum(rows, PERIOD).astype(np.float64)
    summed = values if agg == "sum" else np.log(values.astype(np.float64))
    totals = np.concatenate(([0], np.cumsum(summed)))
    sums = totals[1:] - totals[np.arange(1, values.shape[0] + 1) - rows]
    return sums if agg == "sum" else np.exp(sums / rows)


def check(values: np.ndarray, window: int, agg: str, answers: np.ndarray) -> str:
    """``"ok"`` when every answer matches :func:`expected`, else where the first one differs."""
    want = expected(values, window, agg)
    tolerance = dict(rtol=BLOOM_TOLERANCE) if agg == "bloom" else dict(rtol=1e-9)
    wrong = np.flatnonzero(~np.isclose(np.asarray(answers, np.float64), want, **tolerance))
    if wrong.size:
        row = int(wrong[0])
        return f"MISMATCH at row {row} of {wrong.size} rows: {answers[row]!r} != {want[row]!r}"
    return "ok"


def measure(binary: Path, window: int, algorithm: str, agg: str, rounds: int, repeat: int) -> dict:
    """One cell: the reference and winagg alternately ``repeat`` times; rates in M rounds/s."""
    values = stream(window + rounds)
    rolling(values[: window + min(rounds, 1000)], window=window, agg=agg, algorithm=algorithm)  # compile, warm
    reference_rates, winagg_rates, verdict = [], [], None
    for _ in range(repeat):
        seconds = build.core_seconds(binary, [REFERENCE_NAMES[algorithm], agg, window, window + rounds])
        reference_rates.append(rounds / seconds / 1e6)
        seconds, answers = winagg_round_seconds(values, window, agg, algorithm)
        winagg_rates.append(rounds / max(seconds, 1e-9) / 1e6)
        verdict = verdict or check(values, window, agg, answers)
        del answers  # the next call's answers go where these were, as in every repetition
    reference, ours = statistics.median(reference_rates), statistics.median(winagg_rates)
    return dict(repeats=repeat, reference_mrounds_s=round(reference, 3), winagg_mrounds_s=round(ours, 3),
                ratio=round(ours / reference, 3), check=verdict)


def _settings(args) -> dict:
    get = lambda name: common.option(args, name, DEFAULTS, QUICK)  # noqa: E731
    cfg = dict(reference_src=get("reference_src"), windows=list(get("windows")),
               algorithms=common.names(get("algorithms")), aggs=common.names(get("aggs")), scale=get("scale"),
               rounds=get("rounds"), repeat=get("repeat"), quick=bool(args.quick), out=get("out"))
    common.check_names(cfg["algorithms"], cfg["aggs"])
    unpaired = [name for name in cfg["algorithms"] if name not in REFERENCE_NAMES]
    if unpaired:
        raise SystemExit(f"--algorithms: the reference's driver has no {', '.join(unpaired)}; "
                         f"choose from {' '.join(REFERENCE_NAMES)}")
    if min(cfg["windows"]) < 1 or cfg["repeat"] < 1 or cfg["scale"] <= 0 or (cfg["rounds"] or 1) < 1:
        raise SystemExit("--windows, --repeat and --rounds must be >= 1, --scale above 0")
    return cfg


def run(args) -> int:
    """Run the experiment; write reference.csv into --out."""
    cfg = _settings(args)
    binary = build.driver_or_report(cfg["reference_src"], "benchmark_driver", NAME)
    if binary is None:
        return 2
    given = ("reference_src", "windows", "algorithms", "aggs", "scale", "rounds", "repeat", "quick", "out")
    extra = mta_common.extra_columns(NAME, cfg, [key for key in given if cfg[key] is not None])
    path = Path(cfg["out"]) / "reference.csv"
    cells = [(n, algorithm, agg) for n in cfg["windows"] for algorithm in cfg["algorithms"] for agg in cfg["aggs"]]
    rows = []
    with common.progress(len(cells), NAME) as bar:
        for n, algorithm, agg in cells:
            bar.set_postfix_str(f"{n} {algorithm} {agg}")
            rounds = cfg["rounds"] or cell_rounds(algorithm, agg, n, cfg["scale"])
            row = dict(window=n, algorithm=algorithm, reference_name=REFERENCE_NAMES[algorithm], aggregation=agg,
                       rounds=rounds, note="", **extra)
            if rounds is None:
                row["note"] = f"not run: recalc only up to n = {RECALC_LARGEST} and not on bloom"
            else:
                try:
                    row.update(measure(binary, n, algorithm, agg, rounds, cfg["repeat"]))
                except build.ReferenceError as error:  # shown in the row, never hidden
                    row["note"] = str(error)
            row["load_avg_1min"] = common.load_average()
            rows.append(row)
            common.write_csv(path, rows, COLUMNS)  # after every cell: a long run keeps what it measured
            bar.update(1)
    print(f"wrote {path}")
    return 0
