"""Reactive Aggregator on FlatFAT (RA paper, sections 4-5): a flat binary tree of partials.

One buffer of ``2 * cap`` partials in heap numbering: node 1 is the root, node
``h`` has children ``2h`` and ``2h + 1``, and the leaves ``cap .. 2cap - 1``
are a circular buffer of the window (position ``p`` lives in leaf
``cap + (p & mask)``). Every internal node holds ``left (+) right``. Slots
outside the window and removed items hold the identity, which plays the
paper's empty-slot marker (bottom): ``x (+) identity = x``.

* insert / evict write one leaf and recompute its log2(cap) ancestors;
* a batch of m changed leaves is propagated level by level, each dirty node
  recomputed once (Algorithm 2): O(m + m log(cap/m)) combines. FIFO batches
  (``bulk_evict``, ``bulk_insert``) are contiguous ranges of leaves, so each
  level is one span; ``write_many`` takes any set of positions;
* the query reads the root when the window does not wrap, else it is
  ``suffix(front) (+) prefix(back)`` (order matters for non-commutative monoids);
* ``range_query`` folds the O(log cap) nodes covering a range of positions;
* resizing: ``grow`` doubles, ``shrink`` halves, ``compact`` closes the holes
  that non-FIFO removals leave (:mod:`winagg.windows.removals` applies the paper's
  policy: on a full buffer compact if at most 3/4 is live, else double; halve
  when fewer than 1/4 of the slots are live).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ...core.ops import build_alloc_empty, copy_row, helper_for, power_of_two_at_least, store_row

INFO = dict(order="fifo", needs_inverse=False,
            time="O(log n) per insert/evict/query; O(m + m log(n/m)) per batch of m changes",
            space="2n", paper="000",
            native=("insert", "evict", "query", "bulk_evict", "bulk_insert", "range_query", "update", "remove"))


class FlatFatFuncs(NamedTuple):
    """FlatFAT's operations (the five of :class:`winagg.core.ops.Funcs` first).

    Beyond the contract: ``bulk_insert(bufs, st, partials, count)`` appends
    ``partials[0 .. count-1]`` (a buffer of the same layout; the caller makes
    room first); ``write(bufs, st, pos, partial)`` replaces the partial at an
    absolute position (identity removes it); ``write_many(bufs, st, positions,
    partials, count)`` does ``count`` such writes as one level-by-level update;
    ``shrink(bufs, st)`` halves the capacity (the window must fit in half);
    ``compact(bufs, st, alive)`` moves the live items (``alive[i]`` for
    position ``first + i``) together at the front of the window;
    ``drop_youngest(st)`` forgets the youngest position, whose leaf holds the identity
    (a removed item at the young end).
    """

    init: object
    insert: object
    evict: object
    query: object
    grow: object
    bulk_evict: object
    range_query: object
    bulk_insert: object
    write: object
    write_many: object
    shrink: object
    compact: object
    drop_youngest: object


def build(ops):
    """FlatFAT specialised to ``ops`` (see the module docstring)."""
    pow2_at_least = helper_for(ops, power_of_two_at_least)
    combine, identity, load, store, alloc, jit = ops.combine, ops.identity, ops.load, ops.store, ops.alloc, ops.jit

    alloc_empty = build_alloc_empty(ops)
    rows = ops.combine_rows  # see refresh_path

    def new_tree(cap):
        return alloc_empty(2 * cap)

    new_tree = ops.jit_call(new_tree)

    # put(buf, slot, partial), move(dst_buf, dst, src_buf, src) and refold(buf, node) (a node
    # from its children): by value for scalar and tuple partials, row by row for vector ones
    def put(buf, slot, value):
        store(buf, slot, value)

    def move(dst_buf, dst, src_buf, src):
        store(dst_buf, dst, load(src_buf, src))

    def refold(buf, node):
        store(buf, node, combine(load(buf, 2 * node), load(buf, 2 * node + 1)))

    if rows is None:
        put, move, refold = jit(put), jit(move), jit(refold)
    else:
        put, move = store_row, copy_row

        def refold(buf, node):
            rows(buf, node, buf, 2 * node, buf, 2 * node + 1)

        refold = jit(refold)

    def rebuild(buf, cap):
        # Algorithm 1: every internal node from its children, bottom up (cap - 1 combines)
        for node in range(cap - 1, 0, -1):
            refold(buf, node)

    rebuild = ops.jit_call(rebuild)

    def refresh_path(buf, node, value):
        # value was just stored at node: carry it up in a register, reading only the siblings
        while node > 1:
            sibling = load(buf, node ^ 1)
            if node & 1:
                value = combine(sibling, value)
            else:
                value = combine(value, sibling)
            node >>= 1
            store(buf, node, value)

    refresh_path = jit(refresh_path)

    # Vector partials (sketches) with an in-place combine: every node is recomputed inside its
    # own row, by row index, and the query folds into the unused slot 0, so that an insert, an
    # evict or a query neither allocates nor makes a view of a row (a combine returning a new
    # 4096-bit filter per level, then the two reference-count updates of each row view, cost
    # more than the bit operations).
    if rows is not None:

        def refresh_path(buf, node, value):
            while node > 1:
                node >>= 1
                rows(buf, node, buf, 2 * node, buf, 2 * node + 1)

        refresh_path = jit(refresh_path)

    def refresh_span(buf, lo, hi):
        # nodes lo..hi of one level changed: their parents form one span per level above
        while lo > 1:
            lo >>= 1
            hi >>= 1
            for node in range(lo, hi + 1):
                refold(buf, node)

    refresh_span = jit(refresh_span)

    def refresh_positions(buf, mask, pos_from, pos_to):
        # the leaves of positions pos_from .. pos_to-1 (at most cap of them) changed
        if pos_to <= pos_from:
            return
        cap = mask + 1
        lo = pos_from & mask
        hi = (pos_to - 1) & mask
        if lo <= hi and pos_to - pos_from < cap:
            refresh_span(buf, cap + lo, cap + hi)
        elif pos_to - pos_from >= cap:
            refresh_span(buf, cap, 2 * cap - 1)
        else:  # the range wraps around the end of the leaves
            refresh_span(buf, cap + lo, 2 * cap - 1)
            refresh_span(buf, cap, cap + hi)

    refresh_positions = jit(refresh_positions)

    def prefix(buf, node):
        # a[0] (+) ... (+) a[leaf]: left siblings are prepended on the way up (Algorithm 3)
        acc = load(buf, node)
        while node > 1:
            if node & 1:  # a right child prepends its left sibling
                acc = combine(load(buf, node - 1), acc)
            node >>= 1
        return acc

    prefix = jit(prefix)

    def suffix(buf, node):
        # a[leaf] (+) ... (+) a[cap-1]: right siblings are appended on the way up
        acc = load(buf, node)
        while node > 1:
            if not node & 1:  # a left child appends its right sibling
                acc = combine(acc, load(buf, node + 1))
            node >>= 1
        return acc

    suffix = jit(suffix)

    def fold_leaves(buf, cap, lo, hi):
        # leaves lo..hi (slots, lo <= hi): the O(log cap) covering nodes, left to right
        left = identity
        right = identity
        l = lo + cap
        r = hi + cap + 1
        while l < r:
            if l & 1:
                left = combine(left, load(buf, l))
                l += 1
            if r & 1:
                r -= 1
                right = combine(load(buf, r), right)
            l >>= 1
            r >>= 1
        return combine(left, right)

    fold_leaves = jit(fold_leaves)

    def init(capacity):
        cap = pow2_at_least(capacity)
        return new_tree(cap), (cap - 1, 0, 0)

    def insert(buf, st, value):
        mask, first, end = st
        node = mask + 1 + (end & mask)
        put(buf, node, value)
        refresh_path(buf, node, value)
        return (mask, first, end + 1)

    def evict(buf, st):
        mask, first, end = st
        node = mask + 1 + (first & mask)
        put(buf, node, identity)
        refresh_path(buf, node, identity)
        return (mask, first + 1, end)

    def query(buf, st):
        mask, first, end = st
        if first == end:
            return identity
        front = first & mask
        back = (end - 1) & mask
        if front <= back:  # every leaf outside the window holds the identity
            return load(buf, 1)
        # inverted buffer: the root would put the back part first
        cap = mask + 1
        return combine(suffix(buf, cap + front), prefix(buf, cap + back))

    if rows is not None:

        def query(buf, st):
            mask, first, end = st
            if first == end:
                return identity
            front = first & mask
            back = (end - 1) & mask
            if front <= back:
                return load(buf, 1)
            # suffix(front) (+) prefix(back), folded left to right into slot 0 (no node uses it):
            # the suffix appends right siblings bottom up; the prefix's left siblings are
            # appended top down, then its leaf
            cap = mask + 1
            node = cap + front
            copy_row(buf, 0, buf, node)
            while node > 1:
                if not node & 1:
                    rows(buf, 0, buf, 0, buf, node + 1)
                node >>= 1
            leaf = cap + back
            shift = 0
            while (leaf >> shift) > 1:
                shift += 1
            while shift > 0:
                shift -= 1
                above = leaf >> shift
                if above & 1:
                    rows(buf, 0, buf, 0, buf, above - 1)
            rows(buf, 0, buf, 0, buf, leaf)
            return load(buf, 0)

    def range_query(buf, st, pos_from, pos_to):
        mask = st[0]
        if pos_to <= pos_from:
            return identity
        cap = mask + 1
        lo = pos_from & mask
        hi = (pos_to - 1) & mask
        if lo <= hi:
            return fold_leaves(buf, cap, lo, hi)
        return combine(fold_leaves(buf, cap, lo, cap - 1), fold_leaves(buf, cap, 0, hi))

    def bulk_evict(buf, st, count):
        mask, first, end = st
        for pos in range(first, first + count):
            put(buf, mask + 1 + (pos & mask), identity)
        refresh_positions(buf, mask, first, first + count)
        return (mask, first + count, end)

    def bulk_insert(buf, st, partials, count):
        mask, first, end = st
        for k in range(count):
            put(buf, mask + 1 + ((end + k) & mask), load(partials, k))
        refresh_positions(buf, mask, end, end + count)
        return (mask, first, end + count)

    def write(buf, st, pos, value):
        mask = st[0]
        node = mask + 1 + (pos & mask)
        put(buf, node, value)
        refresh_path(buf, node, value)
        return st

    def write_many(buf, st, positions, partials, count):
        # Algorithm 2: write the leaves, then recompute each level's dirty nodes once.
        # Sorted node numbers have sorted parents, so dropping repeats keeps them distinct.
        mask = st[0]
        cap = mask + 1
        if count == 0:
            return st
        nodes = np.empty(count, np.int64)
        for k in range(count):
            node = cap + (positions[k] & mask)
            put(buf, node, load(partials, k))
            nodes[k] = node
        nodes.sort()
        dirty = count
        while nodes[0] > 1:
            kept = 0
            for k in range(dirty):
                parent = nodes[k] >> 1
                if kept == 0 or nodes[kept - 1] != parent:
                    nodes[kept] = parent
                    kept += 1
                    refold(buf, parent)
            dirty = kept
        return st

    def resize(buf, st, new_mask):
        mask, first, end = st
        new_cap = new_mask + 1
        new_buf = new_tree(new_cap)
        for pos in range(first, end):
            move(new_buf, new_cap + (pos & new_mask), buf, mask + 1 + (pos & mask))
        rebuild(new_buf, new_cap)
        return new_buf, (new_mask, first, end)

    resize = ops.jit_call(resize)

    def grow(buf, st):
        return resize(buf, st, 2 * st[0] + 1)

    def shrink(buf, st):
        return resize(buf, st, st[0] // 2)

    def compact(buf, st, alive):
        mask, first, end = st
        cap = mask + 1
        to = first
        for pos in range(first, end):
            if alive[pos - first]:
                if to != pos:  # to < pos: the slot read was not yet overwritten
                    move(buf, cap + (to & mask), buf, cap + (pos & mask))
                to += 1
        for pos in range(to, end):
            put(buf, cap + (pos & mask), identity)
        rebuild(buf, cap)
        return (mask, first, to)

    def drop_youngest(st):
        mask, first, end = st
        return (mask, first, end - 1)

    # The entry points that loop run as calls of their own (ops.jit_loop): without reference
    # counting for scalar and tuple partials, with it for vector ones, whose row views need it.
    looping = ops.jit_loop
    return FlatFatFuncs(jit(init), looping(insert), looping(evict), looping(query), jit(grow), looping(bulk_evict),
                        looping(range_query), looping(bulk_insert), looping(write), ops.jit_call(write_many),
                        jit(shrink), ops.jit_call(compact), drop_youngest)
