"""Numeric aggregations, each written once as numba functions.

Missing values (NaN) are skipped, as pandas and Spark skip them: they lift to
the identity. Float partials are built only from the items in the window
(no subtraction), so a window of zeros after large values sums to exactly 0.0.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from ..core.layout import scalar_layout, tuple_layout
from .base import Aggregation, Compiled, float_input

INF = np.inf
NAN = np.nan


# ---------------------------------------------------------------- count, sum
@nb.njit(cache=True)
def _count_lift(x, row):
    return np.int64(0) if x != x else np.int64(1)


@nb.njit(cache=True)
def _add(a, b):
    return a + b


@nb.njit(cache=True)
def _negate(a):
    return -a


@nb.njit(cache=True)
def _same(a):
    return a


@nb.njit(cache=True)
def _float_lift(x, row):
    return np.float64(x) if x == x else 0.0


@nb.njit(cache=True)
def _int_lift(x, row):
    return np.int64(x)


class Count(Aggregation):
    """Number of non-missing items in the window."""

    aliases = ("count",)
    defined_when_empty = True
    keyed_input = True

    def __init__(self):
        super().__init__()
        self._spec = Compiled("count", _count_lift, _add, _same, np.int64(0), scalar_layout(np.int64),
                              np.int64, _negate, exact_inverse=True, commutative=True)
        self._python_from(self._spec, identity=0, commutative=True, inverse=True, name="count")

    def compiled_for(self, dtype):
        return self._spec


class Sum(Aggregation):
    """Sum of the items (missing values skipped; NaN for a window without a value, as in pandas)."""

    aliases = ("sum",)
    nan_without_values = True

    def __init__(self):
        super().__init__()
        self._float = Compiled("sum_f", _float_lift, _add, _same, 0.0, scalar_layout(np.float64),
                               np.float64, _negate, commutative=True)
        self._int = Compiled("sum_i", _int_lift, _add, _same, np.int64(0), scalar_layout(np.int64),
                             np.int64, _negate, exact_inverse=True, commutative=True)
        self._python_from(self._float, identity=0, commutative=True, inverse=True, name="sum",
                          lift=_exact_sum_lift)

    def compiled_for(self, dtype):
        return self._float if float_input(dtype) else self._int


def _exact_sum_lift(x, row):
    """Python mode keeps integers as Python ints, so an int sum is exact (float64 would round
    above 2**53), beyond int64 too, where the int64 kernels raise OverflowError; floats and
    missing values lift as compiled."""
    if isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)):
        return int(x)
    if x != x:
        return 0  # a missing value adds an int 0: beside ints it must not turn the sum into a float
    return _float_lift.py_func(x, row)


# ---------------------------------------------------------------- mean
@nb.njit(cache=True)
def _mean_lift(x, row):
    return (np.float64(x), np.int64(1)) if x == x else (0.0, np.int64(0))


@nb.njit(cache=True)
def _mean_lift_int(x, row):
    return (np.int64(x), np.int64(1))


@nb.njit(cache=True)
def _pair_add(a, b):
    return (a[0] + b[0], a[1] + b[1])


@nb.njit(cache=True)
def _pair_negate(a):
    return (-a[0], -a[1])


@nb.njit(cache=True)
def _mean_lower(a):
    return a[0] / a[1] if a[1] > 0 else np.nan


class Mean(Aggregation):
    """Arithmetic mean (NaN for an empty window). Partial: (sum, count)."""

    aliases = ("mean", "avg")

    def __init__(self):
        super().__init__()
        self._float = Compiled("mean_f", _mean_lift, _pair_add, _mean_lower, (0.0, np.int64(0)),
                               tuple_layout(np.float64, np.int64), np.float64, _pair_negate, commutative=True)
        self._int = Compiled("mean_i", _mean_lift_int, _pair_add, _mean_lower, (np.int64(0), np.int64(0)),
                             tuple_layout(np.int64, np.int64), np.float64, _pair_negate,
                             exact_inverse=True, commutative=True)
        self._python_from(self._float, identity=(0, 0), commutative=True, inverse=True, name="mean",
                          lift=_exact_mean_lift)

    def compiled_for(self, dtype):
        return self._float if float_input(dtype) else self._int


def _exact_mean_lift(x, row):
    """Python mode keeps integers as Python ints, as for sums: subtracting on eviction (soe) is
    then exact, where float64 partials of large integers cancel to 0."""
    if isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)):
        return (int(x), 1)
    if x != x:
        return (0, 0)
    return _mean_lift.py_func(x, row)


# ---------------------------------------------------------------- min, max
@nb.njit(cache=True)
def _max_lift(x, row):
    return np.float64(x) if x == x else -np.inf


@nb.njit(cache=True)
def _min_lift(x, row):
    return np.float64(x) if x == x else np.inf


@nb.njit(cache=True)
def _max(a, b):
    return a if a >= b else b


@nb.njit(cache=True)
def _min(a, b):
    return a if a <= b else b


def _exact_extreme_lift(float_lift):
    """Python mode keeps integers as Python ints, so the largest (smallest) of big integers is
    the integer itself, not its float64 rounding; floats and missing values lift as compiled."""
    def lift(x, row):
        if isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)):
            return int(x)
        return float_lift.py_func(x, row)
    return lift


class Max(Aggregation):
    """Largest item (NaN for a window without a value); integers stay integers (int64 compiled)."""

    aliases = ("max",)
    keeps_input_type = True
    nan_without_values = True

    def __init__(self):
        super().__init__()
        self._spec = Compiled("max", _max_lift, _max, _same, -INF, scalar_layout(np.float64), np.float64,
                              commutative=True)
        self._int = Compiled("max_i", _int_lift, _max, _same, np.int64(np.iinfo(np.int64).min),
                             scalar_layout(np.int64), np.int64, commutative=True)
        self._python_from(self._spec, commutative=True, name="max", lift=_exact_extreme_lift(_max_lift))

    def compiled_for(self, dtype):
        return self._spec if float_input(dtype) else self._int


class Min(Aggregation):
    """Smallest item (NaN for a window without a value); integers stay integers (int64 compiled)."""

    aliases = ("min",)
    keeps_input_type = True
    nan_without_values = True

    def __init__(self):
        super().__init__()
        self._spec = Compiled("min", _min_lift, _min, _same, INF, scalar_layout(np.float64), np.float64,
                              commutative=True)
        self._int = Compiled("min_i", _int_lift, _min, _same, np.int64(np.iinfo(np.int64).max),
                             scalar_layout(np.int64), np.int64, commutative=True)
        self._python_from(self._spec, commutative=True, name="min", lift=_exact_extreme_lift(_min_lift))

    def compiled_for(self, dtype):
        return self._spec if float_input(dtype) else self._int


# ---------------------------------------------------------------- argmin, argmax
@nb.njit(cache=True)
def _argmax_lift(x, row):
    return (np.float64(x), np.int64(row)) if x == x else (-np.inf, np.int64(-1))


@nb.njit(cache=True)
def _argmin_lift(x, row):
    return (np.float64(x), np.int64(row)) if x == x else (np.inf, np.int64(-1))


@nb.njit(cache=True)
def _argmax_combine(a, b):
    # Ties go to the older (left) item, so the operator is not commutative.
    if b[1] >= 0 and (a[1] < 0 or b[0] > a[0]):
        return b
    return a


@nb.njit(cache=True)
def _argmin_combine(a, b):
    if b[1] >= 0 and (a[1] < 0 or b[0] < a[0]):
        return b
    return a


@nb.njit(cache=True)
def _arg_lower(a):
    return a[1]


class ArgMax(Aggregation):
    """Position of the largest item, the oldest one on ties (-1 for an empty window).

    In :func:`winagg.rolling` the position is the row number in the input. Items
    given to an aggregator directly are ``(value, position)`` pairs.
    """

    aliases = ("argmax",)
    positional = True

    def __init__(self):
        super().__init__()
        self._spec = Compiled("argmax", _argmax_lift, _argmax_combine, _arg_lower, (-INF, np.int64(-1)),
                              tuple_layout(np.float64, np.int64), np.int64, positional=True)
        self._python_from(self._spec, commutative=False, name="argmax")

    def compiled_for(self, dtype):
        return self._spec


class ArgMin(Aggregation):
    """Position of the smallest item, the oldest one on ties (-1 for an empty window)."""

    aliases = ("argmin",)
    positional = True

    def __init__(self):
        super().__init__()
        self._spec = Compiled("argmin", _argmin_lift, _argmin_combine, _arg_lower, (INF, np.int64(-1)),
                              tuple_layout(np.float64, np.int64), np.int64, positional=True)
        self._python_from(self._spec, commutative=False, name="argmin")

    def compiled_for(self, dtype):
        return self._spec


# ---------------------------------------------------------------- maxcount, mincount
@nb.njit(cache=True)
def _maxcount_lift(x, row):
    return (np.float64(x), np.int64(1)) if x == x else (-np.inf, np.int64(0))


@nb.njit(cache=True)
def _mincount_lift(x, row):
    return (np.float64(x), np.int64(1)) if x == x else (np.inf, np.int64(0))


@nb.njit(cache=True)
def _maxcount_combine(a, b):
    if a[0] > b[0]:
        return a
    if a[0] < b[0]:
        return b
    return (a[0], a[1] + b[1])


@nb.njit(cache=True)
def _mincount_combine(a, b):
    if a[0] < b[0]:
        return a
    if a[0] > b[0]:
        return b
    return (a[0], a[1] + b[1])


@nb.njit(cache=True)
def _second(a):
    return a[1]


class MaxCount(Aggregation):
    """How many items equal the window's maximum (the paper's running example)."""

    aliases = ("maxcount",)

    def __init__(self):
        super().__init__()
        self._spec = Compiled("maxcount", _maxcount_lift, _maxcount_combine, _second, (-INF, np.int64(0)),
                              tuple_layout(np.float64, np.int64), np.int64, commutative=True)
        self._python_from(self._spec, commutative=True, name="maxcount")

    def compiled_for(self, dtype):
        return self._spec


class MinCount(Aggregation):
    """How many items equal the window's minimum."""

    aliases = ("mincount",)

    def __init__(self):
        super().__init__()
        self._spec = Compiled("mincount", _mincount_lift, _mincount_combine, _second, (INF, np.int64(0)),
                              tuple_layout(np.float64, np.int64), np.int64, commutative=True)
        self._python_from(self._spec, commutative=True, name="mincount")

    def compiled_for(self, dtype):
        return self._spec


