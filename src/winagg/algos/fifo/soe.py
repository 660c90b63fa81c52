"""Subtract-on-evict: one running aggregate; eviction combines the inverse of the oldest item.

Needs an invertible monoid. With floats the running sum drifts (what pandas'
rolling sums show); with integers it is exact, which is why
:func:`winagg.rolling` picks it automatically only for integer inputs.
"""

from ...core.ops import Funcs, build_regrow, helper_for, power_of_two_at_least

INFO = dict(order="fifo", needs_inverse=True, time="O(1) worst case", space="n + 1",
            paper="003 (related work)")


def build(ops):
    pow2_at_least = helper_for(ops, power_of_two_at_least)
    combine, identity, inverse = ops.combine, ops.identity, ops.inverse
    load, store, alloc, jit = ops.load, ops.store, ops.alloc, ops.jit
    regrow = build_regrow(ops)

    # bufs: the items; st: (mask, first, end, agg)
    def init(capacity):
        cap = pow2_at_least(capacity)
        return alloc(cap), (cap - 1, 0, 0, identity)

    def insert(buf, st, value):
        mask, first, end, agg = st
        store(buf, end & mask, value)
        return (mask, first, end + 1, combine(agg, value))

    def evict(buf, st):
        mask, first, end, agg = st
        if end - first == 1:  # back to exactly the identity: no residue from subtraction
            return (mask, first + 1, end, identity)
        return (mask, first + 1, end, combine(inverse(load(buf, first & mask)), agg))

    def query(buf, st):
        _, _, _, agg = st
        return agg

    def grow(buf, st):
        mask, first, end, agg = st
        return regrow(buf, mask, first, end), (2 * mask + 1, first, end, agg)

    return Funcs(jit(init), jit(insert), jit(evict), jit(query), jit(grow))
