"""Order-sensitive aggregations (not commutative): first, last, collect, M4.

They run in plain Python with any item type. An empty partial is the empty
tuple, so the identity is exact and pickles as itself.
"""

from __future__ import annotations

from .base import Aggregation


def _first_combine(older, younger):
    return older if older else younger


def _last_combine(older, younger):
    return younger if younger else older


def _single(item):
    return (item,)


def _only_or_none(partial):
    return partial[0] if partial else None


class First(Aggregation):
    """The oldest item of the window (None when empty)."""

    aliases = ("first",)
    keeps_input_type = True

    def __init__(self):
        super().__init__()
        Aggregation._init_python(self, (), _first_combine, _single, _only_or_none, False, "first")


class Last(Aggregation):
    """The youngest item of the window (None when empty)."""

    aliases = ("last",)
    keeps_input_type = True

    def __init__(self):
        super().__init__()
        Aggregation._init_python(self, (), _last_combine, _single, _only_or_none, False, "last")


def _concat(older, younger):
    return older + younger


def _as_list(partial):
    return list(partial)


class Collect(Aggregation):
    """Every item of the window, oldest first, as a list."""

    aliases = ("collect",)
    defined_when_empty = True

    def __init__(self):
        super().__init__()
        Aggregation._init_python(self, (), _concat, _single, _as_list, False, "collect")


def _m4_lift(item):
    return (item, item, item, item)


def _missing(x):
    return x is None or x != x  # None, NaN and NaT


def _m4_min(a, b):
    # Missing values are skipped, as pandas' min skips them. Python's min(nan, 1) is nan
    # but min(1, nan) is 1, which made the combine non-associative: the answer depended
    # on how an algorithm bracketed the window.
    if _missing(a):
        return b
    if _missing(b):
        return a
    return b if b < a else a


def _m4_max(a, b):
    if _missing(a):
        return b
    if _missing(b):
        return a
    return b if b > a else a


def _m4_combine(older, younger):
    if not older:
        return younger
    if not younger:
        return older
    return (older[0], younger[1], _m4_min(older[2], younger[2]), _m4_max(older[3], younger[3]))


def _m4_lower(partial):
    return partial if partial else None


class M4(Aggregation):
    """M4 (Jugel et al.): ``(first, last, min, max)`` of the window, None when empty.

    first and last are the oldest and youngest items as they are; min and max skip
    missing items (None, NaN) and are missing only when every item is.
    """

    aliases = ("m4",)

    def __init__(self):
        super().__init__()
        Aggregation._init_python(self, (), _m4_combine, _m4_lift, _m4_lower, False, "m4")
