"""Experiment ``throughput``: million items/s against window size, as the papers' Fig. 10.

For each algorithm x aggregation and each window size n = 1, 2, 4, ..., 2^SIZES,
``winagg.rolling(values, window=n, agg=..., algorithm=...)`` runs over
``n + rounds`` rows of the papers' stream 1 + (i mod 101): the first n rows
fill the window, every later row is one round of evict + insert + query. The
timed call is the public compiled path, so the figure is what a user gets
(including the fill, and the allocation of the result). Each point is run
``--repeat`` times after a warm-up call that compiles or loads the kernel.

Recalc folds the whole window on every query, so its work grows as n^2 for
the fill plus n per round: its rounds are capped at max(1000, 2e8 / n), and
any recalc run predicted (from the previous size) to exceed ``--budget``
seconds has its rounds cut, or is skipped, with a note in the CSV saying so.
The O(1) algorithms always run every size in full.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import numpy as np

from ..algos import registry
from ..core.ops import power_of_two_at_least
from ..windows.rolling import rolling
from . import common, plots

NAME = "throughput"
DESCRIPTION = "million items/s vs window size n = 1 .. 2^SIZES, through winagg.rolling (Fig. 10)"

DEFAULTS = dict(algorithms=common.FIFO_ALGORITHMS, aggs=("sum", "max", "geomean", "bloom"),
                rounds=4_000_000, bloom_rounds=None, repeat=3, sizes=22, budget=10.0,
                out="results/throughput")
#: ``--quick``: the smallest and largest of two sizes, two algorithms, two aggregations.
QUICK = dict(algorithms=("two_stacks", "daba_lite"), aggs=("sum", "max"), rounds=3000, repeat=2, sizes=5)

#: Bloom costs ~100x a sum per combine; it gets this fraction of the rounds by default.
BLOOM_SHARE = 8
#: Recalc's rounds are capped so that rounds x n stays near this many combines.
RECALC_WORK = 2e8
#: Algorithms whose query folds the window: the only ones the time budget cuts or skips
#: (the others do O(1) work per row, so every window size runs in full).
FOLDING = ("recalc",)
#: No point runs fewer rounds than this (else it would time mostly the fill and the call).
MIN_ROUNDS = 1000
#: A point is skipped when its buffers would need more than this share of the available memory.
MEMORY_SHARE = 0.6

COLUMNS = ("algorithm", "aggregation", "window", "log2_window", "rounds", "rows", "repeats",
           "median_mitems_s", "min_mitems_s", "max_mitems_s", "median_seconds", "note",
           "cpu", "cores", "python", "numba", "numpy", "platform", "load_avg_1min", "command")


def add_arguments(group) -> None:
    """The options only this experiment takes."""
    group.add_argument("--sizes", type=int, metavar="K",
                       help="largest window is 2^K (default 22; --quick: 5, and only n = 1 and 2^K)")
    group.add_argument("--repeat", type=int, help="runs per point; median, min and max are kept (default 3)")
    group.add_argument("--bloom-rounds", type=int, metavar="N",
                       help=f"rounds for bloom (default: --rounds / {BLOOM_SHARE})")


def _settings(args) -> dict:
    get = lambda name: common.option(args, name, DEFAULTS, QUICK)  # noqa: E731
    rounds = get("rounds")
    cfg = dict(sizes=get("sizes"), algorithms=common.names(get("algorithms")), aggs=common.names(get("aggs")),
               rounds=rounds, bloom_rounds=get("bloom_rounds") or max(MIN_ROUNDS, rounds // BLOOM_SHARE),
               repeat=get("repeat"), budget=get("budget"), quick=bool(args.quick), out=get("out"))
    common.check_names(cfg["algorithms"], cfg["aggs"])
    if cfg["sizes"] < 0 or cfg["repeat"] < 1 or cfg["rounds"] < 1:
        raise SystemExit("--sizes must be >= 0, --repeat and --rounds >= 1")
    return cfg


def window_sizes(cfg: dict) -> list:
    """The window sizes of a run: powers of two up to 2^sizes (only the two ends with --quick)."""
    exponents = sorted({0, cfg["sizes"]}) if cfg["quick"] else range(cfg["sizes"] + 1)
    return [2 ** k for k in exponents]


def base_rounds(cfg: dict, algorithm: str, agg: str, n: int) -> int:
    """Rounds before the time budget: fewer for bloom, and n-dependent for recalc."""
    rounds = cfg["bloom_rounds"] if agg == "bloom" else cfg["rounds"]
    if algorithm == "recalc":
        rounds = min(rounds, max(MIN_ROUNDS, int(RECALC_WORK // n)))
    return rounds


def work(algorithm: str, n: int, rounds: int) -> float:
    """Work of one run up to a constant factor: rows, or for recalc the combines of its folds."""
    if algorithm == "recalc":  # row i folds min(i + 1, n) items
        return n * (n + 1) / 2 + rounds * n
    return n + rounds


def fit_budget(algorithm: str, n: int, rounds: int, seconds_per_work, budget: float):
    """``(rounds, note)`` for a run predicted by ``seconds_per_work`` to fit ``budget`` seconds.

    ``rounds`` is 0 when even :data:`MIN_ROUNDS` rounds would not fit (skip the point).
    Only the algorithms in :data:`FOLDING` are ever cut.
    """
    if seconds_per_work is None or algorithm not in FOLDING:
        return rounds, ""
    predicted = work(algorithm, n, rounds) * seconds_per_work
    if predicted <= budget:
        return rounds, ""
    fill = work(algorithm, n, 0)
    per_round = work(algorithm, n, 1) - fill
    fitted = int((budget / seconds_per_work - fill) / per_round)
    if fitted < MIN_ROUNDS:
        return 0, f"skipped: predicted {predicted:.0f} s per run > budget {budget:g} s"
    return fitted, f"rounds cut from {rounds} to {fitted} to fit budget {budget:g} s"


def space_factor(space: str) -> int:
    """The number of n-slot buffers an algorithm's ``space`` names: 2 for "2n" or "about 2n ...", 1 for "n + 1"."""
    match = re.search(r"(\d*)\s*n\b", space)
    return int(match.group(1) or 1) if match else 1


