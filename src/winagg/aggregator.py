"""The per-item aggregator object that every FIFO algorithm is wrapped in."""

from __future__ import annotations

from collections import deque
from typing import Any, Iterable, Optional

from .errors import EmptyWindowError, InvalidTimeError, OutOfOrderError, UnsupportedOperationError
from .ops import python_ops


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


class FifoAggregator:
    """A sliding-window aggregator over items that arrive in time order.

    Items keep the order they arrive in; equal times are separate items. An
    item inserted without a time gets its arrival number (0, 1, 2, ...) as its
    time. Every operation either completes or raises and leaves the window as
    it was.
    """

    def __init__(self, algorithm, monoid, capacity: int = 16):
        self.algorithm = algorithm
        self.monoid = monoid
        self._funcs = algorithm.load().build(python_ops(monoid))
        self._bufs, self._state = self._funcs.init(capacity)
        self._times: deque = deque()
        self._arrivals = 0

    # ------------------------------------------------------------ inserting
    def _next_time(self, time):
        if time is None:
            time = self._arrivals
        check_time(time)
        if self._times and time < self._times[-1]:
            raise OutOfOrderError(
                f"time {time!r} is older than the youngest time {self._times[-1]!r}; "
                f"{self.algorithm.name!r} needs items in time order (use 'fiba' for out-of-order data)")
        return time

    def insert(self, value, time=None) -> None:
        """Append ``value`` at ``time`` (default: its arrival number)."""
        time = self._next_time(time)
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
        previous = self._times[-1] if self._times else None
        for i, t in enumerate(times):
            check_time(t, f"times[{i}]")
            if previous is not None and t < previous:
                raise OutOfOrderError(
                    f"times[{i}] = {t!r} is older than {previous!r}: a batch for {self.algorithm.name!r} "
                    f"must be sorted and no older than the window's youngest time")
            previous = t
        partials = [self.monoid.lift(v) for v in values]  # lift everything before changing state
        self._make_room(len(partials))
        state, bufs, insert = self._state, self._bufs, self._funcs.insert
        for p in partials:
            state = insert(bufs, state, p)
        self._state = state
        self._times.extend(times)
        self._arrivals += len(values)

    def _make_room(self, count):
        # st = (mask, first, end, ...): capacity is mask + 1
        while self._state[2] - self._state[1] + count > self._state[0] + 1:
            self._bufs, self._state = self._funcs.grow(self._bufs, self._state)

    # ------------------------------------------------------------ evicting
    def evict(self) -> None:
        """Drop the oldest item; :class:`EmptyWindowError` if the window is empty."""
        if not self._times:
            raise EmptyWindowError(f"evict() on an empty window ({self.algorithm.name})")
        self._state = self._funcs.evict(self._bufs, self._state)
        self._times.popleft()

    def bulk_evict(self, time) -> int:
        """Drop every item whose time is <= ``time``; returns how many were dropped."""
        check_time(time)
        dropped = 0
        while self._times and self._times[0] <= time:
            self._state = self._funcs.evict(self._bufs, self._state)
            self._times.popleft()
            dropped += 1
        return dropped

    # ------------------------------------------------------------ reading
    def query(self, t_from=None, t_to=None) -> Any:
        """The lowered aggregate of the whole window (the identity's lowering when empty)."""
        if t_from is not None or t_to is not None:
            raise UnsupportedOperationError(
                f"{self.algorithm.name!r} has no range query; use 'fiba', 'flatfat', 'b_int' or 'flatfit'")
        return self.monoid.lower(self._funcs.query(self._bufs, self._state))

    def __len__(self) -> int:
        return len(self._times)

    def oldest_time(self):
        """Time of the oldest item, or None when the window is empty."""
        return self._times[0] if self._times else None

    def youngest_time(self):
        """Time of the youngest item, or None when the window is empty."""
        return self._times[-1] if self._times else None

    def __repr__(self):
        return f"<{self.algorithm.name} aggregator of {self.monoid.name}, {len(self)} items>"

    # ------------------------------------------------------------ pickling
    def __getstate__(self):
        return {"algorithm": self.algorithm.name, "monoid": self.monoid, "bufs": self._bufs, "state": self._state,
                "times": self._times, "arrivals": self._arrivals}

    def __setstate__(self, saved):
        from .registry import info

        self.algorithm = info(saved["algorithm"])
        self.monoid = saved["monoid"]
        self._funcs = self.algorithm.load().build(python_ops(self.monoid))
        self._bufs = saved["bufs"]
        self._state = saved["state"]
        self._times = saved["times"]
        self._arrivals = saved["arrivals"]
