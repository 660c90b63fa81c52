"""Event times inside :class:`winagg.Window`: one number type per window, converted at the edges.

The conversions themselves are :mod:`winagg.times`' (the one front door for times and
durations); this module holds what is particular to a Window:

* :func:`read_spans`: a Window's size, slide and allowed lateness. With a duration size
  (``"10min"``, ``pandas.Timedelta``, ``numpy.timedelta64``, ``datetime.timedelta``) the
  times are datetimes and every span is int64 nanoseconds; a bare number for a slide or a
  lateness would then have no unit (pandas and Spark take none either), so it is refused,
  except 0 and infinity for the lateness, which need none. With a numeric size every span
  is a number in the times' unit and a duration is refused.
* :class:`EventTimes`: the times of one Window. Datetimes become int64 nanoseconds since the
  epoch (UTC-based when tz-aware; results come back in the time zone of the first datetime,
  and tz-naive and tz-aware times do not mix). Numbers stay int64 unless a size, slide or
  finite lateness is a float: int64 keeps nanoseconds one apart distinct, where float64
  merges them above 2**53. Every int64 time must lie far enough inside int64 that no window
  bound leaves it; outside, the time is refused by name.
"""

from __future__ import annotations

import math
from typing import List, NamedTuple, Optional, Tuple

import numpy as np

from ..core.errors import InvalidTimeError
from ..engine.plans import INT_HIGH, INT_LOW
from ..times import (DURATION_HINT, check_number, datetimes_ns, duration_ns, instant_ns, is_duration, same_zoning,
                     time_array, timestamp, timestamps)
from ..values import INT64_MAX, INT64_MIN



# ------------------------------------------------------------ size, slide, lateness
class Spans(NamedTuple):
    """A time Window's spans as numbers of its time unit (ns for datetimes)."""

    datetimes: bool
    sizes: List
    slide: Optional[object]
    lateness: object  # a number, or math.inf: never drop late events
    floats: bool  # whether the window's times are float64


def read_spans(sizes, slide, lateness) -> Spans:
    """A Window's ``size`` (a list), ``slide`` and ``allowed_lateness``, checked and converted.

    TypeError naming the argument for a span of the other kind than the sizes (a bare number
    beside a duration size, a duration beside a numeric size); ValueError for spans that are
    not positive (a lateness may be 0).
    """
    durations = [is_duration(s) for s in sizes]
    if any(durations) and not all(durations):
        raise TypeError(f"size mixes durations and bare numbers ({sizes!r}); a bare number has no unit "
                        f"beside a duration: give every size as {DURATION_HINT}")
    datetimes = all(durations)
    sizes = [_span(s, "size", datetimes) for s in sizes]
    if any(not s > 0 for s in sizes):
        raise ValueError(f"sizes must be positive, got {sizes!r}")
    slide = None if slide is None else _span(slide, "slide", datetimes)
    if slide is not None and not slide > 0:
        raise ValueError(f"slide must be positive, got {slide!r}")
    lateness = _lateness(lateness, datetimes)
    finite = sizes + ([] if slide is None else [slide]) + ([lateness] if lateness != math.inf else [])
    return Spans(datetimes, sizes, slide, lateness, any(isinstance(s, float) for s in finite))


def _span(value, what: str, datetimes: bool):
    """One span: int ns for a datetime window, a plain number otherwise."""
    if datetimes:
        if not is_duration(value):
            raise TypeError(f"{what}={value!r} is a bare number, but size is a duration (the times are "
                            f"datetimes): a number has no unit there; give {what} as {DURATION_HINT}")
        return duration_ns(value, what)
    if is_duration(value):
        raise TypeError(f"{what}={value!r} is a duration, but size is a number (in the unit of numeric "
                        f"times); give {what} as a number too, or size as a duration for datetime times")
    return check_number(value, what)


def _lateness(value, datetimes: bool):
    """The allowed lateness: 0 and infinity are numbers in any unit; anything else is a span."""
    if not is_duration(value):
        number = check_number(value, "allowed_lateness")
        if number == 0 or number == math.inf:
            return math.inf if number == math.inf else 0
    lateness = _span(value, "allowed_lateness", datetimes)
    if lateness < 0:
        raise ValueError(f"allowed_lateness must be >= 0, got {value!r}")
    return lateness


def as_time_type(x, dtype):
    """``x`` (possibly +-infinity) as a number of ``dtype``; int64 clamps to INT_LOW .. INT_HIGH
    (a bound beyond every time the window accepts acts as that infinity)."""
    if dtype is np.int64:
        if x <= INT_LOW:
            return INT_LOW
        if x >= INT_HIGH:
            return INT_HIGH
        return int(x)
    return float(x)


def is_datetime_like(x) -> bool:
    return not isinstance(x, (int, float, np.integer, np.floating)) and x is not None


class _Unseen:
    """The time zone of a datetime Window before its first datetime (a class: it pickles as itself)."""


