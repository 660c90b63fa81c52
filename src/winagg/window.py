"""``winagg.Window``: event-time windows for plain-Python streams (watermark, lateness, slide).

>>> import winagg
>>> w = winagg.Window("sum", size=10, slide=10)          # tumbling windows [0, 10), [10, 20), ...
>>> w.push(1, 5.0), w.push(4, 1.0), w.push(12, 2.0)
([], [], [WindowResult(start=0, end=10, value=6.0, count=2)])
>>> w.push(3, 100.0)                                       # behind the watermark (12): dropped
[]
>>> w.late_events, w.flush()
(1, [WindowResult(start=10, end=20, value=2.0, count=1)])
"""

from __future__ import annotations

import copy
import heapq
import math
from typing import Any, List, NamedTuple, Optional, Sequence, Union

import numpy as np

from . import aggregations
from .errors import InvalidTimeError
from .monoid import Monoid
from .registry import info, make, out_of_order


class WindowResult(NamedTuple):
    """One final window: ``start``, ``end`` (see :class:`Window` for which side is closed),
    the lowered aggregate ``value`` and the number of on-time events ``count`` it holds."""

    start: Any
    end: Any
    value: Any
    count: int


class _Counted(Monoid):
    """The partial ``(count, inner partial)``: every window answer carries its event count."""

    def __init__(self, inner: Monoid):
        self.inner = inner
        Monoid.__init__(self, (0, inner.identity), self._combine, self._lift, self._lower,
                        commutative=inner.commutative, name=f"counted {inner.name}")

    def _combine(self, older, younger):
        return (older[0] + younger[0], self.inner.combine(older[1], younger[1]))

    def _lift(self, item):
        return (1, self.inner.lift(item))

    def _lower(self, partial):
        return (partial[0], self.inner.lower(partial[1]))

    def __reduce__(self):
        return (_Counted, (self.inner,))


def _plain(value):
    """numpy scalars as Python numbers (results print and compare like the user's own numbers)."""
    return value.item() if isinstance(value, np.generic) else value


def _lowers_to_a_number(monoid) -> bool:
    """Whether the Python answer for one value is a plain number (as the compiled answer is)."""
    sample = (1.0, 0) if getattr(monoid, "positional", False) else 1.0
    try:
        answer = monoid.lower(monoid.lift(sample))
    except Exception:  # noqa: BLE001 - any failure means: do not take the compiled path
        return False
    return isinstance(answer, (int, float, np.integer, np.floating)) and not isinstance(answer, bool)


def _is_datetime_like(x) -> bool:
    return not isinstance(x, (int, float, np.integer, np.floating)) and x is not None


def _duration_ns(value, what: str) -> int:
    import pandas as pd

    try:
        return int(pd.Timedelta(value).value)
    except (ValueError, TypeError):
        raise ValueError(f"{what} {value!r} is not a duration (a pandas Timedelta string like '10min')") from None


