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
  that non-FIFO removals leave (the :class:`Aggregator` applies the paper's
  policy: on a full buffer compact if at most 3/4 is live, else double; halve
  when fewer than 1/4 of the slots are live).
"""

from __future__ import annotations

from bisect import bisect_left, insort
from typing import NamedTuple

import numpy as np

from ..aggregator import FifoAggregator
from ..errors import EmptyWindowError
from ..ops import build_alloc_empty, copy_row, power_of_two_at_least, store_row

INFO = dict(order="fifo", needs_inverse=False,
            time="O(log n) per insert/evict/query; O(m + m log(n/m)) per batch of m changes",
            space="2n", paper="000",
            native=("insert", "evict", "query", "bulk_evict", "bulk_insert", "range_query", "update", "remove"))


class FlatFatFuncs(NamedTuple):
    """FlatFAT's operations (the five of :class:`winagg.ops.Funcs` first).

    Beyond the contract: ``bulk_insert(bufs, st, partials, count)`` appends
    ``partials[0 .. count-1]`` (a buffer of the same layout; the caller makes
    room first); ``write(bufs, st, pos, partial)`` replaces the partial at an
    absolute position (identity removes it); ``write_many(bufs, st, positions,
    partials, count)`` does ``count`` such writes as one level-by-level update;
    ``shrink(bufs, st)`` halves the capacity (the window must fit in half);
    ``compact(bufs, st, alive)`` moves the live items (``alive[i]`` for
    position ``first + i``) together at the front of the window.
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


def build(ops):
    """FlatFAT specialised to ``ops`` (see the module docstring)."""
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
        cap = power_of_two_at_least(capacity)
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

    # The entry points that loop run as calls of their own (ops.jit_loop): without reference
    # counting for scalar and tuple partials, with it for vector ones, whose row views need it.
    looping = ops.jit_loop
    return FlatFatFuncs(jit(init), looping(insert), looping(evict), looping(query), jit(grow), looping(bulk_evict),
                        looping(range_query), looping(bulk_insert), looping(write), ops.jit_call(write_many),
                        jit(shrink), ops.jit_call(compact))


