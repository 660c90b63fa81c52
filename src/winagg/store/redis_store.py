"""A :class:`~winagg.store.base.Store` in a Redis server (PyPI ``redis`` client).

Each level is cut into buckets of :data:`BUCKET` consecutive indices, one
Redis hash per bucket (``{prefix}:{level}:{bucket}``), so that reading a
range is a few ``HMGET``s and deleting a long evicted range drops whole keys
instead of millions of hash fields. The metadata is ``{prefix}:meta`` and the
writer's lease ``{prefix}:lease`` (:class:`~winagg.store.locks.RedisLease`).

A store's keys are exactly ``prefix`` followed by one of those suffixes: a
key is a cell of this store only if what follows ``{prefix}:`` is two decimal
numbers. Nested prefixes therefore keep apart: the keys of the store
``"a:b"`` (``a:b:0:3``, ``a:b:meta``) are not the store ``"a"``'s, since
``b:0:3`` is not two numbers and ``b:meta`` is not ``meta``, and
:meth:`RedisStore.count` and :meth:`RedisStore.clear` of ``"a"`` leave them
alone. Values and keys of the wrong Redis type raise
:class:`~winagg.StoreCorruptError`.
"""

from __future__ import annotations

import re
from typing import Dict, Iterable, Iterator, List, Optional

from ..core.errors import StoreCorruptError
from .base import Deletes, Puts, Store
from .locks import RedisLease

#: Indices per Redis hash.
BUCKET = 512
_GLOB_SPECIAL = re.compile(rb"([*?\[\]\\])")


class RedisStore(Store):
    """Values in the Redis server at ``host:port`` (database ``db``), under keys ``{prefix}:...``.

    A batch is one ``MULTI``/``EXEC`` transaction. Durability is the
    server's configuration (the tests run it without persistence).

    One writer per window: the store holds the lease key ``{prefix}:lease``
    from construction to :meth:`close`, refreshed every ``lease / 3`` seconds
    by a background thread; a second ``RedisStore`` of the same server, db and
    prefix raises :class:`~winagg.StoreLockedError` until it is released, or
    until it expires ``lease`` seconds after its holder died. A write after
    the lease was lost raises StoreLockedError and writes nothing.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 6379, db: int = 0, prefix: str = "winagg:window",
                 lease: float = 10.0):
        from ..extras import require

        redis = require("redis", "redis", "winagg.store.RedisStore")  # only this store needs the client

        if not isinstance(prefix, str):
            raise TypeError(f"prefix must be a string, got {type(prefix).__name__}")
        self.host, self.port, self.db, self.prefix = host, port, db, prefix
        self._redis = redis.Redis(host=host, port=port, db=db)
        own = re.escape(prefix.encode("utf-8"))
        self._cell_key = re.compile(own + rb":(?:0|[1-9][0-9]*):(?:0|[1-9][0-9]*)\Z")
        self._match = _GLOB_SPECIAL.sub(rb"\\\1", prefix.encode("utf-8")) + b":*"
        self._meta_key = f"{prefix}:meta"
        try:
            self._lease = RedisLease(self._redis, f"{prefix}:lease", lease, repr(self))
        except BaseException:
            self._redis.close()
            raise

    def _key(self, level, bucket):
        return f"{self.prefix}:{level}:{bucket}"

    def get_many(self, level: int, indices: Iterable[int]) -> List[Optional[bytes]]:
        indices = list(indices)
        pipe = self._redis.pipeline(transaction=False)
        for i in indices:
            pipe.hget(self._key(level, i // BUCKET), i)
        return self._run(pipe) if indices else []

    def get_range(self, level: int, lo: int, hi: int) -> Dict[int, bytes]:
        if hi <= lo:
            return {}
        pipe = self._redis.pipeline(transaction=False)
        spans = []
        for bucket in range(lo // BUCKET, (hi - 1) // BUCKET + 1):
            start = max(lo, bucket * BUCKET)
            stop = min(hi, (bucket + 1) * BUCKET)
            spans.append(range(start, stop))
            pipe.hmget(self._key(level, bucket), list(spans[-1]))
        found = {}
        for span, values in zip(spans, self._run(pipe)):
            found.update((i, v) for i, v in zip(span, values) if v is not None)
        return found

    def _run(self, pipe) -> list:
        """``pipe.execute()``; a key of the wrong Redis type is damage, not a server error."""
        import redis

        try:
            return pipe.execute()
        except redis.ResponseError as exc:
            self._raise_if_wrong_type(exc)
            raise

    def _raise_if_wrong_type(self, exc) -> None:
        if "WRONGTYPE" in str(exc):  # a command's error inside a pipeline's message
            raise StoreCorruptError(f"{self!r}: a key holds another kind of Redis value than the store "
                                    f"wrote ({exc})") from exc

    def write(self, puts: Puts, deletes: Deletes = (), meta: Optional[bytes] = None) -> None:
        def queue(pipe):
            for level, values in puts.items():
                by_bucket: Dict[int, dict] = {}
                for i, v in values.items():
                    by_bucket.setdefault(i // BUCKET, {})[i] = v
                for bucket, fields in by_bucket.items():
                    pipe.hset(self._key(level, bucket), mapping=fields)
            for level, lo, hi in deletes:
                self._queue_delete(pipe, level, lo, hi)
            if meta is not None:
                pipe.set(self._meta_key, meta)

        self._write(queue)

    def _write(self, queue) -> None:
        import redis

        try:
            self._lease.write(queue)
        except redis.ResponseError as exc:
            self._raise_if_wrong_type(exc)
            raise

    def _queue_delete(self, pipe, level, lo, hi):
        if hi <= lo:
            return
        whole = []
        for bucket in range(lo // BUCKET, (hi - 1) // BUCKET + 1):
            start = max(lo, bucket * BUCKET)
            stop = min(hi, (bucket + 1) * BUCKET)
            if stop - start == BUCKET:
                whole.append(self._key(level, bucket))
            else:
                pipe.hdel(self._key(level, bucket), *range(start, stop))
        for chunk_start in range(0, len(whole), 1000):
            pipe.unlink(*whole[chunk_start:chunk_start + 1000])

    def load_meta(self) -> Optional[bytes]:
        pipe = self._redis.pipeline(transaction=False)
        pipe.get(self._meta_key)
        return self._run(pipe)[0]

    def _cell_keys(self) -> Iterator[bytes]:
        """This store's cell keys: the server's keys that are ``{prefix}:{level}:{bucket}`` exactly."""
        for key in self._redis.scan_iter(match=self._match, count=1000):
            if self._cell_key.match(key):
                yield key

    def count(self) -> int:
        pipe = self._redis.pipeline(transaction=False)
        for key in self._cell_keys():
            pipe.hlen(key)
        return sum(self._run(pipe))

    def is_empty(self) -> bool:
        return next(self._cell_keys(), None) is None

    def clear(self) -> None:
        keys = list(self._cell_keys()) + [self._meta_key.encode("utf-8")]

        def queue(pipe):
            for chunk_start in range(0, len(keys), 1000):
                pipe.unlink(*keys[chunk_start:chunk_start + 1000])

        self._write(queue)

    def close(self) -> None:
        """Release the lease (if still this store's) and the connection; a second call does nothing."""
        try:
            self._lease.release()
        finally:
            self._redis.close()

    def __repr__(self):
        return f"RedisStore(host={self.host!r}, port={self.port}, db={self.db}, prefix={self.prefix!r})"
