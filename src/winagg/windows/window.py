"""``winagg.Window``: event-time windows for plain-Python streams (watermark, lateness, slide).

>>> import winagg
>>> w = winagg.Window("sum", size=10, slide=10)          # tumbling windows [0, 10), [10, 20), ...
>>> w.push(1, 5.0), w.push(4, 1.0), w.push(12, 2.0)
([], [], [WindowResult(start=0, end=10, value=6.0, count=2)])
>>> w.push(3, 100.0)                                       # behind the watermark (12): dropped
[]
>>> w.late_events, w.flush()
(1, [WindowResult(start=10, end=20, value=2.0, count=1)])

The Window checks its arguments and converts times at the edges
(:mod:`winagg.windows.event_time`); time windows run in :mod:`winagg.windows.time_windows` and
count windows in :mod:`winagg.windows.count_windows`, both through the window driver.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, List, Optional, Sequence, Union

import numpy as np

from .. import aggregations
from .count_windows import CountWindows
from .event_time import EventTimes, read_spans
from ..algos.registry import check_monoid_fits, check_options, info, out_of_order
from ..engine.kernels import compiled_spec
from .time_windows import TimeWindows, WindowResult

__all__ = ["Window", "WindowResult"]


def _compiled_spec(monoid, wanted: Optional[bool]):
    """The aggregation's compiled description when the Window runs compiled, else None."""
    # the counted form where there is one: a Window answers NaN for a window without a value; and
    # a Window answers what the aggregation lowers to in Python (a Bloom filter, not its estimate)
    spec = compiled_spec(monoid, np.float64, counted=True, same_answer=True) if wanted is not False else None
    if spec is None and wanted:
        raise ValueError("compiled=True needs a Window over a built-in numeric aggregation")
    return spec


def _algorithm(name: str, monoid, options: dict):
    """The registry's entry for ``name`` with the Window's options filled in."""
    algorithm = info(name)
    check_monoid_fits(algorithm, monoid)
    return dataclasses.replace(algorithm, options=check_options(algorithm, options))


