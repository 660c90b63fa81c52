"""The buffer a stored window's tree runs on: the store plus a write buffer and per-level read caches.

The MTA tree built with ``virtual=True`` (:func:`winagg.algos.fifo.mta_tree.build_tree`)
addresses element ``index`` of level ``level`` as the slot
``(level << 48) + index``. :class:`CachedLevels` is the ``vals`` buffer behind
``load``/``store`` for such a tree. It keeps, in local memory:

* per level, a *write buffer*: the values written since the last flush (the
  window flushes, one atomic store batch for all levels, before it changes
  again once one level's holds ``buffer_size`` of them);
* per level, a *head cache*: ``buffer_size`` consecutive values read from the
  store from the level's oldest element on, refilled when fewer than
  ``refill`` are left ahead of the read (the paper: 512 and 256);
* per level, the last few values written (the tail pairs that inserts and
  the result pair read again);
* the AMTA stack (O(log n) partials), saved with the window's metadata.

Everything else lives only in the store, so local memory is
O(buffer_size * log n) whatever the window's size. Plain Python only. Values
go to the store as :mod:`winagg.store.codec` blobs; one that is damaged
raises :class:`~winagg.StoreCorruptError` naming its level and index.
"""

from __future__ import annotations

from typing import Dict, List, Optional

from ..core.errors import StoreCorruptError
from ..algos.fifo.mta_tree import HI, LO, MAX_LEVELS, VIRTUAL_SHIFT
from .codec import decode, encode

#: Slots at this level are the AMTA stack (kept locally, see the module docstring).
STACK_LEVEL = MAX_LEVELS
#: The level a stored window keeps the items' times in, indexed by item position.
TIME_LEVEL = MAX_LEVELS + 1
INDEX_MASK = (1 << VIRTUAL_SHIFT) - 1
#: Values written last that each level keeps at hand (at least 2: a tail pair).
RECENT = 4
_MISSING = object()
_ABSENT = object()  # a cell the store does not hold


