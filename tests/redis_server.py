"""A real redis-server on a free loopback port for one test session (no persistence), stopped by
its PID afterwards: ``redis_port``, imported by the test modules and conftests that use it."""

import shutil
import socket
import subprocess
import time

import pytest


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _install_redis_server():
    # the store issue asks the tests to install the server when it is missing (root on CI machines)
    subprocess.run(["apt-get", "update", "-qq"], check=True)
    subprocess.run(["apt-get", "install", "-y", "-qq", "redis-server"], check=True)


def _wait_for(port: int, server: subprocess.Popen) -> None:
    deadline = time.monotonic() + 20
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as conn:
                conn.sendall(b"PING\r\n")
                if conn.recv(16).startswith(b"+PONG"):
                    return
        except OSError:
            pass
        if time.monotonic() > deadline or server.poll() is not None:
            raise RuntimeError(f"redis-server did not come up on port {port}")
        time.sleep(0.05)


@pytest.fixture(scope="session")
def redis_port():
    """Port of a redis-server started for this test session on 127.0.0.1."""
    if shutil.which("redis-server") is None:
        _install_redis_server()
    port = _free_port()
    server = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                               "--save", "", "--appendonly", "no"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for(port, server)
        yield port
    finally:
        server.terminate()
        server.wait(timeout=10)
