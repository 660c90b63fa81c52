"""Compiled whole-loop kernels over FiBA: an out-of-order operation script, and per-row rolling.

Kernels are cached in memory per (kernel, FiBA options, aggregation, time type)
and on disk by numba.
"""

from __future__ import annotations

import numpy as np

from .. import jitcache
from ..ops import compiled_ops
from .fiba import INFO, build

_kernels: dict = {}

#: Operation codes of :func:`ooo_script_kernel`.
OP_INSERT, OP_EVICT, OP_BULK_EVICT, OP_BULK_INSERT, OP_QUERY, OP_RANGE = range(6)


def _options(options) -> dict:
    merged = {**INFO["options"], **(options or {})}
    merged.pop("check", None)
    return merged


def tree_funcs(spec, options=None, times="float64"):
    """FiBA's compiled operations for one aggregation, options and time type."""
    opts = _options(options)
    key = ("funcs", tuple(sorted(opts.items())), spec.key, times)
    if key not in _kernels:
        _kernels[key] = build(compiled_ops(spec), times=times, **opts)
    return _kernels[key]


def ooo_script_kernel(spec, options=None, times="float64"):
    """``kernel(codes, times, aux, values, batch_times, batch_values) -> (out, sizes)``.

    Replays a script: ``codes[k]`` is OP_INSERT (``values[k]`` at ``times[k]``),
    OP_EVICT (the oldest, if any), OP_BULK_EVICT (every time <= ``times[k]``),
    OP_BULK_INSERT (the next ``int(aux[k])`` items of ``batch_times`` /
    ``batch_values``, sorted by time), OP_QUERY (``out[k]``), OP_RANGE
    (``out[k]`` covers ``times[k] <= time <= aux[k]``). ``sizes[k]`` is the
    number of entries after operation k. For tests and dynamic benchmarks.
    """
    opts = _options(options)
    key = ("script", tuple(sorted(opts.items())), spec.key, times)
    if key in _kernels:
        return _kernels[key]
    f = tree_funcs(spec, opts, times)
    init, insert_at, evict, query = f.init, f.insert_at, f.evict, f.query
    evict_upto, bulk_insert, range_query, reserve = f.evict_upto, f.bulk_insert, f.range_query, f.reserve
    lift, lower, out_dtype, alloc, store = spec.lift, spec.lower, spec.out_dtype, spec.layout.alloc, spec.layout.store

    @jitcache.njit
    def kernel(codes, when, aux, values, batch_times, batch_values):
        n = codes.shape[0]
        out = np.zeros(n, out_dtype)
        sizes = np.zeros(n, np.int64)
        b, st = init(2)  # start small so that scripts exercise growth
        cursor = 0
        for k in range(n):
            code = codes[k]
            if code == 0:
                b, st = reserve(b, st, 1)
                st = insert_at(b, st, when[k], lift(values[k], k))
            elif code == 1:
                if st[2] > 0:
                    st = evict(b, st)
            elif code == 2:
                st = evict_upto(b, st, when[k])
            elif code == 3:
                count = int(aux[k])
                partials = alloc(count)
                for q in range(count):
                    store(partials, q, lift(batch_values[cursor + q], k))
                b, st = reserve(b, st, count)
                st = bulk_insert(b, st, batch_times[cursor:cursor + count], partials, count)
                cursor += count
            elif code == 4:
                out[k] = lower(query(b, st))
            else:
                out[k] = lower(range_query(b, st, when[k], aux[k], False))
            sizes[k] = st[2]
        return out, sizes

    _kernels[key] = kernel
    return kernel


def rolling_kernel(spec, options=None, times="float64"):
    """``kernel(values, times, window) -> out``: out[i] aggregates the rows j <= i with
    ``times[i] - window < times[j] <= times[i]``, for times in any order.

    Row i is inserted at its time; then every entry no later row can need
    (time <= min(times[i:]) - window) is evicted in one bulk eviction; the
    answer is a range query over (times[i] - window, times[i]].
    """
    opts = _options(options)
    key = ("rolling", tuple(sorted(opts.items())), spec.key, times)
    if key in _kernels:
        return _kernels[key]
    f = tree_funcs(spec, opts, times)
    init, insert_at, evict_upto, range_query, reserve, oldest = (f.init, f.insert_at, f.evict_upto, f.range_query,
                                                                 f.reserve, f.oldest)
    query, youngest = f.query, f.youngest
    lift, lower, out_dtype = spec.lift, spec.lower, spec.out_dtype

    @jitcache.njit
    def kernel(values, when, window):
        n = values.shape[0]
        out = np.empty(n, out_dtype)
        later_min = when.copy()  # later_min[i] = min(when[i:])
        for i in range(n - 2, -1, -1):
            if later_min[i + 1] < later_min[i]:
                later_min[i] = later_min[i + 1]
        b, st = init(16)
        for i in range(n):
            if st[0] - st[2] < 1:  # the pool grows rarely: no call on the other rows
                b, st = reserve(b, st, 1)
            st = insert_at(b, st, when[i], lift(values[i], i))
            horizon = later_min[i] - window
            if oldest(b) <= horizon:
                st = evict_upto(b, st, horizon)
            lo, hi = when[i] - window, when[i]
            # Row i's entry stays (its time is above the horizon), so the window is not empty.
            # When every entry lies in the range (always, for sorted times), the answer is the
            # whole-window query, O(1), instead of a range query's walk down from the root.
            if oldest(b) > lo and youngest(b) <= hi:
                out[i] = lower(query(b, st))
            else:
                out[i] = lower(range_query(b, st, lo, hi, True))
        return out

    _kernels[key] = kernel
    return kernel
