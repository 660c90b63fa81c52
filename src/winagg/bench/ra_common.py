"""Helpers of the RA (flatfat) and FlatFIT experiments: timing, the run record, a line plot."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from . import common


def median_seconds(run, repeat: int, warm_up: bool = True) -> tuple:
    """``(median, all)`` CPU seconds of ``repeat`` calls of ``run()``, after a warm-up call if asked.

    CPU time of this process, not wall time: the machines are shared and
    noisy, and every timed call is single-threaded compiled code.
    """
    if warm_up:
        run()
    seconds = []
    for _ in range(repeat):
        start = time.process_time()
        run()
        seconds.append(time.process_time() - start)
    return float(np.median(seconds)), seconds


def record(experiment: str, settings: dict) -> dict:
    """Machine info and the command line, added as columns to every CSV row."""
    return dict(common.machine_info(), command=common.command_line(experiment, settings))


def line_png(panels: list, path: Path, xlog: bool = True, ylog: bool = True, columns: int = 0) -> None:
    """``panels``: list of ``(title, xlabel, ylabel, {label: (xs, ys)})``, one subplot each, in rows of
    ``columns`` subplots (0: one row)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    columns = columns or len(panels)
    rows = -(-len(panels) // columns)
    fig = Figure(figsize=(4.6 * columns, 3.8 * rows), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, columns, squeeze=False).ravel()
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    for ax, (title, xlabel, ylabel, lines) in zip(axes, panels):
        for label, (xs, ys) in lines.items():
            if len(xs):
                ax.plot(xs, ys, marker="o", markersize=3, label=label)
        if xlog:
            ax.set_xscale("log", base=2)
        if ylog:
            ax.set_yscale("log")
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
