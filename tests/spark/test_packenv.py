"""``winagg pack-env`` and a real standalone cluster: executors with a bare Python run winagg from the archive.

The cluster (a Master and two Workers from PySpark's own ``bin/spark-class``,
see ``standalone.py``) is started once per test module and stopped by process
group. Its workers' ``PYSPARK_PYTHON`` is a virtual environment with nothing
installed; every job ships the archive the documented PySpark way
(``spark.archives=ARCHIVE#environment``, ``PYSPARK_PYTHON=./environment/bin/python``).
"""

from __future__ import annotations

import fcntl
import json
import os
import random
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import standalone
from winagg.spark.packenv import (PackEnvError, check_shippable, pack_environment, required_distributions,
                                  shipped_conf, warm_up_environment)
from winagg.spark.pipeline import PipelineConfig, run

PROBE = Path(__file__).with_name("shipped_probe.py")
SITE = f"lib/python{sys.version_info.major}.{sys.version_info.minor}/site-packages"


@pytest.fixture(scope="session")
def archive(tmp_path_factory):
    """One archive for every test process of the run (built under a lock by the first that needs it),
    with the pipeline's compiled kernels (numba's cache), so the executors load them instead of compiling."""
    base = tmp_path_factory.getbasetemp()
    # Under xdist each worker's folder sits in the run's; without it the parent holds every run's
    # folders, and an archive of an older winagg found there was shipped to the executors.
    run_folder = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    shared = run_folder / "winagg-env"
    shared.mkdir(exist_ok=True)
    path = shared / "winagg-env.tar.gz"
    with open(shared / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not path.exists():
            facts = pack_environment(str(path), compress_level=1, numba_cache=True, workdir=str(shared))
            (shared / "facts.json").write_text(json.dumps(facts))
    return path


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    running = standalone.start(tmp_path_factory.mktemp("standalone"))
    yield running
    running.stop()


def test_the_warm_up_keeps_numba_s_cache_beside_winagg_even_with_numba_cache_dir_set():
    env = warm_up_environment({"NUMBA_CACHE_DIR": "/elsewhere", "PATH": "/bin"})
    assert env == {"PATH": "/bin", "NUMBA_DEBUG_CACHE": "1"}


def test_cache_files_outside_the_package_are_refused_by_name(tmp_path):
    package = str(tmp_path / "site" / "winagg")
    inside = f"{package}/__pycache__/driver.drive-1.py311.nbi"
    check_shippable({inside}, package)
    with pytest.raises(PackEnvError, match=r"outside winagg's package .*\(first: '/root/.cache/numba/k.nbi'\)"):
        check_shippable({inside, "/root/.cache/numba/k.nbi"}, package)
    with pytest.raises(PackEnvError, match="outside"):
        check_shippable({f"{package}-old/__pycache__/k.nbi"}, package)  # a sibling folder is not the package
    with pytest.raises(PackEnvError, match="no numba cache file"):
        check_shippable(set(), package)


def test_archive_holds_winagg_and_what_it_needs_but_not_pyspark(archive):
    with tarfile.open(archive) as tar:
        names = set(tar.getnames())
    assert "pyvenv.cfg" in names and "bin/python" in names
    for module in ("winagg/__init__.py", "winagg/spark/hopping.py", "numba/__init__.py", "numpy/__init__.py",
                   "pyarrow/__init__.py", "pandas/__init__.py", "llvmlite/__init__.py"):
        assert f"{SITE}/{module}" in names, module
    assert not any(n.startswith(f"{SITE}/pyspark/") for n in names)
    assert not any(n.endswith(".pth") and "editable" in n for n in names)  # a copy, not a link to src/
    assert {d.metadata["Name"] for d in required_distributions()} >= {"winagg", "numba", "numpy", "pyarrow"}
    with pytest.raises(PackEnvError, match="already exists"):
        pack_environment(str(archive))


def test_shipped_conf_points_the_executors_at_the_archive_and_links_the_driver_its_own_python(tmp_path, monkeypatch):
    archive = tmp_path / "env.tar.gz"
    archive.write_bytes(b"")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYSPARK_PYTHON", "unchanged")
    monkeypatch.setenv("PYSPARK_DRIVER_PYTHON", sys.executable)
    conf = shipped_conf(str(archive))
    assert conf == {"spark.archives": f"{archive.resolve()}#environment"}
    assert os.environ["PYSPARK_PYTHON"] == "./environment/bin/python"
    # a streaming query's planning runs ./environment/bin/python on the driver: this environment's
    assert (tmp_path / "environment").resolve() == Path(sys.prefix).resolve()
    assert shipped_conf(str(archive)) == conf  # again: the link stays

    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "environment").mkdir(parents=True)
    monkeypatch.chdir(elsewhere)
    with pytest.raises(PackEnvError, match="not a Python environment"):
        shipped_conf(str(archive))
    with pytest.raises(PackEnvError, match="does not exist"):
        shipped_conf(str(tmp_path / "missing.tar.gz"))


