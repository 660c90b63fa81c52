"""Kernels: the loops of :mod:`winagg.engine.loops` built for one algorithm and aggregation.

This is the one place that builds a window's loop compiled (a built-in aggregation's
compiled description: one kernel per algorithm, aggregation and build, made once per
process and cached on disk by :mod:`winagg.core.jitcache`) or in plain Python (any
monoid).
"""

from __future__ import annotations

from functools import partial

import numpy as np

from ..core import jitcache
from ..core.ops import build_evict_many, compiled_ops, python_ops
from .loops import POSITIONS, Driver, build_driver, build_out_of_order_driver, planned_position


def compiled_spec(monoid, dtype, counted: bool = False, same_answer: bool = False):
    """The compiled description ``monoid`` runs with over ``dtype`` values, or None: then it runs in
    plain Python. Every path asks here.

    A monoid built from Python callables has none. ``counted`` asks for the form that answers NaN
    for a window without a value, where the aggregation has one (``compiled_counted``).
    ``same_answer`` keeps only descriptions whose answer is the Python one: a sketch compiled
    lowers to its estimate (a number) but in Python to the sketch itself, so a path that answers
    the sketch (``winagg.Window``) runs it in Python, where ``winagg.rolling`` and Spark's columns
    take the number.
    """
    describe = getattr(monoid, "compiled_counted", None) if counted else None
    spec = (describe or getattr(monoid, "compiled_for", _no_description))(np.dtype(dtype))
    if spec is not None and same_answer and not _lowers_to_a_number(monoid):
        return None
    return spec


def _no_description(dtype):
    return None


def _lowers_to_a_number(monoid) -> bool:
    """Whether the Python answer for one value is a plain number (as the compiled answer is)."""
    sample = (1.0, 0) if monoid.positional else 1.0
    try:
        answer = monoid.lower(monoid.lift(sample))
    except Exception:  # noqa: BLE001 - any failure means: do not take the compiled path
        return False
    return isinstance(answer, (int, float, np.integer, np.floating)) and not isinstance(answer, bool)


_compiled: dict = {}


def compiled_funcs(algorithm, spec):
    """``(funcs, evict_many)``: the algorithm's compiled operations over ``spec`` and its count-based
    bulk eviction (native, or a loop of evicts), built once per process."""
    key = ("funcs", algorithm.name, _options_key(algorithm.options), spec.key)
    if key not in _compiled:
        ops = compiled_ops(spec)
        funcs = algorithm.load().build(ops, **algorithm.options)
        _compiled[key] = (funcs, build_evict_many(funcs, ops))
    return _compiled[key]


def _options_key(options: dict) -> tuple:
    return tuple(sorted(options.items()))


def compiled_driver(algorithm, spec, dense: bool = False, clock=None, sub_windows: bool = False,
                    bulk: bool = False, resize: bool = False) -> Driver:
    """The :class:`Driver` of an in-order algorithm over a built-in aggregation's compiled description.

    ``dense`` (see :func:`build_driver`): for plans whose every step inserts and answers,
    as ``winagg.rolling`` runs; False for any plan. ``clock``: ``(read_cycles, cycles_after)``,
    the compiled functions of a cycle counter (the latency experiments pass theirs): the loop
    times each answering step with it. ``sub_windows``: answers
    over the youngest ``plan.widths`` items. ``bulk``: for :func:`bulk_plan`'s plans, which insert
    any number of values a step. ``resize``: the loop grows and shrinks the window as it goes.
    Built once per process and cached on disk (:mod:`winagg.core.jitcache`).
    """
    key = (algorithm.name, _options_key(algorithm.options), spec.key, dense, clock, sub_windows, bulk, resize)
    if key not in _compiled:
        funcs, evict_many = compiled_funcs(algorithm, spec)
        new_out = partial(np.empty, dtype=spec.out_dtype)
        layout = (spec.layout.alloc, spec.layout.store) if bulk else None
        _compiled[key] = build_driver(funcs, evict_many, spec.lift, spec.lower, new_out, POSITIONS[spec.positional],
                                      jitcache.njit, dense, clock, sub_windows, layout, resize)
    return _compiled[key]


def python_driver(algorithm, monoid) -> Driver:
    """The :class:`Driver` of an algorithm over any monoid, in plain Python."""
    ops = python_ops(monoid)
    funcs = algorithm.load().build(ops, **algorithm.options)
    return build_driver(funcs, build_evict_many(funcs, ops), _python_lift(monoid), monoid.lower, _python_out,
                        planned_position, ops.jit)


def _python_lift(monoid):
    if monoid.positional:
        def lift(value, position):
            return monoid.lift((value, position))
    else:
        def lift(value, position):
            return monoid.lift(value)
    return lift


def _python_out(n):
    return [None] * n


def out_of_order_funcs(algorithm, spec, options=None, time_type: str = "float64"):
    """An out-of-order algorithm's compiled functions over ``spec`` for ``time_type`` times
    ("float64" or "int64"), built once per process per (options, aggregation, time type)."""
    opts = {**algorithm.options, **(options or {})}
    opts.pop("check", None)  # checks only matter to the Python aggregator
    key = ("ooo funcs", algorithm.name, _options_key(opts), spec.key, time_type)
    if key not in _compiled:
        _compiled[key] = algorithm.load().build(compiled_ops(spec), times=time_type, **opts)
    return _compiled[key]


def compiled_out_of_order_driver(spec, options=None, time_type: str = "float64", per_row: bool = True,
                                 algorithm=None, clock=None, evict_first: bool = False) -> Driver:
    """The out-of-order :class:`Driver` of ``algorithm`` (default: the registry's out-of-order
    algorithm, FiBA) with ``options`` over a compiled aggregation.

    ``per_row`` (see :func:`build_out_of_order_driver`): for plans of one item per step,
    as :func:`rolling_plan` makes; False for any plan. ``clock`` (as in :func:`compiled_driver`):
    the loop times each step's inserts, evictions and answer (the FiBA latency experiments).
    ``evict_first``: steps evict before they insert (the reference's rounds).
    """
    from ..algos.registry import out_of_order

    algorithm = algorithm or out_of_order()
    funcs = out_of_order_funcs(algorithm, spec, options, time_type)
    key = ("ooo", id(funcs), per_row, clock, evict_first)  # funcs cached: one per (algorithm, options, spec, times)
    if key not in _compiled:
        new_out = partial(np.zeros, dtype=spec.out_dtype)  # zeros: a step that does not answer leaves its row 0
        _compiled[key] = build_out_of_order_driver(funcs, spec.lift, spec.lower, new_out, spec.layout.alloc,
                                                   spec.layout.store, POSITIONS[spec.positional], jitcache.njit,
                                                   per_row, clock, evict_first)
    return _compiled[key]


def python_out_of_order_driver(algorithm, monoid, per_row: bool = True, evict_first: bool = False) -> Driver:
    """The out-of-order :class:`Driver` of ``algorithm`` over any monoid, in plain Python
    (``evict_first`` as in :func:`build_out_of_order_driver`)."""
    ops = python_ops(monoid)
    f = algorithm.load().build(ops, **algorithm.options)
    return build_out_of_order_driver(f, _python_lift(monoid), monoid.lower, _python_out, ops.alloc, ops.store,
                                     planned_position, ops.jit, per_row, evict_first=evict_first)
