"""Subtract-on-evict: one running aggregate; eviction combines the inverse of the oldest item.

Needs an invertible monoid. With floats the running sum drifts (what pandas'
rolling sums show); with integers it is exact, which is why
:func:`winagg.rolling` picks it automatically only for integer inputs.
"""

from ..ops import Funcs, build_grow, power_of_two_at_least

INFO = dict(order="fifo", needs_inverse=True, time="O(1) worst case", space="n + 1",
            paper="003 (related work)")


def build(ops):
    combine, identity, inverse = ops.combine, ops.identity, ops.inverse
    load, store, alloc, jit = ops.load, ops.store, ops.alloc, ops.jit
    grow = build_grow(ops)

    def init(capacity):
        cap = power_of_two_at_least(capacity)
        return (alloc(cap), cap - 1, 0, 0, identity)

    def insert(st, value):
        buf, mask, first, end, agg = st
        if end - first > mask:
            buf, mask = grow(buf, mask, first, end)
        store(buf, end & mask, value)
        return (buf, mask, first, end + 1, combine(agg, value))

    def evict(st):
        buf, mask, first, end, agg = st
        if end - first == 1:  # back to exactly the identity: no residue from subtraction
            return (buf, mask, first + 1, end, identity)
        return (buf, mask, first + 1, end, combine(inverse(load(buf, first & mask)), agg))

    def query(st):
        return st[4]

    def size(st):
        return st[3] - st[2]

    return Funcs(jit(init), jit(insert), jit(evict), jit(query), jit(size))
