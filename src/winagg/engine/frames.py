"""Spark's window frames as plans of the window driver (:mod:`winagg.engine.loops`).

Rows arrive sorted by (key, order) in Arrow batches; a frame's state (which rows
of a row frame entered the window, the times of a range frame's items) lives
here, apart from the aggregation's state, and is carried from batch to batch.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .plans import Plan

_NONE_B = np.empty(0, np.bool_)


# ``reset[k]`` is KEY_STARTS at a key's first row (the window empties and positions restart)
# and WINDOW_STARTS where only the window empties (after a range frame's group of null order
# values). Missing rows (``valid[k]`` false) take a place in a row frame but never enter the window.

#: Codes of the ``reset`` array.
NO_RESET, WINDOW_STARTS, KEY_STARTS = 0, 1, 2


@nb.njit(cache=True)
def _row_frame_plan(valid, reset, window, ring, head, rows, held, seen):
    n = valid.shape[0]
    evicts = np.zeros(n, np.int64)
    positions = np.empty(n, np.int64)
    for k in range(n):
        if reset[k] != 0:
            evicts[k] = held
            held, head, rows = 0, 0, 0
            if reset[k] == KEY_STARTS:
                seen = 0
        if rows == window:
            if ring[head]:
                evicts[k] += 1
                held -= 1
            head = head + 1 if head + 1 < window else 0
            rows -= 1
        slot = head + rows
        ring[slot - window if slot >= window else slot] = valid[k]
        rows += 1
        if valid[k]:
            held += 1
        positions[k] = seen
        seen += 1
    return evicts, positions, head, rows, held, seen


class RowFrames:
    """Plans for Spark's ``rowsBetween(-(window - 1), 0)`` carried across batches."""

    def __init__(self, window: int):
        self.window = int(window)
        self.ring = np.zeros(self.window, np.bool_)  # which rows of the frame entered the window
        self.head = self.rows = self.held = self.seen = 0

    def plan(self, valid: np.ndarray, reset: np.ndarray) -> Plan:
        evicts, positions, self.head, self.rows, self.held, self.seen = _row_frame_plan(
            valid, reset, self.window, self.ring, self.head, self.rows, self.held, self.seen)
        return Plan(evicts, valid, _NONE_B, positions, 0, self.window)


@nb.njit(cache=True)
def _range_frame_plan(valid, reset, group_start, times, span, held, head, tail, seen):
    n = valid.shape[0]
    evicts = np.zeros(n, np.int64)
    emits = np.zeros(n, np.bool_)
    owner = np.empty(n, np.int64)  # the row that answers for row k: its group's last
    positions = np.empty(n, np.int64)
    room = tail - head
    k = 0
    while k < n:
        if reset[k] != 0:
            evicts[k] = tail - head
            head, tail = 0, 0
            if reset[k] == KEY_STARTS:
                seen = 0
        end = k + 1
        while end < n and not group_start[end]:
            end += 1
        t = times[k]
        horizon = t - span
        expired = head
        while expired < tail and held[expired] < horizon:
            expired += 1
        evicts[k] += expired - head  # the group's items are all younger than the horizon
        head = expired
        for r in range(k, end):
            if valid[r]:
                held[tail] = t
                tail += 1
            positions[r] = seen
            owner[r] = end - 1
            seen += 1
        room = max(room, tail - head)
        emits[end - 1] = True
        k = end
    return evicts, emits, owner, positions, head, tail, seen, room


class RangeFrames:
    """Plans for Spark's ``rangeBetween(-span, 0)`` carried across batches.

    Rows from one ``group_start`` to the next share an order value (peers); only
    the group's last row answers (after the whole group is in the window) and
    :meth:`spread` copies its answer to the group. Callers pass whole groups.
    """

    owner: np.ndarray  # of the last plan: owner[k] is the row that answers for row k
    alone: bool  # of the last plan: every row answers for itself

    def __init__(self, span, time_dtype):
        self.time_type = np.dtype(time_dtype).type
        self.span = self.time_type(span)
        self.held = np.empty(16, self.time_type)  # times of the window's items: held[head:tail]
        self.head = self.tail = self.seen = 0

    def plan(self, valid, reset, group_start, times) -> Plan:
        live = self.tail - self.head
        if live + valid.shape[0] > self.held.shape[0]:
            bigger = np.empty(max(2 * self.held.shape[0], live + valid.shape[0]), self.time_type)
            bigger[:live] = self.held[self.head:self.tail]
            self.held = bigger
        elif self.head > 0:
            self.held[:live] = self.held[self.head:self.tail]  # numpy copies overlapping slices safely
        self.head, self.tail = 0, live
        evicts, emits, self.owner, positions, self.head, self.tail, self.seen, room = _range_frame_plan(
            valid, reset, group_start, times.astype(self.time_type, copy=False), self.span,
            self.held, self.head, self.tail, self.seen)
        self.alone = bool(emits.all())  # every row its own group (distinct order values): nothing to spread
        return Plan(evicts, valid, emits, positions, 0, max(int(room), 1))

    def __getstate__(self):
        # A streaming key pickles its frames between micro-batches: the window's times, not the
        # buffer's spare room nor the last plan's owners (a plan makes its own).
        state = dict(self.__dict__)
        state["held"] = self.held[self.head:self.tail].copy()
        state["head"], state["tail"] = 0, self.tail - self.head
        state.pop("owner", None)
        state.pop("alone", None)
        return state

    def spread(self, values):
        """``values`` of the last plan's steps with each group's answer (given at the group's
        last row) copied to every row of the group."""
        if self.alone:
            return values
        if isinstance(values, np.ndarray):
            return values[self.owner]
        return [values[j] for j in self.owner]
