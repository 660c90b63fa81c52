"""The one front door for times and durations.

Every path that takes a time or a duration from a user converts it here (``winagg.rolling``,
``winagg.Window`` through :mod:`winagg.windows.event_time`, the per-item aggregator through
:mod:`winagg.windows.time_index`), so each rule is written once:

* A **duration** (``numpy.timedelta64`` of any unit, ``datetime.timedelta``,
  ``pandas.Timedelta``, text such as ``"10min"``, a fixed pandas offset such as
  ``pandas.offsets.Hour(2)``) is read as the length it is, exactly: a rational number of
  nanoseconds (:func:`duration_ns`, :func:`duration_in_ticks`). Calendar lengths (months,
  years, ``MonthEnd``) have no fixed length and are refused, as pandas refuses them.
* A **datetime** (``datetime``, ``date``, ``numpy.datetime64`` of any unit,
  ``pandas.Timestamp``, tz-aware or not) is an instant: int64 nanoseconds since the epoch,
  UTC-based for tz-aware ones, as pandas keeps them (:func:`instant_ns`, :func:`datetimes_ns`).
  Its time zone travels beside it as a name pandas reads back (:func:`zone_name`), so that
  results come back in it (:func:`timestamp`).
* Arrays of times (:func:`time_array`): tz-aware pandas and Arrow times become their UTC
  ``datetime64`` (the instants pandas' own ``rolling`` windows over) and object arrays of
  datetimes become ``datetime64[ns]``.
* Integer and datetime times stay exact integers end to end, in the times' own unit; they are
  never rounded through float64, and no ``t - window`` can overflow int64 in a kernel (times
  are shifted when it could, see :func:`as_times`).

What cannot be represented exactly (a datetime outside int64 nanoseconds where nanoseconds
are needed, a duration that is not a whole number of nanoseconds where one is needed) is
refused with an error naming the argument; nothing is rounded silently.
"""

from __future__ import annotations

import datetime
import math
import numbers
from fractions import Fraction
from typing import Optional, Tuple

import numba as nb
import numpy as np

from .core.errors import InvalidTimeError
from .values import INT64_MAX, INT64_MIN, to_array

#: Where a duration is wanted and a bare number is not accepted: what to give instead.
DURATION_HINT = "a duration such as '10min', pandas.Timedelta or numpy.timedelta64"


def _ticks_per_ns(unit: str, count: int) -> Tuple[int, int]:
    """(numerator, denominator): one tick of ``datetime64[count unit]`` is num/den ns."""
    tick = np.timedelta64(count, unit)
    if unit in ("ps", "fs", "as"):
        per_ns = int(np.timedelta64(1, "ns").astype(f"timedelta64[{unit}]").astype(np.int64))
        return count, per_ns
    return int(tick.astype("timedelta64[ns]").astype(np.int64)), 1


# ---------------------------------------------------------------- numbers as times
def check_number(x, what: str):
    """``x`` as a plain Python number; TypeError for non-numbers (durations among them: a
    ``numpy.timedelta64`` is a numpy integer, but not a plain number), InvalidTimeError for NaN."""
    if isinstance(x, (bool, np.timedelta64)) or not isinstance(x, (int, float, np.integer, np.floating)):
        raise TypeError(f"{what} must be a number, got {x!r}")
    if isinstance(x, (float, np.floating)) and math.isnan(x):
        raise InvalidTimeError(f"{what} is NaN")
    return x.item() if isinstance(x, np.generic) else x


# ---------------------------------------------------------------- durations
def is_duration(value) -> bool:
    """Whether ``value`` is given as a duration (a timedelta of any library, text, a pandas
    offset or NaT) rather than as a bare number."""
    if isinstance(value, (np.timedelta64, datetime.timedelta, str)):
        return True
    return type(value).__module__.startswith("pandas")


def _timedelta64_ns(value: np.timedelta64, what: str) -> Fraction:
    """A ``numpy.timedelta64`` as exact nanoseconds (a fraction for units finer than ns)."""
    unit, count = np.datetime_data(value.dtype)
    if np.isnat(value):
        raise ValueError(f"{what} is NaT; give {DURATION_HINT}")
    if unit == "generic":
        raise ValueError(f"{what} {value!r} has no unit; give {DURATION_HINT}")
    if unit in ("Y", "M"):
        raise ValueError(f"{what} {value!r} is in {'years' if unit == 'Y' else 'months'}, which have "
                         f"no fixed length; give a fixed duration such as '30D'")
    num, den = _ticks_per_ns(unit, count)
    return Fraction(int(value.astype(np.int64)) * num, den)


