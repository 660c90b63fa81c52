"""The time windows of :class:`winagg.Window`: watermark, lateness, which windows close, and when.

Which windows close is worked out with numpy over the batch's times; what they
hold comes from one out-of-order tree (FiBA) through the driver's out-of-order
loop (:mod:`winagg.engine.range_batches`): compiled for built-in numeric
aggregations (the plan and the loop, one call each per batch), the same plan
in plain Python for any other monoid. A window's event count comes from two
binary searches over the sorted times of the events still in the tree
(``live``).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..engine.plans import INT_LOW, last_closed_window
from .event_time import EventTimes, as_time_type
from ..values import float_values, item_array
from ..core.state import limit
from ..core.state import size as entries


class WindowResult(NamedTuple):
    """One final window: ``start``, ``end`` (see :class:`winagg.Window` for which side is closed),
    the lowered aggregate ``value`` and the number of on-time events ``count`` it holds."""

    start: object
    end: object
    value: object
    count: int


def plain(value):
    """numpy scalars as Python numbers (results print and compare like the user's own numbers)."""
    return value.item() if isinstance(value, np.generic) else value


class TimeWindows:
    """Per-event (``slide`` None) or aligned time windows over one out-of-order tree.

    ``spec`` is the aggregation's compiled description (values become float64, one
    numba call per batch) or None (any monoid, in plain Python, over ``algorithm``).
    """

    def __init__(self, times: EventTimes, sizes, slide, lateness, monoid, algorithm, spec=None):
        self.times = times
        self.sizes, self.slide, self.allowed_lateness = sizes, slide, lateness
        self.monoid, self.algorithm, self.spec = monoid, algorithm, spec
        dtype = times.dtype
        self.time_type = "int64" if dtype is np.int64 else "float64"
        self.watermark = -math.inf
        self.max_time = -math.inf
        self.late_events = 0
        self.events_seen = 0
        self.state = None  # the tree: (bufs, st)
        self.live = np.empty(0, dtype)  # sorted times of the events still in the tree
        self.pending = np.empty(0, dtype)  # per-event windows: distinct times not yet emitted
        # aligned windows, per size: slide buckets with windows not yet handled, and the index below
        # which every window is closed and handled
        self.buckets = [np.empty(0, np.int64) for _ in sizes]
        self.next_k = [None for _ in sizes]
        self._runner = None

    # ------------------------------------------------------------ the tree
    def _run(self, when, values, positions, lows, highs, low_open, horizon):
        if self._runner is None:
            self._runner = self._make_runner()
        if self.state is None:
            self.state = self._runner.fresh()
        self.state, out = self._runner.run(self.state, when, values, positions, lows, highs, low_open, horizon)
        return out

    def _make_runner(self):
        from ..engine.range_batches import PythonBatches, compiled_batches

        if self.spec is None:
            return PythonBatches(self.algorithm, self.monoid)
        return compiled_batches(self.spec, self.time_type)

    # ------------------------------------------------------------ events in
    def push(self, stamps: np.ndarray, values, as_frame: bool = False):
        """Late-event filter (vectorized: an event's watermark is the running maximum of the
        times before it, less the lateness), then one step."""
        dtype, n = self.times.dtype, stamps.shape[0]
        values = float_values(values) if self.spec is not None else item_array(values)
        if n == 0:
            return self.step(self.watermark, stamps, values, as_frame)
        low = as_time_type(self.max_time, dtype)
        running = np.maximum.accumulate(stamps)
        before = np.empty(n, dtype)
        before[0] = low
        np.maximum(running[:-1], low, out=before[1:])
        on_time = self._within_lateness(stamps, before) & (stamps >= as_time_type(self.watermark, dtype))
        self.late_events += int(n - np.count_nonzero(on_time))
        largest = running[-1].item()
        if largest > self.max_time:
            self.max_time = largest
        return self.step(self._event_watermark(), stamps[on_time], values[on_time], as_frame)

    def _within_lateness(self, stamps, before):
        """Whether each event lies within the allowed lateness of ``before``, the largest time
        before it (or the -infinity stand-in), for any lateness up to infinity."""
        lateness = self.allowed_lateness
        if lateness == math.inf:
            return np.ones(stamps.shape[0], bool)
        if self.times.dtype is np.float64:
            return stamps >= before - lateness
        # before - stamp, taken modulo 2**64, is exact wherever before > stamp: no overflow,
        # whatever the lateness (a Python int, possibly beyond int64)
        behind = before.view(np.uint64) - stamps.view(np.uint64)
        return (stamps >= before) | (behind <= np.uint64(min(lateness, 2**64 - 1)))

    def _event_watermark(self):
        """max(watermark, largest time - lateness). A mark below every time the window accepts
        (a lateness longer than its times can span) is -infinity: it makes nothing late and
        closes nothing, and it could not be shown as a time."""
        mark = self.max_time - self.allowed_lateness  # Python numbers: exact
        limits = self.times.limits
        if limits is not None and mark < limits[0]:
            mark = -math.inf
        return max(self.watermark, mark)

    def step(self, watermark, stamps, values, as_frame: bool = False):
        """Insert the on-time events, raise the watermark, emit: a list of rows or a DataFrame."""
        dtype = self.times.dtype
        order = np.argsort(stamps, kind="stable")  # equal times keep arrival order
        sorted_times = stamps[order]
        positions = (self.events_seen + order).astype(np.int64)
        self.events_seen += int(stamps.shape[0])
        if watermark > self.watermark:
            self.watermark = watermark
        live = np.concatenate((self.live, sorted_times))
        live.sort(kind="stable")
        if self.slide is None:
            starts, ends, counts, his, low_open = self._closing_per_event(sorted_times, live)
        else:
            starts, ends, counts, his = self._closing_aligned_all(sorted_times, live)
            low_open = False
        horizon = as_time_type(self.watermark - max(self.sizes), dtype)
        out = self._run(sorted_times, values[order], positions, starts, his, low_open, dtype(horizon))
        self.live = live[np.searchsorted(live, horizon, "right"):]
        return self._results(starts, ends, counts, out, as_frame)

    def _results(self, starts, ends, counts, out, as_frame):
        times = self.times
        if as_frame:  # straight from the arrays: no row objects
            import pandas as pd

            values = out if isinstance(out, np.ndarray) else [plain(v) for v in out]
            return pd.DataFrame({"start": times.outward_array(starts), "end": times.outward_array(ends),
                                 "value": values, "count": counts.astype(np.int64)})
        answers = out.tolist() if isinstance(out, np.ndarray) else [plain(v) for v in out]
        return [WindowResult(times.outward(a), times.outward(b), value, count)
                for a, b, value, count in zip(starts.tolist(), ends.tolist(), answers, counts.tolist())]

    # ------------------------------------------------------------ which windows close
    def _closing_per_event(self, sorted_times, live):
        """The per-event windows ``(t - size, t]`` that close now: every pending t < watermark."""
        dtype = self.times.dtype
        mark = as_time_type(self.watermark, dtype)
        candidates = np.unique(np.concatenate((self.pending, sorted_times)))
        split = candidates.shape[0] if self.watermark == math.inf else int(np.searchsorted(candidates, mark, "left"))
        close, self.pending = candidates[:split], candidates[split:]
        # each closing time gives one row per size, in the order of the sizes
        starts = np.stack([close - dtype(size) for size in self.sizes], axis=1).ravel()
        ends = np.repeat(close, len(self.sizes))
        counts = np.searchsorted(live, ends, "right") - np.searchsorted(live, starts, "right")
        return starts, ends, counts, ends, True

    def _closing_aligned_all(self, sorted_times, live):
        parts = [self._closing_aligned(sorted_times, live, which) for which in range(len(self.sizes))]
        starts, ends, counts, his = (np.concatenate([part[i] for part in parts]) for i in range(4))
        if len(parts) > 1:  # by end, then by the order of the sizes
            which = np.repeat(np.arange(len(parts)), [part[0].shape[0] for part in parts])
            by_end = np.lexsort((which, ends))
            starts, ends, counts, his = starts[by_end], ends[by_end], counts[by_end], his[by_end]
        return starts, ends, counts, his

    def _closing_aligned(self, sorted_times, live, which):
        """The aligned windows ``[k*slide, k*slide + size)`` that close now and hold events.

        Window k holds an event only if a pending slide bucket b (times in
        ``[b*slide, (b+1)*slide)``) has ``b - ceil(size/slide) < k <= b``; it closes when
        ``k*slide + size <= watermark``. Windows below ``next_k`` were all handled before.
        """
        dtype, slide, size = self.times.dtype, self.slide, self.sizes[which]
        fresh_buckets = np.floor_divide(sorted_times, dtype(slide)).astype(np.int64)
        buckets = np.union1d(self.buckets[which], fresh_buckets)
        last_closed = last_closed_window(size, slide, self.watermark)
        reach = -(-size // slide)
        next_k = self.next_k[which]
        first_k = np.maximum(buckets - int(reach) + 1, next_k if next_k is not None else INT_LOW)
        last_k = np.minimum(buckets, last_closed)
        # empty spans count from last_k + 1, so that no difference leaves int64 (last_k may be INT_LOW)
        spans = last_k - np.minimum(first_k, last_k + 1) + 1
        ks = np.unique(np.repeat(first_k - np.cumsum(spans) + spans, spans) + np.arange(int(spans.sum())))
        if last_closed > INT_LOW:
            next_k = max(next_k if next_k is not None else INT_LOW, last_closed + 1)
        if next_k is not None:
            buckets = buckets[buckets >= next_k]  # a bucket's last window is k = bucket
        self.buckets[which], self.next_k[which] = buckets, next_k
        starts = ks * dtype(slide)
        ends = starts + dtype(size)
        counts = np.searchsorted(live, ends, "left") - np.searchsorted(live, starts, "left")
        held = counts > 0
        starts, ends, counts = starts[held], ends[held], counts[held]
        his = ends - 1 if dtype is np.int64 else np.nextafter(ends, -np.inf)
        return starts, ends, counts, his

    # ------------------------------------------------------------ pickling
    def __getstate__(self):
        state = dict(self.__dict__)
        state["_runner"] = None  # compiled functions and closures are rebuilt after unpickling
        # A tree keeps the node pool of the largest batch it ever held; pickle (Spark state,
        # checkpoints) a copy sized for what the window holds now.
        if self.spec is not None and self.state is not None and \
                limit(self.state[1]) > 2 * entries(self.state[1]) + 64:
            from ..engine.range_batches import compact_kernel

            bufs, st = self.state
            kernel = compact_kernel(self.spec, self.time_type)
            compact_bufs, compact_st = kernel(bufs, st, np.unique(self.live))
            if entries(compact_st) == entries(st):
                state["state"] = (compact_bufs, compact_st)
        return state

    def pool_bytes(self) -> int:
        """Bytes of the tree's buffers (compiled trees only; 0 otherwise)."""
        if self.spec is None or self.state is None:
            return 0
        return sum(buffer.nbytes for buffer in self.state[0])
