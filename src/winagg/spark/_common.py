"""What every module of :mod:`winagg.spark` shares: its error, column names and types, state formats."""

from __future__ import annotations

from typing import Sequence, Union

from ..core.errors import WinaggError


class SparkInputError(WinaggError, ValueError):
    """A DataFrame, column or window that :func:`winagg.spark.sliding` cannot work with."""


#: A date's day in nanoseconds, winagg's time unit.
NANOS_PER_DAY = 86_400 * 1_000_000_000


def column_names(columns: Union[str, Sequence[str], None]) -> list:
    """A column argument (one name, several, or None) as a list of names."""
    if columns is None:
        return []
    return [columns] if isinstance(columns, str) else list(columns)


def arrow_type(spark_type):
    """The Arrow type of a Spark type, timestamps in UTC."""
    from pyspark.sql.pandas.types import to_arrow_type

    return to_arrow_type(spark_type, timezone="UTC")


def spark_type(arrow_type):
    """The Spark type of an Arrow type."""
    from pyspark.sql.pandas.types import from_arrow_type

    return from_arrow_type(arrow_type)


def check_columns(df, names, role):
    """SparkInputError naming the first of ``names`` that ``df`` lacks (``role``: what the column is for)."""
    missing = [n for n in names if n not in df.columns]
    if missing:
        raise SparkInputError(f"{role} column {missing[0]!r} is not in the DataFrame (columns: {', '.join(df.columns)})")


def checked_format(state, expected: int, what: str):
    """``state`` (unpickled from a checkpoint) if its ``format`` is ``expected``; otherwise a
    SparkInputError naming both (a state without one was written before formats were kept: 1)."""
    found = getattr(state, "format", 1)
    if found != expected:
        raise SparkInputError(f"this checkpoint keeps its keys' {what} in state format {found}, this winagg "
                              f"reads format {expected}: start the query from a new checkpoint")
    return state


def arrow_iter_udf(function, return_type):
    """``function`` as a nondeterministic scalar Arrow iterator UDF: batches of Arrow arrays in,
    one array of ``return_type`` out per batch.

    The evaluation type is given rather than read from type hints (the columns vary), and the
    UDF is nondeterministic, so Spark evaluates it once, above the sort that orders its rows.
    """
    import warnings

    from pyspark.sql import functions as F
    from pyspark.util import PythonEvalType

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "It is preferred to specify type hints")
        udf = F.arrow_udf(function, return_type, PythonEvalType.SQL_SCALAR_ARROW_ITER_UDF)
    return udf.asNondeterministic()
