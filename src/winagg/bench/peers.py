"""Experiment ``peers``: winagg's whole-array windows against pandas, bottleneck and polars.

Row windows: N float64 values (normal, seeded), with no NaN and with a share
of NaN (default 1%), windows 100, 1,000 and 10,000, aggregations sum, mean,
std, var, max, min and count. Each implementation computes the same pandas
semantics (``min_periods=1``, NaN skipped, ``ddof=1``):

- ``blockscan``: :func:`winagg.engine.blockscan.rolling` (block prefix/suffix scans);
- ``winagg``: :func:`winagg.rolling`, the public call;
- ``bottleneck``: ``move_*`` with ``min_count=1`` (it has no count);
- ``polars``: ``Series.rolling_*`` with ``min_samples=1`` on a Series whose NaN
  are nulls (polars aggregates NaN as a value otherwise; it has no rolling count);
- ``pandas``: ``Series.rolling(w, min_periods=1).agg()``.

Time windows: a datetime index with irregular gaps (exponential, mean
``3600 s / --peers-span-rows``, so "1h" holds about that many rows), against
pandas ``rolling("1h")`` and polars ``rolling_*_by(..., "1h")``.

Keyed windows (``--peers-keys``, default 10,000 keys over ``--peers-keyed-rows``,
default 2,000,000 rows, keys drawn uniformly): ``winagg.rolling(..., by=keys)``
against pandas ``groupby(k).rolling(...)`` and polars ``rolling_*().over(k)``
(row windows of ``--peers-keyed-window`` rows, default 100) and
``rolling_*_by("t", "1h").over(k)`` (times sorted, about
``--peers-keyed-span-rows`` rows of each key in 1h, default 100). pandas'
timed call stops at its own result, in key order (the reordering to the input's
rows, which winagg and polars return, is left out of its time).

Threads (``--threads``, default ``1 all``): every point is measured once per
thread count given to winagg and blockscan (``all``: every core the process
may use); the peers run with their own defaults (polars on all cores) in the
same interleaved rounds.

Every result is checked against pandas (same NaN positions, values close)
before any timing; an implementation that disagrees is reported, not timed.
Timed calls are interleaved (one call of each implementation per repeat) and
the median is kept. Inputs (Series, DataFrames) are built outside the timing;
every timed call allocates its result. The cold start is measured in fresh
processes with an empty ``NUMBA_CACHE_DIR``: import time, then the time of
the first call of one aggregation.

Ratios are ``peer seconds / winagg seconds``: above 1, winagg is faster.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from . import common, plots

NAME = "peers"
DESCRIPTION = "winagg's whole-array windows vs pandas, bottleneck and polars (rows, 1h time windows, cold start)"

DEFAULTS = dict(aggs=("sum", "mean", "std", "var", "max", "min", "count"), peers_rows=10_000_000,
                peers_windows=(100, 1_000, 10_000), peers_nan=0.01, peers_repeat=3, peers_span_rows=1_000,
                peers_cold=("sum", "mean", "std", "max", "min"), peers_keys=10_000, peers_keyed_rows=2_000_000,
                peers_keyed_window=100, peers_keyed_span_rows=100, peers_keyed_aggs=("mean", "max", "std"),
                threads=("1", "all"), out="results/peers", peers_order_aggs=("median", "quantile"))
QUICK = dict(peers_rows=20_000, peers_windows=(100, 1_000), peers_repeat=2, peers_span_rows=100,
             aggs=("sum", "max", "std", "count"), peers_cold=("sum",), peers_keys=100, peers_keyed_rows=20_000,
             peers_keyed_aggs=("mean",))

IMPLEMENTATIONS = ("blockscan", "winagg", "bottleneck", "polars", "pandas")
OURS = ("blockscan", "winagg")
PEERS = ("bottleneck", "polars", "pandas")
#: The winagg aggregation names behind each benchmark aggregation, and the pandas method.
AGGS = {"sum": "sum", "mean": "mean", "std": "std", "var": "var", "max": "max", "min": "min", "count": "count"}
#: How close a result must be to pandas' to count as the same answer.
RTOL, ATOL = 1e-6, 1e-9
SPAN = "1h"
SPAN_NS = 3_600_000_000_000

COLUMNS = ("kind", "aggregation", "window", "nan_share", "rows", "keys", "threads", "implementation", "median_seconds",
           "min_seconds", "max_seconds", "repeats", "mrows_s", "check", "load_avg_1min",
           "cpu", "cores", "python", "numba", "numpy", "platform", "command")
RATIO_COLUMNS = ("kind", "aggregation", "window", "nan_share", "threads", "ours", "peer", "ratio", "load_avg_1min")
COLD_COLUMNS = ("implementation", "aggregation", "cache", "import_seconds", "first_call_seconds", "second_call_seconds",
                "load_avg_1min")


def add_arguments(group) -> None:
    """The options only this experiment takes."""
    group.add_argument("--peers-rows", type=int, metavar="N", help="rows of input (default 10,000,000)")
    group.add_argument("--peers-windows", type=int, nargs="+", metavar="W", help="row windows (default 100 1000 10000)")
    group.add_argument("--peers-nan", type=float, metavar="SHARE",
                       help="share of NaN in the second input (default 0.01; 0: clean input only)")
    group.add_argument("--peers-repeat", type=int, metavar="K", help="timed calls per implementation (default 3)")
    group.add_argument("--peers-span-rows", type=int, metavar="R",
                       help="mean rows per 1h time window (default 1000); 0 skips time windows")
    group.add_argument("--peers-keys", type=int, metavar="K", help="keys of the keyed input (default 10,000; 0 skips)")
    group.add_argument("--peers-keyed-rows", type=int, metavar="N", help="rows of the keyed input (default 2,000,000)")
    group.add_argument("--peers-keyed-window", type=int, metavar="W", help="keyed row window (default 100)")
    group.add_argument("--peers-keyed-span-rows", type=int, metavar="R",
                       help="mean rows of one key per 1h time window (default 100)")
    group.add_argument("--peers-keyed-aggs", nargs="+", metavar="AGG", help="keyed aggregations (default mean max std)")
    group.add_argument("--threads", nargs="+", metavar="T",
                       help="thread counts for winagg: numbers or 'all' (default: 1 all)")
    group.add_argument("--peers-order-aggs", nargs="*", metavar="AGG",
                       help="order statistics over the row windows: median, quantile (the 0.9-quantile); "
                            "default both, 'none' or the flag alone: skip")
    group.add_argument("--peers-cold", nargs="*", metavar="AGG",
                       help="aggregations whose cold start is measured (default: sum mean std max min; "
                            "'none', or the flag alone: skip)")


def _settings(args) -> dict:
    get = lambda name: common.option(args, name, DEFAULTS, QUICK)  # noqa: E731
    cfg = dict(aggs=common.names(get("aggs")), rows=get("peers_rows"), windows=list(get("peers_windows")),
               nan=get("peers_nan"), repeat=get("peers_repeat"), span_rows=get("peers_span_rows"),
               cold=[a for a in common.names(get("peers_cold")) if a != "none"], quick=bool(args.quick),
               keys=get("peers_keys"), keyed_rows=get("peers_keyed_rows"), keyed_window=get("peers_keyed_window"),
               keyed_span_rows=get("peers_keyed_span_rows"), keyed_aggs=common.names(get("peers_keyed_aggs")),
               threads=[_threads(t) for t in common.names(get("threads"))], out=get("out"),
               order_aggs=[a for a in common.names(get("peers_order_aggs")) if a != "none"])
    if set(cfg["order_aggs"]) - set(ORDER_QUANTILES):
        raise SystemExit(f"--peers-order-aggs: choose from {', '.join(ORDER_QUANTILES)}")
    unknown = [a for a in cfg["aggs"] + cfg["cold"] + cfg["keyed_aggs"] if a not in AGGS or a == "count" and
               a in cfg["keyed_aggs"]]
    if unknown:
        raise SystemExit(f"--aggs/--peers-cold: unknown aggregation {unknown[0]!r}; choose from {', '.join(AGGS)}")
    if cfg["rows"] < 1 or cfg["repeat"] < 1 or min(cfg["windows"]) < 1 or not 0 <= cfg["nan"] < 1:
        raise SystemExit("--peers-rows, --peers-repeat and windows must be >= 1, --peers-nan in [0, 1)")
    return cfg


def _threads(word: str):
    """A ``--threads`` value: 'all' (None: every core) or a count of at least 1."""
    if word == "all":
        return None
    if not word.isdigit() or int(word) < 1:
        raise SystemExit(f"--threads: {word!r} is not a thread count (a number >= 1, or 'all')")
    return int(word)


def _threads_label(threads) -> str:
    from ..engine.pieces import thread_count

    return f"all ({thread_count(None)})" if threads is None else str(threads)


# ---------------------------------------------------------------- inputs
def make_values(rows: int, nan_share: float, seed: int = 7) -> np.ndarray:
    rng = np.random.default_rng(seed)
    values = rng.normal(loc=100.0, scale=10.0, size=rows)
    if nan_share:
        values[rng.random(rows) < nan_share] = np.nan
    return values


def make_times(rows: int, span_rows: int, seed: int = 11) -> np.ndarray:
    """Sorted datetime64[ns] with exponential gaps: a 1h window holds about ``span_rows`` rows."""
    gaps = np.random.default_rng(seed).exponential(SPAN_NS / span_rows, size=rows).astype(np.int64)
    return (np.datetime64("2024-01-01T00:00:00", "ns") + np.cumsum(gaps).astype("timedelta64[ns]"))


# ---------------------------------------------------------------- the calls
def _key(agg: str) -> str:
    from .. import aggregations

    return aggregations.get(AGGS[agg]).compiled_for(np.dtype(np.float64)).key


def make_keys(rows: int, keys: int, seed: int = 13) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, keys, size=rows)


def row_calls(values: np.ndarray, window: int, agg: str, threads=1) -> dict:
    """implementation -> a call computing ``agg`` over row windows of ``window`` (None: not offered)."""
    import bottleneck as bn
    import pandas as pd
    import polars as pl

    from ..engine import blockscan
    from ..engine.pieces import thread_count
    from ..windows.rolling import rolling

    key = _key(agg)
    series = pd.Series(values)
    nulls = pl.Series(values, nan_to_null=True)
    moving = {"sum": bn.move_sum, "mean": bn.move_mean, "max": bn.move_max, "min": bn.move_min,
              "std": lambda a, w, min_count: bn.move_std(a, w, min_count=min_count, ddof=1),
              "var": lambda a, w, min_count: bn.move_var(a, w, min_count=min_count, ddof=1)}.get(agg)
    polars_method = None if agg == "count" else getattr(nulls, f"rolling_{agg}")
    return {
        "blockscan": lambda: blockscan.rolling(values, window, key, threads=thread_count(threads)),
        "winagg": lambda: rolling(values, window, AGGS[agg], threads=threads),
        "bottleneck": None if moving is None else (lambda: moving(values, window, min_count=1)),
        "polars": None if polars_method is None else (lambda: polars_method(window, min_samples=1).to_numpy()),
        "pandas": lambda: getattr(series.rolling(window, min_periods=1), agg)().to_numpy(),
    }


def time_calls(values: np.ndarray, times: np.ndarray, agg: str, threads=1) -> dict:
    """implementation -> a call computing ``agg`` over the 1h windows ending at each row."""
    import pandas as pd
    import polars as pl

    from ..engine import blockscan
    from ..engine.pieces import thread_count
    from ..windows.rolling import rolling

    key = _key(agg)
    ticks = times.view(np.int64)
    series = pd.Series(values, index=pd.DatetimeIndex(times))
    frame = pl.DataFrame({"t": pl.Series(times), "x": pl.Series(values, nan_to_null=True)})
    method = None if agg == "count" else getattr(pl.col("x"), f"rolling_{agg}_by")
    return {
        "blockscan": lambda: blockscan.rolling(values, None, key, times=ticks, span=SPAN_NS,
                                               threads=thread_count(threads)),
        "winagg": lambda: rolling(values, SPAN, AGGS[agg], times=times, threads=threads),
        "bottleneck": None,
        "polars": None if method is None else
        (lambda: frame.select(method("t", window_size=SPAN, min_samples=1)).to_series().to_numpy()),
        "pandas": lambda: getattr(series.rolling(SPAN), agg)().to_numpy(),
    }


def keyed_calls(values: np.ndarray, keys: np.ndarray, window, agg: str, times=None, threads=1):
    """``(calls, arrange)``: implementation -> a call computing ``agg`` over each key's windows (row
    windows of ``window`` rows, or 1h windows over ``times``), and the function that puts a result
    in the input's row order into pandas' order (by key, then row)."""
    import pandas as pd
    import polars as pl

    from ..windows.rolling import rolling

    frame = pl.DataFrame({"k": keys, "x": pl.Series(values, nan_to_null=True)})
    if times is None:
        grouped = pd.DataFrame({"k": keys, "x": values}).groupby("k")["x"].rolling(window, min_periods=1)
        expression = getattr(pl.col("x"), f"rolling_{agg}")(window, min_samples=1).over("k")
        ours = lambda: rolling(values, window, AGGS[agg], by=keys, threads=threads)  # noqa: E731
    else:
        frame = frame.with_columns(t=pl.Series(times))
        indexed = pd.DataFrame({"k": keys, "x": values}, index=pd.DatetimeIndex(times))
        grouped = indexed.groupby("k")["x"].rolling(SPAN)
        expression = getattr(pl.col("x"), f"rolling_{agg}_by")("t", window_size=SPAN, min_samples=1).over("k")
        ours = lambda: rolling(values, SPAN, AGGS[agg], by=keys, times=times, threads=threads)  # noqa: E731
    key_order = np.argsort(keys, kind="stable")
    calls = {"blockscan": None, "winagg": ours, "bottleneck": None,
             "polars": lambda: frame.select(expression).to_series().to_numpy(),
             "pandas": lambda: getattr(grouped, agg)().to_numpy()}
    return calls, lambda result: np.asarray(result)[key_order]


def check(got, want) -> str:
    """'ok' when ``got`` is pandas' answer (same NaN positions, values close), else what differs."""
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        return f"mismatch: shape {got.shape} vs {want.shape}"
    nan_got, nan_want = np.isnan(got), np.isnan(want)
    if not np.array_equal(nan_got, nan_want):
        return f"mismatch: NaN at row {int(np.flatnonzero(nan_got != nan_want)[0])}"
    close = np.isclose(got, want, rtol=RTOL, atol=ATOL) | nan_got
    if not close.all():
        row = int(np.flatnonzero(~close)[0])
        return f"mismatch: row {row} {got[row]!r} vs {want[row]!r}"
    return "ok"


