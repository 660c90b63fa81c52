"""One local Spark session per test process (each pytest-xdist worker has its own JVM)."""

from pathlib import Path

import pytest

#: Test monoids live in tests/oracle.py; Spark ships the module to its Python workers.
ORACLE = str(Path(__file__).resolve().parents[1] / "oracle.py")


@pytest.fixture(scope="session")
def spark():
    from winagg.spark import session

    spark = session("local[2]", app_name="winagg-tests", conf={"spark.sql.shuffle.partitions": "4"})
    spark.sparkContext.addPyFile(ORACLE)
    yield spark
    spark.stop()
