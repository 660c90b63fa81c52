"""Storage layouts for partial aggregates.

An algorithm keeps its partials in a *buffer* it reaches only through three
functions: ``alloc(capacity)``, ``load(buf, slot)`` and ``store(buf, slot,
partial)``. The same algorithm source then runs

* in plain Python over a list of arbitrary objects (``PYTHON``), and
* compiled by numba over numpy arrays: one array for scalar partials, one
  record array for tuple partials (a field per tuple field, loaded into
  registers field by field), or a 2D array whose rows are fixed-width vector
  partials (Bloom filters).

Vector loads return a view of the row; algorithms never keep a loaded partial
across a store to the same slot, and ``combine`` always returns a new value.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any, Callable

import numba as nb
import numpy as np


@dataclass(frozen=True)
class Layout:
    """How one kind of partial is kept: allocate, read a slot, write a slot."""

    name: str
    alloc: Callable[[int], Any]
    load: Callable[[Any, int], Any]
    store: Callable[[Any, int, Any], None]


def _python_alloc(capacity):
    return [None] * capacity


PYTHON = Layout("python", _python_alloc, operator.getitem, operator.setitem)

_layout_cache: dict = {}


def _cached(key, make):
    if key not in _layout_cache:
        _layout_cache[key] = make()
    return _layout_cache[key]


def scalar_layout(dtype) -> Layout:
    """One numpy array of ``dtype``; a partial is one number."""
    dtype = np.dtype(dtype).type

    def make():
        @nb.njit(cache=True)
        def alloc(capacity):
            return np.zeros(capacity, dtype)

        @nb.njit(cache=True)
        def load(buf, slot):
            return buf[slot]

        @nb.njit(cache=True)
        def store(buf, slot, value):
            buf[slot] = value

        return Layout(f"scalar[{np.dtype(dtype).name}]", alloc, load, store)

    return _cached(("scalar", dtype), make)


def tuple_layout(*dtypes) -> Layout:
    """One numpy record array with a field per tuple field (2 to 4); a partial is a tuple of numbers.

    A partial's fields sit side by side, so a slot read from memory is one cache line, not one
    per field: with a window out of the cache that is what a tuple partial's round waits on
    (the figures against one array per field are on docs/benchmarks/reference.md, measured with
    ``winagg bench reference``).
    """
    types = tuple(np.dtype(d).type for d in dtypes)
    if not 2 <= len(types) <= 4:
        raise ValueError(f"tuple partials have 2 to 4 fields, not {len(types)}")
    record = np.dtype([(f"f{i}", t) for i, t in enumerate(types)])

    def make():
        if len(types) == 2:
            @nb.njit(cache=True)
            def load(buf, slot):
                return (buf[slot].f0, buf[slot].f1)

            @nb.njit(cache=True)
            def store(buf, slot, value):
                buf[slot].f0 = value[0]
                buf[slot].f1 = value[1]

        elif len(types) == 3:
            @nb.njit(cache=True)
            def load(buf, slot):
                return (buf[slot].f0, buf[slot].f1, buf[slot].f2)

            @nb.njit(cache=True)
            def store(buf, slot, value):
                buf[slot].f0 = value[0]
                buf[slot].f1 = value[1]
                buf[slot].f2 = value[2]

        else:
            @nb.njit(cache=True)
            def load(buf, slot):
                return (buf[slot].f0, buf[slot].f1, buf[slot].f2, buf[slot].f3)

            @nb.njit(cache=True)
            def store(buf, slot, value):
                buf[slot].f0 = value[0]
                buf[slot].f1 = value[1]
                buf[slot].f2 = value[2]
                buf[slot].f3 = value[3]

        @nb.njit(cache=True)
        def alloc(capacity):
            return np.zeros(capacity, record)

        names = ",".join(np.dtype(t).name for t in types)
        return Layout(f"tuple[{names}]", alloc, load, store)

    return _cached(("tuple", types), make)


def vector_layout(width: int, dtype) -> Layout:
    """A 2D numpy array with one row of ``width`` elements per partial."""
    dtype = np.dtype(dtype).type

    def make():
        @nb.njit(cache=True)
        def alloc(capacity):
            return np.zeros((capacity, width), dtype)

        @nb.njit(cache=True)
        def load(buf, slot):
            return buf[slot]

        @nb.njit(cache=True)
        def store(buf, slot, value):
            buf[slot, :] = value

        return Layout(f"vector[{width}x{np.dtype(dtype).name}]", alloc, load, store)

    return _cached(("vector", width, dtype), make)