def measure(calls: dict, repeat: int, arrange=None) -> dict:
    """implementation -> (seconds list, check): checked against pandas first, then timed interleaved.
    ``arrange`` puts the others' results in the order of pandas' result."""
    want = calls["pandas"]()
    results = {}
    for name, call in calls.items():
        if call is None:
            results[name] = ([], "n/a: no such function")
            continue
        got = call()  # also the warm-up: compiles or loads kernels
        verdict = check(got if arrange is None or name == "pandas" else arrange(got), want)
        results[name] = ([], verdict)
    timed = [name for name, (_, verdict) in results.items() if verdict == "ok"]
    for _ in range(repeat):
        for name in timed:
            start = time.perf_counter()
            calls[name]()
            results[name][0].append(time.perf_counter() - start)
    return results


def _rows_of(kind, agg, window, nan_share, rows, results, extra, keys=0, threads=1) -> list:
    out = []
    for name in IMPLEMENTATIONS:
        seconds, verdict = results[name]
        row = dict(kind=kind, aggregation=agg, window=window, nan_share=nan_share, rows=rows, keys=keys,
                   threads=_threads_label(threads), implementation=name,
                   repeats=len(seconds), check=verdict, load_avg_1min=common.load_average(), **extra)
        if seconds:
            median = float(np.median(seconds))
            row.update(median_seconds=float(f"{median:.4g}"), min_seconds=float(f"{min(seconds):.4g}"),
                       max_seconds=float(f"{max(seconds):.4g}"), mrows_s=round(rows / median / 1e6, 2))
        out.append(row)
    return out


