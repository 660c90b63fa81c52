"""Event times inside :class:`winagg.Window`: one number type per window, converted at the edges.

A Window keeps its times as int64 or float64 numbers. Datetimes (``datetime``,
``numpy.datetime64``, ``pandas.Timestamp``) become int64 nanoseconds since the
epoch and durations (``"10min"``, ``pandas.Timedelta``) int64 nanoseconds.
Numbers stay int64 unless a size, slide or lateness is a float: int64 keeps
nanoseconds one apart distinct, where float64 merges them above 2**53. Every
int64 time must lie far enough inside int64 that no window bound or lateness
leaves it; outside, the time is refused by name.
"""

from __future__ import annotations

import math
from typing import Optional, Tuple

import numpy as np

from .errors import InvalidTimeError

INT64_MIN = int(np.iinfo(np.int64).min)
INT64_MAX = int(np.iinfo(np.int64).max)
#: -infinity and +infinity among int64 times and window numbers; event times are kept
#: (by :meth:`EventTimes.check`) strictly between them, with room for every window bound.
INT_LOW = INT64_MIN
INT_HIGH = INT64_MAX - 1


def is_duration(value) -> bool:
    """Whether ``value`` is a duration object (pandas, numpy or datetime timedelta)."""
    module = type(value).__module__
    return (module.startswith("pandas") or isinstance(value, np.timedelta64)
            or type(value).__name__ == "timedelta")


def is_datetime_like(x) -> bool:
    return not isinstance(x, (int, float, np.integer, np.floating)) and x is not None


def duration_ns(value, what: str) -> int:
    """A duration (or an int, already nanoseconds) as int nanoseconds; ValueError naming ``what``."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value)
    import pandas as pd

    try:
        return int(pd.Timedelta(value).value)
    except (ValueError, TypeError):
        raise ValueError(f"{what} {value!r} is not a duration (a pandas Timedelta string like '10min')") from None


def datetime_ns(t, what: str) -> int:
    """A datetime as int64 nanoseconds since the epoch; InvalidTimeError naming ``what`` for NaT
    or for what pandas cannot read as a datetime in nanoseconds (text, a date past 2262)."""
    import pandas as pd

    try:
        stamp = pd.Timestamp(t)
    except (TypeError, ValueError) as error:
        raise InvalidTimeError(f"{what} {t!r} cannot be read as a datetime: {error}") from None
    if stamp is pd.NaT:
        raise InvalidTimeError(f"{what} is NaT")
    try:
        return int(stamp.as_unit("ns").value)
    except (OverflowError, ValueError):  # pandas keeps such a Timestamp in a coarser unit
        raise InvalidTimeError(f"{what} {t!r} lies outside int64 nanoseconds since the epoch "
                               f"({pd.Timestamp.min} .. {pd.Timestamp.max})") from None


def check_number(x, what: str):
    """``x`` as a plain Python number; TypeError for non-numbers, InvalidTimeError for NaN."""
    if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
        raise TypeError(f"{what} must be a number, got {x!r}")
    if isinstance(x, (float, np.floating)) and math.isnan(x):
        raise InvalidTimeError(f"{what} is NaN")
    return x.item() if isinstance(x, np.generic) else x


def as_time_type(x, dtype):
    """``x`` (possibly +-infinity) as a number of ``dtype`` (int64: infinities become INT_LOW / INT_HIGH)."""
    if dtype is np.int64:
        if x == -math.inf:
            return INT_LOW
        if x == math.inf:
            return INT_HIGH
        return int(x)
    return float(x)


class EventTimes:
    """How one Window reads times: ``dtype`` (np.int64 or np.float64), datetimes or numbers,
    and for int64 the ``limits`` (lowest, highest) every time must lie within."""

    def __init__(self, datetimes: bool, floats: bool, reach: float):
        self.datetimes = datetimes
        self.dtype = np.float64 if floats else np.int64
        self.limits: Optional[Tuple[int, int]] = None
        if self.dtype is np.int64:
            reach = int(reach) + 1
            self.limits = (INT64_MIN + reach, INT64_MAX - reach)

    # ------------------------------------------------------------ inward
    def one(self, t):
        """One event time as the window's number."""
        if self.datetimes:
            if not is_datetime_like(t):
                raise InvalidTimeError(f"this Window's size is a duration, so times must be datetimes; got {t!r}")
            t = datetime_ns(t, "time")
        else:
            t = check_number(t, "time")
            if self.dtype is np.int64 and isinstance(t, float):
                if not t.is_integer():
                    raise InvalidTimeError(f"time {t!r} is fractional, but this Window keeps integer times "
                                           f"(its size is an integer); give the size as a float for float times")
                t = int(t)
        if self.dtype is np.int64:
            self.check(np.array([t], dtype=object), "time")
        return self.dtype(t)

    def batch(self, times) -> np.ndarray:
        """A batch of event times as an array of the window's dtype."""
        array = np.asarray(times.to_numpy() if hasattr(times, "to_numpy") else times)
        if array.dtype.kind == "M":
            if not self.datetimes:
                raise InvalidTimeError("datetime times need a duration size (like '10min')")
            if np.isnat(array).any():
                raise InvalidTimeError(f"times hold NaT at row {int(np.flatnonzero(np.isnat(array))[0])}")
            stamps = array.astype("datetime64[ns]").astype(np.int64)
        elif array.dtype.kind in "iuf" and not self.datetimes:
            if array.dtype.kind == "f":
                if np.isnan(array).any():
                    raise InvalidTimeError(f"times hold NaN at row {int(np.flatnonzero(np.isnan(array))[0])}")
                if self.dtype is np.int64:
                    fractional = array != np.floor(array)
                    if fractional.any():
                        row = int(np.flatnonzero(fractional)[0])
                        raise InvalidTimeError(f"times[{row}] = {array[row]} is fractional, but this Window "
                                               f"keeps integer times (its size is an integer); give the size "
                                               f"as a float for float times")
            if self.dtype is np.int64:
                self.check(array, "times")  # before the cast: uint64 above int64 must not wrap
            stamps = array.astype(self.dtype)
        else:
            stamps = np.array([self.one(t) for t in array.tolist()], self.dtype)
        if self.dtype is np.int64:
            self.check(stamps, "times")
        return stamps.astype(self.dtype, copy=False)

    def check(self, stamps: np.ndarray, what: str) -> None:
        """InvalidTimeError naming the first int64 time too close to int64's limits."""
        if self.limits is None or stamps.shape[0] == 0:
            return
        lowest, highest = self.limits
        outside = (stamps < lowest) | (stamps > highest)
        if outside.any():
            row = int(np.flatnonzero(outside)[0])
            where = what if stamps.shape[0] == 1 and what == "time" else f"{what}[{row}]"
            raise InvalidTimeError(f"{where} = {stamps[row]} lies within the window's reach of int64's "
                                   f"limits; times must lie in [{lowest}, {highest}]")

    # ------------------------------------------------------------ outward
    def outward(self, t):
        """A window number as the user sees it: a Timestamp, a float or an int."""
        if self.datetimes:
            import pandas as pd

            return pd.Timestamp(int(t))
        return float(t) if self.dtype is np.float64 else int(t)

    def outward_array(self, stamps: np.ndarray) -> np.ndarray:
        return stamps.astype("datetime64[ns]") if self.datetimes else stamps
