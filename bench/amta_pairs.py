"""amta against two_stacks at window 4096: evict + insert + query rounds through winagg.rolling.

Both algorithms run over the same 4,004,096 rows of 1 + (i mod 101) in interleaved
pairs in one process, so each pair sees the same moments of a shared machine; prints,
per aggregation, the medians of the rates (CPU time, M rows/s) and of the per-pair
ratios amta / two_stacks, with their range.

    python bench/amta_pairs.py [PAIRS] [AGG ...]      # default: 9 pairs, sum max geomean
"""

import os
import statistics
import sys
import time

import numpy as np

import winagg

ROWS = 4_000_000 + 4096
WINDOW = 4096
ALGORITHMS = ("amta", "two_stacks")


def rate(values, agg, algorithm):
    """M rows/s of one winagg.rolling pass, in CPU time."""
    start = time.process_time()
    winagg.rolling(values, window=WINDOW, agg=agg, algorithm=algorithm)
    return len(values) / (time.process_time() - start) / 1e6


def main(argv):
    pairs = int(argv[0]) if argv else 9
    aggs = argv[1:] or ["sum", "max", "geomean"]
    values = (1 + np.arange(ROWS) % 101).astype(np.float64)
    print(f"window {WINDOW}, {ROWS:,} rows, {pairs} interleaved pairs, load average {os.getloadavg()[0]:.2f}")
    for agg in aggs:
        for algorithm in ALGORITHMS:  # compile outside the timing
            winagg.rolling(values[:10_000], window=WINDOW, agg=agg, algorithm=algorithm)
        rates = {algorithm: [] for algorithm in ALGORITHMS}
        for _ in range(pairs):
            for algorithm in ALGORITHMS:
                rates[algorithm].append(rate(values, agg, algorithm))
        ratios = [a / b for a, b in zip(*rates.values())]
        print(f"{agg:8s} amta {statistics.median(rates['amta']):6.1f}  "
              f"two_stacks {statistics.median(rates['two_stacks']):6.1f} M rows/s  "
              f"ratio median {statistics.median(ratios):.3f} (range {min(ratios):.3f}-{max(ratios):.3f})", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
