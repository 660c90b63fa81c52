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

from .. import aggregations
from ..algos import registry
from ..core.errors import NotInvertibleError

#: The in-order algorithms every experiment runs by default.
FIFO_ALGORITHMS = ("recalc", "soe", "two_stacks", "two_stacks_lite", "daba", "daba_lite")


def add_shared_arguments(parser, defaults_help: Optional[str]) -> None:
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


def partial_bytes(agg: str) -> int:
    """Bytes of one compiled partial of ``agg`` (a layout's buffer is one array, records for tuples)."""
    return compiled_spec(agg).layout.alloc(1).nbytes


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


#: The CSV files written since ``winagg bench`` started its experiment (summarised at the end).
WRITTEN_CSV: list = []

#: Columns that describe the machine and the run, not a result: left out of the summary table.
MACHINE_COLUMNS = ("cpu", "cores", "python", "numba", "numpy", "platform", "load_avg_1min", "command")

#: The summary shows at most this many rows of a file.
SUMMARY_ROWS = 40


def write_csv(path: Path, rows: list, columns: Sequence[str]) -> None:
    """Write ``rows`` (dicts) with ``columns`` in that order; missing values stay empty."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(columns), extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    if path not in WRITTEN_CSV:
        WRITTEN_CSV.append(path)


def _cell(text: str) -> str:
    """A CSV value for the summary: numbers to 4 significant digits, long notes cut."""
    try:
        number = float(text)
    except ValueError:
        return text if len(text) <= 48 else text[:45] + "..."
    if number.is_integer() and abs(number) < 1e15:
        return f"{int(number):,}"
    return f"{number:.4g}"


def summary_table(path: Path) -> str:
    """One CSV file as an aligned text table: the columns that vary, the constant ones listed once."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        return f"{path}: no rows"
    columns = [c for c in rows[0] if c not in MACHINE_COLUMNS and any(r[c] for r in rows)]
    constant = [c for c in columns if len({r[c] for r in rows}) == 1] if len(rows) > 1 else []
    varying = [c for c in columns if c not in constant]
    shown = rows[:SUMMARY_ROWS]
    cells = [[_cell(r[c]) for c in varying] for r in shown]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(varying)]
    numeric = [all(_is_number(r[c]) or not r[c] for r in shown) for c in varying]

    def line(values):  # numbers right-aligned, text left-aligned
        return "  " + "  ".join(v.rjust(w) if num else v.ljust(w)
                                for v, w, num in zip(values, widths, numeric)).rstrip()

    lines = [f"{path} ({len(rows)} rows)"]
    if constant:
        lines.append("  every row: " + ", ".join(f"{c} = {_cell(rows[0][c])}" for c in constant))
    lines.append(line(varying))
    lines += [line(row) for row in cells]
    if len(rows) > len(shown):
        lines.append(f"  ... {len(rows) - len(shown)} more rows in the file")
    loads = [float(r["load_avg_1min"]) for r in rows if _is_number(r.get("load_avg_1min") or "")]
    if loads:
        lines.append(f"  load average (1 min) during the run: {min(loads):g} - {max(loads):g}")
    if rows[0].get("command"):
        lines.append(f"  command: {rows[0]['command']}")
    return "\n".join(lines)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def summary(paths: Sequence[Path]) -> str:
    """The summary ``winagg bench`` prints at the end: a table per CSV file written."""
    return "\n\n".join(["summary"] + [summary_table(Path(p)) for p in paths])


def progress(total: int, description: str):
    """A tqdm progress bar over an experiment's points, on stderr."""
    from ..extras import require

    tqdm = require("tqdm", "bench", "winagg bench").tqdm
    return tqdm(total=total, desc=description, unit="point", file=sys.stderr, dynamic_ncols=True)
