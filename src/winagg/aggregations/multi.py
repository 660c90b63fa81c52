"""Multi: several aggregations over the same items, one window.

One partial holds each member's partial, so every algorithm and path (``make``,
``rolling``, ``Window``, stored windows) keeps several aggregations of one window
at the cost of one.
"""

from __future__ import annotations

from typing import Optional

import numba as nb
import numpy as np

from ..core.layout import tuple_layout
from ..core.monoid import Monoid
from .base import Compiled
from .names import get


class Multi(Monoid):
    """Several aggregations over the same items: one partial holding each member's partial.

    >>> m = Multi(count="count", total="sum", peak="max")
    >>> {name: float(answer) for name, answer in m.fold([1.0, 5.0, 2.0]).items()}
    {'count': 3.0, 'total': 8.0, 'peak': 5.0}

    Lowered, a partial is a dict by member name. Every member sees every item.
    Compiled (``compiled_for``) when there are 2 to 4 members, all built-in
    aggregations with one-number partials: the partial is then a tuple of
    numbers, and the compiled ``lower`` gives the first member's answer
    (kernels write one number per row); :attr:`lowers` holds every member's.
    """

    def __init__(self, **members):
        if not members:
            raise ValueError("Multi needs at least one member aggregation, e.g. Multi(total='sum')")
        self.members = {name: get(agg) for name, agg in members.items()}
        parts = tuple(self.members.values())
        names = tuple(self.members)

        def combine(older, younger):
            return tuple(m.combine(a, b) for m, a, b in zip(parts, older, younger))

        def lift(item):
            return tuple(m.lift(item) for m in parts)

        def lower(partial):
            return {name: m.lower(p) for name, m, p in zip(names, parts, partial)}

        super().__init__(tuple(m.identity for m in parts), combine, lift, lower,
                         commutative=all(m.commutative for m in parts),
                         name="multi(" + ",".join(f"{n}={m.name}" for n, m in self.members.items()) + ")")
        self.positional = any(m.positional for m in parts)
        self._compiled: dict = {}

    def compiled_for(self, dtype):
        """The compiled description (2 to 4 one-number members), or None: then it runs in Python."""
        dtype = np.dtype(dtype)
        if dtype not in self._compiled:
            self._compiled[dtype] = _compile_multi(self, dtype)
        return self._compiled[dtype]

    def __reduce__(self):
        return (_rebuild_multi, (self.members,))


def _rebuild_multi(members):
    return Multi(**members)


def _compile_multi(multi, dtype) -> Optional[Compiled]:
    specs = [m.compiled_for(dtype) for m in multi.members.values()]
    if not 2 <= len(specs) <= 4 or any(s is None or not s.layout.name.startswith("scalar") for s in specs):
        return None
    lifts = tuple(s.lift for s in specs)
    combines = tuple(s.combine for s in specs)
    lowers = tuple(s.lower for s in specs)
    lift, combine, lower_all = _tuple_functions(lifts, combines, lowers)
    first_lower = lowers[0]

    @nb.njit
    def lower(partial):
        return first_lower(partial[0])

    dtypes = [np.asarray(s.identity).dtype for s in specs]
    spec = Compiled("multi(" + ",".join(s.key for s in specs) + ")", lift, combine, lower,
                    tuple(np.asarray(s.identity)[()] for s in specs), tuple_layout(*dtypes), specs[0].out_dtype)
    multi.lowers = lower_all
    return spec


def _tuple_functions(lifts, combines, lowers):
    # numba has no loop over a heterogeneous tuple of functions: one version per arity
    if len(lifts) == 2:
        l0, l1 = lifts
        c0, c1 = combines
        w0, w1 = lowers

        @nb.njit
        def lift(x, row):
            return (l0(x, row), l1(x, row))

        @nb.njit
        def combine(a, b):
            return (c0(a[0], b[0]), c1(a[1], b[1]))

        @nb.njit
        def lower_all(p):
            return (w0(p[0]), w1(p[1]))

    elif len(lifts) == 3:
        l0, l1, l2 = lifts
        c0, c1, c2 = combines
        w0, w1, w2 = lowers

        @nb.njit
        def lift(x, row):
            return (l0(x, row), l1(x, row), l2(x, row))

        @nb.njit
        def combine(a, b):
            return (c0(a[0], b[0]), c1(a[1], b[1]), c2(a[2], b[2]))

        @nb.njit
        def lower_all(p):
            return (w0(p[0]), w1(p[1]), w2(p[2]))

    else:
        l0, l1, l2, l3 = lifts
        c0, c1, c2, c3 = combines
        w0, w1, w2, w3 = lowers

        @nb.njit
        def lift(x, row):
            return (l0(x, row), l1(x, row), l2(x, row), l3(x, row))

        @nb.njit
        def combine(a, b):
            return (c0(a[0], b[0]), c1(a[1], b[1]), c2(a[2], b[2]), c3(a[3], b[3]))

        @nb.njit
        def lower_all(p):
            return (w0(p[0]), w1(p[1]), w2(p[2]), w3(p[3]))

    return lift, combine, lower_all
