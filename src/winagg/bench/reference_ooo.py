"""Experiment ``reference_ooo``: winagg's FiBA against the C++ reference's out-of-order and bulk drivers.

The reference (:mod:`winagg.bench.reference_build`) runs ``bfinger4`` (FiBA, min
arity 4, finger) in one of three drivers, chosen with ``--ooo-driver``:

* ``ooo``: the window first holds the d youngest times (iterations - d ..
  iterations - 1) and the n - d oldest (0 .. n - d - 1); each round then evicts
  the oldest entry, inserts time i (d entries from the youngest end: out of
  order by d) and queries the whole window;
* ``bulk_evict`` and ``bulk_evict_insert`` (paper 004's bulk experiments): on the
  same fill, each round evicts every time up to i - n + m - 1 in one bulk evict
  and inserts the next m times one by one (``bulk_evict``) or m + 1 of them in
  one bulk insert (``bulk_evict_insert``, the reference's range), then queries;
  rates are items inserted a second. The reference's times are unsigned: when
  d >= m its first rounds' evict times wrap around and empty the window, and
  winagg's plan does the same (:func:`as_reference_horizons`).

winagg runs the same rounds as one plan of its compiled out-of-order driver
(the loop ``winagg.rolling`` and ``Window`` run on unsorted times) over FiBA
with the same options and int64 times; it writes each answer into an array
where the reference keeps one running value. The items' values are made before
the clock starts, like their times. The reference times only its rounds;
winagg's time is fill-corrected (a plan of the fill alone is timed too and
subtracted). The two sides alternate ``--repeat`` times; the ratio is winagg's
median rate over the reference's (above 1: winagg is faster), and the last
answer is checked against numpy (:func:`expected`).
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

import numpy as np

from . import common, mta_common
from . import reference_build as build

NAME = "reference_ooo"
DESCRIPTION = "FiBA vs the papers' C++ out-of-order and bulk drivers at distances d (--reference-src)"

#: ``--ooo-driver`` -> the reference's Makefile target.
TARGETS = {"ooo": "ooo_benchmark", "bulk_evict": "bulk_evict_benchmark",
           "bulk_evict_insert": "bulk_evict_insert_benchmark"}
DEFAULTS = dict(ooo_driver="ooo", window=1 << 20,
                ooo_distances=(0,) + tuple(1 << k for k in range(0, 20, 3)) + (1 << 19,), ooo_bulk_sizes=(1,), aggs=("sum", "max", "geomean"), rounds=3_000_000, repeat=3, reference_src=None,
                out="results/reference_ooo")
QUICK = dict(window=1024, ooo_distances=(0, 8), ooo_bulk_sizes=(1, 4), aggs=("sum",), rounds=10_000, repeat=1)
#: The reference's FiBA: min arity 4, finger, with bulk operations.
FIBA_OPTIONS = dict(min_arity=4, variant="finger", bulk=True)
#: The reference's name of that FiBA.
REFERENCE_NAME = "bfinger4"
#: The aggregations whose answers :func:`expected` computes.
CHECKED = ("sum", "max", "geomean")
NEVER = np.iinfo(np.int64).min  # a horizon that evicts nothing
#: A horizon that evicts everything: the reference's bulk evict time wrapped around (see as_reference_horizons)
EVERYTHING = np.iinfo(np.int64).max

COLUMNS = ("driver", "window", "distance", "bulk", "aggregation", "items", "repeats", "reference_mitems_s",
           "winagg_mitems_s", "ratio", "check", "note") + mta_common.MACHINE_COLUMNS


def add_arguments(group) -> None:
    """The options only this experiment takes (it also reads --reference-src of ``reference``,
    --window of ``latency`` and --repeat of ``throughput``)."""
    group.add_argument("--ooo-driver", choices=sorted(TARGETS),
                       help="the reference's driver: ooo (default), bulk_evict or bulk_evict_insert")
    group.add_argument("--ooo-distances", type=int, nargs="+", metavar="D",
                       help="distances from the youngest end, each below --window (default 0, 1, 8, ... 2^18, 2^19)")
    group.add_argument("--ooo-bulk-sizes", type=int, nargs="+", metavar="M",
                       help="items evicted and inserted a round by the bulk drivers (default 1)")


def as_reference_horizons(horizons: np.ndarray) -> np.ndarray:
    """The bulk drivers' evict times as the reference computes them: its times are unsigned 64-bit
    (``uint64_t``), so ``i - n + m - 1`` below 0 wraps around to 2^64 - k, above every time, and
    that round's bulk evict empties the window (the d far times included). That happens in the
    first d - m + 1 rounds whenever d >= m; the rounds after them insert in order into a window
    that starts empty. winagg replays the same evictions so that both sides do the same work."""
    return np.where((horizons < 0) & (horizons != NEVER), EVERYTHING, horizons)


def round_starts(n: int, d: int, m: int, iterations: int) -> np.ndarray:
    """The first time each round inserts: the reference's loop from n - d to iterations - d by m."""
    return np.arange(n - d, iterations - d, m, dtype=np.int64)


