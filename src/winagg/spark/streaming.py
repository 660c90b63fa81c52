"""Sliding windows in Spark Structured Streaming: the batch job's windows per key, as Spark state.

:func:`sliding_stream` is the streaming twin of :func:`winagg.spark.sliding`
with a range frame: every event gets the aggregate of its key's events with
time in ``[t - range, t]`` (peers included), the same numbers the batch job
gives on the same data. Micro-batches arrive out of order and in bursts; each
key keeps its events until the watermark passes them and then runs them, in
time order, through the batch job's in-order windows and compiled kernels,
whose state (with the events still waiting) lives in a
``transformWithStateInPandas`` value state, checkpointed by Spark.

An event's result is final once the watermark has passed its time (no event
of that time or older can still be accepted), so results are emitted then,
from the micro-batch that moves the watermark or from an event-time timer.
Events older than the watermark when they arrive are dropped and counted, as
are events without a time: see :class:`~winagg.spark.dropped.DroppedEvents`.

Rows reach the Python processors exactly whatever the session's settings
(:class:`Crossing`): a long column with nulls is not rounded through float64,
and event times are instants in any session time zone.
"""

from __future__ import annotations

import pickle
import zlib
from typing import Any, Iterator, Mapping, Optional, Sequence, Union

import numpy as np
import pandas as pd
import pyarrow as pa

from ._common import SparkInputError, check_columns, checked_format, column_names, spark_type
from .batch import parse_outputs, range_span
from .dropped import dropped_row, observe_dropped, with_dropped_column, with_no_count
from .hopping import exact_longs
from .partition import Frame, Output, PartitionRun, PartitionWindows
from .stream_inputs import NANOS_PER_MS, Crossing, watermark_at, watermark_delay, watermarked


#: The layout of a key's pickled state (3: times in nanoseconds, not microseconds; 4: tuple partials
#: in one record array, not an array per field): a checkpoint written with another is refused by name.
STATE_FORMAT = 4
#: The event time inside a key's windows (int64 nanoseconds), apart from the event's own columns.
_TIME = "__winagg_time"


class _KeyState:
    """What one key keeps between micro-batches (pickled into Spark's state store): its events
    whose results are not final yet and, per window length, the batch job's range-frame windows.

    An event's result is final once the watermark has passed its time. Every event that
    arrives later is at or after the watermark, so the events that became final, sorted by
    time, continue the key's timeline where the previous ones stopped: they run through the
    in-order windows and compiled kernels of :func:`winagg.spark.sliding`
    (:class:`~winagg.spark.partition.PartitionWindows`), whose state carries over from one
    micro-batch to the next.
    """

    def __init__(self, outputs: Sequence[Output], spans: Sequence[int], input_schema: pa.Schema):
        self.format = STATE_FORMAT
        self.input_schema = input_schema  # the columns the outputs read, typed as the batch job reads them
        by_span: dict = {}
        for output, span in zip(outputs, spans):
            by_span.setdefault(int(span), []).append(output)
        self.runs = [PartitionRun(_event_windows(span, grouped)) for span, grouped in by_span.items()]
        self.pending: Optional[pd.DataFrame] = None
        self.pending_times = np.empty(0, np.int64)  # the pending events' times, int64 nanoseconds
        self.dropped = 0

    def add(self, events: pd.DataFrame, times: np.ndarray) -> None:
        """Keep ``events`` (their times in nanoseconds) until the watermark passes them."""
        self.pending = events if self.pending is None else pd.concat([self.pending, events], ignore_index=True)
        self.pending_times = np.concatenate([self.pending_times, times])

    def oldest_pending(self) -> Optional[int]:
        """The time (nanoseconds) of the oldest event not final yet, or None."""
        return int(self.pending_times.min()) if len(self.pending_times) else None

    def close(self, watermark) -> Optional[pd.DataFrame]:
        """The pending events that became final at the watermark (nanoseconds), in time order, with
        their results."""
        final = self.pending_times < watermark
        if not final.any():
            return None
        final_times = self.pending_times[final]
        order = np.argsort(final_times, kind="stable")
        done = self.pending[final].iloc[order].reset_index(drop=True)
        columns = [pa.array(final_times[order], pa.int64())]
        self.pending = self.pending[~final].reset_index(drop=True)
        self.pending_times = self.pending_times[~final]
        columns += [_input_column(done[f.name], f) for f in self.input_schema]
        batch = pa.RecordBatch.from_arrays(columns, names=[_TIME] + self.input_schema.names)
        for run in self.runs:
            answered = run.complete(batch)
            for output in run.spec.outputs:
                done[output.name] = pd.Series(answered.column(output.name).to_pylist(), dtype=object)
        return done


