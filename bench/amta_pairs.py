"""amta against two_stacks, evict + insert + query rounds through winagg.rolling (window 4096 unless told).

Both algorithms run over the same rows of 1 + (i mod 101), 4,000,000 plus the window, in interleaved
pairs in one process, so each pair sees the same moments of a shared machine; prints,
per aggregation, the medians of the rates (CPU time, M rows/s) and of the per-pair
ratios amta / two_stacks, with their range.

    python bench/amta_pairs.py [PAIRS] [AGG ...] [--windows W ...]
    # default: 9 pairs, sum max geomean, window 4096
"""

import argparse
import os
import statistics
import sys
import time

import numpy as np

import winagg

ROUNDS = 4_000_000
ALGORITHMS = ("amta", "two_stacks")


def rate(values, window, agg, algorithm):
    """M rows/s of one winagg.rolling pass, in CPU time."""
    start = time.process_time()
    winagg.rolling(values, window=window, agg=agg, algorithm=algorithm)
    return len(values) / (time.process_time() - start) / 1e6


def measure(window, agg, pairs):
    """(median rates by algorithm, per-pair ratios amta / two_stacks) at one window."""
    values = (1 + np.arange(ROUNDS + window) % 101).astype(np.float64)
    for algorithm in ALGORITHMS:  # compile outside the timing
        winagg.rolling(values[:10_000], window=window, agg=agg, algorithm=algorithm)
    rates = {algorithm: [] for algorithm in ALGORITHMS}
    for _ in range(pairs):
        for algorithm in ALGORITHMS:
            rates[algorithm].append(rate(values, window, agg, algorithm))
    return ({algorithm: statistics.median(r) for algorithm, r in rates.items()},
            [a / b for a, b in zip(*rates.values())])


def main(argv):
    parser = argparse.ArgumentParser(description="amta against two_stacks in interleaved pairs")
    parser.add_argument("pairs", nargs="?", type=int, default=9)
    parser.add_argument("aggs", nargs="*", default=["sum", "max", "geomean"])
    parser.add_argument("--windows", nargs="+", type=int, default=[4096])
    args = parser.parse_args(argv)
    print(f"{ROUNDS:,} rounds after the window fills, {args.pairs} interleaved pairs, "
          f"load average {os.getloadavg()[0]:.2f}")
    for window in args.windows:
        for agg in args.aggs:
            rates, ratios = measure(window, agg, args.pairs)
            print(f"window {window:5d} {agg:8s} amta {rates['amta']:6.1f}  two_stacks {rates['two_stacks']:6.1f} "
                  f"M rows/s  ratio median {statistics.median(ratios):.3f} "
                  f"(range {min(ratios):.3f}-{max(ratios):.3f})", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
