"""``winagg pack-env``: a packed Python environment for the executors of a Spark cluster.

A cluster's workers need not have winagg, numba or numpy: the driver ships an
environment with the job, the way PySpark documents it (venv-pack)::

    winagg pack-env -o winagg-env.tar.gz
    # then, in the driver (or winagg pipeline --env-archive winagg-env.tar.gz):
    os.environ["PYSPARK_PYTHON"] = "./environment/bin/python"
    SparkSession.builder.config("spark.archives", "winagg-env.tar.gz#environment")

Spark unpacks the archive in every executor's working directory as
``environment``; its ``bin/python`` runs the tasks.

The archive is built from a fresh virtual environment holding winagg (a copy
of the package, also when it is installed in editable mode, which venv-pack
refuses to pack) and the installed distributions it needs: its own
requirements and those of its ``spark`` extra, recursively, copied file by
file from the current environment. Left out: PySpark itself (every Spark
installation puts its own ``python/lib/pyspark.zip`` on the executors' path)
and venv-pack. As venv-pack documents, ``bin/python`` stays a link to the
base interpreter this environment was made from (``sys.base_prefix``): the
workers need that Python at the same path (``--python-prefix`` names another).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import venv
from importlib import metadata
from pathlib import Path
from typing import Iterable, Optional

from ..core.errors import WinaggError

#: Distributions an executor does not need: Spark brings its own PySpark; venv-pack only packs.
LEFT_OUT = frozenset({"pyspark", "venv-pack"})


class PackEnvError(WinaggError, RuntimeError):
    """The environment cannot be packed (a missing distribution, an existing output...)."""


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def required_distributions(root: str = "winagg", extras: Iterable[str] = ("spark",),
                           left_out: Iterable[str] = LEFT_OUT) -> list:
    """The installed distributions ``root[extras]`` needs, recursively (``root`` first), less ``left_out``."""
    from packaging.requirements import Requirement

    skip = {_canonical(n) for n in left_out}
    wanted, seen, queue = [], set(), [(root, tuple(extras))]
    while queue:
        name, with_extras = queue.pop(0)
        key = _canonical(name)
        if key in seen or key in skip:
            continue
        seen.add(key)
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            raise PackEnvError(f"{name!r} is required but not installed in {sys.prefix}") from None
        wanted.append(dist)
        for text in dist.requires or ():
            requirement = Requirement(text)
            environments = [{"extra": e} for e in with_extras] or [{"extra": ""}]
            if requirement.marker is None or any(requirement.marker.evaluate(env) for env in environments):
                queue.append((requirement.name, tuple(requirement.extras)))
    return wanted


def _site_packages(prefix: Path) -> Path:
    return prefix / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"


def _copy_distribution(dist, target: Path) -> int:
    """Copy the files a distribution installed into site-packages; returns bytes copied."""
    copied = 0
    for entry in dist.files or ():
        if entry.parts[0] == ".." or entry.suffix == ".pyc":  # scripts in bin/; bytecode is remade
            continue
        source = Path(dist.locate_file(entry))
        if not source.is_file():
            continue
        destination = target / entry
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, destination)  # keeps modification times
        copied += source.stat().st_size
    return copied


#: What the kernels of ``winagg pipeline`` (batch and stream) are compiled by, in a fresh process.
WARM_UP = ("from winagg.spark.pipeline import PipelineConfig, warm_up; "
           "warm_up(PipelineConfig(stream=False)); warm_up(PipelineConfig(stream=True))")
_CACHE_LINE = re.compile(r"\[cache\] (?:index|data) (?:loaded from|saved to) '([^']+)'")


def pipeline_cache_files() -> set:
    """numba's cache files (index and data) of the pipeline's kernels, compiled here first if missing.

    A fresh process runs the pipeline's warm-up with NUMBA_DEBUG_CACHE=1, which
    names every cache file it loads or writes: just those ship, not every kernel
    this machine ever compiled.
    """
    done = subprocess.run([sys.executable, "-c", WARM_UP], env=warm_up_environment(os.environ),
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise PackEnvError(f"compiling the pipeline's kernels failed:\n{done.stderr[-3000:]}")
    files = {os.path.realpath(path) for path in _CACHE_LINE.findall(done.stdout + done.stderr)}
    check_shippable(files, os.path.realpath(Path(__file__).parents[1]))
    return files


def warm_up_environment(environ) -> dict:
    """The warm-up's environment: numba names its cache files, and keeps them beside winagg's sources.

    A ``NUMBA_CACHE_DIR`` would send them elsewhere, where the archive does not look, and
    executors would compile everything again; it is dropped for the warm-up alone.
    """
    env = {k: v for k, v in environ.items() if k != "NUMBA_CACHE_DIR"}
    env["NUMBA_DEBUG_CACHE"] = "1"
    return env


def check_shippable(files: set, package: str) -> None:
    """PackEnvError unless every cache file lies under winagg's ``package`` folder, which the archive copies."""
    if not files:
        raise PackEnvError("the pipeline's warm-up named no numba cache file, so there are no kernels to ship")
    outside = sorted(f for f in files if not f.startswith(package.rstrip(os.sep) + os.sep))
    if outside:
        raise PackEnvError(f"numba cached {len(outside)} of the pipeline's kernels outside winagg's package "
                           f"{package!r} (first: {outside[0]!r}), so the archive cannot ship them; numba does "
                           f"this when the package's folder is not writable: pack from an environment whose "
                           f"winagg is installed in a writable folder, or without --numba-cache")


