"""One writer per stored window: an OS file lock for SQLite, a lease key for Redis.

Two writers of one window would each overwrite the other's cells and
metadata, so a store takes its window's lock when it opens and holds it until
:meth:`~winagg.store.base.Store.close`; a second opener, in this process or
another, gets :class:`~winagg.StoreLockedError` at once.

* :class:`FileLock` (SQLite): ``flock`` on a small file beside the database,
  one per window name. The kernel releases it when the holding process ends,
  however it ends (``SIGKILL`` included), so a dead writer never leaves its
  window locked. The lock files stay beside the database (deleting one while
  another process waits on it would let two writers in). POSIX only: the lock
  needs ``fcntl.flock``.
* :class:`RedisLease` (Redis): a key set with ``SET NX PX`` to a random token
  that a background thread refreshes every third of the lease. A dead
  writer's lease expires after ``lease`` seconds and the window opens again.
  Every write checks the token in the same ``WATCH``/``MULTI``/``EXEC``
  transaction, so a writer whose lease ran out (the process stalled for
  longer than the lease and another writer took over) refuses to write
  rather than overwrite the new writer's window; close deletes the key only
  if it still holds the token.
"""

from __future__ import annotations

import os
import secrets
import threading
import weakref
from typing import Callable

from ..core.errors import StoreLockedError

try:
    import fcntl
except ImportError:  # not POSIX
    fcntl = None


class FileLock:
    """An exclusive ``flock`` on the file ``path``, from construction to :meth:`release`.

    ``what`` names the locked window in the error a second opener gets.
    """

    def __init__(self, path: str, what: str):
        if fcntl is None:
            raise NotImplementedError(f"{what}: the one-writer lock needs fcntl.flock (POSIX)")
        self.path = path
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise StoreLockedError(f"{what} is open for writing in {holder} (lock file {path!r}); one writer "
                                   f"per window: close that store first") from None
        except BaseException:
            os.close(fd)
            raise
        # who holds it, for the error a second opener gets (the lock itself is the flock)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        self._fd = fd

    def release(self) -> None:
        """Give the lock up (closing the file releases the flock); a second call does nothing."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


def _holder(fd: int) -> str:
    """Which process holds the lock on ``fd``, as its pid file says (it may be mid-write)."""
    text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    if not text.isdigit():
        return "another store"
    if int(text) == os.getpid():
        return "another store of this process"
    return f"process {text}"


_REFRESH = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end
return 0
"""
_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0
"""


class RedisLease:
    """The lease key ``key`` held with a random token for ``seconds`` at a time, refreshed until :meth:`release`.

    ``client`` is a ``redis.Redis``; ``what`` names the window in errors.
    """

    def __init__(self, client, key: str, seconds: float, what: str):
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not seconds > 0:
            raise ValueError(f"lease must be a number of seconds > 0, got {seconds!r}")
        self.key, self.what = key, what
        self._client = client
        self._token = secrets.token_hex(16).encode("ascii")
        self._ms = max(1, int(seconds * 1000))
        if not client.set(key, self._token, nx=True, px=self._ms):
            left = client.pttl(key)
            raise StoreLockedError(f"{what} is open for writing in another RedisStore (its lease {key!r} "
                                   f"expires in {max(left, 0) / 1000:.1f} s unless its holder refreshes it); "
                                   f"one writer per window: close that store first")
        self.lost = False
        self._mutex = threading.Lock()  # a refresh never runs inside a write's WATCH .. EXEC
        self._refresh = client.register_script(_REFRESH)
        self._release = client.register_script(_RELEASE)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=_keep_alive, args=(weakref.ref(self), self._stop, seconds / 3),
                                        name=f"winagg lease {key}", daemon=True)
        self._thread.start()

    def refresh(self) -> bool:
        """Extend the lease by its length; False once another writer holds it (then it stays lost)."""
        with self._mutex:
            if self._stop.is_set():
                return False
            if not self._refresh(keys=[self.key], args=[self._token, self._ms]):
                self.lost = True
        return not self.lost

    def write(self, queue: Callable) -> None:
        """Run the commands ``queue(pipe)`` adds to a transaction, only while the lease is held (and extend it).

        StoreLockedError, with nothing written, when the lease is no longer this writer's.
        """
        import redis

        with self._mutex, self._client.pipeline(transaction=True) as pipe:
            pipe.watch(self.key)
            if self._stop.is_set() or pipe.get(self.key) != self._token:
                self.lost = True
                raise self._lost_error()
            pipe.multi()
            queue(pipe)
            pipe.pexpire(self.key, self._ms)
            try:
                pipe.execute()
            except redis.WatchError:  # the key changed after the check: another writer took it
                self.lost = True
                raise self._lost_error() from None

    def _lost_error(self) -> StoreLockedError:
        return StoreLockedError(f"{self.what} no longer holds its lease {self.key!r} (it expired, or the store was "
                                f"closed, and another writer may have opened the window): nothing was written; "
                                f"open the window again")

    def release(self) -> None:
        """Stop refreshing and delete the key if it still holds this token; a second call does nothing."""
        with self._mutex:
            if self._stop.is_set():
                return
            self._stop.set()
        self._thread.join(timeout=self._ms / 1000)  # a refresh stuck on a hung server must not hang close
        self._release(keys=[self.key], args=[self._token])


def _keep_alive(lease_ref, stop: threading.Event, period: float) -> None:
    """Refresh the lease every ``period`` seconds until it is released, lost, or garbage."""
    import redis

    while not stop.wait(period):
        lease = lease_ref()  # a weak reference: a store dropped without close lets its lease expire
        if lease is None:
            return
        try:
            if not lease.refresh():
                return
        except redis.RedisError:
            pass  # the server may come back before the lease runs out; the next write says if not
        del lease
