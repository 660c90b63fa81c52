"""``backend``: real SQLite files or a real redis-server (``redis_port``, :mod:`redis_server`), with raw
access to what a window stored in them."""

import itertools

import pytest
from redis_server import redis_port  # noqa: F401 (a fixture)


class SQLiteFiles:
    """Windows in SQLite files of one directory (one file per window name), and their rows as another
    program sees them (through ``sqlite3`` directly, to damage them)."""

    kind = "sqlite"

    def __init__(self, directory):
        from winagg.store import SQLiteStore

        self.directory = directory
        self.store_class = SQLiteStore

    def path(self, name):
        return self.directory / f"{name}.db"

    def open(self, name, store_class=None, **options):
        return (store_class or self.store_class)(self.path(name), **options)

    def open_beside(self, name, other):
        """A store of another window next to ``name``'s: the same file, another window name."""
        return self.store_class(self.path(name), name=other)

    def writer_args(self, name):
        """How a writer subprocess opens this window: kind, where, name."""
        return ["sqlite", str(self.path(name)), "window"]

    def _run(self, name, sql, *args):
        import sqlite3

        db = sqlite3.connect(self.path(name))
        try:
            with db:  # commits
                return db.execute(sql, args).fetchall()
        finally:
            db.close()

    def cell(self, name, level, index):
        rows = self._run(name, "SELECT value FROM cells WHERE level=? AND idx=?", level, index)
        return rows[0][0] if rows else None

    def set_cell(self, name, level, index, value):
        self._run(name, "UPDATE cells SET value=? WHERE level=? AND idx=?", value, level, index)

    def delete_cell(self, name, level, index):
        self._run(name, "DELETE FROM cells WHERE level=? AND idx=?", level, index)

    def meta(self, name):
        return self._run(name, "SELECT value FROM meta")[0][0]

    def set_meta(self, name, value):
        self._run(name, "UPDATE meta SET value=?", value)

    def delete_meta(self, name):
        self._run(name, "DELETE FROM meta")


class RedisKeys:
    """Windows in a Redis server under prefixes ``{tag}:{name}``, and their keys as another client sees them."""

    kind = "redis"

    def __init__(self, port, tag):
        import redis

        from winagg.store import RedisStore

        self.port, self.tag = port, tag
        self.store_class = RedisStore
        self.client = redis.Redis(port=port)

    def prefix(self, name):
        return f"{self.tag}:{name}"

    def open(self, name, store_class=None, **options):
        return (store_class or self.store_class)(port=self.port, prefix=self.prefix(name), **options)

    def open_beside(self, name, other):
        """A store of another window next to ``name``'s: a prefix that starts with ``name``'s."""
        return self.store_class(port=self.port, prefix=f"{self.prefix(name)}:{other}")

    def writer_args(self, name):
        return ["redis", str(self.port), self.prefix(name)]

    def _bucket(self, name, level, index):
        from winagg.store.redis_store import BUCKET

        return f"{self.prefix(name)}:{level}:{index // BUCKET}"

    def cell(self, name, level, index):
        return self.client.hget(self._bucket(name, level, index), index)

    def set_cell(self, name, level, index, value):
        self.client.hset(self._bucket(name, level, index), index, value)

    def delete_cell(self, name, level, index):
        self.client.hdel(self._bucket(name, level, index), index)

    def meta(self, name):
        return self.client.get(f"{self.prefix(name)}:meta")

    def set_meta(self, name, value):
        self.client.set(f"{self.prefix(name)}:meta", value)

    def delete_meta(self, name):
        self.client.delete(f"{self.prefix(name)}:meta")


_tags = itertools.count()


@pytest.fixture
def sqlite_files(tmp_path):
    """:class:`SQLiteFiles` in a temporary directory."""
    return SQLiteFiles(tmp_path)


@pytest.fixture
def redis_keys(redis_port):
    """:class:`RedisKeys` under a prefix of this test's own."""
    keys = RedisKeys(redis_port, f"t{next(_tags)}")
    yield keys
    keys.client.close()


@pytest.fixture(params=["sqlite_files", "redis_keys"], ids=["sqlite", "redis"])
def backend(request):
    """Each of :func:`sqlite_files` and :func:`redis_keys` in turn."""
    return request.getfixturevalue(request.param)
