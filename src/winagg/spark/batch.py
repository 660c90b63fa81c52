"""``winagg.spark.sliding``: sliding-window aggregate columns on a Spark DataFrame."""

from __future__ import annotations

import numbers
import os
import site
import sys
import sysconfig
from fractions import Fraction
from typing import Any, Mapping, Optional, Sequence, Union

import pyarrow as pa

from .. import aggregations
from ..times import check_number, duration_in_ticks, duration_ns, is_duration, seconds_ns
from ._common import (NANOS_PER_DAY, SparkInputError, arrow_iter_udf, arrow_type, check_columns, column_names,
                      spark_type)
from .partition import Frame, Output, PartitionWindows, result_type


def range_span(value, order_type, what: str = "range") -> Union[int, float]:
    """``value`` (the ``what`` argument) in the order column's units, exactly: int nanoseconds for
    timestamps (winagg's time unit; Spark keeps microseconds), int days for dates, the column's own
    numbers otherwise. Durations and numbers of seconds are read by :mod:`winagg.times`."""
    arrow = arrow_type(order_type)
    if isinstance(value, bool) or not (is_duration(value) or isinstance(value, numbers.Real)):
        raise SparkInputError(f"{what} must be a number or a duration, got {value!r}")
    if pa.types.is_timestamp(arrow) or pa.types.is_date(arrow):
        span = _time_span(value, pa.types.is_date(arrow), what)
    elif pa.types.is_integer(arrow):
        if is_duration(value) or value != int(check_number(value, what)):
            raise SparkInputError(f"{what} on the integer column needs a whole number, got {value!r}")
        span = int(value)
    elif pa.types.is_floating(arrow) or pa.types.is_decimal(arrow):
        if is_duration(value):
            raise SparkInputError(f"a duration {what} ({value!r}) needs a timestamp or date order column")
        span = float(check_number(value, what))
    else:
        raise SparkInputError(f"a range window needs a numeric, date or timestamp order column, got {order_type.simpleString()}")
    if span < 0:
        raise SparkInputError(f"{what} must not be negative, got {value!r}")
    return span


def _time_span(value, days: bool, what: str) -> int:
    """A duration, or a bare number of seconds (as when the column is cast to a number), in
    nanoseconds or, for a date column (``days``), whole days."""
    if is_duration(value):
        if not days:
            return duration_ns(value, what)
        length = duration_in_ticks(value, "D", 1, what)
    else:
        nanos = seconds_ns(value, what)
        if not days:
            return nanos
        length = Fraction(nanos, NANOS_PER_DAY)
    if length.denominator != 1:
        raise SparkInputError(f"{what} {value!r} is not a whole number of days, as a date column needs")
    return int(length)


def _installed(module) -> bool:
    """True for winagg, the standard library and installed packages: Spark's Python processes import those."""
    name = getattr(module, "__name__", "")
    if name == "__main__":
        return False  # cloudpickle ships __main__ by value already
    if name.split(".")[0] in ("winagg", "builtins") or name in sys.stdlib_module_names:
        return True
    path = getattr(module, "__file__", None)
    if path is None:
        return True
    path = os.path.realpath(path)
    roots = {os.path.realpath(p) for p in (sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["purelib"],
                                           sysconfig.get_paths()["platlib"], *site.getsitepackages())}
    return any(path.startswith(root + os.sep) for root in roots)


def ship_by_value(monoid) -> None:
    """Make the modules of a user monoid travel with it to Spark's Python processes.

    Spark pickles the window function with cloudpickle, which refers to functions
    and classes of an importable module by name; a module of the user's (next to
    the script, say) is not on the workers' path, nor on that of the process
    Spark's driver starts for streaming state. Registered by value, its code goes
    along instead.
    """
    import cloudpickle
    from pyspark import cloudpickle as spark_cloudpickle

    parts = [type(monoid)] + [getattr(monoid, name, None) for name in ("combine", "lift", "lower", "inverse")]
    for part in parts:
        module = sys.modules.get(getattr(part, "__module__", None) or "")
        if module is not None and not _installed(module):
            # Spark's own copy pickles the job; a Monoid pickles its fields with the
            # cloudpickle package (winagg.core.monoid): both must send the module by value.
            for pickler in (spark_cloudpickle, cloudpickle):
                if module.__name__ not in pickler.list_registry_pickle_by_value():
                    pickler.register_pickle_by_value(module)


