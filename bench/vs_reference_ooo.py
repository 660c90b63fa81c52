"""winagg's FiBA against the C++ reference's out-of-order driver, side by side, in one run.

The reference is IBM/sliding-window-aggregators (Apache-2.0), its sources in
../shared/reference/swag-cpp. Its ``ooo_benchmark_driver`` is built with its own Makefile
into the cache folder that ../shared/bench/vs_reference.py uses (WINAGG_REFERENCE_BIN,
default ~/.cache/winagg-reference) and run as a subprocess; nothing of it enters the project.

Run it from the project root with the project's interpreter:

    .venv/bin/python bench/vs_reference_ooo.py                       # sum, max, geomean; d = 0, 2^0 .. 2^19
    .venv/bin/python bench/vs_reference_ooo.py --aggs sum --distances 0 1024 --window 65536

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


def build_ooo_driver() -> Path:
    """The reference's ooo_benchmark_driver, built once with its Makefile into the cache folder."""
    home = Path(os.environ.get("WINAGG_REFERENCE_BIN", Path.home() / ".cache" / "winagg-reference"))
    driver = home / "bin" / "ooo_benchmark_driver"
    if driver.exists():
        return driver
    if shutil.which("g++") is None or shutil.which("make") is None:
        sys.exit("vs_reference_ooo: needs g++ and make (apt-get install -y g++ make)")
    home.mkdir(parents=True, exist_ok=True)
    for item in SOURCES.iterdir():
        target = home / item.name
        if item.is_dir():
            shutil.copytree(item, target, dirs_exist_ok=True)
        else:
            shutil.copy2(item, target)
    print(f"building the reference's ooo driver in {home} ...", file=sys.stderr, flush=True)
    subprocess.run(["make", "-C", str(home), "ooo_benchmark"], check=True, stdout=subprocess.DEVNULL)
    return driver


def reference_rate(driver: Path, agg: str, n: int, d: int, rounds: int) -> float:
    done = subprocess.run([str(driver), "bfinger4", agg, str(n), str(d), str(n + rounds)],
                          capture_output=True, text=True)
    for line in done.stdout.splitlines():
        if line.startswith("core runtime:"):
            return rounds / float(line.split(":")[1])
    print(f"  reference bfinger4 {agg} n={n} d={d} failed: {done.stderr[-300:]!r}", file=sys.stderr)
    return float("nan")


FIBA_OPTIONS = dict(min_arity=4, variant="finger", bulk=True)  # the reference's bfinger4


def reference_steps(n: int, d: int, iterations: int):
    """``(times, values, plan)``: the reference driver's rounds as one plan of winagg's out-of-order
    driver. The fill inserts the d youngest times, then the n - d oldest, answering only at its
    last step; every later step inserts the next time (d entries from the youngest end), evicts
    the oldest entry (by time) and answers the whole window."""
    from winagg.driver import NO_ANSWER, WHOLE, OutOfOrderPlan

    times = np.concatenate((np.arange(iterations - d, iterations), np.arange(iterations - d))).astype(np.int64)
    steps = times.size
    # A round's oldest entry is the in-order time n - d below the one it inserts: evicting every
    # time up to it evicts that entry alone. The fill evicts nothing.
    horizons = np.full(steps, np.iinfo(np.int64).min)
    horizons[n:] = times[n:] - (n - d)
    answers = np.full(steps, WHOLE, np.int64)
    answers[: n - 1] = NO_ANSWER
    bounds = np.zeros(steps, np.int64)  # unused by whole-window answers
    none = np.empty(0, np.int64)
    plan = OutOfOrderPlan(none, none, horizons, answers, bounds, bounds, none, np.int64(0))
    return times, 1 + times % 101, plan


def winagg_runner(agg: str):
    """``run(n, d, iterations) -> (last answer, size, seconds)``: the reference driver's rounds
    through winagg's compiled out-of-order driver (FiBA, int64 times); ``seconds`` times the
    driver alone, not the plan's making."""
    from winagg import aggregations, state
    from winagg.driver import compiled_out_of_order_driver, run_out_of_order

    spec = aggregations.get(agg).compiled_for(np.dtype(np.int64))
    driver = compiled_out_of_order_driver(spec, FIBA_OPTIONS, "int64", per_row=True)

    def run(n, d, iterations):
        times, values, plan = reference_steps(n, d, iterations)
        window = driver.make_room(driver.init(n + 1), n + 1)
        start = time.perf_counter()
        out, _, (_, st) = run_out_of_order(driver, values, times, plan, window)
        return out[-1], state.size(st), time.perf_counter() - start

    return run


def expected(agg: str, n: int, d: int, iterations: int) -> float:
    """The window after the last round: times iterations - n - d .. iterations - d - 1 and the d youngest."""
    times = np.concatenate((np.arange(iterations - n, iterations - d), np.arange(iterations - d, iterations)))
    values = (1 + times % 101).astype(np.float64)
    return {"sum": values.sum, "max": values.max, "geomean": lambda: np.exp(np.log(values).mean())}[agg]()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--window", type=int, default=1 << 20, help="n, larger than every distance")
    parser.add_argument("--distances", type=int, nargs="+", default=[0] + [1 << k for k in range(0, 20, 3)] + [1 << 19])
    parser.add_argument("--aggs", nargs="+", default=AGGS)
    parser.add_argument("--rounds", type=int, default=3_000_000)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    n = args.window
    if any(not 0 <= d < n for d in args.distances):
        parser.error(f"every distance must be in 0 .. window - 1 ({n - 1})")

    driver = build_ooo_driver()
    print(f"# load before: {os.getloadavg()}", flush=True)
    print("n\td\tagg\trounds\treference M/s\twinagg M/s\tcheck\twinagg/reference", flush=True)
    for agg in args.aggs:
        run = winagg_runner(agg)
        run(64, 8, 1000)  # compile, warm
        for d in args.distances:
            rounds = args.rounds
            ref_rates, our_rates = [], []
            for _ in range(args.reps):
                ref_rates.append(reference_rate(driver, agg, n, d, rounds))
                fill = run(n, d, n)[2]
                answer, size, total = run(n, d, n + rounds)
                our_rates.append(rounds / max(total - fill, 1e-9))
            want = expected(agg, n, d, n + rounds)
            check = "ok" if size == n and np.isclose(answer, want, rtol=1e-6) else f"MISMATCH {answer!r} != {want!r}"
            r, o = statistics.median(ref_rates), statistics.median(our_rates)
            print(f"{n}\t{d}\t{agg}\t{rounds}\t{r / 1e6:.2f}\t{o / 1e6:.2f}\t{check}\t{o / r:.2f}", flush=True)
    print(f"# load after: {os.getloadavg()}", flush=True)


if __name__ == "__main__":
    main()
