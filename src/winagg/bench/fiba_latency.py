"""Experiment ``fiba_latency``: bulk evict and bulk insert latency, as paper 004's Figs. 7-9.

Three measurements per aggregation, each a violin of per-call latency (red dot
mean, thick line median, thin lines 99.9th and 99.999th percentiles):

* ``evict``: one bulk eviction of the m oldest entries (rounds of bulk evict,
  m single inserts, query) for the FiBA variants and the in-order algorithms
  (their bulk eviction is native where they have one, else a loop);
* ``insert_d0``: inserting m entries in order (bulk insert for FiBA, a loop of
  inserts for the in-order algorithms);
* ``insert_dD``: the same m entries landing D entries from the youngest end
  (FiBA only).

Each call is timed with the cycle counter; cycles are converted to ns.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from . import common, fiba_common
from .cycles import cycles_per_ns

NAME = "fiba_latency"
DESCRIPTION = "bulk evict / bulk insert latency violins at m = 1024 (paper 004, Figs. 7-9)"
DEFAULTS = dict(algorithms=fiba_common.FIBA_ALGORITHMS + fiba_common.IN_ORDER, aggs=("sum", "geomean", "bloom"),
                rounds=2000, fiba_window=2 ** 22, fiba_bloom_window=2 ** 22, fiba_bulk=1024, fiba_distance=1024,
                budget=600.0,
                out="results/fiba_latency")
QUICK = dict(algorithms=("b_fiba4", "nb_fiba4", "daba_lite"), aggs=("sum",), rounds=50, fiba_window=2 ** 12,
             fiba_bloom_window=2 ** 10, fiba_bulk=64, fiba_distance=64)
COLUMNS = ("measure", "algorithm", "aggregation", "window", "bulk", "distance", "rounds", "mean_ns", "median_ns",
           "p99_9_ns", "p99_999_ns", "max_ns", "seconds", "note", "load_avg_1min", "cpu", "cores", "python", "numba",
           "numpy", "platform", "command")


def add_arguments(group) -> None:
    """The options only this experiment takes."""
    group.add_argument("--fiba-window", type=int, metavar="N", help="window size n (default 2^22)")
    group.add_argument("--fiba-bloom-window", type=int, metavar="N",
                       help="window size for bloom, whose 512-byte partials take ~4.6 KB per FiBA node of min arity 4: "
                            "~6.5 GB at 2^22 (default 2^22; windows that do not fit in memory are skipped)")
    group.add_argument("--fiba-bulk", type=int, metavar="M", help="entries per bulk operation m (default 1024)")
    group.add_argument("--fiba-distance", type=int, metavar="D", help="out-of-order distance of the insert test (1024)")


def _settings(args) -> dict:
    get = lambda name: common.option(args, name, DEFAULTS, QUICK)  # noqa: E731
    cfg = {k: get("fiba_" + k) for k in ("window", "bloom_window", "bulk", "distance")}
    cfg.update({k: get(k) for k in ("rounds", "budget", "out")})
    cfg.update(algorithms=fiba_common.available(common.names(get("algorithms"))), aggs=common.names(get("aggs")),
               quick=bool(args.quick))
    return cfg


def summarize(ns: np.ndarray) -> dict:
    """Mean, median, 99.9th, 99.999th percentile and maximum, in ns."""
    return dict(mean_ns=round(float(ns.mean()), 1), median_ns=round(float(np.median(ns)), 1),
                p99_9_ns=round(float(np.percentile(ns, 99.9)), 1),
                p99_999_ns=round(float(np.percentile(ns, 99.999)), 1), max_ns=round(float(ns.max()), 1))


def plan(cfg) -> list:
    """``(measure, algorithm, agg, n, d)`` of every run."""
    runs = []
    for agg in cfg["aggs"]:
        n = cfg["bloom_window"] if agg == "bloom" else cfg["window"]
        for name in cfg["algorithms"]:
            is_fiba = fiba_common.fiba_options(name) is not None
            runs.append(("evict", name, agg, n, 0))
            runs.append(("insert_d0", name, agg, n, 0))
            if is_fiba:
                runs.append((f"insert_d{cfg['distance']}", name, agg, n, min(cfg["distance"], n // 2)))
    return runs


def run(args) -> int:
    """Run the experiment; write fiba_latency.csv and one PNG per measure into --out."""
    cfg = _settings(args)
    out = Path(cfg["out"])
    per_ns = cycles_per_ns()
    extra = dict(common.machine_info(), command=common.command_line(NAME, {
        ("fiba_" + k if k in ("window", "bloom_window", "bulk", "distance") else k): cfg[k]
        for k in ("algorithms", "aggs", "rounds", "window", "bloom_window", "bulk", "distance", "quick", "out")}))
    samples = {}
    runs = plan(cfg)
    rows = [None] * len(runs)
    m = cfg["bulk"]
    with common.progress(len(runs), NAME) as bar:
        groups = fiba_common.by_window([(measure, name, agg, n, m, d) for measure, name, agg, n, d in runs])
        for (agg, name, n, d), indices in groups.items():
            note = fiba_common.memory_note(name, agg, n, m)
            window = None
            if not note:
                fiba_common.warm_up(name, agg)
                window = fiba_common.FilledWindow(name, agg, n, d, m)
            for i in indices:
                measure = runs[i][0]
                bar.set_postfix_str(f"{measure} {agg} {name}")
                rows[i] = dict(measure=measure, algorithm=name, aggregation=agg, window=n, bulk=m, distance=d,
                               rounds=cfg["rounds"], note=note, load_avg_1min=common.load_average(), **extra)
                if window is not None:
                    seconds, ev, ins = window.batches(m, cfg["rounds"], measure != "evict", True)
                    ns = (ev if measure == "evict" else ins) / per_ns
                    samples.setdefault(measure, {})[(name, agg)] = ns
                    rows[i].update(seconds=round(sum(seconds), 3), **summarize(ns))
                bar.update(1)
            window = None  # free this window before the next one is built
    common.write_csv(out / "fiba_latency.csv", rows, COLUMNS)
    for measure, data in samples.items():
        what = "bulk evict" if measure == "evict" else f"insert {m} ({measure[7:]})"
        fiba_common.violin_png(data, f"{what}, m = {m}", "ns per call", out / f"fiba_latency_{measure}.png")
    print(f"wrote {out / 'fiba_latency.csv'} and {len(samples)} PNGs")
    return 0
