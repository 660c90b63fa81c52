"""The table of algorithms: names, metadata, capabilities, and the default choices.

Every module in ``winagg.algos.fifo`` and ``winagg.algos.ooo`` that defines ``INFO`` (a
dict of :class:`AlgorithmInfo` fields) and ``build(ops, **options)`` is an
algorithm, registered under its module name; :func:`winagg.make` wraps any of them in
the one per-item :class:`~winagg.windows.aggregator.Aggregator`.

When it finds an algorithm, the registry builds it once in plain Python and
reads what it offers from the functions it returns (the protocols of
:mod:`winagg.core.capabilities`); an algorithm whose functions do not fit its
``INFO`` is refused then, by name.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from dataclasses import dataclass, field
from typing import List, Tuple

from .. import aggregations
from ..core.capabilities import NATIVE, OUT_OF_ORDER, FifoWindow, native_operations, offered
from ..core.errors import NotInvertibleError, UnknownNameError


@dataclass(frozen=True)
class AlgorithmInfo:
    """What :func:`winagg.algorithms` says of one algorithm.

    ``order`` is ``"fifo"`` (items must arrive in time order) or ``"any"``;
    ``native`` lists the operations the algorithm does natively (the others
    are loops of single operations): those its functions offer (``protocols``,
    see :mod:`winagg.core.capabilities`) and any ``INFO`` names beyond them;
    ``time`` and ``space`` are its paper's bounds; ``options`` maps each
    option :func:`make` accepts to its default.
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
    protocols: Tuple[type, ...] = (FifoWindow,)

    def offers(self, protocol: type) -> bool:
        """Whether the algorithm's functions satisfy ``protocol`` (:mod:`winagg.core.capabilities`)."""
        return protocol in self.protocols

    def load(self):
        """The module that implements the algorithm (it defines ``build(ops, **options)``)."""
        return importlib.import_module(self.module)


#: Listing order: the papers' order, then anything else alphabetically.
_PREFERRED = ("recalc", "soe", "b_int", "flatfat", "flatfit", "two_stacks", "two_stacks_lite",
              "daba", "daba_lite", "lmta", "amta", "fiba")


def _register(name: str, module: str, mod) -> AlgorithmInfo:
    """The algorithm's :class:`AlgorithmInfo`, its capabilities read from a plain-Python build;
    TypeError naming the algorithm when its functions do not fit its ``INFO``."""
    from ..core.ops import python_ops

    info = dict(mod.INFO)
    declared = tuple(info.pop("native", ()))
    funcs = mod.build(python_ops(aggregations.get("sum")), **info.get("options", {}))
    protocols = offered(funcs)
    needed = OUT_OF_ORDER if info["order"] == "any" else (FifoWindow,)
    missing = [p.__name__ for p in needed if p not in protocols]
    if missing:
        raise TypeError(f"algorithm {name!r} ({module}) is {info['order']!r} but its build offers no "
                        f"{', '.join(missing)} (see winagg.core.capabilities)")
    native = native_operations(protocols)
    covered = {op for ops in NATIVE.values() for op in ops}
    unbacked = [op for op in declared if op in covered and op not in native]
    if unbacked:
        raise TypeError(f"algorithm {name!r} ({module}) declares {', '.join(unbacked)} native, but its "
                        f"build has no function for it")
    return AlgorithmInfo(name=name, module=module, native=native + tuple(op for op in declared if op not in native),
                         protocols=protocols, **info)


def _discover() -> dict:
    found = {}
    for package in ("algos.fifo", "algos.ooo"):
        pkg = importlib.import_module(f"winagg.{package}")
        for module in pkgutil.iter_modules(pkg.__path__):
            if module.name.startswith("_"):
                continue
            mod = importlib.import_module(f"winagg.{package}.{module.name}")
            if hasattr(mod, "INFO") and hasattr(mod, "build"):
                found[module.name] = _register(module.name, mod.__name__, mod)
    rank = {name: i for i, name in enumerate(_PREFERRED)}
    return dict(sorted(found.items(), key=lambda kv: (rank.get(kv[0], len(rank)), kv[0])))


