"""The per-item aggregator of Log MTA and Amortized MTA: the generic wrapper plus the slide policy."""

from __future__ import annotations

import numpy as np

from ..aggregator import FifoAggregator
from ..errors import EmptyWindowError


class MTAAggregator(FifoAggregator):
    """:class:`~winagg.aggregator.FifoAggregator` with the MTA's native operations.

    Besides the common interface it evicts any number of the oldest items in
    O(log n) (:meth:`evict_oldest`) and enforces a Window Slide Policy natively
    (:meth:`enforce`): the tree search of the paper's Algorithm 2, after at
    most about log n single evictions for AMTA.
    """

    def partial(self):
        """The unlowered aggregate of the whole window (what a slide policy sees as ``total``)."""
        return self._funcs.query(self._bufs, self._state)

    def evict_oldest(self, count: int) -> int:
        """Drop the ``count`` oldest items (all of them if there are fewer); returns how many went."""
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)):
            raise TypeError(f"count must be a whole number of items, got {count!r}")
        if count < 0:
            raise ValueError(f"count must be >= 0, got {count}")
        count = int(count)
        count = min(count, len(self))
        if count:
            self._state = self._funcs.bulk_evict(self._bufs, self._state, count)
            self._drop_times(count)
        return count

    def enforce(self, wsp, total=None) -> int:
        """Evict the longest oldest prefix that ``wsp(total, prefix) -> bool`` allows; returns its length.

        ``total`` defaults to the window's aggregate. The policy must be
        prefix-monotone (if a prefix may go, so may every shorter one), as
        every policy of the paper is; the search tests O(log n) prefixes.
        """
        if not len(self):
            return 0
        funcs, bufs = self._funcs, self._bufs
        total = self.partial() if total is None else total
        removed = self.monoid.identity
        singles = 0
        if self.algorithm.name == "amta":
            # single evictions first (amortized O(1) each); after about log n of them,
            # the O(log n) search and bulk eviction take over
            levels = self._state[3]
            while singles < levels and len(self):
                candidate = self.monoid.combine(removed, funcs.oldest(bufs, self._state))
                if not wsp(total, candidate):
                    return singles
                removed = candidate
                self.evict()
                singles += 1
            if not len(self):
                return singles
        count = funcs.removable(bufs, self._state, total, removed, wsp)
        return singles + self.evict_oldest(count)

    def evict(self) -> None:
        """Drop the oldest item; :class:`~winagg.EmptyWindowError` if the window is empty."""
        if not len(self):
            raise EmptyWindowError(f"evict() on an empty window ({self.algorithm.name})")
        super().evict()
