"""The experiments' figures, drawn with matplotlib's Agg canvas.

Figures are built from ``matplotlib.figure.Figure`` with an Agg canvas rather
than through pyplot, so no global backend is switched in the caller's process.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

#: Samples kept per violin for the density outline; the percentile ticks use all of them.
VIOLIN_SAMPLES = 200_000


def _figure(panels: int, width: float = 4.2, height: float = 3.6):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width * max(panels, 1), height), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, max(panels, 1), squeeze=False)[0]
    return fig, axes


def _save(fig, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)


def throughput_png(rows: list, aggs: list, algorithms: list, path: Path) -> None:
    """One panel per aggregation: M items/s (log) against window size (log2), a line per algorithm."""
    fig, axes = _figure(len(aggs))
    for ax, agg in zip(axes, aggs):
        for index, algorithm in enumerate(algorithms):
            points = [(r["window"], r["median_mitems_s"]) for r in rows
                      if r["aggregation"] == agg and r["algorithm"] == algorithm and r.get("median_mitems_s")]
            if points:
                x, y = zip(*points)
                # One colour per algorithm in every panel, even where some are missing.
                ax.plot(x, y, marker="o", markersize=3, label=algorithm, color=f"C{index % 10}")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(agg)
        ax.set_xlabel("window size n")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("throughput [million items/s]")
    handles = {h.get_label(): h for ax in axes for h in ax.get_lines()}
    axes[0].legend([handles[a] for a in algorithms if a in handles], [a for a in algorithms if a in handles],
                   fontsize="small")
    _save(fig, path)


def _ns_label(exponent: int) -> str:
    value = 10.0 ** exponent
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if value >= scale:
            return f"{value / scale:g} {unit}"
    return f"{value:g} ns"


def _violin(ax, position: int, ns: np.ndarray, color: str) -> None:
    # The density is drawn in log10 space (a log axis over a linear-space kernel
    # density would smear the tails); the ticks come from every sample.
    logs = np.log10(np.maximum(ns, 1e-3))
    body = logs if logs.size <= VIOLIN_SAMPLES else np.random.default_rng(0).choice(logs, VIOLIN_SAMPLES)
    parts = ax.violinplot([body], positions=[position], widths=0.8, showextrema=False, points=200)
    for shape in parts["bodies"]:
        shape.set_facecolor(color)
        shape.set_alpha(0.6)
    low, high = logs.min(), logs.max()
    ax.vlines(position, low, high, color="k", linewidth=0.8)
    ax.hlines([low, high], position - 0.15, position + 0.15, color="k", linewidth=0.8)
    ticks = np.percentile(logs, [50, 99.9, 99.999])
    ax.hlines(ticks[0], position - 0.35, position + 0.35, color="k", linewidth=1.6)  # median
    ax.hlines(ticks[1:], position - 0.25, position + 0.25, color="firebrick", linewidth=1.0)


def latency_png(samples: dict, aggs: list, algorithms: list, window: int, path: Path) -> None:
    """One panel per aggregation, a violin per algorithm of per-round latency (log y, ns).

    Black: min/max extent and the median (thick); red: 99.9th and 99.999th percentiles.
    ``samples`` maps ``(algorithm, agg)`` to an array of nanoseconds.
    """
    fig, axes = _figure(len(aggs), width=max(3.0, 0.9 * len(algorithms) + 1.2), height=4.2)
    for ax, agg in zip(axes, aggs):
        shown = [a for a in algorithms if (a, agg) in samples]
        for position, algorithm in enumerate(shown):
            _violin(ax, position, samples[(algorithm, agg)], f"C{algorithms.index(algorithm) % 10}")
        ax.set_xticks(range(len(shown)), shown, rotation=40, ha="right", fontsize="small")
        low, high = ax.get_ylim()
        exponents = range(math.floor(low), math.ceil(high) + 1)
        ax.set_yticks(list(exponents), [_ns_label(e) for e in exponents])
        ax.set_title(f"{agg}, n = {window:,}")
        ax.grid(True, axis="y", alpha=0.3)
    axes[0].set_ylabel("latency per round (evict + insert + query)")
    _save(fig, path)


#: Colours and labels of ``winagg bench spark``'s methods.
SPARK_METHODS = (("winagg", "winagg.spark.sliding"), ("native_default", "Spark window, default"),
                 ("native_segment_tree", "Spark window, segment tree"))


def spark_png(rows: list, aggs: list, labels: list, path: Path) -> None:
    """``winagg bench spark``: seconds per method and frame (log y), one panel per aggregation, and a
    last panel of winagg's speed-ups over Spark's window function (default and segment tree).

    ``labels`` name the frames in the order of the rows' points; the pass-through
    run is a dashed line in every seconds panel.
    """
    fig, axes = _figure(len(aggs) + 1)
    floor = [r["seconds"] for r in rows if r["method"] == "pass_through"]
    points = list(dict.fromkeys((r["frame"], r["window"]) for r in rows if r["method"] != "pass_through"))
    x = np.arange(len(points))
    for ax, agg in zip(axes, aggs):
        for index, (method, label) in enumerate(SPARK_METHODS):
            seconds = {(r["frame"], r["window"]): r["seconds"] for r in rows
                       if r["aggregation"] == agg and r["method"] == method}
            ax.plot(x, [seconds.get(p, np.nan) for p in points], marker="o", label=label, color=f"C{index}")
        if floor:
            ax.axhline(floor[0], color="grey", linestyle="--", label="pass-through (Arrow UDF)")
        ax.set_yscale("log")
        ax.set_title(agg)
        ax.set_ylabel("seconds (median)")
    ratios = axes[-1]
    for index, agg in enumerate(aggs):
        for method, style in (("native_default", "-"), ("native_segment_tree", "--")):
            speedup = {(r["frame"], r["window"]): r.get(f"speedup_vs_{method}") for r in rows
                       if r["aggregation"] == agg and r["method"] == "winagg"}
            ratios.plot(x, [speedup.get(p) or np.nan for p in points], marker="o", linestyle=style,
                        color=f"C{index + 3}", label=f"{agg} vs {'default' if method == 'native_default' else 'segment tree'}")
    ratios.axhline(1.0, color="grey", linewidth=0.8)
    ratios.set_yscale("log")
    ratios.set_title("winagg speed-up")
    ratios.set_ylabel("Spark seconds / winagg seconds")
    for ax in axes:
        ax.set_xticks(x, labels, rotation=20, fontsize="small")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize="x-small")
    _save(fig, path)
