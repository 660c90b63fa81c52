"""A Monoid Tree Aggregator window whose levels live in a key-value store."""

from __future__ import annotations

import pickle
from typing import Any, Iterable, Optional

import numpy as np

from .. import aggregations
from ..aggregator import check_in_order, check_time
from ..errors import EmptyWindowError
from ..fifo import amta, lmta
from ..fifo.mta_aggregator import MTAAggregator
from ..ops import Ops
from ..registry import info
from .levels import TIME_LEVEL, CachedLevels

#: 3: amta keeps its event positions in meta and R0 with the oldest block's entries in the stack, and its state
#: has six fields (format 2 did neither).
_FORMAT = 3
_MODULES = {"amta": amta, "lmta": lmta}


def _no_jit(fn):
    return fn


class StoredWindow:
    """An ``amta`` (or ``lmta``) window kept in ``store`` (:class:`SQLiteStore`, :class:`RedisStore`).

    The tree's levels and the items' times live in the store; local memory
    holds a write buffer and per-level read caches of ``buffer_size`` values
    (refilled when fewer than ``refill`` are left, by default half of
    ``buffer_size``), so it stays O(log n) at millions of items
    (see :mod:`winagg.store.levels`). Writes reach the store in one atomic
    batch whenever a level has ``buffer_size`` of them buffered, and on
    :meth:`flush`/:meth:`close`. A window opened on a store that already
    holds one continues it where its last flush stopped (the aggregation and
    algorithm must be the same).

    The interface is that of the in-memory MTA aggregators: ``insert``,
    ``bulk_insert``, ``evict``, ``bulk_evict(time)``, ``evict_oldest(count)``,
    ``enforce(wsp)`` (Window Slide Policy), ``query``, ``partial``, ``len``,
    ``oldest_time``, ``youngest_time``. It runs in plain Python only (no
    numba): every step may talk to the store.
    """

    def __init__(self, store, aggregation: Any, algorithm: str = "amta",
                 buffer_size: int = 512, refill: Optional[int] = None):
        if algorithm not in _MODULES:
            raise ValueError(f"a stored window runs 'amta' or 'lmta', not {algorithm!r}")
        self.store = store
        self.algorithm = info(algorithm)
        self.monoid = aggregations.get(aggregation)
        if isinstance(buffer_size, bool) or not isinstance(buffer_size, int) or buffer_size < 2:
            raise ValueError(f"buffer_size must be an integer >= 2, got {buffer_size!r}")
        self.buffer_size = buffer_size
        self.levels = CachedLevels(store, buffer_size, buffer_size // 2 if refill is None else refill)
        monoid = self.monoid
        ops = Ops(monoid.combine, monoid.identity, self._alloc, CachedLevels.load, CachedLevels.store_slot,
                  monoid.inverse, _no_jit, _no_jit)
        self._funcs = _MODULES[algorithm].build(ops, virtual=True)
        saved = store.load_meta()
        if saved is None:
            self._bufs, self._state = self._funcs.init(16)
            self._arrivals = 0
        else:
            self._restore(pickle.loads(saved))
        self.levels.meta = self._bufs[1]
        self.levels.aligned = algorithm == "amta"
        self.levels.time_lo = self._state[1]

    def _alloc(self, size):
        return self.levels  # the virtual tree's one buffer: every slot is in the store

    # ------------------------------------------------------------ persistence
    def _snapshot(self) -> bytes:
        levels = self.levels
        return pickle.dumps(dict(
            format=_FORMAT, algorithm=self.algorithm.name, aggregation=self.monoid.name,
            meta=self._bufs[1], state=self._state, arrivals=self._arrivals, stack=levels.stack,
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
        self.levels.stack = saved["stack"]
        self.levels.deleted_lo = saved["deleted_lo"]
        self.levels.written_hi = saved["written_hi"]

    def flush(self) -> None:
        """Write everything buffered and the window's state to the store (one atomic batch)."""
        self.levels.time_lo = self._state[1]
        self.levels.flush(self._state[3], self._snapshot())

    def _maybe_flush(self):
        if self.levels.fullest >= self.buffer_size:
            self.flush()

    def close(self) -> None:
        """Flush, then close the store's connection."""
        self.flush()
        self.store.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ------------------------------------------------------------ inserting
    def insert(self, value, time=None) -> None:
        """Append ``value`` at ``time`` (default: its arrival number)."""
        self.bulk_insert([value], None if time is None else [time])

    def bulk_insert(self, values: Iterable, times: Optional[Iterable] = None) -> None:
        """Append a batch; ``times`` must be sorted and no older than the youngest time."""
        values = list(values)
        times = list(range(self._arrivals, self._arrivals + len(values))) if times is None else list(times)
        if len(times) != len(values):
            raise ValueError(f"bulk_insert got {len(values)} values but {len(times)} times")
        check_in_order(times, self.youngest_time(), lambda i: f"times[{i}]" if len(times) > 1 else "time",
                       "a stored window")
        partials = [self.monoid.lift(v) for v in values]  # lift everything before changing state
        insert, bufs, levels = self._funcs.insert, self._bufs, self.levels
        for partial, t in zip(partials, times):
            levels.put(TIME_LEVEL, self._state[2], t)
            self._state = insert(bufs, self._state, partial)
            self._arrivals += 1
            self._maybe_flush()

    # ------------------------------------------------------------ evicting
    def evict(self) -> None:
        """Drop the oldest item; :class:`~winagg.EmptyWindowError` if the window is empty."""
        if not len(self):
            raise EmptyWindowError(f"evict() on an empty stored {self.algorithm.name} window")
        self._state = self._funcs.evict(self._bufs, self._state)
        self.levels.time_lo = self._state[1]
        self._maybe_flush()

    def evict_oldest(self, count: int) -> int:
        """Drop the ``count`` oldest items (all if there are fewer) in O(log n); returns how many went."""
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)):
            raise TypeError(f"count must be a whole number of items, got {count!r}")
        count = int(count)
        if count < 0:
            raise ValueError(f"count must be >= 0, got {count}")
        count = min(count, len(self))
        if count:
            self._state = self._funcs.bulk_evict(self._bufs, self._state, count)
            self.levels.time_lo = self._state[1]
            self._maybe_flush()
        return count

    def bulk_evict(self, time) -> int:
        """Drop every item whose time is <= ``time``; returns how many were dropped."""
        check_time(time)
        return self.evict_oldest(self._count_up_to(time))

    def _count_up_to(self, time) -> int:
        # binary search over the stored times: O(log n) reads, mostly near the head
        lo, hi = self._state[1], self._state[2]
        while lo < hi:
            mid = (lo + hi) // 2
            if self.levels.get(TIME_LEVEL, mid) <= time:
                lo = mid + 1
            else:
                hi = mid
        return lo - self._state[1]

    def enforce(self, wsp, total=None) -> int:
        """Evict the longest oldest prefix that ``wsp(total, prefix)`` allows (see ``MTAAggregator.enforce``)."""
        return MTAAggregator.enforce(self, wsp, total)

    # ------------------------------------------------------------ reading
    def partial(self):
        """The unlowered aggregate of the whole window."""
        return self._funcs.query(self._bufs, self._state)

    def query(self) -> Any:
        """The lowered aggregate of the window (the identity's lowering when empty)."""
        return self.monoid.lower(self.partial())

    def __len__(self) -> int:
        return self._state[2] - self._state[1]

    def oldest_time(self):
        """Time of the oldest item, or None when the window is empty."""
        return self.levels.get(TIME_LEVEL, self._state[1]) if len(self) else None

    def youngest_time(self):
        """Time of the youngest item, or None when the window is empty."""
        return self.levels.get(TIME_LEVEL, self._state[2] - 1) if len(self) else None

    def __repr__(self):
        return f"<stored {self.algorithm.name} window of {self.monoid.name} in {self.store!r}, {len(self)} items>"
