"""A Spark session set up for winagg: same Python in the workers, Arrow, RocksDB state."""

from __future__ import annotations

import os
import sys
from typing import Optional

#: Settings every winagg session gets; ``session(conf=...)`` can override them.
DEFAULT_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    # transformWithStateInPandas keeps its state in RocksDB.
    "spark.sql.streaming.stateStore.providerClass":
        "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
    "spark.sql.shuffle.partitions": "8",
}


def session(master: Optional[str] = None, app_name: str = "winagg", conf: Optional[dict] = None,
            log_level: str = "ERROR"):
    """A SparkSession on ``master`` (default ``local[*]``) whose Python workers run this interpreter.

    Workers must import the same winagg, numba and numpy as the driver, so
    ``PYSPARK_PYTHON`` is set to this process's Python unless already set.
    An existing session is reused by Spark (its master cannot change then).
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from ..extras import require

    SparkSession = require("pyspark.sql", "spark", "winagg.spark").SparkSession

    builder = SparkSession.builder.master(master or "local[*]").appName(app_name)
    for key, value in {**DEFAULT_CONF, **(conf or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(log_level)
    return spark
