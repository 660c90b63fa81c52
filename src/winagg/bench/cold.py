"""Experiment ``cold``: the first call in a fresh installation.

A new virtual environment gets ``pip install SOURCE`` (timed: the install time
is reported beside the calls, since the package build compiles the commonest
kernels, :mod:`winagg.warmup`). Then each case runs in a new process of that
environment, which finds the installation as ``pip`` left it (numba cache
files that an earlier case wrote or changed are put back as installed): the seconds of
``import winagg``, of the first call, and of a second call (warm) on
``--cold-rows`` items (default 100,000). ``NUMBA_CACHE_DIR`` is unset for the
cases, so numba uses the cache beside the installed sources.

Cases: ``winagg.rolling(x, 1000, AGG)`` for max, mean, std, geomean and a
Bloom filter (integers); ``rolling(x, 100, "sum", times=...)`` over unsorted
times (FiBA); ``Window("max", size=10, slide=5).push_batch(times, x)`` over
times slightly out of order; ``make("daba_lite", "max")`` with a bulk insert
of every item and a query (per-item Python). Targets: a default-path first
call under 1 s, FiBA and the Window under 3 s.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import venv
from pathlib import Path

from . import common

NAME = "cold"
DESCRIPTION = "first call after `pip install .` in a fresh environment, each case in a new process"

#: Case -> (the timed statement, the first call's target in seconds).
CASES = {
    "max": ("winagg.rolling(x, 1000, 'max')", 1.0),
    "mean": ("winagg.rolling(x, 1000, 'mean')", 1.0),
    "std": ("winagg.rolling(x, 1000, 'std')", 1.0),
    "geomean": ("winagg.rolling(positive, 1000, 'geomean')", 1.0),
    "bloom": ("winagg.rolling(integers, 1000, 'bloom')", 1.0),
    "fiba": ("winagg.rolling(x, 100, 'sum', times=unsorted)", 3.0),
    "window": ("winagg.Window('max', size=10, slide=5).push_batch(nearly_sorted, x)", 3.0),
    "daba_lite": ("a = winagg.make('daba_lite', 'max'); a.bulk_insert(x); a.query()", 1.0),
}
DEFAULTS = dict(cold_cases=tuple(CASES), cold_rows=100_000, cold_source=".", cold_venv=None, out="results/cold")
QUICK = dict(cold_cases=("max", "daba_lite"), cold_rows=10_000)
COLUMNS = ("case", "statement", "import_seconds", "first_call_seconds", "second_call_seconds", "target_seconds",
           "met", "install_seconds", "rows", "load_avg_1min", "cpu", "cores", "python", "numba", "numpy",
           "platform", "command")

#: Run in the fresh environment: inputs made before the clock starts, then import, first and second call.
CASE_SCRIPT = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    n, statement = int(sys.argv[1]), sys.argv[2]
    rng = np.random.default_rng(7)
    x = rng.normal(size=n)
    positive = np.exp(x)
    integers = rng.integers(0, 10 * n, n)
    unsorted = np.arange(n) * 10 + rng.integers(0, 1000, n)
    nearly_sorted = np.arange(n) + rng.integers(0, 3, n)
    started = time.perf_counter()
    import winagg
    imported = time.perf_counter()
    exec(statement)
    first = time.perf_counter()
    exec(statement)
    second = time.perf_counter()
    print(json.dumps({"import_seconds": imported - started, "first_call_seconds": first - imported,
                      "second_call_seconds": second - first}))
""")


def add_arguments(group) -> None:
    """The options only this experiment takes."""
    group.add_argument("--cold-cases", nargs="+", metavar="CASE", help=f"cases to run (default: {' '.join(CASES)})")
    group.add_argument("--cold-rows", type=int, metavar="N", help="items per call (default 100,000)")
    group.add_argument("--cold-source", metavar="DIR",
                       help="the winagg source tree to install (default: the current directory)")
    group.add_argument("--cold-venv", metavar="DIR",
                       help="an environment made by an earlier run, used as it is (no install is timed)")


def _settings(args) -> dict:
    get = lambda name: common.option(args, name, DEFAULTS, QUICK)  # noqa: E731
    cfg = dict(cases=common.names(get("cold_cases")), rows=get("cold_rows"), source=get("cold_source"),
               venv=get("cold_venv"), out=get("out"), quick=bool(args.quick))
    unknown = [c for c in cfg["cases"] if c not in CASES]
    if unknown:
        raise SystemExit(f"--cold-cases: unknown case {unknown[0]!r}; choose from {', '.join(CASES)}")
    if cfg["rows"] < 1:
        raise SystemExit(f"--cold-rows must be at least 1, got {cfg['rows']}")
    if cfg["venv"] is None and not (Path(cfg["source"]) / "pyproject.toml").is_file():
        raise SystemExit(f"--cold-source: {cfg['source']!r} holds no pyproject.toml (a winagg source tree)")
    return cfg


