"""The C++ reference's benchmark drivers: their sources, one build of each, one run.

The reference is IBM's sliding-window-aggregators (Apache-2.0), the papers' own
artifact: https://github.com/IBM/sliding-window-aggregators. Its ``cpp/`` folder
holds one header per algorithm, the benchmark drivers and a Makefile. winagg
does not ship it: the user names a checkout's ``cpp/`` folder with
``--reference-src``. Each driver is built once with the reference's own Makefile
(``g++ -O3``) in a cache folder outside the project, ``$WINAGG_REFERENCE_BIN``
(default ``~/.cache/winagg-reference``), in a subfolder named after a digest of
the sources, so that another checkout or an edited one builds afresh. The
drivers then run as subprocesses and report the time of their timed rounds.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Optional, Sequence

#: Where the reference's sources are published.
SOURCE_URL = "https://github.com/IBM/sliding-window-aggregators"
#: Files that tell a checkout of the reference's ``cpp/`` folder from any other folder.
MARKERS = ("Makefile", "src/benchmark_core.h")
#: The environment variable naming the cache folder of the built drivers.
CACHE_VARIABLE = "WINAGG_REFERENCE_BIN"
#: The reference's drivers: Makefile target -> the binary it writes under ``bin/``.
DRIVERS = {
    "benchmark_driver": "benchmark_driver",
    "ooo_benchmark": "ooo_benchmark_driver",
    "bulk_evict_benchmark": "bulk_evict_benchmark_driver",
    "bulk_evict_insert_benchmark": "bulk_evict_insert_benchmark_driver",
}
#: What a driver prints before the seconds of its timed rounds.
RUNTIME_PREFIX = "core runtime:"


class ReferenceError(RuntimeError):
    """The reference could not be found, built or run; the message says what to do."""


def where_to_get() -> str:
    return f"the cpp/ folder of a checkout of {SOURCE_URL} (git clone {SOURCE_URL}.git)"


def source_folder(path: Optional[str]) -> Path:
    """The reference's ``cpp/`` folder given as ``--reference-src``, checked to hold its sources."""
    if not path:
        raise ReferenceError(f"--reference-src is required: the path of {where_to_get()}")
    folder = Path(path).expanduser()
    if not folder.is_dir():
        raise ReferenceError(f"--reference-src: no folder at {path}; give the path of {where_to_get()}")
    missing = [marker for marker in MARKERS if not (folder / marker).is_file()]
    if missing:
        raise ReferenceError(f"--reference-src: {path} has no {' or '.join(missing)}, so it is not the "
                             f"reference's sources; give the path of {where_to_get()}")
    return folder.resolve()


def sources_digest(folder: Path) -> str:
    """A digest of the Makefile and every file under ``src/``: names and contents."""
    digest = hashlib.sha256()
    for path in [folder / "Makefile", *sorted(p for p in (folder / "src").rglob("*") if p.is_file())]:
        digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def cache_folder(folder: Path) -> Path:
    """Where the drivers built from the sources in ``folder`` live."""
    home = Path(os.environ.get(CACHE_VARIABLE) or Path.home() / ".cache" / "winagg-reference")
    return home.expanduser() / sources_digest(folder)


def driver(folder: Path, target: str) -> Path:
    """The binary of Makefile ``target``, built from the sources in ``folder`` unless it is in the cache."""
    build = cache_folder(folder)
    binary = build / "bin" / DRIVERS[target]
    if binary.is_file():
        return binary
    missing = [tool for tool in ("g++", "make") if shutil.which(tool) is None]
    if missing:
        raise ReferenceError(f"building the reference's {DRIVERS[target]} needs {' and '.join(missing)} "
                             "(e.g. apt-get install g++ make)")
    build.mkdir(parents=True, exist_ok=True)
    shutil.copy2(folder / "Makefile", build / "Makefile")
    shutil.copytree(folder / "src", build / "src", dirs_exist_ok=True)
    print(f"building the reference's {DRIVERS[target]} with g++ -O3 in {build} (minutes) ...",
          file=sys.stderr, flush=True)
    done = subprocess.run(["make", "-C", str(build), target], capture_output=True, text=True)
    if done.returncode != 0 or not binary.is_file():
        raise ReferenceError(f"make {target} in {build} failed: {done.stderr[-2000:]}")
    return binary


def driver_or_report(reference_src: Optional[str], target: str, experiment: str) -> Optional[Path]:
    """:func:`driver` of the sources at ``reference_src``, or None after printing why there is none
    (the experiment then exits with status 2)."""
    try:
        return driver(source_folder(reference_src), target)
    except ReferenceError as error:
        print(f"winagg bench {experiment}: {error}", file=sys.stderr)
        return None


def core_seconds(binary: Path, arguments: Sequence) -> float:
    """Seconds of the timed rounds of one run of ``binary`` with ``arguments``, as the driver reports them."""
    done = subprocess.run([str(binary), *map(str, arguments)], capture_output=True, text=True)
    for line in done.stdout.splitlines():
        if line.startswith(RUNTIME_PREFIX):
            return float(line[len(RUNTIME_PREFIX):])
    command = " ".join([binary.name, *map(str, arguments)])
    raise ReferenceError(f"{command} reported no '{RUNTIME_PREFIX}' (exit {done.returncode}): "
                         f"{(done.stderr or done.stdout)[-300:]!r}")