def memory_note(algorithm: str, agg: str, n: int, rows: int) -> str:
    """A skip note when the run's buffers would not fit comfortably in memory, else ''."""
    space = registry.info(algorithm).space  # "2n", "n + 1", "about 2n partials", ...
    buffers = space_factor(space)
    need = power_of_two_at_least(n + 1) * common.partial_bytes(agg) * buffers + 16 * rows  # + values, result
    available = common.available_memory()
    if available and need > MEMORY_SHARE * available:
        return f"skipped: needs ~{need / 2**30:.1f} GiB, {available / 2**30:.1f} GiB available"
    return ""


def _warm_up(values, agg: str, algorithm: str) -> None:
    # Compiles the kernel (or loads it from numba's cache) outside the timed runs.
    rolling(values[:64], window=8, agg=agg, algorithm=algorithm)


def time_runs(values, n: int, agg: str, algorithm: str, repeat: int) -> list:
    """Seconds of each of ``repeat`` calls of ``winagg.rolling`` over ``values`` with window n."""
    seconds = []
    for _ in range(repeat):
        start = time.perf_counter()
        rolling(values, window=n, agg=agg, algorithm=algorithm)
        seconds.append(time.perf_counter() - start)
    return seconds


def _row(algorithm, agg, n, rounds, repeat, note, seconds=None) -> dict:
    row = dict(algorithm=algorithm, aggregation=agg, window=n, log2_window=int(np.log2(n)), rounds=rounds,
               rows=n + rounds if rounds else "", repeats=repeat if seconds else 0, note=note,
               load_avg_1min=common.load_average())
    if seconds:
        rates = sorted((n + rounds) / s / 1e6 for s in seconds)
        row.update(median_mitems_s=round(float(np.median(rates)), 3), min_mitems_s=round(rates[0], 3),
                   max_mitems_s=round(rates[-1], 3), median_seconds=float(f"{np.median(seconds):.4g}"))
    return row


def _run_series(cfg, values, algorithm, agg, bar) -> list:
    """Every window size of one algorithm x aggregation, smallest first (so the budget can predict)."""
    rows, seconds_per_work = [], None
    sizes = window_sizes(cfg)
    reason = common.not_applicable(algorithm, agg)
    if reason:
        bar.update(len(sizes))
        return [_row(algorithm, agg, n, 0, 0, reason) for n in sizes]
    _warm_up(values, agg, algorithm)
    for n in sizes:
        bar.set_postfix_str(f"{agg} {algorithm} n=2^{int(np.log2(n))}")
        rounds, note = fit_budget(algorithm, n, base_rounds(cfg, algorithm, agg, n), seconds_per_work,
                                  cfg["budget"])
        if rounds:
            note = memory_note(algorithm, agg, n, n + rounds) or note
        if rounds and not note.startswith("skipped"):
            seconds = time_runs(values[:n + rounds], n, agg, algorithm, cfg["repeat"])
            seconds_per_work = min(seconds) / work(algorithm, n, rounds)
            rows.append(_row(algorithm, agg, n, rounds, cfg["repeat"], note, seconds))
        else:
            rows.append(_row(algorithm, agg, n, 0, 0, note))
        bar.update(1)
    return rows


def run(args) -> int:
    """Run the experiment; write throughput.csv and throughput.png into --out."""
    cfg = _settings(args)
    out = Path(cfg["out"])
    sizes = window_sizes(cfg)
    values = common.paper_values(sizes[-1] + max(cfg["rounds"], cfg["bloom_rounds"]))
    extra = dict(common.machine_info(), command=common.command_line(NAME, {
        k: cfg[k] for k in ("sizes", "algorithms", "aggs", "rounds", "bloom_rounds", "repeat", "budget", "quick",
                            "out")}))
    rows = []
    with common.progress(len(cfg["algorithms"]) * len(cfg["aggs"]) * len(sizes), NAME) as bar:
        for agg in cfg["aggs"]:
            for algorithm in cfg["algorithms"]:
                rows.extend(dict(r, **extra) for r in _run_series(cfg, values, algorithm, agg, bar))
    common.write_csv(out / "throughput.csv", rows, COLUMNS)
    plots.throughput_png(rows, cfg["aggs"], cfg["algorithms"], out / "throughput.png")
    print(f"wrote {out / 'throughput.csv'} and {out / 'throughput.png'}")
    return 0
