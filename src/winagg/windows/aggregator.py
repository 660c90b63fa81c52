"""The per-item aggregator: any registered algorithm behind one interface, with one time index.

:func:`winagg.make` returns an :class:`Aggregator` for every algorithm. What it can
do beyond insert, evict and query follows from the protocols the algorithm's
functions satisfy (:mod:`winagg.core.capabilities`), never from its name:

* an in-order algorithm keeps its items in arrival order and the aggregator keeps
  their times beside them (:class:`~winagg.windows.time_index.ArrivalTimes`);
* a :class:`~winagg.core.capabilities.TimeWindow` (FiBA) keys its entries by time
  itself: items arrive in any order, and an existing time combines old + new;
* :class:`~winagg.core.capabilities.BulkEvict`, ``BulkInsert``, ``SubWindow``,
  ``Updates`` and ``SlidePolicyWindow`` algorithms have those operations done
  natively; asking an algorithm for an operation it lacks raises
  :class:`~winagg.UnsupportedOperationError`.

Times are numbers or datetimes, converted at the edge by one
:class:`~winagg.windows.time_index.TimeUnit` (datetimes are int nanoseconds inside).
"""

from __future__ import annotations

from typing import Any, Iterable, Optional

import numpy as np

from .. import aggregations
from ..algos.registry import check_monoid_fits, check_options, info
from ..core.capabilities import BulkEvict, BulkInsert, SlidePolicyWindow, SubWindow, TimeWindow, Updates, offered
from ..core.errors import EmptyWindowError, InvalidTimeError, UnsupportedOperationError
from ..core.monoid import Monoid
from ..core.ops import python_ops
from ..core.state import capacity, first, size
from ..core.state import end as end_of
from ..values import item
from .removals import Holes, ItemUpdates
from .time_index import ArrivalTimes, TimeUnit, check_in_order, check_sorted


def _whole_count(count) -> int:
    if isinstance(count, bool) or not isinstance(count, (int, np.integer)):
        raise TypeError(f"count must be a whole number of items, got {count!r}")
    if count < 0:
        raise ValueError(f"count must be >= 0, got {count}")
    return int(count)


def _range_sizes(sizes) -> list:
    sizes = list(sizes)
    for r in sizes:
        if not isinstance(r, (int, np.integer)) or isinstance(r, bool) or r < 0:
            raise ValueError(f"range sizes must be integers >= 0, got {r!r}")
    return sizes


_RANGE_QUERY = "range query; use 'fiba', 'flatfat', 'b_int' or 'flatfit'"


