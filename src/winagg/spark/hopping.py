"""Hopping windows per key: one aggregator per key and output, whatever size/slide is.

Window k of a key covers event times ``[k*slide, k*slide + size)`` (aligned to
the epoch, start included), as Spark's ``window(t, size, slide)`` does, and is
reported once, if it holds at least one row, with the aggregate of the rows it
holds (nulls skipped: count gives 0, the others null when no value is there).

Spark computes such windows by copying every row into the size/slide windows
that hold it. :class:`HoppingWindows` instead keeps, per output, one FiBA tree
of *panes*: every window's bounds are multiples of ``gcd(size, slide)``, so
the rows of one pane of that width lie in the same windows and a commutative
aggregation keeps them as one partial (FiBA combines entries of equal time).
A window's answer is one range query over the tree; the tree holds at most
``size / pane`` entries plus what arrives ahead of the watermark. A
non-commutative monoid keeps every row at its own time, so each window folds
its rows in time order.

Nothing here needs Spark: :func:`winagg.spark.sliding` (batch) and
:func:`winagg.spark.streaming.sliding_stream` (Structured Streaming) feed it.

Streaming over a few plain numbers per pane: :mod:`winagg.spark.panes`.
"""

from __future__ import annotations

import math
from typing import Optional, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .. import aggregations
from ..algos.registry import out_of_order
from ..windows.aggregator import make
from ..core.errors import InvalidTimeError
from ..core.state import limit, size
from ..times import check_number, duration_ns, is_duration, timestamp
from ..engine.plans import INT_HIGH as _INT_HIGH, INT_LOW as _INT_LOW, last_closed_window
from ..engine import kernels
from ..engine.range_batches import compiled_batches
from .partition import ExactSums, Output, key_values, to_arrow, empty_is_null, exact_answers, exact_sum_input, pieces

#: The name of the two columns that say which window a result row is.
WINDOW_COLUMNS = ("window_start", "window_end")


def float_spec(monoid):
    """The float64 compiled description of a built-in aggregation, or None for plain Python."""
    return kernels.compiled_spec(monoid, np.float64)


#: The layout of a key's pickled hopping windows (2: a mean's tree holds sums; 3: times in
#: nanoseconds, not microseconds; 4: tuple partials in one record array, not an array per field): a
#: checkpoint written with another is refused by name.
TREES_FORMAT = 4


def _mean_from_sums(monoid) -> bool:
    """A compiled mean is answered from a tree of sums and its column's non-null counts: one FiBA
    tree fewer to compile (a mean's own tree keeps the same sum beside a count)."""
    return type(monoid) is aggregations.Mean and float_spec(monoid) is not None


def tree_spec(monoid):
    """The compiled description of the tree that answers ``monoid`` (None: a Python tree)."""
    if _mean_from_sums(monoid):
        return float_spec(aggregations.get("sum"))
    return float_spec(monoid)


class _CompiledTree:
    """A built-in aggregation's FiBA tree in a numba kernel.

    Rows go in at their time (int64 nanoseconds) rounded down to a multiple of ``rounding``:
    the tree kernels of :class:`winagg.Window`'s datetime windows.
    """

    def __init__(self, spec, rounding: int):
        self.spec, self.rounding = spec, rounding
        self.bufs = self.st = None
        self.entry_times = np.empty(0, np.int64)  # distinct times in the tree, for compacting

    def step(self, times, values, positions, lows, highs, horizon):
        """Insert (times sorted), answer ``lows[j] <= time <= highs[j]``, evict ``<= horizon``."""
        batches = compiled_batches(self.spec, "int64")
        if self.bufs is None:
            self.bufs, self.st = batches.fresh()
        (self.bufs, self.st), out = batches.run((self.bufs, self.st), times.astype(np.int64), values, positions,
                                                lows.astype(np.int64), highs.astype(np.int64), False,
                                                np.int64(horizon))
        return out

    def __getstate__(self):
        # The description (compiled functions) is not state: HoppingWindows.bind gives it back.
        # A tree keeps the node pool of the largest batch it held: pickle one sized for its entries.
        from ..engine.range_batches import compact_kernel

        state = dict(self.__dict__)
        state.pop("spec")
        if self.bufs is not None and limit(self.st) > 2 * size(self.st) + 64:
            state["bufs"], state["st"] = compact_kernel(self.spec, "int64")(self.bufs, self.st, self.entry_times)
        return state