class Aggregator(FifoAggregator):
    """The Reactive Aggregator: a FIFO aggregator that can also change or remove any item.

    ``update(index, value)`` replaces the item at ``index`` (0 = oldest live
    item) and ``remove(index)`` deletes it, each in O(log n);
    ``update_many(indices, values)`` changes several items in one
    level-by-level pass. A removed item is gone, as a dropped row is in
    pandas: it no longer counts in ``len``, its time goes with it (so
    ``oldest_time``/``youngest_time`` and ``bulk_evict``'s count see only the
    live items), and ``evict`` drops the oldest *live* item. Internally it
    leaves an identity hole that is compacted away on the paper's policy.
    """

    #: Capacity is never halved below this many slots.
    MIN_CAPACITY = 16

    def __init__(self, algorithm, monoid, capacity: int = 16, **options):
        super().__init__(algorithm, monoid, capacity, **options)
        self._dead: list = []  # sorted absolute positions of removed items inside the window

    # ------------------------------------------------------------ positions
    def _position_of(self, index) -> int:
        """Absolute position of the live item number ``index`` (negative counts from the youngest)."""
        live = len(self)
        if not isinstance(index, (int, np.integer)) or isinstance(index, bool):
            raise TypeError(f"index must be an integer, got {type(index).__name__}")
        if index < 0:
            index += live
        if not 0 <= index < live:
            raise IndexError(f"index {index} out of range for a window of {live} items")
        pos = self._state[1] + int(index)
        for hole in self._dead:  # every hole at or before the candidate shifts it one further
            if hole > pos:
                break
            pos += 1
        return pos

    def __len__(self) -> int:
        return super().__len__() - len(self._dead)

    # ------------------------------------------------------------ non-FIFO operations
    def update(self, index, value) -> None:
        """Replace the item at ``index`` (0 = oldest) by ``value``; its time stays."""
        pos = self._position_of(index)
        self._state = self._funcs.write(self._bufs, self._state, pos, self.monoid.lift(value))

    def update_many(self, indices, values) -> None:
        """Replace several items at once (distinct indices), one level-by-level tree update."""
        indices, values = list(indices), list(values)
        if len(indices) != len(values):
            raise ValueError(f"update_many got {len(indices)} indices but {len(values)} values")
        positions = np.array([self._position_of(i) for i in indices], dtype=np.int64)
        if len(set(positions.tolist())) != len(positions):
            raise ValueError("update_many needs distinct indices")
        partials = [self.monoid.lift(v) for v in values]
        self._state = self._funcs.write_many(self._bufs, self._state, positions, partials, len(partials))

    def remove(self, index) -> None:
        """Delete the item at ``index`` (0 = oldest) and its time from the window."""
        pos = self._position_of(index)
        self._state = self._funcs.write(self._bufs, self._state, pos, self.monoid.identity)
        insort(self._dead, pos)
        self._trim_holes()
        self._maybe_shrink()

    def _trim_holes(self):
        # Holes at either end of the window are dropped at once, so that the oldest
        # and youngest positions always hold live items (their times are the window's).
        mask, first, end = self._state[:3]
        leading = 0
        while leading < len(self._dead) and self._dead[leading] == first + leading:
            leading += 1
        if leading:
            self._state = self._funcs.bulk_evict(self._bufs, self._state, leading)
            del self._dead[:leading]
            self._drop_times(leading)
        while self._dead and self._dead[-1] == self._state[2] - 1:
            mask, first, end = self._state[:3]
            self._state = (mask, first, end - 1)  # its leaf already holds the identity
            self._dead.pop()
            self._times.pop()

    # ------------------------------------------------------------ FIFO operations
    def evict(self) -> None:
        """Drop the oldest live item; :class:`EmptyWindowError` if the window is empty."""
        if not len(self):
            raise EmptyWindowError(f"evict() on an empty window ({self.algorithm.name})")
        super().evict()
        self._trim_holes()
        self._maybe_shrink()

    def bulk_evict(self, time) -> int:
        """Drop every item whose time is <= ``time``; returns how many live items were dropped."""
        before = len(self)
        dropped = super().bulk_evict(time)
        if dropped:
            first = self._state[1]
            del self._dead[:bisect_left(self._dead, first)]
            self._trim_holes()
            self._maybe_shrink()
        return before - len(self)

    def bulk_insert(self, values, times=None) -> None:
        """Append a batch (``times`` sorted, no older than the youngest) in one level-by-level update."""
        values = list(values)
        if times is None:
            times = list(range(self._arrivals, self._arrivals + len(values)))
        else:
            times = list(times)
            if len(times) != len(values):
                raise ValueError(f"bulk_insert got {len(values)} values but {len(times)} times")
        self._check_next_times(times, lambda i: f"times[{i}]")
        partials = [self.monoid.lift(v) for v in values]
        self._make_room(len(partials))
        self._state = self._funcs.bulk_insert(self._bufs, self._state, partials, len(partials))
        self._times.extend(times)
        self._arrivals += len(values)

    # ------------------------------------------------------------ resizing (RA paper, section 5)
    def _make_room(self, count):
        while self._state[2] - self._state[1] + count > self._state[0] + 1:
            capacity = self._state[0] + 1
            if self._dead and len(self) + count <= 3 * capacity // 4:
                self._compact()
            else:
                self._bufs, self._state = self._funcs.grow(self._bufs, self._state)

    def _compact(self):
        first, end = self._state[1], self._state[2]
        alive = np.ones(end - first, dtype=np.bool_)
        for hole in self._dead:
            alive[hole - first] = False
        self._state = self._funcs.compact(self._bufs, self._state, alive)
        live_times = self._times[self._head:]
        self._times = [t for t, keep in zip(live_times, alive) if keep]
        self._head = 0
        self._dead = []

    def _maybe_shrink(self):
        while self._state[0] + 1 > self.MIN_CAPACITY and 4 * len(self) < self._state[0] + 1:
            if self._dead:
                self._compact()
            if 2 * (self._state[2] - self._state[1]) > self._state[0] + 1:
                return
            self._bufs, self._state = self._funcs.shrink(self._bufs, self._state)

    # ------------------------------------------------------------ reading
    def oldest_time(self):
        """Time of the oldest live item, or None when the window is empty."""
        return super().oldest_time() if len(self) else None

    def youngest_time(self):
        """Time of the youngest live item, or None when the window is empty."""
        return super().youngest_time() if len(self) else None

    def __getstate__(self):
        saved = super().__getstate__()
        saved["dead"] = list(self._dead)
        return saved

    def __setstate__(self, saved):
        super().__setstate__(saved)
        self._dead = list(saved.get("dead", []))

