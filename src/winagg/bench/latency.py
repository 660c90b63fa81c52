"""Experiment ``latency``: the distribution of one round's latency, as the papers' Fig. 9.

The window driver's timed loop fills the window with n items (untimed), then
times every round of evict + insert + query (with the aggregation's lift and
lower, as one row of ``winagg.rolling`` does) between two reads of the cycle
counter, into an int64 array. Cycles are converted to
nanoseconds with a calibration against ``time.perf_counter``. Two-Stacks'
O(n) flip, once every n rounds, shows in the top percentiles and the maximum;
DABA's worst case stays flat.

Every run performs exactly the same sequence of rounds (same values, same
states), so the kernel is run ``--trials`` times and each round keeps its
minimum over the trials. A round the operating system interrupted or
preempted (milliseconds on a shared machine, far above any round's own cost)
is very unlikely to be hit in every trial, while a flip happens in every
trial: the per-round minimum removes the interference and keeps the
algorithm's own tail. The CSV also keeps the unfiltered tail (``raw_*``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..algos import registry
from ..engine.kernels import compiled_driver
from ..engine.plans import row_plan
from ..engine.loops import run as run_plan
from . import common, plots
from .cycles import CLOCK, cycles_per_ns, timer_overhead

NAME = "latency"
DESCRIPTION = "per-round latency percentiles and violins at window n = 2^14, timed with the cycle counter (Fig. 9)"

DEFAULTS = dict(algorithms=common.FIFO_ALGORITHMS, aggs=("sum", "geomean", "bloom"), rounds=1_000_000,
                window=2 ** 14, trials=3, budget=60.0, out="results/latency")
#: ``--quick``: a small window, few rounds, two algorithms, one aggregation.
QUICK = dict(algorithms=("two_stacks", "daba"), aggs=("sum",), rounds=3000, window=2 ** 6, trials=2)

#: Rounds of the pilot run that compiles the kernel and predicts the full run's time.
PILOT_ROUNDS = 1000
PERCENTILES = (("median", 50.0), ("p99", 99.0), ("p99_9", 99.9), ("p99_999", 99.999))
STATS = ("min",) + tuple(name for name, _ in PERCENTILES) + ("max",)

COLUMNS = (("algorithm", "aggregation", "window", "rounds")
           + tuple(f"{s}_ns" for s in STATS) + tuple(f"{s}_cycles" for s in STATS)
           + ("trials", "raw_p99_999_ns", "raw_max_ns", "cycles_per_ns", "timer_overhead_cycles", "note",
              "cpu", "cores", "python", "numba", "numpy", "platform", "load_avg_1min", "command"))

def add_arguments(group) -> None:
    """The options only this experiment takes."""
    group.add_argument("--window", type=int, metavar="N", help="window size n (default 16384 = 2^14; --quick: 64)")
    group.add_argument("--trials", type=int, metavar="K",
                       help="runs of the same rounds; each round keeps its minimum, which removes "
                            "preemptions by other processes (default 3; 1 = raw)")


def run_rounds(algorithm, spec, values, window: int, rounds: int) -> np.ndarray:
    """Cycles of each round (int64, ``rounds`` of them): the timed build of ``winagg.rolling``'s loop
    (the window driver's dense row loop; :func:`winagg.engine.kernels.compiled_driver` with ``timed``)
    fills the window with ``values[:window]`` untimed, then runs the rounds of evict + insert +
    query with ``want_counts``: a stamp of the cycle counter before each round's evict and after
    its query."""
    timed = compiled_driver(algorithm, spec, dense=True, clock=CLOCK)
    _, _, state = run_plan(timed, values[:window], row_plan(window, window + 1), timed.init(window + 1))
    _, cycles, _ = run_plan(timed, values[window:window + rounds], row_plan(rounds, 0), state, want_counts=True)
    return cycles


def _settings(args) -> dict:
    get = lambda name: common.option(args, name, DEFAULTS, QUICK)  # noqa: E731
    cfg = dict(window=get("window"), algorithms=common.names(get("algorithms")), aggs=common.names(get("aggs")),
               rounds=get("rounds"), trials=get("trials"), budget=get("budget"), quick=bool(args.quick),
               out=get("out"))
    common.check_names(cfg["algorithms"], cfg["aggs"])
    if cfg["window"] < 1 or cfg["rounds"] < 1 or cfg["trials"] < 1:
        raise SystemExit("--window, --rounds and --trials must be >= 1")
    return cfg


def summarize(cycles: np.ndarray, per_ns: float) -> dict:
    """min, percentiles and max of per-round cycles, in cycles and in nanoseconds."""
    values = dict(min=int(cycles.min()), max=int(cycles.max()))
    for name, q in PERCENTILES:
        values[name] = float(np.percentile(cycles, q))
    row = {f"{s}_cycles": round(values[s], 1) for s in STATS}
    row.update({f"{s}_ns": round(values[s] / per_ns, 2) for s in STATS})
    return row


def measure(algorithm: str, agg: str, window: int, rounds: int, trials: int, per_ns: float, budget: float):
    """``(cycles, note)``: per-round cycles of one algorithm x aggregation, one row per trial.

    A pilot of :data:`PILOT_ROUNDS` rounds compiles the kernel and predicts
    the trials; rounds predicted past ``budget`` seconds in all are cut (noted).
    """
    info, spec = registry.info(algorithm), common.compiled_spec(agg)
    values = common.paper_values(window + rounds)
    pilot = run_rounds(info, spec, values, window, min(rounds, PILOT_ROUNDS))
    seconds_per_round = pilot.mean() / per_ns / 1e9
    note = ""
    if trials * rounds * seconds_per_round > budget:
        fitted = max(PILOT_ROUNDS, int(budget / trials / seconds_per_round))
        note = f"rounds cut from {rounds} to {fitted} to fit budget {budget:g} s"
        rounds = fitted
    return np.stack([run_rounds(info, spec, values, window, rounds) for _ in range(trials)]), note


def run(args) -> int:
    """Run the experiment; write latency.csv and latency.png into --out."""
    cfg = _settings(args)
    out = Path(cfg["out"])
    per_ns = cycles_per_ns()
    overhead = timer_overhead()
    extra = dict(common.machine_info(), command=common.command_line(NAME, {
        k: cfg[k] for k in ("window", "algorithms", "aggs", "rounds", "trials", "budget", "quick", "out")}),
        cycles_per_ns=round(per_ns, 4), timer_overhead_cycles=overhead)
    rows, samples = [], {}
    with common.progress(len(cfg["algorithms"]) * len(cfg["aggs"]), NAME) as bar:
        for agg in cfg["aggs"]:
            for algorithm in cfg["algorithms"]:
                bar.set_postfix_str(f"{agg} {algorithm}")
                row = dict(algorithm=algorithm, aggregation=agg, window=cfg["window"], rounds=0, **extra)
                row["note"] = common.not_applicable(algorithm, agg) or ""
                if not row["note"]:
                    trials, row["note"] = measure(algorithm, agg, cfg["window"], cfg["rounds"], cfg["trials"],
                                                  per_ns, cfg["budget"])
                    cycles = trials.min(axis=0)  # per round: the trial least disturbed by other processes
                    row.update(summarize(cycles, per_ns), rounds=len(cycles), trials=len(trials),
                               raw_p99_999_ns=round(float(np.percentile(trials, 99.999)) / per_ns, 2),
                               raw_max_ns=round(int(trials.max()) / per_ns, 2), load_avg_1min=common.load_average())
                    samples[(algorithm, agg)] = cycles / per_ns
                rows.append(row)
                bar.update(1)
    common.write_csv(out / "latency.csv", rows, COLUMNS)
    plots.latency_png(samples, cfg["aggs"], cfg["algorithms"], cfg["window"], out / "latency.png")
    print(f"wrote {out / 'latency.csv'} and {out / 'latency.png'} "
          f"(cycle counter: {per_ns:.3f} ticks/ns, timer overhead {overhead} ticks per round)")
    return 0
