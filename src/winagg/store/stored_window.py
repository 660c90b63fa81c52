"""A Monoid Tree Aggregator window whose levels live in a key-value store.

What a store holds is data, never code: values are :mod:`winagg.store.codec`
blobs and the metadata is JSON (:mod:`winagg.store.metadata`), so opening a
store from anywhere runs nothing from it, and a damaged one raises
:class:`~winagg.StoreCorruptError`. One window writes through one store
(:mod:`winagg.store.locks`).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Any, Optional

from .. import aggregations
from ..windows.aggregator import Aggregator
from ..core.errors import StoreCorruptError
from ..algos.fifo.mta_tree import MAX_LEVELS, META_SIZE, VIRTUAL_SHIFT, height
from ..core.ops import Ops
from ..algos.registry import algorithms, info
from ..core.state import end, first
from ..windows.time_index import TimeUnit
from . import metadata
from .codec import encode
from .levels import STACK_LEVEL, TIME_LEVEL, CachedLevels



def _stored_layout(algorithm: str):
    """The algorithm's layout for a store (its module's ``STORED``: the MTAs lay their levels out
    for a key-value store); ValueError for an algorithm without one."""
    layout = getattr(info(algorithm).load(), "STORED", None)
    if layout is None:
        stored = [a.name for a in algorithms() if getattr(a.load(), "STORED", None) is not None]
        raise ValueError(f"a stored window runs {' or '.join(map(repr, stored))}, not {algorithm!r}")
    return layout


def _no_jit(fn):
    return fn


class StoredTimes:
    """The window's times in the store's time level: item ``k`` (0 = oldest) is at position ``first + k``.

    The same interface as :class:`winagg.windows.time_index.ArrivalTimes`, read from the store in O(log n)
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
    batch before an operation that changes the window, once a level has
    ``buffer_size`` of them buffered, and on :meth:`flush`/:meth:`close`.
    Flushing before the change rather than after it means that an operation
    whose flush fails raises with the window exactly as it was: retried, it
    applies once. A window opened on a store that already holds one continues
    it where its last flush stopped (the aggregation and algorithm must be
    the same).

    One window per store, one store per window: the store holds the
    window's lock until it is closed, and a second window on the same store
    object raises :class:`~winagg.StoreLockedError`.

    It is the per-item :class:`~winagg.windows.aggregator.Aggregator` of its algorithm
    (``insert``, ``bulk_insert``, ``evict``, ``bulk_evict(time)``,
    ``evict_oldest(count)``, ``enforce(wsp)``, ``query``, ``partial``, ``len``,
    ``oldest_time``, ``youngest_time``), run in plain Python only (no numba):
    every step may talk to the store. Partials and times must be of the types
    :mod:`winagg.store.codec` keeps; an aggregation whose identity is of
    another type is refused with ``TypeError``.
    """

    def __init__(self, store, aggregation: Any, algorithm: str = "amta",
                 buffer_size: int = 512, refill: Optional[int] = None):
        stored = _stored_layout(algorithm)
        if isinstance(buffer_size, bool) or not isinstance(buffer_size, int) or buffer_size < 2:
            raise ValueError(f"buffer_size must be an integer >= 2, got {buffer_size!r}")
        self.store = store
        self.buffer_size = buffer_size
        self.levels = CachedLevels(store, buffer_size, buffer_size // 2 if refill is None else refill)
        self._enforcing = False
        monoid = aggregations.get(aggregation)
        encode(monoid.identity)  # a partial the store cannot keep is refused now, not at a flush
        ops = Ops(monoid.combine, monoid.identity, self._alloc, CachedLevels.load, CachedLevels.store_slot,
                  monoid.inverse, _no_jit, _no_jit)
        super().__init__(info(algorithm), monoid, ops=ops, virtual=True)
        self.levels.meta = self._bufs[1]
        self.levels.aligned = stored.aligned
        self.levels.time_lo = first(self._state)
        store.claim(self)

    def _alloc(self, size):
        return self.levels  # the virtual tree's one buffer: every slot is in the store

    def _start(self, capacity):
        saved = self.store.load_meta()
        if saved is not None:
            self._restore(metadata.loads(saved, repr(self.store)))
        elif self.store.is_empty():
            super()._start(capacity)
        else:
            raise StoreCorruptError(f"{self.store!r} holds values but no metadata (it was changed outside winagg): "
                                    f"clear() it and rebuild the window")

    def _new_times(self):
        return StoredTimes(self)

    def _make_room(self, count):
        pass  # a virtual tree addresses its levels' slots by index in the store: it never grows

    def _after(self) -> None:
        self.levels.time_lo = first(self._state)

    def __getstate__(self):
        raise TypeError("a stored window lives in its store: flush it, and open the store again elsewhere")

    # ------------------------------------------------------------ changes: a full buffer is flushed first
    def _flush_if_full(self) -> None:
        # before the change, not after it: a flush that fails then raises with the window unchanged
        # (enforce's own evictions are part of one change and do not flush in between)
        if self.levels.fullest >= self.buffer_size and not self._enforcing:
            self.flush()

    def insert(self, value: Any, time: Any = None) -> None:
        self._flush_if_full()
        super().insert(value, time)

    def bulk_insert(self, values, times=None) -> None:
        self._flush_if_full()
        super().bulk_insert(values, times)

    def evict(self) -> None:
        self._flush_if_full()
        super().evict()

    def bulk_evict(self, time: Any) -> int:
        self._flush_if_full()
        return super().bulk_evict(time)

    def evict_oldest(self, count: int) -> int:
        self._flush_if_full()
        return super().evict_oldest(count)

    def enforce(self, wsp, total=None) -> int:
        self._flush_if_full()
        self._enforcing = True
        try:
            return super().enforce(wsp, total)
        finally:
            self._enforcing = False

    # ------------------------------------------------------------ persistence
    def _snapshot(self) -> bytes:
        levels, ints = self.levels, _stored_layout(self.algorithm.name).state_ints
        return metadata.dumps(self.algorithm.name, str(self.monoid.name), self._bufs[1], self._state[:ints],
                              self._state[ints:], levels.stack, self._arrivals, self._unit.kind,
                              levels.deleted_lo, levels.written_hi)

    def _restore(self, saved):
        if (saved["algorithm"], saved["aggregation"]) != (self.algorithm.name, str(self.monoid.name)):
            raise ValueError(f"the store holds a {saved['algorithm']!r} window of {saved['aggregation']!r}, "
                             f"not {self.algorithm.name!r} of {self.monoid.name!r}")
        ints, partials = saved["state"]
        self._check_shape(saved, ints, partials)
        self._bufs = (self.levels, saved["tree"])
        self._state = tuple(ints) + tuple(partials)
        self._arrivals = saved["arrivals"]
        self._unit = TimeUnit(saved["time_kind"])
        self.levels.stack = saved["stack"]
        self.levels.deleted_lo = saved["deleted_lo"]
        self.levels.written_hi = saved["written_hi"]

    def _check_shape(self, saved, ints, partials) -> None:
        """StoreCorruptError unless the saved fields have the sizes and ranges this algorithm's window has."""
        layout = _stored_layout(self.algorithm.name)
        problem = None
        if len(saved["tree"]) != META_SIZE:
            problem = f"its tree has {len(saved['tree'])} fields, not {META_SIZE}"
        elif (len(ints), len(partials)) != (layout.state_ints, layout.state_partials):
            problem = (f"its state has {len(ints)} integers and {len(partials)} partials, not "
                       f"{layout.state_ints} and {layout.state_partials}")
        elif not 0 <= ints[1] <= ints[2] or not 1 <= ints[3] <= MAX_LEVELS:
            problem = f"its state {ints} has no window (0 <= first <= end, 1 <= levels <= {MAX_LEVELS})"
        elif any(slot >> VIRTUAL_SHIFT != STACK_LEVEL for slot in saved["stack"]):
            problem = "its stack has an entry outside the stack's level"
        elif any(not 0 <= level <= TIME_LEVEL or index < 0
                 for spans in (saved["deleted_lo"], saved["written_hi"]) for level, index in spans.items()):
            problem = "its stored ranges name a level or index that does not exist"
        if problem is not None:
            raise StoreCorruptError(f"{self.store!r}: the metadata of its {self.algorithm.name} window is damaged: {problem}")

    def flush(self) -> None:
        """Write everything buffered and the window's state to the store (one atomic batch).

        If it raises, the window and its buffers are as they were, and ``flush`` can be called again.
        """
        self.levels.time_lo = first(self._state)
        self.levels.flush(height(self._state), self._snapshot())

    def close(self) -> None:
        """Flush, then close the store (its connection and the window's lock)."""
        self.flush()
        self.store.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return f"<stored {self.algorithm.name} window of {self.monoid.name} in {self.store!r}, {len(self)} items>"