def _duration_fraction(value, what: str) -> Fraction:
    """``value`` (see :func:`is_duration`) as exact nanoseconds; TypeError for a bare number,
    ValueError naming ``what`` for what is no fixed duration."""
    if not is_duration(value):
        raise TypeError(f"{what} {value!r} is not a duration; give {DURATION_HINT}")
    import pandas as pd

    if isinstance(value, np.timedelta64):
        return _timedelta64_ns(value, what)
    if isinstance(value, pd.Timedelta):  # its own unit may be coarser than ns (and longer than ns hold)
        return _timedelta64_ns(value.to_timedelta64(), what)
    if isinstance(value, datetime.timedelta):
        return Fraction(((value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds) * 1_000)
    try:
        parsed = pd.Timedelta(value)  # text and fixed offsets (Hour, Minute, Day, ...)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{what} {value!r} is not a fixed duration ({error})") from None
    if parsed is pd.NaT:
        raise ValueError(f"{what} {value!r} is NaT; give {DURATION_HINT}")
    return _timedelta64_ns(parsed.to_timedelta64(), what)


def duration_ns(value, what: str) -> int:
    """A duration as exact int nanoseconds; ValueError naming ``what`` when it is no whole number of them."""
    ns = _duration_fraction(value, what)
    if ns.denominator != 1:
        raise ValueError(f"{what} {value!r} is not a whole number of nanoseconds, the unit of datetime times")
    return int(ns)


def duration_in_ticks(value, unit: str, count: int, what: str) -> Fraction:
    """A duration as an exact (possibly fractional) number of ticks of ``datetime64[count unit]``."""
    num, den = _ticks_per_ns(unit, count)
    return _duration_fraction(value, what) * Fraction(den, num)


def seconds_ns(value, what: str) -> int:
    """A bare number of seconds (where a path documents one, as Spark does for a timestamp cast to
    a number) as exact int nanoseconds. A float is the decimal it is written as (``0.1`` is
    100,000,000 ns, as ``INTERVAL 0.1 SECONDS``), not its binary approximation.

    TypeError for what is no number, InvalidTimeError for NaN, ValueError naming ``what`` for an
    infinite number and one that is not a whole number of nanoseconds.
    """
    number = check_number(value, what)
    if isinstance(number, float):
        if math.isinf(number):
            raise ValueError(f"{what} {value!r} is infinite; give a finite number of seconds")
        seconds = Fraction(repr(number))  # the shortest decimal that reads back as this float
    else:
        seconds = Fraction(number)
    nanos = seconds * 1_000_000_000
    if nanos.denominator != 1:
        raise ValueError(f"{what} {value!r} seconds is not a whole number of nanoseconds, the unit of datetime times")
    return int(nanos)


# ---------------------------------------------------------------- instants
_NS_RANGE = "(1677-09-21 .. 2262-04-11)"


def zone_name(tz) -> Optional[str]:
    """A time zone as a name pandas reads back (None for tz-naive): the IANA name, or a fixed
    offset such as ``"UTC+02:00"``. A zone known by neither reads as ``"UTC"``: its instants stay
    exact, they are only shown in UTC."""
    if tz is None:
        return None
    name = getattr(tz, "zone", None) or getattr(tz, "key", None)  # pytz, zoneinfo
    if isinstance(name, str):
        return name
    offset = tz.utcoffset(None)
    if offset:
        return datetime.timezone(offset).tzname(None)
    return "UTC"


def instant_ns(t, what: str) -> Tuple[int, Optional[str]]:
    """``(nanoseconds since the epoch, time zone name or None)`` of one datetime (UTC-based when
    tz-aware; the name is :func:`zone_name`'s).

    InvalidTimeError naming ``what`` for NaT, for what cannot be read as a datetime, and for
    an instant int64 nanoseconds cannot hold exactly (before 1677, after 2262, finer than ns).
    """
    if isinstance(t, np.datetime64):
        return int(datetimes_ns(np.array([t]), what, one=True)[0]), None
    import pandas as pd

    try:
        stamp = pd.Timestamp(t)
    except (TypeError, ValueError) as error:
        raise InvalidTimeError(f"{what} {t!r} cannot be read as a datetime: {error}") from None
    if stamp is pd.NaT:
        raise InvalidTimeError(f"{what} is NaT")
    try:
        return int(stamp.as_unit("ns").value), zone_name(stamp.tz)
    except (OverflowError, ValueError):  # pandas keeps such a Timestamp in a coarser unit
        raise InvalidTimeError(f"{what} {t!r} lies outside int64 nanoseconds since the epoch "
                               f"{_NS_RANGE}") from None


def datetime_ns(t, what: str) -> int:
    """A datetime as int64 nanoseconds since the epoch (see :func:`instant_ns`)."""
    return instant_ns(t, what)[0]


def datetimes_ns(array: np.ndarray, what: str, one: bool = False) -> np.ndarray:
    """A ``datetime64`` array of any unit as exact int64 nanoseconds since the epoch.

    InvalidTimeError naming ``what[row]`` (``what`` alone when ``one``) for NaT, a time outside
    int64 nanoseconds and a time finer than a whole nanosecond.
    """
    unit, count = np.datetime_data(array.dtype)
    name = (lambda row: what) if one else (lambda row: f"{what}[{row}]")
    nat = np.isnat(array)
    if nat.any():
        raise InvalidTimeError(f"{name(int(np.flatnonzero(nat)[0]))} is NaT")
    if unit in ("Y", "M"):  # calendar units: the start of the year or month, exactly, in days
        array, unit, count = _calendar_as(array, name, "D"), "D", 1
    num, den = _ticks_per_ns(unit, count)
    ticks = array.view(np.int64)
    if den > 1:  # finer than ns: whole nanoseconds only
        bad = ticks % den != 0
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise InvalidTimeError(f"{name(row)} = {array[row]} is not a whole nanosecond")
        return ticks // den
    reach = INT64_MAX // num  # ticks in [-reach, reach] times num fit int64 without touching NaT
    bad = (ticks < -reach) | (ticks > reach)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise InvalidTimeError(f"{name(row)} = {array[row]} lies outside int64 nanoseconds since the "
                               f"epoch {_NS_RANGE}")
    return ticks * np.int64(num)


def _calendar_as(array: np.ndarray, name, unit: str) -> np.ndarray:
    """Times in years or months as ``datetime64[unit]`` (the start of each year or month),
    refusing timedeltas in them (no fixed length) and what int64 ``unit`` cannot hold."""
    if array.dtype.kind == "m":
        raise InvalidTimeError(f"{name(0)} is a {array.dtype}: years and months have no fixed length")
    ticks = array.view(np.int64)
    bad = np.abs(ticks) > 2**32  # 2**32 years (or months) of seconds fit int64 many times over
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise InvalidTimeError(f"{name(row)} = {array[row]} is too far from the epoch for int64 {unit}")
    return array.astype(f"datetime64[{unit}]")


def timestamp(ns: int, tz=None):
    """Nanoseconds since the epoch as a ``pandas.Timestamp``, in the time zone ``tz`` (None: naive)."""
    import pandas as pd

    return pd.Timestamp(int(ns), tz=tz)


def timestamps(ns: np.ndarray, tz=None):
    """int64 nanoseconds as ``datetime64[ns]``, or as a tz-aware ``pandas.DatetimeIndex`` in ``tz``."""
    stamps = ns.astype("datetime64[ns]")
    if tz is None:
        return stamps
    import pandas as pd

    return pd.DatetimeIndex(stamps).tz_localize("UTC").tz_convert(tz)


def same_zoning(tz, zone, what: str) -> None:
    """InvalidTimeError naming ``what`` when one of two datetimes is tz-aware and the other not
    (pandas cannot compare them either; a naive time read as UTC would be silently shifted)."""
    if (tz is None) != (zone is None):
        have, want = ("tz-aware", "tz-naive") if tz is not None else ("tz-naive", "tz-aware")
        raise InvalidTimeError(f"{what} is a {have} datetime, but the times before it are {want}; "
                               f"give every time with a time zone or none without")


# ---------------------------------------------------------------- arrays of times
def time_array(times, what: str = "times"):
    """``(array, zone)``: times as a 1-D numpy array and their time zone's name (None if naive or numbers).

    tz-aware pandas and Arrow times become their UTC ``datetime64`` in their own unit; an object
    array of datetimes becomes ``datetime64[ns]`` (every one tz-aware, or none).
    """
    tz = _pandas_zone(times)
    if tz is not None:
        import pandas as pd

        return pd.DatetimeIndex(times).tz_convert(None).to_numpy(), zone_name(tz)
    tz = getattr(getattr(times, "type", None), "tz", None)  # Arrow (a name): to_numpy gives the UTC times
    array = to_array(times, what)
    if array.dtype.kind == "O" and array.size and all(_is_datetime(x) for x in array.tolist()):
        return _object_datetimes(array, what)
    return array, tz


def _pandas_zone(times):
    dtype = getattr(times, "dtype", None)
    return getattr(dtype, "tz", None) if type(times).__module__.startswith("pandas") else None


def _is_datetime(x) -> bool:
    return isinstance(x, (datetime.date, np.datetime64))


def _object_datetimes(array: np.ndarray, what: str):
    stamps = np.empty(array.shape[0], np.int64)
    zone = None
    for row, x in enumerate(array.tolist()):
        stamps[row], tz = instant_ns(x, f"{what}[{row}]")
        if row == 0:
            zone = tz
        same_zoning(tz, zone, f"{what}[{row}]")
    return stamps.view("datetime64[ns]"), zone


# ---------------------------------------------------------------- rolling: times and window
def _window_in_ticks(window, unit: str, count: int):
    """The window as a number of ticks of the times' unit: a bare number is that already (as
    documented for :func:`winagg.rolling`), a duration is converted exactly (a Fraction)."""
    if isinstance(window, bool):
        raise TypeError(f"window must be a duration or a number, got {window!r}")
    if is_duration(window):
        return duration_in_ticks(window, unit, count, "window")
    if isinstance(window, (numbers.Real, np.number)):
        return window
    raise TypeError(f"window must be a duration or a number, got {window!r}")


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
    """``(ticks, w, same)``: datetime (or timedelta) times as int64 ticks of their own unit and
    the window in those ticks; ``same`` when the ticks are the times' own int64 view."""
    unit, count = np.datetime_data(t.dtype)
    same = unit not in ("Y", "M")
    if not same:  # calendar units have no fixed length: count in seconds
        t, unit, count = _calendar_as(t, lambda row: f"times[{row}]", "s"), "s", 1
    return t.view(np.int64), _window_in_ticks(window, unit, count), same


def _whole_window(w) -> int:
    """An integer-time window: (t - w, t] holds the same integers as (t - ceil(w), t]. A duration
    shorter than one tick of the times thus covers the rows of equal time only."""
    if isinstance(w, Fraction):
        return math.ceil(w)
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


def _number_window(window, floats: bool):
    """The window for numeric times: a number in their unit; ValueError naming ``window`` for a duration."""
    if is_duration(window):
        raise ValueError(f"window {window!r} is a duration, which needs datetime times; with numeric "
                         f"times give the window as a number in the times' unit")
    if isinstance(window, bool) or not isinstance(window, (numbers.Real, np.number)):
        raise TypeError(f"window must be a number in the times' unit, got {window!r}")
    return float(window) if floats else window


def read_times(times, window, rows: int):
    """``(t, w, unsorted)``: :func:`as_times` and the first row whose time is older than the
    time before it (-1 when the times are sorted), from one pass over integer times.

    tz-aware times are read as their instants (UTC-based), as pandas' ``rolling`` reads them:
    windows across a daylight-saving change are as long as they say.
    """
    t, _ = time_array(times, "times")
    if t.shape[0] != rows:
        raise ValueError(f"times has {t.shape[0]} rows but values has {rows}")
    summary = None
    if t.dtype.kind in "mM":
        summary = _tick_summary(t.view(np.int64)) if t.size else (-1, 0, 0, -1)
        if summary[0] >= 0:
            raise InvalidTimeError(f"times hold NaT at row {summary[0]}")
        t, w, same = _datetimes_as_ticks(t, window)
        if not same:
            summary = None  # converted to another unit: summarise the new ticks
    elif t.dtype.kind in "iub":
        w = _number_window(window, floats=False)
    elif t.dtype.kind == "f":
        bad = ~np.isfinite(t)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            what = "NaN" if np.isnan(t[row]) else "infinite"
            raise InvalidTimeError(f"times[{row}] is {what}; times must be finite numbers")
        w = _number_window(window, floats=True)
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
