"""A local Spark Connect server for tests: on 127.0.0.1 only, at a free port, stopped by its PID.

Started from the pip PySpark's own ``bin/spark-submit`` with the server class that
``sbin/start-connect-server.sh`` runs, in the foreground (spark-submit execs the
JVM, so the process is the server itself), with winagg's session settings and
this interpreter as its Python workers' (``spark.pyspark.python``).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from standalone import free_port

#: The Spark Connect server's main class in the pip pyspark's jars (what sbin/start-connect-server.sh runs).
CONNECT_SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
#: PySpark's functions (F.col, Window, ...) build Connect or classic columns by this variable, which
#: SparkSession.builder.remote(...) sets for the whole process: a test process that holds both kinds
#: of session sets it for the Connect tests only, and a server must not inherit it.
CONNECT_MODE = "SPARK_CONNECT_MODE_ENABLED"
#: Where the tests' monoids live (tests/oracle.py): the server's Python processes import it from PYTHONPATH.
TESTS = Path(__file__).resolve().parents[1]


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


def start_connect_server(folder: Path, conf: dict):
    """``(process, "sc://127.0.0.1:PORT")``: a local[2] Spark Connect server with winagg's settings and
    ``conf`` whose Python workers run this interpreter with tests/ on their path, listening on
    127.0.0.1 only, its log in ``folder``."""
    import pyspark

    from winagg.spark.session import DEFAULT_CONF

    spark_home = Path(pyspark.__file__).parent
    port = free_port()
    settings = {**DEFAULT_CONF, **conf, "spark.connect.grpc.binding.address": "127.0.0.1",
                "spark.connect.grpc.binding.port": str(port), "spark.pyspark.python": sys.executable,
                "spark.pyspark.driver.python": sys.executable}
    command = [str(spark_home / "bin" / "spark-submit"), "--class", CONNECT_SERVER_CLASS, "--master", "local[2]",
               "--name", "winagg-tests-connect"]
    for key, value in settings.items():
        command += ["--conf", f"{key}={value}"]
    log = folder / "server.log"
    path = [str(TESTS)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = {**os.environ, "SPARK_HOME": str(spark_home), "PYSPARK_PYTHON": sys.executable,
           "PYTHONPATH": os.pathsep.join(dict.fromkeys(path))}
    env.pop(CONNECT_MODE, None)
    with open(log, "ab") as out:
        server = subprocess.Popen(command, cwd=folder, env=env, stdout=out, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL)
    try:
        _wait_for_port(server, port, log)
    except BaseException:
        stop_connect_server(server)
        raise
    return server, f"sc://127.0.0.1:{port}"


def stop_connect_server(server: subprocess.Popen) -> None:
    """Stop the server by its PID (spark-submit execs the JVM: the PID is the server itself)."""
    server.terminate()
    try:
        server.wait(timeout=60)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