class Aggregator(ItemUpdates):
    """A sliding-window aggregator of one algorithm over one monoid, fed item by item.

    In-order algorithms keep equal times as separate items, and an item inserted
    there without a time gets its arrival number (0, 1, 2, ...); a time-keyed
    algorithm holds one entry per time (``len`` counts entries) and needs a time
    with every item. Every operation either
    completes or raises and leaves the window as it was. Removed items (algorithms
    with ``Updates``) are gone as a dropped row is in pandas: they no longer count in
    ``len``, their times go with them, and ``evict`` drops the oldest live item.
    """

    def __init__(self, algorithm, monoid, capacity: int = 16, ops=None, **options):
        self.algorithm = algorithm
        self.monoid = monoid
        self.options = {**algorithm.options, **options}  # the defaults, then what was given
        self._build(ops)
        self._unit = TimeUnit()
        self._times = None if self._keyed else self._new_times()
        self._holes = Holes()
        self._arrivals = 0
        self._start(capacity)

    def _build(self, ops=None):
        self._funcs = self.algorithm.load().build(python_ops(self.monoid) if ops is None else ops, **self.options)
        self._offers = frozenset(offered(self._funcs))  # protocol checks are slow: once, here
        self._keyed = TimeWindow in self._offers
        self._check = bool(self.options.get("check"))
        self._updates = Updates in self._offers

    def _start(self, capacity):
        self._bufs, self._state = self._funcs.init(capacity)

    def _new_times(self):
        return ArrivalTimes()

    def _after(self) -> None:
        """Run after every change: a window made with ``check=True`` verifies its algorithm's invariants."""
        if self._check:
            self.algorithm.load().check_invariants(self)

    def _needs(self, protocol, operation: str):
        if protocol not in self._offers:
            raise UnsupportedOperationError(f"{self.algorithm.name!r} has no {operation}")

    # ------------------------------------------------------------ inserting
    def insert(self, value: Any, time: Any = None) -> None:
        """Insert ``value`` at ``time`` (default: its arrival number)."""
        # One item skips the batch's lists: a per-item service calls this for every event.
        t, kind = self._unit.inward_one(self._default_time() if time is None else time)
        if not self._keyed:
            youngest = self._times.youngest()
            if youngest is not None and t < youngest:
                check_in_order([t], youngest, lambda i: "time", repr(self.algorithm.name))
        partial = self.monoid.lift(item(value))
        if self._keyed:
            self._insert_keyed([t], [partial])
        else:
            self._make_room(1)
            self._state = self._funcs.insert(self._bufs, self._state, partial)
            self._times.append(t)
        self._unit.kind = kind
        self._arrivals += 1
        self._after()

    def bulk_insert(self, values: Iterable, times: Optional[Iterable] = None) -> None:
        """Insert a batch sorted by time; an in-order window also needs it no older than its youngest time.

        Equal times of a time-keyed window combine in batch order (old + new).
        """
        values = list(values)
        if times is not None:
            times = list(times)
            if len(times) != len(values):
                raise ValueError(f"bulk_insert got {len(values)} values but {len(times)} times")
        self._insert(values, times, lambda i: f"times[{i}]")

    def _insert(self, values, times, what):
        if times is None:
            start = self._default_time()
            times = list(range(start, start + len(values)))
        times, kind = self._unit.inward_all(times, what)
        if self._keyed:
            check_sorted(times, what)
        else:
            check_in_order(times, self._times.youngest(), what, repr(self.algorithm.name))
        partials = [self.monoid.lift(item(v)) for v in values]  # lift everything before changing state
        if not partials:
            return
        if self._keyed:
            self._insert_keyed(times, partials)
        else:
            self._append(times, partials)
        self._unit.kind = kind
        self._arrivals += len(values)
        self._after()

    def _default_time(self):
        if self._keyed:  # its entries are keyed by time: an arrival number would be a made-up key
            raise InvalidTimeError(f"time is None; {self.algorithm.name!r} keys its entries by time")
        return self._arrivals

    def _insert_keyed(self, times, partials):
        funcs, count = self._funcs, len(partials)
        self._bufs, self._state = funcs.reserve(self._bufs, self._state, count)
        if count == 1:
            self._state = funcs.insert_at(self._bufs, self._state, times[0], partials[0])
        else:
            self._state = funcs.bulk_insert(self._bufs, self._state, times, partials, count)

    def _append(self, times, partials):
        self._make_room(len(partials))
        funcs, bufs = self._funcs, self._bufs
        if len(partials) > 1 and BulkInsert in self._offers:
            self._state = funcs.bulk_insert(bufs, self._state, partials, len(partials))
        else:
            state = self._state
            for p in partials:
                state = funcs.insert(bufs, state, p)
            self._state = state
        self._times.extend(times)

    def _make_room(self, count):
        while size(self._state) + count > capacity(self._state):
            if self._holes and len(self) + count <= 3 * capacity(self._state) // 4:
                self._holes.compact(self)
            else:
                self._bufs, self._state = self._funcs.grow(self._bufs, self._state)

    # ------------------------------------------------------------ evicting
    def evict(self) -> None:
        """Drop the oldest (live) item; :class:`EmptyWindowError` if the window is empty."""
        if not len(self):
            raise EmptyWindowError(f"evict() on an empty window ({self.algorithm.name})")
        self._state = self._funcs.evict(self._bufs, self._state)
        if not self._keyed:
            self._times.drop(1)
            self._tidy()
        self._after()

    def bulk_evict(self, time: Any) -> int:
        """Drop every item whose time is <= ``time``; returns how many (live items, or entries) went."""
        t = self._unit.inward(time)
        before = len(self)
        if self._keyed:
            self._state = self._funcs.evict_upto(self._bufs, self._state, t)
        else:
            self._evict_first(self._times.count_upto(t))
        self._after()
        return before - len(self)

    def evict_oldest(self, count: int) -> int:
        """Drop the ``count`` oldest items (all of them if there are fewer); returns how many went."""
        count = min(_whole_count(count), len(self))
        if self._keyed or self._holes:
            for _ in range(count):
                self.evict()
        else:
            self._evict_first(count)
            self._after()
        return count

    def _evict_first(self, count):
        """Drop the ``count`` oldest positions of an in-order window (live or removed)."""
        if not count:
            return
        if BulkEvict in self._offers:
            self._state = self._funcs.bulk_evict(self._bufs, self._state, count)
        else:
            evict, bufs, state = self._funcs.evict, self._bufs, self._state
            for _ in range(count):
                state = evict(bufs, state)
            self._state = state
        self._times.drop(count)
        self._holes.forget_before(first(self._state))
        self._tidy()

    def enforce(self, wsp, total=None) -> int:
        """Evict the longest oldest prefix that ``wsp(total, prefix) -> bool`` allows; returns its length.

        ``total`` defaults to the window's aggregate; see :mod:`winagg.windows.slide_policies`.
        """
        self._needs(SlidePolicyWindow, "window slide policy search")
        return _evict_by_policy(self, wsp, self.partial() if total is None else total)

    # ------------------------------------------------------------ reading
    def partial(self):
        """The unlowered aggregate of the whole window (what a slide policy sees as ``total``)."""
        return self._funcs.query(self._bufs, self._state)

    def query(self, t_from: Any = None, t_to: Any = None) -> Any:
        """The lowered aggregate of the window, or of its items with ``t_from <= time <= t_to``.

        A missing bound is open; an empty window or range gives the identity's lowering.
        Range queries need a ``SubWindow`` algorithm.
        """
        if t_from is None and t_to is None:
            return self.monoid.lower(self._funcs.query(self._bufs, self._state))
        self._needs(SubWindow, _RANGE_QUERY)
        lo = None if t_from is None else self._unit.inward(t_from, "t_from")
        hi = None if t_to is None else self._unit.inward(t_to, "t_to")
        return self._range(lo, hi, after=False)

    def query_after(self, t_after, t_to) -> Any:
        """The lowered aggregate of the items with ``t_after < time <= t_to`` (a half-open range)."""
        lo, hi = self._unit.inward(t_after, "t_after"), self._unit.inward(t_to, "t_to")
        self._needs(SubWindow, _RANGE_QUERY)
        return self._range(lo, hi, after=True)

    def _range(self, lo, hi, after):
        """The lowered aggregate between ``lo`` and ``hi`` (times in the unit; None: open)."""
        if not len(self):
            return self.monoid.lower(self.monoid.identity)
        if self._keyed:
            funcs, bufs = self._funcs, self._bufs
            lo = funcs.oldest(bufs) if lo is None else lo
            hi = funcs.youngest(bufs) if hi is None else hi
            return self.monoid.lower(funcs.range_query(bufs, self._state, lo, hi, after))
        times = self._times
        lo_item = 0 if lo is None else times.count_upto(lo) if after else times.count_before(lo)
        hi_item = len(times) if hi is None else times.count_upto(hi)  # items lo_item .. hi_item - 1
        if hi_item <= lo_item:
            return self.monoid.lower(self.monoid.identity)
        start = first(self._state)  # the oldest item's position
        return self.monoid.lower(self._funcs.range_query(self._bufs, self._state, start + lo_item, start + hi_item))

    def query_ranges(self, sizes) -> list:
        """Aggregates of the ``r`` youngest items for each ``r`` in ``sizes``, in the order given.

        The ranges are evaluated largest first, so that each finds what the larger
        ones left behind (FlatFIT's order: n - 1 combines for all ranges 1..n).
        """
        self._needs(SubWindow, "range query; use 'flatfat', 'b_int' or 'flatfit'")
        if self._keyed:
            raise UnsupportedOperationError(f"{self.algorithm.name!r} answers ranges of times, not of counts")
        sizes = _range_sizes(sizes)
        end, live = end_of(self._state), len(self)
        answers: list = [None] * len(sizes)
        for k in sorted(range(len(sizes)), key=lambda k: -sizes[k]):
            width = min(int(sizes[k]), live)
            start = self._holes.position_of(self, live - width) if width else end
            answers[k] = self.monoid.lower(self._funcs.range_query(self._bufs, self._state, start, end))
        return answers

    def __len__(self) -> int:
        if self._keyed:
            return size(self._state)  # entries: distinct times
        return size(self._state) - len(self._holes.positions)  # positions held, less the removed ones

    def oldest_time(self) -> Any:
        """Time of the oldest (live) item, or None when the window is empty."""
        if not len(self):
            return None
        return self._unit.outward(self._funcs.oldest(self._bufs) if self._keyed else self._times[0])

    def youngest_time(self) -> Any:
        """Time of the youngest (live) item, or None when the window is empty."""
        if not len(self):
            return None
        return self._unit.outward(self._funcs.youngest(self._bufs) if self._keyed else self._times.youngest())

    def __repr__(self):
        options = "".join(f", {k}={v!r}" for k, v in self.options.items() if k != "check")
        return f"<{self.algorithm.name} aggregator of {self.monoid.name}{options}, {len(self)} items>"

    def _tidy(self):
        """After a removal or eviction, an ``Updates`` window drops holes at its ends and shrinks."""
        if self._updates:
            self._holes.tidy(self)

    # ------------------------------------------------------------ pickling
    def __getstate__(self):
        return {"algorithm": self.algorithm.name, "monoid": self.monoid, "options": self.options,
                "bufs": self._bufs, "state": self._state, "arrivals": self._arrivals, "time_kind": self._unit.kind,
                "times": None if self._keyed else self._times.as_list(), "holes": list(self._holes.positions)}

    def __setstate__(self, saved):
        self.algorithm = info(saved["algorithm"])
        self.monoid = saved["monoid"]
        self.options = saved["options"]
        self._build()
        self._bufs, self._state = saved["bufs"], saved["state"]
        self._unit = TimeUnit(saved["time_kind"])
        self._times = None if self._keyed else ArrivalTimes(saved["times"])
        self._holes = Holes(saved["holes"])
        self._arrivals = saved["arrivals"]



