"""FiBA's compiled operations, built once per (FiBA options, aggregation, time type).

The loops over them are :mod:`winagg.driver`'s out-of-order driver (rolling over
unsorted times, operation scripts) and :class:`winagg.Window`'s batch kernel.
"""

from __future__ import annotations

from ..ops import compiled_ops
from .fiba import INFO, build

_kernels: dict = {}


def fiba_options(options=None) -> dict:
    """FiBA's compile-time options: the registry's defaults updated by ``options`` (no ``check``)."""
    merged = {**INFO["options"], **(options or {})}
    merged.pop("check", None)
    return merged


def tree_funcs(spec, options=None, times="float64"):
    """FiBA's compiled operations for one aggregation, options and time type."""
    opts = fiba_options(options)
    key = ("funcs", tuple(sorted(opts.items())), spec.key, times)
    if key not in _kernels:
        _kernels[key] = build(compiled_ops(spec), times=times, **opts)
    return _kernels[key]