def test_executors_with_a_bare_python_run_winagg_from_the_shipped_environment(cluster, archive, tmp_path):
    result = tmp_path / "probe.json"
    done = subprocess.run([sys.executable, str(PROBE), cluster.master_url, str(archive), str(result)],
                          env=standalone.driver_environment(), capture_output=True, text=True, timeout=900,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-5000:] + cluster.logs()
    report = json.loads(result.read_text())
    assert report["executors"] == 2
    for task in report["tasks"]:
        shipped = str(Path(task["cwd"]) / "environment")
        assert task["executable"].startswith(shipped) and task["prefix"].startswith(shipped), task
        for module in ("winagg", "numba", "numpy"):
            assert task[module].startswith(shipped + "/lib/"), (module, task)
        # the worker's own Python is the bare one, and it cannot import numpy
        assert task["worker_python"] == str(cluster.bare_python)
        assert task["worker_python_imports_numpy"] is False
        # the pipeline's kernels ran from the shipped cache: nothing compiled, nothing written
        assert task["kernels_cached"] > 0 and task["kernels_compiled"] == [], task


@pytest.fixture(scope="module")
def flights_csv(tmp_path_factory):
    """120 flights of two airports over a day, some delays missing, in arrival order."""
    rng = random.Random(5)
    start = pd.Timestamp("2013-03-01 05:00")
    rows = []
    for i in range(120):
        delay = None if rng.random() < 0.05 else float(rng.randrange(-10, 180))
        departure = None if delay is None else start + pd.Timedelta(minutes=10 * i + delay)
        rows.append({"flight": i, "origin": rng.choice(["JFK", "LGA"]), "tailnum": f"N{rng.randrange(30)}",
                     "dep_delay": delay,
                     "departure": None if departure is None else departure.strftime("%Y-%m-%d %H:%M:%S")})
    path = tmp_path_factory.mktemp("cluster-input") / "flights.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def _pipeline_on_cluster(cluster, archive, csv, out, *extra):
    command = [sys.executable, "-m", "winagg.cli", "pipeline", "--master", cluster.master_url, "--env-archive",
               str(archive), "--input", str(csv), "--output", str(out), "--by", "origin", "--no-progress", *extra]
    done = subprocess.run(command, env=standalone.driver_environment(), capture_output=True, text=True, timeout=1200,
                          cwd=out.parent)
    assert done.returncode == 0, done.stderr[-5000:] + cluster.logs()
    assert f"on {cluster.master_url}" in done.stdout
    return pd.read_parquet(out / "by_origin").sort_values("flight").reset_index(drop=True)


def test_pipeline_on_the_cluster_batch_and_stream_gives_the_local_rows(spark, cluster, archive, flights_csv,
                                                                      tmp_path):
    run(PipelineConfig(input=str(flights_csv), output=str(tmp_path / "local"), groupings=("origin",),
                       progress=False))
    local = pd.read_parquet(tmp_path / "local" / "by_origin").sort_values("flight").reset_index(drop=True)
    on_cluster = _pipeline_on_cluster(cluster, archive, flights_csv, tmp_path / "batch")
    # three micro-batches (the default replay, 52 files read 8 at a time, makes seven): state still
    # crosses batches and executors, in less of the suite's time
    streamed = _pipeline_on_cluster(cluster, archive, flights_csv, tmp_path / "stream", "--stream",
                                    "--replay-files", "9", "--files-per-batch", "4")
    columns = [c for c in local.columns if c.endswith(("_1h", "_1d"))]
    assert len(columns) == 10 and len(local) > 100
    for result in (on_cluster, streamed):
        assert result["flight"].tolist() == local["flight"].tolist()
        for column in columns:
            np.testing.assert_allclose(result[column].astype(float), local[column].astype(float), rtol=1e-9,
                                       err_msg=column)
