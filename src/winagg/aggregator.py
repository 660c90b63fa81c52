"""The per-item aggregator object that the in-order algorithms are wrapped in."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Any, Iterable, Optional

from .capabilities import BulkEvict, SubWindow
from .errors import EmptyWindowError, InvalidTimeError, OutOfOrderError, UnsupportedOperationError
from .ops import python_ops
from .state import capacity, size


def check_time(time, what="time"):
    """Raise :class:`InvalidTimeError` for None, NaN or NaT; return the time otherwise."""
    if time is None:
        raise InvalidTimeError(f"{what} is None; a real time is required")
    try:
        missing = time != time  # NaN and NaT are the values unequal to themselves
    except Exception:  # an object without comparison
        raise InvalidTimeError(f"{what} {time!r} cannot be compared") from None
    if missing:
        raise InvalidTimeError(f"{what} is {time!r}; a real time is required")
    return time


def check_in_order(times, previous, what, who: str) -> None:
    """Refuse, by name, a time that is None, NaN or NaT or older than the one before it.

    ``times`` are checked in turn after ``previous`` (the window's youngest time, or None);
    ``what(i)`` names the i-th time and ``who`` the window that needs the order. One check for
    every in-order window (the per-item aggregators and the stored windows).
    """
    for i, t in enumerate(times):
        check_time(t, what(i))
        if previous is not None and t < previous:
            raise OutOfOrderError(
                f"{what(i)} = {t!r} is older than {previous!r}; {who} needs items in time order "
                f"(batches sorted, no older than the youngest time; use 'fiba' for out-of-order data)")
        previous = t


class FifoAggregator:
    """A sliding-window aggregator over items that arrive in time order.

    Items keep the order they arrive in; equal times are separate items. An
    item inserted without a time gets its arrival number (0, 1, 2, ...) as its
    time. Every operation either completes or raises and leaves the window as
    it was. Algorithms with a native bulk eviction or range query (their
    functions are a :class:`~winagg.capabilities.BulkEvict` / :class:`~winagg.capabilities.SubWindow`) get them used here.
    """

    def __init__(self, algorithm, monoid, capacity: int = 16, **options):
        self.algorithm = algorithm
        self.monoid = monoid
        self.options = options
        self._funcs = algorithm.load().build(python_ops(monoid), **options)
        self._bufs, self._state = self._funcs.init(capacity)
        # Times of the window's items are self._times[self._head:]; the dead prefix is
        # cut off now and then, so that bisect works on a plain list.
        self._times: list = []
        self._head = 0
        self._arrivals = 0

    # ------------------------------------------------------------ inserting
    def _check_next_times(self, times, what):
        check_in_order(times, self._times[-1] if len(self) else None, what, repr(self.algorithm.name))

    def insert(self, value: Any, time: Any = None) -> None:
        """Append ``value`` at ``time`` (default: its arrival number)."""
        time = self._arrivals if time is None else time
        self._check_next_times([time], lambda i: "time")
        partial = self.monoid.lift(value)
        self._make_room(1)
        self._state = self._funcs.insert(self._bufs, self._state, partial)
        self._times.append(time)
        self._arrivals += 1

    def bulk_insert(self, values: Iterable, times: Optional[Iterable] = None) -> None:
        """Append a batch; ``times`` must be sorted and no older than the youngest time."""
        values = list(values)
        if times is None:
            times = list(range(self._arrivals, self._arrivals + len(values)))
        else:
            times = list(times)
            if len(times) != len(values):
                raise ValueError(f"bulk_insert got {len(values)} values but {len(times)} times")
        self._check_next_times(times, lambda i: f"times[{i}]")
        partials = [self.monoid.lift(v) for v in values]  # lift everything before changing state
        self._make_room(len(partials))
        state, bufs, insert = self._state, self._bufs, self._funcs.insert
        for p in partials:
            state = insert(bufs, state, p)
        self._state = state
        self._times.extend(times)
        self._arrivals += len(values)

    def _make_room(self, count):
        while size(self._state) + count > capacity(self._state):
            self._bufs, self._state = self._funcs.grow(self._bufs, self._state)

    # ------------------------------------------------------------ evicting
    def evict(self) -> None:
        """Drop the oldest item; :class:`EmptyWindowError` if the window is empty."""
        if not len(self):
            raise EmptyWindowError(f"evict() on an empty window ({self.algorithm.name})")
        self._state = self._funcs.evict(self._bufs, self._state)
        self._drop_times(1)

    def bulk_evict(self, time: Any) -> int:
        """Drop every item whose time is <= ``time``; returns how many were dropped."""
        check_time(time)
        count = bisect_right(self._times, time, self._head) - self._head
        if count:
            if isinstance(self._funcs, BulkEvict):
                self._state = self._funcs.bulk_evict(self._bufs, self._state, count)
            else:
                evict, bufs, state = self._funcs.evict, self._bufs, self._state
                for _ in range(count):
                    state = evict(bufs, state)
                self._state = state
            self._drop_times(count)
        return count

    def _drop_times(self, count):
        self._head += count
        if self._head > 64 and self._head * 2 > len(self._times):
            del self._times[:self._head]
            self._head = 0

    # ------------------------------------------------------------ reading
    def query(self, t_from: Any = None, t_to: Any = None) -> Any:
        """The lowered aggregate of the window, or of its items with ``t_from <= time <= t_to``.

        An empty window (or range) gives the identity's lowering. Range queries
        need an algorithm that has them (:class:`UnsupportedOperationError` otherwise).
        """
        if t_from is None and t_to is None:
            return self.monoid.lower(self._funcs.query(self._bufs, self._state))
        if not isinstance(self._funcs, SubWindow):
            raise UnsupportedOperationError(
                f"{self.algorithm.name!r} has no range query; use 'fiba', 'flatfat', 'b_int' or 'flatfit'")
        lo = self._head if t_from is None else bisect_left(self._times, check_time(t_from, "t_from"), self._head)
        hi = len(self._times) if t_to is None else bisect_right(self._times, check_time(t_to, "t_to"), self._head)
        first = self._state[1] - self._head  # absolute position of self._times[i] is first + i
        if hi <= lo:
            return self.monoid.lower(self.monoid.identity)
        return self.monoid.lower(self._funcs.range_query(self._bufs, self._state, first + lo, first + hi))

    def __len__(self) -> int:
        return len(self._times) - self._head

    def oldest_time(self) -> Any:
        """Time of the oldest item, or None when the window is empty."""
        return self._times[self._head] if len(self) else None

    def youngest_time(self) -> Any:
        """Time of the youngest item, or None when the window is empty."""
        return self._times[-1] if len(self) else None

    def __repr__(self):
        return f"<{self.algorithm.name} aggregator of {self.monoid.name}, {len(self)} items>"

    # ------------------------------------------------------------ pickling
    def __getstate__(self):
        return {"algorithm": self.algorithm.name, "monoid": self.monoid, "options": self.options,
                "bufs": self._bufs, "state": self._state, "times": self._times[self._head:],
                "arrivals": self._arrivals}

    def __setstate__(self, saved):
        from .registry import info

        self.algorithm = info(saved["algorithm"])
        self.monoid = saved["monoid"]
        self.options = saved["options"]
        self._funcs = self.algorithm.load().build(python_ops(self.monoid), **self.options)
        self._bufs = saved["bufs"]
        self._state = saved["state"]
        self._times = saved["times"]
        self._head = 0
        self._arrivals = saved["arrivals"]
