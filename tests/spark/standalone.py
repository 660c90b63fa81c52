"""A real Spark standalone cluster for tests: a Master and Workers on 127.0.0.1, stopped by process group.

Started from the PySpark installation's own ``bin/spark-class``, each daemon
in a session of its own (so that stopping it stops the JVM and anything it
started). The workers get a clean environment: no PYTHONPATH, and
``PYSPARK_PYTHON`` / ``python3`` on their PATH a bare interpreter (a virtual
environment with nothing installed), as on a cluster that has never seen
winagg.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import venv
from dataclasses import dataclass, field
from pathlib import Path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def spark_home() -> str:
    from pyspark.find_spark_home import _find_spark_home

    return _find_spark_home()


def bare_python(folder: Path) -> Path:
    """A virtual environment with nothing installed (not even pip): its python cannot import numpy."""
    if not (folder / "bin" / "python").exists():
        venv.EnvBuilder(with_pip=False, symlinks=True).create(folder)
    return folder / "bin" / "python"


@dataclass
class Cluster:
    master_url: str
    ui_url: str
    workdir: Path
    bare_python: Path
    processes: list = field(default_factory=list)

    def alive_workers(self) -> int:
        try:
            with urllib.request.urlopen(self.ui_url + "/json/", timeout=5) as answer:
                state = json.load(answer)
        except (OSError, ValueError):
            # not listening yet, or listening before its JSON page is attached (the Master's web UI
            # answered /json/ with its HTML page a second after it bound the port)
            return 0
        return sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE")

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text()[-3000:]}" for p in sorted(self.workdir.glob("*.log")))

    def stop(self) -> None:
        """SIGTERM each daemon's process group, SIGKILL what is left after 20 s."""
        for process in reversed(self.processes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        deadline = time.time() + 20
        for process in reversed(self.processes):
            try:
                process.wait(max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def _daemon(cls: str, args: list, env: dict, log: Path) -> subprocess.Popen:
    command = [os.path.join(spark_home(), "bin", "spark-class"), cls, *args]
    with open(log, "wb") as out:
        return subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def worker_environment(bare: Path) -> dict:
    """The workers' environment: this machine's basics, a bare Python first on the PATH, no PYTHONPATH."""
    keep = ("HOME", "LANG", "LC_ALL", "JAVA_HOME", "TMPDIR", "USER")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    java = Path(subprocess.run(["which", "java"], capture_output=True, text=True).stdout.strip() or "/usr/bin/java")
    env["PATH"] = os.pathsep.join([str(bare.parent), str(java.parent), "/usr/bin", "/bin"])
    env.update(SPARK_HOME=spark_home(), SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=str(bare),
               SPARK_DAEMON_MEMORY="512m")
    return env


def start(workdir: Path, workers: int = 2, cores: int = 1, memory: str = "1500m", timeout: float = 180) -> Cluster:
    """A Master and ``workers`` Workers (``cores`` cores and ``memory`` each) on free ports of 127.0.0.1."""
    workdir.mkdir(parents=True, exist_ok=True)
    bare = bare_python(workdir / "bare-python")
    env = worker_environment(bare)
    port, ui = free_port(), free_port()
    cluster = Cluster(f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{ui}", workdir, bare)
    try:
        cluster.processes.append(_daemon("org.apache.spark.deploy.master.Master",
                                         ["--host", "127.0.0.1", "--port", str(port), "--webui-port", str(ui)],
                                         env, workdir / "master.log"))
        for number in range(workers):
            folder = workdir / f"worker-{number}"
            folder.mkdir(exist_ok=True)
            cluster.processes.append(_daemon(
                "org.apache.spark.deploy.worker.Worker",
                ["--host", "127.0.0.1", "--port", str(free_port()), "--webui-port", str(free_port()),
                 "--cores", str(cores), "--memory", memory, "--work-dir", str(folder), cluster.master_url],
                env, workdir / f"worker-{number}.log"))
        deadline = time.time() + timeout
        while cluster.alive_workers() < workers:
            dead = [p for p in cluster.processes if p.poll() is not None]
            if dead or time.time() > deadline:
                raise RuntimeError(f"the standalone cluster did not come up ({len(dead)} daemons ended)\n"
                                   + cluster.logs())
            time.sleep(0.5)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def driver_environment(extra: dict = None) -> dict:
    """The environment of a driver process started by a test: this one's, Spark bound to 127.0.0.1."""
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYTHONUNBUFFERED="1")
    env.pop("PYSPARK_PYTHON", None)
    env.update(extra or {})
    return env


if __name__ == "__main__":  # start a cluster by hand: python tests/spark/standalone.py DIR
    running = start(Path(sys.argv[1]))
    print(running.master_url, running.ui_url, flush=True)
    try:
        signal.pause()
    finally:
        running.stop()
