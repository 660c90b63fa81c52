"""Hopping windows in Structured Streaming, panes as plain numbers.

Streaming, when every output is count, sum, mean, max or min of a number, a
pane's partial is a few plain numbers (non-null count, sum, max, min), so the
rows are combined into panes before Spark's stateful operator
(:class:`PaneCombine`, one Arrow ``group_by`` per micro-batch partition) and
the keys are hashed into buckets, each bucket's open panes kept as one small
Arrow table (:class:`PaneWindows`): the Python stateful operator then sees a
row per key and pane and runs once per bucket, not once per key.
"""

from __future__ import annotations

import math
from typing import Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import aggregations
from ..engine.plans import INT_HIGH as _INT_HIGH, INT_LOW as _INT_LOW, in_a_hopping_window, last_closed_window
from .hopping import WINDOW_COLUMNS, check_window_ends, key_text, refuse_rounded_longs, window_ns, window_text
from .partition import ExactSums, Output, to_arrow, exact_answers, exact_sum_input


#: Built-in aggregations whose pane partial is a few plain numbers, and those numbers: ``nn`` (the
#: non-null values), ``sum``, ``max``, ``min``. A window's answer combines its panes' numbers.
_PANE_PARTS = {aggregations.Count: ("nn",), aggregations.Sum: ("nn", "sum"), aggregations.Mean: ("nn", "sum"),
               aggregations.Max: ("nn", "max"), aggregations.Min: ("nn", "min")}
#: The numbers of a sum or mean of a long column: the int64 sums of the values' high and low 32
#: bits (:meth:`ExactSums.from_halves`), exact where a float64 sum would round past 2**53.
_EXACT_SUM_PARTS = ("nn", "high", "low")
#: Parts kept as int64 (the others are float64).
_INT_PARTS = ("nn", "high", "low")
#: How Arrow's group_by combines each number of rows into a pane, then panes into one pane.
_FIRST_COMBINE = {"nn": "count", "sum": "sum", "max": "max", "min": "min", "high": "sum", "low": "sum"}
_THEN_COMBINE = {"nn": "sum", "sum": "sum", "max": "max", "min": "min", "high": "sum", "low": "sum"}
#: How a window's float64 part combines its panes' (NaN: a pane without a value, skipped), and
#: what that part holds for a window without a value (its output is null then).
_WINDOW_COMBINE = {"sum": (np.add, 0.0), "max": (np.fmax, np.nan), "min": (np.fmin, np.nan)}
PANE_COLUMN, ROWS_COLUMN, BUCKET_COLUMN = "__winagg_pane", "__winagg_rows", "__winagg_bucket"
#: The layout of a bucket's pickled panes (2: pane numbers, start / pane, where 1 kept microsecond
#: starts): a checkpoint written with another is refused by name.
PANES_FORMAT = 2


def pane_parts(outputs: Sequence[Output], input_types: dict) -> Optional[list]:
    """``[(column, part, name)]``: the numbers per pane that answer every output, or None.

    None when an output is not one of count, sum, mean, max and min (exactly those
    classes) over a numeric column: such outputs keep the general path. A sum or mean
    of a long column keeps the exact sums' halves (``high``, ``low``), not a float64 sum.
    """
    parts = {}
    for output in outputs:
        kind = input_types[output.column]
        numeric = pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_decimal(kind)
        if type(output.monoid) not in _PANE_PARTS or not numeric:
            return None
        wanted = _EXACT_SUM_PARTS if exact_sum_input(output.monoid, kind) else _PANE_PARTS[type(output.monoid)]
        for part in wanted:
            parts.setdefault((output.column, part), f"__winagg_{part}_{len(parts)}")
    return [(column, part, name) for (column, part), name in parts.items()]


