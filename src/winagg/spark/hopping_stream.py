"""Hopping windows in Spark Structured Streaming: :func:`~winagg.spark.streaming.sliding_stream`
with ``slide=``.

Keys are hashed into :data:`KEY_BUCKETS` buckets and the stateful operator runs once per bucket
and micro-batch. When every output is count, sum, mean, max or min of a number, rows become
panes before the operator and a bucket keeps its keys' panes as arrays
(:class:`~winagg.spark.panes.PaneWindows`); otherwise a bucket keeps a
:class:`~winagg.spark.hopping.HoppingWindows` per key, each in its own entry of a map state.

Spark's ``window()`` takes a row into those of its windows that end after the watermark of the
previous micro-batch (the one Spark filters late rows by); a processor is told only the current
one. So each bucket keeps the watermark of its last call and is called in every micro-batch
that moves the watermark (a timer just past it), from the query's first micro-batch on (the
query's initial state names every bucket). A bucket's windows not yet reported are then exactly
those that still take rows, for a key it has held since the start and for a key it meets now.
"""

from __future__ import annotations

import math
import pickle
import zlib
from collections.abc import Mapping
from typing import Iterator, Optional, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa

from ..engine.plans import in_a_hopping_window
from ..times import timestamps
from .. import aggregations
from ._common import SparkInputError, checked_format, spark_type
from .batch import range_span
from .partition import compiled_plan, exact_sum_input
from .dropped import DroppedEvents, dropped_row, observe_dropped, with_dropped_column, with_no_count
from .partition import Output
from .stream_inputs import Crossing, watermark_at, watermarked

#: How many buckets the keys of a hopping stream are hashed into: the stateful operator runs once
#: per bucket and micro-batch, not once per key, and each call costs a state read and write and a
#: timer whatever the bucket holds, so few buckets (enough to spread over the stateful operator's
#: partitions) are cheaper than many. Read when sliding_stream is called and kept in every bucket's
#: state: a checkpoint resumed with another count fails, naming both.
KEY_BUCKETS = 8
#: The layout of a per-key bucket's clock (:class:`_Clock`); a checkpoint with another is refused.
CLOCK_FORMAT = 1


def _heartbeat(handle, bucket, watermark_ms: int, expired: Optional[int]) -> None:
    """Move ``bucket``'s timer (``bucket.timer``, ms) to fire in the first micro-batch whose
    watermark is past ``watermark_ms``; ``expired`` is the timer that fired this call, if any
    (Spark has dropped it already)."""
    timer = max(int(watermark_ms), 0) + 1
    if timer != bucket.timer:
        if bucket.timer is not None and bucket.timer != expired:
            handle.deleteTimer(bucket.timer)
        handle.registerTimer(timer)
        bucket.timer = timer


def _bucket(keys, buckets: int):
    from pyspark.sql import functions as F

    return F.pmod(F.xxhash64(*keys), F.lit(int(buckets))).cast("int")


def _initial_buckets(df, buckets: int):
    """The query's initial state: one row per bucket, so every bucket has a state (and its clock)
    from the first micro-batch on."""
    from pyspark.sql import functions as F

    from .panes import BUCKET_COLUMN

    return df.sparkSession.range(int(buckets)).select(F.col("id").cast("int").alias(BUCKET_COLUMN)) \
        .groupBy(BUCKET_COLUMN)


def _bucket_count_error(kept: int, wanted: int) -> SparkInputError:
    return SparkInputError(
        f"this checkpoint's hopping windows hash keys into {kept} buckets, the query into {wanted}: resume it "
        f"with winagg.spark.hopping_stream.KEY_BUCKETS = {kept} set before sliding_stream is called, or start "
        f"from a new checkpoint")


