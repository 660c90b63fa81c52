"""The window driver: every in-order window is one loop of evict, insert, answer.

A window kind decides only *which* items leave and *when* an answer is due;
the aggregation loop never looks at rows, times, keys or peers. Like pandas'
window indexers, the bounds come first, as a :class:`Plan` of three steps per
input row:

1. evict the ``evicts[k]`` oldest items of the window,
2. insert row k's value (unless ``inserts[k]`` is false: a missing value),
3. answer (unless ``emits[k]`` is false: a row whose answer comes later).

Plans are made by numpy or by small compiled functions that know nothing of
the aggregation (:func:`row_plan`, :func:`time_plan`, :func:`script_plan`,
:class:`RowFrames`, :class:`RangeFrames`), so they are compiled once per
process, not once per algorithm and aggregation. One driver,
:func:`build_driver`, runs every plan; it is written once and runs compiled
(:func:`compiled_driver`, one kernel per algorithm and aggregation, the whole
loop in numba) or in plain Python for any monoid (:func:`python_driver`).
``winagg.rolling``, the Spark partition engine and the tests' operation
scripts all run through it.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numba as nb
import numpy as np

from . import jitcache
from .ops import build_evict_many, compiled_ops, python_ops


class Plan(NamedTuple):
    """What each step of the driver does (see the module's docstring).

    An empty array means the common case for every step: ``evicts`` empty
    evicts one item at each step from ``window`` on (a row window of
    ``window`` rows), ``inserts`` empty inserts at every step, ``emits``
    empty answers at every step and ``positions`` empty gives step k the
    position k (the row number positional aggregations such as argmax see).
    ``room`` is the most items the window holds at once during the plan.
    """

    evicts: np.ndarray
    inserts: np.ndarray
    emits: np.ndarray
    positions: np.ndarray
    window: int
    room: int


_NONE_I = np.empty(0, np.int64)
_NONE_B = np.empty(0, np.bool_)


# ---------------------------------------------------------------- the driver
class Driver(NamedTuple):
    """One algorithm over one aggregation, ready to run plans (see :func:`run`)."""

    #: ``drive(values, plan..., state, want_counts) -> (out, counts, state)``
    drive: Callable
    #: ``make_room(state, room) -> state``: capacity for ``room`` items
    make_room: Callable
    #: ``init(capacity) -> state``: an empty window
    init: Callable


def build_driver(funcs, evict_many, lift: Callable, lower: Callable, new_out: Callable, position: Callable,
                 jit: Callable) -> Driver:
    """The driver's loop over ``funcs``, one source for both modes (``jit`` compiles or not).

    ``position(positions, k)`` is the position step k lifts with (see :data:`POSITIONS`).
    ``state`` is the algorithm's ``(bufs, st)``. ``out[k]`` and ``counts[k]``
    (the window's size, when ``want_counts``) are written where the step answers
    and left unset elsewhere. Room for the whole plan is made before the loop, in
    its own function: where a buffer may be reassigned (a grow) in the loop's
    function, numba keeps reference counts and reloads it on every row (FiBA ran
    at half speed; the range kernel was 6x slower with a grow in its loop).
    """
    insert, evict, query, grow = funcs.insert, funcs.evict, funcs.query, funcs.grow

    def make_room(state, room):
        bufs, st = state
        while room > st[0] + 1:
            bufs, st = grow(bufs, st)
        return bufs, st

    def drive(values, evicts, inserts, emits, positions, window, state, want_counts):
        bufs, st = state
        n = values.shape[0]
        out = new_out(n)
        counts = np.empty(n if want_counts else 0, np.int64)
        rows_only = evicts.shape[0] == 0
        every_insert = inserts.shape[0] == 0
        every_emit = emits.shape[0] == 0
        for k in range(n):
            if rows_only:
                if k >= window:
                    st = evict(bufs, st)
            else:
                gone = evicts[k]
                if gone == 1:
                    st = evict(bufs, st)
                elif gone > 1:
                    st = evict_many(bufs, st, gone)
            if every_insert or inserts[k]:
                st = insert(bufs, st, lift(values[k], position(positions, k)))
            if every_emit or emits[k]:
                out[k] = lower(query(bufs, st))
                if want_counts:
                    counts[k] = st[2] - st[1]
        return out, counts, (bufs, st)

    return Driver(jit(drive), jit(make_room), funcs.init)


def _step_number(positions, k):
    return k


def _planned_position(positions, k):
    return positions[k] if positions.shape[0] else k


#: ``position(positions, k)`` for aggregations that ignore positions (False) and read them
#: (True). Chosen when the driver is built, not by a branch in its loop: a per-row choice
#: between k and positions[k] halved FiBA's speed as a row window, even for a sum.
POSITIONS = {False: jitcache.njit(_step_number, inline="always"),
             True: jitcache.njit(_planned_position, inline="always")}


def run(driver: Driver, values, plan: Plan, state, want_counts: bool = False):
    """``(out, counts, state)``: ``driver`` (:func:`compiled_driver`, :func:`python_driver`) over ``plan``."""
    if plan.room > state[1][0] + 1:  # st[0]: capacity - 1 (the grow rule of make_room)
        state = driver.make_room(state, plan.room)
    return driver.drive(values, plan.evicts, plan.inserts, plan.emits, plan.positions, plan.window,
                        state, want_counts)


_compiled: dict = {}


def compiled_funcs(algorithm, spec):
    """``(funcs, evict_many)``: the algorithm's compiled operations over ``spec`` and its count-based
    bulk eviction (native, or a loop of evicts), built once per process."""
    key = ("funcs", algorithm.name, spec.key)
    if key not in _compiled:
        ops = compiled_ops(spec)
        funcs = algorithm.load().build(ops, **algorithm.options)
        _compiled[key] = (funcs, build_evict_many(funcs, ops))
    return _compiled[key]


def compiled_driver(algorithm, spec) -> Driver:
    """The :class:`Driver` of an in-order algorithm over a built-in aggregation's compiled description.

    Built once per process and cached on disk (:mod:`winagg.jitcache`).
    """
    key = (algorithm.name, spec.key)
    if key not in _compiled:
        funcs, evict_many = compiled_funcs(algorithm, spec)
        out_dtype = spec.out_dtype

        @jitcache.njit
        def new_out(n):
            return np.empty(n, out_dtype)

        _compiled[key] = build_driver(funcs, evict_many, spec.lift, spec.lower, new_out,
                                      POSITIONS[spec.positional], jitcache.njit)
    return _compiled[key]


def python_driver(algorithm, monoid) -> Driver:
    """The :class:`Driver` of an algorithm over any monoid, in plain Python."""
    ops = python_ops(monoid)
    funcs = algorithm.load().build(ops, **algorithm.options)
    if getattr(monoid, "positional", False):
        def lift(value, position):
            return monoid.lift((value, position))
    else:
        def lift(value, position):
            return monoid.lift(value)

    def new_out(n):
        return [None] * n

    return build_driver(funcs, build_evict_many(funcs, ops), lift, monoid.lower, new_out, _planned_position,
                        _as_is)


def _as_is(fn):
    return fn


# ---------------------------------------------------------------- plans for whole arrays
def row_plan(n: int, window: int) -> Plan:
    """Row k's window is rows ``max(0, k - window + 1) .. k``."""
    return Plan(_NONE_I, _NONE_B, _NONE_B, _NONE_I, int(window), int(min(window, max(n, 1))))


def time_plan(times: np.ndarray, span) -> Plan:
    """Row k's window is the rows j <= k with ``times[k] - span < times[j]`` (sorted times)."""
    evicts, room = _time_evictions(times, times.dtype.type(span))
    return Plan(evicts, _NONE_B, _NONE_B, _NONE_I, 0, max(int(room), 1))


@nb.njit(cache=True)
def _time_evictions(times, span):
    # One pass with two pointers: a binary search per row (np.searchsorted) took as long as
    # the aggregation itself.
    n = times.shape[0]
    evicts = np.zeros(n, np.int64)
    oldest, room = 0, 0
    for k in range(n):
        horizon = times[k] - span
        expired = oldest
        while expired < k and times[expired] <= horizon:  # row k leaves only after its step
            expired += 1
        evicts[k] = expired - oldest
        oldest = expired
        room = max(room, k + 1 - oldest)
    return evicts, room


#: Operation codes of :func:`script_plan`.
OP_INSERT, OP_EVICT, OP_QUERY, OP_BULK_EVICT = 0, 1, 2, 3


def script_plan(codes: np.ndarray, values: np.ndarray, held: int = 0) -> Plan:
    """One step per operation: ``codes[k]`` is OP_INSERT (insert ``values[k]``),
    OP_EVICT (evict the oldest; never from an empty window), OP_BULK_EVICT (evict
    the ``values[k]`` oldest) or OP_QUERY (answer into ``out[k]``), from a window
    that holds ``held`` items."""
    codes = np.asarray(codes)
    evicts = np.where(codes == OP_EVICT, 1, 0).astype(np.int64)
    bulk = codes == OP_BULK_EVICT
    evicts[bulk] = np.asarray(values)[bulk].astype(np.int64)
    inserts = codes == OP_INSERT
    sizes = held + np.cumsum(inserts.astype(np.int64) - evicts)
    room = int(max(sizes.max(initial=held), 1))
    return Plan(evicts, inserts, codes == OP_QUERY, _NONE_I, 0, room)


def run_script(driver: Driver, codes: np.ndarray, values: np.ndarray, chunk: int = 0) -> np.ndarray:
    """Answers of a script (:func:`script_plan`), 0 where no answer is due.

    With ``chunk`` > 0 the script runs ``chunk`` operations per driver call from
    a window of capacity 2, so that buffers grow while they hold items.
    """
    codes, values = np.asarray(codes), np.asarray(values)
    pieces, state, held = [], driver.init(2), 0
    step = chunk if chunk > 0 else max(codes.shape[0], 1)
    for first in range(0, codes.shape[0], step):
        part = slice(first, first + step)
        plan = script_plan(codes[part], values[part], held)
        plan = plan._replace(positions=np.arange(first, first + plan.evicts.shape[0], dtype=np.int64))
        held += int(plan.inserts.sum() - plan.evicts.sum())
        out, _, state = run(driver, values[part], plan, state)
        pieces.append(np.where(plan.emits, out, 0) if isinstance(out, np.ndarray) else
                      [o if e else 0 for o, e in zip(out, plan.emits)])
    if not pieces:
        return np.zeros(0)
    return np.concatenate(pieces) if isinstance(pieces[0], np.ndarray) else sum(pieces, [])


# ---------------------------------------------------------------- plans for streams of keyed batches
# Spark's window frames over rows sorted by (key, order), arriving in Arrow batches. The frame
# state (which rows of a row frame entered the window, the times of a range frame's items)
# lives here, apart from the aggregation's state. ``reset[k]`` is KEY_STARTS at a key's first
# row (the window empties and positions restart) and WINDOW_STARTS where only the window
# empties (after a range frame's group of null order values). Missing rows (``valid[k]``
# false) take a place in a row frame but never enter the window.

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

    def __init__(self, span, time_dtype):
        self.time_type = np.dtype(time_dtype).type
        self.span = self.time_type(span)
        self.held = np.empty(16, self.time_type)  # times of the window's items: held[head:tail]
        self.head = self.tail = self.seen = 0

    def plan(self, valid, reset, group_start, times) -> Plan:
        live = self.tail - self.head
        if live + valid.shape[0] > self.held.shape[0] or self.head > 0:
            bigger = np.empty(max(self.held.shape[0], live + valid.shape[0]), self.time_type)
            bigger[:live] = self.held[self.head:self.tail]
            self.held, self.head, self.tail = bigger, 0, live
        evicts, emits, self.owner, positions, self.head, self.tail, self.seen, room = _range_frame_plan(
            valid, reset, group_start, times.astype(self.time_type, copy=False), self.span,
            self.held, self.head, self.tail, self.seen)
        return Plan(evicts, valid, emits, positions, 0, max(int(room), 1))

    def spread(self, values):
        """``values`` of the last plan's steps with each group's answer (given at the group's
        last row) copied to every row of the group."""
        if isinstance(values, np.ndarray):
            return values[self.owner]
        return [values[j] for j in self.owner]

