"""The table of algorithms: names, metadata, and ``make``."""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Tuple

from . import aggregations
from .errors import NotInvertibleError, UnknownNameError


@dataclass(frozen=True)
class AlgorithmInfo:
    """What :func:`winagg.algorithms` says of one algorithm.

    ``order`` is ``"fifo"`` (items must arrive in time order) or ``"any"``;
    ``native`` lists the operations the algorithm does natively (others are
    loops of single operations); ``time`` and ``space`` are its paper's bounds.
    """

    name: str
    module: str
    order: str
    needs_inverse: bool
    time: str
    space: str
    paper: str
    native: Tuple[str, ...] = ("insert", "evict", "query")
    options: dict = field(default_factory=dict)

    def load(self):
        """The module that implements the algorithm (it defines ``build(ops)``)."""
        return importlib.import_module(f"winagg.{self.module}")


_FIFO = ("recalc", "soe", "two_stacks", "two_stacks_lite", "daba", "daba_lite")


def _fifo_info(name):
    info = importlib.import_module(f"winagg.fifo.{name}").INFO
    return AlgorithmInfo(name=name, module=f"fifo.{name}", **info)


_ALGORITHMS = {name: _fifo_info(name) for name in _FIFO}


def algorithms() -> list:
    """Every algorithm winagg has, with its metadata (see :class:`AlgorithmInfo`)."""
    return list(_ALGORITHMS.values())


def info(name: str) -> AlgorithmInfo:
    """Metadata of one algorithm by name; :class:`~winagg.UnknownNameError` if there is none."""
    if not isinstance(name, str) or name not in _ALGORITHMS:
        raise UnknownNameError(
            f"unknown algorithm {name!r}; known algorithms: {', '.join(_ALGORITHMS)}")
    return _ALGORITHMS[name]


def check_monoid_fits(algorithm: AlgorithmInfo, monoid) -> None:
    """Refuse a monoid the algorithm cannot run (a missing inverse), naming both."""
    if algorithm.needs_inverse and not monoid.invertible:
        raise NotInvertibleError(
            f"algorithm {algorithm.name!r} subtracts on eviction and needs an invertible monoid, "
            f"but {monoid.name!r} declares no inverse")


def make(algorithm: str, aggregation: Any, **options):
    """A new, empty aggregator running ``algorithm`` over ``aggregation``.

    ``aggregation`` is a name (``"max"``), a built-in class or instance, or a
    :class:`winagg.Monoid`. Per-item calls run in plain Python; whole loops run
    compiled through :func:`winagg.rolling`.
    """
    from .aggregator import FifoAggregator

    algo = info(algorithm)
    monoid = aggregations.get(aggregation)
    check_monoid_fits(algo, monoid)
    if algo.order == "fifo":
        if options:
            raise TypeError(f"algorithm {algorithm!r} takes no options, got {sorted(options)}")
        return FifoAggregator(algo, monoid)
    raise UnknownNameError(f"algorithm {algorithm!r} cannot be made here")  # pragma: no cover
