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
OP_INSERT, OP_EVICT, OP_QUERY = 0, 1, 2


def script_kernel(algorithm, spec):
    """``kernel(codes, values) -> out``: replay a script of operations in compiled code.

    ``codes[k]`` is OP_INSERT (insert ``values[k]``), OP_EVICT (evict the
    oldest; the script must not evict from an empty window) or OP_QUERY
    (``out[k]`` is the lowered query). Tests use it to check compiled
    algorithms on arbitrary interleavings, including buffer growth; benchmarks
    use it for dynamic windows.
    """
    key = ("script", algorithm.name, spec.key)
    if key in _kernels:
        return _kernels[key]
    init, insert, evict, query, grow = _funcs(algorithm, spec)[:5]
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
            else:
                out[k] = lower(query(bufs, st))
        return out

    _kernels[key] = kernel
    return kernel
