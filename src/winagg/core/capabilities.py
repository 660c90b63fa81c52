"""What an algorithm offers, as types the registry checks when it finds the algorithm.

An algorithm's ``build(ops)`` returns a NamedTuple of functions; which
functions it holds says what the algorithm can do. The protocols below name
those groups, after the reference Rust crate's traits (``FifoWindow``,
``TimeWindow``, ``SubWindow``): every algorithm is a :class:`FifoWindow`; one
with a native bulk eviction is also a :class:`BulkEvict`, and so on. The window
layers ask for a protocol (``isinstance(funcs, BulkEvict)``, or
:meth:`~winagg.algos.registry.AlgorithmInfo.offers`) instead of probing for names,
and the registry refuses an algorithm whose functions do not fit its ``INFO``
(an out-of-order algorithm that is not a :class:`TimeWindow`, say).
"""

from __future__ import annotations

from typing import Callable, Dict, Protocol, Tuple, runtime_checkable


@runtime_checkable
class FifoWindow(Protocol):
    """Items in arrival order: ``init(capacity) -> (bufs, st)``, ``insert(bufs, st, partial) -> st``
    (the youngest), ``evict(bufs, st) -> st`` (the oldest), ``query(bufs, st) -> partial`` (the
    whole window), ``grow(bufs, st) -> (bufs, st)`` (double the capacity)."""

    init: Callable
    insert: Callable
    evict: Callable
    query: Callable
    grow: Callable


@runtime_checkable
class BulkEvict(Protocol):
    """``bulk_evict(bufs, st, count) -> st``: the ``count`` oldest items leave in one operation."""

    bulk_evict: Callable


@runtime_checkable
class SubWindow(Protocol):
    """``range_query``: the aggregate of part of the window (positions, or times for a TimeWindow)."""

    range_query: Callable


@runtime_checkable
class BulkInsert(Protocol):
    """``bulk_insert``: a batch of items enters in one operation."""

    bulk_insert: Callable


@runtime_checkable
class TimeWindow(Protocol):
    """Items keyed by time, arriving in any order: ``insert_at(bufs, st, time, partial) -> st``,
    ``evict_upto(bufs, st, time) -> st`` (every item at or before ``time`` leaves),
    ``oldest(bufs)`` / ``youngest(bufs)`` (times), ``reserve(bufs, st, count) -> (bufs, st)``."""

    insert_at: Callable
    evict_upto: Callable
    oldest: Callable
    youngest: Callable
    reserve: Callable


@runtime_checkable
class Updates(Protocol):
    """``write(bufs, st, position, partial) -> st``: an item is replaced (updated) or, with the
    identity, removed, anywhere in the window; ``write_many(bufs, st, positions, partials, count)
    -> st`` does several such writes at once. The holes removals leave are tidied with
    ``compact(bufs, st, alive) -> st`` (the live items moved together), ``shrink(bufs, st) ->
    (bufs, st)`` (half the room) and ``drop_youngest(st) -> st`` (a hole at the young end
    forgotten)."""

    write: Callable
    write_many: Callable
    compact: Callable
    shrink: Callable
    drop_youngest: Callable


@runtime_checkable
class SlidePolicyWindow(Protocol):
    """``removable(bufs, st, total, removed, wsp)``: how many of the oldest items a window slide
    policy removes, found in O(log n) (:mod:`winagg.windows.slide_policies`);
    ``oldest_partial(bufs, st)``: the oldest item's partial; ``single_evictions(st)``: how many
    single evictions a policy tries first, one item at a time, before that search."""

    removable: Callable
    oldest_partial: Callable
    single_evictions: Callable


#: Each protocol and the operations an algorithm offering it does natively, in listing order.
NATIVE: Dict[type, Tuple[str, ...]] = {
    FifoWindow: ("insert", "evict", "query"),
    TimeWindow: ("insert_at", "bulk_evict"),
    BulkEvict: ("bulk_evict",),
    BulkInsert: ("bulk_insert",),
    SubWindow: ("range_query",),
    Updates: ("update", "remove"),
    SlidePolicyWindow: ("slide_policy",),
}

#: What the out-of-order driver needs of an algorithm whose ``INFO["order"]`` is ``"any"``.
OUT_OF_ORDER = (FifoWindow, TimeWindow, BulkInsert, SubWindow)


def offered(funcs) -> Tuple[type, ...]:
    """The protocols ``funcs`` (what an algorithm's ``build`` returns) satisfies."""
    return tuple(protocol for protocol in NATIVE if isinstance(funcs, protocol))


def native_operations(protocols) -> Tuple[str, ...]:
    """The operations the ``protocols`` make native, each once, in listing order."""
    names: list = []
    for protocol in protocols:
        names.extend(name for name in NATIVE[protocol] if name not in names)
    return tuple(names)