class _ExactSumTrees:
    """The exact sums of a long column: a float64 sum tree per 21-bit piece of each value
    (:func:`~winagg.spark.partition.pieces`), whose sums stay exact integers. A single float64
    tree would round sums past 2**53; the pieces reuse the float64 sum kernel the other trees
    compile, where an int64 one would be one more FiBA kernel to compile."""

    def __init__(self, rounding: int):
        self.rounding = rounding
        self.pieces = [_CompiledTree(float_spec(aggregations.get("sum")), rounding) for _ in range(3)]

    @property
    def entry_times(self) -> np.ndarray:
        return self.pieces[0].entry_times

    @entry_times.setter
    def entry_times(self, times: np.ndarray) -> None:
        for tree in self.pieces:
            tree.entry_times = times

    def bind(self) -> None:
        for tree in self.pieces:
            tree.spec = float_spec(aggregations.get("sum"))

    def step(self, times, values, positions, lows, highs, horizon) -> ExactSums:
        sums = [tree.step(times, part, positions, lows, highs, horizon)
                for tree, part in zip(self.pieces, pieces(values))]
        return ExactSums.from_pieces(*sums)


class _PythonTree:
    """Any monoid on the plain-Python FiBA: nulls are skipped, positional monoids get positions."""

    def __init__(self, monoid, rounding: int):
        self.monoid, self.rounding = monoid, rounding
        self.entry_times = np.empty(0, np.int64)
        self.positional = getattr(monoid, "positional", False)
        self.tree = make(out_of_order().name, monoid)

    def step(self, times, values, positions, lows, highs, horizon):
        keep = [i for i, v in enumerate(values) if v is not None and not (isinstance(v, float) and math.isnan(v))]
        if keep:
            items = [(values[i], int(positions[i])) if self.positional else values[i] for i in keep]
            self.tree.bulk_insert(items, times[keep].tolist())
        out = [self.tree.query(int(lo), int(hi)) for lo, hi in zip(lows, highs)]
        if len(self.tree) and self.tree.oldest_time() <= horizon:
            self.tree.bulk_evict(int(horizon))
        return out


def window_ns(value, what: str) -> int:
    """A window's size or slide as positive int nanoseconds: a duration read by
    :func:`winagg.times.duration_ns`, or a bare whole number of nanoseconds (what
    :func:`winagg.spark.sliding` hands on). ValueError naming ``what`` for a calendar length, a
    fraction of a nanosecond or a length that is not positive; nothing is truncated."""
    if is_duration(value):
        nanos = duration_ns(value, what)
    else:
        number = check_number(value, what)
        if isinstance(number, float) and not number.is_integer():
            raise ValueError(f"{what} {value!r} is not a whole number of nanoseconds")
        nanos = int(number)
    if nanos <= 0:
        raise ValueError(f"{what} must be a positive duration, got {value!r}")
    return nanos


def check_window_ends(latest: int, size: int) -> None:
    """InvalidTimeError if a window holding time ``latest`` could end past int64 nanoseconds
    (a bound that would wrap around)."""
    if latest > _INT_HIGH - size:
        raise InvalidTimeError(f"a window of {size} ns holding the time {timestamp(latest)} would end past "
                               f"{timestamp(_INT_HIGH)}, the last time int64 nanoseconds hold")


#: The magnitude from which a float64 may be a rounded long: below it every integer is exact.
_FLOAT_EXACT = 2 ** 53


