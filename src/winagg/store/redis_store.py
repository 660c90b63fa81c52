"""A :class:`~winagg.store.base.Store` in a Redis server (PyPI ``redis`` client).

Each level is cut into buckets of :data:`BUCKET` consecutive indices, one
Redis hash per bucket (``{prefix}:{level}:{bucket}``), so that reading a
range is a few ``HMGET``s and deleting a long evicted range drops whole keys
instead of millions of hash fields.
"""

from __future__ import annotations

from typing import Dict, Iterable, List, Optional

from .base import Deletes, Puts, Store

#: Indices per Redis hash.
BUCKET = 512


class RedisStore(Store):
    """Values in the Redis server at ``host:port`` (database ``db``), under keys starting with ``prefix``.

    A batch is one ``MULTI``/``EXEC`` transaction. Durability is the
    server's configuration (the tests run it without persistence).
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 6379, db: int = 0, prefix: str = "winagg:window"):
        from ..extras import require

        redis = require("redis", "redis", "winagg.store.RedisStore")  # only this store needs the client

        self.host, self.port, self.db, self.prefix = host, port, db, prefix
        self._redis = redis.Redis(host=host, port=port, db=db)

    def _key(self, level, bucket):
        return f"{self.prefix}:{level}:{bucket}"

    def get_many(self, level: int, indices: Iterable[int]) -> List[Optional[bytes]]:
        indices = list(indices)
        pipe = self._redis.pipeline(transaction=False)
        for i in indices:
            pipe.hget(self._key(level, i // BUCKET), i)
        return pipe.execute() if indices else []

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
        for span, values in zip(spans, pipe.execute()):
            found.update((i, v) for i, v in zip(span, values) if v is not None)
        return found

    def write(self, puts: Puts, deletes: Deletes = (), meta: Optional[bytes] = None) -> None:
        pipe = self._redis.pipeline(transaction=True)
        for level, values in puts.items():
            by_bucket: Dict[int, dict] = {}
            for i, v in values.items():
                by_bucket.setdefault(i // BUCKET, {})[i] = v
            for bucket, fields in by_bucket.items():
                pipe.hset(self._key(level, bucket), mapping=fields)
        for level, lo, hi in deletes:
            self._queue_delete(pipe, level, lo, hi)
        if meta is not None:
            pipe.set(f"{self.prefix}:meta", meta)
        pipe.execute()

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
        return self._redis.get(f"{self.prefix}:meta")

    def _cell_keys(self):
        return [k for k in self._redis.scan_iter(match=f"{self.prefix}:*", count=1000)
                if not k.endswith(b":meta")]

    def count(self) -> int:
        pipe = self._redis.pipeline(transaction=False)
        for key in self._cell_keys():
            pipe.hlen(key)
        return sum(pipe.execute())

    def clear(self) -> None:
        keys = self._cell_keys() + [f"{self.prefix}:meta"]
        for chunk_start in range(0, len(keys), 1000):
            self._redis.unlink(*keys[chunk_start:chunk_start + 1000])

    def close(self) -> None:
        self._redis.close()

    def __repr__(self):
        return f"RedisStore(host={self.host!r}, port={self.port}, db={self.db}, prefix={self.prefix!r})"