def window_folds(values: np.ndarray, first: np.ndarray, after: np.ndarray, part: str) -> np.ndarray:
    """Each window's ``part`` (sum, max or min) of ``values[first[j]:after[j]]``, panes in time order.

    A bucket's panes are sorted and every window is a run of them, so one ``reduceat`` over
    the runs' bounds answers all windows (it also folds the stretches between two windows,
    whose results are dropped); this needs no compiled kernel, where a tree over the panes
    was the slowest kernel a stream compiled.
    """
    fold, empty = _WINDOW_COMBINE[part]
    if part == "sum":
        values = np.where(np.isnan(values), 0.0, values)
    padded = np.append(values, empty)  # ``after`` may be len(values): a bound reduceat accepts
    bounds = np.empty(2 * len(first), np.int64)
    bounds[0::2], bounds[1::2] = first, after
    if not len(bounds):
        return np.empty(0, np.float64)
    with np.errstate(invalid="ignore"):  # inf + -inf is NaN, as in a compiled sum
        out = fold.reduceat(padded, bounds)[0::2]
    out[first >= after] = empty  # reduceat answers an empty run with its first value
    return out


def pane_schema(key_fields: Sequence[pa.Field], parts) -> pa.Schema:
    """The Arrow schema of pane rows: keys, pane start, rows, then the parts."""
    fields = list(key_fields) + [pa.field(PANE_COLUMN, pa.int64()), pa.field(ROWS_COLUMN, pa.int64())]
    fields += [pa.field(name, _part_type(part)) for _, part, name in parts]
    return pa.schema(fields)


def _part_type(part: str) -> pa.DataType:
    return pa.int64() if part in _INT_PARTS else pa.float64()


def _source(column: str, part: str) -> tuple:
    """Which numbers of ``column`` a pane's ``part`` combines (the parts of one source share them)."""
    return column, part if part in ("high", "low") else "float"


def _part_values(column, part: str):
    """The column's numbers that a pane's ``part`` combines: a long's high or low 32 bits, or the
    values as float64."""
    if part == "high":
        return pc.shift_right(column.cast(pa.int64()), 32)
    if part == "low":
        return pc.bit_wise_and(column.cast(pa.int64()), pa.scalar(0xFFFFFFFF, pa.int64()))
    return _as_float(column)


def _as_float(column) -> pa.ChunkedArray:
    """A numeric column as float64 with NaN made null (NaN is skipped, as by the compiled aggregations).

    A long past 2**53 rounds (a safe cast would refuse it): its non-null count stays exact, and
    its sum and mean take the exact parts (``high``, ``low``) instead.
    """
    values = column.cast(pa.float64(), safe=not pa.types.is_integer(column.type))
    return pc.if_else(pc.fill_null(pc.is_nan(values), False), pa.scalar(None, pa.float64()), values)


def _pane_number(column, part: str):
    """A pane's number as the stateful operator receives it: an int64 one (a long's halves) 0, not
    null, when the pane's values are all null (they add nothing), so that PySpark hands it over as
    int64, not as float64 (which rounds past 2**53)."""
    return pc.fill_null(column, 0) if part in _INT_PARTS else column