def _copy_source(source: Path, target: Path) -> None:
    """The files git tracks in ``source`` (all of it outside git), so no build folder or cache goes along."""
    listed = subprocess.run(["git", "-C", str(source), "ls-files", "-z"], capture_output=True)
    if listed.returncode != 0:
        shutil.copytree(source, target, ignore=shutil.ignore_patterns(".venv", "build", "__pycache__", ".git"),
                        dirs_exist_ok=True)
        return
    for name in filter(None, listed.stdout.decode().split("\0")):
        path = source / name
        if path.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target / name)


def install(source: Path, environment: Path) -> float:
    """Make ``environment`` and ``pip install`` a copy of ``source`` into it; returns the install's seconds
    (environment made, copy and build included). The source's constraints.txt, when it has one, pins the
    versions of the install and of the build's own environment."""
    with tempfile.TemporaryDirectory(prefix="winagg-source-") as copy:
        _copy_source(source, Path(copy))
        env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
        pins = Path(copy) / "constraints.txt"
        if pins.is_file():
            env["PIP_CONSTRAINT"] = " ".join(filter(None, [env.get("PIP_CONSTRAINT", ""), str(pins)]))
        started = time.perf_counter()
        venv.create(environment, with_pip=True)
        done = subprocess.run([str(_python(environment)), "-m", "pip", "install", "-q", copy], env=env,
                              capture_output=True, text=True)
        seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"pip install {source} failed:\n{done.stderr[-3000:]}")
    return seconds


def _python(environment: Path) -> Path:
    return environment / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _package_folder(environment: Path) -> Path:
    done = subprocess.run([str(_python(environment)), "-c", "import winagg, os; print(os.path.dirname(winagg.__file__))"],
                          capture_output=True, text=True, check=True, env=_case_environment())
    return Path(done.stdout.strip())


def _cache_files(package: Path) -> dict:
    """numba's cache files under ``package``: path -> content."""
    return {p: p.read_bytes() for pattern in ("*.nbi", "*.nbc") for p in package.rglob(pattern)}


def _restore(package: Path, installed: dict) -> None:
    """Put numba's cache under ``package`` back as it was installed: files a case wrote go, files it changed
    (an index given a new entry) get their installed content back."""
    for path, content in _cache_files(package).items():
        if path not in installed:
            path.unlink()
        elif content != installed[path]:
            path.write_bytes(installed[path])


def _case_environment() -> dict:
    return {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "PYTHONPATH")}


def run_case(environment: Path, case: str, rows: int) -> dict:
    """One case in a new process of ``environment``: its import, first and second call's seconds."""
    done = subprocess.run([str(_python(environment)), "-c", CASE_SCRIPT, str(rows), CASES[case][0]],
                          capture_output=True, text=True, env=_case_environment(), cwd=tempfile.gettempdir())
    if done.returncode != 0:
        raise SystemExit(f"case {case} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(args) -> int:
    """Install, run every case in a new process, write cold.csv into --out."""
    cfg = _settings(args)
    extra = dict(common.machine_info(), command=common.command_line(NAME, {
        "cold_cases": cfg["cases"], "cold_rows": cfg["rows"], "cold_source": cfg["source"],
        "cold_venv": cfg["venv"], "quick": cfg["quick"], "out": cfg["out"]}))
    with tempfile.TemporaryDirectory(prefix="winagg-cold-") as scratch:
        environment = Path(cfg["venv"] or Path(scratch) / "venv")
        install_seconds = "" if cfg["venv"] else round(install(Path(cfg["source"]).resolve(), environment), 1)
        package = _package_folder(environment)
        installed = None if cfg["venv"] else _cache_files(package)  # an environment given is used as it is
        rows = [dict(case="install", statement=f"pip install {cfg['source']}", install_seconds=install_seconds,
                     rows="", load_avg_1min=common.load_average(), **extra)]
        with common.progress(len(cfg["cases"]), NAME) as bar:
            for case in cfg["cases"]:
                bar.set_postfix_str(case)
                if installed is not None:
                    _restore(package, installed)  # each case meets the installation as pip left it
                seconds = run_case(environment, case, cfg["rows"])
                target = CASES[case][1]
                rows.append(dict(case=case, statement=CASES[case][0], target_seconds=target,
                                 met=seconds["first_call_seconds"] < target, install_seconds=install_seconds,
                                 rows=cfg["rows"], load_avg_1min=common.load_average(),
                                 **{k: round(v, 3) for k, v in seconds.items()}, **extra))
                bar.update(1)
    common.write_csv(Path(cfg["out"]) / "cold.csv", rows, COLUMNS)
    return 0