def _names_quantile(aggregation) -> bool:
    return isinstance(aggregation, str) and aggregation.lower() == "quantile"


def _quantile(name: str, spec: tuple):
    """The exact quantile of ``aggs[name] = ("quantile", column, q)``."""
    if len(spec) != 3:
        raise SparkInputError(f"aggs[{name!r}]: an exact quantile is ('quantile', column, q) with q in [0, 1], "
                              f"got {spec!r}")
    try:
        return aggregations.Quantile(spec[2])
    except (TypeError, ValueError) as error:
        raise SparkInputError(f"aggs[{name!r}]: {error}") from error


def _check_quantile_input(name: str, monoid, column: str, data_type) -> None:
    """Spark's ``percentile`` takes numbers only; so do winagg's exact quantiles and medians."""
    from pyspark.sql.types import NumericType

    if not isinstance(data_type, NumericType):
        raise SparkInputError(f"aggs[{name!r}]: {monoid.name} needs a numeric column; {column!r} is "
                              f"{data_type.simpleString()}")


def parse_outputs(df, aggs: Mapping[str, Any]) -> list:
    outputs = []
    for name, spec in aggs.items():
        if not isinstance(spec, tuple) or len(spec) not in (2, 3):
            raise SparkInputError(f"aggs[{name!r}] must be (aggregation, column) or (aggregation, column, type), "
                                  f"got {spec!r}")
        if name in df.columns:
            raise SparkInputError(f"output column {name!r} already exists in the DataFrame")
        aggregation, column = spec[0], spec[1]
        check_columns(df, [column], "input")
        if _names_quantile(aggregation):
            monoid, spec = _quantile(name, spec), spec[:2]
        else:
            monoid = aggregations.get(aggregation)
        if isinstance(monoid, aggregations.Quantile):
            _check_quantile_input(name, monoid, column, df.schema[column].dataType)
        ship_by_value(monoid)
        input_type = arrow_type(df.schema[column].dataType)
        if len(spec) == 3:
            from pyspark.sql.types import DataType, _parse_datatype_string

            declared = spec[2] if isinstance(spec[2], DataType) else _parse_datatype_string(spec[2])
            output_type = arrow_type(declared)
        else:
            output_type = result_type(monoid, input_type)
            if output_type is None:
                raise SparkInputError(f"cannot tell the type of {name!r} ({monoid!r} over "
                                      f"{df.schema[column].dataType.simpleString()}); give it as a third element, "
                                      f"e.g. ({aggregation!r}, {column!r}, 'double')")
        outputs.append(Output(name, column, monoid, output_type))
    return outputs


