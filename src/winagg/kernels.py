"""Compiled whole-loop kernels: one algorithm x one built-in aggregation, all in numba.

A kernel is built from the algorithm's ``build(ops)`` with numba ops, so the
loop never enters the interpreter. Kernels are cached in memory per process
and on disk (:mod:`winagg.jitcache`), keyed by the code of the algorithm and
of the aggregation.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from . import jitcache
from .ops import build_evict_many, compiled_ops

_kernels: dict = {}


def _funcs(algorithm, spec):
    key = ("funcs", algorithm.name, spec.key)
    if key not in _kernels:
        ops = compiled_ops(spec)
        funcs = algorithm.load().build(ops, **algorithm.options)
        _kernels[key] = (funcs, build_evict_many(funcs, ops))
    return _kernels[key][0]


def _evict_many(algorithm, spec):
    _funcs(algorithm, spec)
    return _kernels[("funcs", algorithm.name, spec.key)][1]


def count_kernel(algorithm, spec):
    """``kernel(values, window) -> out``: out[i] is the aggregate of rows max(0, i-window+1)..i."""
    key = ("count", algorithm.name, spec.key)
    if key in _kernels:
        return _kernels[key]
    init, insert, evict, query, grow = _funcs(algorithm, spec)[:5]
    lift, lower, out_dtype = spec.lift, spec.lower, spec.out_dtype

    @jitcache.njit
    def kernel(values, window):
        n = values.shape[0]
        out = np.empty(n, out_dtype)
        bufs, st = init(window + 1)  # never grows: the window is at most `window` items
        for i in range(n):
            if st[2] - st[1] == window:
                st = evict(bufs, st)
            st = insert(bufs, st, lift(values[i], i))
            out[i] = lower(query(bufs, st))
        return out

    _kernels[key] = kernel
    return kernel


def time_kernel(algorithm, spec):
    """``kernel(values, times, window) -> out`` for sorted times: out[i] covers times in (t_i - window, t_i]."""
    key = ("time", algorithm.name, spec.key)
    if key in _kernels:
        return _kernels[key]
    init, insert, evict, query, grow = _funcs(algorithm, spec)[:5]
    evict_many = _evict_many(algorithm, spec)
    lift, lower, out_dtype = spec.lift, spec.lower, spec.out_dtype

    @jitcache.njit
    def kernel(values, times, window):
        n = values.shape[0]
        out = np.empty(n, out_dtype)
        bufs, st = init(16)
        oldest = 0
        for i in range(n):
            if st[2] - st[1] > st[0]:
                bufs, st = grow(bufs, st)
            st = insert(bufs, st, lift(values[i], i))
            horizon = times[i] - window
            expired = oldest
            while times[expired] <= horizon:
                expired += 1
            if expired > oldest:  # one bulk eviction by time
                st = evict_many(bufs, st, expired - oldest)
                oldest = expired
            out[i] = lower(query(bufs, st))
        return out

    _kernels[key] = kernel
    return kernel


#: Operation codes of :func:`script_kernel`.
OP_INSERT, OP_EVICT, OP_QUERY, OP_BULK_EVICT = 0, 1, 2, 3


def script_kernel(algorithm, spec):
    """``kernel(codes, values) -> out``: replay a script of operations in compiled code.

    ``codes[k]`` is OP_INSERT (insert ``values[k]``), OP_EVICT (evict the
    oldest; the script must not evict from an empty window), OP_BULK_EVICT
    (evict the ``values[k]`` oldest in one bulk eviction, at most the window's
    size) or OP_QUERY (``out[k]`` is the lowered query). Tests use it to check compiled
    algorithms on arbitrary interleavings, including buffer growth; benchmarks
    use it for dynamic windows.
    """
    key = ("script", algorithm.name, spec.key)
    if key in _kernels:
        return _kernels[key]
    init, insert, evict, query, grow = _funcs(algorithm, spec)[:5]
    evict_many = _evict_many(algorithm, spec)
    lift, lower, out_dtype = spec.lift, spec.lower, spec.out_dtype

    @jitcache.njit
    def kernel(codes, values):
        n = codes.shape[0]
        out = np.zeros(n, out_dtype)
        bufs, st = init(2)  # start small so that scripts exercise growth
        for k in range(n):
            code = codes[k]
            if code == 0:
                if st[2] - st[1] > st[0]:
                    bufs, st = grow(bufs, st)
                st = insert(bufs, st, lift(values[k], k))
            elif code == 1:
                st = evict(bufs, st)
            elif code == 3:
                if values[k] > 0:
                    st = evict_many(bufs, st, int(values[k]))
            else:
                out[k] = lower(query(bufs, st))
        return out

    _kernels[key] = kernel
    return kernel


# ---------------------------------------------------------------- resumable, per-key streams
# The kernels below process a stream of rows sorted by (key, order) in pieces (Arrow
# batches), carrying the window across calls in a state tuple, so that memory stays
# bounded by the window whatever the key's row count. ``reset[i]`` is KEY_STARTS at the
# first row of a key (the window is emptied and row numbers restart) and WINDOW_STARTS
# where only the window is emptied (after a range frame's group of null order values). Missing rows (``valid[i]`` false) take a
# place in a row window but never enter the aggregator, so the aggregator's size is the
# number of non-missing values in the window (returned as ``counts``, which callers use
# to give null for windows without values, as Spark does).

#: Codes of the ``reset`` array of the stream kernels.
NO_RESET, WINDOW_STARTS, KEY_STARTS = 0, 1, 2


def _empty_all(evict_many):
    def empty_all(bufs, st):
        size = st[2] - st[1]
        return evict_many(bufs, st, size) if size > 0 else st
    return jitcache.njit(empty_all)


def rows_stream_kernels(algorithm, spec):
    """``(start, step)`` for row windows carried across calls.

    ``start(window) -> state``; ``step(values, valid, reset, window, state) ->
    (out, counts, state)``: row i's frame is the ``window`` rows of its key up to
    and including it (Spark's ``rowsBetween(-(window - 1), 0)``).
    """
    key = ("rows_stream", algorithm.name, spec.key)
    if key in _kernels:
        return _kernels[key]
    init, insert, evict, query, grow = _funcs(algorithm, spec)[:5]
    empty_all = _empty_all(_evict_many(algorithm, spec))
    lift, lower, out_dtype = spec.lift, spec.lower, spec.out_dtype

    @jitcache.njit
    def start(window):
        bufs, st = init(window + 1)  # never grows: at most `window` values
        # ring[k] tells whether a row of the frame entered the aggregator; head is the
        # frame's oldest row, `rows` its length; `seen` numbers the key's rows (argmin/argmax).
        return (bufs, st, np.zeros(window, np.bool_), 0, 0, 0)

    @jitcache.njit
    def step(values, valid, reset, window, state):
        bufs, st, ring, head, rows, seen = state
        n = values.shape[0]
        out = np.empty(n, out_dtype)
        counts = np.empty(n, np.int64)
        for i in range(n):
            if reset[i] != 0:
                st = empty_all(bufs, st)
                head, rows = 0, 0
                if reset[i] == 2:
                    seen = 0
            if rows == window:
                if ring[head]:
                    st = evict(bufs, st)
                head = head + 1 if head + 1 < window else 0
                rows -= 1
            slot = head + rows
            ring[slot - window if slot >= window else slot] = valid[i]
            rows += 1
            if valid[i]:
                st = insert(bufs, st, lift(values[i], seen))
            seen += 1
            counts[i] = st[2] - st[1]
            out[i] = lower(query(bufs, st))
        return out, counts, (bufs, st, ring, head, rows, seen)

    _kernels[key] = (start, step)
    return start, step


def range_stream_kernels(algorithm, spec, time_dtype):
    """``(start, step)`` for range windows ``[t - span, t]`` carried across calls.

    ``start() -> state``; ``step(values, valid, reset, group_start, times, span,
    state) -> (out, counts, state)``. Rows from one ``group_start`` to the next
    share one order value (peers) and get one result: the aggregate of the key's
    values with time in ``[t - span, t]``, peers after the row included (Spark's
    ``rangeBetween(-span, 0)``). The caller passes whole peer groups only.
    """
    key = ("range_stream", algorithm.name, spec.key, np.dtype(time_dtype).name)
    if key in _kernels:
        return _kernels[key]
    init, insert, evict, query, grow = _funcs(algorithm, spec)[:5]
    evict_many = _evict_many(algorithm, spec)
    empty_all = _empty_all(evict_many)
    lift, lower, out_dtype = spec.lift, spec.lower, spec.out_dtype
    time_type = np.dtype(time_dtype).type

    @jitcache.njit
    def start():
        bufs, st = init(16)
        # times[head:tail] are the times of the aggregator's values, oldest first.
        return (bufs, st, np.empty(16, time_type), 0, 0, 0)

    @jitcache.njit
    def reserve(bufs, st, times, head, tail, extra):
        """Room for ``extra`` more values in the aggregator and in ``times`` (compacted)."""
        while st[2] - st[1] + extra - 1 > st[0]:  # the last insert needs size <= mask
            bufs, st = grow(bufs, st)
        live = tail - head
        if live + extra > times.shape[0]:
            bigger = np.empty(max(2 * times.shape[0], live + extra), time_type)
            bigger[:live] = times[head:tail]
            return bufs, st, bigger, 0, live
        if tail + extra > times.shape[0]:
            times[:live] = times[head:tail]  # slide the live part to the front
            return bufs, st, times, 0, live
        return bufs, st, times, head, tail

    # Room for the whole batch is made before the loop: a buffer reassigned inside the
    # loop (a grow) made numba keep reference counts and reload it on every row, 6x slower.
    # The buffers then hold at most the window plus one batch.
    @jitcache.njit
    def step(values, valid, reset, group_start, times, span, state):
        bufs, st, held, head, tail, seen = state
        bufs, st, held, head, tail = reserve(bufs, st, held, head, tail, values.shape[0])
        n = values.shape[0]
        out = np.empty(n, out_dtype)
        counts = np.empty(n, np.int64)
        i = 0
        while i < n:
            if reset[i] != 0:
                st = empty_all(bufs, st)
                head, tail = 0, 0
                if reset[i] == 2:
                    seen = 0
            end = i + 1
            while end < n and not group_start[end]:
                end += 1
            t = times[i]
            for r in range(i, end):
                if valid[r]:
                    st = insert(bufs, st, lift(values[r], seen))
                    held[tail] = t
                    tail += 1
                seen += 1
            horizon = t - span
            expired = head
            while expired < tail and held[expired] < horizon:
                expired += 1
            if expired > head:  # one bulk eviction per peer group
                st = evict_many(bufs, st, expired - head)
                head = expired
            result = lower(query(bufs, st))
            for r in range(i, end):
                out[r] = result
                counts[r] = st[2] - st[1]
            i = end
        return out, counts, (bufs, st, held, head, tail, seen)

    _kernels[key] = (start, step)
    return start, step
