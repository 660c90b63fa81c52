"""B-Int, the base-interval scheme of Arasu & Widom (VLDB'04): the RA and FlatFIT papers' baseline.

Level l holds the aggregates of the dyadic *base intervals* of length 2^l
aligned on absolute positions: interval k covers positions k*2^l ..
(k+1)*2^l - 1. Each level is a circular array of cap / 2^l slots, all levels
in one buffer of 2 * cap partials (level l starts at cap >> l, so a parent
interval's slot is its children's slot // 2).

* insert stores the item and completes only the intervals that *end* at it
  (one combine per level while the item closes a right half: amortized 1,
  at most log2(cap));
* evict only moves the window's start: an interval is read only while it
  lies wholly inside the window, and its slot is overwritten only after it
  left the window;
* a query folds the maximal base intervals covering the range, left to
  right (at most about 2 log2(n) of them): more than FlatFAT reads, which is
  the constant factor the papers measure.
"""

from __future__ import annotations

from ...core.ops import RangeFuncs, build_alloc_empty, helper_for, power_of_two_at_least

INFO = dict(order="fifo", needs_inverse=False,
            time="insert O(1) amortized / O(log n) worst; evict O(1); query O(log n)",
            space="2n", paper="000, 002 (baseline: Arasu-Widom B-Int)")


def build(ops):
    """B-Int specialised to ``ops`` (see the module docstring)."""
    pow2_at_least = helper_for(ops, power_of_two_at_least)
    combine, identity, load, store, alloc, jit = ops.combine, ops.identity, ops.load, ops.store, ops.alloc, ops.jit

    alloc_empty = build_alloc_empty(ops)

    def new_levels(cap):
        return alloc_empty(2 * cap)  # intervals never computed read as empty, never as garbage

    new_levels = ops.jit_call(new_levels)

    def fold(buf, mask, pos, stop):
        # greedy left-to-right cover of pos..stop-1 by the largest aligned base intervals
        cap = mask + 1
        acc = identity
        level = 0
        while pos < stop:
            while (2 << level) <= cap and pos & ((2 << level) - 1) == 0 and pos + (2 << level) <= stop:
                level += 1
            while pos + (1 << level) > stop:
                level -= 1
            size = cap >> level
            acc = combine(acc, load(buf, size + ((pos >> level) & (size - 1))))
            pos += 1 << level
        return acc

    fold = jit(fold)

    def init(capacity):
        cap = pow2_at_least(capacity)
        return new_levels(cap), (cap - 1, 0, 0)

    def insert(buf, st, value):
        mask, first, end = st
        slot = mask + 1 + (end & mask)
        store(buf, slot, value)
        while slot & 1 and slot > 1:  # this interval is a right half: its parent ends here too
            slot >>= 1
            store(buf, slot, combine(load(buf, 2 * slot), load(buf, 2 * slot + 1)))
        return (mask, first, end + 1)

    def evict(buf, st):
        mask, first, end = st
        return (mask, first + 1, end)

    def bulk_evict(buf, st, count):
        mask, first, end = st
        return (mask, first + count, end)

    def query(buf, st):
        mask, first, end = st
        return fold(buf, mask, first, end)

    def range_query(buf, st, pos_from, pos_to):
        mask, _, _ = st
        return fold(buf, mask, pos_from, pos_to)

    def grow(buf, st):
        mask, first, end = st
        cap = 2 * (mask + 1)
        new_mask = cap - 1
        new_buf = new_levels(cap)
        for pos in range(first, end):
            store(new_buf, cap + (pos & new_mask), load(buf, mask + 1 + (pos & mask)))
        # recompute every base interval that lies wholly inside the window, level by level
        level = 1
        while (1 << level) <= cap:
            size = cap >> level
            start = (first + (1 << level) - 1) >> level
            for k in range(start, end >> level):
                slot = size + (k & (size - 1))
                store(new_buf, slot, combine(load(new_buf, 2 * slot), load(new_buf, 2 * slot + 1)))
            level += 1
        return new_buf, (new_mask, first, end)

    # The entry points that loop run as calls of their own without reference counting (ops.jit_loop).
    looping = ops.jit_loop
    return RangeFuncs(jit(init), looping(insert), jit(evict), looping(query), ops.jit_call(grow), jit(bulk_evict),
                     looping(range_query))
