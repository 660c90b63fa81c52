"""Storage layouts for partial aggregates.

An algorithm keeps its partials in a *buffer* it reaches only through three
functions: ``alloc(capacity)``, ``load(buf, slot)`` and ``store(buf, slot,
partial)``. The same algorithm source then runs

* in plain Python over a list of arbitrary objects (``PYTHON``), and
* compiled by numba over numpy arrays: one array for scalar partials, one
  array per field for tuple partials (struct of arrays, which numba keeps in
  registers far better than a 2D array or a list of tuples), or a 2D array
  whose rows are fixed-width vector partials (Bloom filters).

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
    """One numpy array per field (2 to 4 fields); a partial is a tuple of numbers."""
    types = tuple(np.dtype(d).type for d in dtypes)

    def make():
        if len(types) == 2:
            t0, t1 = types

            @nb.njit(cache=True)
            def alloc(capacity):
                return (np.zeros(capacity, t0), np.zeros(capacity, t1))

            @nb.njit(cache=True)
            def load(buf, slot):
                return (buf[0][slot], buf[1][slot])

            @nb.njit(cache=True)
            def store(buf, slot, value):
                buf[0][slot] = value[0]
                buf[1][slot] = value[1]

        elif len(types) == 3:
            t0, t1, t2 = types

            @nb.njit(cache=True)
            def alloc(capacity):
                return (np.zeros(capacity, t0), np.zeros(capacity, t1), np.zeros(capacity, t2))

            @nb.njit(cache=True)
            def load(buf, slot):
                return (buf[0][slot], buf[1][slot], buf[2][slot])

            @nb.njit(cache=True)
            def store(buf, slot, value):
                buf[0][slot] = value[0]
                buf[1][slot] = value[1]
                buf[2][slot] = value[2]

        elif len(types) == 4:
            t0, t1, t2, t3 = types

            @nb.njit(cache=True)
            def alloc(capacity):
                return (np.zeros(capacity, t0), np.zeros(capacity, t1),
                        np.zeros(capacity, t2), np.zeros(capacity, t3))

            @nb.njit(cache=True)
            def load(buf, slot):
                return (buf[0][slot], buf[1][slot], buf[2][slot], buf[3][slot])

            @nb.njit(cache=True)
            def store(buf, slot, value):
                buf[0][slot] = value[0]
                buf[1][slot] = value[1]
                buf[2][slot] = value[2]
                buf[3][slot] = value[3]

        else:
            raise ValueError(f"tuple partials have 2 to 4 fields, not {len(types)}")
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