def _check_number(x, what: str):
    if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
        raise TypeError(f"{what} must be a number, got {x!r}")
    if isinstance(x, (float, np.floating)) and math.isnan(x):
        raise InvalidTimeError(f"{what} is NaN")
    return x.item() if isinstance(x, np.generic) else x


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
        (``"10min"``, a ``pandas.Timedelta``) for datetime times (``datetime``,
        ``numpy.datetime64``, ``pandas.Timestamp``; handled as integer nanoseconds since
        the epoch, reported back as ``pandas.Timestamp``). A list of sizes gives several
        windows over one aggregator (answered by range queries): each closing window
        yields one result per size, in the order of the list.
    rows:
        Instead of ``size``: a count window of the last ``rows`` events in arrival order.
    slide:
        ``None`` (default): one window per event. A number (or duration): aligned
        windows reported every ``slide`` (for ``rows``: every ``slide`` events);
        ``slide == size`` gives tumbling windows.
    allowed_lateness:
        How far behind the largest event time seen an event may be and still count
        (default 0; a duration for datetime times).
    algorithm:
        Default ``"fiba"`` (out-of-order, range queries) for time windows; for ``rows``
        the in-order algorithm :func:`winagg.rolling` would choose.
    compiled:
        ``None`` (default): time windows over a built-in numeric aggregation whose
        answer is a number run compiled (values become float64; one numba call per
        :meth:`push_batch`, on a FiBA tree kept across calls); every other Window runs
        the same FiBA in plain Python. ``False`` forces plain Python; ``True`` raises
        ValueError where the compiled path does not exist.

    Notes
    -----
    Semantics of time windows (every sentence is tested in ``tests/test_window.py``):

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

    A Window pickles mid-stream; the restored copy continues with the same results.
    """

    def __init__(self, aggregation: Any, size: Union[Any, Sequence[Any], None] = None, *,
                 rows: Optional[int] = None, slide: Any = None, allowed_lateness: Any = 0,
                 algorithm: Optional[str] = None, compiled: Optional[bool] = None, **options):
        self.monoid = aggregations.get(aggregation)
        if (size is None) == (rows is None):
            raise ValueError("give exactly one of size= (a time window) or rows= (a count window)")
        self.late_events = 0
        self._events_seen = 0
        if rows is not None:
            self._init_rows(rows, slide, algorithm, options)
        else:
            self._init_time(size, slide, allowed_lateness, algorithm, options)
        self._fast = self._compiled_state(compiled)

    # ------------------------------------------------------------ construction
    def _compiled_state(self, wanted):
        supported = (self.kind == "time"
                     and self.algorithm == "fiba")
        spec = self.monoid.compiled_for(np.dtype(np.float64)) if supported and wanted is not False else None
        if spec is not None and not _lowers_to_a_number(self.monoid):
            spec = None  # e.g. a Bloom filter: compiled it lowers to a number, in Python to the filter itself
        if spec is None:
            if wanted:
                raise ValueError("compiled=True needs a time Window over a built-in numeric aggregation")
            return None
        # Integer and datetime times stay int64 (nanoseconds 1 ns apart must not merge in float64);
        # float sizes, slides or lateness make the times float64.
        time_type = "float64" if self._float_times else "int64"
        return _CompiledPerEvent(time_type, self.sizes, self._int_time_limits() if time_type == "int64" else None)

    def _int_time_limits(self):
        """(lowest, highest) int64 time for which no window bound or lateness leaves int64."""
        reach = max(self.sizes) + (self.slide or 0) + self.allowed_lateness + 1
        return INT64_MIN + reach, INT64_MAX - reach

    def _init_rows(self, rows, slide, algorithm, options):
        from .rolling import choose_algorithm

        if not isinstance(rows, (int, np.integer)) or isinstance(rows, bool) or rows < 1:
            raise ValueError(f"rows must be a positive integer, got {rows!r}")
        slide = 1 if slide is None else slide
        if not isinstance(slide, (int, np.integer)) or slide < 1:
            raise ValueError(f"a count window's slide must be a positive integer, got {slide!r}")
        self.kind = "rows"
        self.sizes, self.slide = [int(rows)], int(slide)
        self.algorithm = algorithm or choose_algorithm(self.monoid.compiled_for(np.dtype(np.float64)), False)
        self._aggregator = make(self.algorithm, self.monoid, **options)
        self._since_result = 0

    def _init_time(self, size, slide, lateness, algorithm, options):
        sizes = list(size) if isinstance(size, (list, tuple)) else [size]
        if not sizes:
            raise ValueError("size= needs at least one size")
        self.kind = "time"
        self._datetimes = any(isinstance(s, str) or _is_duration(s) for s in sizes)
        convert = self._duration if self._datetimes else self._length
        self.sizes = [convert(s, "size") for s in sizes]
        if any(not s > 0 for s in self.sizes):
            raise ValueError(f"sizes must be positive, got {size!r}")
        self.slide = None if slide is None else convert(slide, "slide")
        if self.slide is not None and not self.slide > 0:
            raise ValueError(f"slide must be positive, got {slide!r}")
        self.allowed_lateness = convert(lateness, "allowed_lateness") if lateness else 0
        if self.allowed_lateness < 0:
            raise ValueError(f"allowed_lateness must be >= 0, got {lateness!r}")
        self.algorithm = algorithm or out_of_order().name
        if info(self.algorithm).order != "any":
            raise ValueError(f"a time Window needs an out-of-order algorithm with range queries "
                             f"(fiba), got {self.algorithm!r}")
        self._aggregator = make(self.algorithm, _Counted(self.monoid), **options)
        self._watermark = -math.inf
        self._max_time = -math.inf
        self._float_times = any(isinstance(s, float) for s in self.sizes + [self.slide, self.allowed_lateness])
        self._pending_times: list = []  # per-event windows: distinct on-time times not yet emitted
        self._pending_set: set = set()
        # aligned windows, per size: (heap of slide buckets with on-time events, next window index)
        self._buckets: list = [[] for _ in self.sizes]
        self._bucket_sets: list = [set() for _ in self.sizes]
        self._next_window = [None] * len(self.sizes)

    def _duration(self, value, what):
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            return int(value)  # already nanoseconds
        return _duration_ns(value, what)

    def _length(self, value, what):
        return _check_number(value, what)

    # ------------------------------------------------------------ times
    def _time_of(self, t):
        """An event time as the internal number (int nanoseconds for datetimes)."""
        if self._datetimes:
            if not _is_datetime_like(t):
                raise InvalidTimeError(f"this Window's size is a duration, so times must be datetimes; got {t!r}")
            import pandas as pd

            stamp = pd.Timestamp(t)
            if stamp is pd.NaT:
                raise InvalidTimeError("time is NaT")
            return int(stamp.value)
        t = _check_number(t, "time")
        if isinstance(t, float) and self._fast is not None and self._fast.limits is not None:
            if not t.is_integer():
                raise InvalidTimeError(f"time {t!r} is fractional, but this Window keeps integer times "
                                       f"(its size is an integer); give the size as a float for float times")
            t = int(t)
        if isinstance(t, float):
            self._float_times = True
        if self._fast is not None and self._fast.limits is not None:
            self._fast.check(np.array([t], np.int64), "time")
        return t

    def _outward(self, t):
        """An internal time as the user sees it."""
        if self._datetimes:
            import pandas as pd

            return pd.Timestamp(int(t))
        return t

    @property
    def watermark(self):
        """The current watermark (None before any event or advance; see the class docs)."""
        if self.kind != "time" or self._watermark == -math.inf:
            return None
        return math.inf if self._watermark == math.inf else self._outward(self._watermark)

    # ------------------------------------------------------------ pushing
    def push(self, time, value) -> List[WindowResult]:
        """Add one event; returns the windows that became final (see the class docs)."""
        if self.kind == "rows":
            return self._push_row(value)
        t = self._time_of(time)
        if self._fast is not None:
            return self._fast_push(np.array([t], self._fast.dtype), [value])
        if not self._accept(t):
            return []
        item = (value, self._events_seen) if getattr(self.monoid, "positional", False) else value
        self._events_seen += 1
        self._aggregator.insert(item, t)
        self._remember(t)
        return self._raise_watermark(t - self.allowed_lateness)

    def _accept(self, t) -> bool:
        if t < self._watermark:
            self.late_events += 1
            return False
        return True

    def _remember(self, t):
        """Note that on-time events exist at time ``t`` (for the windows to emit later)."""
        if self._max_time < t:
            self._max_time = t
        if self.slide is None:
            if t not in self._pending_set:
                self._pending_set.add(t)
                heapq.heappush(self._pending_times, t)
        else:
            bucket = int(t // self.slide)
            for buckets, seen in zip(self._buckets, self._bucket_sets):
                if bucket not in seen:
                    seen.add(bucket)
                    heapq.heappush(buckets, bucket)

    def push_batch(self, times, values, as_frame: bool = False):
        """Add a batch (same results as pushing its events one by one, in order).

        On-time events go into the aggregator with one bulk insert. Returns a list of
        :class:`WindowResult`, or a pandas DataFrame with ``as_frame=True``.
        """
        values = list(values) if not isinstance(values, np.ndarray) else values
        if self.kind == "rows":
            results = [r for v in values for r in self._push_row(v)]
            return self.to_frame(results) if as_frame else results
        if self._fast is not None:
            stamps = np.asarray(self._batch_times(times), self._fast.dtype)
            if len(stamps) != len(values):
                raise ValueError(f"push_batch got {len(stamps)} times but {len(values)} values")
            return self._fast_push(stamps, values, as_frame)
        stamps = self._batch_times(times)
        if len(stamps) != len(values):
            raise ValueError(f"push_batch got {len(stamps)} times but {len(values)} values")
        results = self._push_many(stamps, values)
        return self.to_frame(results) if as_frame else results

    def _batch_times(self, times) -> list:
        array = np.asarray(times.to_numpy() if hasattr(times, "to_numpy") else times)
        if array.dtype.kind == "M":
            if not self._datetimes:
                raise InvalidTimeError("datetime times need a duration size (like '10min')")
            if np.isnat(array).any():
                raise InvalidTimeError(f"times hold NaT at row {int(np.flatnonzero(np.isnat(array))[0])}")
            ns = array.astype("datetime64[ns]").astype(np.int64)
            if self._fast is not None:
                self._fast.check(ns, "times")
                return ns
            return ns.tolist()
        if array.dtype.kind in "iuf" and not self._datetimes:
            if array.dtype.kind == "f":
                if np.isnan(array).any():
                    raise InvalidTimeError(f"times hold NaN at row {int(np.flatnonzero(np.isnan(array))[0])}")
                if self._fast is not None and self._fast.limits is not None:
                    fractional = array != np.floor(array)
                    if fractional.any():
                        row = int(np.flatnonzero(fractional)[0])
                        raise InvalidTimeError(f"times[{row}] = {array[row]} is fractional, but this Window "
                                               f"keeps integer times (its size is an integer); give the size "
                                               f"as a float for float times")
                    array = array.astype(np.int64)
                else:
                    self._float_times = self._float_times or array.size > 0
            if self._fast is not None:
                if self._fast.limits is not None:
                    array = array.astype(np.int64)  # uint64 above int64 fails the check below
                    self._fast.check(np.asarray(times), "times")
                return array
            return array.tolist()
        return [self._time_of(t) for t in array.tolist()]

    def _push_many(self, stamps: list, values) -> List[WindowResult]:
        # An event is late against the watermark left by the events before it; late events
        # never raise the largest time (they are older than it), so a running maximum over
        # the whole batch gives every event's watermark.
        watermark, largest = self._watermark, self._max_time
        on_time = []
        for i, t in enumerate(stamps):
            if t < watermark:
                self.late_events += 1
                continue
            on_time.append(i)
            if t > largest:
                largest = t
                watermark = max(watermark, largest - self.allowed_lateness)
        if on_time:
            positional = getattr(self.monoid, "positional", False)
            order = sorted(on_time, key=stamps.__getitem__)  # stable: equal times keep arrival order
            first = self._events_seen
            self._events_seen += len(on_time)
            rank = {i: first + k for k, i in enumerate(on_time)}
            items = [(values[i], rank[i]) if positional else values[i] for i in order]
            self._aggregator.bulk_insert(items, [stamps[i] for i in order])
            for i in on_time:
                self._remember(stamps[i])
        return self._raise_watermark(watermark)

    def advance_watermark(self, time) -> List[WindowResult]:
        """Raise the watermark to ``time`` (never lowers it); returns the windows that closed."""
        if self.kind != "time":
            raise TypeError("a count (rows=) window has no watermark")
        if self._fast is not None:
            return self._fast_step(self._time_of(time), np.empty(0, self._fast.dtype), np.empty(0))
        return self._raise_watermark(self._time_of(time))

    def flush(self) -> List[WindowResult]:
        """End of stream: emit every window still open (the watermark becomes +infinity)."""
        if self.kind == "rows":
            if self._since_result == 0 or not len(self._aggregator):
                return []
            return [self._row_result()]
        if self._fast is not None:
            return self._fast_step(math.inf, np.empty(0, self._fast.dtype), np.empty(0))
        return self._raise_watermark(math.inf)

    # ------------------------------------------------------------ emitting
    def _raise_watermark(self, watermark) -> List[WindowResult]:
        if not watermark > self._watermark:
            return []
        self._watermark = watermark
        results = self._close_aligned() if self.slide is not None else self._close_per_event()
        horizon = watermark - max(self.sizes)  # no open window covers a time <= horizon
        oldest = self._aggregator.oldest_time()
        if oldest is not None and oldest <= horizon:
            if horizon == math.inf:
                horizon = self._aggregator.youngest_time()
            self._aggregator.bulk_evict(horizon)
        return results

    def _close_per_event(self) -> List[WindowResult]:
        results = []
        pending = self._pending_times
        while pending and pending[0] < self._watermark:
            t = heapq.heappop(pending)
            self._pending_set.discard(t)
            for size in self.sizes:
                count, value = self._aggregator.query_after(t - size, t)
                results.append(WindowResult(self._outward(t - size), self._outward(t), _plain(value), count))
        return results

    def _close_aligned(self) -> List[WindowResult]:
        # Window k covers [k*slide, k*slide + size); bucket b holds times in [b*slide, (b+1)*slide)
        # and lies in the windows k with b - ceil(size/slide) < k <= b. Windows close in order of
        # k, so per size it is enough to remember the next window index not yet considered.
        by_end = []
        for which, size in enumerate(self.sizes):
            by_end.extend(self._close_aligned_size(which, size))
        if len(self.sizes) > 1:
            by_end.sort(key=lambda item: (item[0], item[1]))
        return [result for _, _, result in by_end]

    def _close_aligned_size(self, which, size) -> list:
        slide, watermark = self.slide, self._watermark
        reach = -(-size // slide)  # ceil(size / slide): how many windows a bucket lies in
        buckets, seen = self._buckets[which], self._bucket_sets[which]
        closed = []
        next_k = self._next_window[which]
        while buckets:
            bucket = buckets[0]
            first = int(bucket - reach + 1)
            k = first if next_k is None or next_k < first else next_k
            while k <= bucket and k * slide + size <= watermark:
                start, end = k * slide, k * slide + size
                count, value = self._aggregator.query(start, self._before(end))
                if count:
                    closed.append((end, which, WindowResult(self._outward(start), self._outward(end), _plain(value),
                                                            count)))
                k += 1
            next_k = k if next_k is None or k > next_k else next_k
            if k <= bucket:
                break  # this bucket still has open windows; later buckets' windows end later
            seen.discard(heapq.heappop(buckets))
        if next_k is not None and watermark != math.inf:
            # windows skipped as empty but still open may yet receive events: only closed ones count
            next_k = min(next_k, math.floor((watermark - size) / slide) + 1)
        self._next_window[which] = next_k
        return closed

    def _before(self, end):
        """The largest time strictly before ``end`` (range queries include both bounds)."""
        if self._float_times or isinstance(end, float):
            return math.nextafter(float(end), -math.inf)
        return end - 1

    # ------------------------------------------------------------ compiled per-event windows
    def _fast_push(self, stamps: np.ndarray, values, as_frame: bool = False):
        """Late-event filter (vectorized: an event's watermark is the running maximum of the
        times before it, less the lateness), then one compiled step."""
        fast, n = self._fast, stamps.shape[0]
        values = np.asarray(values, dtype=np.float64)
        if n == 0:
            return self._fast_step(self._watermark, stamps, values, as_frame)
        low = _as_time_type(self._max_time, fast.dtype)
        running = np.maximum.accumulate(stamps)
        before = np.empty(n, fast.dtype)
        before[0] = low
        np.maximum(running[:-1], low, out=before[1:])
        # times are checked to lie far enough inside int64 for this subtraction, but `before`
        # may be the -infinity stand-in: keep it there instead of wrapping around
        lowered = np.where(before == _as_time_type(-math.inf, fast.dtype), before,
                           before - fast.dtype(self.allowed_lateness))
        floor = np.maximum(lowered, _as_time_type(self._watermark, fast.dtype))
        on_time = stamps >= floor
        self.late_events += int(n - np.count_nonzero(on_time))
        largest = running[-1].item()
        if largest > self._max_time:
            self._max_time = largest
        return self._fast_step(max(self._watermark, self._max_time - self.allowed_lateness),
                               stamps[on_time], values[on_time], as_frame)

    def _fast_step(self, watermark, stamps, values, as_frame: bool = False):
        """Insert the on-time events, raise the watermark, emit: a list of rows or a DataFrame."""
        fast = self._fast
        kernel, fresh = batch_kernel(self.monoid.compiled_for(np.dtype(np.float64)), fast.time_type)
        if fast.bufs is None:
            fast.bufs, fast.st = fresh()
        order = np.argsort(stamps, kind="stable")  # equal times keep arrival order
        sorted_times = stamps[order]
        positions = (self._events_seen + order).astype(np.int64)
        self._events_seen += int(stamps.shape[0])
        if watermark > self._watermark:
            self._watermark = watermark
        live = np.concatenate((fast.live, sorted_times))
        live.sort(kind="stable")
        if self.slide is None:
            starts, ends, counts, his, lo_open = self._closing_per_event(sorted_times, live)
        else:
            parts = [self._closing_aligned(sorted_times, live, which) for which in range(len(self.sizes))]
            starts, ends, counts, his = (np.concatenate([part[i] for part in parts]) for i in range(4))
            if len(parts) > 1:  # by end, then by the order of the sizes
                which = np.repeat(np.arange(len(parts)), [part[0].shape[0] for part in parts])
                by_end = np.lexsort((which, ends))
                starts, ends, counts, his = starts[by_end], ends[by_end], counts[by_end], his[by_end]
            lo_open = False
        horizon = _as_time_type(self._watermark - max(self.sizes), fast.dtype)
        fast.bufs, fast.st, out = kernel(fast.bufs, fast.st, sorted_times, values[order], positions, starts, his,
                                         lo_open, fast.dtype(horizon))
        fast.live = live[np.searchsorted(live, horizon, "right"):]
        if as_frame:  # straight from the arrays: no row objects
            import pandas as pd

            if self._datetimes:
                starts, ends = starts.astype("datetime64[ns]"), ends.astype("datetime64[ns]")
            elif not self._float_times:
                starts, ends = starts.astype(np.int64), ends.astype(np.int64)
            return pd.DataFrame({"start": starts, "end": ends, "value": out, "count": counts.astype(np.int64)})
        return [WindowResult(self._outward_number(a), self._outward_number(b), value, count)
                for a, b, value, count in zip(starts, ends, out.tolist(), counts.tolist())]

    def _closing_per_event(self, sorted_times, live):
        """The per-event windows ``(t - size, t]`` that close now: every pending t < watermark."""
        fast = self._fast
        mark = _as_time_type(self._watermark, fast.dtype)
        candidates = np.unique(np.concatenate((fast.pending, sorted_times)))
        split = candidates.shape[0] if self._watermark == math.inf else int(np.searchsorted(candidates, mark, "left"))
        close, fast.pending = candidates[:split], candidates[split:]
        # each closing time gives one row per size, in the order of the sizes
        starts = np.stack([close - size for size in fast.sizes], axis=1).ravel()
        ends = np.repeat(close, len(fast.sizes))
        counts = np.searchsorted(live, ends, "right") - np.searchsorted(live, starts, "right")
        return starts, ends, counts, ends, True

    def _closing_aligned(self, sorted_times, live, which):
        """The aligned windows ``[k*slide, k*slide + size)`` that close now and hold events.

        Window k holds an event only if a pending slide bucket b (times in
        ``[b*slide, (b+1)*slide)``) has ``b - ceil(size/slide) < k <= b``; it closes when
        ``k*slide + size <= watermark``. Windows below ``next_k`` were all handled before.
        """
        fast, slide, size = self._fast, self.slide, self.sizes[which]
        fresh_buckets = np.floor_divide(sorted_times, fast.dtype(slide)).astype(np.int64)
        buckets = np.union1d(fast.buckets[which], fresh_buckets)
        last_closed = self._last_closed_window(size)
        reach = -(-size // slide)
        next_k = fast.next_k[which]
        first_k = np.maximum(buckets - int(reach) + 1, next_k if next_k is not None else _INT_LOW)
        last_k = np.minimum(buckets, last_closed)
        spans = np.maximum(last_k - first_k + 1, 0)
        ks = np.unique(np.repeat(first_k - np.cumsum(spans) + spans, spans) + np.arange(int(spans.sum())))
        if last_closed > _INT_LOW:
            next_k = max(next_k if next_k is not None else _INT_LOW, last_closed + 1)
        if next_k is not None:
            buckets = buckets[buckets >= next_k]  # a bucket's last window is k = bucket
        fast.buckets[which], fast.next_k[which] = buckets, next_k
        starts = ks * fast.dtype(slide)
        ends = starts + fast.dtype(size)
        counts = np.searchsorted(live, ends, "left") - np.searchsorted(live, starts, "left")
        held = counts > 0
        starts, ends, counts = starts[held], ends[held], counts[held]
        his = ends - 1 if fast.dtype is np.int64 else np.nextafter(ends, -np.inf)
        return starts, ends, counts, his, False

    def _last_closed_window(self, size) -> int:
        """The largest k with ``k*slide + size <= watermark`` (_INT_LOW before any watermark)."""
        watermark, slide = self._watermark, self.slide
        if watermark == -math.inf:
            return _INT_LOW
        if watermark == math.inf:
            return _INT_HIGH
        k = math.floor((watermark - size) / slide)
        while k * slide + size > watermark:  # guard the float division against rounding
            k -= 1
        while (k + 1) * slide + size <= watermark:
            k += 1
        return k

    def _outward_number(self, t):
        if self._datetimes:
            import pandas as pd

            return pd.Timestamp(int(t))
        return float(t) if self._float_times else int(t)

    # ------------------------------------------------------------ count windows
    def _push_row(self, value) -> List[WindowResult]:
        item = (value, self._events_seen) if getattr(self.monoid, "positional", False) else value
        if len(self._aggregator) == self.sizes[0]:
            self._aggregator.evict()
        self._aggregator.insert(item)
        self._events_seen += 1
        self._since_result += 1
        if self._since_result < self.slide:
            return []
        return [self._row_result()]

    def _row_result(self) -> WindowResult:
        self._since_result = 0
        count = len(self._aggregator)
        return WindowResult(self._events_seen - count, self._events_seen, _plain(self._aggregator.query()), count)

    # ------------------------------------------------------------ results
    @staticmethod
    def to_frame(results: Sequence[WindowResult]):
        """The results as a pandas DataFrame with columns start, end, value, count."""
        import pandas as pd

        return pd.DataFrame.from_records(list(results), columns=list(WindowResult._fields))

    def __getstate__(self):
        state = dict(self.__dict__)
        fast = self._fast
        # A tree keeps the node pool of the largest batch it ever held; pickle (Spark state,
        # checkpoints) a copy sized for what the window holds now.
        if fast is not None and fast.bufs is not None and fast.st[0] > 2 * fast.st[2] + 64:
            kernel = compact_kernel(self.monoid.compiled_for(np.dtype(np.float64)), fast.time_type)
            bufs, st = kernel(fast.bufs, fast.st, np.unique(fast.live))
            if st[2] == fast.st[2]:
                compact = copy.copy(fast)
                compact.bufs, compact.st = bufs, st
                state["_fast"] = compact
        return state

    def __repr__(self):
        shape = f"rows={self.sizes[0]}" if self.kind == "rows" else f"size={self.sizes}"
        return (f"<winagg.Window {self.monoid.name} {shape} slide={self.slide} over {self.algorithm}, "
                f"{self.late_events} late>")


def _is_duration(value) -> bool:
    module = type(value).__module__
    return (module.startswith("pandas") or isinstance(value, np.timedelta64)
            or type(value).__name__ == "timedelta")


# ---------------------------------------------------------------- compiled batches
_BATCH_KERNELS: dict = {}
INT64_MIN = int(np.iinfo(np.int64).min)
INT64_MAX = int(np.iinfo(np.int64).max)
# -infinity and +infinity among int64 times and window numbers; event times are kept
# (by _CompiledPerEvent.check) strictly between them, with room for every window bound.
_INT_LOW = INT64_MIN
_INT_HIGH = INT64_MAX - 1


def batch_kernel(spec, time_type: str):
    """``kernel(bufs, st, times, values, positions, lows, highs, low_open, horizon) -> (bufs, st, out)``.

    One compiled call per batch on a FiBA tree carried across calls: bulk-insert the
    batch (sorted by time, equal times in arrival order), answer the range
    ``lows[j] <= time <= highs[j]`` (``lows[j] < time`` when ``low_open``) of every
    window, then evict every entry <= ``horizon``. Every range must hold an entry.
    """
    key = (spec.key, time_type)
    if key in _BATCH_KERNELS:
        return _BATCH_KERNELS[key]
    from . import jitcache
    from .ooo._fiba_kernels import tree_funcs

    f = tree_funcs(spec, None, time_type)
    init, bulk_insert, range_query, reserve = f.init, f.bulk_insert, f.range_query, f.reserve
    evict_upto, oldest, youngest = f.evict_upto, f.oldest, f.youngest
    lift, lower, out_dtype, alloc, store = spec.lift, spec.lower, spec.out_dtype, spec.layout.alloc, spec.layout.store

    @jitcache.njit
    def kernel(b, st, when, values, positions, lows, highs, low_open, horizon):
        m = when.shape[0]
        if m > 0:
            partials = alloc(m)
            for q in range(m):
                store(partials, q, lift(values[q], positions[q]))
            b, st = reserve(b, st, m)
            st = bulk_insert(b, st, when, partials, m)
        out = np.empty(lows.shape[0], out_dtype)
        for j in range(lows.shape[0]):
            out[j] = lower(range_query(b, st, lows[j], highs[j], low_open))
        if st[2] > 0 and oldest(b) <= horizon:
            if youngest(b) <= horizon:
                b, st = init(16)  # everything goes: start afresh
            else:
                st = evict_upto(b, st, horizon)
        return b, st, out

    def fresh():
        return init(16)

    _BATCH_KERNELS[key] = (kernel, fresh)
    return _BATCH_KERNELS[key]


def compact_kernel(spec, time_type: str):
    """``kernel(bufs, st, times) -> (bufs, st)``: a tree holding just the entries at ``times``.

    ``times`` are the distinct times of the tree's entries, sorted. The new tree is
    sized for them; the old one keeps the node pool of the largest batch it ever held.
    """
    key = ("compact", spec.key, time_type)
    if key in _BATCH_KERNELS:
        return _BATCH_KERNELS[key]
    from . import jitcache
    from .ooo._fiba_kernels import tree_funcs

    f = tree_funcs(spec, None, time_type)
    init, bulk_insert, range_query, reserve = f.init, f.bulk_insert, f.range_query, f.reserve
    alloc, store = spec.layout.alloc, spec.layout.store

    @jitcache.njit
    def kernel(b, st, when):
        m = when.shape[0]
        partials = alloc(m)
        for j in range(m):
            store(partials, j, range_query(b, st, when[j], when[j], False))
        nb, nst = init(16)
        if m > 0:
            nb, nst = reserve(nb, nst, m)
            nst = bulk_insert(nb, nst, when, partials, m)
        return nb, nst

    _BATCH_KERNELS[key] = kernel
    return kernel


class _CompiledPerEvent:
    """State of a per-event, one-size time Window run by :func:`batch_kernel`.

    Besides the tree it keeps the sorted times of the events still in the window (their
    counts come from two binary searches) and the sorted distinct times not yet emitted.
    """

    def __init__(self, time_type, sizes, limits=None):
        self.time_type = time_type
        self.limits = limits  # int64 times: the (lowest, highest) time allowed
        self.dtype = np.int64 if time_type == "int64" else np.float64
        self.sizes = [self.dtype(size) for size in sizes]
        self.bufs, self.st = None, None
        self.live = np.empty(0, self.dtype)
        self.pending = np.empty(0, self.dtype)  # per-event windows: distinct times not yet emitted
        # aligned windows, per size: slide buckets with windows not yet handled, and the index below
        # which every window is closed and handled
        self.buckets = [np.empty(0, np.int64) for _ in sizes]
        self.next_k = [None for _ in sizes]

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

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.__dict__.setdefault("limits", None)  # pickled before integer times were kept exact


def _as_time_type(x, dtype):
    if dtype is np.int64:
        if x == -math.inf:
            return _INT_LOW
        if x == math.inf:
            return _INT_HIGH
        return int(x)
    return float(x)