def refuse_rounded_longs(longs, column: str) -> None:
    """OverflowError naming ``column`` when one of ``longs`` (int64 numbers, numpy or Arrow, nulls
    aside) lies beyond 2**53: a hopping window's min or max keeps float64, which would round it
    where Spark's own min and max answer the long itself."""
    if isinstance(longs, np.ndarray):
        low, high = (int(longs.min()), int(longs.max())) if longs.size else (0, 0)
    else:
        bounds = pc.min_max(longs)
        low, high = bounds["min"].as_py() or 0, bounds["max"].as_py() or 0
    value = high if high > _FLOAT_EXACT else low if low < -_FLOAT_EXACT else None
    if value is not None:
        raise OverflowError(f"the long column {column!r} holds {value}, beyond 2**53: the min and max of hopping "
                            f"windows keep float64, which would round it; cast the column to double to accept the "
                            f"rounding (winagg.spark.sliding's row and range frames answer such longs exactly)")


def exact_longs(series: pd.Series, column: str) -> pa.Array:
    """A long column's values (int64, nullable Int64 or objects) as an Arrow int64 array, exactly.

    The streaming operators hand over long columns exactly (see
    :mod:`winagg.spark.streaming`); should one arrive as float64 anyway (PySpark's conversion of
    a long column with nulls, unless ``spark.sql.execution.pythonUDF.pandas.preferIntExtensionDtype``
    is true), its values from 2**53 on may be rounded already: OverflowError naming the column,
    never a rounded long.
    """
    if series.dtype.kind == "f":
        values = series.to_numpy(np.float64, na_value=np.nan)
        large = np.abs(values) >= _FLOAT_EXACT  # NaN compares False
        if large.any():
            value = float(values[np.flatnonzero(large)[0]])
            raise OverflowError(f"the long column {column!r} reached Python as float64 with the value {value!r}, "
                                f"which may be a rounded long (a double holds integers exactly below 2**53 only): "
                                f"set spark.sql.execution.pythonUDF.pandas.preferIntExtensionDtype to true")
    try:
        return pa.array(series, type=pa.int64(), from_pandas=True)
    except (pa.ArrowInvalid, OverflowError) as error:
        raise OverflowError(f"the long column {column!r} holds a value that is no int64 ({error})") from None


def _long_values(series: pd.Series, column: str) -> np.ndarray:
    """A long column's values as int64, nulls as 0 (:func:`exact_longs`)."""
    return pc.fill_null(exact_longs(series, column), 0).to_numpy(zero_copy_only=False)


def window_text(key: str, start: int, size: int) -> str:
    """A window (bounds in nanoseconds) and its key, for an error message."""
    return f"{key + ', ' if key else ''}window [{timestamp(int(start))}, {timestamp(int(start) + size)})"


def key_text(names, values) -> str:
    """``name=value`` of a key's columns, for an error message."""
    return ", ".join(f"{name}={value!r}" for name, value in zip(names, values))