def ratios(rows: list) -> list:
    """peer median / our median for every point where both were timed (above 1: winagg faster)."""
    by_point: dict = {}
    for r in rows:
        if r.get("median_seconds"):
            point = (r["kind"], r["aggregation"], r["window"], r["nan_share"], r["threads"])
            by_point.setdefault(point, {})[r["implementation"]] = (r["median_seconds"], r["load_avg_1min"])
    out = []
    for (kind, agg, window, nan_share, threads), medians in by_point.items():
        for ours in OURS:
            for peer in PEERS:
                if ours in medians and peer in medians:
                    out.append(dict(kind=kind, aggregation=agg, window=window, nan_share=nan_share, threads=threads,
                                    ours=ours,
                                    peer=peer, ratio=round(medians[peer][0] / medians[ours][0], 3),
                                    load_avg_1min=medians[ours][1]))
    return out


# ---------------------------------------------------------------- cold start
COLD_SCRIPT = r"""
import json, sys, time
import numpy as np
start = time.perf_counter()
import winagg
from winagg import aggregations
from winagg.engine import blockscan
imported = time.perf_counter() - start
which, agg = sys.argv[1], sys.argv[2]
values = np.random.default_rng(0).normal(size=10_000)
key = aggregations.get(agg).compiled_for(np.dtype(np.float64)).key
call = (lambda: blockscan.rolling(values, 100, key)) if which == "blockscan" else (lambda: winagg.rolling(values, 100, agg))
seconds = []
for _ in range(2):
    start = time.perf_counter()
    call()
    seconds.append(time.perf_counter() - start)
print(json.dumps(dict(import_seconds=imported, first_call_seconds=seconds[0], second_call_seconds=seconds[1])))
"""