class PaneCombine:
    """``mapInArrow`` function before the stateful operator: a micro-batch's rows in, one row out per
    key and pane (``gcd(size, slide)`` of event time) with the pane's numbers, so the stateful
    operator receives panes instead of events. Rows without a time belong to no pane: they are
    skipped (the stream counts them before they get here, :meth:`~winagg.spark.dropped.DroppedEvents.observe_untimed`)."""

    def __init__(self, keys, time: str, pane: int, parts, schema: pa.Schema):
        self.keys, self.time, self.pane, self.parts = list(keys), time, window_ns(pane, "pane"), list(parts)
        self.schema = schema

    def __call__(self, batches):
        batches = list(batches)
        table = pa.Table.from_batches(batches) if batches else None
        if table is not None and table.num_rows:
            yield from self.combine(table).to_batches()

    def combine(self, table: pa.Table) -> pa.Table:
        stamps = table.column(self.time)
        if stamps.null_count:
            table = table.filter(pc.is_valid(stamps))
            stamps = table.column(self.time)
        from .partition import order_values

        times = order_values(stamps.combine_chunks(), self.time)
        columns = {k: table.column(k) for k in self.keys}
        columns[PANE_COLUMN] = pa.array((times // self.pane) * self.pane, pa.int64())
        values, wanted = {}, [([], "count_all")]
        for column, part, name in self.parts:
            if part in ("max", "min") and pa.types.is_integer(table.column(column).type):
                refuse_rounded_longs(table.column(column), column)  # float64 would round it
            source = _source(column, part)
            if source not in values:
                values[source] = f"__winagg_value_{len(values)}"
                columns[values[source]] = _part_values(table.column(column), part)
            wanted.append((values[source], "count", pc.CountOptions("only_valid")) if part == "nn"
                          else (values[source], _FIRST_COMBINE[part]))
        grouped = pa.table(columns).group_by(self.keys + [PANE_COLUMN], use_threads=False) \
            .aggregate(wanted)
        out = [grouped.column(k) for k in self.keys + [PANE_COLUMN]] + [grouped.column("count_all")]
        out += [_pane_number(grouped.column(f"{values[_source(column, part)]}_{_FIRST_COMBINE[part]}"), part)
                for column, part, _ in self.parts]
        return pa.Table.from_arrays(out, schema=self.schema)


class PaneWindows:
    """The hopping windows of the keys of one bucket, kept as panes in plain arrays.

    State: an Arrow table of the panes that an open window still covers (keys,
    pane start, the pane's numbers), sorted by key then pane, and the number
    ``next_k`` below which every window is closed and reported. Each step merges
    the micro-batch's panes in, answers the windows that closed, drops the panes
    no open window covers. A window's answer is a range query over a FiBA tree
    of panes per number (every key on one time axis, a key after another), built
    for the step from the arrays: nothing but the arrays is kept between steps.
    A pane all of whose windows were reported before it arrived is dropped and
    its rows counted (``dropped``); it never changes a reported window.
    """

    def __init__(self, outputs: Sequence[Output], size: int, slide: int, keys, parts, key_fields,
                 buckets: Optional[int] = None):
        self.format = PANES_FORMAT
        self.size, self.slide = window_ns(size, "size"), window_ns(slide, "slide")
        self.pane = math.gcd(self.size, self.slide)
        self.keys, self.parts = list(keys), list(parts)
        self.buckets = buckets  # how many buckets the stream hashes keys into (a checkpoint keeps it)
        self.bind(outputs, key_fields)
        self.table = self._schema.empty_table()
        self.next_k = _INT_LOW
        self.timer = None  # the event-time timer (ms) registered for this bucket, if any

    def bind(self, outputs: Sequence[Output], key_fields) -> "PaneWindows":
        """Give an unpickled state its outputs and the key columns' fields back (the same for every
        bucket, so not kept in the state); returns it."""
        from ._common import checked_format

        checked_format(self, PANES_FORMAT, "hopping panes")
        self.outputs = list(outputs)
        fields = list(key_fields) + [pa.field(PANE_COLUMN, pa.int64())]
        fields += [pa.field(name, _part_type(part)) for _, part, name in self.parts]
        self._schema = pa.schema(fields)
        stored = self.__dict__.pop("_stored", None)
        if stored is not None:
            size, blob = stored
            self.table = self._schema.empty_table()
            if size:
                data = pa.decompress(blob, decompressed_size=size, codec="zstd")
                kept = pa.Table.from_batches([pa.ipc.read_record_batch(pa.py_buffer(data), self._schema)])
                self.table = self._panes_as(kept, numbers=False)
        return self

    def _panes_as(self, table: pa.Table, numbers: bool) -> pa.Table:
        """``table`` with its pane starts as pane numbers (start / pane, exact: small integers that
        compress to fewer bytes in a stored state) or, ``numbers=False``, back to starts."""
        index = table.schema.get_field_index(PANE_COLUMN)
        column = table.column(index)
        column = pc.divide(column, self.pane) if numbers else pc.multiply_checked(column, self.pane)
        return table.set_column(index, PANE_COLUMN, column)

    def __getstate__(self):
        # The panes as one Arrow record batch, without its schema (bind gives it back), zstd-compressed
        # whole: a bucket's state is little more than its numbers.
        state = {k: v for k, v in self.__dict__.items() if k not in ("outputs", "table", "_schema")}
        batch = self._panes_as(self.table, numbers=True).combine_chunks().to_batches()
        if batch and batch[0].num_rows:
            data = batch[0].serialize()
            state["_stored"] = (data.size, pa.compress(data, codec="zstd", asbytes=True))
        else:
            state["_stored"] = (0, b"")
        return state

    def __len__(self) -> int:
        return self.table.num_rows

    def first_open(self) -> int:
        """The start of the first window not yet reported (``_INT_LOW`` before any was)."""
        if self.next_k in (_INT_LOW, _INT_HIGH):
            return self.next_k
        return self.next_k * self.slide

    def step(self, panes: Optional[pa.Table], watermark) -> tuple:
        """Merge ``panes`` (rows of :func:`pane_schema`), close the windows ending at or before
        the watermark (nanoseconds). Returns ``(closed, dropped)``: an Arrow table of keys,
        window bounds and outputs (or None) and the rows of panes that came too late."""
        dropped = 0
        if panes is not None and panes.num_rows:
            check_window_ends(int(pc.max(panes.column(PANE_COLUMN)).as_py()), self.size)
            if self.next_k != _INT_LOW:
                starts = panes.column(PANE_COLUMN).to_numpy()
                behind = starts < self.first_open()
                # a pane between two windows (slide > size) is in none: behind them, it is not late
                late = behind & in_a_hopping_window(starts, self.size, self.slide)
                dropped = int(panes.column(ROWS_COLUMN).to_numpy()[late].sum())
                if behind.any():
                    panes = panes.filter(pa.array(~behind))
            if panes.num_rows:
                self._merge(panes)
        closed = self._close(watermark)
        return closed, dropped

    def _merge(self, panes: pa.Table) -> None:
        names = self.table.schema.names
        new = pa.Table.from_arrays([panes.column(n) for n in names], schema=self._schema)
        both = pa.concat_tables([self.table, new])
        groups = self.keys + [PANE_COLUMN]
        merged = both.group_by(groups, use_threads=False).aggregate(
            [(name, _THEN_COMBINE[part]) for _, part, name in self.parts])
        merged = pa.Table.from_arrays(
            [merged.column(n) for n in groups] + [merged.column(f"{name}_{_THEN_COMBINE[part]}")
                                                  for _, part, name in self.parts], schema=self.table.schema)
        self.table = merged.sort_by([(n, "ascending") for n in groups])

    def _key_runs(self) -> np.ndarray:
        """The key number of every pane (0, 1, ... in the table's order)."""
        from .partition import changes

        n = self.table.num_rows
        starts = np.zeros(n, np.bool_)
        if n:
            starts[0] = True
        for name in self.keys:
            starts |= changes(self.table.column(name).combine_chunks(), None)
        return np.cumsum(starts) - 1

    def _close(self, watermark):
        last = last_closed_window(self.size, self.slide, watermark)
        if last == _INT_LOW or last < self.next_k or not self.table.num_rows:
            if last != _INT_LOW:
                self.next_k = max(self.next_k, last + 1)
                self._drop_reported()
            return None
        panes = self.table.column(PANE_COLUMN).to_numpy()
        key = self._key_runs()
        # window k holds pane p when k*slide <= p < k*slide + size; cut each pane's run of windows
        # at the previous pane's (of the same key) so every window is named once
        first_k = np.maximum((panes - self.size) // self.slide + 1, self.next_k)
        last_k = np.minimum(panes // self.slide, last)
        same = np.zeros(len(panes), np.bool_)
        same[1:] = key[1:] == key[:-1]
        first_k[1:] = np.where(same[1:], np.maximum(first_k[1:], last_k[:-1] + 1), first_k[1:])
        spans = np.maximum(last_k - first_k + 1, 0)
        total = int(spans.sum())
        self.next_k = max(self.next_k, last + 1)
        if not total:
            self._drop_reported()
            return None
        offsets = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(spans) - spans, spans)
        ks = np.repeat(first_k, spans) + offsets
        owner = np.repeat(key, spans)  # the key of each window
        row_of_key = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
        # every key on one time axis: pane index from the oldest pane, a key's after another's
        low_pane = int(panes.min())
        index = (panes - low_pane) // self.pane
        stride = int(index.max()) + 1
        axis = key * stride + index
        starts = ks * self.slide
        lows = np.maximum(-(-(starts - low_pane) // self.pane), 0)
        highs = np.minimum((starts + self.size - 1 - low_pane) // self.pane, stride - 1)
        # the run of panes of each window: panes sit at sorted axis positions
        first = np.searchsorted(axis, owner * stride + lows, side="left")
        after = np.searchsorted(axis, owner * stride + highs, side="right")
        answers = {}
        for _, part, name in self.parts:
            if part in _INT_PARTS:  # a window's is a difference of prefix sums (exact in integers)
                # (a pane whose values are all null has a null sum: it adds 0)
                values = pc.fill_null(self.table.column(name), 0).to_numpy()
                before = np.concatenate(([0], np.cumsum(values.astype(np.int64))))
                sums = before[after] - before[first]
                answers[name] = sums.astype(np.float64) if part == "nn" else sums
                continue
            values = self.table.column(name).to_numpy(zero_copy_only=False)
            answers[name] = window_folds(values.astype(np.float64), first, after, part)
        key_columns = [self.table.column(k).take(pa.array(row_of_key[owner])) for k in self.keys]
        self._drop_reported()
        columns = key_columns + [pa.array(starts, pa.int64()), pa.array(starts + self.size, pa.int64())]
        by_part = {(column, part): answers[name] for column, part, name in self.parts}
        for output in self.outputs:
            counts = by_part[(output.column, "nn")]
            kind = type(output.monoid)
            if (output.column, "high") in by_part and kind in (aggregations.Sum, aggregations.Mean):
                sums = ExactSums.from_halves(by_part[(output.column, "high")], by_part[(output.column, "low")])
                out = exact_answers(sums, counts.astype(np.int64), output, lambda j: window_text(
                    key_text(self.keys, [c[j].as_py() for c in key_columns]), starts[j], self.size))
            elif kind is aggregations.Count:
                out = counts.astype(np.int64)
            elif kind is aggregations.Mean:
                with np.errstate(invalid="ignore", divide="ignore"):
                    out = by_part[(output.column, "sum")] / counts
            else:
                out = by_part[(output.column, _PANE_PARTS[kind][1])]
            columns.append(to_arrow(out, counts.astype(np.int64), output, None))
        names = self.keys + list(WINDOW_COLUMNS) + [o.name for o in self.outputs]
        return pa.Table.from_arrays(columns, names=names)

    def _drop_reported(self) -> None:
        if self.next_k > _INT_HIGH:  # closed by an infinite watermark: nothing stays open
            self.next_k = _INT_HIGH
            self.table = self.table.slice(0, 0)
        if self.next_k != _INT_LOW and self.table.num_rows:
            keep = pc.greater_equal(self.table.column(PANE_COLUMN), pa.scalar(self.first_open(), pa.int64()))
            self.table = self.table.filter(keep)

    def next_end(self) -> Optional[int]:
        """The end (nanoseconds) of the next window to close that holds panes, or None."""
        if not self.table.num_rows or self.next_k >= _INT_HIGH:
            return None
        oldest = int(pc.min(self.table.column(PANE_COLUMN)).as_py())
        first = max((oldest - self.size) // self.slide + 1, int(self.next_k))
        return first * self.slide + self.size
