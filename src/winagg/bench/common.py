"""Helpers shared by the experiments: options, input data, applicability, machine info, CSV."""

from __future__ import annotations

import csv
import os
import platform
import shlex
import sys
from pathlib import Path
from typing import Iterable, Optional, Sequence

import numpy as np

from .. import aggregations, registry
from ..errors import NotInvertibleError

#: The in-order algorithms every experiment runs by default.
FIFO_ALGORITHMS = ("recalc", "soe", "two_stacks", "two_stacks_lite", "daba", "daba_lite")


def add_shared_arguments(parser, defaults_help: str) -> None:
    """Options every experiment takes; their defaults differ, so they parse to None.

    ``defaults_help`` is appended to the option group's description (each
    experiment's defaults, which the experiment resolves with :func:`option`).
    """
    group = parser.add_argument_group("options of every experiment", defaults_help)
    group.add_argument("--algorithms", nargs="+", metavar="NAME",
                       help=f"algorithms to run, space- or comma-separated (default: {' '.join(FIFO_ALGORITHMS)})")
    group.add_argument("--aggs", nargs="+", metavar="NAME", help="aggregations to run, space- or comma-separated")
    group.add_argument("--rounds", type=int, help="timed rounds (evict + insert + query) per point")
    group.add_argument("--budget", type=float, metavar="SECONDS",
                       help="cut the rounds of a recalc point predicted to run longer "
                            "(throughput skips it if too few are left)")
    group.add_argument("--quick", action="store_true",
                       help="tiny sizes, rounds, algorithms and aggregations: a smoke test in seconds")
    group.add_argument("--out", metavar="DIR", help="directory for the CSV and PNG")


def option(args, name: str, defaults: dict, quick: dict):
    """The value of option ``name``: given on the command line, else the quick or normal default."""
    value = getattr(args, name, None)
    if value is not None:
        return value
    if getattr(args, "quick", False) and name in quick:
        return quick[name]
    return defaults[name]


def names(values: Iterable[str]) -> list:
    """A list of names from ``["a,b", "c"]``-style command-line values."""
    out = []
    for value in values:
        out.extend(part for part in str(value).split(",") if part)
    return out


def check_names(algorithms: Sequence[str], aggs: Sequence[str]) -> None:
    """Fail early, naming the culprit, on an unknown algorithm or aggregation."""
    for name in algorithms:
        registry.info(name)
    for name in aggs:
        aggregations.get(name)


def not_applicable(algorithm: str, agg: str) -> Optional[str]:
    """Why ``algorithm`` cannot run ``agg`` (e.g. SOE without an inverse), or None if it can."""
    try:
        registry.check_monoid_fits(registry.info(algorithm), aggregations.get(agg))
    except NotInvertibleError:
        return f"not applicable: {algorithm} needs an inverse and {agg} has none"
    return None


def paper_values(count: int) -> np.ndarray:
    """The papers' synthetic stream: 1 + (i mod 101), as float64."""
    return (1 + np.arange(count, dtype=np.int64) % 101).astype(np.float64)


def compiled_spec(agg: str):
    """The compiled description of a built-in aggregation for float64 input."""
    return aggregations.get(agg).compiled_for(np.dtype(np.float64))


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def available_memory() -> Optional[int]:
    """MemAvailable from /proc/meminfo in bytes, or None where there is no such file."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def machine_info() -> dict:
    """CPU model, core count and library versions, added as columns to every CSV row."""
    import numba

    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "numba": numba.__version__,
        "numpy": np.__version__,
        "platform": platform.platform(),
    }


def load_average():
    """The 1-minute load average now (kept per CSV row: other processes on the cores
    lower and spread the figures), or '' where the platform has none."""
    return round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else ""


def command_line(experiment: str, settings: dict) -> str:
    """A ``winagg bench`` command that repeats this run, every option spelled out."""
    words = ["winagg", "bench", experiment]
    for key, value in settings.items():
        flag = "--" + key.replace("_", "-")
        if isinstance(value, bool):
            if value:
                words.append(flag)
        elif isinstance(value, (list, tuple)):
            words.append(flag)
            words.extend(str(v) for v in value)
        else:
            words.extend([flag, str(value)])
    return shlex.join(words)


def write_csv(path: Path, rows: list, columns: Sequence[str]) -> None:
    """Write ``rows`` (dicts) with ``columns`` in that order; missing values stay empty."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(columns), extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


def progress(total: int, description: str):
    """A tqdm progress bar over an experiment's points, on stderr."""
    from tqdm import tqdm

    return tqdm(total=total, desc=description, unit="point", file=sys.stderr, dynamic_ncols=True)
