"""A decorator for the entry points that loop (flatfat, b_int, flatfit).

numba's reference-count pruning gives up on a function with loops, so an
algorithm function that takes the buffers and is inlined into a kernel loop
pays atomic increments and decrements of the buffers on every call
(measured: FlatFIT at window 4096 ran 19M rows/s inlined, 67-98M rows/s as a
call of its own compiled without reference counting). Such a function never
allocates for scalar or tuple partials, so it is compiled apart with numba's
runtime off. Vector partials (Bloom filters) allocate in ``combine`` and keep
the ordinary out-of-line decorator; Python mode gets the function unchanged.
"""

from __future__ import annotations

import numpy as np

from .. import jitcache


def loop_jit(ops):
    """The decorator for a buffer-looping helper under ``ops``."""
    if ops.jit_call(_probe) is _probe:  # plain Python
        return ops.jit_call
    if isinstance(ops.identity, np.ndarray):  # vector partials: combine allocates
        return ops.jit_call
    return _njit_without_refcounts


def _probe():
    return None


def _njit_without_refcounts(fn):
    return jitcache.njit(fn, _nrt=False)
