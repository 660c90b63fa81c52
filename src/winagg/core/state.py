"""The named fields of an algorithm's state ``st``, for the code that runs algorithms.

Every algorithm keeps its state as ``(bufs, st)``: buffers changed in place and
a tuple of numbers (and partials) that each call returns anew. The first three
fields of ``st`` are common to all of them, so the window layers read them by
name here rather than by position:

* an in-order algorithm's ``st`` starts ``(mask, first, end)``: it holds the
  positions ``first .. end - 1`` and room for ``mask + 1`` items before ``grow``;
* an out-of-order tree's (FiBA's) starts ``(limit, 0, entries)``: it holds
  ``entries`` distinct times and room for ``limit`` before ``reserve``.

Past those, the fields are the algorithm's own (it unpacks them by name). The
compiled loops use :data:`COMPILED`, the same functions inlined by numba.
"""

from __future__ import annotations

from types import SimpleNamespace

from . import jitcache


def size(st) -> int:
    """Items in the window (in-order), or entries in the tree (out of order)."""
    return st[2] - st[1]


def first(st) -> int:
    """The oldest position an in-order window holds (its items are ``first .. end - 1``)."""
    return st[1]


def end(st) -> int:
    """One past the youngest position of an in-order window."""
    return st[2]


def capacity(st) -> int:
    """Items an in-order window holds before it must ``grow``."""
    return st[0] + 1


def full(st) -> bool:
    """Whether the next in-order insert needs ``grow`` first."""
    return st[2] - st[1] > st[0]


def free_entries(st) -> int:
    """Entries an out-of-order tree takes before it must ``reserve`` more."""
    return st[0] - (st[2] - st[1])


def limit(st) -> int:
    """The entries an out-of-order tree's pool has room for."""
    return st[0]


PYTHON = SimpleNamespace(size=size, first=first, end=end, capacity=capacity, full=full, free_entries=free_entries,
                         limit=limit)
#: The same accessors for compiled loops, inlined: no call in the loop.
COMPILED = SimpleNamespace(**{name: jitcache.njit(inline="always")(function)
                              for name, function in vars(PYTHON).items()})


def accessors(compiled: bool) -> SimpleNamespace:
    """:data:`COMPILED` or :data:`PYTHON`."""
    return COMPILED if compiled else PYTHON