def _input_column(values: pd.Series, field: pa.Field) -> pa.Array:
    """An input column of a key's events as the batch job reads it; a long one exactly or not at all."""
    if pa.types.is_int64(field.type):
        return exact_longs(values, field.name)
    return pa.Array.from_pandas(values, type=field.type)


def _event_windows(span: int, outputs) -> PartitionWindows:
    """The batch job's range-frame windows over a key's events, ordered by their time in nanoseconds."""
    windows = PartitionWindows([], _TIME, Frame(span=span), outputs)
    windows.time_label = "the event time"
    return windows


def warm_up_key_state(outputs: Sequence[Output], spans: Sequence[int], input_schema: pa.Schema) -> None:
    """Compile (or load from numba's disk cache) the kernels a per-event stream's keys run: those
    of the batch job's range frames, over two events without values.

    Called on the driver before a query starts: Spark's Python workers then load the kernels from
    the disk cache instead of each compiling the same ones at the same time (in local mode they
    share this machine's cache). After a batch run over the same columns it compiles nothing.
    """
    events = pa.table([pa.nulls(2, f.type) for f in input_schema], names=input_schema.names).to_pandas()
    key_state = _KeyState(outputs, spans, input_schema)
    key_state.add(events, np.array([0, 1], np.int64))
    key_state.close(np.iinfo(np.int64).max)