def sliding(df, *, partition_by: Union[str, Sequence[str], None], order_by: Union[str, Sequence[str]],
            rows: Optional[int] = None, range: Any = None, aggs: Mapping[str, tuple],
            algorithm: Optional[str] = None, num_partitions: Optional[int] = None, slide: Any = None):
    """``df`` with one sliding-window aggregate column per entry of ``aggs``.

    Parameters
    ----------
    df:
        A Spark DataFrame; its columns are kept.
    partition_by:
        Key column(s): each key has its own windows (None or [] for one).
    order_by:
        The order column(s). Rows are sorted by them within each key (ascending,
        nulls first, as Spark sorts), so out-of-order input is fine.
    rows:
        A row frame: each row aggregates itself and the ``rows - 1`` rows before
        it, like ``rowsBetween(-(rows - 1), 0)``. Among rows with equal order
        values the order is Spark's sort order, which is arbitrary, as it is for
        Spark's own window functions; name more ``order_by`` columns to fix it.
    range:
        A range frame: each row aggregates the rows of its key whose order value
        lies in ``[t - range, t]``, like ``rangeBetween(-range, 0)``. Rows with
        equal order values (peers) are all in each other's frames and get one
        result; rows with a null order value form one group of their own. The
        range is a number in the column's units, or for a timestamp (or date)
        column a duration such as ``"1 hour"``, ``"1d"``, a
        ``datetime.timedelta``, ``pandas.Timedelta`` or ``numpy.timedelta64``
        of any unit; a plain number on a timestamp column means seconds (as
        written: ``0.1`` is 100 ms). Durations are read exactly by
        :mod:`winagg.times`: a calendar length (months, years) or a fraction of
        a nanosecond (of a day on a date column) raises, naming the argument.
        Needs exactly one ``order_by`` column.
    aggs:
        ``{new_column: (aggregation, input_column)}``, with the aggregation a
        name (``"max"``, ``"stddev"``, ``"hll"``, ...), an aggregation object or
        any :class:`winagg.Monoid`; an optional third element gives the result's
        Spark type (a DDL string such as ``"double"`` or a DataType), needed
        when it cannot be told from the monoid. Nulls are skipped and a window
        without values gives null, as in Spark (count gives 0); NaN values are
        skipped too, as pandas skips them; sample stddev/variance of one value
        is null, as in Spark. Min, max, first and last keep the input's type;
        sum of integers is a long, the others are doubles. A sum of longs is
        exact, and one outside the long range raises OverflowError naming the
        output column and the row (or key and window), as Spark's ANSI sum
        raises, never wrapping around; a mean of longs is the correctly rounded
        quotient of the exact sum. ``("quantile", column, q)`` (q in [0, 1]) and
        ``("median", column)`` are exact: Spark's ``percentile(column, q)`` (the
        median its ``percentile(column, 0.5)``) over the same frame, to the bit,
        as doubles of numeric columns, from compiled order statistics
        (:mod:`winagg.spark.quantile`); for a bounded state in hopping windows
        and streams use ``"quantile_sketch"`` (an estimate).
    algorithm:
        The in-order algorithm (default: ``winagg.rolling``'s choice).
    num_partitions:
        Partitions of the repartition by key (default:
        ``spark.sql.shuffle.partitions``).
    slide:
        Hopping windows instead of one result per row: with ``range=size`` on a
        timestamp column, a duration such as ``"1 minute"``. The result has one
        row per key and window ``[k*slide, k*slide + size)`` (aligned to the
        epoch) that holds at least one row: the ``partition_by`` columns,
        ``window_start``, ``window_end`` and the ``aggs`` columns, the rows of
        Spark's ``groupBy(keys, window(t, size, slide)).agg(...)``. Rows with a
        null time are in no window. Each key keeps one aggregator per output
        whatever the number of windows a row lies in (see
        :mod:`winagg.spark.hopping`); ``slide`` need not divide ``size``.

    Notes
    -----
    Built-in aggregations of numbers run in numba kernels, any other monoid in
    plain Python; both carry their window from one Arrow batch to the next, so
    a task holds one window and one batch, not a whole key.
    """
    keys = column_names(partition_by)
    order = column_names(order_by)
    if not order:
        raise SparkInputError("order_by needs at least one column")
    check_columns(df, keys, "partition_by")
    check_columns(df, order, "order_by")
    if (rows is None) == (range is None):
        raise SparkInputError("give exactly one of rows= (a row frame) or range= (a range frame)")
    if rows is not None:
        if isinstance(rows, bool) or not isinstance(rows, numbers.Integral) or rows < 1:
            raise SparkInputError(f"rows must be a whole number >= 1, got {rows!r}")
        frame = Frame(rows=int(rows))
    else:
        if len(order) != 1:
            raise SparkInputError(f"a range frame needs exactly one order_by column, got {order}")
        frame = Frame(span=range_span(range, df.schema[order[0]].dataType))
    if not aggs:
        raise SparkInputError("aggs is empty: name at least one output column")
    outputs = parse_outputs(df, aggs)
    if slide is not None:
        size, slide = hopping_spans(df, order, frame, range, slide)
        return _hopping(df, keys, order[0], size, slide, outputs, num_partitions)
    windows = PartitionWindows(keys, order[0], frame, outputs, algorithm)
    partitioned = df.repartition(num_partitions, *keys) if num_partitions else \
        (df.repartition(*keys) if keys else df.repartition(1))
    return _with_answers(partitioned.sortWithinPartitions(*keys, *order), df.columns, windows)


