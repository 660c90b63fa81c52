"""The aggregation contract: a monoid with lift and lower.

An aggregation maps each input with ``lift`` to a partial aggregate, merges
partials with ``combine`` (associative, the left argument holds the older
data), starts from ``identity``, and turns a partial into the answer with
``lower``. Commutativity and an inverse are optional declarations that some
algorithms use.
"""

from __future__ import annotations

from typing import Any, Callable, Optional


def _same(x):
    return x


class Monoid:
    """A user-defined aggregation built from plain Python callables.

    Parameters
    ----------
    identity:
        The partial of an empty window; ``combine(identity, p) == p == combine(p, identity)``.
    combine:
        ``combine(older, younger) -> partial``; must be associative.
    lift:
        ``lift(item) -> partial`` (default: the item itself).
    lower:
        ``lower(partial) -> answer`` (default: the partial itself).
    commutative:
        Declare that ``combine(a, b) == combine(b, a)``.
    inverse:
        ``inverse(p)`` such that ``combine(inverse(p), combine(p, q)) == q``; needed by ``soe``.
    name:
        A label used in reprs and reports.

    Notes
    -----
    Partials are treated as immutable values: ``combine`` must return a new
    partial rather than modify an argument.
    """

    # What every window layer (winagg.rolling, winagg.Window, winagg.spark) reads about a
    # monoid's answers; a built-in aggregation declares its own (winagg.aggregations).
    #: A window without a value has an answer, the lowered identity (0 for count, an empty
    #: sketch); otherwise it has none (null in Spark).
    defined_when_empty = False
    #: Items need only a stable key (count, sketches), so strings and other values run compiled.
    keyed_input = False
    #: The answer is one of the items: Spark keeps the input column's type.
    keeps_input_type = False
    #: Every path answers NaN, as pandas does, for a window without a value, where the
    #: identity's lowering would say 0, inf or -inf (see Aggregation.compiled_counted).
    nan_without_values = False
    #: ``lift`` takes a ``(value, position)`` pair, position being the item's arrival number
    #: (argmin, argmax); the window layers pair each value with it.
    positional = False

    def __init__(
        self,
        identity: Any,
        combine: Callable[[Any, Any], Any],
        lift: Optional[Callable[[Any], Any]] = None,
        lower: Optional[Callable[[Any], Any]] = None,
        *,
        commutative: bool = False,
        inverse: Optional[Callable[[Any], Any]] = None,
        name: Optional[str] = None,
    ):
        if not callable(combine):
            raise TypeError(f"combine must be callable, got {type(combine).__name__}")
        for label, fn in (("lift", lift), ("lower", lower), ("inverse", inverse)):
            if fn is not None and not callable(fn):
                raise TypeError(f"{label} must be callable or None, got {type(fn).__name__}")
        self.identity = identity
        self.combine = combine
        self.lift = lift if lift is not None else _same
        self.lower = lower if lower is not None else _same
        self.commutative = bool(commutative)
        self.inverse = inverse
        self.name = name or getattr(combine, "__name__", "monoid")

    @property
    def invertible(self) -> bool:
        """True when the monoid declares an inverse (subtract-on-evict can use it)."""
        return self.inverse is not None

    def compiled_for(self, dtype):
        """The numba kernel description for inputs of ``dtype``; None: user monoids run in Python."""
        return None

    def fold(self, items) -> Any:
        """Lowered aggregate of ``items`` by a plain left-to-right fold (the reference answer)."""
        acc = self.identity
        for item in items:
            acc = self.combine(acc, self.lift(item))
        return self.lower(acc)

    def __repr__(self) -> str:
        return f"Monoid({self.name!r}, commutative={self.commutative}, invertible={self.invertible})"

    def __reduce_ex__(self, protocol):
        # Lambdas and local functions do not pickle by name, so a Monoid's fields go through
        # cloudpickle, which sends them by value (and importable functions still by name).
        # Subclasses (the built-in aggregations, Multi) pickle in their own way.
        if type(self) is not Monoid:
            return super().__reduce_ex__(protocol)
        import cloudpickle

        return (_rebuild_monoid, (cloudpickle.dumps(self.__dict__, protocol=protocol),))


def _rebuild_monoid(blob: bytes) -> Monoid:
    import pickle

    monoid = Monoid.__new__(Monoid)
    monoid.__dict__.update(pickle.loads(blob))
    return monoid
