"""Experiment ``fiba_throughput``: million items/s as paper 004's Figs. 11-14.

Sweeps (n entries in the window; each round bulk evicts m, inserts m, queries):

* ``m_single``: m = 1 .. 2^M at d = 0, inserts one by one (Fig. 11), every algorithm;
* ``m_bulk``: the same with bulk inserts (Fig. 12; in-order algorithms insert one by one);
* ``d_m1024`` / ``d_m1``: d = 2^1 .. 2^D with m = 1024 / m = 1, bulk inserts (Figs. 13, 14), FiBA only.

A point is the median of ``--fiba-repeat`` batches of ``--rounds`` items
(``--rounds`` / 8 for bloom) run one after the other on one filled window,
each timed in CPU time (``time.process_time``, so that other processes on a
shared machine do not count). The window is filled once (untimed) per
algorithm, aggregation and d, and the points of that window run on it one
after the other (:class:`~winagg.bench.fiba_common.FilledWindow`). A window
whose buffers would not fit in the available memory is skipped with a note.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from . import common, fiba_common

NAME = "fiba_throughput"
DESCRIPTION = "million items/s vs bulk size m and out-of-order distance d (paper 004, Figs. 11-14)"
DEFAULTS = dict(algorithms=fiba_common.FIBA_ALGORITHMS + fiba_common.IN_ORDER, aggs=("sum", "geomean", "bloom"),
                rounds=2 ** 21, fiba_window=2 ** 22, fiba_bloom_window=2 ** 22, fiba_max_bulk=16, fiba_max_distance=20,
                fiba_repeat=3, fiba_sweeps=("m_single", "m_bulk", "d_m1024", "d_m1"), budget=600.0,
                out="results/fiba_throughput")
QUICK = dict(algorithms=("b_fiba4", "nb_fiba4", "daba_lite"), aggs=("sum",), rounds=2 ** 12, fiba_window=2 ** 12,
             fiba_bloom_window=2 ** 10, fiba_max_bulk=6, fiba_max_distance=8, fiba_repeat=1)
COLUMNS = ("sweep", "algorithm", "aggregation", "window", "bulk", "distance", "items", "repeats", "median_mitems_s",
           "min_mitems_s", "max_mitems_s", "note", "load_avg_1min", "cpu", "cores", "python", "numba", "numpy",
           "platform", "command")


#: Settings whose command-line option starts with --fiba-.
FIBA_OPTIONS = ("window", "bloom_window", "max_bulk", "max_distance", "sweeps", "repeat")


def add_arguments(group) -> None:
    """The options only this experiment takes."""
    group.add_argument("--fiba-max-bulk", type=int, metavar="K", help="m sweep: m = 1, 4, 16, .. 2^K (default 16)")
    group.add_argument("--fiba-max-distance", type=int, metavar="K", help="d sweep: d = 2, 8, .. 2^K (default 20)")
    group.add_argument("--fiba-sweeps", nargs="+", metavar="NAME", help="subset of: m_single m_bulk d_m1024 d_m1")
    group.add_argument("--fiba-repeat", type=int, help="runs per point (default 3)")
    # --fiba-window and --fiba-bloom-window are fiba_latency's options (the parser is shared)


def _settings(args) -> dict:
    get = lambda name: common.option(args, name, DEFAULTS, QUICK)  # noqa: E731
    cfg = {k: get("fiba_" + k) for k in ("window", "bloom_window", "max_bulk", "max_distance", "repeat")}
    cfg.update({k: get(k) for k in ("rounds", "budget", "out")})
    cfg.update(algorithms=fiba_common.available(common.names(get("algorithms"))), aggs=common.names(get("aggs")),
               sweeps=common.names(get("fiba_sweeps")), quick=bool(args.quick))
    return cfg


def plan(cfg) -> list:
    """``(sweep, algorithm, agg, n, m, d, bulk_insert)`` of every point."""
    points = []
    for agg in cfg["aggs"]:
        n = cfg["bloom_window"] if agg == "bloom" else cfg["window"]
        for sweep in cfg["sweeps"]:
            for name in cfg["algorithms"]:
                is_fiba = fiba_common.fiba_options(name) is not None
                if sweep.startswith("m_"):
                    for k in range(0, cfg["max_bulk"] + 1, 2):
                        if 2 ** k <= n // 2:
                            points.append((sweep, name, agg, n, 2 ** k, 0, sweep == "m_bulk"))
                elif is_fiba:
                    m = 1024 if sweep == "d_m1024" else 1
                    for k in range(1, cfg["max_distance"] + 1, 2):
                        if 2 ** k <= n // 2:
                            points.append((sweep, name, agg, n, min(m, n // 4), 2 ** k, True))
    return points


def run(args) -> int:
    """Run the experiment; write fiba_throughput.csv and fiba_throughput.png into --out."""
    cfg = _settings(args)
    out = Path(cfg["out"])
    extra = dict(common.machine_info(), command=common.command_line(NAME, {
        ("fiba_" + k if k in FIBA_OPTIONS else k): cfg[k]
        for k in ("algorithms", "aggs", "rounds", "window", "bloom_window", "max_bulk", "max_distance", "sweeps",
                  "repeat", "quick", "out")}))
    points = plan(cfg)
    rows = [None] * len(points)
    with common.progress(len(points), NAME) as bar:
        for (agg, name, n, d), indices in fiba_common.by_window(points).items():
            largest = max(points[i][4] for i in indices)
            note = fiba_common.memory_note(name, agg, n, largest)
            window = None
            if not note:
                fiba_common.warm_up(name, agg)
                window = fiba_common.FilledWindow(name, agg, n, d, largest)
            for i in indices:
                sweep, _, _, _, m, _, bulk = points[i]
                bar.set_postfix_str(f"{sweep} {agg} {name} m={m} d={d}")
                rows[i] = dict(sweep=sweep, algorithm=name, aggregation=agg, window=n, bulk=m, distance=d,
                               note=note, load_avg_1min=common.load_average(), **extra)
                if window is not None:
                    items = cfg["rounds"] // (8 if agg == "bloom" else 1)
                    rounds = max(1, items // m)
                    seconds, _, _ = window.batches(m, rounds, bulk, False, cfg["repeat"])
                    rates = sorted(rounds * m / max(s, 1e-9) / 1e6 for s in seconds)
                    rows[i].update(items=rounds * m, repeats=cfg["repeat"],
                                   median_mitems_s=round(float(np.median(rates)), 3),
                                   min_mitems_s=round(rates[0], 3), max_mitems_s=round(rates[-1], 3))
                bar.update(1)
            window = None  # free this window before the next one is built
    common.write_csv(out / "fiba_throughput.csv", rows, COLUMNS)
    plot(rows, cfg["sweeps"], out)
    print(f"wrote {out / 'fiba_throughput.csv'} and the PNGs")
    return 0


#: Panel titles of each sweep (the paper's figure in brackets).
SWEEP_TITLES = {"m_single": "in order, single inserts (Fig. 11)", "m_bulk": "in order, bulk inserts (Fig. 12)",
                "d_m1024": "bulk insert of m = 1,024 at distance d (Fig. 13)",
                "d_m1": "insert of m = 1 at distance d (Fig. 14)"}


def plot(rows: list, sweeps, out: Path) -> None:
    """fiba_throughput_SWEEP.png: million items/s (log) against m or d, one panel per aggregation."""
    for sweep in sweeps:
        part = [dict(r, panel=f"{r['aggregation']}, n = {int(r['window']):,}") for r in rows if r["sweep"] == sweep]
        if part:
            by_m = sweep.startswith("m_")
            fiba_common.lines_png(part, "bulk" if by_m else "distance", "algorithm", "median_mitems_s", "panel",
                                  SWEEP_TITLES.get(sweep, sweep), out / f"fiba_throughput_{sweep}.png",
                                  xlabel="bulk size m" if by_m else "out-of-order distance d",
                                  ylabel="million items/s (median)", logy=True)
