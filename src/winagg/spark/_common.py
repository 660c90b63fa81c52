"""What every module of :mod:`winagg.spark` shares: its error, column names and types, state formats."""

from __future__ import annotations

from typing import Sequence, Union

from ..core.errors import WinaggError


class SparkInputError(WinaggError, ValueError):
    """A DataFrame, column or window that :func:`sliding` cannot work with."""


NANOS_PER_DAY = 86_400 * 1_000_000_000


def column_names(columns: Union[str, Sequence[str], None]) -> list:
    if columns is None:
        return []
    return [columns] if isinstance(columns, str) else list(columns)


def arrow_type(spark_type):
    from pyspark.sql.pandas.types import to_arrow_type

    return to_arrow_type(spark_type, timezone="UTC")


def spark_type(arrow_type):
    from pyspark.sql.pandas.types import from_arrow_type

    return from_arrow_type(arrow_type)


def check_columns(df, names, role):
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