# ---------------------------------------------------------------- pane-combinable outputs
def _pane_processor_class():
    from pyspark.sql.streaming import StatefulProcessor

    from .panes import BUCKET_COLUMN, PaneWindows

    class PaneProcessor(StatefulProcessor):
        """transformWithStateInPandas processor: a :class:`PaneWindows` per bucket of keys.

        Per call: one state read, one write, and the timer moved just past the watermark.
        """

        def __init__(self, config):
            self.config = config

        def init(self, handle) -> None:
            self.handle = handle
            self.state = handle.getValueState("panes", "blob binary")

        def _load(self) -> "PaneWindows":
            c = self.config
            stored = self.state.get()
            if stored is None:
                return PaneWindows(c["outputs"], c["size"], c["slide"], c["keys"], c["parts"], c["key_fields"],
                                   c["buckets"])
            windows = pickle.loads(stored[0]).bind(c["outputs"], c["key_fields"])
            if [tuple(part) for part in windows.parts] != [tuple(part) for part in c["parts"]]:
                raise SparkInputError(
                    f"this checkpoint's hopping panes keep the numbers {[p[:2] for p in windows.parts]}, the query "
                    f"needs {[p[:2] for p in c['parts']]} (a sum or mean of a long column keeps the exact int64 "
                    f"halves 'high' and 'low', not a float64 'sum'): start the query from a new checkpoint")
            if windows.buckets != c["buckets"]:
                raise _bucket_count_error(windows.buckets, c["buckets"])
            return windows

        def _step(self, windows, panes, watermark_ms, expired=None) -> Iterator[pd.DataFrame]:
            c = self.config
            closed, dropped = windows.step(panes, watermark_at(watermark_ms))
            _heartbeat(self.handle, windows, watermark_ms, expired)
            self.state.update((pickle.dumps(windows, protocol=pickle.HIGHEST_PROTOCOL),))
            if closed is not None and closed.num_rows:
                yield with_no_count(_pane_frame(closed, c))
            if dropped:
                yield dropped_row(dropped, c["columns"])

        def handleInitialState(self, key, initialState, timerValues) -> None:
            for _ in self._step(self._load(), None, timerValues.getCurrentWatermarkInMs()):
                pass  # a new bucket closes nothing

        def handleInputRows(self, key, rows, timerValues) -> Iterator[pd.DataFrame]:
            c = self.config
            frame = pd.concat(list(rows), ignore_index=True)
            # by position (Spark renames some of them): the pane step's columns, the long keys' null
            # flags, then the bucket
            crossing = c["crossing"]
            frame.columns = list(crossing.columns) + [BUCKET_COLUMN]
            frame = crossing.restore(frame.drop(columns=BUCKET_COLUMN))
            panes = pa.Table.from_pandas(frame, schema=c["pane_schema"], preserve_index=False, nthreads=1)
            yield from self._step(self._load(), panes, timerValues.getCurrentWatermarkInMs())

        def handleExpiredTimer(self, key, timerValues, expiredTimerInfo) -> Iterator[pd.DataFrame]:
            yield from self._step(self._load(), None, timerValues.getCurrentWatermarkInMs(),
                                  expiredTimerInfo.getExpiryTimeInMs())

        def close(self) -> None:
            pass

    return PaneProcessor


def _pane_frame(closed: pa.Table, config) -> pd.DataFrame:
    """The closed windows as the pandas frame Spark converts back (nulls as None or NaN)."""
    from .hopping import WINDOW_COLUMNS

    frame = {}
    for name in config["columns"]:
        column = closed.column(name)
        if name in WINDOW_COLUMNS:  # int64 nanoseconds, never null
            frame[name] = timestamps(column.to_numpy(), None if config["ntz"] else "UTC")
        elif column.null_count == 0 and (pa.types.is_integer(column.type) or pa.types.is_floating(column.type)):
            frame[name] = column.to_numpy()
        else:
            frame[name] = pd.Series(column.to_pylist(), dtype=object)
    return pd.DataFrame(frame)


def _result(df, keys, order_by, time_type, outputs) -> tuple:
    """``(columns, needed, schema)`` of a hopping stream: its result's column names, the input
    columns it reads, and the result's Spark schema (keys, window bounds of the event time's type,
    outputs)."""
    from pyspark.sql.types import StructField, StructType

    from .hopping import WINDOW_COLUMNS

    columns = keys + list(WINDOW_COLUMNS) + [o.name for o in outputs]
    needed = list(dict.fromkeys(keys + [order_by] + [o.column for o in outputs]))
    schema = StructType([df.schema[k] for k in keys] + [StructField(c, time_type, True) for c in WINDOW_COLUMNS]
                        + [StructField(o.name, spark_type(o.arrow_type), True) for o in outputs])
    return columns, needed, schema


