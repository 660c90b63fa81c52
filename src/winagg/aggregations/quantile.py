"""Exact order statistics of a window: quantiles, the median and the rank of the newest value.

They are holistic: no constant-size partial gives them. :func:`winagg.rolling` computes them
with compiled order-statistic kernels (:mod:`winagg.engine.order_stats`, O(log w) per row). Every other
path (``winagg.make``, ``Window``, stored windows, a named ``algorithm=``) runs them as plain
Python monoids whose partial is the window's sorted values (a combine costs O(w)); for a
bounded-size partial use :class:`winagg.aggregations.QuantileSketch`.
"""

from __future__ import annotations

import heapq
import math
import numbers

from ..values import is_missing
from .base import Aggregation
from .order_formulas import INTERPOLATIONS, RANK_METHODS, quantile_of_sorted, rank_in_sorted


def check_fraction(q, what: str = "q") -> float:
    """``q`` as a float in [0, 1], or an exception naming ``what``."""
    if isinstance(q, bool) or not isinstance(q, numbers.Real):
        raise TypeError(f"{what} must be a number in [0, 1], got {q!r}")
    if not 0.0 <= float(q) <= 1.0:
        raise ValueError(f"{what} must be in [0, 1], got {q!r}")
    return float(q)


def _number(item, name):
    """``item`` as a float, NaN for a missing one; a TypeError naming ``name`` for a non-number."""
    if is_missing(item):
        return math.nan
    if isinstance(item, (str, bytes)) or not isinstance(item, numbers.Real):
        raise TypeError(f"{name} needs numbers or missing values, got {item!r} ({type(item).__name__})")
    return float(item)


def _merge(older, younger):
    return tuple(heapq.merge(older, younger))


class Quantile(Aggregation):
    """The exact ``q``-quantile of the window's values, NaN skipped, as pandas'
    ``rolling(w, min_periods=1).quantile(q, interpolation=...)`` computes it
    (``interpolation``: linear, lower, higher, midpoint or nearest); NaN for a window
    without a value."""

    aliases = ("quantile",)

    def __init__(self, q: float = 0.5, interpolation: str = "linear"):
        q = check_fraction(q)
        if interpolation not in INTERPOLATIONS:
            raise ValueError(f"interpolation must be one of {', '.join(INTERPOLATIONS)}, got {interpolation!r}")
        super().__init__(q, interpolation)
        self.q, self.interpolation = q, interpolation
        self._init_sorted(type(self).__name__.lower())

    def _init_sorted(self, name):
        def lift(item):
            value = _number(item, name)
            return () if value != value else (value,)

        Aggregation._init_python(self, (), _merge, lift,
                                 lambda ordered: quantile_of_sorted(ordered, self.q, self.interpolation),
                                 True, name)


class Median(Quantile):
    """The exact median of the window's values (pandas' ``rolling(w, min_periods=1).median()``)."""

    aliases = ("median",)

    def __init__(self):
        Aggregation.__init__(self)
        # the middle value, or the mean of the two middle ones: pandas' median is this quantile
        self.q, self.interpolation = 0.5, "midpoint"
        self._init_sorted("median")


class Rank(Aggregation):
    """The rank of each row's value within its window, as pandas' ``rolling(w, min_periods=1)
    .rank(method, ascending, pct)``: ``method`` average, min or max for ties; ``pct`` divides by
    the number of values in the window; NaN when the row's value is missing.

    Outside :func:`winagg.rolling` it is the rank of the window's newest item."""

    aliases = ("rank",)

    def __init__(self, method: str = "average", ascending: bool = True, pct: bool = False):
        if method not in RANK_METHODS:
            raise ValueError(f"method must be one of {', '.join(RANK_METHODS)}, got {method!r}")
        for what, flag in (("ascending", ascending), ("pct", pct)):
            if not isinstance(flag, bool):
                raise TypeError(f"{what} must be True or False, got {flag!r}")
        super().__init__(method=method, ascending=ascending, pct=pct)
        self.method, self.ascending, self.pct = method, ascending, pct
        Aggregation._init_python(self, ((), None), _rank_combine, _rank_lift, self._lower, False, "rank")

    def _lower(self, partial):
        ordered, newest = partial
        return math.nan if newest is None else rank_in_sorted(ordered, newest, self.method, self.pct, self.ascending)


def _rank_lift(item):
    value = _number(item, "rank")
    return ((), value) if value != value else ((value,), value)


def _rank_combine(older, younger):
    newest = older[1] if younger[1] is None else younger[1]
    return _merge(older[0], younger[0]), newest