# ---------------------------------------------------------------- variance, stddev
@nb.njit(cache=True)
def _moments_lift(x, row):
    return (1.0, np.float64(x), 0.0) if x == x else (0.0, 0.0, 0.0)


@nb.njit(cache=True)
def _moments_combine(a, b):
    # Chan et al.'s pairwise update of (count, mean, sum of squared deviations).
    if a[0] == 0.0:
        return b
    if b[0] == 0.0:
        return a
    n = a[0] + b[0]
    if n == 0.0:  # an inverse cancelled every item
        return (0.0, 0.0, 0.0)
    delta = b[1] - a[1]
    if math.isinf(delta) and math.isfinite(a[1]) and math.isfinite(b[1]):
        # finite means further apart than float64 reaches: weigh them apart, square half the distance
        half = b[1] / 2.0 - a[1] / 2.0
        return (n, a[1] * (a[0] / n) + b[1] * (b[0] / n), a[2] + b[2] + 4.0 * (half * (half * (a[0] * b[0] / n))))
    # delta * (delta * w), not delta * delta * w: the square alone passes float64's range
    # (|delta| > 1.3e154) in windows whose variance does not
    return (n, a[1] + delta * (b[0] / n), a[2] + b[2] + delta * (delta * (a[0] * b[0] / n)))


