"""winagg: sliding-window aggregation for any monoid, at compiled speed.

>>> import winagg
>>> agg = winagg.make("daba_lite", "max")
>>> agg.insert(3); agg.insert(5); agg.evict(); agg.query()
5.0
>>> winagg.rolling([1.0, 2.0, 3.0, 4.0], window=2, agg="sum")
array([1., 3., 5., 7.])
"""

from . import aggregations
from .core.errors import (EmptyWindowError, InvalidTimeError, NotInvertibleError, OutOfOrderError,
                          StoreCorruptError, StoreLockedError, UnknownNameError, UnsupportedOperationError,
                          WinaggError)
from .core.monoid import Monoid
from .algos.registry import AlgorithmInfo, algorithms
from .windows.rolling import rolling
from .aggregations import Multi
from .windows.aggregator import make
from .windows.window import Window, WindowResult

__version__ = "0.1.0"

__all__ = ["Monoid", "Multi", "aggregations", "make", "algorithms", "AlgorithmInfo", "rolling", "Window", "WindowResult",
           "WinaggError", "OutOfOrderError", "EmptyWindowError", "InvalidTimeError",
           "NotInvertibleError", "UnknownNameError", "UnsupportedOperationError", "StoreCorruptError", "StoreLockedError"]
