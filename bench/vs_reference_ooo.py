"""winagg's FiBA against the C++ reference's out-of-order and bulk drivers, side by side, in one run.

The reference is IBM/sliding-window-aggregators (Apache-2.0), its sources in
../shared/reference/swag-cpp. Its ``ooo_benchmark_driver`` is built with its own Makefile
into the cache folder that ../shared/bench/vs_reference.py uses (WINAGG_REFERENCE_BIN,
default ~/.cache/winagg-reference) and run as a subprocess; nothing of it enters the project.

Run it from the project root with the project's interpreter:

    .venv/bin/python bench/vs_reference_ooo.py                       # sum, max, geomean; d = 0, 2^0 .. 2^19
    .venv/bin/python bench/vs_reference_ooo.py --aggs sum --distances 0 1024 --window 65536
    .venv/bin/python bench/vs_reference_ooo.py --experiment bulk_evict_insert --bulk-sizes 1 64 4096

The experiment is the reference driver's: the window first holds the d youngest times
(iterations - d .. iterations - 1) and the n - d oldest (0 .. n - d - 1); each round then
evicts the oldest entry, inserts time i (d entries from the youngest end: out of order by d)
and queries the whole window. winagg runs the same rounds as one plan of its compiled
out-of-order driver (the loop ``winagg.rolling`` and ``Window`` run) over FiBA (min arity 4,
finger, as ``bfinger4``), with int64 times; the driver writes each answer into an array where
the reference keeps one running value. The reference times only
its rounds; winagg's rate is fill-corrected the same way as in vs_reference.py. C++ and winagg
alternate --reps times; the last column is winagg / C++ of the medians (above 1: winagg is
faster). Each winagg answer is checked against a numpy sum, max or geometric mean.

``--experiment bulk_evict`` and ``bulk_evict_insert`` run the reference's bulk drivers
(paper 004's bulk experiments) instead: on the same fill, each round evicts every time up to
i - n + m - 1 in one bulk evict and inserts the next m times one by one (``bulk_evict``) or
m + 1 of them in one bulk insert (``bulk_evict_insert``, as the reference's range), then
queries; the rates are items inserted a second. The reference's times are unsigned: when
d >= m its first rounds' evict times wrap around and empty the window, and winagg's plan does
the same (:func:`as_reference_horizons`).
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SOURCES = HERE.parent.parent / "shared" / "reference" / "swag-cpp"
AGGS = ["sum", "max", "geomean"]


#: The reference's drivers: Makefile target, binary.
DRIVERS = {"ooo": ("ooo_benchmark", "ooo_benchmark_driver"),
           "bulk_evict": ("bulk_evict_benchmark", "bulk_evict_benchmark_driver"),
           "bulk_evict_insert": ("bulk_evict_insert_benchmark", "bulk_evict_insert_benchmark_driver")}


def build_driver(experiment: str) -> Path:
    """The reference's driver of ``experiment``, built once with its Makefile into the cache folder."""
    target, name = DRIVERS[experiment]
    home = Path(os.environ.get("WINAGG_REFERENCE_BIN", Path.home() / ".cache" / "winagg-reference"))
    driver = home / "bin" / name
    if driver.exists():
        return driver
    if shutil.which("g++") is None or shutil.which("make") is None:
        sys.exit("vs_reference_ooo: needs g++ and make (apt-get install -y g++ make)")
    home.mkdir(parents=True, exist_ok=True)
    for item in SOURCES.iterdir():
        copy = home / item.name
        if item.is_dir():
            shutil.copytree(item, copy, dirs_exist_ok=True)
        else:
            shutil.copy2(item, copy)
    print(f"building the reference's {name} in {home} ...", file=sys.stderr, flush=True)
    subprocess.run(["make", "-C", str(home), target], check=True, stdout=subprocess.DEVNULL)
    return driver


def reference_rate(driver: Path, experiment: str, agg: str, n: int, d: int, m: int, rounds: int) -> float:
    """Items a second of the reference's timed rounds (``rounds`` items after the fill)."""
    bulk = [] if experiment == "ooo" else [str(m)]
    done = subprocess.run([str(driver), "bfinger4", agg, str(n), str(d), *bulk, str(n + rounds)],
                          capture_output=True, text=True)
    for line in done.stdout.splitlines():
        if line.startswith("core runtime:"):
            return rounds / float(line.split(":")[1])
    print(f"  reference bfinger4 {agg} n={n} d={d} m={m} failed: {done.stderr[-300:]!r}", file=sys.stderr)
    return float("nan")


FIBA_OPTIONS = dict(min_arity=4, variant="finger", bulk=True)  # the reference's bfinger4
NEVER = np.iinfo(np.int64).min  # a horizon that evicts nothing
#: A horizon that evicts everything: the reference's bulk evict time wrapped around (see as_reference_horizons)
EVERYTHING = np.iinfo(np.int64).max


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