@nb.njit(cache=True)
def _moments_inverse(a):
    return (-a[0], a[1], -a[2])


def _variance_lower(ddof):
    @nb.njit(cache=True)
    def lower(a):
        dof = a[0] - ddof
        # an infinite item makes the mean infinite or NaN: the variance is NaN, as in pandas
        if dof <= 0.0 or not math.isfinite(a[1]):
            return np.nan
        return max(a[2], 0.0) / dof
    return lower


def _stddev_lower(ddof):
    @nb.njit(cache=True)
    def lower(a):
        dof = a[0] - ddof
        if dof <= 0.0 or not math.isfinite(a[1]):
            return np.nan
        return math.sqrt(max(a[2], 0.0) / dof)
    return lower


_VAR_LOWER = {0: _variance_lower(0), 1: _variance_lower(1)}
_STD_LOWER = {0: _stddev_lower(0), 1: _stddev_lower(1)}


def _check_ddof(ddof):
    if ddof not in (0, 1):
        raise ValueError(f"ddof must be 0 (population) or 1 (sample), got {ddof!r}")


class Variance(Aggregation):
    """Variance: sample (``ddof=1``, like pandas) or population (``ddof=0``).

    Partial: (count, mean, sum of squared deviations), merged pairwise.
    """

    aliases = ("variance", "var")

    def __init__(self, ddof: int = 1):
        _check_ddof(ddof)
        super().__init__(ddof)
        self._spec = Compiled(f"var{ddof}", _moments_lift, _moments_combine, _VAR_LOWER[ddof], (0.0, 0.0, 0.0),
                              tuple_layout(np.float64, np.float64, np.float64), np.float64, _moments_inverse,
                              commutative=True)
        self._python_from(self._spec, commutative=True, inverse=True, name=f"variance(ddof={ddof})")

    def compiled_for(self, dtype):
        return self._spec


