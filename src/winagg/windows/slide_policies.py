"""Window policies beyond count and time: the MTA Window Slide Policy, and several aggregations in one window.

Window Slide Policy (paper 001): after each insert, a predicate
``wsp(total, oldest_prefix) -> bool`` over *partials* (unlowered aggregates)
decides what leaves the window: ``total`` is the whole window's aggregate,
``oldest_prefix`` the aggregate of a prefix of the oldest items, and the
longest prefix for which it holds is evicted. It must be prefix-monotone:
when a prefix may go, so may every shorter one (count, time and the paper's
policies all are). ``lmta`` and ``amta`` find that prefix with O(log n) tests
and evict it in O(log n); every other algorithm tests the oldest items one
by one.

>>> from winagg.windows.slide_policies import SlidePolicy, max_size_policy
>>> monoid, wsp = max_size_policy()            # the paper's experiment policy
>>> window = SlidePolicy(monoid, wsp, "amta")
>>> [window.insert(size) for size in [3, 3, 3, 3, 2]]   # each item is the window size it wants
[0, 0, 0, 1, 2]
>>> len(window)
2

Several aggregations sharing one window (the paper's multi-dimensional
partials): :class:`Multi` is one aggregation whose partial is the tuple of
its members' partials, so one window runs one eviction path for all.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Callable, Optional

import numba as nb
import numpy as np

from .. import aggregations
from ..aggregations.base import Compiled
from ..core.capabilities import SlidePolicyWindow
from ..core.layout import tuple_layout
from ..core.monoid import Monoid
from .aggregator import make


class SlidePolicy:
    """A window whose contents a Window Slide Policy decides.

    Parameters
    ----------
    aggregation:
        The window's aggregation (name, class, instance or :class:`winagg.Monoid`);
        the policy sees its partials.
    wsp:
        ``wsp(total, oldest_prefix) -> bool``, prefix-monotone (see the module docs).
    algorithm:
        Any in-order algorithm; ``"amta"`` (default) and ``"lmta"`` enforce the policy
        natively in O(log n), the others by testing the oldest items one at a time.
    """

    def __init__(self, aggregation: Any, wsp: Callable[[Any, Any], bool], algorithm: str = "amta",
                 **options):
        self.monoid = aggregations.get(aggregation)
        self.wsp = wsp
        self.aggregator = make(algorithm, self.monoid, **options)
        self._native = self.aggregator.algorithm.offers(SlidePolicyWindow)
        # other algorithms cannot show their oldest items: keep their partials alongside
        self._partials: Optional[deque] = None if self._native else deque()

    def insert(self, value, time=None) -> int:
        """Append ``value``, then evict what the policy allows; returns how many items left."""
        self.aggregator.insert(value, time)
        if self._partials is not None:
            self._partials.append(self.monoid.lift(value))
        return self.enforce()

    def enforce(self) -> int:
        """Evict the longest oldest prefix the policy allows now; returns its length."""
        if self._native:
            return self.aggregator.enforce(self.wsp)
        total = self.aggregator.partial()
        removed = self.monoid.identity
        count = 0
        while self._partials:
            candidate = self.monoid.combine(removed, self._partials[0])
            if not self.wsp(total, candidate):
                break
            removed = candidate
            self._partials.popleft()
            self.aggregator.evict()
            count += 1
        return count

    def query(self):
        """The lowered aggregate of the window."""
        return self.aggregator.query()

    def partial(self):
        """The unlowered aggregate of the window (the policy's ``total``)."""
        return self.aggregator.partial()

    def __len__(self) -> int:
        return len(self.aggregator)

    def __repr__(self):
        return f"<SlidePolicy window over {self.aggregator!r}>"


def enforce_policy(aggregator, wsp, total=None) -> int:
    """Enforce ``wsp`` on an ``lmta``/``amta`` aggregator in O(log n); returns how many items left.

    Other algorithms cannot show their oldest items; wrap them in :class:`SlidePolicy`.
    """
    if not aggregator.algorithm.offers(SlidePolicyWindow):
        raise TypeError(f"{aggregator!r} has no native slide policy; use winagg.windows.slide_policies.SlidePolicy")
    return aggregator.enforce(wsp, total)


# ---------------------------------------------------------------- the paper's experiment policy
@nb.njit(cache=True)
def _sized_lift(max_size, row):
    return (np.int64(1), np.int64(max_size))


@nb.njit(cache=True)
def _sized_combine(older, younger):
    # the newest item's size wins; an empty side (count 0) is neutral, so (0, 0) is the identity
    size = younger[1] if younger[0] > 0 else older[1]
    return (older[0] + younger[0], size)


@nb.njit(cache=True)
def _sized_lower(partial):
    return partial[0]


@nb.njit(cache=True)
def max_size_wsp(total, old):
    """The paper's Listing 3: evict ``old`` while the rest still holds ``total``'s max size."""
    return total[0] - old[0] >= total[1]


class CountWithMaxSize(aggregations.Aggregation):
    """The paper's Listing 2 monoid: partial ``(count, max_size)``, the newest max size wins.

    Each item *is* the window size it asks for (an integer); lowered, a
    partial is its count. With :func:`max_size_wsp` it makes a count window
    whose size the data can change at any item.
    """

    aliases = ()

    def __init__(self):
        super().__init__()
        self._spec = Compiled("count_max_size", _sized_lift, _sized_combine, _sized_lower,
                              (np.int64(0), np.int64(0)), tuple_layout(np.int64, np.int64), np.int64)
        self._python_from(self._spec, identity=(0, 0), commutative=False, name="count_max_size")

    def compiled_for(self, dtype):
        return self._spec


def max_size_policy():
    """``(monoid, wsp)`` of the paper's experiments: a count window sized by its newest item."""
    return CountWithMaxSize(), max_size_wsp


def max_time_policy(duration):
    """``(monoid, wsp)`` of the paper's Listing 1: items are times; keep those within ``duration``
    of the newest (evict ``old`` while ``total - max(old) >= duration``)."""
    monoid = Monoid(None, _latest, name="latest_time")

    def wsp(total, old):
        return total - old >= duration

    return monoid, wsp


def _latest(older, younger):
    if older is None:
        return younger
    if younger is None:
        return older
    return younger if younger > older else older