def _copy_winagg(target: Path, cache_files: set) -> int:
    """The winagg package as files (whether installed editable or not), with ``cache_files`` of its caches."""
    import winagg

    source = Path(winagg.__file__).parent

    def ignore(folder, names):
        if Path(folder).name == "__pycache__":
            return [n for n in names if os.path.realpath(os.path.join(folder, n)) not in cache_files]
        return [n for n in names if n == "__pycache__" and not cache_files]

    shutil.copytree(source, target / "winagg", ignore=ignore, dirs_exist_ok=True)
    return sum(p.stat().st_size for p in (target / "winagg").rglob("*") if p.is_file())


def pack_environment(output: str, *, extras: Iterable[str] = ("spark",), compress_level: int = 4,
                     numba_cache: bool = False, python_prefix: Optional[str] = None, force: bool = False,
                     workdir: Optional[str] = None) -> dict:
    """Build the archive ``output`` (``.tar.gz``); returns facts: path, bytes, seconds, distributions.

    ``numba_cache`` also ships the compiled kernels of ``winagg pipeline`` (numba's
    disk cache next to winagg's sources, compiled here first if missing):
    executors on the same kind of processor load them instead of compiling them
    in every new application. numba checks each cache against its source file's
    modification time, which the copy and the archive keep.
    """
    import venv_pack

    started = time.perf_counter()
    out = Path(output).resolve()
    if out.exists() and not force:
        raise PackEnvError(f"output {str(out)!r} already exists (force=True / --force replaces it)")
    if not out.name.endswith((".tar.gz", ".tgz", ".zip", ".tar")):
        raise PackEnvError(f"output {str(out)!r} must end in .tar.gz, .tgz, .tar or .zip")
    distributions = [d for d in required_distributions(extras=extras) if _canonical(d.metadata["Name"]) != "winagg"]
    cache_files = pipeline_cache_files() if numba_cache else set()
    with tempfile.TemporaryDirectory(prefix="winagg-env-", dir=workdir) as scratch:
        prefix = Path(scratch) / "environment"
        venv.EnvBuilder(with_pip=False, symlinks=True).create(prefix)
        site = _site_packages(prefix)
        copied = sum(_copy_distribution(d, site) for d in distributions)
        copied += _copy_winagg(site, cache_files)
        if out.exists():
            out.unlink()
        venv_pack.pack(prefix=str(prefix), output=str(out), compress_level=compress_level,
                       python_prefix=python_prefix)
    return {"path": str(out), "bytes": out.stat().st_size, "installed_bytes": copied, "cache_files": len(cache_files),
            "seconds": time.perf_counter() - started,
            "distributions": sorted(f"{d.metadata['Name']}=={d.version}" for d in distributions)}


#: The folder name the archive is unpacked as, in each executor's working directory (and linked on the driver).
ALIAS = "environment"


def _link_driver_environment(folder: Path) -> None:
    """Make ``folder/ALIAS/bin/python`` this process's own Python environment.

    A streaming ``transformWithStateInPandas`` query runs its processor once in a
    Python process on the driver, at planning, with the executors' interpreter
    path; relative to the driver's working directory that path must exist too.
    """
    link = folder / ALIAS
    target = Path(sys.prefix)
    if link.is_symlink():
        if Path(os.readlink(link)) == target:
            return
        link.unlink()
    elif link.exists():
        if (link / "bin" / "python").exists():
            return  # an unpacked environment the user put there
        raise PackEnvError(f"{str(link)!r} exists and is not a Python environment: the driver needs that name "
                           "for the shipped environment's interpreter; run from another directory")
    link.symlink_to(target, target_is_directory=True)


def shipped_conf(archive: str) -> dict:
    """Spark settings that run the executors' Python from ``archive`` (made by :func:`pack_environment`).

    Call it before the session starts. ``PYSPARK_PYTHON`` is set in this
    process (PySpark reads it when the SparkContext starts) to
    ``./environment/bin/python``, where Spark unpacks the archive in every
    executor's working directory. The driver keeps its own interpreter; in its
    working directory, a link ``environment`` to this environment serves the
    Python process that Spark starts on the driver to plan a streaming query.
    """
    path = Path(archive)
    if not path.is_file():
        raise PackEnvError(f"environment archive {archive!r} does not exist (make one with `winagg pack-env`)")
    _link_driver_environment(Path.cwd())
    os.environ["PYSPARK_DRIVER_PYTHON"] = os.environ.get("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ["PYSPARK_PYTHON"] = f"./{ALIAS}/bin/python"
    return {"spark.archives": f"{path.resolve()}#{ALIAS}"}
