"""Compile winagg's commonest kernels into numba's disk cache before their first call.

A kernel is compiled once per machine, Python and numba version, then loaded by
every later process (a load reads the machine code back, where compiling FiBA's
or a Window's kernel runs it through numba and LLVM). The package build runs this
over the built package (``setup.py``), so ``pip install .`` installs the kernels beside
their sources, and ``winagg warm`` runs it in any environment.

Why a cache made at build time stays valid: numba files a kernel under its
source file's folder (``__pycache__``) with an index that holds the sha256 of
that source file and numba's version, and looks an entry up by the kernel's
signature, the CPU's name and features, and :func:`winagg.core.jitcache.function_digest`
(the code of the kernel and of every compiled function it calls). Installed
files keep their content, so the index still matches. Another CPU, another
numba or Python version, or an edited source misses the cache: that kernel is
compiled on its first call as it would be without the cache, and saved (where
the folder is writable). ``NUMBA_CACHE_DIR`` makes numba look elsewhere, so the
installed kernels are not used then.

Each task (a group's kernels for one aggregation) compiles in its own process,
``jobs`` at a time; processes writing one function's index at the same moment
can lose each other's entry, so a last pass over every task loads what is
there and compiles what was lost.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, Iterable, List, Optional

import numpy as np

#: Aggregations whose whole-array ``winagg.rolling`` kernels are compiled (float64 and int64 rows, sorted times).
ROLLING = ("sum", "mean", "std", "var", "max", "min", "count", "geomean", "bloom")
#: Aggregations whose out-of-order kernels (FiBA's, for unsorted times in ``rolling`` and for a
#: time ``Window``) are compiled: each takes tens of seconds, so only the commonest.
OUT_OF_ORDER = ("sum", "max")


def _rolling(agg: str) -> None:
    import winagg

    times = np.array([0, 1, 1, 3], np.int64)
    for values in (np.array([1.0, np.nan, 2.5, 4.0]), np.array([1, 2, 3, 4], np.int64)):
        winagg.rolling(values, 2, agg)
        winagg.rolling(values, 2, agg, times=times)


def _unsorted_times(agg: str) -> None:
    import winagg

    winagg.rolling(np.array([1.0, 2.0, np.nan, 4.0]), 2, agg, times=np.array([3, 0, 2, 1], np.int64))


def _time_window(agg: str) -> None:
    import winagg

    # one kernel serves every slide and lateness of a float64 Window over one aggregation
    window = winagg.Window(agg, size=10, slide=5)
    window.push_batch(np.array([3, 0, 12, 1], np.int64), np.array([1.0, 2.0, 3.0, 4.0]))
    window.flush()


def _pipeline(_: str) -> None:
    from .spark.pipeline import PipelineConfig, warm_up

    warm_up(PipelineConfig(stream=False))
    warm_up(PipelineConfig(stream=True))


def _has_spark() -> bool:
    import importlib.util

    return all(importlib.util.find_spec(name) is not None for name in ("pyspark", "pyarrow"))


#: Group -> (what it compiles, the function compiling one aggregation's kernels, the default
#: aggregations, whether this environment can compile it). A task is ``group:aggregation``.
GROUPS: Dict[str, tuple] = {  # the longest first: the processes end together
    "window": ("winagg.Window over event times", _time_window, OUT_OF_ORDER, lambda: True),
    "fiba": ("winagg.rolling over unsorted times (FiBA)", _unsorted_times, OUT_OF_ORDER, lambda: True),
    "pipeline": ("the kernels of `winagg pipeline` (with the spark extra)", _pipeline, ("all",), _has_spark),
    "rolling": ("winagg.rolling over rows and sorted times", _rolling, ROLLING, lambda: True),
}


def tasks(groups: Optional[Iterable[str]] = None, aggs: Optional[Iterable[str]] = None) -> List[str]:
    """``group:aggregation`` for ``groups`` (default: those this environment can compile) and ``aggs``
    (default: each group's own)."""
    names = [g for g, (*_, possible) in GROUPS.items() if possible()] if groups is None else list(groups)
    for name in names:
        if name not in GROUPS:
            raise ValueError(f"warm-up group {name!r} is unknown; choose from {', '.join(GROUPS)}")
    chosen = []
    for name in names:
        own = GROUPS[name][2]
        chosen += [f"{name}:{agg}" for agg in (own if aggs is None or name == "pipeline" else aggs)]
    return chosen


def compile_task(task: str) -> float:
    """Compile (or load) one ``group:aggregation``'s kernels in this process; returns the seconds it took."""
    group, _, agg = task.partition(":")
    if group not in GROUPS or not agg:
        raise ValueError(f"warm-up task {task!r} is not GROUP:AGGREGATION with GROUP one of {', '.join(GROUPS)}")
    started = time.perf_counter()
    GROUPS[group][1](agg)
    return time.perf_counter() - started


def warm(names: Iterable[str], jobs: Optional[int] = None, python: str = sys.executable,
         env: Optional[dict] = None) -> Dict[str, float]:
    """Compile the :func:`tasks` ``names``, each in a process ``python -m winagg.warmup TASK`` with
    ``env`` (default: this process's), ``jobs`` at a time (default: the cores).

    Returns each task's seconds; raises RuntimeError naming a task whose process failed.
    """
    names = list(names)
    jobs = jobs or os.cpu_count() or 1
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")

    def run(chosen):
        done = subprocess.run([python, "-m", "winagg.warmup", *chosen], env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"compiling {' '.join(chosen)} failed:\n{done.stderr[-3000:]}")
        return {task: float(seconds) for task, seconds in (line.rsplit("=", 1) for line in done.stdout.split())}

    seconds: Dict[str, float] = {}
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for result in pool.map(run, [[task] for task in names]):
            seconds.update(result)
    if jobs > 1 and len(names) > 1:
        run(names)  # entries lost to concurrent writes of one index are compiled again here
    return seconds


def main(argv: Optional[list] = None) -> int:
    """``python -m winagg.warmup TASK...``: compile those tasks here and print ``task=seconds``;
    ``python -m winagg.warmup --all`` compiles every default task, a process per task."""
    argv = sys.argv[1:] if argv is None else argv
    if argv == ["--all"]:
        seconds = warm(tasks())
        print(f"winagg: {len(seconds)} warm-up tasks compiled in {sum(seconds.values()):.0f} s of processes")
        return 0
    for task in argv:
        print(f"{task}={compile_task(task):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