class Stddev(Aggregation):
    """Standard deviation: sample (``ddof=1``, like pandas) or population (``ddof=0``)."""

    aliases = ("stddev", "std")

    def __init__(self, ddof: int = 1):
        _check_ddof(ddof)
        super().__init__(ddof)
        self._spec = Compiled(f"std{ddof}", _moments_lift, _moments_combine, _STD_LOWER[ddof], (0.0, 0.0, 0.0),
                              tuple_layout(np.float64, np.float64, np.float64), np.float64, _moments_inverse,
                              commutative=True)
        self._python_from(self._spec, commutative=True, inverse=True, name=f"stddev(ddof={ddof})")

    def compiled_for(self, dtype):
        return self._spec


# ---------------------------------------------------------------- geomean, relative variation
@nb.njit(cache=True)
def _geomean_lift(x, row):
    # log(0) is -inf, so a zero makes the window's geometric mean exactly 0; a negative
    # item has no real logarithm and makes it NaN. math.log raises for both in Python mode
    # (numba returns -inf and NaN), so the cases are spelled out and both modes agree.
    if x != x:
        return (0.0, np.int64(0))
    if x > 0:
        return (math.log(x), np.int64(1))
    return (-np.inf if x == 0 else np.nan, np.int64(1))


@nb.njit(cache=True)
def _geomean_lower(a):
    return math.exp(a[0] / a[1]) if a[1] > 0 else np.nan


class GeoMean(Aggregation):
    """Geometric mean of positive items. Partial: (sum of logs, count).

    A window holding a 0 gives 0.0; one holding a negative item gives NaN (it has no
    real geometric mean); missing items are skipped; an empty window gives NaN.
    """

    aliases = ("geomean",)

    def __init__(self):
        super().__init__()
        self._spec = Compiled("geomean", _geomean_lift, _pair_add, _geomean_lower, (0.0, np.int64(0)),
                              tuple_layout(np.float64, np.int64), np.float64, _pair_negate, commutative=True)
        self._python_from(self._spec, commutative=True, inverse=True, name="geomean")

    def compiled_for(self, dtype):
        return self._spec


@nb.njit(cache=True)
def _minmax_lift(x, row):
    return (np.float64(x), np.float64(x)) if x == x else (np.inf, -np.inf)


@nb.njit(cache=True)
def _minmax_combine(a, b):
    return (a[0] if a[0] <= b[0] else b[0], a[1] if a[1] >= b[1] else b[1])


@nb.njit(cache=True)
def _relvar_lower(a):
    # An empty window, or a maximum of 0, has no relative variation: NaN. (Dividing by a
    # zero maximum raised ZeroDivisionError compiled and warned in Python mode.)
    if a[1] < a[0] or a[1] == 0.0:
        return np.nan
    return (a[1] - a[0]) / a[1]


class RelativeVariation(Aggregation):
    """Relative variation (max - min) / max. Partial: (min, max).

    NaN for an empty window and for a window whose maximum is 0.
    """

    aliases = ("relvar", "relative_variation")

    def __init__(self):
        super().__init__()
        self._spec = Compiled("relvar", _minmax_lift, _minmax_combine, _relvar_lower, (INF, -INF),
                              tuple_layout(np.float64, np.float64), np.float64, commutative=True)
        self._python_from(self._spec, commutative=True, name="relvar")

    def compiled_for(self, dtype):
        return self._spec


class StddevPop(Stddev):
    """Population standard deviation (``Stddev(ddof=0)``)."""

    aliases = ("stddev_pop", "std_pop")

    def __init__(self):
        super().__init__(0)
        self._args = ()

    def __reduce__(self):
        return (StddevPop, ())


class VariancePop(Variance):
    """Population variance (``Variance(ddof=0)``)."""

    aliases = ("variance_pop", "var_pop")

    def __init__(self):
        super().__init__(0)
        self._args = ()

    def __reduce__(self):
        return (VariancePop, ())