def cold_start(which: str, agg: str, cache: str = "empty") -> dict:
    """Import and first-call seconds of ``agg`` in a fresh process whose numba cache is ``cache``:
    "empty", or "warmed" by ``winagg warm`` in an earlier process (what the setup leaves)."""
    with tempfile.TemporaryDirectory(prefix="winagg-cold-") as folder:
        env = dict(os.environ, NUMBA_CACHE_DIR=folder)
        if cache == "warmed":
            subprocess.run([sys.executable, "-m", "winagg.cli", "warm", "--aggs", AGGS[agg]], env=env, check=True,
                           capture_output=True, text=True)
        done = subprocess.run([sys.executable, "-c", COLD_SCRIPT, which, AGGS[agg]], env=env, check=True,
                              capture_output=True, text=True)
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    return dict(implementation=which, aggregation=agg, cache=cache, load_avg_1min=common.load_average(),
                **{k: round(v, 3) for k, v in figures.items()})


# ---------------------------------------------------------------- figure and summary
def ratio_png(ratio_rows: list, path: Path) -> None:
    """One panel per input kind: blockscan's speed ratio against each peer, per aggregation."""
    kinds = sorted({(r["kind"], r["window"], r["nan_share"], r["threads"]) for r in ratio_rows
                    if r["ours"] == "blockscan"}, key=lambda k: (k[0] != "rows", str(k[1]), k[2], k[3]))
    fig, axes = plots._figure(len(kinds), width=3.6, height=3.4)
    for ax, (kind, window, nan_share, threads) in zip(axes, kinds):
        chosen = [r for r in ratio_rows if r["ours"] == "blockscan" and (r["kind"], r["window"], r["nan_share"],
                                                                         r["threads"]) == (kind, window, nan_share, threads)]
        aggs = list(dict.fromkeys(r["aggregation"] for r in chosen))
        for index, peer in enumerate(PEERS):
            heights = [next((r["ratio"] for r in chosen if r["aggregation"] == a and r["peer"] == peer), np.nan)
                       for a in aggs]
            ax.bar(np.arange(len(aggs)) + (index - 1) * 0.27, heights, width=0.27, label=peer, color=f"C{index}")
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_yscale("log")
        ax.set_xticks(np.arange(len(aggs)), aggs, rotation=45)
        ax.set_xlabel("aggregation")
        label = f"window {window}" if kind == "rows" else f"time window {window}"
        ax.set_title(f"{label}, {nan_share:.0%} NaN, threads {threads}", fontsize="small")
        ax.grid(True, axis="y", which="both", alpha=0.3)
    axes[0].set_ylabel("peer time / blockscan time\n(above 1: winagg faster)")
    axes[0].legend(fontsize="small")
    plots._save(fig, path)


