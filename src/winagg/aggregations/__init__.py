"""Built-in aggregations, reachable as classes and by name.

>>> from winagg import aggregations
>>> aggregations.get("max")          # by name
Max()
>>> aggregations.Stddev(ddof=0)      # as a class with parameters
Stddev(0)
"""

from __future__ import annotations

from ..core.monoid import Monoid
from .base import Aggregation, Compiled
from .numeric import (ArgMax, ArgMin, Count, GeoMean, Max, MaxCount, Mean, Min, MinCount,
                      RelativeVariation, Stddev, StddevPop, Sum, Variance, VariancePop)
from .order import M4, Collect, First, Last
from .quantile import Median, Quantile, Rank
from .sketches import Bloom, BloomFilter, CountMin, CountMinSketch, HyperLogLog, QuantileSketch
from .multi import Multi
from .names import BUILTINS, get, names

__all__ = ["Aggregation", "Compiled", "Monoid", "Multi", "get", "names", "BUILTINS", "BloomFilter",
           "CountMinSketch"] + [cls.__name__ for cls in BUILTINS]