def _processor_class():
    from pyspark import cloudpickle
    from pyspark.sql.streaming import StatefulProcessor

    from .hopping import key_text

    class SlidingProcessor(StatefulProcessor):
        """transformWithStateInPandas processor: a :class:`_KeyState` per key."""

        def __init__(self, config):
            self.config = config

        def init(self, handle) -> None:
            self.handle = handle
            self.state = handle.getValueState("window", "blob binary")

        def _load(self) -> _KeyState:
            if self.state.exists():
                return checked_format(pickle.loads(zlib.decompress(self.state.get()[0])), STATE_FORMAT, "windows")
            c = self.config
            return _KeyState(c["outputs"], c["spans"], c["input_schema"])

        def _finish(self, key, key_state: _KeyState, watermark_ms: int) -> Iterator[pd.DataFrame]:
            c = self.config
            try:
                done = key_state.close(watermark_at(watermark_ms))
            except OverflowError as error:  # a long sum outside int64: say which key
                raise OverflowError(f"{error} (key {key_text(c['keys'], c['crossing'].key(key))})") from None
            for timer in list(self.handle.listTimers()):
                self.handle.deleteTimer(timer)
            oldest = key_state.oldest_pending()
            if oldest is not None:  # fires once the watermark (ms) reaches past the oldest pending time (ns)
                self.handle.registerTimer(oldest // NANOS_PER_MS + 1)
            # HyperLogLog registers are mostly zeros: compression shrinks the state several times.
            # cloudpickle: a user monoid's functions may come from a module this process cannot
            # import (shipped by value with the processor); plain pickle would refer to them by name.
            blob = cloudpickle.dumps(key_state, protocol=pickle.HIGHEST_PROTOCOL)
            self.state.update((zlib.compress(blob, 1),))
            if done is not None and len(done):
                yield with_no_count(done[c["columns"]])

        def handleInputRows(self, key, rows, timerValues) -> Iterator[pd.DataFrame]:
            c = self.config
            key_state = self._load()
            watermark_ms = timerValues.getCurrentWatermarkInMs()
            events, times, untimed = c["crossing"].read(rows)
            late = times < watermark_at(watermark_ms)
            dropped = untimed + int(late.sum())
            key_state.dropped += dropped
            if dropped:
                yield dropped_row(dropped, c["columns"])
            # the new events are at or after the watermark: none is final yet, and none changes a result that is
            if not late.all():
                key_state.add(events[~late].reset_index(drop=True), times[~late])
            yield from self._finish(key, key_state, watermark_ms)

        def handleExpiredTimer(self, key, timerValues, expiredTimerInfo) -> Iterator[pd.DataFrame]:
            yield from self._finish(key, self._load(), timerValues.getCurrentWatermarkInMs())

        def close(self) -> None:
            pass

    return SlidingProcessor


def sliding_stream(df, *, partition_by: Union[str, Sequence[str]], order_by: str, range: Any,
                   aggs: Mapping[str, tuple], lateness: Any = "10 minutes", slide: Any = None):
    """A streaming DataFrame: ``df``'s events with their sliding-window aggregates, once final.

    ``partition_by``, ``range`` and ``aggs`` mean what they mean for
    :func:`winagg.spark.sliding` with a range frame (``range`` may also map each
    output column to its own range); ``order_by`` is the event-time
    column (a timestamp) and ``lateness`` the watermark delay (a duration:
    text such as ``"10 minutes"``, ``datetime.timedelta``, ``pandas.Timedelta``
    or ``numpy.timedelta64``, read by :mod:`winagg.times`; a whole number of
    milliseconds, the unit of Spark's watermark). Each event is emitted once, with the
    same columns as the batch result, after the watermark passes its time;
    on the same data, with no event dropped, the rows equal the batch job's.

    With ``slide`` (a duration), hopping windows instead: one row per key and
    window ``[k*slide, k*slide + size)`` holding events, with ``range=size``,
    columns the keys, ``window_start``, ``window_end`` and the ``aggs``,
    emitted once the watermark reaches the window's end: the rows of Spark's
    ``groupBy(keys, window(t, size, slide))`` in append mode. Keys are hashed into
    :data:`winagg.spark.hopping_stream.KEY_BUCKETS` buckets, one stateful call per bucket
    and micro-batch (the number is kept in the state: a checkpoint resumed with another
    fails, naming both). Each key keeps one aggregator per output, of panes of
    ``gcd(size, slide)`` (see :mod:`winagg.spark.hopping`), not a copy of each event per
    window; when every output is count, sum, mean, max or min of a number, rows are
    combined into panes before the stateful operator, which keeps a bucket's panes as
    arrays. As in Spark's window(), an event counts in its windows that end after the
    watermark of the micro-batch before its own, even when it is behind the watermark; one
    all of whose windows ended by then is dropped and counted in ``dropped``.

    Returns ``(stream, dropped)``: the streaming DataFrame (append mode) and a
    :class:`~winagg.spark.dropped.DroppedEvents`: each micro-batch's count of dropped
    events is an observed metric in the query's progress, ``dropped.value`` their total,
    on a classic session and through Spark Connect alike.
    """
    keys = column_names(partition_by)
    if not keys:
        raise SparkInputError("sliding_stream needs at least one partition_by column")
    check_columns(df, keys + [order_by], "partition_by/order_by")
    from pyspark.sql.types import StructField, StructType, TimestampNTZType, TimestampType

    if not isinstance(df.schema[order_by].dataType, (TimestampType, TimestampNTZType)):
        raise SparkInputError(f"the event-time column {order_by!r} must be a timestamp, "
                              f"got {df.schema[order_by].dataType.simpleString()}")
    if not aggs:
        raise SparkInputError("aggs is empty: name at least one output column")
    outputs = parse_outputs(df, aggs)
    delay = watermark_delay(lateness)
    if slide is not None:
        from .hopping_stream import hopping_stream

        return hopping_stream(df, keys, order_by, range, slide, outputs, delay)
    ranges = range if isinstance(range, Mapping) else {o.name: range for o in outputs}
    missing = [o.name for o in outputs if o.name not in ranges]
    if missing:
        raise SparkInputError(f"range gives no range for the output column {missing[0]!r}")
    spans = [range_span(ranges[o.name], df.schema[order_by].dataType) for o in outputs]
    input_schema = pa.schema([pa.field(c, _arrow_input_type(df, c)) for c in dict.fromkeys(o.column for o in outputs)])
    warm_up_key_state(outputs, spans, input_schema)
    columns = list(df.columns) + [o.name for o in outputs]
    crossed, crossing = Crossing.of(df, keys, order_by, df.columns).encode(watermarked(df, order_by, delay))
    config = {"outputs": outputs, "spans": spans, "keys": keys, "columns": columns,
              "input_schema": input_schema, "crossing": crossing}
    schema = StructType(df.schema.fields + [StructField(o.name, spark_type(o.arrow_type), True) for o in outputs])
    processor = _processor_class()(config)
    stream = crossed.groupBy(*crossing.grouping()).transformWithStateInPandas(
        processor, with_dropped_column(schema), "Append", "EventTime")
    return observe_dropped(stream)


def _arrow_input_type(df, column):
    from ._common import arrow_type

    return arrow_type(df.schema[column].dataType)
