"""The compiled multi-query kernel: several suffix ranges answered on every slide from one structure.

Used by the FlatFIT experiment (and its tests) for any algorithm with a
native ``range_query`` (flatfat, b_int, flatfit): the paper's "max-multi"
workload is every range 1..n on every slide.
"""

from __future__ import annotations

import numpy as np

from .. import jitcache
from ..ops import compiled_ops
from ..state import COMPILED

_kernels: dict = {}


def multi_query_kernel(algorithm, spec):
    """``kernel(values, window, ranges, out, query_from) -> out`` for a count window of ``window`` rows.

    Row i is inserted (after evicting the oldest once the window is full);
    from row ``query_from`` on, ``out[i % out.shape[0], q]`` is the lowered
    aggregate of the ``ranges[q]`` youngest rows (fewer while the window
    fills). ``ranges`` are evaluated in the order given: pass them largest
    first for FlatFIT. ``out`` may have one row only (a benchmark sink).
    """
    key = (algorithm.name, spec.key)
    if key in _kernels:
        return _kernels[key]
    funcs = algorithm.load().build(compiled_ops(spec), **algorithm.options)
    init, insert, evict, range_query = funcs.init, funcs.insert, funcs.evict, funcs.range_query
    lift, lower = spec.lift, spec.lower
    size_of, end_of = COMPILED.size, COMPILED.end

    @jitcache.njit
    def kernel(values, window, ranges, out, query_from):
        bufs, st = init(window + 1)
        rows = out.shape[0]
        for i in range(values.shape[0]):
            if size_of(st) == window:
                st = evict(bufs, st)
            st = insert(bufs, st, lift(values[i], i))
            if i >= query_from:
                end = end_of(st)
                size = size_of(st)
                for q in range(ranges.shape[0]):
                    width = min(ranges[q], size)
                    out[i % rows, q] = lower(range_query(bufs, st, end - width, end))
        return out

    _kernels[key] = kernel
    return kernel


def descending(ranges) -> np.ndarray:
    """The ranges as an int64 array, largest first (the order FlatFIT needs)."""
    return np.sort(np.asarray(ranges, dtype=np.int64))[::-1].copy()
