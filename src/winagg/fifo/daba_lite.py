"""DABA Lite (DABA paper, section 6): DABA with n + 2 partials.

The back part l_B and the inner part l_R hold raw items, summarised by the
running aggregates ``aggB`` and ``aggRA`` (= aggregate of l_R and l_A). At most
1 combine per query, 3 per insert and 2 per evict, in the worst case.
"""

from ..ops import Funcs, build_regrow, power_of_two_at_least

INFO = dict(order="fifo", needs_inverse=False, time="O(1) worst case (<= 1/3/2 combines per query/insert/evict)",
            space="n + 2", paper="003")


def build(ops):
    combine, identity, load, store, alloc, jit = ops.combine, ops.identity, ops.load, ops.store, ops.alloc, ops.jit
    u = ops.index  # ring slots (position & mask) are never negative: no wraparound test
    regrow = build_regrow(ops)

    # bufs: one buffer; st: (mask, F, E, L, R, A, B, aggRA, aggB).
    def init(capacity):
        cap = power_of_two_at_least(capacity)
        return alloc(cap), (cap - 1, 0, 0, 0, 0, 0, 0, identity, identity)

    def fixup(buf, st):
        mask, f, e, l, r, a, b, agg_ra, agg_b = st
        if f == b:  # singleton (or empty)
            return (mask, f, e, e, e, e, e, identity, identity)
        if l == b:  # flip: old l_B becomes l_R, and l_A is empty
            l = f
            a = e
            b = e
            agg_ra = agg_b
            agg_b = identity
        if l == r:  # shift; agg_ra goes stale on purpose: it is unread until the next flip
            return (mask, f, e, l + 1, r + 1, a + 1, b, agg_ra, agg_b)
        # shrink: 2 combines; l_R and l_A together keep the same items, so agg_ra stays right
        agg_a = load(buf, u(a & mask)) if a != b else identity
        store(buf, u(l & mask), combine(load(buf, u(l & mask)), agg_ra))
        store(buf, u((a - 1) & mask), combine(load(buf, u((a - 1) & mask)), agg_a))
        return (mask, f, e, l + 1, r, a - 1, b, agg_ra, agg_b)

    fixup = jit(fixup)

    def insert(buf, st, value):
        mask, f, e, l, r, a, b, agg_ra, agg_b = st
        store(buf, u(e & mask), value)
        # aggB is updated before fixup, because a flip hands it over to aggRA
        return fixup(buf, (mask, f, e + 1, l, r, a, b, agg_ra, combine(agg_b, value)))

    def evict(buf, st):
        mask, f, e, l, r, a, b, agg_ra, agg_b = st
        return fixup(buf, (mask, f + 1, e, l, r, a, b, agg_ra, agg_b))

    def query(buf, st):
        mask, f, e, l, r, a, b, agg_ra, agg_b = st
        front_agg = load(buf, u(f & mask)) if f != b else identity
        return combine(front_agg, agg_b)

    def grow(buf, st):
        mask, f, e, l, r, a, b, agg_ra, agg_b = st
        return regrow(buf, mask, f, e), (2 * mask + 1, f, e, l, r, a, b, agg_ra, agg_b)

    return Funcs(jit(init), jit(insert), jit(evict), jit(query), jit(grow))