class Window:
    """Windows over a stream of ``(time, value)`` events that arrive in any order.

    Parameters
    ----------
    aggregation:
        An aggregation name, class or instance, or a :class:`winagg.Monoid` (``combine``
        gets the older events on the left: within a window events are folded in time
        order, events of equal time in arrival order).
    size:
        The window length: a number in the unit of the event times, or a duration
        (``"10min"``, ``pandas.Timedelta``, ``numpy.timedelta64``, ``datetime.timedelta``)
        for datetime times (``datetime``, ``numpy.datetime64``, ``pandas.Timestamp``;
        handled as integer nanoseconds since the epoch, UTC-based when tz-aware, reported
        back as ``pandas.Timestamp`` in the time zone of the first datetime; tz-naive and
        tz-aware times do not mix). A list of sizes gives several
        windows over one aggregator (answered by range queries): each closing window
        yields one result per size, in the order of the list.
    rows:
        Instead of ``size``: a count window of the last ``rows`` events in arrival order.
    slide:
        ``None`` (default): one window per event. A number (a duration when ``size`` is
        one): aligned windows reported every ``slide`` (for ``rows``: every ``slide``
        events); ``slide == size`` gives tumbling windows.
    allowed_lateness:
        How far behind the largest event time seen an event may be and still count
        (default 0). A number when ``size`` is one, a duration when ``size`` is a
        duration: a bare number has no unit beside a duration size, so it is refused
        (TypeError naming the argument), except 0 and ``math.inf``. ``math.inf`` never
        drops an event: windows close only at :meth:`advance_watermark` and
        :meth:`flush`. A lateness longer than the times can span acts the same.
    algorithm:
        Default ``"fiba"`` (out-of-order, range queries) for time windows; for ``rows``
        the in-order algorithm :func:`winagg.rolling` would choose.
    compiled:
        ``None`` (default): a Window over a built-in numeric aggregation whose answer is
        a number runs compiled (values become float64; each
        :meth:`push_batch` one compiled loop, on state kept across calls); every other Window runs the
        same algorithm and the same window driver in plain Python. ``False`` forces
        plain Python; ``True`` raises ValueError where the compiled path does not exist.

    Notes
    -----
    Semantics of time windows (every sentence is tested in ``tests/windows/test_window.py``):

    * The **watermark** is the largest of: (largest event time seen) − ``allowed_lateness``
      and every time given to :meth:`advance_watermark`. It starts at −infinity and never
      goes back.
    * An event whose time is **older than the watermark** (``time < watermark``) is
      *late*: it is dropped, never merged into any window, and counted in
      ``late_events``. Every other event is on time and is inserted at its time (it is
      judged against the watermark before the watermark takes its own time into account).
    * With a ``slide``, windows are aligned like Flink's and Spark's: window k covers
      ``[k*slide, k*slide + size)`` (start included, end excluded; k*slide counts from 0,
      the epoch for datetimes). A window **closes** when ``end <= watermark`` and is then
      emitted once, if it holds at least one on-time event (empty windows are never
      emitted). Events in no window (``slide > size`` leaves gaps) are accepted but
      appear in no result.
    * Without a ``slide``, each distinct on-time event time t has one window
      ``(t - size, t]`` (start excluded, end included, like pandas ``rolling("10min")``),
      reported as ``start = t - size, end = t``; it closes when ``t < watermark`` (events at
      exactly the watermark are still on time, so ``t == watermark`` is not final). Events
      of equal time share one window.
    * A closed window's ``value`` is the aggregation of all on-time events whose time it
      covers, whenever they arrived before it closed; ``count`` is their number.
    * Each call returns the windows it closed, ordered by end, then by the order of
      ``size`` in the list of sizes. :meth:`flush` closes every remaining window (the
      watermark becomes +infinity: later events are all late).
    * :meth:`push_batch` gives exactly the results of pushing its events one by one, in
      the batch's order, concatenated.

    Count windows (``rows=N``): every event is on time (no watermark, no lateness); after
    every ``slide``-th event (default 1) the window of the last N events (fewer at the
    start) is emitted with ``start``/``end`` the arrival positions ``[start, end)`` (first
    event = 0); :meth:`flush` emits the window of the last N events if events arrived
    since the last result. Times are ignored (may be None).

    Times: datetimes and durations are int64 nanoseconds inside; numbers are int64
    unless a size, slide or finite lateness is a float (then float64). An integer Window
    refuses fractional times, and int64 times within the window's reach of int64's
    limits, by name (:class:`~winagg.InvalidTimeError`).

    A Window pickles mid-stream; the restored copy continues with the same results.
    """

    def __init__(self, aggregation: Any, size: Union[Any, Sequence[Any], None] = None, *,
                 rows: Optional[int] = None, slide: Any = None, allowed_lateness: Any = 0,
                 algorithm: Optional[str] = None, compiled: Optional[bool] = None, **options):
        self.monoid = aggregations.get(aggregation)
        if (size is None) == (rows is None):
            raise ValueError("give exactly one of size= (a time window) or rows= (a count window)")
        if rows is not None:
            self._init_rows(rows, slide, algorithm, compiled, options)
        else:
            self._init_time(size, slide, allowed_lateness, algorithm, compiled, options)

    # ------------------------------------------------------------ construction
    def _init_rows(self, rows, slide, algorithm, compiled, options):
        from ..algos.registry import choose_algorithm

        if not isinstance(rows, (int, np.integer)) or isinstance(rows, bool) or rows < 1:
            raise ValueError(f"rows must be a positive integer, got {rows!r}")
        slide = 1 if slide is None else slide
        if not isinstance(slide, (int, np.integer)) or isinstance(slide, bool) or slide < 1:
            raise ValueError(f"a count window's slide must be a positive integer, got {slide!r}")
        self.kind = "rows"
        self.sizes, self.slide = [int(rows)], int(slide)
        self.algorithm = algorithm or choose_algorithm(compiled_spec(self.monoid, np.float64), False)
        self._engine = CountWindows(int(rows), int(slide), self.monoid,
                                    _algorithm(self.algorithm, self.monoid, options),
                                    _compiled_spec(self.monoid, compiled))

    def _init_time(self, size, slide, lateness, algorithm, compiled, options):
        sizes = list(size) if isinstance(size, (list, tuple)) else [size]
        if not sizes:
            raise ValueError("size= needs at least one size")
        self.kind = "time"
        spans = read_spans(sizes, slide, lateness)
        self.sizes, self.slide, lateness = spans.sizes, spans.slide, spans.lateness
        self.algorithm = algorithm or out_of_order().name
        if info(self.algorithm).order != "any":
            raise ValueError(f"a time Window needs an out-of-order algorithm with range queries "
                             f"({out_of_order().name}), got {self.algorithm!r}")
        # the lateness is no part of the reach: the late filter subtracts it without overflow
        reach = 0 if spans.floats else max(self.sizes) + (self.slide or 0)
        self._times = EventTimes(spans.datetimes, spans.floats, reach)
        self._engine = TimeWindows(self._times, self.sizes, self.slide, lateness, self.monoid,
                                   _algorithm(self.algorithm, self.monoid, options),
                                   _compiled_spec(self.monoid, compiled))

    @property
    def allowed_lateness(self):
        return self._engine.allowed_lateness if self.kind == "time" else 0

    @property
    def compiled(self) -> bool:
        """Whether this Window runs compiled (see the ``compiled`` parameter)."""
        return self._engine.spec is not None

    @property
    def late_events(self) -> int:
        """How many events came behind the watermark and were dropped (0 for count windows)."""
        return self._engine.late_events if self.kind == "time" else 0

    @property
    def watermark(self):
        """The current watermark (None before any event or advance; see the class docs)."""
        if self.kind != "time" or self._engine.watermark == -math.inf:
            return None
        watermark = self._engine.watermark
        return math.inf if watermark == math.inf else self._times.outward(watermark)

    # ------------------------------------------------------------ events in
    def push(self, time, value) -> List[WindowResult]:
        """Add one event; returns the windows that became final (see the class docs)."""
        if self.kind == "rows":
            return self._engine.push([value])
        stamp = self._times.one(time)
        results = self._engine.push(np.array([stamp], self._times.dtype), [value])
        self._times.settle()
        return results

    def push_batch(self, times, values, as_frame: bool = False):
        """Add a batch (same results as pushing its events one by one, in order).

        On-time events go into the aggregator with one bulk insert. Returns a list of
        :class:`WindowResult`, or a pandas DataFrame with ``as_frame=True``.
        """
        values = values if isinstance(values, np.ndarray) else list(values)
        if self.kind == "rows":
            results = self._engine.push(values)
            return self.to_frame(results) if as_frame else results
        stamps = self._times.batch(times)
        if len(stamps) != len(values):
            raise ValueError(f"push_batch got {len(stamps)} times but {len(values)} values")
        results = self._engine.push(stamps, values, as_frame)
        self._times.settle()
        return results

    def advance_watermark(self, time) -> List[WindowResult]:
        """Raise the watermark to ``time`` (never lowers it); returns the windows that closed."""
        if self.kind != "time":
            raise TypeError("a count (rows=) window has no watermark")
        results = self._advance(self._times.one(time))
        self._times.settle()
        return results

    def flush(self) -> List[WindowResult]:
        """End of stream: emit every window still open (the watermark becomes +infinity)."""
        if self.kind == "rows":
            return self._engine.flush()
        return self._advance(math.inf)

    def _advance(self, watermark) -> List[WindowResult]:
        dtype = self._times.dtype
        return self._engine.step(watermark, np.empty(0, dtype), np.empty(0, np.float64 if self.compiled else object))

    # ------------------------------------------------------------ results
    @staticmethod
    def to_frame(results: Sequence[WindowResult]):
        """The results as a pandas DataFrame with columns start, end, value, count."""
        import pandas as pd

        return pd.DataFrame.from_records(list(results), columns=list(WindowResult._fields))

    def __repr__(self):
        shape = f"rows={self.sizes[0]}" if self.kind == "rows" else f"size={self.sizes}"
        return (f"<winagg.Window {self.monoid.name} {shape} slide={self.slide} over {self.algorithm}, "
                f"{self.late_events} late>")