def reference_steps(driver: str, n: int, d: int, m: int, iterations: int):
    """``(times, plan)``: the reference driver's fill and rounds as one plan of winagg's
    out-of-order driver.

    The fill inserts the d youngest times (iterations - d ..), then the n - d oldest (0 ..),
    and answers at its last step only. Then, per round:

    * ``ooo``: insert the next time (d entries from the youngest end), evict the oldest entry
      (every time up to the in-order time n - d below it) and answer the whole window;
    * ``bulk_evict``: evict every time up to i - n + m - 1 in one bulk evict, insert the m
      times i .. i + m - 1 one by one, answer after the last;
    * ``bulk_evict_insert``: the same eviction, then the m + 1 times i .. i + m in one bulk
      insert (the reference's range ends one past the next round's first time, which is
      therefore inserted twice and combined), and answer.
    """
    from ..engine.plans import NO_ANSWER, OutOfOrderPlan, WHOLE

    fill = np.concatenate((np.arange(iterations - d, iterations), np.arange(n - d))).astype(np.int64)
    starts = round_starts(n, d, m, iterations)
    stop = iterations - d
    if driver == "ooo":
        rounds = np.arange(n - d, stop, dtype=np.int64)
        adds = np.ones(rounds.size, np.int64)
        horizons, answers = rounds - (n - d), np.full(rounds.size, WHOLE, np.int64)
    elif driver == "bulk_evict":
        rounds = np.arange(n - d, stop, dtype=np.int64)
        adds = np.ones(rounds.size, np.int64)
        first = (rounds - (n - d)) % m == 0
        horizons = as_reference_horizons(np.where(first, rounds - n + m - 1, NEVER))
        last = np.zeros(rounds.size, bool)
        last[np.minimum(starts + m, stop) - (n - d) - 1] = True
        answers = np.where(last, WHOLE, NO_ANSWER)
    else:
        rounds = (starts[:, None] + np.arange(m + 1)).ravel()
        adds = np.full(starts.size, m + 1, np.int64)
        horizons, answers = as_reference_horizons(starts - n + m - 1), np.full(starts.size, WHOLE, np.int64)
    fill_answers = np.full(fill.size, NO_ANSWER, np.int64)
    fill_answers[-1] = WHOLE
    steps = fill.size + adds.size
    bounds = np.zeros(steps, np.int64)  # unused by whole-window answers
    none = np.empty(0, np.int64)
    per_row = driver == "ooo"
    plan = OutOfOrderPlan(none if per_row else np.concatenate((np.ones(fill.size, np.int64), adds)),
                          none if per_row else np.zeros(steps, np.int64),
                          np.concatenate((np.full(fill.size, NEVER), horizons)),
                          np.concatenate((fill_answers, answers)), bounds, bounds, none, np.int64(0))
    return np.concatenate((fill, rounds)), plan


def winagg_runner(driver: str, agg: str):
    """``run(steps, room) -> (last answer, seconds)``: a plan of :func:`reference_steps` through
    winagg's compiled out-of-order driver (FiBA, int64 times) on a window made with room for
    ``room`` entries; ``seconds`` times the driver alone."""
    from .. import aggregations
    from ..engine.kernels import compiled_out_of_order_driver
    from ..engine.loops import run_out_of_order

    spec = aggregations.get(agg).compiled_for(np.dtype(np.int64))
    # The bulk rounds evict before they insert, as the reference's do: a round that empties the
    # window keeps its own items.
    loop = compiled_out_of_order_driver(spec, FIBA_OPTIONS, "int64", per_row=driver == "ooo",
                                        evict_first=driver != "ooo")

    def run(steps, room):
        times, plan = steps
        values = 1 + times % 101  # input, like the times: made before the clock starts
        window = loop.make_room(loop.init(room), room)
        start = time.perf_counter()
        out, _, _ = run_out_of_order(loop, values, times, plan, window)
        return out[-1], time.perf_counter() - start

    return run


def expected(agg: str, steps) -> float:
    """The last answer of ``steps`` (``(times, plan)``), from the items the rounds inserted (numpy):
    every time above the last eviction's horizon inserted from the last step that emptied the
    window on (see :func:`as_reference_horizons`; its own items stay), a time inserted twice
    counted twice."""
    times, plan = steps
    adds = plan.adds if plan.adds.size else np.ones(plan.horizons.size, np.int64)
    step_of_item = np.repeat(np.arange(plan.horizons.size), adds)
    emptied = np.flatnonzero(plan.horizons == EVERYTHING)
    since = emptied[-1] if emptied.size else 0
    kept = plan.horizons[plan.horizons != EVERYTHING]
    held = times[(step_of_item >= since) & (times > kept.max())]
    values = (1 + held % 101).astype(np.float64)
    return {"sum": values.sum, "max": values.max, "geomean": lambda: np.exp(np.log(values).mean())}[agg]()