def pane_stream(df, keys, order_by, size_ns, slide_ns, outputs, delay, parts, time_type, buckets):
    """:func:`sliding_stream` with ``slide=`` and pane-combinable outputs: rows become panes before
    the stateful operator, which keeps every bucket's panes as arrays."""
    from pyspark.sql.pandas.types import from_arrow_schema
    from pyspark.sql.types import TimestampNTZType

    from ._common import arrow_type
    from .panes import BUCKET_COLUMN, PaneCombine, pane_schema

    dropped = DroppedEvents(df.sparkSession)
    key_fields = [pa.field(k, arrow_type(df.schema[k].dataType)) for k in keys]
    schema = pane_schema(key_fields, parts)
    pane = math.gcd(size_ns, slide_ns)
    combine = PaneCombine(keys, order_by, pane, parts, schema)
    columns, needed, out_schema = _result(df, keys, order_by, time_type, outputs)
    # rows without a time are counted here: the panes that cross carry none
    timed = dropped.observe_untimed(df.select(*needed), order_by)
    pane_rows = timed.withWatermark(order_by, delay).mapInArrow(combine, from_arrow_schema(schema))
    # grouped by bucket: the keys are values
    crossed, crossing = Crossing.of(pane_rows, (), None, keys).encode(pane_rows)
    config = {"outputs": outputs, "size": size_ns, "slide": slide_ns, "keys": keys, "parts": parts,
              "key_fields": key_fields, "columns": columns,
              "ntz": isinstance(time_type, TimestampNTZType), "pane_schema": schema, "buckets": int(buckets),
              "crossing": crossing}
    # The bucket is a function of the keys: added to the panes, not to every row that crosses into Python
    # (each column that crosses is converted row by row there).
    panes = crossed.withColumn(BUCKET_COLUMN, _bucket(keys, buckets))
    stream = panes.groupBy(BUCKET_COLUMN).transformWithStateInPandas(
        _pane_processor_class()(config), with_dropped_column(out_schema), "Append", "EventTime",
        initialState=_initial_buckets(df, buckets))
    return observe_dropped(stream, dropped)


# ---------------------------------------------------------------- per-key trees
class _Clock:
    """What a bucket of per-key hopping windows keeps beside its keys' windows: the watermark of
    its last call (``seen``, nanoseconds or -inf), the end of the next window to close of every
    key that holds rows (``due``, by map key), the timer registered and the bucket count."""

    def __init__(self, buckets: int):
        self.format = CLOCK_FORMAT
        self.buckets = buckets
        self.seen = -math.inf
        self.due: dict = {}
        self.timer: Optional[int] = None


def _map_key(key_row: pd.DataFrame) -> bytes:
    """A key's entry in its bucket's map state: the key columns' values, the same bytes for the
    same key in every micro-batch (NaN one value, a null apart from it, as Spark groups them)."""
    values = []
    for name in key_row.columns:
        value = key_row[name].iloc[0]
        if value is None or value is pd.NA or value is pd.NaT:
            value = None
        elif isinstance(value, (float, np.floating)) and math.isnan(value):
            value = ("NaN",)
        elif isinstance(value, pd.Timestamp):
            value = ("timestamp", int(value.value), str(value.tz))
        elif isinstance(value, np.generic):
            value = value.item()
        values.append(value)
    return pickle.dumps(tuple(values), protocol=4)


