"""A job that reports, from every executor, which Python ran it and where winagg, numba and numpy came from.

usage: python shipped_probe.py MASTER ARCHIVE RESULT_JSON

The driver ships ARCHIVE (``winagg pack-env``) the documented PySpark way
(spark.archives=ARCHIVE#environment, PYSPARK_PYTHON=./environment/bin/python);
each task also asks the worker's own Python (its PYSPARK_PYTHON) to import
numpy, and runs the pipeline's kernels, reporting any it had to compile.
"""

import json
import sys
from pathlib import Path


def probe(index):
    import os
    import subprocess
    import sys

    import numba
    import numpy as np
    import winagg

    from pathlib import Path

    from winagg.spark.pipeline import PipelineConfig, warm_up

    worker_python = os.environ.get("PYSPARK_PYTHON", "")
    bare = subprocess.run([worker_python, "-c", "import numpy"], capture_output=True) if worker_python else None
    # the pipeline's kernels, run here: a kernel compiled (not loaded) writes a new cache file
    package = Path(winagg.__file__).parent
    before = {p: p.stat().st_mtime_ns for p in package.rglob("__pycache__/*.nbc")}
    warm_up(PipelineConfig(stream=False))
    warm_up(PipelineConfig(stream=True))
    written = [str(p) for p in package.rglob("__pycache__/*.nbc") if before.get(p) != p.stat().st_mtime_ns]
    return {"task": index, "cwd": os.getcwd(), "executable": sys.executable, "prefix": sys.prefix,
            "winagg": winagg.__file__, "numba": numba.__file__, "numpy": np.__file__,
            "worker_python": worker_python, "worker_python_imports_numpy": bare is not None and bare.returncode == 0,
            "kernels_cached": len(before), "kernels_compiled": written}


def main(master, archive, result):
    from winagg.spark import session
    from winagg.spark.packenv import shipped_conf

    spark = session(master, app_name="winagg shipped-environment probe",
                    conf={**shipped_conf(archive), "spark.executor.cores": "1"})
    reports = spark.sparkContext.parallelize(range(2), 2).map(probe).collect()
    executors = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1  # less the driver
    Path(result).write_text(json.dumps({"tasks": reports, "executors": executors}))
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:4])
