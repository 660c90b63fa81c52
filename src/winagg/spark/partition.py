"""Sliding windows over one Spark partition, as a stream of Arrow record batches.

Nothing here needs Spark: :class:`PartitionWindows` takes batches whose rows are
sorted by key and then by the order column and appends one column per
aggregate. Each window is carried from batch to batch (compiled state for the
built-in numeric aggregations, the same algorithm in plain Python for any
other monoid, both run by :mod:`winagg.driver`), so memory is bounded by the window and one batch, not
by the number of rows of a key. :func:`winagg.spark.sliding` runs it inside
``mapInArrow``.

Conventions (those of Spark's window functions):

* null values are skipped; a window without a value gives null (count gives
  0). NaN values are skipped too, as pandas skips them (Spark would propagate
  NaN); a result that is NaN (a sample stddev of one value) becomes null.
* row frames hold the row and the ``rows - 1`` rows before it, in sort order;
* range frames hold the rows whose order value lies in ``[t - span, t]``, so
  rows with equal order values (peers) share one result; rows with a null order
  value sort first and form one group of their own, as in Spark.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, NamedTuple, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import aggregations
from ..aggregations.sketches import stable_key
from ..driver import compiled_driver, python_driver, run
from ..errors import InvalidTimeError
from ..frames import KEY_STARTS, WINDOW_STARTS, RangeFrames, RowFrames
from ..registry import info
from ..rolling import choose_algorithm


def empty_is_null(monoid) -> bool:
    """True when a window without a value gives null: every monoid but the aggregations
    that declare an answer for it (``defined_when_empty``)."""
    return not monoid.defined_when_empty


@dataclass(frozen=True)
class Frame:
    """A row frame (``rows``) or a range frame (``span``, in the order column's units)."""

    rows: Optional[int] = None
    span: Any = None


@dataclass(frozen=True)
class Output:
    """One new column: ``monoid`` over ``column``, answered as ``arrow_type``."""

    name: str
    column: str
    monoid: Any
    arrow_type: pa.DataType


# ---------------------------------------------------------------- column conversion
def _numeric_values(column: pa.Array) -> Optional[np.ndarray]:
    """int64 or float64 values with nulls as 0, or None for a non-numeric column."""
    kind = column.type
    if pa.types.is_integer(kind) or pa.types.is_boolean(kind):
        return pc.fill_null(column.cast(pa.int64()), 0).to_numpy(zero_copy_only=False)
    if pa.types.is_floating(kind) or pa.types.is_decimal(kind):
        return pc.fill_null(column.cast(pa.float64()), 0.0).to_numpy(zero_copy_only=False)
    return None


def _key_values(column: pa.Array) -> np.ndarray:
    """A stable 64-bit key per item (as int64), the same in every process."""
    unique = pc.unique(column)
    keys = np.array([0 if v is None else np.int64(np.uint64(stable_key(v)).view(np.int64))
                     for v in unique.to_pylist()], dtype=np.int64)
    return keys[pc.index_in(column, unique).to_numpy(zero_copy_only=False).astype(np.int64)]


def order_values(column: pa.Array, name: str) -> np.ndarray:
    """The order column ``name`` as int64 (integers, dates in days, timestamps in nanoseconds since
    the epoch, winagg's one time unit) or float64.

    Spark's timestamps (microseconds, years 1 to 9999) outside int64 nanoseconds (1677-09-21 to
    2262-04-11, pandas' range) raise InvalidTimeError naming the column.
    """
    kind = column.type
    if pa.types.is_timestamp(kind):
        column = _timestamp_nanos(column, name)
    elif pa.types.is_date(kind):
        column = column.cast(pa.date32()).cast(pa.int32()).cast(pa.int64())
    elif pa.types.is_integer(kind):
        column = column.cast(pa.int64())
    else:
        column = column.cast(pa.float64())
    return pc.fill_null(column, 0).to_numpy(zero_copy_only=False)


def _timestamp_nanos(column: pa.Array, name: str) -> pa.Array:
    """A timestamp column as int64 nanoseconds since the epoch (nulls stay null)."""
    try:
        return column.cast(pa.timestamp("ns", column.type.tz)).cast(pa.int64())
    except pa.ArrowInvalid:  # a safe cast refuses what int64 nanoseconds cannot hold
        import pandas as pd

        raise InvalidTimeError(f"column {name!r} holds a timestamp outside int64 nanoseconds since the epoch "
                               f"({pd.Timestamp.min} .. {pd.Timestamp.max}), winagg's time unit") from None


def _plain_numbers(column: pa.Array) -> bool:
    return column.null_count == 0 and (pa.types.is_integer(column.type) or pa.types.is_floating(column.type))


def _changes_numpy(current: pa.Array, previous: Optional[pa.Array]) -> np.ndarray:
    """:func:`_changes` of a column without nulls, in numpy: a fifth of the time of Arrow's kernels."""
    values = current.to_numpy()
    flags = np.empty(len(values), np.bool_)
    flags[1:] = values[1:] != values[:-1]
    flags[0] = True if previous is None else bool(previous.to_numpy()[-1] != values[0])
    if values.dtype.kind == "f":
        earlier = np.concatenate((previous.to_numpy()[-1:] if previous is not None else values[:1], values[:-1]))
        flags &= ~(np.isnan(values) & np.isnan(earlier))
        if previous is None:
            flags[0] = True
    return flags


def _changes(current: pa.Array, previous: Optional[pa.Array]) -> np.ndarray:
    """``changes[i]``: row i differs from the row before it (row 0 from ``previous``).

    Nulls equal nulls and NaN equals NaN, as in Spark's grouping.
    """
    if _plain_numbers(current) and (previous is None or _plain_numbers(previous)):
        return _changes_numpy(current, previous)
    column = current if previous is None else pa.concat_arrays([previous, current])
    later, earlier = column.slice(1), column.slice(0, len(column) - 1)
    differs = pc.fill_null(pc.not_equal(later, earlier), False)
    differs = pc.or_(differs, pc.xor(pc.is_null(later), pc.is_null(earlier)))
    if pa.types.is_floating(column.type):
        both_nan = pc.and_(pc.fill_null(pc.is_nan(later), False), pc.fill_null(pc.is_nan(earlier), False))
        differs = pc.and_(differs, pc.invert(both_nan))
    flags = differs.to_numpy(zero_copy_only=False).astype(np.bool_)
    return flags if previous is not None else np.concatenate(([True], flags))


# ---------------------------------------------------------------- one window per output
class _FrameWindow:
    """One output's window, carried across batches: the frame's plans run by the window driver.

    ``driver`` is compiled for the built-in aggregations and runs in Python for any
    other monoid (:mod:`winagg.driver`); the frame's own state (which rows of a row
    frame are in the window, the times of a range frame's items) is kept apart from it.
    """

    def __init__(self, source: "_DriverSource", frame: Frame, time_dtype):
        self.source = source
        self.driver = source.build()
        self.state = self.driver.init(16)
        self.rows = frame.rows is not None
        self.frames = RowFrames(frame.rows) if self.rows else RangeFrames(frame.span, time_dtype)

    # A streaming key keeps its windows between micro-batches as pickled state: the compiled
    # driver is not state, and the process that loads the window looks it up again.
    def __getstate__(self):
        state = dict(self.__dict__)
        del state["driver"]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.driver = self.source.build()

    def step(self, values, valid, reset, group_start, times):
        if self.rows:
            plan = self.frames.plan(valid, reset)
        else:
            plan = self.frames.plan(valid, reset, group_start, times)
        out, counts, self.state = run(self.driver, values, plan, self.state, want_counts=True)
        if not self.rows:  # peers share the answer given at their group's last row
            out, counts = self.frames.spread(out), self.frames.spread(counts)
        return out, counts


# ---------------------------------------------------------------- the partition
class PartitionWindows:
    """Appends the ``outputs`` to batches sorted by ``keys`` then ``order``.

    Call it with an iterator of record batches (all rows of several keys, each
    key's rows contiguous and sorted); it yields the same rows, in the same
    order, with one more column per output. A range frame holds back the last
    group of peers of a batch until the next batch shows whether it goes on.
    The object is cheap to pickle: kernels are looked up in the process that
    runs it.
    """

    def __init__(self, keys, order: str, frame: Frame, outputs, algorithm: Optional[str] = None):
        self.keys, self.order, self.frame = list(keys), order, frame
        self.outputs, self.algorithm = list(outputs), algorithm

    # The per-call state lives in a fresh PartitionRun, so one instance serves many partitions.
    def __call__(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return PartitionRun(self).batches(batches)


class PartitionRun:
    """One pass of :class:`PartitionWindows` over a partition's batches, its windows carried
    from batch to batch (and, pickled, from one process to another)."""

    def __init__(self, spec: PartitionWindows):
        self.spec = spec
        self.windows: dict = {}
        self.previous: Optional[pa.RecordBatch] = None  # the last row processed: keys and order
        self.held: Optional[pa.RecordBatch] = None  # a group of peers that may go on

    def batches(self, batches):
        for batch in batches:
            if self.held is not None:
                batch = pa.concat_batches([self.held, batch.select(self.held.schema.names)]) \
                    if batch.num_rows else self.held
                self.held = None
            done = self._process(batch, final=False)
            if done is not None:
                yield done
        if self.held is not None:
            done = self._process(self.held, final=True)
            self.held = None
            if done is not None:
                yield done

    def complete(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """``batch`` with the outputs, when no later row can be a peer of its last (a range frame
        holds back nothing): the streaming windows' step once the watermark has passed it."""
        return self._process(batch, final=True)

    def _flags(self, batch):
        spec = self.spec
        previous = self.previous
        new_key = np.zeros(batch.num_rows, np.bool_)
        for name in spec.keys:
            new_key |= _changes(batch.column(name), None if previous is None else previous.column(name))
        if not spec.keys and previous is None:
            new_key[0] = True
        reset = np.where(new_key, np.int8(KEY_STARTS), np.int8(0))
        if spec.frame.rows is not None:
            return reset, new_key
        order = batch.column(spec.order)
        group_start = new_key | _changes(order, None if previous is None else previous.column(spec.order))
        # Rows with a null order value are one group of their own, before the others: a
        # fresh window starts at the first non-null row after them.
        nulls = order.is_null().to_numpy(zero_copy_only=False)
        was_null = np.concatenate(([previous is not None and previous.column(spec.order)[0].is_valid is False],
                                   nulls[:-1]))
        reset[(reset == 0) & was_null & ~nulls] = WINDOW_STARTS
        return reset, group_start

    def _process(self, batch, final):
        spec = self.spec
        n = batch.num_rows
        if n == 0:
            return self._with_outputs(batch, [])
        reset, group_start = self._flags(batch)
        if spec.frame.rows is None and not final:
            last_group = int(np.flatnonzero(group_start)[-1])
            self.held = batch.slice(last_group)
            if last_group == 0:
                return None
            batch, reset, group_start = batch.slice(0, last_group), reset[:last_group], group_start[:last_group]
            n = last_group
        times = order_values(batch.column(spec.order), spec.order) if spec.frame.rows is None else None
        columns = [self._output(o, batch, reset, group_start, times) for o in spec.outputs]
        tail = batch.slice(n - 1)
        self.previous = tail.select(spec.keys + ([spec.order] if spec.order not in spec.keys else []))
        return self._with_outputs(batch, columns)

    def _with_outputs(self, batch, columns):
        if not columns:
            columns = [pa.nulls(batch.num_rows, o.arrow_type) for o in self.spec.outputs]
        names = batch.schema.names + [o.name for o in self.spec.outputs]
        return pa.RecordBatch.from_arrays(batch.columns + columns, names=names)

    def _window(self, output: Output, column: pa.Array):
        """The window of ``output``, made at its first batch, and how its values are prepared."""
        if output.name not in self.windows:
            self.windows[output.name] = _make_window(output, column.type, self.spec)
        return self.windows[output.name]

    def _output(self, output, batch, reset, group_start, times):
        column = batch.column(output.column)
        window, prepare = self._window(output, column)
        valid = _present(column)
        values = prepare(column)
        out, counts = window.step(values, valid, reset, group_start, times)
        return _to_arrow(out, counts, output, column.type)


def _present(column: pa.Array) -> np.ndarray:
    """True where a value is there: not null and, in a float column, not NaN.

    NaN is a missing value everywhere in winagg (``rolling``, the aggregators, ``Window``), as
    in pandas; Spark's own sum and avg would propagate it, winagg's windows skip it as null.
    """
    valid = column.is_valid()
    if pa.types.is_floating(column.type):
        valid = pc.and_(valid, pc.invert(pc.fill_null(pc.is_nan(column), True)))
    return valid.to_numpy(zero_copy_only=False).astype(np.bool_)


def _is_numeric(kind: pa.DataType) -> bool:
    return (pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind)
            or pa.types.is_decimal(kind))


def compiled_plan(monoid, input_type: pa.DataType):
    """``(spec, keyed)``: the compiled description for this input, or ``(None, False)``.

    Numbers run compiled (as int64 or float64); any other input does only for
    the aggregations that need just a stable key per item (``keyed``).
    """
    if not isinstance(monoid, aggregations.Aggregation):
        return None, False
    if _is_numeric(input_type):
        integral = pa.types.is_integer(input_type) or pa.types.is_boolean(input_type)
        return monoid.compiled_for(np.dtype(np.int64 if integral else np.float64)), False
    if monoid.keyed_input:
        return monoid.compiled_for(np.dtype(np.int64)), True
    return None, False


_SAMPLES = ((pa.types.is_boolean, True), (pa.types.is_integer, 1), (pa.types.is_floating, 1.0),
            (pa.types.is_string, "a"), (pa.types.is_large_string, "a"))


def result_type(monoid, input_type: pa.DataType) -> Optional[pa.DataType]:
    """The Arrow type of ``monoid``'s answers over ``input_type``, or None if it cannot be told.

    Compiled aggregations answer in their output dtype, except min, max,
    first and last, which keep the input's type as Spark's do. Any other monoid
    is asked: the type of the lowered lift of a sample item.
    """
    spec, keyed = compiled_plan(monoid, input_type)
    if spec is not None:
        if monoid.keeps_input_type and not keyed:
            return input_type
        return pa.from_numpy_dtype(spec.out_dtype)
    sample = next((value for test, value in _SAMPLES if test(input_type)), None)
    if sample is None:
        return None
    try:
        answer = monoid.lower(monoid.lift((sample, 0) if getattr(monoid, "positional", False) else sample))
        kind = pa.array([answer]).type
    except Exception:
        return None
    return None if pa.types.is_null(kind) else kind


def _make_window(output: Output, input_type: pa.DataType, spec: PartitionWindows):
    compiled, keyed = compiled_plan(output.monoid, input_type)
    integral = keyed or pa.types.is_integer(input_type) or pa.types.is_boolean(input_type)
    name = spec.algorithm or choose_algorithm(compiled, integral)
    time_dtype = None
    if spec.frame.rows is None:
        time_dtype = np.float64 if isinstance(spec.frame.span, float) else np.int64
    if compiled is not None:
        prepare = _key_values if keyed else _numeric_values
        source = _DriverSource(name, output.monoid, np.dtype(np.int64) if integral else np.dtype(np.float64))
        return _FrameWindow(source, spec.frame, time_dtype), prepare
    return _FrameWindow(_DriverSource(name, output.monoid, None), spec.frame, time_dtype), _python_values


class _DriverSource(NamedTuple):
    """What a window's driver is made from: ``algorithm`` over ``monoid``, compiled for
    ``dtype`` values, or in plain Python when ``dtype`` is None."""

    algorithm: str
    monoid: Any
    dtype: Optional[np.dtype]

    def build(self):
        if self.dtype is None:
            return python_driver(info(self.algorithm), self.monoid)
        return compiled_driver(info(self.algorithm), self.monoid.compiled_for(self.dtype))


def _python_values(column: pa.Array) -> np.ndarray:
    """The column's values as Python objects, one per row (lists and structs stay single items)."""
    items = column.to_pylist()
    values = np.empty(len(items), dtype=object)
    for i, item in enumerate(items):
        values[i] = item
    return values


def _to_arrow(out, counts, output: Output, input_type) -> pa.Array:
    """The results as an Arrow column of the output's type, null where Spark gives null."""
    null_when_empty = empty_is_null(output.monoid)
    if isinstance(out, np.ndarray):
        mask = (counts == 0) if null_when_empty else np.zeros(len(out), np.bool_)
        if out.dtype.kind == "f":
            mask = mask | np.isnan(out)
        if mask.any():
            out = np.where(mask, np.zeros(1, out.dtype), out)  # hide identities like +inf
        array = pa.array(out, mask=mask)
        return array if array.type == output.arrow_type else array.cast(output.arrow_type)
    results = [None if (null_when_empty and count == 0) or (isinstance(r, float) and math.isnan(r)) else r
               for r, count in zip(out, counts)]
    return pa.array(results, type=output.arrow_type)