def _evict_by_policy(agg: Aggregator, wsp, total) -> int:
    """The search behind :meth:`Aggregator.enforce`. The policy must be prefix-monotone (if a prefix
    may go, so may every shorter one), as every policy of the MTA paper is: the search then tests
    O(log n) prefixes, after the single evictions the algorithm tries first."""
    if not len(agg):
        return 0
    funcs, monoid = agg._funcs, agg.monoid
    removed, singles = monoid.identity, 0
    for _ in range(funcs.single_evictions(agg._state)):
        candidate = monoid.combine(removed, funcs.oldest_partial(agg._bufs, agg._state))
        if not wsp(total, candidate):
            return singles
        removed = candidate
        agg.evict()
        singles += 1
        if not len(agg):
            return singles
    count = funcs.removable(agg._bufs, agg._state, total, removed, wsp)
    return singles + agg.evict_oldest(count)

def make(algorithm: str, aggregation: str | Monoid | type, **options: Any) -> Aggregator:
    """A new, empty aggregator running ``algorithm`` over ``aggregation``.

    ``aggregation`` is a name (``"max"``), a built-in class or instance, or a
    :class:`winagg.Monoid`. Per-item calls run in plain Python; whole loops run
    compiled through :func:`winagg.rolling`.
    """
    algo = info(algorithm)
    monoid = aggregations.get(aggregation)
    check_monoid_fits(algo, monoid)
    options = check_options(algo, options)
    return Aggregator(algo, monoid, **options)
