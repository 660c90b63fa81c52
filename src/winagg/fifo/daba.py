"""DABA, the De-Amortized Banker's Aggregator (DABA paper, section 5).

Two-Stacks that flips early (when the front and back parts are equally long)
and reverses incrementally in ``fixup``: at most 1 combine per query, 4 per
insert and 3 per evict, in the worst case. Positions F <= L <= R <= A <= B <= E
delimit the sublists l_F = [F, B) (with l_L = [L, R), l_R = [R, A),
l_A = [A, B) inside it) and l_B = [B, E); see the digest for the invariants.
"""

from ..ops import Funcs, build_regrow, power_of_two_at_least

INFO = dict(order="fifo", needs_inverse=False, time="O(1) worst case (<= 1/4/3 combines per query/insert/evict)",
            space="2n", paper="003")


def build(ops):
    combine, identity, load, store, alloc, jit = ops.combine, ops.identity, ops.load, ops.store, ops.alloc, ops.jit
    u = ops.index  # ring slots (position & mask) are never negative: no wraparound test
    regrow = build_regrow(ops)

    # bufs: (vals, aggs); st: (mask, F, E, L, R, A, B).
    def init(capacity):
        cap = power_of_two_at_least(capacity)
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

    if ops.combine_into is not None:
        return _build_in_place(ops)
    return Funcs(jit(init), jit(insert), jit(evict), jit(query), jit(grow))


def _build_in_place(ops):
    """DABA for vector partials with an in-place combine (sketches).

    The same algorithm, every combine written into the row it is stored in, and the query's
    answer into a row after the aggregates' ring: a round allocates nothing, where each
    vector combine allocated its result. One more row holds the identity, so that a row is
    copied by a combine too (``x (+) identity``): a plain row copy may allocate, and these
    functions run without the runtime.
    """
    into, identity, load, store, alloc, jit = ops.combine_into, ops.identity, ops.load, ops.store, ops.alloc, ops.jit
    u = ops.index

    # bufs: (vals, aggs); aggs has two rows after its ring: the identity (cap) and the answer
    # (cap + 1); st: (mask, F, E, L, R, A, B).
    def new_bufs(cap):
        aggs = alloc(cap + 2)
        store(aggs, cap, identity)
        store(aggs, cap + 1, identity)
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
        none = load(aggs, u(mask + 1))
        agg_l = load(aggs, u(l & mask))
        if r != a:
            into(agg_l, agg_l, load(aggs, u((a - 1) & mask)))
        agg_a = load(aggs, u(a & mask)) if a != b else none
        into(agg_l, agg_l, agg_a)
        into(load(aggs, u((a - 1) & mask)), load(vals, u((a - 1) & mask)), agg_a)
        return (mask, f, e, l + 1, r, a - 1, b)

    fixup = jit(fixup)

    def insert(bufs, st, value):
        vals, aggs = bufs
        mask, f, e, l, r, a, b = st
        back = load(aggs, u((e - 1) & mask)) if b != e else load(aggs, u(mask + 1))
        store(vals, u(e & mask), value)
        into(load(aggs, u(e & mask)), back, value)
        return fixup(bufs, (mask, f, e + 1, l, r, a, b))

    def evict(bufs, st):
        mask, f, e, l, r, a, b = st
        return fixup(bufs, (mask, f + 1, e, l, r, a, b))

    def query(bufs, st):
        vals, aggs = bufs
        mask, f, e, l, r, a, b = st
        none = load(aggs, u(mask + 1))
        answer = load(aggs, u(mask + 2))
        into(answer, load(aggs, u(f & mask)) if f != b else none,
             load(aggs, u((e - 1) & mask)) if b != e else none)
        return answer

    def grow(bufs, st):
        mask, f, e, l, r, a, b = st
        new_mask = 2 * mask + 1
        grown = new_bufs(new_mask + 1)
        for pos in range(f, e):
            store(grown[0], pos & new_mask, load(bufs[0], pos & mask))
            store(grown[1], pos & new_mask, load(bufs[1], pos & mask))
        return grown, (new_mask, f, e, l, r, a, b)

    # calls of their own: a vector partial's row views need the runtime's reference counting
    return Funcs(jit(init), ops.jit_call(insert), ops.jit_call(evict), jit(query), ops.jit_call(grow))