def _key_processor_class():
    from pyspark import cloudpickle
    from pyspark.sql.streaming import StatefulProcessor

    from .hopping import WINDOW_COLUMNS, HoppingWindows, key_text
    from .panes import BUCKET_COLUMN

    class HoppingProcessor(StatefulProcessor):
        """transformWithStateInPandas processor: a bucket of keys, a :class:`HoppingWindows` per key.

        A key's windows live in the bucket's map state while they hold rows; a key met anew
        starts at the bucket's clock, as if it had been there all along.
        """

        def __init__(self, config):
            self.config = config

        def init(self, handle) -> None:
            self.handle = handle
            self.clock_state = handle.getValueState("clock", "blob binary")
            self.windows = handle.getMapState("windows", "key binary", "blob binary")

        def _clock(self) -> _Clock:
            stored = self.clock_state.get()
            if stored is None:
                return _Clock(self.config["buckets"])
            clock = checked_format(pickle.loads(stored[0]), CLOCK_FORMAT, "hopping bucket clock")
            if clock.buckets != self.config["buckets"]:
                raise _bucket_count_error(clock.buckets, self.config["buckets"])
            return clock

        def _key_windows(self, entry: bytes, key_row: Optional[pd.DataFrame]):
            """``(windows, key_row)`` of a key: kept, or new (no window reported yet)."""
            c = self.config
            stored = self.windows.getValue((entry,))
            if stored is not None:
                windows, key_row = pickle.loads(zlib.decompress(stored[0]))
                return windows.bind(c["outputs"]), key_row
            windows = HoppingWindows(c["outputs"], c["size"], c["slide"], c["keyed_columns"], c["long_columns"])
            return windows, key_row

        def _keep(self, entry: bytes, windows, key_row, clock: _Clock) -> None:
            end = windows.next_end()
            if end is None:  # no pane with rows is left: the key starts anew at the clock next time
                self.windows.removeKey((entry,))
                clock.due.pop(entry, None)
                return
            # cloudpickle: a user monoid may come from a module this process cannot import
            blob = cloudpickle.dumps((windows, key_row), protocol=pickle.HIGHEST_PROTOCOL)
            self.windows.updateValue((entry,), (zlib.compress(blob, 1),))
            clock.due[entry] = end

        def _emit(self, closed: Optional[pa.Table], key_row: pd.DataFrame) -> Iterator[pd.DataFrame]:
            c = self.config
            if closed is None or not closed.num_rows:
                return
            frame = key_row.iloc[np.zeros(closed.num_rows, np.int64)].reset_index(drop=True)
            for name in WINDOW_COLUMNS:
                frame[name] = timestamps(closed.column(name).to_numpy(), None if c["ntz"] else "UTC")
            for output in c["outputs"]:
                frame[output.name] = pd.Series(closed.column(output.name).to_pylist(), dtype=object)
            yield with_no_count(frame[c["columns"]])

        def _run(self, rows, watermark_ms: int, expired: Optional[int] = None) -> Iterator[pd.DataFrame]:
            c = self.config
            keys = c["keys"]
            watermark = watermark_at(watermark_ms)
            clock = self._clock()
            stepped = set()
            if rows is not None:
                events, times, dropped = c["crossing"].read(rows)
                events = events.drop(columns=BUCKET_COLUMN)
                groups = events.groupby(keys, dropna=False, sort=False).indices if len(events) else {}
                for where in groups.values():
                    key_row = events.iloc[where[:1]][keys].reset_index(drop=True)
                    entry = _map_key(key_row)
                    windows, key_row = self._key_windows(entry, key_row)
                    # caught up with the bucket's clock: a key met anew, or kept but not called since
                    # the watermark last moved, has windows Spark counts as reported (none holding
                    # a row of the key: no answer is due), marked so before its rows come in
                    yield from self._emit(windows.step(None, None, clock.seen, self._key_text(key_row)), key_row)
                    mine = times[where]
                    # as Spark's window(): a row still counts in the windows not yet reported; it is
                    # late (dropped, counted) when every window holding it has been reported, and a
                    # row between two windows (slide > size) behind them is in none: not late
                    behind = mine < windows.first_open()
                    dropped += int((behind & in_a_hopping_window(mine, windows.size, windows.slide)).sum())
                    closed = windows.step(events.iloc[where[~behind]].reset_index(drop=True), mine[~behind],
                                          watermark, self._key_text(key_row))
                    self._keep(entry, windows, key_row, clock)
                    stepped.add(entry)
                    yield from self._emit(closed, key_row)
                if dropped:
                    yield dropped_row(dropped, c["columns"])
            for entry, end in list(clock.due.items()):
                if entry not in stepped and end <= watermark:
                    windows, key_row = self._key_windows(entry, None)
                    closed = windows.step(None, None, watermark, self._key_text(key_row))
                    self._keep(entry, windows, key_row, clock)
                    yield from self._emit(closed, key_row)
            clock.seen = max(clock.seen, watermark)
            _heartbeat(self.handle, clock, watermark_ms, expired)
            self.clock_state.update((pickle.dumps(clock, protocol=pickle.HIGHEST_PROTOCOL),))

        def _key_text(self, key_row: pd.DataFrame) -> str:
            return key_text(self.config["keys"], [key_row[k].iloc[0] for k in self.config["keys"]])

        def handleInitialState(self, key, initialState, timerValues) -> None:
            for _ in self._run(None, timerValues.getCurrentWatermarkInMs()):
                pass  # a new bucket holds no window

        def handleInputRows(self, key, rows, timerValues) -> Iterator[pd.DataFrame]:
            yield from self._run(rows, timerValues.getCurrentWatermarkInMs())

        def handleExpiredTimer(self, key, timerValues, expiredTimerInfo) -> Iterator[pd.DataFrame]:
            yield from self._run(None, timerValues.getCurrentWatermarkInMs(), expiredTimerInfo.getExpiryTimeInMs())

        def close(self) -> None:
            pass

    return HoppingProcessor


