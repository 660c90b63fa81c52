"""DABA Lite (DABA paper, section 6): DABA with n + 2 partials.

The back part l_B and the inner part l_R hold raw items, summarised by the
running aggregates ``aggB`` and ``aggRA`` (= aggregate of l_R and l_A). At most
1 combine per query, 3 per insert and 2 per evict, in the worst case.
"""

from ...core.ops import Funcs, build_regrow, copy_row, helper_for, power_of_two_at_least, store_row

INFO = dict(order="fifo", needs_inverse=False, time="O(1) worst case (<= 1/3/2 combines per query/insert/evict)",
            space="n + 2", paper="003")


def build(ops):
    pow2_at_least = helper_for(ops, power_of_two_at_least)
    combine, identity, load, store, alloc, jit = ops.combine, ops.identity, ops.load, ops.store, ops.alloc, ops.jit
    u = ops.index  # ring slots (position & mask) are never negative: no wraparound test
    regrow = build_regrow(ops)

    # bufs: one buffer; st: (mask, F, E, L, R, A, B, aggRA, aggB).
    def init(capacity):
        cap = pow2_at_least(capacity)
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

    if ops.combine_rows is not None:
        return _build_in_place(ops)
    return Funcs(jit(init), jit(insert), jit(evict), jit(query), jit(grow))


def _build_in_place(ops):
    """DABA Lite for vector partials with an in-place combine (sketches).

    The same algorithm, with ``aggRA``, ``aggB`` and the query's answer kept in rows after
    the ring instead of in the state, and every combine written into its row by row index
    (``ops.combine_rows``): a round neither allocates nor makes a view of a row, where each
    vector combine allocated its result and each row view cost two reference-count updates.
    One more row holds the identity, which a reset copies.
    """
    rows, identity, load, alloc, jit = ops.combine_rows, ops.identity, ops.load, ops.alloc, ops.jit
    u = ops.index

    # bufs: the ring of cap rows, then the rows IDENTITY, aggRA, aggB and the answer
    # (cap + 0 .. cap + 3); st: (mask, F, E, L, R, A, B).
    def new_buf(cap):
        buf = alloc(cap + 4)
        for row in range(cap, cap + 4):
            store_row(buf, row, identity)
        return buf

    new_buf = ops.jit_call(new_buf)

    def init(capacity):
        cap = power_of_two_at_least(capacity)
        return new_buf(cap), (cap - 1, 0, 0, 0, 0, 0, 0)

    def fixup(buf, st):
        mask, f, e, l, r, a, b = st
        none, agg_ra, agg_b = u(mask + 1), u(mask + 2), u(mask + 3)
        if f == b:  # singleton (or empty)
            copy_row(buf, agg_ra, buf, none)
            copy_row(buf, agg_b, buf, none)
            return (mask, f, e, e, e, e, e)
        if l == b:  # flip: old l_B becomes l_R, and l_A is empty
            l = f
            a = e
            b = e
            copy_row(buf, agg_ra, buf, agg_b)
            copy_row(buf, agg_b, buf, none)
        if l == r:  # shift; aggRA goes stale on purpose: it is unread until the next flip
            return (mask, f, e, l + 1, r + 1, a + 1, b)
        # shrink: 2 combines; l_R and l_A together keep the same items, so aggRA stays right
        slot = u(l & mask)
        rows(buf, slot, buf, slot, buf, agg_ra)
        if a != b:  # else aggA is the identity and the slot stays as it is
            slot = u((a - 1) & mask)
            rows(buf, slot, buf, slot, buf, u(a & mask))
        return (mask, f, e, l + 1, r, a - 1, b)

    fixup = jit(fixup)

    def insert(buf, st, value):
        mask, f, e, l, r, a, b = st
        slot = u(e & mask)
        store_row(buf, slot, value)
        agg_b = u(mask + 3)
        rows(buf, agg_b, buf, agg_b, buf, slot)  # before fixup, because a flip hands it over to aggRA
        return fixup(buf, (mask, f, e + 1, l, r, a, b))

    def evict(buf, st):
        mask, f, e, l, r, a, b = st
        return fixup(buf, (mask, f + 1, e, l, r, a, b))

    def query(buf, st):
        mask, f, e, l, r, a, b = st
        answer = u(mask + 4)
        rows(buf, answer, buf, u(f & mask) if f != b else u(mask + 1), buf, u(mask + 3))
        return load(buf, answer)

    def grow(buf, st):
        mask, f, e, l, r, a, b = st
        new_mask = 2 * mask + 1
        grown = new_buf(new_mask + 1)
        for pos in range(f, e):
            copy_row(grown, pos & new_mask, buf, pos & mask)
        copy_row(grown, new_mask + 2, buf, mask + 2)
        copy_row(grown, new_mask + 3, buf, mask + 3)
        return grown, (new_mask, f, e, l, r, a, b)

    # calls of their own (inlined into the driver's loop, a Bloom round ran no faster)
    return Funcs(jit(init), ops.jit_call(insert), ops.jit_call(evict), jit(query), ops.jit_call(grow))
