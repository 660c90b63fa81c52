"""A batch of events on an out-of-order window, answered by range queries, in one driver call.

:class:`winagg.Window` and Spark's streaming and hopping windows keep one
out-of-order tree (FiBA) per window and per key, and hand it a batch at a
time: insert the batch (sorted by time, equal times in arrival order), answer
the range ``[lows[j], highs[j]]`` (``(lows[j], highs[j]]`` when ``low_open``)
of every window that closes, then evict every entry at or before ``horizon``.
That is a plan for :mod:`winagg.engine.loops`'s out-of-order loop: one step that
inserts the batch and answers the first range, one step per further range and
a last step that evicts. :func:`compiled_batches` makes the plan with a compiled
function and runs it through the compiled driver; :class:`PythonBatches` runs
the same plan over any monoid.
"""

from __future__ import annotations

import numpy as np

from ..core import jitcache
from ..core.state import PYTHON
from .plans import OutOfOrderPlan, batch_steps, just_below
from .kernels import compiled_out_of_order_driver, out_of_order_funcs, python_out_of_order_driver
from .loops import run_out_of_order

#: The out-of-order pool is cut back to a fresh tree once it is empty and larger than this.
_FRESH_CAPACITY = 16
_KEEP_CAPACITY = 64


_compiled_steps = jitcache.njit(batch_steps)

_KERNELS: dict = {}


def compiled_batches(spec, time_type: str) -> "Batches":
    """:class:`Batches` over a built-in aggregation's compiled description ``spec`` and ``time_type``
    ("int64" or "float64") times, built once per process.

    The plan is made by a compiled function that knows no aggregation and the driver's compiled
    loop runs it; :meth:`Batches.run` itself is Python, a small cost per batch: compiled around
    them, it took FiBA's code through LLVM once more and lengthened a Window's first compile.
    """
    key = ("batches", spec.key, time_type)
    if key not in _KERNELS:
        _KERNELS[key] = Batches(compiled_out_of_order_driver(spec, None, time_type, per_row=False), _compiled_steps)
    return _KERNELS[key]


def compact_kernel(spec, time_type: str):
    """``kernel(bufs, st, times) -> (bufs, st)``: a tree holding just the entries at ``times``.

    ``times`` are the distinct times of the tree's entries, sorted. The new tree is
    sized for them; the old one keeps the node pool of the largest batch it ever held
    (a Window pickles the compact copy).
    """
    key = ("compact", spec.key, time_type)
    if key in _KERNELS:
        return _KERNELS[key]
    from ..algos.registry import out_of_order

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


class Batches:
    """Batches (see the module's docstring) through an out-of-order ``driver``, their plans made by
    ``steps`` (:func:`batch_steps`, compiled or not)."""

    def __init__(self, driver, steps=batch_steps):
        self.driver, self.steps = driver, steps

    def fresh(self):
        return self.driver.init(_FRESH_CAPACITY)

    def run(self, state, when, values, positions, lows, highs, low_open, horizon):
        """``(state, answers)``: one batch; ``answers[j]`` answers range j, which must hold an entry.
        An emptied tree larger than a fresh one is made afresh."""
        open_lows = lows if low_open else just_below(lows)
        lowest = np.iinfo(np.int64).min if when.dtype.kind == "i" else -np.inf
        plan = OutOfOrderPlan(*self.steps(when.shape[0], open_lows, highs, horizon, when.dtype.type(lowest)),
                              positions, horizon)
        out, _, state = run_out_of_order(self.driver, values, when, plan, state)
        if PYTHON.size(state[1]) == 0 and PYTHON.limit(state[1]) > _KEEP_CAPACITY:
            state = self.fresh()
        return state, out[:lows.shape[0]]


class PythonBatches(Batches):
    """The same batches over any monoid, in plain Python, on ``algorithm`` (an out-of-order
    :class:`~winagg.algos.registry.AlgorithmInfo`, options included)."""

    def __init__(self, algorithm, monoid):
        super().__init__(python_out_of_order_driver(algorithm, monoid, per_row=False))