def summary(ratio_rows: list) -> str:
    """The ratio table: one line per point, a column per (ours, peer)."""
    points = list(dict.fromkeys((r["kind"], r["aggregation"], r["window"], r["nan_share"], r["threads"])
                                for r in ratio_rows))
    columns = [(ours, peer) for ours in OURS for peer in PEERS]
    header = f"{'kind':10s} {'agg':6s} {'window':>7s} {'NaN':>4s} {'threads':>8s}  " + "  ".join(
        f"{ours[:5]}/{peer[:6]:6s}" for ours, peer in columns)
    lines = ["ratios: peer seconds / winagg seconds (above 1: winagg faster)", header]
    for point in points:
        cells = []
        for ours, peer in columns:
            hit = [r["ratio"] for r in ratio_rows if (r["kind"], r["aggregation"], r["window"], r["nan_share"],
                                                      r["threads"]) == point and r["ours"] == ours and r["peer"] == peer]
            cells.append(f"{hit[0]:12.2f}" if hit else f"{'-':>12s}")
        kind, agg, window, nan_share, threads = point
        lines.append(f"{kind:10s} {agg:6s} {str(window):>7s} {nan_share:4.0%} {threads:>8s}  " + "  ".join(cells))
    return "\n".join(lines)


def _keyed_points(cfg, extra, bar) -> list:
    """The keyed points: row windows and 1h windows per key, every keyed aggregation and thread count."""
    n, keys = cfg["keyed_rows"], make_keys(cfg["keyed_rows"], cfg["keys"])
    values = make_values(n, 0.0)
    times = make_times(n, cfg["keyed_span_rows"] * cfg["keys"])  # about keyed_span_rows of each key in 1h
    rows = []
    for kind, window, timed in (("keyed", cfg["keyed_window"], None), ("keyed-time", SPAN, times)):
        for agg in cfg["keyed_aggs"]:
            for threads in cfg["threads"]:
                bar.set_postfix_str(f"{kind} {agg} {window} threads={_threads_label(threads)}")
                calls, arrange = keyed_calls(values, keys, window, agg, timed, threads)
                results = measure(calls, cfg["repeat"], arrange)
                rows += _rows_of(kind, agg, window, 0.0, n, results, extra, keys=cfg["keys"], threads=threads)
                bar.update(1)
    return rows