def reference_steps(experiment: str, n: int, d: int, m: int, iterations: int):
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
    from winagg.driver import NO_ANSWER, WHOLE, OutOfOrderPlan

    fill = np.concatenate((np.arange(iterations - d, iterations), np.arange(n - d))).astype(np.int64)
    starts = round_starts(n, d, m, iterations)
    stop = iterations - d
    if experiment == "ooo":
        rounds = np.arange(n - d, stop, dtype=np.int64)
        adds = np.ones(rounds.size, np.int64)
        horizons, answers = rounds - (n - d), np.full(rounds.size, WHOLE, np.int64)
    elif experiment == "bulk_evict":
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
    per_row = experiment == "ooo"
    plan = OutOfOrderPlan(none if per_row else np.concatenate((np.ones(fill.size, np.int64), adds)),
                          none if per_row else np.zeros(steps, np.int64),
                          np.concatenate((np.full(fill.size, NEVER), horizons)),
                          np.concatenate((fill_answers, answers)), bounds, bounds, none, np.int64(0))
    return np.concatenate((fill, rounds)), plan


def winagg_runner(experiment: str, agg: str):
    """``run(steps, room) -> (last answer, seconds)``: a plan of :func:`reference_steps` through
    winagg's compiled out-of-order driver (FiBA, int64 times) on a window made with room for
    ``room`` entries; ``seconds`` times the driver alone."""
    from winagg import aggregations
    from winagg.driver import compiled_out_of_order_driver, run_out_of_order

    spec = aggregations.get(agg).compiled_for(np.dtype(np.int64))
    # The bulk rounds evict before they insert, as the reference's do: a round that empties the
    # window keeps its own items.
    driver = compiled_out_of_order_driver(spec, FIBA_OPTIONS, "int64", per_row=experiment == "ooo",
                                          evict_first=experiment != "ooo")

    def run(steps, room):
        times, plan = steps
        # The items' values are input, as their times are: made before the clock starts (made inside
        # it, two fresh arrays of 8 bytes an item cost about 5 ns an item, mostly page faults).
        values = 1 + times % 101
        window = driver.make_room(driver.init(room), room)
        start = time.perf_counter()
        out, _, _ = run_out_of_order(driver, values, times, plan, window)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--experiment", choices=sorted(DRIVERS), default="ooo",
                        help="the reference driver: ooo (default), bulk_evict or bulk_evict_insert")
    parser.add_argument("--window", type=int, default=1 << 20, help="n, larger than every distance")
    parser.add_argument("--distances", type=int, nargs="+", default=[0] + [1 << k for k in range(0, 20, 3)] + [1 << 19])
    parser.add_argument("--bulk-sizes", type=int, nargs="+", default=[1], metavar="M",
                        help="items evicted and inserted a round by the bulk experiments (default 1)")
    parser.add_argument("--aggs", nargs="+", default=AGGS)
    parser.add_argument("--rounds", type=int, default=3_000_000, help="items inserted after the fill")
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    n = args.window
    if any(not 0 <= d < n for d in args.distances):
        parser.error(f"every distance must be in 0 .. window - 1 ({n - 1})")
    sizes = [1] if args.experiment == "ooo" else args.bulk_sizes
    if any(not 1 <= m < n for m in sizes):
        parser.error(f"every bulk size must be in 1 .. window - 1 ({n - 1})")

    driver = build_driver(args.experiment)
    print(f"# {args.experiment}; load before: {os.getloadavg()}", flush=True)
    print("n\td\tm\tagg\titems\treference M/s\twinagg M/s\tcheck\twinagg/reference", flush=True)
    for agg in args.aggs:
        run = winagg_runner(args.experiment, agg)
        run(reference_steps(args.experiment, 64, 8, 4, 1000), 80)  # compile, warm
        for d in args.distances:
            for m in sizes:
                rounds = args.rounds
                fill_only = reference_steps(args.experiment, n, d, m, n)
                whole = reference_steps(args.experiment, n, d, m, n + rounds)
                # The bulk experiments' window peaks at n + d entries (their first rounds evict
                # nothing); a pool sized below that doubles inside the timed rounds, a copy of the
                # whole pool that the reference, which allocates node by node, never makes.
                room = n + d + 2 * m + 2
                ref_rates, our_rates = [], []
                for _ in range(args.reps):
                    ref_rates.append(reference_rate(driver, args.experiment, agg, n, d, m, rounds))
                    fill = run(fill_only, room)[1]
                    answer, total = run(whole, room)
                    our_rates.append(rounds / max(total - fill, 1e-9))
                want = expected(agg, whole)
                check = "ok" if np.isclose(answer, want, rtol=1e-6) else f"MISMATCH {answer!r} != {want!r}"
                r, o = statistics.median(ref_rates), statistics.median(our_rates)
                print(f"{n}\t{d}\t{m}\t{agg}\t{rounds}\t{r / 1e6:.2f}\t{o / 1e6:.2f}\t{check}\t{o / r:.2f}",
                      flush=True)
    print(f"# load after: {os.getloadavg()}", flush=True)


if __name__ == "__main__":
    main()
