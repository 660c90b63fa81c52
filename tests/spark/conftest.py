"""Spark sessions for the tests: one classic local session per test process (each pytest-xdist
worker has its own JVM) and one Spark Connect session on a local Connect server that the tests
start on 127.0.0.1 and stop by its PID.

Tests that take ``session_kind`` run once per kind of session (``kind_spark`` is that session):
winagg.spark must give the same answers through a Connect client as through a classic session.
"""

import os
from pathlib import Path

import pytest
from connect_server import CONNECT_MODE, start_connect_server, stop_connect_server

#: Test monoids live in tests/oracle.py. Spark ships the module to its Python workers
#: (addPyFile); the Python process that a streaming query's driver starts for
#: transformWithStateInPandas only sees PYTHONPATH, which the JVM inherits.
ORACLE = Path(__file__).resolve().parents[1] / "oracle.py"

#: The settings of both kinds of test session (on top of winagg.spark.session's defaults).
TEST_CONF = {"spark.sql.shuffle.partitions": "4"}


def with_tests_on_pythonpath():
    """Put tests/ on PYTHONPATH for the Python processes Spark starts."""
    parts = [str(ORACLE.parent)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(parts))


@pytest.fixture(scope="session")
def spark():
    from winagg.spark import session

    from pyspark.sql import SparkSession

    from winagg.spark.session import master_of

    with_tests_on_pythonpath()
    earlier = SparkSession.getActiveSession()
    if earlier is not None and master_of(earlier) != "local[2]":
        earlier.stop()  # a session a test started in this process (the pipeline's local[*]): not the tests' own
    spark = session("local[2]", app_name="winagg-tests", conf=TEST_CONF)
    spark.sparkContext.addPyFile(str(ORACLE))
    yield spark
    spark.stop()


@pytest.fixture(scope="session")
def connect_url(tmp_path_factory):
    """``sc://127.0.0.1:PORT`` of the Connect server every Connect test shares."""
    server, url = start_connect_server(tmp_path_factory.mktemp("connect-server"), TEST_CONF)
    try:
        yield url
    finally:
        stop_connect_server(server)


@pytest.fixture(scope="session")
def connect_spark(connect_url):
    """A Spark Connect session on the tests' Connect server, with tests/oracle.py shipped as an artifact."""
    from pyspark.sql.connect.session import SparkSession

    spark = SparkSession.builder.remote(connect_url).create()
    spark.addArtifacts(str(ORACLE), pyfile=True)
    yield spark
    spark.stop()


@pytest.fixture(params=["classic", "connect"])
def session_kind(request, monkeypatch):
    """``"classic"`` or ``"connect"``: the kind of Spark session the test runs on."""
    if request.param == "connect":
        monkeypatch.setenv(CONNECT_MODE, "1")
    else:
        monkeypatch.delenv(CONNECT_MODE, raising=False)
    return request.param


@pytest.fixture
def kind_spark(session_kind, request):
    """The classic session or the Connect session, as ``session_kind`` says."""
    return request.getfixturevalue("spark" if session_kind == "classic" else "connect_spark")