#: The struct column that carries a partition's answers from the UDF to the output columns.
_ANSWERS = "__winagg_answers"


def _with_answers(ordered, columns, windows: PartitionWindows):
    """``ordered`` (sorted by key, then order) with ``windows``' outputs after ``columns``.

    The outputs come from a scalar Arrow iterator UDF over the columns the windows read, so the
    other columns stay in the JVM (``mapInArrow`` would move every column to Python and back).
    Nondeterministic: Spark then evaluates it once, above the sort, on the rows in their order.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructField, StructType

    result = StructType([StructField(o.name, spark_type(o.arrow_type), True) for o in windows.outputs])
    answers = arrow_iter_udf(windows.answers, result)
    packed = ordered.withColumn(_ANSWERS, answers(*[F.col(_quoted(c)) for c in windows.needed]))
    return packed.select(*[F.col(_quoted(c)) for c in columns],
                         *[F.col(_ANSWERS).getField(o.name).alias(o.name) for o in windows.outputs])


def _quoted(name: str) -> str:
    """A column name as ``F.col`` reads it literally (dots and backticks included)."""
    return "`" + name.replace("`", "``") + "`"


def hopping_spans(df, order, frame: Frame, size, slide):
    """``(size, slide)`` in nanoseconds for hopping windows on the timestamp column ``order[0]``."""
    from pyspark.sql.types import TimestampNTZType, TimestampType

    if frame.span is None:
        raise SparkInputError("slide needs range= (the window size), not rows=")
    if not isinstance(df.schema[order[0]].dataType, (TimestampType, TimestampNTZType)):
        raise SparkInputError(f"slide needs a timestamp order_by column, as Spark's window() does; "
                              f"{order[0]!r} is {df.schema[order[0]].dataType.simpleString()}")
    slide_ns = range_span(slide, df.schema[order[0]].dataType, "slide")
    if slide_ns <= 0:
        raise SparkInputError(f"slide must be a positive duration, got {slide!r}")
    if frame.span <= 0:
        raise SparkInputError(f"range must be a positive duration with slide=, got {size!r}")
    for name, value, nanos in (("range", size, frame.span), ("slide", slide, slide_ns)):
        if nanos % 1000:  # a window bound between two microseconds is no Spark timestamp
            raise SparkInputError(f"{name} {value!r} is not a whole number of microseconds, Spark's time unit")
    return int(frame.span), int(slide_ns)


def _hopping(df, keys, order, size, slide, outputs, num_partitions):
    """:func:`sliding` with ``slide=``: one row per key and window holding rows."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructField, StructType

    from .hopping import WINDOW_COLUMNS, HoppingPartition
    from .partition import compiled_plan, exact_sum_input

    taken = set(keys) | set(WINDOW_COLUMNS)
    clash = [o.name for o in outputs if o.name in taken]
    if clash:
        raise SparkInputError(f"output column {clash[0]!r} is also a key or window column of the hopping result")
    time_type = df.schema[order].dataType
    schema = StructType([df.schema[k] for k in keys] + [StructField(c, time_type, True) for c in WINDOW_COLUMNS]
                        + [StructField(o.name, spark_type(o.arrow_type), True) for o in outputs])
    keyed = {o.column for o in outputs if compiled_plan(o.monoid, arrow_type(df.schema[o.column].dataType))[1]}
    longs = {o.column for o in outputs if exact_sum_input(o.monoid, arrow_type(df.schema[o.column].dataType))}
    windows = HoppingPartition(keys, order, size, slide, outputs, keyed, arrow_type(time_type), longs)
    needed = list(dict.fromkeys(keys + [order] + [o.column for o in outputs]))
    timed = df.where(F.col(order).isNotNull()).select(*needed)
    partitioned = timed.repartition(num_partitions, *keys) if num_partitions else \
        (timed.repartition(*keys) if keys else timed.repartition(1))
    return partitioned.sortWithinPartitions(*keys, order).mapInArrow(windows, schema)
