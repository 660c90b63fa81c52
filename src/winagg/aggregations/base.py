"""The base class of built-in aggregations and their compiled description."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from ..layout import Layout
from ..monoid import Monoid


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
                     inverse: bool = False, name: Optional[str] = None):
        lift_py = spec.lift.py_func
        # None is a missing value, as NaN is (pandas and Spark read both as null); the
        # compiled lifts see NaN, so Python mode hands them NaN too and both agree.
        if self.positional:
            def lift(item):
                value, position = item
                return lift_py(np.nan if value is None else value, position)
        else:
            def lift(item):
                return lift_py(np.nan if item is None else item, 0)
        inv = spec.inverse.py_func if (inverse and spec.inverse is not None) else None
        Monoid.__init__(
            self,
            spec.identity if identity is None else identity,
            spec.combine.py_func,
            lift,
            lower if lower is not None else spec.lower.py_func,
            commutative=commutative,
            inverse=inv,
            name=name or type(self).__name__.lower(),
        )

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


def _rebuild(cls, args, kwargs):
    return cls(*args, **kwargs)


def float_input(dtype) -> bool:
    """True unless ``dtype`` is an integer or boolean type (those keep integer partials)."""
    return not (np.issubdtype(dtype, np.integer) or np.issubdtype(dtype, np.bool_))