class HoppingWindows:
    """The hopping windows of one key: feed rows with :meth:`step`, get the windows that closed.

    ``outputs`` are the aggregations (``Output``), ``size`` and ``slide`` in
    nanoseconds or as durations (:func:`window_ns`), ``keyed_columns`` the
    input columns whose items are reduced to a stable key (strings counted by
    HyperLogLog, say), ``long_columns`` the input columns of 64-bit integers,
    whose sums and means are exact (:class:`_ExactSumTrees`).
    """

    def __init__(self, outputs: Sequence[Output], size: int, slide: int, keyed_columns=frozenset(),
                 long_columns=frozenset()):
        self.format = TREES_FORMAT
        self.outputs, self.size, self.slide = list(outputs), window_ns(size, "size"), window_ns(slide, "slide")
        self.pane = math.gcd(self.size, self.slide)
        self.keyed_columns = set(keyed_columns)
        self.trees = [_ExactSumTrees(self.pane) if o.column in long_columns and exact_sum_input(o.monoid, pa.int64())
                      else self._tree(o.monoid) for o in self.outputs]
        # per input column of an output that is null when empty: a tree counting its non-null values
        self.non_null = {o.column: _CompiledTree(float_spec(aggregations.get("count")), self.pane)
                         for o in self.outputs if empty_is_null(o.monoid)}
        self.panes = np.empty(0, np.int64)  # sorted pane starts with rows, still in an open window
        self.next_k = _INT_LOW  # every window below it is closed and reported
        self.seen = 0  # rows inserted so far (positions for argmin/argmax-like aggregations)

    def _tree(self, monoid):
        spec = tree_spec(monoid)
        # rows of one pane combine into one entry only if their order does not matter
        rounding = self.pane if monoid.commutative else 1
        return _CompiledTree(spec, rounding) if spec is not None else _PythonTree(monoid, rounding)

    def __getstate__(self):
        # What a key keeps between micro-batches: trees, panes and counters, not the outputs'
        # descriptions (the same for every key): bind(outputs) after unpickling.
        state = dict(self.__dict__)
        state.pop("outputs")
        return state

    def bind(self, outputs: Sequence[Output]) -> "HoppingWindows":
        """Give an unpickled state its outputs (those it was made with) back; returns it."""
        from ._common import checked_format

        checked_format(self, TREES_FORMAT, "hopping windows")
        self.outputs = list(outputs)
        for tree, output in zip(self.trees, self.outputs):
            if isinstance(tree, _CompiledTree):
                tree.spec = tree_spec(output.monoid)
            elif isinstance(tree, _ExactSumTrees):
                tree.bind()
        for tree in self.non_null.values():
            tree.spec = float_spec(aggregations.get("count"))
        return self

    def first_open(self) -> int:
        """The start of the first window not reported yet (``_INT_LOW`` before any was): an
        older row lies in reported windows only."""
        if self.next_k in (_INT_LOW, _INT_HIGH):
            return self.next_k
        return self.next_k * self.slide

    def __len__(self) -> int:
        """Entries held (panes with rows that an open window still covers)."""
        return int(self.panes.shape[0])

    # ------------------------------------------------------------ feeding
    def step(self, rows: Optional[pd.DataFrame], times: Optional[np.ndarray], watermark,
             key: str = "") -> Optional[pa.Table]:
        """Add ``rows`` (times in nanoseconds, any order, none older than :meth:`first_open`),
        then close every window whose end is ``<= watermark`` (nanoseconds;
        ``math.inf`` closes all). Returns the closed windows that hold rows, by start, as
        an Arrow table of ``window_start``, ``window_end`` (int64 nanoseconds) and the
        outputs, or None when none closed. ``key`` names the key in an error (a sum
        outside int64)."""
        n = 0 if rows is None else len(rows)
        if n:
            order = np.argsort(times, kind="stable")
            times = np.asarray(times, np.int64)[order]
            check_window_ends(int(times[-1]), self.size)
            rows = rows.iloc[order].reset_index(drop=True)
            positions = np.arange(self.seen, self.seen + n, dtype=np.int64)[order]
            self.seen += n
            self.panes = np.union1d(self.panes, (times // self.pane) * self.pane)
        else:
            times = np.empty(0, np.int64)
            positions = np.empty(0, np.int64)
        ks = self._closing(watermark)
        starts = ks * self.slide
        lows, highs = starts, starts + (self.size - 1)
        horizon = self._advance(ks, watermark)
        results = []
        for tree, output in zip(self.trees, self.outputs):
            results.append(self._feed(tree, rows, output.column, times, positions, lows, highs, horizon,
                                      output))
        counts = {column: self._feed(tree, rows, column, times, positions, lows, highs, horizon, None)
                  for column, tree in self.non_null.items()}
        if not len(ks):
            return None
        columns = [pa.array(starts, pa.int64()), pa.array(starts + self.size, pa.int64())]
        for output, out in zip(self.outputs, results):
            non_null = counts.get(output.column, np.ones(len(ks), np.int64))
            if isinstance(out, ExactSums):
                out = exact_answers(out, np.asarray(non_null, np.int64), output,
                                    lambda j: window_text(key, starts[j], self.size))
            elif _mean_from_sums(output.monoid):
                with np.errstate(invalid="ignore", divide="ignore"):
                    out = out / non_null  # 0 / 0 where a window has no value: null below
            columns.append(to_arrow(out, np.asarray(non_null, np.int64), output, None))
        return pa.Table.from_arrays(columns, names=list(WINDOW_COLUMNS) + [o.name for o in self.outputs])

    def _feed(self, tree, rows, column, times, positions, lows, highs, horizon, output):
        when = (times // tree.rounding) * tree.rounding
        values = self._values(rows, column, output, tree)
        if len(when):
            tree.entry_times = np.union1d(tree.entry_times, when)
        tree.entry_times = tree.entry_times[tree.entry_times > horizon]
        return tree.step(when, values, positions, lows, highs, horizon)

    def _values(self, rows, column, output, tree):
        python = isinstance(tree, _PythonTree)
        if rows is None or not len(rows):
            return [] if python else np.empty(0, np.int64 if isinstance(tree, _ExactSumTrees) else np.float64)
        series = rows[column]
        if output is None:  # non-null count: 1 per value, NaN (skipped) per null
            return np.where(series.isna().to_numpy(), np.nan, 1.0)
        if isinstance(tree, _ExactSumTrees):  # nulls add 0; the non-null counts skip them
            return _long_values(series, column)
        if python:
            return [None if v is None or (isinstance(v, float) and math.isnan(v)) else v
                    for v in series.astype(object).where(series.notna(), None)]
        if column in self.keyed_columns:
            keys = key_values(pa.array(series, from_pandas=True)).astype(np.float64)
            return np.where(series.isna().to_numpy(), np.nan, keys)
        if output.monoid.keeps_input_type and pd.api.types.is_integer_dtype(series.dtype):
            refuse_rounded_longs(_long_values(series, column), column)
        return pd.to_numeric(series, errors="coerce").to_numpy(np.float64, na_value=np.nan)

    # ------------------------------------------------------------ closing
    def next_end(self) -> Optional[int]:
        """The end (nanoseconds) of the next window to close that holds rows, or None."""
        if not len(self.panes) or self.next_k >= _INT_HIGH:
            return None
        first = max(int((self.panes[0] - self.size) // self.slide + 1), int(self.next_k))
        return first * self.slide + self.size

    def _last_closed(self, watermark) -> int:
        return last_closed_window(self.size, self.slide, watermark)

    def _closing(self, watermark) -> np.ndarray:
        """The window numbers k, ascending, that close now and hold a pane with rows.

        Window k holds pane p when ``k*slide <= p < k*slide + size``: k runs from
        ``floor((p - size) / slide) + 1`` to ``floor(p / slide)``; both bounds grow with p,
        so cutting each pane's run at the previous pane's end leaves disjoint runs.
        """
        last = self._last_closed(watermark)
        if not len(self.panes) or last == _INT_LOW or last < self.next_k:
            return np.empty(0, np.int64)
        first_k = np.maximum((self.panes - self.size) // self.slide + 1, self.next_k)
        last_k = np.minimum(self.panes // self.slide, last)
        first_k[1:] = np.maximum(first_k[1:], last_k[:-1] + 1)
        spans = np.maximum(last_k - first_k + 1, 0)
        total = int(spans.sum())
        offsets = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(spans) - spans, spans)
        return np.repeat(first_k, spans) + offsets

    def _advance(self, ks, watermark) -> int:
        """Mark the windows up to the watermark closed; returns the time up to which entries go."""
        last = self._last_closed(watermark)
        if last == _INT_HIGH:
            self.next_k = _INT_HIGH
            self.panes = self.panes[:0]
            return _INT_HIGH
        if last == _INT_LOW:  # no watermark yet
            return _INT_LOW
        self.next_k = max(self.next_k, last + 1)
        # a pane before the first open window's start is in no open window
        first_open = self.next_k * self.slide
        self.panes = self.panes[self.panes >= first_open]
        return first_open - 1


# ---------------------------------------------------------------- batch: one Spark partition
def _timestamps(nanos: pa.ChunkedArray, time_type: pa.DataType) -> pa.Array:
    """Window bounds (int64 nanoseconds) as the order column's timestamps."""
    return nanos.combine_chunks().cast(pa.timestamp("ns", time_type.tz)).cast(time_type)


class HoppingPartition:
    """``mapInArrow`` function: batches sorted by ``keys`` then ``order`` (no null times) in,
    one row per key and window holding rows out (keys, window bounds, outputs).

    A key's windows close as its rows go by (no later row of a sorted key is older), so
    a task holds one key's open windows and one batch. Cheap to pickle; kernels are looked
    up in the process that runs it.
    """

    def __init__(self, keys, order: str, size: int, slide: int, outputs, keyed_columns, time_type: pa.DataType,
                 long_columns=frozenset()):
        self.keys, self.order = list(keys), order
        self.size, self.slide = window_ns(size, "size"), window_ns(slide, "slide")
        self.outputs, self.keyed_columns, self.time_type = list(outputs), set(keyed_columns), time_type
        self.long_columns = set(long_columns)

    def __call__(self, batches):
        from .partition import changes, order_values

        state, key_row = None, None  # the current key's windows and a one-row batch of its key values
        for batch in batches:
            if not batch.num_rows:
                continue
            new_key = np.zeros(batch.num_rows, np.bool_)
            for name in self.keys:
                new_key |= changes(batch.column(name), None if key_row is None else key_row.column(name))
            if key_row is None:
                new_key[0] = True
            starts = list(np.flatnonzero(new_key)) + [batch.num_rows]
            if starts[0] != 0:
                starts.insert(0, 0)
            times = order_values(batch.column(self.order), self.order)
            frame = self._frame(batch)
            for begin, end in zip(starts, starts[1:]):
                if new_key[begin]:
                    if state is not None:
                        yield from self._emit(state.step(None, None, math.inf, self._key(key_row)), key_row)
                    state = HoppingWindows(self.outputs, self.size, self.slide, self.keyed_columns,
                                           self.long_columns)
                    key_row = batch.slice(begin, 1).select(self.keys) if self.keys else batch.slice(begin, 1)
                run_times = times[begin:end]
                # rows come sorted: windows ending at or before the last time can no longer change
                closed = state.step(frame.iloc[begin:end].reset_index(drop=True), run_times, int(run_times[-1]),
                                    self._key(key_row))
                yield from self._emit(closed, key_row)
        if state is not None:
            yield from self._emit(state.step(None, None, math.inf, self._key(key_row)), key_row)

    def _frame(self, batch: pa.RecordBatch) -> pd.DataFrame:
        """The batch in pandas, a long column with nulls as nullable Int64 (not float64, which would
        round its values past 2**53)."""
        frame = batch.to_pandas()
        for name in self.long_columns:
            frame[name] = batch.column(name).to_pandas(types_mapper={pa.int64(): pd.Int64Dtype()}.get)
        return frame

    def _key(self, key_row) -> str:
        return key_text(self.keys, [key_row.column(name)[0].as_py() for name in self.keys])

    def _emit(self, table: Optional[pa.Table], key_row):
        if table is None or not table.num_rows:
            return
        n = table.num_rows
        columns = [key_row.column(name).take(pa.array(np.zeros(n, np.int64))) for name in self.keys]
        columns += [_timestamps(table.column(name), self.time_type) for name in WINDOW_COLUMNS]
        columns += [table.column(o.name).combine_chunks() for o in self.outputs]
        yield pa.RecordBatch.from_arrays(columns, names=self.keys + list(WINDOW_COLUMNS) + [o.name for o in self.outputs])