# ---------------------------------------------------------------- order statistics
#: The order statistics over row windows, and the quantile each computes (linear interpolation).
ORDER_QUANTILES = {"median": 0.5, "quantile": 0.9}


def order_calls(values: np.ndarray, window: int, agg: str, threads=1) -> dict:
    """implementation -> a call computing the exact rolling median or 0.9-quantile (linear); winagg
    on ``threads`` threads (None: all), the peers on their own."""
    import bottleneck as bn
    import pandas as pd
    import polars as pl

    from ..aggregations import Quantile
    from ..windows.rolling import rolling

    q = ORDER_QUANTILES[agg]
    ours = "median" if agg == "median" else Quantile(q, "linear")
    rolled = pd.Series(values).rolling(window, min_periods=1)
    nulls = pl.Series(values, nan_to_null=True)
    return {
        "blockscan": None,
        "winagg": lambda: rolling(values, window, ours, threads=threads),
        "bottleneck": (lambda: bn.move_median(values, window, min_count=1)) if agg == "median" else None,
        "polars": lambda: nulls.rolling_quantile(q, "linear", window_size=window, min_samples=1).to_numpy(),
        "pandas": (lambda: rolled.median().to_numpy()) if agg == "median" else
        (lambda: rolled.quantile(q, interpolation="linear").to_numpy()),
    }


def _order_statistic_points(cfg, extra, bar) -> list:
    """The exact median and 0.9-quantile over every row window, NaN share and thread count."""
    rows = []
    for share in [0.0] + ([cfg["nan"]] if cfg["nan"] else []):
        values = make_values(cfg["rows"], share)
        for window in cfg["windows"]:
            for agg in cfg["order_aggs"]:
                for threads in cfg["threads"]:
                    bar.set_postfix_str(f"{agg} w={window} NaN={share:.0%} threads={_threads_label(threads)}")
                    results = measure(order_calls(values, window, agg, threads), cfg["repeat"])
                    rows += _rows_of("rows", agg, window, share, cfg["rows"], results, extra, threads=threads)
                    bar.update(1)
    return rows


