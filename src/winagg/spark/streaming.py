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
(:class:`_Crossing`): a long column with nulls is not rounded through float64,
and event times are instants in any session time zone.
"""

from __future__ import annotations

import math
import pickle
import zlib
from typing import Any, Iterator, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np
import pandas as pd
import pyarrow as pa

from .. import aggregations
from ..times import datetimes_ns, duration_ns, time_array
from .batch import SparkInputError, _check_columns, _names, _outputs, _spark_type, range_span
from .dropped import dropped_row, observe_dropped, with_dropped_column, with_no_count
from .hopping import exact_longs
from .partition import Frame, Output, PartitionRun, PartitionWindows


#: The layout of a key's pickled state (3: times in nanoseconds, not microseconds; 4: tuple partials
#: in one record array, not an array per field): a checkpoint written with another is refused by name.
STATE_FORMAT = 4
#: Spark's watermark and timers count milliseconds; winagg's times are nanoseconds.
NANOS_PER_MS = 1_000_000
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


def checked_format(state, expected: int, what: str):
    """``state`` (unpickled from a checkpoint) if its ``format`` is ``expected``; otherwise a
    SparkInputError naming both (a state without one was written before formats were kept: 1)."""
    found = getattr(state, "format", 1)
    if found != expected:
        raise SparkInputError(f"this checkpoint keeps its keys' {what} in state format {found}, this winagg "
                              f"reads format {expected}: start the query from a new checkpoint")
    return state


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


def compile_kernels(outputs: Sequence[Output], panes: bool) -> None:
    """Compile (or load from numba's disk cache) every kernel hopping windows of ``outputs`` run.

    Called on the driver before a query starts, for the reason :func:`warm_up_key_state`
    gives. Hopping windows kept per key run FiBA's batch step over int64 times and the
    compaction that pickling a state runs, for every output and the non-null counts; kept as
    panes (``panes``: count, sum, mean, max, min) they run sum, max and min over the panes'
    float64 positions only. Each is a FiBA tree of its own, the slowest kernels winagg compiles.
    """
    from ..engine.range_batches import compact_kernel, compiled_batches

    from .hopping import tree_spec
    from .panes import pane_combiners

    if panes:
        specs = pane_combiners(outputs)
    else:
        specs = [aggregations.get("count").compiled_for(np.dtype(np.float64))]
        specs += [tree_spec(o.monoid) for o in outputs]
    time_type = np.float64 if panes else np.int64
    empty, none, no_times = np.empty(0, np.float64), np.empty(0, np.int64), np.empty(0, time_type)
    for spec in {s.key: s for s in specs if s is not None}.values():
        batches = compiled_batches(spec, time_type.__name__)
        (bufs, st), _ = batches.run(batches.fresh(), no_times, empty, none, no_times, no_times, False,
                                    time_type(0))
        if not panes:  # a bucket's panes are kept as arrays, never as a tree
            compact_kernel(spec, time_type.__name__)(bufs, st, no_times)


#: The event time as epoch microseconds, beside a zoned (TimestampType) event-time column.
_MICROS = "__winagg_micros"


def _null_flag(column: str) -> str:
    """The column that says where the nulls of the long column ``column`` were (:class:`_Crossing`)."""
    return f"__winagg_null_{column}"


class _Crossing(NamedTuple):
    """How rows cross into a stateful operator exactly, whatever the session's settings.

    PySpark hands a processor pandas frames in which a long column holding a null is float64
    (unless ``spark.sql.execution.pythonUDF.pandas.preferIntExtensionDtype`` is true), its
    values past 2**53 rounded, grouping keys included, and a zoned timestamp column is
    wall-clock time in the session's time zone (ambiguous where clocks go back). So each
    nullable long column crosses as its values with nulls as 0 (int64 in pandas) beside a
    boolean column of where its nulls were, and a zoned event time crosses as its epoch
    microseconds too; the processor reads them back (:meth:`read`, :meth:`key`).
    """

    keys: Tuple[str, ...]
    longs: Tuple[str, ...]  # the nullable long columns that cross
    time: Optional[str]  # the event-time column (None: no event times cross)
    micros: bool  # whether the event time crosses as microseconds too
    columns: Tuple[str, ...] = ()  # the columns that cross, in order (set by encode)

    @classmethod
    def of(cls, df, keys, time: Optional[str], columns) -> "_Crossing":
        """The crossing of ``columns`` of ``df``, grouped by ``keys``, with event times in ``time``."""
        from pyspark.sql.types import LongType, TimestampType

        longs = tuple(c for c in columns if isinstance(df.schema[c].dataType, LongType) and df.schema[c].nullable)
        micros = time is not None and isinstance(df.schema[time].dataType, TimestampType)
        return cls(tuple(keys), longs, time, micros)

    def encode(self, df) -> tuple:
        """``(df, crossing)``: ``df`` with the columns as they cross (its watermark set before), and
        this crossing with their names (PySpark renames those that are no Python identifier, such as
        ``__winagg_micros``, on the way: the processor names them back by position)."""
        from pyspark.sql import functions as F

        zero = F.lit(0).cast("long")
        for column in self.longs:
            df = df.withColumn(_null_flag(column), F.col(column).isNull()) \
                .withColumn(column, F.coalesce(F.col(column), zero))
        if self.micros:
            df = df.withColumn(_MICROS, F.coalesce(F.unix_micros(F.col(self.time)), zero))
        return df, self._replace(columns=tuple(df.columns))

    def grouping(self) -> list:
        """The columns to group by: the keys, then where the long keys are null."""
        return list(self.keys) + [_null_flag(k) for k in self.keys if k in self.longs]

    def key(self, key) -> tuple:
        """A grouping key (:meth:`grouping`) as the key columns' values, a long key's null back."""
        values = list(key[:len(self.keys)])
        flags = iter(key[len(self.keys):])
        for i, name in enumerate(self.keys):
            if name in self.longs:
                values[i] = None if next(flags) else int(values[i])
        return tuple(values)

    def restore(self, frame: pd.DataFrame) -> pd.DataFrame:
        """``frame``'s long columns as they were (nullable Int64), without their null flags."""
        for column in self.longs:
            nulls = frame.pop(_null_flag(column)).to_numpy(np.bool_)
            frame[column] = pd.arrays.IntegerArray(frame[column].to_numpy(np.int64), nulls)
        return frame

    def read(self, rows) -> Tuple[pd.DataFrame, np.ndarray, int]:
        """``(events, times, untimed)``: the rows that have an event time, their columns as they
        were, those times as int64 nanoseconds since the epoch (read by :mod:`winagg.times`), and
        the count of rows without one."""
        frame = pd.concat(list(rows), ignore_index=True)
        frame.columns = list(self.columns)
        timed = frame[self.time].notna().to_numpy()
        untimed = int((~timed).sum())
        if untimed:
            frame = frame[timed].reset_index(drop=True)
        what = f"an event time of column {self.time!r}"
        if self.micros:
            times = datetimes_ns(frame.pop(_MICROS).to_numpy(np.int64).view("datetime64[us]"), what, one=True)
        else:  # a TimestampNTZ column: its wall-clock times, as Spark's watermark reads them
            times = datetimes_ns(time_array(frame[self.time], what)[0], what, one=True)
        return self.restore(frame), times, untimed


def watermark_delay(lateness) -> str:
    """``lateness`` (a duration, read by :func:`winagg.times.duration_ns`) as the delay
    ``withWatermark`` takes. Spark's watermark counts milliseconds: a lateness that is no whole
    number of them, or negative, raises naming ``lateness`` (Spark would truncate it)."""
    nanos = duration_ns(lateness, "lateness")
    if nanos < 0:
        raise SparkInputError(f"lateness must not be negative, got {lateness!r}")
    if nanos % NANOS_PER_MS:
        raise SparkInputError(f"lateness {lateness!r} is not a whole number of milliseconds, the unit of "
                              f"Spark's watermark")
    return f"{nanos // NANOS_PER_MS} milliseconds"


def _watermark(watermark_ms: int):
    """Spark's watermark (milliseconds; 0 before the first) as nanoseconds, or -inf."""
    return watermark_ms * NANOS_PER_MS if watermark_ms > 0 else -math.inf


def _timer_at(end: int) -> int:
    """The timer (milliseconds) that fires once the watermark reaches ``end`` (nanoseconds)."""
    return -(-end // NANOS_PER_MS)


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
                done = key_state.close(_watermark(watermark_ms))
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
            late = times < _watermark(watermark_ms)
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
    keys = _names(partition_by)
    if not keys:
        raise SparkInputError("sliding_stream needs at least one partition_by column")
    _check_columns(df, keys + [order_by], "partition_by/order_by")
    from pyspark.sql.types import StructField, StructType, TimestampNTZType, TimestampType

    if not isinstance(df.schema[order_by].dataType, (TimestampType, TimestampNTZType)):
        raise SparkInputError(f"the event-time column {order_by!r} must be a timestamp, "
                              f"got {df.schema[order_by].dataType.simpleString()}")
    if not aggs:
        raise SparkInputError("aggs is empty: name at least one output column")
    outputs = _outputs(df, aggs)
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
    crossed, crossing = _Crossing.of(df, keys, order_by, df.columns).encode(_watermarked(df, order_by, delay))
    config = {"outputs": outputs, "spans": spans, "keys": keys, "columns": columns,
              "input_schema": input_schema, "crossing": crossing}
    schema = StructType(df.schema.fields + [StructField(o.name, _spark_type(o.arrow_type), True) for o in outputs])
    processor = _processor_class()(config)
    stream = crossed.groupBy(*crossing.grouping()).transformWithStateInPandas(
        processor, with_dropped_column(schema), "Append", "EventTime")
    return observe_dropped(stream)


def _watermarked(df, order_by: str, delay: str):
    """``df`` with the watermark on ``order_by``, its rows still carrying a plain copy of that column.

    The stateful operator drops, uncounted, input rows whose event-time column is
    at or behind the previous micro-batch's watermark; without the event-time mark
    on the column every row reaches the processor, which counts the late ones
    (:class:`~winagg.spark.dropped.DroppedEvents`) or, with ``slide=``, keeps them in the windows not yet reported.
    """
    from pyspark.sql import functions as F

    return df.withWatermark(order_by, delay).withColumn(order_by, F.col(order_by) + F.expr("INTERVAL 0 SECONDS"))


def _arrow_input_type(df, column):
    from .batch import _arrow_type

    return _arrow_type(df.schema[column].dataType)
