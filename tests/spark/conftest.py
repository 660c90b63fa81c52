"""Spark sessions for the tests: one classic local session per test process (each pytest-xdist
worker has its own JVM) and one Spark Connect session on a local Connect server that the tests
start on 127.0.0.1 and stop by its PID.

Tests that take ``session_kind`` run once per kind of session (``kind_spark`` is that session):
winagg.spark must give the same answers through a Connect client as through a classic session.
"""

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

#: Test monoids live in tests/oracle.py. Spark ships the module to its Python workers
#: (addPyFile); the Python process that a streaming query's driver starts for
#: transformWithStateInPandas only sees PYTHONPATH, which the JVM inherits.
ORACLE = Path(__file__).resolve().parents[1] / "oracle.py"

#: The Spark Connect server's main class in the pip pyspark's jars (what sbin/start-connect-server.sh runs).
CONNECT_SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
#: PySpark's functions (F.col, Window, ...) build Connect or classic columns by this variable, which
#: SparkSession.builder.remote(...) sets for the whole process: a test process that holds both kinds
#: of session sets it for the Connect tests only.
CONNECT_MODE = "SPARK_CONNECT_MODE_ENABLED"
#: The settings of both kinds of test session (on top of winagg.spark.session's defaults).
TEST_CONF = {"spark.sql.shuffle.partitions": "4"}


def with_tests_on_pythonpath():
    """Put tests/ on PYTHONPATH for the Python processes Spark starts."""
    parts = [str(ORACLE.parent)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(parts))


@pytest.fixture(scope="session")
def spark():
    from winagg.spark import session

    with_tests_on_pythonpath()
    spark = session("local[2]", app_name="winagg-tests", conf=TEST_CONF)
    spark.sparkContext.addPyFile(str(ORACLE))
    yield spark
    spark.stop()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_for_port(server: subprocess.Popen, port: int, log: Path, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the Spark Connect server exited with {server.returncode}:\n"
                               f"{log.read_text()[-3000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.5)
    raise RuntimeError(f"the Spark Connect server did not listen on 127.0.0.1:{port} within {timeout:.0f} s:\n"
                       f"{log.read_text()[-3000:]}")


def _stop(server: subprocess.Popen) -> None:
    server.terminate()  # spark-submit execs the JVM: this PID is the server itself
    try:
        server.wait(timeout=60)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


@pytest.fixture(scope="session")
def connect_url(tmp_path_factory):
    """``sc://127.0.0.1:PORT`` of a local[2] Spark Connect server whose workers run this Python."""
    import pyspark

    from winagg.spark.session import DEFAULT_CONF

    with_tests_on_pythonpath()
    spark_home = Path(pyspark.__file__).parent
    port = _free_port()
    settings = {**DEFAULT_CONF, **TEST_CONF, "spark.connect.grpc.binding.address": "127.0.0.1",
                "spark.connect.grpc.binding.port": str(port), "spark.pyspark.python": sys.executable,
                "spark.pyspark.driver.python": sys.executable}
    command = [str(spark_home / "bin" / "spark-submit"), "--class", CONNECT_SERVER_CLASS, "--master", "local[2]",
               "--name", "winagg-tests-connect"]
    for key, value in settings.items():
        command += ["--conf", f"{key}={value}"]
    folder = tmp_path_factory.mktemp("connect-server")
    log = folder / "server.log"
    env = {**os.environ, "SPARK_HOME": str(spark_home), "PYSPARK_PYTHON": sys.executable}
    env.pop(CONNECT_MODE, None)
    with open(log, "wb") as out:
        server = subprocess.Popen(command, cwd=folder, env=env, stdout=out, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL)
    try:
        _wait_for_port(server, port, log)
        yield f"sc://127.0.0.1:{port}"
    finally:
        _stop(server)


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