_ALGORITHMS = _discover()


def register(module) -> AlgorithmInfo:
    """Add the algorithm that ``module`` (a module with ``INFO`` and ``build(ops, **options)``, as the
    modules of ``winagg.algos.fifo`` and ``winagg.algos.ooo`` are) defines, under the last part of
    its name, and return its entry. Every path that takes an algorithm by name (``winagg.make``,
    ``rolling(..., algorithm=)``, ``Window``, Spark's frames) then runs it. TypeError names an
    algorithm whose functions do not fit its ``INFO``; ValueError a name already taken.
    """
    name = module.__name__.rpartition(".")[2]
    if name in _ALGORITHMS:
        raise ValueError(f"an algorithm named {name!r} exists already: {_ALGORITHMS[name].module}")
    entry = _register(name, module.__name__, module)
    sys.modules.setdefault(module.__name__, module)  # AlgorithmInfo.load finds it by name
    _ALGORITHMS[name] = entry
    return entry


def algorithms() -> List[AlgorithmInfo]:
    """Every algorithm winagg has, with its metadata (see :class:`AlgorithmInfo`)."""
    return list(_ALGORITHMS.values())


def info(name: str) -> AlgorithmInfo:
    """Metadata of one algorithm by name; :class:`~winagg.UnknownNameError` if there is none."""
    if not isinstance(name, str) or name not in _ALGORITHMS:
        raise UnknownNameError(
            f"unknown algorithm {name!r}; known algorithms: {', '.join(_ALGORITHMS)}")
    return _ALGORITHMS[name]


def out_of_order() -> AlgorithmInfo:
    """The algorithm that windows over times in any order run when none is named: the first
    registered whose ``order`` is ``"any"`` (FiBA)."""
    return next(a for a in _ALGORITHMS.values() if a.order == "any")


def check_monoid_fits(algorithm: AlgorithmInfo, monoid) -> None:
    """Refuse a monoid the algorithm cannot run (a missing inverse), naming both."""
    if algorithm.needs_inverse and not monoid.invertible:
        raise NotInvertibleError(
            f"algorithm {algorithm.name!r} subtracts on eviction and needs an invertible monoid, "
            f"but {monoid.name!r} declares no inverse")


def check_options(algorithm: AlgorithmInfo, options: dict) -> dict:
    """The algorithm's options with defaults filled in; TypeError naming any unknown option."""
    unknown = sorted(set(options) - set(algorithm.options))
    if unknown:
        accepted = ", ".join(sorted(algorithm.options)) or "none"
        raise TypeError(f"algorithm {algorithm.name!r} has no option {', '.join(map(repr, unknown))}; "
                        f"its options: {accepted}")
    return {**algorithm.options, **options}


#: The in-order algorithm used when none is named and subtraction is not exact: Two-Stacks
#: Lite had the highest compiled throughput of the exact algorithms for sum, max, geomean
#: and bloom (README, "Performance"). Its rare O(n) flips do not matter to a whole-array
#: call; per-item users who need a flat worst case pick daba_lite.
DEFAULT_FIFO = "two_stacks_lite"


def choose_algorithm(spec, integer_input: bool) -> str:
    """The in-order algorithm :func:`winagg.rolling`, :class:`winagg.Window` and Spark's frames run when
    none is named, for a compiled description ``spec`` (None: plain Python).

    Subtract-on-evict only where it is exact (integer sums and counts);
    otherwise Two-Stacks Lite, whose partials come only from items in the
    window, so float results never carry residue from evicted items.
    """
    if spec is not None and spec.exact_inverse and (integer_input or spec.key == "count"):
        return "soe"
    return DEFAULT_FIFO
