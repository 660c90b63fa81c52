"""What a streaming query reads: rows that cross into a stateful operator exactly, and the watermark.

Used by the per-event streams (:mod:`winagg.spark.streaming`) and the hopping ones
(:mod:`winagg.spark.hopping_stream`).
"""

from __future__ import annotations

import math
from typing import NamedTuple, Optional, Tuple

import numpy as np
import pandas as pd

from ..times import datetimes_ns, duration_ns, time_array
from ._common import SparkInputError

#: Spark's watermark counts milliseconds.
NANOS_PER_MS = 1_000_000

#: The event time as epoch microseconds, beside a zoned (TimestampType) event-time column.
MICROS = "__winagg_micros"


def null_flag(column: str) -> str:
    """The column that says where the nulls of the long column ``column`` were (:class:`Crossing`)."""
    return f"__winagg_null_{column}"


class Crossing(NamedTuple):
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
    def of(cls, df, keys, time: Optional[str], columns) -> "Crossing":
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
            df = df.withColumn(null_flag(column), F.col(column).isNull()) \
                .withColumn(column, F.coalesce(F.col(column), zero))
        if self.micros:
            df = df.withColumn(MICROS, F.coalesce(F.unix_micros(F.col(self.time)), zero))
        return df, self._replace(columns=tuple(df.columns))

    def grouping(self) -> list:
        """The columns to group by: the keys, then where the long keys are null."""
        return list(self.keys) + [null_flag(k) for k in self.keys if k in self.longs]

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
            nulls = frame.pop(null_flag(column)).to_numpy(np.bool_)
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
            times = datetimes_ns(frame.pop(MICROS).to_numpy(np.int64).view("datetime64[us]"), what, one=True)
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


def watermark_at(watermark_ms: int):
    """Spark's watermark (milliseconds; 0 before the first) as nanoseconds, or -inf."""
    return watermark_ms * NANOS_PER_MS if watermark_ms > 0 else -math.inf




def watermarked(df, order_by: str, delay: str):
    """``df`` with the watermark on ``order_by``, its rows still carrying a plain copy of that column.

    The stateful operator drops, uncounted, input rows whose event-time column is
    at or behind the previous micro-batch's watermark; without the event-time mark
    on the column every row reaches the processor, which counts the late ones
    (:class:`~winagg.spark.dropped.DroppedEvents`) or, with ``slide=``, keeps them in the windows not yet reported.
    """
    from pyspark.sql import functions as F

    return df.withWatermark(order_by, delay).withColumn(order_by, F.col(order_by) + F.expr("INTERVAL 0 SECONDS"))
