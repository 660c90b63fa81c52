"""Times of the per-item aggregator: one unit inside, and the index of an in-order window's times.

:class:`TimeUnit` converts at the edge, through :mod:`winagg.times`. A window's times are
numbers or datetimes, fixed by the first time it sees: numbers stay as given (int or
float), datetimes (``datetime``, ``date``, ``numpy.datetime64``, ``pandas.Timestamp``)
become int nanoseconds since the epoch (UTC-based when tz-aware), as in
:class:`winagg.Window`, and come back out as ``pandas.Timestamp``, in the time zone of the
window's first datetime. None, NaN and NaT are refused by name, and so are durations (a
``timedelta`` is a length, not an instant), other objects (strings among them), a time of
the other kind, and a tz-naive datetime in a window of tz-aware ones or the reverse, which
could not be compared with the window's (pandas refuses to compare them too).

:class:`ArrivalTimes` keeps the times of an in-order window, oldest first, beside
the algorithm's items (one time per item, equal times allowed), and answers how
many items lie at or before a time by binary search. An out-of-order algorithm
keys its entries by time itself and needs no such index. A stored window keeps the
same index in its store (:class:`winagg.store.stored_window.StoredTimes`).
"""

from __future__ import annotations

import datetime
from bisect import bisect_left, bisect_right
from typing import Any, List, Optional, Tuple

import numpy as np

from ..core.errors import InvalidTimeError, OutOfOrderError
from ..times import check_number, instant_ns, timestamp

#: A window's kind: NUMBER, DATETIME (tz-naive), or ``"datetime[ZONE]"`` for tz-aware datetimes
#: (ZONE the name of its first datetime's time zone, in which times come back out). Kinds are
#: plain strings, so that a window's saved state can say which without pickling an object.
NUMBER, DATETIME = "number", "datetime"
ZONED = "tz-aware datetime"


def zoned(zone: str) -> str:
    """The kind of tz-aware datetimes shown in ``zone``."""
    return f"{DATETIME}[{zone}]"


def is_time_kind(kind) -> bool:
    """Whether ``kind`` is a window's time kind (None: no time yet), as a saved state may hold it."""
    return kind is None or kind in (NUMBER, DATETIME) or (
        isinstance(kind, str) and kind.startswith(f"{DATETIME}[") and kind.endswith("]") and len(kind) > 10)


def _family(kind) -> str:
    """What a kind can be compared with: numbers, tz-naive or tz-aware datetimes."""
    return kind if kind in (NUMBER, DATETIME) else ZONED


def _describe(family: str, other: str) -> str:
    return "tz-naive datetime" if family == DATETIME and other == ZONED else family


class TimeUnit:
    """The kind of a window's times (None until the first one) and the conversions at the edge."""

    def __init__(self, kind=None):
        self.kind = kind

    def inward(self, t, what: str = "time"):
        """``t`` in the window's unit; InvalidTimeError naming ``what`` for a missing time or the other kind."""
        return self._checked(t, what)[1]

    def inward_one(self, t) -> Tuple[Any, Any]:
        """(``t`` in the unit, the window's kind): a window without a kind yet takes this time's."""
        if self.kind == NUMBER and (type(t) is int or type(t) is float and t == t):
            return t, NUMBER  # the common case, without the general checks
        kind, value = self._checked(t, "time")
        return value, kind

    def _checked(self, t, what) -> Tuple[Any, Any]:
        """(the window's kind, or the time's for a window without one; value) of ``t``;
        InvalidTimeError when it is missing or of another family than the window's."""
        kind, value = _read(t, what)
        if self.kind is None:
            return kind, value
        have, want = _family(kind), _family(self.kind)
        if have != want:
            raise InvalidTimeError(f"{what} {t!r} is a {_describe(have, want)}, but this window's times are "
                                   f"{_describe(want, have)}s")
        return self.kind, value

    def inward_all(self, times, what) -> Tuple[List[Any], Optional[Any]]:
        """(every time of a batch in the unit, the batch's kind); ``what(i)`` names the i-th time.

        A window without a kind yet takes the first time's, and the rest must share it; the
        caller fixes the window's kind once the batch has entered.
        """
        unit = self
        if self.kind is None and len(times):
            unit = TimeUnit(_read(times[0], what(0))[0])
        if unit.kind == NUMBER and all(type(t) is int or type(t) is float and t == t for t in times):
            return list(times), NUMBER  # the common case (arrival numbers among them), as in inward_one
        inside = []
        for i, t in enumerate(times):
            try:
                inside.append(unit.inward(t))
            except InvalidTimeError:
                unit.inward(t, what(i))  # the same error, naming the time (built only when needed)
                raise
        return inside, unit.kind

    def outward(self, t):
        """A time as the user sees it: a Timestamp (in the window's zone) for datetime windows,
        the number otherwise."""
        if t is None or self.kind is None or self.kind == NUMBER:
            return t
        return timestamp(t, None if self.kind == DATETIME else self.kind[len(DATETIME) + 1:-1])


