"""A Monoid Tree Aggregator window whose levels live in a key-value store."""

from __future__ import annotations

import pickle
from bisect import bisect_left, bisect_right
from typing import Any, Optional

from .. import aggregations
from ..aggregator import Aggregator
from ..fifo import amta, lmta
from ..ops import Ops
from ..registry import info
from ..state import end, first
from ..time_index import TimeUnit
from .levels import TIME_LEVEL, CachedLevels

#: 5: tuple partials are kept in one record array, not an array per field.
#: 4: the times are in the window's unit (datetimes as int nanoseconds) and the snapshot says which.
#: 3: amta keeps its event positions in meta and R0 with the oldest block's entries in the stack, and its
#: state has six fields (format 2 did neither).
_FORMAT = 5
_MODULES = {"amta": amta, "lmta": lmta}


def _no_jit(fn):
    return fn


class StoredTimes:
    """The window's times in the store's time level: item ``k`` (0 = oldest) is at position ``first + k``.

    The same interface as :class:`winagg.time_index.ArrivalTimes`, read from the store in O(log n)
    lookups, mostly near the head, which the level cache holds.
    """

    def __init__(self, window: "StoredWindow"):
        self._window = window

    def _span(self):
        st = self._window._state
        return first(st), end(st)

    def __len__(self) -> int:
        first, end = self._span()
        return end - first

    def __getitem__(self, k: int):
        first, end = self._span()
        return self._window.levels.get(TIME_LEVEL, (first if k >= 0 else end) + k)

    def youngest(self):
        return self[-1] if len(self) else None

    # bisect reads the times through __getitem__: O(log n) lookups, mostly near the head
    def count_upto(self, t) -> int:
        return bisect_right(self, t, 0, len(self))

    def count_before(self, t) -> int:
        return bisect_left(self, t, 0, len(self))

    def extend(self, times) -> None:
        """Write the times of the items just inserted (the youngest ``len(times)``)."""
        end = self._span()[1]
        for position, t in enumerate(times, end - len(times)):
            self._window.levels.put(TIME_LEVEL, position, t)

    def append(self, t) -> None:
        self.extend([t])

    def drop(self, count: int) -> None:
        pass  # the level forgets what lies before the window's first position (set after every change)


class StoredWindow(Aggregator):
    """An ``amta`` (or ``lmta``) window kept in ``store`` (:class:`SQLiteStore`, :class:`RedisStore`).

    The tree's levels and the items' times live in the store; local memory
    holds a write buffer and per-level read caches of ``buffer_size`` values
    (refilled when fewer than ``refill`` are left, by default half of
    ``buffer_size``), so it stays O(log n) at millions of items
    (see :mod:`winagg.store.levels`). Writes reach the store in one atomic
    batch whenever a level has ``buffer_size`` of them buffered after an
    operation, and on :meth:`flush`/:meth:`close`. A window opened on a store
    that already holds one continues it where its last flush stopped (the
    aggregation and algorithm must be the same).

    It is the per-item :class:`~winagg.aggregator.Aggregator` of its algorithm
    (``insert``, ``bulk_insert``, ``evict``, ``bulk_evict(time)``,
    ``evict_oldest(count)``, ``enforce(wsp)``, ``query``, ``partial``, ``len``,
    ``oldest_time``, ``youngest_time``), run in plain Python only (no numba):
    every step may talk to the store.
    """

    def __init__(self, store, aggregation: Any, algorithm: str = "amta",
                 buffer_size: int = 512, refill: Optional[int] = None):
        if algorithm not in _MODULES:
            raise ValueError(f"a stored window runs 'amta' or 'lmta', not {algorithm!r}")
        if isinstance(buffer_size, bool) or not isinstance(buffer_size, int) or buffer_size < 2:
            raise ValueError(f"buffer_size must be an integer >= 2, got {buffer_size!r}")
        self.store = store
        self.buffer_size = buffer_size
        self.levels = CachedLevels(store, buffer_size, buffer_size // 2 if refill is None else refill)
        monoid = aggregations.get(aggregation)
        ops = Ops(monoid.combine, monoid.identity, self._alloc, CachedLevels.load, CachedLevels.store_slot,
                  monoid.inverse, _no_jit, _no_jit)
        super().__init__(info(algorithm), monoid, ops=ops, virtual=True)
        self.levels.meta = self._bufs[1]
        self.levels.aligned = algorithm == "amta"
        self.levels.time_lo = first(self._state)

    def _alloc(self, size):
        return self.levels  # the virtual tree's one buffer: every slot is in the store

    def _start(self, capacity):
        saved = self.store.load_meta()
        if saved is None:
            super()._start(capacity)
        else:
            self._restore(pickle.loads(saved))

    def _new_times(self):
        return StoredTimes(self)

    def _make_room(self, count):
        pass  # a virtual tree addresses its levels' slots by index in the store: it never grows

    def _after(self) -> None:
        self.levels.time_lo = first(self._state)
        if self.levels.fullest >= self.buffer_size:
            self.flush()

    def __getstate__(self):
        raise TypeError("a stored window lives in its store: flush it, and open the store again elsewhere")

    # ------------------------------------------------------------ persistence
    def _snapshot(self) -> bytes:
        levels = self.levels
        return pickle.dumps(dict(
            format=_FORMAT, algorithm=self.algorithm.name, aggregation=self.monoid.name,
            meta=self._bufs[1], state=self._state, arrivals=self._arrivals, time_kind=self._unit.kind,
            stack=levels.stack,
            deleted_lo=levels.deleted_lo, written_hi=levels.written_hi), protocol=pickle.HIGHEST_PROTOCOL)

    def _restore(self, saved):
        if saved.get("format") != _FORMAT:
            raise ValueError(f"the store holds a window of format {saved.get('format')!r}, expected {_FORMAT}")
        if (saved["algorithm"], saved["aggregation"]) != (self.algorithm.name, self.monoid.name):
            raise ValueError(f"the store holds a {saved['algorithm']!r} window of {saved['aggregation']!r}, "
                             f"not {self.algorithm.name!r} of {self.monoid.name!r}")
        self._bufs = (self.levels, saved["meta"])
        self._state = saved["state"]
        self._arrivals = saved["arrivals"]
        self._unit = TimeUnit(saved["time_kind"])
        self.levels.stack = saved["stack"]
        self.levels.deleted_lo = saved["deleted_lo"]
        self.levels.written_hi = saved["written_hi"]

    def flush(self) -> None:
        """Write everything buffered and the window's state to the store (one atomic batch)."""
        self.levels.time_lo = first(self._state)
        self.levels.flush(self._state[3], self._snapshot())  # amta's and lmta's 4th field: their levels

    def close(self) -> None:
        """Flush, then close the store's connection."""
        self.flush()
        self.store.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return f"<stored {self.algorithm.name} window of {self.monoid.name} in {self.store!r}, {len(self)} items>"
