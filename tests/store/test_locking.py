"""One writer per stored window: a second opener is refused until the first closes or dies."""

import subprocess
import sys
import time

import pytest

import winagg
from winagg.store import RedisStore, StoredWindow

# A writer in a process of its own: opens the window, flushes three items, says so, and waits to be killed.
_WRITER = """
import sys, time
from winagg.store import RedisStore, SQLiteStore, StoredWindow
kind, where, name = sys.argv[1:]
store = SQLiteStore(where, name) if kind == "sqlite" else RedisStore(port=int(where), prefix=name, lease=2.0)
window = StoredWindow(store, "sum")
window.bulk_insert([1.0, 2.0, 4.0])
window.flush()
print("ready", flush=True)
time.sleep(600)
"""


def test_a_second_store_of_an_open_window_is_refused_until_the_first_closes(backend):
    first = StoredWindow(backend.open("w"), "sum", buffer_size=4)
    first.bulk_insert([1.0, 2.0, 4.0])
    with pytest.raises(winagg.StoreLockedError, match="one writer per window"):
        backend.open("w")
    first.insert(8.0)  # the first writer goes on as if nothing happened
    first.flush()
    assert (len(first), first.query(), first.youngest_time()) == (4, 15.0, 3)
    first.close()
    again = StoredWindow(backend.open("w"), "sum")
    assert (len(again), again.query(), again.youngest_time()) == (4, 15.0, 3)
    again.close()


def test_other_windows_open_beside_an_open_one(backend):
    with StoredWindow(backend.open("w"), "sum") as first:
        first.insert(1.0)
        with StoredWindow(backend.open_beside("w", "other"), "sum") as beside:
            beside.insert(10.0)
            assert (first.query(), beside.query()) == (1.0, 10.0)
    with StoredWindow(backend.open_beside("w", "other"), "sum") as beside:
        assert (len(beside), beside.query()) == (1, 10.0)


def test_one_store_serves_one_window(backend):
    store = backend.open("w")
    window = StoredWindow(store, "sum")
    with pytest.raises(winagg.StoreLockedError, match="already serves another window"):
        StoredWindow(store, "sum")
    window.insert(2.0)
    window.close()


def _start_writer(backend, name, tmp_path):
    errors = open(tmp_path / "writer.err", "w+")
    writer = subprocess.Popen([sys.executable, "-c", _WRITER, *backend.writer_args(name)],
                              stdout=subprocess.PIPE, stderr=errors, text=True)
    line = writer.stdout.readline()
    if line != "ready\n":
        writer.kill()
        writer.wait()
        errors.seek(0)
        raise AssertionError(f"the writer did not start: {line!r}\n{errors.read()}")
    return writer


def _open_once_free(backend, name, within):
    """The store of ``name``, opened as soon as its lock lets it (a Redis lease runs out in its own time)."""
    deadline = time.monotonic() + within
    while True:
        try:
            return backend.open(name)
        except winagg.StoreLockedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def test_a_killed_writer_does_not_leave_its_window_locked(backend, tmp_path):
    writer = _start_writer(backend, "w", tmp_path)
    try:
        with pytest.raises(winagg.StoreLockedError):
            backend.open("w")
        writer.kill()  # SIGKILL: no close, no cleanup
        writer.wait(timeout=30)
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()
    if backend.kind == "sqlite":
        store = backend.open("w")  # the kernel dropped the dead process's lock with its files
    else:
        store = _open_once_free(backend, "w", within=60)  # its 2-second lease expires
    with StoredWindow(store, "sum") as window:
        assert (len(window), window.query()) == (3, 7.0)  # what the writer flushed before it died
        window.insert(8.0)


def test_a_redis_writer_whose_lease_was_taken_over_writes_nothing(redis_port):
    import redis

    client = redis.Redis(port=redis_port)
    prefix = "lease-taken"
    first = StoredWindow(RedisStore(port=redis_port, prefix=prefix), "sum")
    first.bulk_insert([1.0, 2.0])
    first.flush()
    client.delete(f"{prefix}:lease")  # as if the lease ran out while its writer stalled
    second = StoredWindow(RedisStore(port=redis_port, prefix=prefix), "sum")  # and another writer took over
    second.insert(10.0)
    second.flush()
    first.insert(100.0)
    with pytest.raises(winagg.StoreLockedError, match="no longer holds its lease"):
        first.flush()
    first.store.close()  # leaves the lease, which is not its own, alone
    assert (len(second), second.query()) == (3, 13.0)
    second.insert(20.0)
    second.close()
    with StoredWindow(RedisStore(port=redis_port, prefix=prefix), "sum") as again:
        assert (len(again), again.query()) == (4, 33.0)  # the second writer's window, untouched by the first
    client.close()
