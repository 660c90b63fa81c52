"""A :class:`~winagg.store.base.Store` in an SQLite file (the embedded default; stdlib ``sqlite3``)."""

from __future__ import annotations

import hashlib
import os
import sqlite3
from typing import Dict, Iterable, List, Optional

from .base import Deletes, Puts, Store
from .locks import FileLock

_SCHEMA = """
CREATE TABLE IF NOT EXISTS cells (
    name TEXT NOT NULL, level INTEGER NOT NULL, idx INTEGER NOT NULL, value BLOB NOT NULL,
    PRIMARY KEY (name, level, idx)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value BLOB NOT NULL);
"""
#: Paths that name no file: every connection to them has a database of its own, which needs no lock.
_PRIVATE = ("", ":memory:")


def lock_path(path: str, name: str) -> str:
    """The lock file of window ``name`` in the database at ``path``: beside the file it resolves to."""
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{os.path.realpath(path)}.{digest}.lock"


class SQLiteStore(Store):
    """Values in one table of the SQLite database at ``path``, keyed ``(name, level, index)``.

    Several windows share one file under different ``name``s. Each batch is
    one transaction. ``synchronous=NORMAL`` with the write-ahead log keeps a
    batch durable against a crash of the process (not of the machine), at a
    fraction of the cost of a full sync per batch.

    One writer per window: from construction to :meth:`close` the store holds
    an exclusive lock on the file :func:`lock_path` names (``flock``, released
    by the kernel if the process dies), and a second ``SQLiteStore`` of the
    same file and ``name``, in this process or another, raises
    :class:`~winagg.StoreLockedError`. Other names in the same file open freely.
    """

    def __init__(self, path: str | os.PathLike, name: str = "window"):
        if not isinstance(name, str):
            raise TypeError(f"name must be a string, got {type(name).__name__}")
        self.path = os.fspath(path)
        self.name = name
        private = self.path in _PRIVATE
        self._lock = None if private else FileLock(lock_path(self.path, name), repr(self))
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
        except BaseException:
            self._release_lock()
            raise

    def get_many(self, level: int, indices: Iterable[int]) -> List[Optional[bytes]]:
        indices = list(indices)
        found = {}
        for chunk_start in range(0, len(indices), 500):  # below SQLite's bound-parameter limit
            chunk = indices[chunk_start:chunk_start + 500]
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(
                f"SELECT idx, value FROM cells WHERE name=? AND level=? AND idx IN ({marks})",
                (self.name, level, *chunk))
            found.update(rows)
        return [found.get(i) for i in indices]

    def get_range(self, level: int, lo: int, hi: int) -> Dict[int, bytes]:
        rows = self._db.execute("SELECT idx, value FROM cells WHERE name=? AND level=? AND idx>=? AND idx<?",
                                (self.name, level, lo, hi))
        return dict(rows)

    def write(self, puts: Puts, deletes: Deletes = (), meta: Optional[bytes] = None) -> None:
        def apply(db):
            for level, values in puts.items():
                db.executemany("INSERT OR REPLACE INTO cells VALUES (?, ?, ?, ?)",
                               ((self.name, level, i, v) for i, v in values.items()))
            for level, lo, hi in deletes:
                db.execute("DELETE FROM cells WHERE name=? AND level=? AND idx>=? AND idx<?",
                           (self.name, level, lo, hi))
            if meta is not None:
                db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (self.name, meta))

        self._transaction(apply)

    def _transaction(self, apply) -> None:
        """Run ``apply(connection)`` as one transaction: all of it, or (it raised) none of it."""
        db = self._db
        db.execute("BEGIN")
        try:
            apply(db)
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    def load_meta(self) -> Optional[bytes]:
        row = self._db.execute("SELECT value FROM meta WHERE name=?", (self.name,)).fetchone()
        return None if row is None else row[0]

    def count(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM cells WHERE name=?", (self.name,)).fetchone()[0]

    def is_empty(self) -> bool:
        return not self._db.execute("SELECT EXISTS (SELECT 1 FROM cells WHERE name=?)", (self.name,)).fetchone()[0]

    def clear(self) -> None:
        def apply(db):
            db.execute("DELETE FROM cells WHERE name=?", (self.name,))
            db.execute("DELETE FROM meta WHERE name=?", (self.name,))

        self._transaction(apply)

    def close(self) -> None:
        """Close the connection and release the window's lock (a second call does nothing)."""
        try:
            self._db.close()
        finally:
            self._release_lock()

    def _release_lock(self) -> None:
        if self._lock is not None:
            self._lock.release()

    def __repr__(self):
        return f"SQLiteStore({self.path!r}, name={self.name!r})"