def _read(t, what):
    """(kind, value) of one time."""
    if t is None:
        raise InvalidTimeError(f"{what} is None; a real time is required")
    if isinstance(t, (datetime.timedelta, np.timedelta64)):  # pandas.Timedelta is a timedelta
        raise InvalidTimeError(f"{what} {t!r} is a duration, not a time (an instant: a number or a datetime)")
    if isinstance(t, (datetime.date, np.datetime64)):  # pandas.Timestamp is a datetime.datetime
        ns, zone = instant_ns(t, what)
        return (DATETIME if zone is None else zoned(zone)), ns
    try:
        return NUMBER, check_number(t, what)
    except TypeError:  # a bool, a string, any other object: not an instant on one scale
        raise InvalidTimeError(f"{what} {t!r} is neither a number nor a datetime (text can be read "
                               f"with pandas.Timestamp)") from None


def check_in_order(times, previous, what, who: str) -> None:
    """OutOfOrderError naming the first of ``times`` older than the one before it (``previous`` first).

    ``times`` are already in the window's unit; ``what(i)`` names the i-th and ``who`` the window.
    """
    for i, t in enumerate(times):
        if previous is not None and t < previous:
            raise OutOfOrderError(
                f"{what(i)} = {t!r} is older than {previous!r}; {who} needs items in time order "
                f"(batches sorted, no older than the youngest time; use 'fiba' for out-of-order data)")
        previous = t


def check_sorted(times, what) -> None:
    """OutOfOrderError naming the first time of a batch older than the one before it."""
    for i in range(1, len(times)):
        if times[i] < times[i - 1]:
            raise OutOfOrderError(f"bulk_insert needs a batch sorted by time: {what(i)} = {times[i]!r} is older "
                                  f"than {what(i - 1)} = {times[i - 1]!r}")


class ArrivalTimes:
    """The times of an in-order window's items, oldest first; item ``k`` (0 = oldest) has time ``self[k]``."""

    def __init__(self, times: Optional[list] = None):
        # The window's times are self._times[self._head:]; the dead prefix is cut off now and
        # then, so that bisect works on a plain list.
        self._times: list = list(times or [])
        self._head = 0

    def __len__(self) -> int:
        return len(self._times) - self._head

    def __getitem__(self, k: int):
        return self._times[self._head + k] if k >= 0 else self._times[k]

    def youngest(self):
        return self._times[-1] if len(self) else None

    def count_upto(self, t) -> int:
        """How many of the oldest items have a time <= ``t``."""
        return bisect_right(self._times, t, self._head) - self._head

    def count_before(self, t) -> int:
        """How many of the oldest items have a time < ``t``."""
        return bisect_left(self._times, t, self._head) - self._head

    def append(self, t) -> None:
        self._times.append(t)

    def extend(self, times) -> None:
        self._times.extend(times)

    def drop(self, count: int) -> None:
        """Forget the ``count`` oldest times."""
        self._head += count
        if self._head > 64 and self._head * 2 > len(self._times):
            del self._times[:self._head]
            self._head = 0

    def pop(self) -> None:
        """Forget the youngest time."""
        self._times.pop()

    def keep(self, alive) -> None:
        """Keep only the times whose flag in ``alive`` (one per item, oldest first) is true."""
        self._times = [t for t, keep in zip(self._times[self._head:], alive) if keep]
        self._head = 0

    def as_list(self) -> list:
        return self._times[self._head:]
