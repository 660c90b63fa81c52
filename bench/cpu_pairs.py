"""winagg.rolling against the C++ reference's benchmark_driver in CPU time per round (a load-robust probe).

vs_reference.py compares wall-clock rates, which on a shared machine swing with whatever else
runs. This probe times both sides in CPU time instead and cancels every fixed cost (process
start, the fill, compilation) by differencing two run lengths: the cost of one round is
(cpu(n + R2 rounds) - cpu(n + R1 rounds)) / (R2 - R1), for the C++ driver from the child's
resource usage and for winagg from the process's CPU clock. Alternating, medians of --reps (and the ratio of the minima).
It is for working on one pair at a time; the published ratios come from vs_reference.py.

    .venv/bin/python bench/cpu_pairs.py --algorithms flatfit --aggs max --sizes 4194304
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REFERENCE_NAME = {"flatfat": "reactive", "fiba": "bfinger4"}


def driver_path() -> Path:
    home = Path(os.environ.get("WINAGG_REFERENCE_BIN", Path.home() / ".cache" / "winagg-reference"))
    driver = home / "bin" / "benchmark_driver"
    if not driver.exists():
        sys.exit(f"no reference driver at {driver}: run ../shared/bench/vs_reference.py once to build it")
    return driver


def child_cpu(args) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(args, check=True, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[4096])
    parser.add_argument("--algorithms", nargs="+", required=True)
    parser.add_argument("--aggs", nargs="+", default=["sum", "max", "geomean"])
    parser.add_argument("--rounds", type=int, default=3_000_000, help="R2 - R1")
    parser.add_argument("--short", type=int, default=None,
                        help="R1 (default R2 / 10); at large windows FlatFIT compresses a whole window "
                             "once per window's worth of rounds, so use R2 - R1 a multiple of the window")
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()

    import winagg

    driver = driver_path()
    print(f"# load: {os.getloadavg()}", flush=True)
    print("n\talgorithm\tagg\treference ns/round\twinagg ns/round\twinagg/reference (speed)"
          "\tof the minima", flush=True)
    for n in args.sizes:
        for ours in args.algorithms:
            ref = REFERENCE_NAME.get(ours, ours)
            for agg in args.aggs:
                r1, r2 = (args.rounds // 10 if args.short is None else args.short), args.rounds
                values = (1 + np.arange(n + r2) % 101).astype(np.int64)
                winagg.rolling(values[: n + 1000], window=n, agg=agg, algorithm=ours)  # compile, warm
                theirs, mine = [], []
                for _ in range(args.reps):
                    c1 = child_cpu([str(driver), ref, agg, str(n), str(n + r1)])
                    c2 = child_cpu([str(driver), ref, agg, str(n), str(n + r2)])
                    theirs.append((c2 - c1) / (r2 - r1))
                    start = time.process_time()
                    winagg.rolling(values[: n + r1], window=n, agg=agg, algorithm=ours)
                    w1 = time.process_time() - start
                    start = time.process_time()
                    winagg.rolling(values, window=n, agg=agg, algorithm=ours)
                    w2 = time.process_time() - start
                    mine.append((w2 - w1) / (r2 - r1))
                # the medians, and the ratio of the minima: contention only ever adds CPU time
                t, m = statistics.median(theirs), statistics.median(mine)
                print(f"{n}\t{ours}\t{agg}\t{t * 1e9:.1f}\t{m * 1e9:.1f}\t{t / m:.2f}\t{min(theirs) / min(mine):.2f}",
                      flush=True)
    print(f"# load: {os.getloadavg()}", flush=True)


if __name__ == "__main__":
    main()
