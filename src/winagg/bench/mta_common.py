"""Helpers of the Monoid Tree Aggregator experiments (``mta_*``): a line plot and the run header."""

from __future__ import annotations

from pathlib import Path

from . import common, plots


def line_png(series: dict, path: Path, xlabel: str, ylabel: str, title: str,
             xlog2: bool = True, ylog: bool = True) -> None:
    """One panel: ``series`` maps a label to ``[(x, y), ...]`` (a line with markers each)."""
    fig, axes = plots._figure(1, width=6.0, height=4.2)
    ax = axes[0]
    for index, (label, points) in enumerate(series.items()):
        points = [(x, y) for x, y in points if y not in ("", None)]
        if points:
            x, y = zip(*points)
            ax.plot(x, y, marker="o", markersize=3, label=label, color=f"C{index % 10}")
    if xlog2:
        ax.set_xscale("log", base=2)
    if ylog:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small")
    plots._save(fig, path)


def extra_columns(name: str, cfg: dict, keys) -> dict:
    """Machine info and the command line that repeats the run, for every CSV row."""
    return dict(common.machine_info(), command=common.command_line(name, {k: cfg[k] for k in keys}))


MACHINE_COLUMNS = ("cpu", "cores", "python", "numba", "numpy", "platform", "load_avg_1min", "command")