def hopping_stream(df, keys, order_by, size, slide, outputs, delay):
    """:func:`sliding_stream` with ``slide=``."""
    from pyspark.sql.types import TimestampNTZType

    from ._common import arrow_type
    from .batch import hopping_spans
    from .hopping import WINDOW_COLUMNS
    from .panes import BUCKET_COLUMN, pane_parts
    from .partition import Frame

    if isinstance(size, Mapping):
        raise SparkInputError("with slide=, range is one window size for every output, not a mapping")
    time_type = df.schema[order_by].dataType
    size_ns, slide_ns = hopping_spans(df, [order_by], Frame(span=range_span(size, time_type)), size, slide)
    taken = set(keys) | set(WINDOW_COLUMNS)
    clash = [o.name for o in outputs if o.name in taken]
    if clash:
        raise SparkInputError(f"output column {clash[0]!r} is also a key or window column of the hopping result")
    buckets = KEY_BUCKETS
    parts = pane_parts(outputs, {o.column: arrow_type(df.schema[o.column].dataType) for o in outputs})
    if parts is not None:
        return pane_stream(df, keys, order_by, size_ns, slide_ns, outputs, delay, parts, time_type, buckets)
    compile_kernels(outputs)
    keyed = {o.column for o in outputs if compiled_plan(o.monoid, arrow_type(df.schema[o.column].dataType))[1]}
    longs = {o.column for o in outputs if exact_sum_input(o.monoid, arrow_type(df.schema[o.column].dataType))}
    columns, needed, schema = _result(df, keys, order_by, time_type, outputs)
    # the bucket from the keys as they are (a null long key apart from 0), before they cross
    bucketed = watermarked(df.select(*needed), order_by, delay).withColumn(BUCKET_COLUMN, _bucket(keys, buckets))
    crossed, crossing = Crossing.of(df, keys, order_by, needed).encode(bucketed)
    config = {"outputs": outputs, "size": size_ns, "slide": slide_ns, "keys": keys, "columns": columns,
              "keyed_columns": keyed, "long_columns": longs, "buckets": int(buckets),
              "ntz": isinstance(time_type, TimestampNTZType), "crossing": crossing}
    stream = crossed.groupBy(BUCKET_COLUMN).transformWithStateInPandas(
        _key_processor_class()(config), with_dropped_column(schema), "Append", "EventTime",
        initialState=_initial_buckets(df, buckets))
    return observe_dropped(stream)


def compile_kernels(outputs: Sequence[Output]) -> None:
    """Compile (or load from numba's disk cache) every kernel the per-key trees of ``outputs`` run.

    Called on the driver before a query starts, for the reason :func:`warm_up_key_state`
    gives: FiBA's batch step over int64 times and the compaction that pickling a state runs,
    for every output and the non-null counts, each a FiBA tree of its own (the slowest
    kernels winagg compiles). Panes need none: they are combined with numpy.
    """
    from ..engine.range_batches import compact_kernel, compiled_batches

    from .hopping import tree_spec

    specs = [aggregations.get("count").compiled_for(np.dtype(np.float64))]
    specs += [tree_spec(o.monoid) for o in outputs]
    empty, none = np.empty(0, np.float64), np.empty(0, np.int64)
    for spec in {s.key: s for s in specs if s is not None}.values():
        batches = compiled_batches(spec, "int64")
        (bufs, st), _ = batches.run(batches.fresh(), none, empty, none, none, none, False, np.int64(0))
        compact_kernel(spec, "int64")(bufs, st, none)
