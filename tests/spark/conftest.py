"""One local Spark session per test process (each pytest-xdist worker has its own JVM)."""

import os
from pathlib import Path

import pytest

#: Test monoids live in tests/oracle.py. Spark ships the module to its Python workers
#: (addPyFile); the Python process that a streaming query's driver starts for
#: transformWithStateInPandas only sees PYTHONPATH, which the JVM inherits.
ORACLE = Path(__file__).resolve().parents[1] / "oracle.py"


def with_tests_on_pythonpath():
    """Put tests/ on PYTHONPATH for the Python processes Spark starts."""
    parts = [str(ORACLE.parent)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(parts))


@pytest.fixture(scope="session")
def spark():
    from winagg.spark import session

    with_tests_on_pythonpath()
    spark = session("local[2]", app_name="winagg-tests", conf={"spark.sql.shuffle.partitions": "4"})
    spark.sparkContext.addPyFile(str(ORACLE))
    yield spark
    spark.stop()
