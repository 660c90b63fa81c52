"""Sliding windows over one Spark partition, as a stream of Arrow record batches.

Nothing here needs Spark: :class:`PartitionWindows` takes batches whose rows are
sorted by key and then by the order column and appends one column per
aggregate. Each window is carried from batch to batch (compiled state for the
built-in numeric aggregations, the same algorithm in plain Python for any
other monoid, both run by :mod:`winagg.engine.loops`), so memory is bounded by the window and one batch, not
by the number of rows of a key. :func:`winagg.spark.sliding` runs it as a scalar
Arrow iterator UDF (:meth:`PartitionWindows.answers`: only the columns it reads
cross to Python, only the answers come back).

Conventions (those of Spark's window functions):

* null values are skipped; a window without a value gives null (count gives
  0). NaN values are skipped too, as pandas skips them (Spark would propagate
  NaN); a result that is NaN (a sample stddev of one value) becomes null.
* row frames hold the row and the ``rows - 1`` rows before it, in sort order;
* range frames hold the rows whose order value lies in ``[t - span, t]``, so
  rows with equal order values (peers) share one result; rows with a null order
  value sort first and form one group of their own, as in Spark.
* the sum of a long column is a long and is exact, or raises OverflowError naming
  the output column and the row's key and order value when it is outside int64
  (Spark's ANSI sum raises too; it never wraps around); the mean of a long column
  is the correctly rounded quotient of the exact sum (:class:`ExactSums`).
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
from ..engine.kernels import compiled_driver, compiled_spec, python_driver
from ..engine.loops import run
from ..engine.frames import KEY_STARTS, WINDOW_STARTS, RangeFrames, RowFrames
from ..algos.registry import info
from ..algos.registry import choose_algorithm
from ..times import datetimes_ns, time_array, timestamp


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
        return _numpy_as(column, pa.int64())
    if pa.types.is_floating(kind) or pa.types.is_decimal(kind):
        return _numpy_as(column, pa.float64())
    return None


def _numpy_as(column: pa.Array, kind: pa.DataType) -> np.ndarray:
    """``column`` cast to ``kind`` as numpy, nulls as 0. A column of that type without nulls (what
    Spark's batches mostly hold) is viewed, not copied: no cast or fill kernel runs."""
    if column.type != kind:
        column = column.cast(kind)
    if column.null_count:
        column = pc.fill_null(column, pa.scalar(0, kind))
    return column.to_numpy(zero_copy_only=False)


def key_values(column: pa.Array) -> np.ndarray:
    """A stable 64-bit key per item (as int64), the same in every process."""
    unique = pc.unique(column)
    keys = np.array([0 if v is None else np.int64(np.uint64(stable_key(v)).view(np.int64))
                     for v in unique.to_pylist()], dtype=np.int64)
    return keys[pc.index_in(column, unique).to_numpy(zero_copy_only=False).astype(np.int64)]


def order_values(column: pa.Array, name: str) -> np.ndarray:
    """The order column ``name`` as int64 (integers, dates in days, timestamps in nanoseconds since
    the epoch, winagg's one time unit) or float64; nulls as 0.

    Timestamps (any unit, with or without a zone) are read by :mod:`winagg.times`: one that int64
    nanoseconds cannot hold (Spark's reach years 1 to 9999; nanoseconds 1677-09-21 to
    2262-04-11, pandas' range) raises InvalidTimeError naming the column and the value.
    """
    kind = column.type
    if pa.types.is_timestamp(kind):
        return timestamp_nanos(column, name)
    if pa.types.is_date(kind):
        return _numpy_as(column.cast(pa.date32()).cast(pa.int32()), pa.int64())
    return _numpy_as(column, pa.int64() if pa.types.is_integer(kind) else pa.float64())


def timestamp_nanos(column: pa.Array, name: str) -> np.ndarray:
    """An Arrow timestamp column as int64 nanoseconds since the epoch (UTC-based, as Arrow keeps a
    zoned column), nulls as 0, through :func:`winagg.times.time_array` and
    :func:`~winagg.times.datetimes_ns`."""
    if column.null_count:
        column = pc.fill_null(column, pa.scalar(0, column.type))
    what = f"a timestamp of column {name!r}"  # a row of a batch means nothing to the user: its value does
    times, _ = time_array(column, what)
    return datetimes_ns(times, what, one=True)


def _plain_numbers(column: pa.Array) -> bool:
    return column.null_count == 0 and (pa.types.is_integer(column.type) or pa.types.is_floating(column.type))


def _changes_numpy(current: pa.Array, previous: Optional[pa.Array]) -> np.ndarray:
    """:func:`changes` of a column without nulls, in numpy: a fifth of the time of Arrow's kernels."""
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


def changes(current: pa.Array, previous: Optional[pa.Array]) -> np.ndarray:
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
    other monoid (:mod:`winagg.engine.loops`); the frame's own state (which rows of a row
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

    def _plan(self, valid, reset, group_start, times):
        if self.rows:
            return self.frames.plan(valid, reset)
        return self.frames.plan(valid, reset, group_start, times)

    def step(self, values, valid, reset, group_start, times):
        plan = self._plan(valid, reset, group_start, times)
        out, counts, self.state = run(self.driver, values, plan, self.state, want_counts=True)
        if not self.rows:  # peers share the answer given at their group's last row
            out, counts = self.frames.spread(out), self.frames.spread(counts)
        return out, counts


class _ExactSumWindow(_FrameWindow):
    """The exact window sums of an int64 column: one int64 sum window of each value's high 32
    bits and one of its low 32 bits, over the same plan (:meth:`ExactSums.from_halves`).

    Neither half's window sum can leave int64 (below 2**31 values a window), so the
    halves are exact whatever the algorithm does on the way (subtract-on-evict's running
    total included), and so is their combination, where a single int64 total would wrap.
    """

    def __init__(self, source: "_DriverSource", frame: Frame, time_dtype):
        super().__init__(source, frame, time_dtype)
        self.low_state = self.driver.init(16)

    def step(self, values, valid, reset, group_start, times):
        plan = self._plan(valid, reset, group_start, times)
        high, counts, self.state = run(self.driver, values >> 32, plan, self.state, want_counts=True)
        low, _, self.low_state = run(self.driver, values & _LOW_BITS, plan, self.low_state)
        if not self.rows:
            high, low, counts = self.frames.spread(high), self.frames.spread(low), self.frames.spread(counts)
        return ExactSums.from_halves(high, low), counts


# ---------------------------------------------------------------- exact sums of longs
_LOW_BITS = np.int64(0xFFFFFFFF)
_PIECE_BITS = np.int64((1 << 21) - 1)


class ExactSums(NamedTuple):
    """Window sums of int64 values, exactly, in or out of int64: ``top * 2**32 + low``, with
    ``0 <= low < 2**32`` (so ``top`` is the sum shifted right by 32 bits)."""

    top: np.ndarray
    low: np.ndarray

    @classmethod
    def from_halves(cls, high: np.ndarray, low: np.ndarray) -> "ExactSums":
        """From the sums of ``x >> 32`` (``high``) and of ``x & 0xFFFFFFFF`` (``low``)."""
        return cls(high + (low >> 32), low & _LOW_BITS)

    @classmethod
    def from_pieces(cls, top: np.ndarray, middle: np.ndarray, bottom: np.ndarray) -> "ExactSums":
        """From the float64 sums of :func:`pieces` (integers below 2**53, so exact)."""
        top, middle, bottom = (np.asarray(p).astype(np.int64) for p in (top, middle, bottom))
        # sum = top * 2**42 + middle * 2**21 + bottom, regrouped around 2**32
        high = (top << 10) + (middle >> 11) + (bottom >> 32)
        low = ((middle & np.int64(0x7FF)) << 21) + (bottom & _LOW_BITS)
        return cls.from_halves(high, low)

    def fits(self) -> np.ndarray:
        """Where the sum is inside int64."""
        return (self.top >= -(1 << 31)) & (self.top < (1 << 31))

    def as_int64(self) -> np.ndarray:
        """The sums (those inside int64; the others are garbage)."""
        return (self.top << 32) | self.low

    def exact(self, row: int) -> int:
        return (int(self.top[row]) << 32) + int(self.low[row])

    def ratios(self, counts: np.ndarray) -> np.ndarray:
        """``sum / count``, correctly rounded to float64 (NaN where the count is 0)."""
        counts = np.asarray(counts, np.int64)
        out = np.full(self.top.shape[0], np.nan)
        # a sum below 2**53 in magnitude is a float64 exactly: one division rounds once
        small = (self.top >= -(1 << 21)) & (self.top < (1 << 21)) & (counts > 0)
        out[small] = self.as_int64()[small].astype(np.float64) / counts[small].astype(np.float64)
        large = ~small & (counts > 0)
        inside = large & self.fits()
        if inside.any():
            out[inside] = rounded_quotients(self.as_int64()[inside], counts[inside])
        # a sum outside int64 (rare: its own column would raise) in Python integers, whose true
        # division is correctly rounded
        for row in np.flatnonzero(large & ~inside):
            out[row] = self.exact(int(row)) / int(counts[row])
        return out


def rounded_quotients(sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``sums / counts`` correctly rounded to float64 (ties to even), for int64 sums of magnitude
    at least 2**53 and counts from 1 to 2**31 - 1: dividing the sum's float64 would round twice.

    A float64 holds 53 significant bits. With ``q = |sum| // count`` of bit length ``b``, the
    answer is ``x * 2**(b - 53)`` for an integer ``x`` below 2**53 (or equal to it, rounded up):
    ``x`` and the remainder that decides its rounding come from integer operations within 64 bits.
    """
    sums = np.asarray(sums, np.int64)
    n = np.asarray(counts, np.int64).astype(np.uint64)
    negative = sums < 0
    # |sum| as uint64, -2**63 included
    magnitude = np.where(negative, (-(sums + 1)).astype(np.uint64) + np.uint64(1), sums.astype(np.uint64))
    q, r = magnitude // n, magnitude % n  # q >= 2**22
    b = np.frexp(q.astype(np.float64))[1].astype(np.int64)
    b -= ((q >> (b - 1).astype(np.uint64)) == 0).astype(np.int64)  # q's float64 rounded up to a power of 2
    shift = b - 53
    x, num, den = np.empty_like(q), np.empty_like(q), np.empty_like(q)
    left = shift < 0  # q has fewer than 53 bits: the fraction r / n gives the rest (-shift <= 31)
    s = (-shift[left]).astype(np.uint64)
    scaled = r[left] << s
    x[left], num[left], den[left] = (q[left] << s) + scaled // n[left], scaled % n[left], n[left]
    t = shift[~left].astype(np.uint64)  # q has 53 bits or more (t <= 11): drop t of them
    x[~left] = q[~left] >> t
    num[~left] = (q[~left] & ((np.uint64(1) << t) - np.uint64(1))) * n[~left] + r[~left]
    den[~left] = n[~left] << t
    # x + num / den, num < den: round to nearest, ties to even
    up = (np.uint64(2) * num > den) | ((np.uint64(2) * num == den) & ((x & np.uint64(1)) == 1))
    answers = np.ldexp((x + up.astype(np.uint64)).astype(np.float64), shift)
    return np.where(negative, -answers, answers)


def pieces(values: np.ndarray) -> tuple:
    """int64 values as three float64 pieces, ``x = a * 2**42 + b * 2**21 + c`` (``|a|``, ``b``,
    ``c`` below 2**21): float64 sums of up to 2**31 such pieces are exact integers."""
    values = np.asarray(values, np.int64)
    return tuple(p.astype(np.float64) for p in (values >> 42, (values >> 21) & _PIECE_BITS, values & _PIECE_BITS))


def exact_sum_input(monoid, input_type: Optional[pa.DataType]) -> bool:
    """True for a built-in sum or mean of a 64-bit integer column, answered from
    :class:`ExactSums`: a narrower integer's window sum cannot leave int64 (below 2**32
    values), a long's can, and an int64 total would wrap where a float64 one rounds."""
    return (type(monoid) in (aggregations.Sum, aggregations.Mean) and input_type is not None
            and pa.types.is_integer(input_type) and input_type.bit_width == 64)


def exact_answers(sums: ExactSums, counts: np.ndarray, output: Output, where) -> np.ndarray:
    """The output's answers from exact window sums: a mean's correctly rounded quotient, a sum
    as int64 (or, declared a float type, the correctly rounded sum). A sum outside int64 raises
    OverflowError naming the output, its column and ``where(row)`` (the window's place)."""
    counts = np.asarray(counts, np.int64)
    if type(output.monoid) is aggregations.Mean:
        return sums.ratios(counts)
    if pa.types.is_floating(output.arrow_type):
        return sums.ratios(np.ones_like(counts))
    outside = ~sums.fits()
    if outside.any():
        row = int(np.flatnonzero(outside)[0])
        raise OverflowError(f"output column {output.name!r}: the sum of the long column {output.column!r} over "
                            f"the window of {where(row)} is {sums.exact(row)}, outside int64 (Spark's sum of a "
                            f"long is a long); cast {output.column!r} to double or decimal to sum it")
    return sums.as_int64()


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

    #: How an error names the order column when it holds event times in nanoseconds (a stream's
    #: internal column); None: by its name and value.
    time_label: Optional[str] = None

    def __init__(self, keys, order: str, frame: Frame, outputs, algorithm: Optional[str] = None):
        self.keys, self.order, self.frame = list(keys), order, frame
        self.outputs, self.algorithm = list(outputs), algorithm

    # The per-call state lives in a fresh PartitionRun, so one instance serves many partitions.
    def __call__(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return PartitionRun(self).batches(batches)

    @property
    def needed(self) -> list:
        """The columns the windows read: the keys, the order column and the outputs' inputs."""
        return list(dict.fromkeys(self.keys + [self.order] + [o.column for o in self.outputs]))

    def answers(self, columns: Iterable) -> Iterator[pa.StructArray]:
        """The body of a scalar Arrow iterator UDF over the :attr:`needed` columns of a partition's
        sorted rows (a tuple of arrays per batch; one array when only one column is needed): one
        struct of the outputs per row, in the rows' order. A range frame's held-back peers come
        with a later batch, so a batch may answer fewer rows than it brought, never more."""
        names = self.needed
        batches = (pa.RecordBatch.from_arrays(list(arrays) if isinstance(arrays, tuple) else [arrays], names=names)
                   for arrays in columns)
        fields = [o.name for o in self.outputs]
        for done in PartitionRun(self).batches(batches):
            yield pa.StructArray.from_arrays([done.column(name) for name in fields], names=fields)


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
            new_key |= changes(batch.column(name), None if previous is None else previous.column(name))
        if not spec.keys and previous is None:
            new_key[0] = True
        reset = np.where(new_key, np.int8(KEY_STARTS), np.int8(0))
        if spec.frame.rows is not None:
            return reset, new_key
        order = batch.column(spec.order)
        group_start = new_key | changes(order, None if previous is None else previous.column(spec.order))
        # Rows with a null order value are one group of their own, before the others: a
        # fresh window starts at the first non-null row after them.
        after_null = previous is not None and previous.column(spec.order).null_count > 0
        if not (order.null_count or after_null):
            return reset, group_start
        nulls = order.is_null().to_numpy(zero_copy_only=False)
        was_null = np.concatenate(([after_null], nulls[:-1]))
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
        if isinstance(out, ExactSums):
            out = exact_answers(out, counts, output, lambda row: self._row_text(batch, row))
        return to_arrow(out, counts, output, column.type)

    def _row_text(self, batch, row: int) -> str:
        """The key and order values of ``batch``'s row, for an error message."""
        spec = self.spec
        parts = [f"{name}={batch.column(name)[row].as_py()!r}" for name in spec.keys]
        order = batch.column(spec.order)[row].as_py()
        if spec.time_label is not None:
            parts.append(f"{spec.time_label} {timestamp(order)}")
        elif spec.order not in spec.keys:
            parts.append(f"{spec.order}={order!r}")
        return "the row with " + ", ".join(parts)


def _present(column: pa.Array) -> np.ndarray:
    """True where a value is there: not null and, in a float column, not NaN.

    NaN is a missing value everywhere in winagg (``rolling``, the aggregators, ``Window``), as
    in pandas; Spark's own sum and avg would propagate it, winagg's windows skip it as null.
    """
    if column.null_count == 0:  # numpy on the values themselves, without Arrow's boolean kernels
        if pa.types.is_floating(column.type):
            return ~np.isnan(column.to_numpy(zero_copy_only=False))
        return np.ones(len(column), np.bool_)
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
        return compiled_spec(monoid, np.int64 if integral else np.float64), False
    if monoid.keyed_input:
        return compiled_spec(monoid, np.int64), True
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
    if isinstance(output.monoid, aggregations.Quantile) and _is_numeric(input_type):
        from .quantile import QuantileFrameWindow  # exact quantiles and medians: compiled order statistics

        return QuantileFrameWindow(output.monoid, spec.frame, time_dtype), _numeric_values
    if exact_sum_input(output.monoid, input_type):
        sums = aggregations.get("sum")
        name = spec.algorithm or choose_algorithm(sums.compiled_for(np.dtype(np.int64)), True)
        return _ExactSumWindow(_DriverSource(name, sums, np.dtype(np.int64)), spec.frame, time_dtype), _numeric_values
    if compiled is not None:
        prepare = key_values if keyed else _numeric_values
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
        return compiled_driver(info(self.algorithm), compiled_spec(self.monoid, self.dtype))


def _python_values(column: pa.Array) -> np.ndarray:
    """The column's values as Python objects, one per row (lists and structs stay single items)."""
    items = column.to_pylist()
    values = np.empty(len(items), dtype=object)
    for i, item in enumerate(items):
        values[i] = item
    return values


def _float_longs(out: np.ndarray) -> np.ndarray:
    """float64 answers of a long column (min, max) as int64: a long within 512 of int64's top
    rounds to 2**63 in float64, which is no long; its nearest long is int64's largest."""
    top = out >= 2.0 ** 63
    longs = np.where(top, 0.0, out).astype(np.int64)
    longs[top] = np.iinfo(np.int64).max
    return longs


def to_arrow(out, counts, output: Output, input_type) -> pa.Array:
    """The results as an Arrow column of the output's type, null where Spark gives null."""
    null_when_empty = empty_is_null(output.monoid)
    if isinstance(out, np.ndarray):
        mask = (counts == 0) if null_when_empty else np.zeros(len(out), np.bool_)
        if out.dtype.kind == "f":
            mask = mask | np.isnan(out)
        hidden = bool(mask.any())
        if hidden:
            out = np.where(mask, np.zeros(1, out.dtype), out)  # hide identities like +inf
        if out.dtype.kind == "f" and pa.types.is_int64(output.arrow_type):
            out = _float_longs(out)
        array = pa.array(out, mask=mask if hidden else None)  # no validity bitmap when every row has an answer
        return array if array.type == output.arrow_type else array.cast(output.arrow_type)
    results = [None if (null_when_empty and count == 0) or (isinstance(r, float) and math.isnan(r)) else r
               for r, count in zip(out, counts)]
    return pa.array(results, type=output.arrow_type)
