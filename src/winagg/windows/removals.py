"""Removed items of an in-order window with ``Updates`` (FlatFAT): the holes and the room around them.

A removed item leaves the identity at its position (a hole). :class:`Holes` keeps
those positions for the :class:`~winagg.windows.aggregator.Aggregator`: it maps a live
item's number to its position, drops holes at either end of the window at once
(so that the oldest and youngest positions hold live items, whose times are the
window's), and resizes after the RA paper (section 5): compact when holes fill the
room, halve the capacity when a quarter of it is used.
"""

from __future__ import annotations

from bisect import bisect_left, insort

import numpy as np

from ..core.capabilities import Updates
from ..core.state import capacity, end, first, size

#: The capacity is never halved below this many slots.
MIN_CAPACITY = 16


class Holes:
    """Sorted positions of removed items inside one window; the aggregator's state is passed in."""

    def __init__(self, positions=()):
        self.positions = list(positions)

    def __len__(self) -> int:
        return len(self.positions)

    def add(self, position: int) -> None:
        insort(self.positions, position)

    def forget_before(self, first: int) -> None:
        """Forget the holes the window's oldest position ``first`` has passed."""
        del self.positions[:bisect_left(self.positions, first)]

    def position_of(self, agg, index) -> int:
        """Position of the live item number ``index`` of ``agg`` (negative counts from the youngest)."""
        live = len(agg)
        if not isinstance(index, (int, np.integer)) or isinstance(index, bool):
            raise TypeError(f"index must be an integer, got {type(index).__name__}")
        if index < 0:
            index += live
        if not 0 <= index < live:
            raise IndexError(f"index {index} out of range for a window of {live} items")
        pos = first(agg._state) + int(index)
        for hole in self.positions:  # every hole at or before the candidate shifts it one further
            if hole > pos:
                break
            pos += 1
        return pos

    def tidy(self, agg) -> None:
        """Drop the holes at the window's ends, then shrink the room if a quarter of it is used."""
        self._trim(agg)
        while capacity(agg._state) > MIN_CAPACITY and 4 * len(agg) < capacity(agg._state):
            if self.positions:
                self.compact(agg)
            if 2 * size(agg._state) > capacity(agg._state):
                return
            agg._bufs, agg._state = agg._funcs.shrink(agg._bufs, agg._state)

    def _trim(self, agg) -> None:
        dead, oldest = self.positions, first(agg._state)
        leading = 0
        while leading < len(dead) and dead[leading] == oldest + leading:
            leading += 1
        if leading:
            agg._state = agg._funcs.bulk_evict(agg._bufs, agg._state, leading)
            del dead[:leading]
            agg._times.drop(leading)
        while dead and dead[-1] == end(agg._state) - 1:
            agg._state = agg._funcs.drop_youngest(agg._state)  # its slot already holds the identity
            dead.pop()
            agg._times.pop()

    def compact(self, agg) -> None:
        """Move the live items together (the holes go) in one pass."""
        alive = np.ones(size(agg._state), dtype=np.bool_)
        oldest = first(agg._state)
        for hole in self.positions:
            alive[hole - oldest] = False
        agg._state = agg._funcs.compact(agg._bufs, agg._state, alive)
        agg._times.keep(alive)
        self.positions = []


class ItemUpdates:
    """The per-item aggregator's operations on any item, for algorithms with ``Updates`` (part of
    :class:`winagg.windows.aggregator.Aggregator`, kept here beside the holes they leave)."""

    def update(self, index, value) -> None:
        """Replace the item at ``index`` (0 = oldest) by ``value``; its time stays. O(log n)."""
        self._needs(Updates, "update; use 'flatfat'")
        pos = self._holes.position_of(self, index)
        self._state = self._funcs.write(self._bufs, self._state, pos, self.monoid.lift(value))

    def update_many(self, indices, values) -> None:
        """Replace several items at once (distinct indices), one level-by-level tree update."""
        self._needs(Updates, "update; use 'flatfat'")
        indices, values = list(indices), list(values)
        if len(indices) != len(values):
            raise ValueError(f"update_many got {len(indices)} indices but {len(values)} values")
        positions = np.array([self._holes.position_of(self, i) for i in indices], dtype=np.int64)
        if len(set(positions.tolist())) != len(positions):
            raise ValueError("update_many needs distinct indices")
        partials = [self.monoid.lift(v) for v in values]
        self._state = self._funcs.write_many(self._bufs, self._state, positions, partials, len(partials))

    def remove(self, index) -> None:
        """Delete the item at ``index`` (0 = oldest) and its time from the window. O(log n)."""
        self._needs(Updates, "remove; use 'flatfat'")
        pos = self._holes.position_of(self, index)
        self._state = self._funcs.write(self._bufs, self._state, pos, self.monoid.identity)
        self._holes.add(pos)
        self._tidy()
