"""What an algorithm is built from, so that one source runs in Python and in numba.

An algorithm module defines ``build(ops)`` returning :class:`Funcs`. Its
functions take and return a *state tuple* (buffers, integer positions and
partials) and only mutate buffers in place, so numba keeps positions in
registers and plain Python runs the same code unchanged.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple, Optional

import numba as nb

from .layout import PYTHON


class Ops(NamedTuple):
    """The monoid and storage an algorithm is specialised to."""

    combine: Callable
    identity: Any
    alloc: Callable
    load: Callable
    store: Callable
    inverse: Optional[Callable]
    jit: Callable  # decorator applied to each built function (identity in Python mode)


class Funcs(NamedTuple):
    """One algorithm specialised to one monoid.

    ``init(capacity) -> state``; ``insert(state, partial) -> state``;
    ``evict(state) -> state`` (caller guarantees a non-empty window);
    ``query(state) -> partial``; ``size(state) -> int``.
    """

    init: Callable
    insert: Callable
    evict: Callable
    query: Callable
    size: Callable


def _no_jit(fn):
    return fn


def python_ops(monoid) -> Ops:
    """Ops that run the algorithm in plain Python over a list of arbitrary partials."""
    return Ops(monoid.combine, monoid.identity, PYTHON.alloc, PYTHON.load, PYTHON.store,
               monoid.inverse, _no_jit)


def _njit(fn):
    return nb.njit(cache=True)(fn)


def compiled_ops(spec) -> Ops:
    """Ops that compile the algorithm with numba for a built-in aggregation's description."""
    layout = spec.layout
    return Ops(spec.combine, spec.identity, layout.alloc, layout.load, layout.store, spec.inverse, _njit)


@nb.njit(cache=True)
def power_of_two_at_least(n):
    """Smallest power of two that is >= max(n, 2) (compiled, so kernels can call it)."""
    cap = 2
    while cap < n:
        cap *= 2
    return cap


def build_grow(ops: Ops):
    """``grow(buf, mask, first, end) -> (buf, mask)``: double a ring buffer, keeping absolute positions.

    Positions are never wrapped: a slot is ``position & mask``, so after the
    copy every position in ``[first, end)`` still finds its partial.
    """
    alloc, load, store = ops.alloc, ops.load, ops.store

    def grow(buf, mask, first, end):
        new_mask = 2 * mask + 1
        new_buf = alloc(new_mask + 1)
        for pos in range(first, end):
            store(new_buf, pos & new_mask, load(buf, pos & mask))
        return new_buf, new_mask

    return ops.jit(grow)
