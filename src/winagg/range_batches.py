"""A batch of events on an out-of-order window, answered by range queries, in one driver call.

:class:`winagg.Window` and Spark's streaming and hopping windows keep one
out-of-order tree (FiBA) per window and per key, and hand it a batch at a
time: insert the batch (sorted by time, equal times in arrival order), answer
the range ``[lows[j], highs[j]]`` (``(lows[j], highs[j]]`` when ``low_open``)
of every window that closes, then evict every entry at or before ``horizon``.
That is a plan for :mod:`winagg.driver`'s out-of-order loop: one step that
inserts the batch and answers the first range, one step per further range and
a last step that evicts. :func:`batch_kernel` runs it compiled, plan included,
in one numba call; :class:`PythonBatches` runs the same plan over any monoid.
"""

from __future__ import annotations

import numpy as np

from . import jitcache
from .state import COMPILED
from .driver import FEW_ONE_BY_ONE, NO_ANSWER, RANGE, OutOfOrderPlan, compiled_out_of_order_driver, just_below, \
    out_of_order_funcs, python_out_of_order_driver, run_out_of_order

#: The out-of-order pool is cut back to a fresh tree once it is empty and larger than this.
_FRESH_CAPACITY = 16
_KEEP_CAPACITY = 64


def batch_steps(m, lows, highs, horizon, lowest):
    """The plan's arrays ``(adds, evicts, horizons, answers, lows, highs)`` for a batch of ``m`` items
    and the open-below ranges ``(lows[j], highs[j]]``; ``lowest`` evicts nothing."""
    ranges = lows.shape[0]
    steps = ranges + 1
    adds = np.zeros(steps, np.int64)
    adds[0] = m
    evicts = np.zeros(steps, np.int64)
    horizons = np.full(steps, lowest)
    horizons[ranges] = horizon
    answers = np.full(steps, RANGE, np.int64)
    answers[ranges] = NO_ANSWER
    step_lows = np.full(steps, lowest)
    step_highs = np.full(steps, lowest)
    step_lows[:ranges] = lows
    step_highs[:ranges] = highs
    return adds, evicts, horizons, answers, step_lows, step_highs


_compiled_steps = jitcache.njit(batch_steps)


@jitcache.njit(inline="always")
def _int_below(lows):
    return lows - 1


@jitcache.njit(inline="always")
def _float_below(lows):
    return np.nextafter(lows, -np.inf)


_KERNELS: dict = {}


def batch_kernel(spec, time_type: str):
    """``(kernel, fresh)`` for a built-in aggregation's compiled description ``spec`` and
    ``time_type`` ("int64" or "float64") times, built once per process.

    ``kernel(bufs, st, times, values, positions, lows, highs, low_open, horizon) -> (bufs, st, out)``
    runs one batch (see the module's docstring); ``out[j]`` answers range j, which must hold
    an entry. ``fresh()`` is an empty tree.
    """
    key = (spec.key, time_type)
    if key in _KERNELS:
        return _KERNELS[key]
    drive = compiled_out_of_order_driver(spec, None, time_type, per_row=False).compiled_drive
    init = out_of_order_funcs_init(spec, time_type)
    below = _int_below if time_type == "int64" else _float_below
    lowest = np.iinfo(np.int64).min if time_type == "int64" else -np.inf
    steps = _compiled_steps
    entries, limit = COMPILED.size, COMPILED.limit
    out_dtype = spec.out_dtype

    @jitcache.njit
    def kernel(b, st, when, values, positions, lows, highs, low_open, horizon):
        open_lows = lows if low_open else below(lows)
        adds, evicts, horizons, answers, step_lows, step_highs = steps(when.shape[0], open_lows, highs, horizon,
                                                                       lowest)
        out, _, state = drive(values, when, adds, evicts, horizons, answers, step_lows, step_highs, positions,
                              horizon, FEW_ONE_BY_ONE, (b, st), False, np.zeros(horizons.shape[0], out_dtype))
        b, st = state
        if entries(st) == 0 and limit(st) > _KEEP_CAPACITY:
            b, st = init(_FRESH_CAPACITY)
        return b, st, out[:lows.shape[0]]

    def fresh():
        return init(_FRESH_CAPACITY)

    _KERNELS[key] = (kernel, fresh)
    return _KERNELS[key]


def out_of_order_funcs_init(spec, time_type: str):
    from .registry import out_of_order

    return out_of_order_funcs(out_of_order(), spec, None, time_type).init


def compact_kernel(spec, time_type: str):
    """``kernel(bufs, st, times) -> (bufs, st)``: a tree holding just the entries at ``times``.

    ``times`` are the distinct times of the tree's entries, sorted. The new tree is
    sized for them; the old one keeps the node pool of the largest batch it ever held
    (a Window pickles the compact copy).
    """
    key = ("compact", spec.key, time_type)
    if key in _KERNELS:
        return _KERNELS[key]
    from .registry import out_of_order

    f = out_of_order_funcs(out_of_order(), spec, None, time_type)
    init, bulk_insert, range_query, reserve = f.init, f.bulk_insert, f.range_query, f.reserve
    alloc, store = spec.layout.alloc, spec.layout.store

    @jitcache.njit
    def kernel(b, st, when):
        m = when.shape[0]
        partials = alloc(m)
        for j in range(m):
            store(partials, j, range_query(b, st, when[j], when[j], False))
        fresh_b, fresh_st = init(_FRESH_CAPACITY)
        if m > 0:
            fresh_b, fresh_st = reserve(fresh_b, fresh_st, m)
            fresh_st = bulk_insert(fresh_b, fresh_st, when, partials, m)
        return fresh_b, fresh_st

    _KERNELS[key] = kernel
    return kernel


class PythonBatches:
    """The same batches over any monoid, in plain Python, on ``algorithm`` (an out-of-order
    :class:`~winagg.registry.AlgorithmInfo`, options included)."""

    def __init__(self, algorithm, monoid):
        self.driver = python_out_of_order_driver(algorithm, monoid, per_row=False)

    def fresh(self):
        return self.driver.init(_FRESH_CAPACITY)

    def run(self, state, when, values, positions, lows, highs, low_open, horizon):
        """``(state, answers)``: one batch (see :func:`batch_kernel`)."""
        open_lows = lows if low_open else just_below(lows)
        lowest = np.iinfo(np.int64).min if when.dtype.kind == "i" else -np.inf
        plan = OutOfOrderPlan(*batch_steps(when.shape[0], open_lows, highs, horizon, when.dtype.type(lowest)),
                              positions, horizon)
        out, _, state = run_out_of_order(self.driver, values, when, plan, state)
        return state, out[:lows.shape[0]]
