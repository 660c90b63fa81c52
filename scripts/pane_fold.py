"""Seconds a bucket's panes take to close every window: ``PaneWindows.step`` at an infinite watermark.

usage: python scripts/pane_fold.py SOURCE_TREE SLIDE_MINUTES

16 keys, 250,000 events over 6 hours, one-hour windows sliding SLIDE_MINUTES, count, sum,
mean, max and min of a double. SOURCE_TREE is the winagg tree to import (its ``src``), so
that two trees (a git worktree of an earlier commit, say) can be timed one after the other
with the same environment. Prints the median of 7 closes after one untimed close.
"""

import math
import statistics
import sys
import time

import numpy as np
import pyarrow as pa

sys.path.insert(0, sys.argv[1] + "/src")

from winagg import aggregations  # noqa: E402
from winagg.spark.panes import PaneCombine, PaneWindows, pane_parts, pane_schema  # noqa: E402
from winagg.spark.partition import Output, result_type  # noqa: E402

MINUTE = 60_000_000_000
NAMES = ("max", "count", "sum", "mean", "min")


def main(slide: int) -> None:
    outputs = [Output(n, "v", aggregations.get(n), result_type(aggregations.get(n), pa.float64())) for n in NAMES]
    parts = pane_parts(outputs, {"v": pa.float64()})
    key_fields = [pa.field("k", pa.string())]
    combine = PaneCombine(["k"], "ts", math.gcd(60, slide) * MINUTE, parts, pane_schema(key_fields, parts))
    rng = np.random.default_rng(1)
    n = 250_000
    times = np.sort(rng.integers(0, 360 * MINUTE, n))
    events = pa.table({"k": pa.array([f"k{i}" for i in rng.integers(0, 16, n)]),
                       "ts": pa.array(times, pa.timestamp("ns", "UTC")), "v": pa.array(rng.normal(size=n))})
    panes = combine.combine(events)

    def close_all():
        windows = PaneWindows(outputs, 60 * MINUTE, slide * MINUTE, ["k"], parts, key_fields)
        windows.step(panes, -math.inf)
        started = time.perf_counter()
        closed, _ = windows.step(None, math.inf)
        return time.perf_counter() - started, closed.num_rows

    close_all()  # compiles or loads what the close runs
    runs = [close_all() for _ in range(7)]
    print(f"{sys.argv[1]}: slide {slide} min, {runs[0][1]} windows, median {statistics.median(s for s, _ in runs):.4f} s")


if __name__ == "__main__":
    main(int(sys.argv[2]))
