"""The FiBA tree (papers 004 and FiBA-2019): its operations assembled from named parts.

One source runs over Python lists and, compiled by numba, over numpy arrays. The parts,
each a factory that takes the functions built before it and returns new ones:

=========================  =====================================================
:mod:`.fiba_layout`        the node layout in three flat buffers, the build choices
:mod:`.fiba_folds`         the fold steps, over values or written into a row
:mod:`.fiba_nodes`         the node pool, entry and child moves, new and lost roots
:mod:`.fiba_repair`        location-sensitive aggregates and their repair up the
                           tree and down the spines (finger repair)
:mod:`.fiba_queries`       the whole-window query, range queries, size, end times
:mod:`.fiba_search`        finger searches for an insert and a bulk evict
:mod:`.fiba_rebalance`     splits of over-full nodes, merges and loans after an evict
:mod:`.fiba_insert_evict`  the single insert (append or out of order) and evict
:mod:`.fiba_bulk_evict`    bulk evict (paper 004, section 4)
:mod:`.fiba_bulk_insert`   bulk insert (paper 004, section 5)
=========================  =====================================================

This module adds the capacity functions (``init``, ``grow``, ``reserve``) and returns
everything as :class:`TreeFuncs`. The parts that only move partials (:data:`STRUCTURE`) are
built once per tree shape and partial layout and shared by every aggregation with that layout.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Callable, NamedTuple

from .bulk_evict import make_bulk_evict, make_cuts
from .bulk_insert import make_bulk_insert, make_twigs
from .folds import make_folds
from .insert_evict import make_insert_evict
from .layout import (
    CAPACITY, FREE_COUNT, INTS, LEFT_FINGER, MARGIN, NEXT_FRESH, PARTS, RECORDS, RIGHT_FINGER, ROOT, TreeBuild,
    tree_build)
from .nodes import make_nodes
from .queries import make_extent, make_queries
from .rebalance import make_rebalance
from .repair import make_repair
from .search import make_search


class TreeFuncs(NamedTuple):
    """The FiBA operations on ``(bufs, st)``; ``st = (limit, 0, size)`` (see :func:`build_tree`)."""

    init: Callable
    insert: Callable  # (b, st, partial) -> st: append at youngest time + 1 (for the FIFO kernels)
    evict: Callable
    query: Callable
    grow: Callable
    insert_at: Callable  # (b, st, t, partial) -> st
    evict_upto: Callable  # (b, st, t) -> st: drop every entry with time <= t
    bulk_insert: Callable  # (b, st, times, partials, m) -> st: times sorted (equal ones combine)
    range_query: Callable  # (b, st, lo, hi, lo_open) -> partial of entries lo <(=) time <= hi
    reserve: Callable  # (b, st, m) -> (b, st): room for m more entries
    oldest: Callable
    youngest: Callable


#: The parts that never touch a partial's value (only moves it), built once per tree shape and
#: partial layout and shared by every aggregation with that layout: numba then compiles each of
#: their functions once per buffer type instead of once per aggregation.
STRUCTURE = (make_nodes, make_extent, make_search, make_cuts, make_twigs)
#: The parts that combine partials, built per aggregation, in order (each uses those before it).
AGGREGATES = (make_folds, make_repair, make_queries, make_rebalance, make_insert_evict, make_bulk_evict, make_bulk_insert)

_structures: dict = {}


def _structure(build: TreeBuild) -> dict:
    """The functions of the STRUCTURE parts for ``build``'s shape and layout (built on first use)."""
    key = (build.python, build.mu, build.finger, build.load, build.store, build.alloc, build.alloc_ints,
           build.alloc_times, build.flat, build.apart, build.nrt, build.at, build.scalar)
    made = _structures.get(key)
    if made is None:
        made = SimpleNamespace()
        for make in STRUCTURE:
            vars(made).update(make(build, made))
        _structures[key] = made
    return vars(made)


def build_tree(ops, mu: int, finger: bool, bulk: bool, times: str = "float64") -> TreeFuncs:
    """The FiBA operations for min arity ``mu``, specialised to ``ops``.

    Compiled, times are kept as ``times`` ("float64" or "int64": int64 keeps
    datetime64 nanoseconds exact); in Python mode they are any comparable objects.
    """
    build = tree_build(ops, mu, finger, times)
    made = SimpleNamespace(**_structure(build))
    for make in AGGREGATES:
        vars(made).update(make(build, made))
    init, grow, reserve = make_capacity(build, made)
    return TreeFuncs(init, made.insert, made.evict, made.query, grow, made.insert_at,
                     made.bulk_evict_native if bulk else made.bulk_evict_loop,
                     made.bulk_insert_native if bulk else made.bulk_insert_loop,
                     made.range_query, reserve, made.oldest, made.youngest)


def make_capacity(build: TreeBuild, made):
    """``init(capacity)``, ``grow`` (doubles the pool) and ``reserve`` (room for m more entries)."""
    identity, store, load, at, nrt = build.identity, build.store, build.load, build.at, build.nrt
    SLOTS, RECORD, AGG, MIN_ENTRIES = build.slots, build.record, build.agg, build.min_entries
    new_bufs, alloc_node, state_of = made.new_bufs, made.alloc_node, made.state_of

    def init(capacity):
        bufs = new_bufs(capacity // MIN_ENTRIES + 2 * MARGIN)  # room for `capacity` entries (see state_of)
        ints = bufs[INTS]
        ints[NEXT_FRESH] = 0
        ints[FREE_COUNT] = 0
        root = alloc_node(bufs, 1)
        store(bufs[PARTS], at(root * SLOTS + AGG), identity)
        ints[ROOT] = root
        ints[LEFT_FINGER] = root
        ints[RIGHT_FINGER] = root
        return bufs, state_of(bufs)

    init = nrt(init)

    def grow(bufs, st):
        keys, parts, ints = bufs
        cap = ints[CAPACITY]
        grown = new_bufs(2 * cap)
        grown_keys, grown_parts, grown_ints = grown
        for i in range(cap * SLOTS):
            grown_keys[at(i)] = keys[at(i)]
            store(grown_parts, at(i), load(parts, at(i)))
        for i in range(RECORDS + cap * RECORD):
            grown_ints[at(i)] = ints[at(i)]
        grown_ints[CAPACITY] = 2 * cap
        old_free, new_free = RECORDS + cap * RECORD, RECORDS + 2 * cap * RECORD
        for i in range(ints[FREE_COUNT]):
            grown_ints[at(new_free + i)] = ints[at(old_free + i)]
        return grown, state_of(grown)

    grow = nrt(grow)

    def reserve(bufs, st, m):
        while st[0] - st[2] < m:
            bufs, st = grow(bufs, st)
        return bufs, st

    reserve = nrt(reserve)
    return init, grow, reserve