class CachedLevels:
    """Store-backed ``vals`` buffer of a virtual MTA tree (see the module docstring).

    ``meta`` (the tree's index ranges), ``time_lo`` (the oldest position) and
    ``aligned`` (whether the levels' ranges follow from ``time_lo``) are set by
    the window; the head caches use them to tell a read at the head of a level
    (refilled in batches) from a stray one (read alone).
    """

    def __init__(self, store, buffer_size: int = 512, refill: int = 256):
        if not 0 < refill <= buffer_size:
            raise ValueError(f"need 0 < refill <= buffer_size, got refill={refill}, buffer_size={buffer_size}")
        self.store = store
        self.buffer_size = buffer_size
        self.refill = refill
        self.meta: Optional[list] = None
        self.aligned = False  # level l's oldest index is time_lo >> l (the algorithm's STORED.aligned)
        self.time_lo = 0
        self.stack: Dict[int, object] = {}
        self.dirty: Dict[int, Dict[int, object]] = {}
        self.dirty_count = 0
        self.fullest = 0  # the most values one level's write buffer holds
        self.recent: Dict[int, Dict[int, object]] = {}
        self.head: Dict[int, tuple] = {}  # level -> (first index, list of values)
        # what the store may hold per level: indices deleted_lo .. written_hi - 1
        self.deleted_lo: Dict[int, int] = {}
        self.written_hi: Dict[int, int] = {}
        self.store_reads = 0  # round trips, for experiments

    # ------------------------------------------------------------ the buffer protocol
    def load(self, slot):
        """The partial at a virtual slot (``load`` of the tree's ops)."""
        level = slot >> VIRTUAL_SHIFT
        if level == STACK_LEVEL:
            return self.stack[slot]
        return self.get(level, slot & INDEX_MASK)

    def store_slot(self, slot, value) -> None:
        """Write the partial at a virtual slot (``store`` of the tree's ops)."""
        level = slot >> VIRTUAL_SHIFT
        if level == STACK_LEVEL:
            self.stack[slot] = value
        else:
            self.put(level, slot & INDEX_MASK, value)

    # ------------------------------------------------------------ reads
    def get(self, level: int, index: int):
        """The value at ``index`` of ``level``: from the local buffers, else from the store."""
        recent = self.recent.get(level)
        if recent is not None:
            value = recent.get(index, _MISSING)
            if value is not _MISSING:
                return value
        head = self.head.get(level)
        if head is not None:
            start, values = head
            offset = index - start
            if 0 <= offset < len(values):
                if len(values) - offset < self.refill:
                    self._refill(level, index)
                return self._present(values[offset], level, index)
        dirty = self.dirty.get(level)
        if dirty is not None:
            value = dirty.get(index, _MISSING)
            if value is not _MISSING:
                return value
        return self._miss(level, index)

    def _lo(self, level):
        if level == TIME_LEVEL:
            return self.time_lo
        # an amta tree's levels are aligned and it keeps their ranges in meta only when
        # another operation needs them: its level l starts at the oldest item's index >> l
        return self.time_lo >> level if self.aligned else self.meta[LO + level]

    def _miss(self, level, index):
        if 0 <= index - self._lo(level) < self.buffer_size:
            # a read at the head of the level: the next reads follow it, fetch a batch
            self.head[level] = (index, self._fetch(level, index, index + self.buffer_size))
            return self._present(self.head[level][1][0], level, index)
        self.store_reads += 1
        raw = self.store.get_many(level, [index])[0]
        return self._present(_ABSENT if raw is None else self._decoded(raw, level, index), level, index)

    def _present(self, value, level, index):
        """``value``, or StoreCorruptError when the window needs a cell the store does not hold."""
        if value is _ABSENT:
            raise StoreCorruptError(f"{self.store!r} has no value at level {level}, index {index}, which the "
                                    f"window holds: the store was changed outside winagg; clear() it and "
                                    f"rebuild the window")
        return value

    def _decoded(self, blob, level, index):
        """The value stored as ``blob``; StoreCorruptError naming the cell when the bytes are damaged."""
        try:
            return decode(blob)
        except StoreCorruptError as damage:
            raise StoreCorruptError(f"{self.store!r}, level {level}, index {index}: {damage}") from damage

    def _refill(self, level, index):
        start, values = self.head[level]
        kept = values[index - start:]
        stop = start + len(values)
        self.head[level] = (index, kept + self._fetch(level, stop, index + self.buffer_size))

    def _fetch(self, level, lo, hi) -> List[object]:
        self.store_reads += 1
        raw = self.store.get_range(level, lo, hi)
        dirty = self.dirty.get(level, {})
        values = []
        for i in range(lo, hi):
            # unflushed writes are newer than the store
            value = dirty.get(i, _MISSING)
            if value is _MISSING:
                blob = raw.get(i)
                value = _ABSENT if blob is None else self._decoded(blob, level, i)  # absent: past the end, or lost
            values.append(value)
        return values

    # ------------------------------------------------------------ writes
    def put(self, level: int, index: int, value) -> None:
        """Write a value; it reaches the store at the next :meth:`flush`."""
        dirty = self.dirty.setdefault(level, {})
        if index not in dirty:
            self.dirty_count += 1
            dirty[index] = value
            if len(dirty) > self.fullest:
                self.fullest = len(dirty)
        else:
            dirty[index] = value
        recent = self.recent.setdefault(level, {})
        recent[index] = value
        if len(recent) > 4 * RECENT:  # trimmed now and then: sorting on every write costs
            for old in sorted(recent)[:-RECENT]:
                del recent[old]
        head = self.head.get(level)
        if head is not None and 0 <= index - head[0] < len(head[1]):
            head[1][index - head[0]] = value  # keep the cache coherent with the write
        if index < self.deleted_lo.get(level, index + 1):
            self.deleted_lo[level] = index
        if index >= self.written_hi.get(level, 0):
            self.written_hi[level] = index + 1

    def flush(self, levels: int, meta_blob: Optional[bytes]) -> None:
        """Write the buffered values, delete what left the window, save ``meta_blob``: one batch.

        ``levels`` is the tree's height: levels at and above it are dead and
        deleted whole; a live level keeps indices from its oldest element on.
        If the batch fails (the store raises, or a value cannot be encoded),
        nothing here changes: the same flush can be tried again.
        """
        puts = {level: {i: encode(v) for i, v in values.items()} for level, values in self.dirty.items() if values}
        kept_from = {level: self._kept_from(level, levels) for level in self.deleted_lo}
        deletes = [(level, lo, kept_from[level]) for level, lo in self.deleted_lo.items() if kept_from[level] > lo]
        self.store.write(puts, deletes, meta_blob)
        for level, _, keep_from in deletes:
            self.deleted_lo[level] = keep_from
        for level in kept_from:
            if not self._live(level, levels):  # nothing of a dead level is worth caching
                self.head.pop(level, None)
                self.recent.pop(level, None)
        self.dirty = {}
        self.dirty_count = 0
        self.fullest = 0

    @staticmethod
    def _live(level: int, levels: int) -> bool:
        return level < levels or level == TIME_LEVEL

    def _kept_from(self, level: int, levels: int) -> int:
        """The first index of ``level`` the store must keep: its oldest element's (past every index if dead)."""
        return self._lo(level) if self._live(level, levels) else self.written_hi[level]

    def cached_values(self) -> int:
        """How many values the local buffers hold (bounded by about ``2 * buffer_size`` per level)."""
        return (self.dirty_count + sum(len(r) for r in self.recent.values())
                + sum(len(h[1]) for h in self.head.values()) + len(self.stack))