# ------------------------------------------------------------ a Window's times
class EventTimes:
    """How one Window reads times: ``dtype`` (np.int64 or np.float64), datetimes or numbers,
    for int64 the ``limits`` (lowest, highest) every time must lie within, and for datetimes
    the ``zone`` of the first one (None: tz-naive)."""

    zone = _Unseen  # class attributes: windows pickled before time zones were kept read as unseen
    _pending = _Unseen

    def __init__(self, datetimes: bool, floats: bool, reach):
        self.datetimes = datetimes
        self.dtype = np.float64 if floats else np.int64
        self.limits: Optional[Tuple[int, int]] = None
        if self.dtype is np.int64:
            reach = int(reach) + 1
            self.limits = (INT64_MIN + reach, INT64_MAX - reach)
            if self.limits[0] > self.limits[1]:
                unit = " ns" if datetimes else ""
                raise ValueError(f"size + slide = {reach - 1}{unit} is longer than int64 times can span")

    # ------------------------------------------------------------ inward
    def one(self, t):
        """One event time as the window's number (its time zone is kept by :meth:`settle`)."""
        self._pending = _Unseen
        return self._one(t, "time")

    def _one(self, t, what):
        if self.datetimes:
            if not is_datetime_like(t):
                raise InvalidTimeError(f"this Window's size is a duration, so times must be datetimes; got {t!r}")
            t, tz = instant_ns(t, what)
            self._zoned(tz, what)
        else:
            t = self._number(t, what)
        if self.dtype is np.int64:
            self.check(np.array([t], dtype=object), what)
        return self.dtype(t)

    def _number(self, t, what):
        t = check_number(t, what)
        if isinstance(t, float) and math.isinf(t):
            raise InvalidTimeError(f"{what} is infinite; times must be finite")
        if self.dtype is np.int64 and isinstance(t, float):
            if not t.is_integer():
                raise InvalidTimeError(f"{what} {t!r} is fractional, but this Window keeps integer times "
                                       f"(its size is an integer); give the size as a float for float times")
            t = int(t)
        return t

    def batch(self, times) -> np.ndarray:
        """A batch of event times as an array of the window's dtype."""
        self._pending = _Unseen
        array, tz = time_array(times, "times")
        if array.dtype.kind == "m":
            raise InvalidTimeError(f"times are durations ({array.dtype}), not instants; give datetimes "
                                   f"or numbers")
        if array.dtype.kind == "M":
            if not self.datetimes:
                raise InvalidTimeError("datetime times need a duration size (like '10min')")
            self._zoned(tz, "times")
            stamps = datetimes_ns(array, "times")
        elif array.dtype.kind in "iuf" and not self.datetimes:
            if array.dtype.kind == "f":
                self._finite(array)
            if self.dtype is np.int64:
                self.check(array, "times")  # before the cast: uint64 above int64 must not wrap
            stamps = array.astype(self.dtype)
        else:
            stamps = np.array([self._one(t, f"times[{i}]") for i, t in enumerate(array.tolist())], self.dtype)
        if self.dtype is np.int64:
            self.check(stamps, "times")
        return stamps.astype(self.dtype, copy=False)

    def _finite(self, array: np.ndarray) -> None:
        """InvalidTimeError naming the first NaN, infinite or (for int64 windows) fractional time."""
        bad = ~np.isfinite(array)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise InvalidTimeError(f"times hold {'NaN' if np.isnan(array[row]) else 'an infinite time'} "
                                   f"at row {row}; times must be finite")
        if self.dtype is np.int64:
            fractional = array != np.floor(array)
            if fractional.any():
                row = int(np.flatnonzero(fractional)[0])
                raise InvalidTimeError(f"times[{row}] = {array[row]} is fractional, but this Window "
                                       f"keeps integer times (its size is an integer); give the size "
                                       f"as a float for float times")

    def _zoned(self, tz, what) -> None:
        """Refuse a tz-naive time among tz-aware ones (or the reverse); remember the first zone."""
        known = self.zone if self.zone is not _Unseen else self._pending
        if known is not _Unseen:
            same_zoning(tz, known, what)
        elif self._pending is _Unseen:
            self._pending = tz

    def settle(self) -> None:
        """The events just read were taken: the first datetime's time zone becomes the window's."""
        if self.zone is _Unseen and self._pending is not _Unseen:
            self.zone = self._pending
        self._pending = _Unseen

    def check(self, stamps: np.ndarray, what: str) -> None:
        """InvalidTimeError naming the first int64 time too close to int64's limits."""
        if self.limits is None or stamps.shape[0] == 0:
            return
        lowest, highest = self.limits
        outside = (stamps < lowest) | (stamps > highest)
        if outside.any():
            row = int(np.flatnonzero(outside)[0])
            where = f"{what}[{row}]" if what == "times" else what
            raise InvalidTimeError(f"{where} = {stamps[row]} lies within the window's reach of int64's "
                                   f"limits; times must lie in [{lowest}, {highest}]")

    # ------------------------------------------------------------ outward
    def _zone(self):
        """The window's zone; during its first datetimes' call, theirs (its results are in it)."""
        for zone in (self.zone, self._pending):
            if zone is not _Unseen:
                return zone
        return None

    def outward(self, t):
        """A window number as the user sees it: a Timestamp (in the times' zone), a float or an int."""
        if self.datetimes:
            return timestamp(t, self._zone())
        return float(t) if self.dtype is np.float64 else int(t)

    def outward_array(self, stamps: np.ndarray):
        return timestamps(stamps, self._zone()) if self.datetimes else stamps
