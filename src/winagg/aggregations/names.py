"""The built-in aggregations by name: :func:`get` and :func:`names`."""

from __future__ import annotations

from ..core.errors import UnknownNameError
from ..core.monoid import Monoid
from .base import Aggregation
from .numeric import (ArgMax, ArgMin, Count, GeoMean, Max, MaxCount, Mean, Min, MinCount,
                      RelativeVariation, Stddev, StddevPop, Sum, Variance, VariancePop)
from .order import M4, Collect, First, Last
from .quantile import Median, Quantile, Rank
from .sketches import Bloom, CountMin, HyperLogLog, QuantileSketch

BUILTINS = (Count, Sum, Mean, Min, Max, ArgMin, ArgMax, MinCount, MaxCount, Variance, VariancePop,
            Stddev, StddevPop, GeoMean, RelativeVariation, M4, First, Last, Collect, Bloom, CountMin,
            HyperLogLog, Median, Quantile, Rank, QuantileSketch)

_BY_NAME = {alias: cls for cls in BUILTINS for alias in cls.aliases}


def names() -> list:
    """Every name :func:`get` accepts."""
    return sorted(_BY_NAME)


def get(aggregation) -> Monoid:
    """An aggregation from a name (``"max"``), a class (``Max``) or an instance (returned as is)."""
    if isinstance(aggregation, Monoid):
        return aggregation
    if isinstance(aggregation, type) and issubclass(aggregation, Aggregation):
        return aggregation()
    if isinstance(aggregation, str):
        cls = _BY_NAME.get(aggregation.lower())
        if cls is None:
            raise UnknownNameError(
                f"unknown aggregation {aggregation!r}; known names: {', '.join(names())}")
        return cls()
    raise TypeError(f"expected an aggregation name, class or Monoid, got {type(aggregation).__name__}")
