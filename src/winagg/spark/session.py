"""A Spark session set up for winagg: same Python in the workers, Arrow, RocksDB state.

Classic (``master``, default ``local[*]``) or Spark Connect (``remote="sc://HOST:PORT"``).
"""

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


def session_conf() -> dict:
    """The part of :data:`DEFAULT_CONF` a Spark Connect client can set: the SQL settings of its own
    session. The others belong to the server (pass them to ``start-connect-server.sh --conf``)."""
    return {key: value for key, value in DEFAULT_CONF.items() if key.startswith("spark.sql.")}


def session(master: Optional[str] = None, app_name: str = "winagg", conf: Optional[dict] = None,
            log_level: str = "ERROR", *, remote: Optional[str] = None):
    """A SparkSession for winagg: classic on ``master`` (default ``local[*]``), or a Spark Connect
    session on the server at ``remote`` (``"sc://HOST:PORT"``).

    Classic: workers must import the same winagg, numba and numpy as the driver,
    so ``PYSPARK_PYTHON`` is set to this process's Python unless already set,
    and the JVM logs at ``log_level``. An existing session is reused by Spark
    (its master cannot change then).

    Connect: the session gets winagg's SQL settings (:func:`session_conf`) and
    ``conf``; the server's workers must already run a Python with winagg
    (the server's ``spark.pyspark.python``, or an environment shipped with
    ``spark.addArtifacts(..., archive=True)``: see the Spark guide), and its
    log level is the server's own configuration (``log_level`` is not used).
    """
    from ..extras import require

    SparkSession = require("pyspark.sql", "spark", "winagg.spark").SparkSession
    if remote is not None:
        if master is not None:
            raise ValueError(f"give master ({master!r}) or remote ({remote!r}), not both: "
                             "a Connect server has its own master")
        if not str(remote).startswith("sc://"):
            raise ValueError(f"remote must be a Spark Connect URL such as sc://localhost:15002, got {remote!r}")
        builder = SparkSession.builder.remote(remote).appName(app_name)
        for key, value in {**session_conf(), **(conf or {})}.items():
            builder = builder.config(key, value)
        return builder.getOrCreate()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.master(master or "local[*]").appName(app_name)
    for key, value in {**DEFAULT_CONF, **(conf or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(log_level)
    return spark


def master_of(spark) -> str:
    """The master URL a session's jobs run on, classic or Connect.

    A classic session's context is the truth: its SQL conf can keep the ``spark.master`` of an
    earlier session of the same JVM. A Connect client has no context; its server's conf says it.
    """
    if type(spark).__module__.startswith("pyspark.sql.connect"):
        return spark.conf.get("spark.master")
    return spark.sparkContext.master