# ---------------------------------------------------------------- run
def run(args) -> int:
    """Run the experiment; write peers.csv, peers_ratios.csv, peers_cold.csv and peers.png into --out."""
    cfg = _settings(args)
    out = Path(cfg["out"])
    extra = dict(common.machine_info(), command=common.command_line(NAME, {
        "aggs": cfg["aggs"], "peers_rows": cfg["rows"], "peers_windows": cfg["windows"], "peers_nan": cfg["nan"],
        "peers_repeat": cfg["repeat"], "peers_span_rows": cfg["span_rows"], "peers_cold": cfg["cold"],
        "peers_keys": cfg["keys"], "peers_keyed_rows": cfg["keyed_rows"], "peers_keyed_window": cfg["keyed_window"],
        "peers_keyed_span_rows": cfg["keyed_span_rows"], "peers_keyed_aggs": cfg["keyed_aggs"],
        "threads": ["all" if t is None else t for t in cfg["threads"]], "quick": cfg["quick"], "out": cfg["out"]}))
    shares = [0.0] + ([cfg["nan"]] if cfg["nan"] else [])
    points = len(cfg["threads"]) * (len(shares) * len(cfg["aggs"]) * (len(cfg["windows"]) + (1 if cfg["span_rows"] else 0))
                                    + (2 * len(cfg["keyed_aggs"]) if cfg["keys"] else 0)) \
        + len(shares) * len(cfg["windows"]) * len(cfg["order_aggs"]) * len(cfg["threads"])
    rows = []

    def series_points(kind, window, label, calls, share, bar):
        """Time every aggregation and thread count of one window over one series (``calls(agg,
        threads)``: the interleaved calls) and add their rows."""
        nonlocal rows
        for agg in cfg["aggs"]:
            for threads in cfg["threads"]:
                bar.set_postfix_str(f"{agg} {label} NaN={share:.0%} threads={_threads_label(threads)}")
                results = measure(calls(agg, threads), cfg["repeat"])
                rows += _rows_of(kind, agg, window, share, cfg["rows"], results, extra, threads=threads)
                bar.update(1)

    with common.progress(points + 2 * len(OURS) * len(cfg["cold"]), NAME) as bar:
        for share in shares:
            values = make_values(cfg["rows"], share)
            for window in cfg["windows"]:
                series_points("rows", window, f"w={window}",
                              lambda agg, threads: row_calls(values, window, agg, threads), share, bar)
            if cfg["span_rows"]:
                times = make_times(cfg["rows"], cfg["span_rows"])
                series_points("time", SPAN, SPAN, lambda agg, threads: time_calls(values, times, agg, threads),
                              share, bar)
        if cfg["keys"]:
            rows += _keyed_points(cfg, extra, bar)
        rows += _order_statistic_points(cfg, extra, bar)
        cold = []
        for agg in cfg["cold"]:
            for which in OURS:
                for cache in ("empty", "warmed"):
                    bar.set_postfix_str(f"cold {which} {agg} ({cache} cache)")
                    cold.append(cold_start(which, agg, cache))
                    bar.update(1)
    ratio_rows = ratios(rows)
    common.write_csv(out / "peers.csv", rows, COLUMNS)
    common.write_csv(out / "peers_ratios.csv", ratio_rows, RATIO_COLUMNS)
    if cold:
        common.write_csv(out / "peers_cold.csv", cold, COLD_COLUMNS)
    if ratio_rows:
        ratio_png(ratio_rows, out / "peers.png")
    print(summary(ratio_rows))
    for r in cold:
        print(f"cold start {r['implementation']:9s} {r['aggregation']:5s} {r['cache']:6s} cache: "
              f"import {r['import_seconds']:.2f} s, "
              f"first call {r['first_call_seconds']:.2f} s, second {r['second_call_seconds']:.4f} s")
    print(f"wrote {out / 'peers.csv'}, {out / 'peers_ratios.csv'}" + (f", {out / 'peers_cold.csv'}" if cold else "")
          + (f" and {out / 'peers.png'}" if ratio_rows else ""))
    return 0
