"""The one front door for times and durations: integer and datetime times stay exact
integers end to end, in the times' own unit; they are never rounded through float64, and
no ``t - window`` can overflow int64 in a kernel (times are shifted when it could, see
:func:`as_times`).
"""

from __future__ import annotations

import math
import numbers
from typing import Tuple

import numba as nb
import numpy as np

from .errors import InvalidTimeError
from .values import INT64_MAX, INT64_MIN, to_array

def _ticks_per_ns(unit: str, count: int) -> Tuple[int, int]:
    """(numerator, denominator): one tick of ``datetime64[count unit]`` is num/den ns."""
    tick = np.timedelta64(count, unit)
    if unit in ("ps", "fs", "as"):
        per_ns = int(np.timedelta64(1, "ns").astype(f"timedelta64[{unit}]").astype(np.int64))
        return count, per_ns
    return int(tick.astype("timedelta64[ns]").astype(np.int64)), 1


def _window_in_ticks(window, unit: str, count: int):
    """The window as a number of ticks of the times' unit, or None if it is not whole ticks."""
    import pandas as pd

    if isinstance(window, bool):
        raise TypeError(f"window must be a duration or a number, got {window!r}")
    if isinstance(window, (numbers.Real, np.number)):
        return window  # a number is in the times' unit, as documented
    try:
        ns = pd.Timedelta(window).value
    except (TypeError, ValueError) as error:
        raise ValueError(f"window {window!r} is not a duration ({error})") from None
    if ns is None or isinstance(window, float):
        raise ValueError(f"window {window!r} is not a duration")
    num, den = _ticks_per_ns(unit, count)  # one tick = num/den ns
    ticks, rest = divmod(ns * den, num)
    return ticks if rest == 0 else None


@nb.njit(cache=True)
def _tick_counts(ticks):
    """``(NaT ticks, lowest, highest, rows older than the row before)`` of int64 ticks in one
    pass without a data-dependent branch, so that it vectorises (NaT is int64's minimum)."""
    nats, unsorted = 0, 0
    lowest, highest = INT64_MAX, INT64_MIN
    previous = ticks[0]
    for row in range(ticks.shape[0]):
        tick = ticks[row]
        nats += tick == INT64_MIN
        lowest = min(lowest, tick)
        highest = max(highest, tick)
        unsorted += tick < previous
        previous = tick
    return nats, lowest, highest, unsorted


def _tick_summary(ticks):
    """``(first NaT row, lowest, highest, first row older than the row before it)`` of non-empty
    int64 ticks (-1: none)."""
    nats, lowest, highest, unsorted = _tick_counts(ticks)
    nat = int(np.flatnonzero(ticks == INT64_MIN)[0]) if nats else -1
    first_unsorted = int(np.flatnonzero(ticks[1:] < ticks[:-1])[0]) + 1 if unsorted else -1
    return nat, lowest, highest, first_unsorted


def _datetimes_as_ticks(t: np.ndarray, window):
    """``(ticks, w, same)``: datetime times as int64 ticks of their own unit (or of ns when the
    window needs it); ``same`` when the ticks are the times' own int64 view."""
    unit, count = np.datetime_data(t.dtype)
    same = unit not in ("Y", "M")
    if not same:  # calendar units have no fixed length: count in seconds
        t, unit, count = t.astype("datetime64[s]"), "s", 1
    w = _window_in_ticks(window, unit, count)
    if w is not None:
        return t.view(np.int64), w, same
    # A window finer than the times' unit (times in seconds, window "1500ms"): nanoseconds.
    import pandas as pd

    num, den = _ticks_per_ns(unit, count)
    ticks = t.view(np.int64)
    lo, hi = (int(ticks.min()), int(ticks.max())) if ticks.size else (0, 0)
    if lo * num // den < INT64_MIN + 1 or hi * num // den > INT64_MAX:
        raise OverflowError(f"times in {unit} do not fit int64 nanoseconds, which the window "
                            f"{window!r} needs; give the window in whole {unit}")
    ns = ticks * np.int64(num) if den == 1 else ticks // np.int64(den)
    return ns, pd.Timedelta(window).value, False


def _whole_window(w) -> int:
    """An integer-time window: (t - w, t] holds the same integers as (t - ceil(w), t]."""
    if isinstance(w, (float, np.floating)):
        if math.isnan(w):
            raise ValueError("window is NaN")
        if math.isinf(w):
            return INT64_MAX
        return int(math.ceil(w))
    return int(w)


