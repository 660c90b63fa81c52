"""DABA Lite (DABA paper, section 6): DABA with n + 2 partials.

The back part l_B and the inner part l_R hold raw items, summarised by the
running aggregates ``aggB`` and ``aggRA`` (= aggregate of l_R and l_A). At most
1 combine per query, 3 per insert and 2 per evict, in the worst case.
"""

from ..ops import Funcs, build_grow, power_of_two_at_least

INFO = dict(order="fifo", needs_inverse=False, time="O(1) worst case (<= 1/3/2 combines per query/insert/evict)",
            space="n + 2", paper="003")


def build(ops):
    combine, identity, load, store, alloc, jit = ops.combine, ops.identity, ops.load, ops.store, ops.alloc, ops.jit
    grow = build_grow(ops)

    # State: (buf, mask, F, L, R, A, B, E, aggRA, aggB).
    def init(capacity):
        cap = power_of_two_at_least(capacity)
        return (alloc(cap), cap - 1, 0, 0, 0, 0, 0, 0, identity, identity)

    def fixup(st):
        buf, mask, f, l, r, a, b, e, agg_ra, agg_b = st
        if f == b:  # singleton (or empty)
            return (buf, mask, f, e, e, e, e, e, identity, identity)
        if l == b:  # flip: old l_B becomes l_R, and l_A is empty
            l = f
            a = e
            b = e
            agg_ra = agg_b
            agg_b = identity
        if l == r:  # shift; agg_ra goes stale on purpose: it is unread until the next flip
            return (buf, mask, f, l + 1, r + 1, a + 1, b, e, agg_ra, agg_b)
        # shrink: 2 combines; l_R and l_A together keep the same items, so agg_ra stays right
        agg_a = load(buf, a & mask) if a != b else identity
        store(buf, l & mask, combine(load(buf, l & mask), agg_ra))
        store(buf, (a - 1) & mask, combine(load(buf, (a - 1) & mask), agg_a))
        return (buf, mask, f, l + 1, r, a - 1, b, e, agg_ra, agg_b)

    fixup = jit(fixup)

    def insert(st, value):
        buf, mask, f, l, r, a, b, e, agg_ra, agg_b = st
        if e - f > mask:
            buf, mask = grow(buf, mask, f, e)
        store(buf, e & mask, value)
        # aggB is updated before fixup, because a flip hands it over to aggRA
        return fixup((buf, mask, f, l, r, a, b, e + 1, agg_ra, combine(agg_b, value)))

    def evict(st):
        buf, mask, f, l, r, a, b, e, agg_ra, agg_b = st
        return fixup((buf, mask, f + 1, l, r, a, b, e, agg_ra, agg_b))

    def query(st):
        buf, mask, f, l, r, a, b, e, agg_ra, agg_b = st
        front_agg = load(buf, f & mask) if f != b else identity
        return combine(front_agg, agg_b)

    def size(st):
        return st[7] - st[2]

    return Funcs(jit(init), jit(insert), jit(evict), jit(query), jit(size))