def measure(binary: Path, run, driver: str, agg: str, n: int, d: int, m: int, rounds: int, repeat: int) -> dict:
    """One cell: the reference and winagg alternately ``repeat`` times; rates in M items/s."""
    fill_only = reference_steps(driver, n, d, m, n)
    whole = reference_steps(driver, n, d, m, n + rounds)
    # The bulk drivers' window peaks at n + d entries (their first rounds evict nothing); a pool
    # sized below that doubles inside the timed rounds, a copy of the whole pool that the
    # reference, which allocates node by node, never makes.
    room = n + d + 2 * m + 2
    bulk = [] if driver == "ooo" else [m]
    reference_rates, winagg_rates = [], []
    for _ in range(repeat):
        seconds = build.core_seconds(binary, [REFERENCE_NAME, agg, n, d, *bulk, n + rounds])
        reference_rates.append(rounds / seconds / 1e6)
        fill = run(fill_only, room)[1]
        answer, total = run(whole, room)
        winagg_rates.append(rounds / max(total - fill, 1e-9) / 1e6)
    want = expected(agg, whole)
    reference, ours = statistics.median(reference_rates), statistics.median(winagg_rates)
    return dict(repeats=repeat, reference_mitems_s=round(reference, 3), winagg_mitems_s=round(ours, 3),
                ratio=round(ours / reference, 3),
                check="ok" if np.isclose(answer, want, rtol=1e-6) else f"MISMATCH {answer!r} != {want!r}")


def _settings(args) -> dict:
    get = lambda name: common.option(args, name, DEFAULTS, QUICK)  # noqa: E731
    cfg = dict(reference_src=get("reference_src"), ooo_driver=get("ooo_driver"), window=get("window"),
               ooo_distances=list(get("ooo_distances")), ooo_bulk_sizes=list(get("ooo_bulk_sizes")),
               aggs=common.names(get("aggs")), rounds=get("rounds"), repeat=get("repeat"), quick=bool(args.quick),
               out=get("out"))
    n = cfg["window"]
    unchecked = [agg for agg in cfg["aggs"] if agg not in CHECKED]
    if unchecked:
        raise SystemExit(f"--aggs: {', '.join(unchecked)} not run here; choose from {' '.join(CHECKED)}")
    if any(not 0 <= d < n for d in cfg["ooo_distances"]):
        raise SystemExit(f"--ooo-distances: every distance must be in 0 .. --window - 1 ({n - 1})")
    if cfg["ooo_driver"] == "ooo":
        cfg["ooo_bulk_sizes"] = [1]
    if any(not 1 <= m < n for m in cfg["ooo_bulk_sizes"]):
        raise SystemExit(f"--ooo-bulk-sizes: every bulk size must be in 1 .. --window - 1 ({n - 1})")
    if cfg["repeat"] < 1 or cfg["rounds"] < 1:
        raise SystemExit("--repeat and --rounds must be >= 1")
    return cfg


def run(args) -> int:
    """Run the experiment; write reference_ooo_DRIVER.csv into --out."""
    cfg = _settings(args)
    driver = cfg["ooo_driver"]
    binary = build.driver_or_report(cfg["reference_src"], TARGETS[driver], NAME)
    if binary is None:
        return 2
    extra = mta_common.extra_columns(NAME, cfg, ("reference_src", "ooo_driver", "window", "ooo_distances",
                                                 "ooo_bulk_sizes", "aggs", "rounds", "repeat", "quick", "out"))
    path = Path(cfg["out"]) / f"reference_ooo_{driver}.csv"
    n, rows = cfg["window"], []
    with common.progress(len(cfg["aggs"]) * len(cfg["ooo_distances"]) * len(cfg["ooo_bulk_sizes"]), NAME) as bar:
        for agg in cfg["aggs"]:
            runner = winagg_runner(driver, agg)
            runner(reference_steps(driver, 64, 8, 4, 1000), 80)  # compile, warm
            for d in cfg["ooo_distances"]:
                for m in cfg["ooo_bulk_sizes"]:
                    bar.set_postfix_str(f"{agg} d={d} m={m}")
                    row = dict(driver=driver, window=n, distance=d, bulk=m, aggregation=agg, items=cfg["rounds"],
                               note="", **extra)
                    try:
                        row.update(measure(binary, runner, driver, agg, n, d, m, cfg["rounds"], cfg["repeat"]))
                    except build.ReferenceError as error:  # shown in the row, never hidden
                        row["note"] = str(error)
                    row["load_avg_1min"] = common.load_average()
                    rows.append(row)
                    common.write_csv(path, rows, COLUMNS)
                    bar.update(1)
    print(f"wrote {path}")
    return 0
