"""The base class of built-in aggregations and their compiled description."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from ..core import jitcache
from ..core.layout import Layout, tuple_layout
from ..core.monoid import Monoid
from ..values import is_missing


@dataclass(frozen=True)
class Compiled:
    """What a numba kernel needs to run an aggregation.

    ``lift(value, row)`` takes the input value and its row number (used by
    argmin/argmax); ``combine`` and ``lower`` are the monoid's; ``identity``
    is a constant numba can freeze into the kernel. ``key`` names this
    description uniquely so that compiled kernels can be cached by it.
    """

    key: str
    lift: Any
    combine: Any
    lower: Any
    identity: Any
    layout: Layout
    out_dtype: Any
    inverse: Any = None
    #: True when subtracting on eviction gives exactly the same result (integer sums).
    exact_inverse: bool = False
    #: True when ``lift`` reads its row argument (argmin/argmax); others ignore it.
    positional: bool = False
    #: True when ``combine`` is commutative (as the aggregation declares): an algorithm may
    #: then fold a new item into an aggregate that already covers younger items (FiBA's insert).
    commutative: bool = False


class Aggregation(Monoid):
    """A built-in aggregation: a :class:`~winagg.Monoid` that also compiles.

    Subclasses define :meth:`compiled_for` and call :meth:`_python_from` to
    take their Python-mode functions from the very same numba functions
    (their ``py_func``), so each aggregation is written once.
    """

    #: Python-mode ``lift`` takes a ``(value, position)`` pair (argmin/argmax).
    positional = False
    #: Names under which :func:`winagg.aggregations.get` finds this class.
    aliases: tuple = ()

    def __init__(self, *args, **kwargs):
        self._args = args
        self._kwargs = kwargs

    def _python_from(self, spec: Compiled, identity=None, lower=None, *, commutative: bool,
                     inverse: bool = False, name: Optional[str] = None, lift=None):
        """Python mode from the compiled functions' ``py_func``; ``lift(x, row)`` and ``lower``
        replace theirs where Python numbers do better (a Python int sum stays exact)."""
        identity = spec.identity if identity is None else identity
        lift_py, combine_py, lower_py = lift or spec.lift.py_func, spec.combine.py_func, lower or spec.lower.py_func
        inverse_py = spec.inverse.py_func if (inverse and spec.inverse is not None) else None
        if self.nan_without_values:  # the same counted functions as compiled_counted's, in Python
            lift_py, combine_py, lower_py, inverse_py = _counted_functions(lift_py, combine_py, lower_py,
                                                                           inverse_py, _plain)
            identity = (identity, 0)
        # None and pd.NA are a missing value, as NaN is (pandas and Spark read them as null); the
        # compiled lifts see NaN, so Python mode hands them NaN too and both agree.
        if self.positional:
            def lift(item):
                value, position = item
                return lift_py(np.nan if is_missing(value) else value, position)
        else:
            def lift(item):
                return lift_py(np.nan if is_missing(item) else item, 0)
        Monoid.__init__(self, identity, combine_py, lift, lower_py, commutative=commutative, inverse=inverse_py,
                        name=name or type(self).__name__.lower())

    def compiled_counted(self, dtype) -> Optional[Compiled]:
        """:meth:`compiled_for`, lowered as every other path lowers: for an aggregation with
        :attr:`nan_without_values`, a partial that also counts its values, NaN with none.

        :func:`winagg.rolling` keeps the one-number partial (its kernels are the fast path)
        and marks such rows NaN after the loop; a Window's kernels keep state across calls
        and answer from the partial alone, so they run this one.
        """
        spec = self.compiled_for(dtype)
        if spec is None or not self.nan_without_values:
            return spec
        cache = self.__dict__.setdefault("_counted", {})
        if spec.key not in cache:
            lift, combine, lower, inverse = _counted_functions(spec.lift, spec.combine, spec.lower, spec.inverse,
                                                               jitcache.njit)
            cache[spec.key] = Compiled(spec.key + "_counted", lift, combine, lower, (spec.identity, np.int64(0)),
                                       tuple_layout(np.asarray(spec.identity).dtype, np.int64), np.float64,
                                       inverse, exact_inverse=spec.exact_inverse, positional=spec.positional,
                                       commutative=spec.commutative)
        return cache[spec.key]

    def _init_python(self, identity, combine, lift, lower, commutative, name, inverse=None):
        """Set up an aggregation that only runs in plain Python."""
        Monoid.__init__(self, identity, combine, lift, lower, commutative=commutative, inverse=inverse, name=name)

    def compiled_for(self, dtype) -> Optional[Compiled]:
        """The compiled description for input values of ``dtype``, or None if not compiled."""
        return None

    def __reduce__(self):
        # Rebuilt from constructor arguments: numba functions are not part of the pickle.
        return (_rebuild, (type(self), self._args, self._kwargs))

    def __eq__(self, other):
        return type(self) is type(other) and self._args == other._args and self._kwargs == other._kwargs

    def __hash__(self):
        return hash((type(self), self._args, tuple(sorted(self._kwargs.items()))))

    def __repr__(self):
        parts = [repr(a) for a in self._args] + [f"{k}={v!r}" for k, v in self._kwargs.items()]
        return f"{type(self).__name__}({', '.join(parts)})"


def _plain(function):
    return function


def _counted_functions(lift, combine, lower, inverse, compile):
    """``(lift, combine, lower, inverse)`` of a partial ``(partial, values)``: ``values`` counts the
    non-missing items, and a partial of none lowers to NaN. ``compile`` is ``jitcache.njit`` for
    the kernels and the identity for Python mode: one definition serves both."""
    @compile
    def counted_lift(x, row):
        return (lift(x, row), np.int64(0) if x != x else np.int64(1))

    @compile
    def counted_combine(a, b):
        return (combine(a[0], b[0]), a[1] + b[1])

    @compile
    def counted_lower(a):
        return lower(a[0]) if a[1] > 0 else np.nan

    counted_inverse = None
    if inverse is not None:
        @compile
        def counted_inverse(a):
            return (inverse(a[0]), -a[1])

    return counted_lift, counted_combine, counted_lower, counted_inverse


def _rebuild(cls, args, kwargs):
    return cls(*args, **kwargs)


def float_input(dtype) -> bool:
    """True unless ``dtype`` is an integer or boolean type (those keep integer partials)."""
    return not (np.issubdtype(dtype, np.integer) or np.issubdtype(dtype, np.bool_))
