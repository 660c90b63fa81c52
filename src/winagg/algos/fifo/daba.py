"""DABA, the De-Amortized Banker's Aggregator (DABA paper, section 5).

Two-Stacks that flips early (when the front and back parts are equally long)
and reverses incrementally in ``fixup``: at most 1 combine per query, 4 per
insert and 3 per evict, in the worst case. Positions F <= L <= R <= A <= B <= E
delimit the sublists l_F = [F, B) (with l_L = [L, R), l_R = [R, A),
l_A = [A, B) inside it) and l_B = [B, E); see the digest for the invariants.
"""

from ...core.ops import Funcs, build_regrow, copy_row, helper_for, power_of_two_at_least, store_row

INFO = dict(order="fifo", needs_inverse=False, time="O(1) worst case (<= 1/4/3 combines per query/insert/evict)",
            space="2n", paper="003")


def build(ops):
    pow2_at_least = helper_for(ops, power_of_two_at_least)
    combine, identity, load, store, alloc, jit = ops.combine, ops.identity, ops.load, ops.store, ops.alloc, ops.jit
    u = ops.index  # ring slots (position & mask) are never negative: no wraparound test
    regrow = build_regrow(ops)

    # bufs: (vals, aggs); st: (mask, F, E, L, R, A, B).
    def init(capacity):
        cap = pow2_at_least(capacity)
        return (alloc(cap), alloc(cap)), (cap - 1, 0, 0, 0, 0, 0, 0)

    def fixup(bufs, st):
        vals, aggs = bufs
        mask, f, e, l, r, a, b = st
        if f == b:  # singleton (or empty): everything is l_F
            return (mask, f, e, e, e, e, e)
        if l == b:  # flip: old l_F becomes l_L, old l_B becomes l_R
            l = f
            a = e
            b = e
        if l == r:  # shift
            return (mask, f, e, l + 1, r + 1, a + 1, b)
        # shrink: read every aggregate before moving a position
        agg_l = load(aggs, u(l & mask))  # l != r here
        agg_r = load(aggs, u((a - 1) & mask)) if r != a else identity
        agg_a = load(aggs, u(a & mask)) if a != b else identity
        store(aggs, u(l & mask), combine(combine(agg_l, agg_r), agg_a))
        store(aggs, u((a - 1) & mask), combine(load(vals, u((a - 1) & mask)), agg_a))
        return (mask, f, e, l + 1, r, a - 1, b)

    fixup = jit(fixup)

    def insert(bufs, st, value):
        vals, aggs = bufs
        mask, f, e, l, r, a, b = st
        back_agg = load(aggs, u((e - 1) & mask)) if b != e else identity
        store(vals, u(e & mask), value)
        store(aggs, u(e & mask), combine(back_agg, value))
        return fixup(bufs, (mask, f, e + 1, l, r, a, b))

    def evict(bufs, st):
        mask, f, e, l, r, a, b = st
        return fixup(bufs, (mask, f + 1, e, l, r, a, b))

    def query(bufs, st):
        vals, aggs = bufs
        mask, f, e, l, r, a, b = st
        front_agg = load(aggs, u(f & mask)) if f != b else identity
        back_agg = load(aggs, u((e - 1) & mask)) if b != e else identity
        return combine(front_agg, back_agg)

    def grow(bufs, st):
        mask, f, e, l, r, a, b = st
        new_bufs = (regrow(bufs[0], mask, f, e), regrow(bufs[1], mask, f, e))
        return new_bufs, (2 * mask + 1, f, e, l, r, a, b)

    if ops.combine_rows is not None:
        return _build_in_place(ops)
    return Funcs(jit(init), jit(insert), jit(evict), jit(query), jit(grow))


def _build_in_place(ops):
    """DABA for vector partials with an in-place combine (sketches).

    The same algorithm, every combine written into the row it is stored in by row index
    (``ops.combine_rows``), and the query's answer into a row after the aggregates' ring: a
    round neither allocates nor makes a view of a row, where each vector combine allocated
    its result and each row view cost two reference-count updates. One more row holds the
    identity, which stands in for an empty part.
    """
    rows, identity, load, alloc, jit = ops.combine_rows, ops.identity, ops.load, ops.alloc, ops.jit
    u = ops.index

    # bufs: (vals, aggs); aggs has two rows after its ring: the identity (cap) and the answer
    # (cap + 1); st: (mask, F, E, L, R, A, B).
    def new_bufs(cap):
        aggs = alloc(cap + 2)
        store_row(aggs, cap, identity)
        store_row(aggs, cap + 1, identity)
        return alloc(cap), aggs

    new_bufs = ops.jit_call(new_bufs)

    def init(capacity):
        cap = power_of_two_at_least(capacity)
        return new_bufs(cap), (cap - 1, 0, 0, 0, 0, 0, 0)

    def fixup(bufs, st):
        vals, aggs = bufs
        mask, f, e, l, r, a, b = st
        if f == b:  # singleton (or empty): everything is l_F
            return (mask, f, e, e, e, e, e)
        if l == b:  # flip: old l_F becomes l_L, old l_B becomes l_R
            l = f
            a = e
            b = e
        if l == r:  # shift
            return (mask, f, e, l + 1, r + 1, a + 1, b)
        # shrink: aggs[L] (+)= aggs[A-1] (+) aggs[A], then aggs[A-1] = vals[A-1] (+) aggs[A];
        # aggs[L] reads aggs[A-1] before it is rewritten (they are one slot when R == A)
        agg_l = u(l & mask)
        before_a = u((a - 1) & mask)
        if r != a:
            rows(aggs, agg_l, aggs, agg_l, aggs, before_a)
        agg_a = u(a & mask) if a != b else u(mask + 1)
        rows(aggs, agg_l, aggs, agg_l, aggs, agg_a)
        rows(aggs, before_a, vals, before_a, aggs, agg_a)
        return (mask, f, e, l + 1, r, a - 1, b)

    fixup = jit(fixup)

    def insert(bufs, st, value):
        vals, aggs = bufs
        mask, f, e, l, r, a, b = st
        back = u((e - 1) & mask) if b != e else u(mask + 1)
        slot = u(e & mask)
        store_row(vals, slot, value)
        rows(aggs, slot, aggs, back, vals, slot)
        return fixup(bufs, (mask, f, e + 1, l, r, a, b))

    def evict(bufs, st):
        mask, f, e, l, r, a, b = st
        return fixup(bufs, (mask, f + 1, e, l, r, a, b))

    def query(bufs, st):
        vals, aggs = bufs
        mask, f, e, l, r, a, b = st
        none = u(mask + 1)
        answer = u(mask + 2)
        rows(aggs, answer, aggs, u(f & mask) if f != b else none, aggs, u((e - 1) & mask) if b != e else none)
        return load(aggs, answer)

    def grow(bufs, st):
        mask, f, e, l, r, a, b = st
        new_mask = 2 * mask + 1
        grown = new_bufs(new_mask + 1)
        for pos in range(f, e):
            copy_row(grown[0], pos & new_mask, bufs[0], pos & mask)
            copy_row(grown[1], pos & new_mask, bufs[1], pos & mask)
        return grown, (new_mask, f, e, l, r, a, b)

    # inlined into the driver's loop: with no row views there is no reference counting to keep
    # out of it, so a call would cost more than it saves
    return Funcs(jit(init), jit(insert), jit(evict), jit(query), ops.jit_call(grow))
