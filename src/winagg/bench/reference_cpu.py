"""Experiment ``reference_cpu``: winagg against the C++ reference in CPU time per round (a load-robust probe).

``reference`` compares wall-clock rates, which on a shared machine swing with
whatever else runs. This probe times both sides in CPU time instead and cancels
every fixed cost (process start, the fill, compilation) by differencing two run
lengths: one round costs (cpu(n + R2 rounds) - cpu(n + R1 rounds)) / (R2 - R1),
R2 = ``--rounds`` and R1 = ``--cpu-short-rounds`` (default R2 / 10), for the
reference's ``benchmark_driver`` from the child processes' resource usage and for
``winagg.rolling`` from this process's CPU clock. The sides alternate
``--repeat`` times; the ratio is the reference's median ns a round over winagg's
(above 1: winagg is faster), and the ratio of the minima is kept too
(contention only ever adds CPU time). At large windows FlatFIT compresses a
whole window once per window's worth of rounds: make R2 - R1 a multiple of the
window there.
"""

from __future__ import annotations

import resource
import statistics
import subprocess
import time
from pathlib import Path

from ..windows.rolling import rolling
from . import common, mta_common
from . import reference_build as build
from .reference import REFERENCE_NAMES, stream

NAME = "reference_cpu"
DESCRIPTION = "in-order algorithms vs the papers' C++ implementation in CPU time a round (--reference-src)"

DEFAULTS = dict(algorithms=("daba_lite", "daba"), aggs=("sum", "max", "geomean"), windows=(4096,),
                rounds=3_000_000, cpu_short_rounds=None, repeat=5, reference_src=None, out="results/reference_cpu")
QUICK = dict(algorithms=("two_stacks_lite",), aggs=("sum",), windows=(64,), rounds=20_000, repeat=1)

COLUMNS = ("window", "algorithm", "reference_name", "aggregation", "short_rounds", "rounds", "repeats",
           "reference_ns_round", "winagg_ns_round", "ratio", "ratio_of_minima") + mta_common.MACHINE_COLUMNS


def add_arguments(group) -> None:
    """The options only this experiment takes (it also reads --reference-src and --windows of
    ``reference`` and --repeat of ``throughput``)."""
    group.add_argument("--cpu-short-rounds", type=int, metavar="R1",
                       help="rounds of the shorter run (default --rounds / 10)")


def child_cpu_seconds(arguments) -> float:
    """CPU seconds (user + system) of one run of a child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(list(map(str, arguments)), check=True, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def winagg_cpu_seconds(values, window: int, agg: str, algorithm: str) -> float:
    """CPU seconds of this process for one ``winagg.rolling`` call."""
    start = time.process_time()
    rolling(values, window=window, agg=agg, algorithm=algorithm)
    return time.process_time() - start


def measure(binary: Path, window: int, algorithm: str, agg: str, short: int, rounds: int, repeat: int) -> dict:
    """One cell: ns a round on each side, from runs of ``short`` and ``rounds`` rounds, alternately."""
    values = stream(window + rounds)
    rolling(values[: window + 1000], window=window, agg=agg, algorithm=algorithm)  # compile, warm
    command = [binary, REFERENCE_NAMES[algorithm], agg, window]
    theirs, ours = [], []
    for _ in range(repeat):
        theirs.append((child_cpu_seconds(command + [window + rounds])
                       - child_cpu_seconds(command + [window + short])) / (rounds - short))
        ours.append((winagg_cpu_seconds(values, window, agg, algorithm)
                     - winagg_cpu_seconds(values[: window + short], window, agg, algorithm)) / (rounds - short))
    reference, winagg = statistics.median(theirs), statistics.median(ours)
    return dict(repeats=repeat, reference_ns_round=round(reference * 1e9, 2), winagg_ns_round=round(winagg * 1e9, 2),
                ratio=_ratio(reference, winagg), ratio_of_minima=_ratio(min(theirs), min(ours)))


def _ratio(reference: float, winagg: float):
    """reference / winagg, or empty where winagg's difference of two runs came out at 0 or below
    (too few rounds for the CPU clock)."""
    return round(reference / winagg, 3) if winagg > 0 else ""


def _settings(args) -> dict:
    get = lambda name: common.option(args, name, DEFAULTS, QUICK)  # noqa: E731
    cfg = dict(reference_src=get("reference_src"), windows=list(get("windows")),
               algorithms=common.names(get("algorithms")), aggs=common.names(get("aggs")), rounds=get("rounds"),
               cpu_short_rounds=get("cpu_short_rounds"), repeat=get("repeat"), quick=bool(args.quick),
               out=get("out"))
    common.check_names(cfg["algorithms"], cfg["aggs"])
    unpaired = [name for name in cfg["algorithms"] if name not in REFERENCE_NAMES]
    if unpaired:
        raise SystemExit(f"--algorithms: the reference's driver has no {', '.join(unpaired)}; "
                         f"choose from {' '.join(REFERENCE_NAMES)}")
    if cfg["cpu_short_rounds"] is None:
        cfg["cpu_short_rounds"] = cfg["rounds"] // 10
    if not 0 <= cfg["cpu_short_rounds"] < cfg["rounds"] or cfg["repeat"] < 1 or min(cfg["windows"]) < 1:
        raise SystemExit("--cpu-short-rounds must be in 0 .. --rounds - 1; --repeat and --windows >= 1")
    return cfg


def run(args) -> int:
    """Run the experiment; write reference_cpu.csv into --out."""
    cfg = _settings(args)
    binary = build.driver_or_report(cfg["reference_src"], "benchmark_driver", NAME)
    if binary is None:
        return 2
    extra = mta_common.extra_columns(NAME, cfg, ("reference_src", "windows", "algorithms", "aggs", "rounds",
                                                 "cpu_short_rounds", "repeat", "quick", "out"))
    path = Path(cfg["out"]) / "reference_cpu.csv"
    cells = [(n, algorithm, agg) for n in cfg["windows"] for algorithm in cfg["algorithms"] for agg in cfg["aggs"]]
    rows = []
    with common.progress(len(cells), NAME) as bar:
        for n, algorithm, agg in cells:
            bar.set_postfix_str(f"{n} {algorithm} {agg}")
            row = dict(window=n, algorithm=algorithm, reference_name=REFERENCE_NAMES[algorithm], aggregation=agg,
                       short_rounds=cfg["cpu_short_rounds"], rounds=cfg["rounds"], **extra)
            row.update(measure(binary, n, algorithm, agg, cfg["cpu_short_rounds"], cfg["rounds"], cfg["repeat"]))
            row["load_avg_1min"] = common.load_average()
            rows.append(row)
            common.write_csv(path, rows, COLUMNS)
            bar.update(1)
    print(f"wrote {path}")
    return 0