def _fit_int_times(t: np.ndarray, w: int, lo: int, hi: int):
    """int64 times and window such that ``t - w`` never overflows (shifting every time alike);
    ``lo`` and ``hi`` are the lowest and highest time."""
    w = min(w, hi - lo + 1)  # a longer window holds every row anyway
    shift = 0
    if lo - w < INT64_MIN:
        shift = INT64_MIN - (lo - w)
    elif hi > INT64_MAX:
        shift = INT64_MAX - hi
    if lo + shift - w < INT64_MIN or hi + shift > INT64_MAX:
        raise OverflowError(f"times span {hi - lo} units, too wide for int64 with a window of {w}")
    if shift == 0:
        return t.astype(np.int64, copy=False), w
    # (t - lo) is exact in uint64; adding the new minimum wraps modulo 2**64 to the true value.
    offset = np.uint64((lo + shift) % 2**64)
    relative = t.astype(np.uint64) - np.uint64(lo % 2**64)
    return (relative + offset).view(np.int64), w


def as_times(times, window, rows: int):
    """``(t, w)``: times as exact int64 (integers, datetimes) or float64, and the window in their unit.

    Row i covers the rows whose time lies in ``(t[i] - w, t[i]]``. Integer and datetime
    times keep their unit (a numeric window is in that unit; a duration window is
    converted exactly), and are shifted, all by the same amount, when ``t - w`` would
    leave int64. Float times may not be NaN or infinite.
    """
    t, w, _ = read_times(times, window, rows)
    return t, w


def read_times(times, window, rows: int):
    """``(t, w, unsorted)``: :func:`as_times` and the first row whose time is older than the
    time before it (-1 when the times are sorted), from one pass over integer times."""
    t = to_array(times, "times")
    if t.shape[0] != rows:
        raise ValueError(f"times has {t.shape[0]} rows but values has {rows}")
    summary = None
    if t.dtype.kind == "M":
        summary = _tick_summary(t.view(np.int64)) if t.size else (-1, 0, 0, -1)
        if summary[0] >= 0:
            raise InvalidTimeError(f"times hold NaT at row {summary[0]}")
        t, w, same = _datetimes_as_ticks(t, window)
        if not same:
            summary = None  # converted to another unit: summarise the new ticks
    elif t.dtype.kind in "iub":
        if isinstance(window, str) or not isinstance(window, (numbers.Real, np.number)):
            raise ValueError(f"a duration window ({window!r}) needs datetime times; "
                             f"with numeric times give the window as a number")
        w = window
    elif t.dtype.kind == "f":
        bad = ~np.isfinite(t)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            what = "NaN" if np.isnan(t[row]) else "infinite"
            raise InvalidTimeError(f"times[{row}] is {what}; times must be finite numbers")
        if isinstance(window, str) or not isinstance(window, (numbers.Real, np.number)):
            raise ValueError(f"a duration window ({window!r}) needs datetime times")
        w = float(window)
    elif t.dtype.kind == "O" and any(x is None for x in t.tolist()):
        row = next(i for i, x in enumerate(t.tolist()) if x is None)
        raise InvalidTimeError(f"times[{row}] is None; every row needs a time")
    else:
        raise InvalidTimeError(f"times must be numbers or datetimes, got dtype {t.dtype}")
    if isinstance(w, bool) or not w > 0:
        raise ValueError(f"window must be positive, got {window!r}")
    if t.dtype.kind == "f":
        t = t.astype(np.float64, copy=False)
        unsorted = np.flatnonzero(t[1:] < t[:-1])
        return t, w, int(unsorted[0]) + 1 if unsorted.size else -1
    if not t.size:
        return t.astype(np.int64), _whole_window(w), -1
    if t.dtype.kind == "u" and int(t.max()) > INT64_MAX:
        lo, hi, unsorted = int(t.min()), int(t.max()), np.flatnonzero(t[1:] < t[:-1])
        unsorted = int(unsorted[0]) + 1 if unsorted.size else -1
    else:
        t = t.astype(np.int64, copy=False)
        _, lo, hi, unsorted = summary if summary is not None else _tick_summary(t)
    t, w = _fit_int_times(t, _whole_window(w), int(lo), int(hi))
    return t, w, int(unsorted)
