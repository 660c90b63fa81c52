"""Two-Stacks (DABA paper, section 3): a front stack of suffix aggregates and a back stack of
prefix aggregates on one ring buffer; an eviction from an empty front stack flips the back
stack over in one O(n) pass. Amortized O(1), worst case O(n)."""

from ...core.ops import Funcs, build_regrow, flat_unless_vector, helper_for, power_of_two_at_least

INFO = dict(order="fifo", needs_inverse=False, time="O(1) amortized, O(n) worst case", space="2n",
            paper="003")


def build(ops):
    pow2_at_least = helper_for(ops, power_of_two_at_least)
    combine, identity, load, store, alloc, jit = ops.combine, ops.identity, ops.load, ops.store, ops.alloc, ops.jit
    u = ops.index  # ring slots (position & mask) are never negative: no wraparound test
    regrow = build_regrow(ops)

    # bufs: (vals, aggs); st: (mask, F, E, B). [F, B) is the front stack, whose aggs
    # hold suffix aggregates up to B-1; [B, E) the back stack, prefix aggregates from B.
    def init(capacity):
        cap = pow2_at_least(capacity)
        return (alloc(cap), alloc(cap)), (cap - 1, 0, 0, 0)

    def insert(bufs, st, value):
        vals, aggs = bufs
        mask, front, end, back = st
        back_agg = load(aggs, u((end - 1) & mask)) if back != end else identity
        store(vals, u(end & mask), value)
        store(aggs, u(end & mask), combine(back_agg, value))
        return (mask, front, end + 1, back)

    def evict(bufs, st):
        vals, aggs = bufs
        mask, front, end, back = st
        if front == back:  # flip: turn the back stack into suffix aggregates
            acc = identity
            pos = end - 1
            while pos >= front:
                acc = combine(load(vals, u(pos & mask)), acc)
                store(aggs, u(pos & mask), acc)
                pos -= 1
            back = end
        return (mask, front + 1, end, back)

    def query(bufs, st):
        vals, aggs = bufs
        mask, front, end, back = st
        front_agg = load(aggs, u(front & mask)) if front != back else identity
        back_agg = load(aggs, u((end - 1) & mask)) if back != end else identity
        return combine(front_agg, back_agg)

    def grow(bufs, st):
        mask, front, end, back = st
        new_bufs = (regrow(bufs[0], mask, front, end), regrow(bufs[1], mask, front, end))
        return new_bufs, (2 * mask + 1, front, end, back)

    if ops.combine_into is not None:
        return _build_in_place(ops)
    # evict holds the flip loop: see two_stacks_lite for how it is compiled.
    return Funcs(jit(init), jit(insert), flat_unless_vector(ops)(evict), jit(query), jit(grow))


def _build_in_place(ops):
    """Two-Stacks for vector partials with an in-place combine (sketches).

    The same algorithm, every combine written into the row it is stored in and the answer
    into a row after the aggregates' ring: a round allocates nothing, where each vector
    combine allocated its result. One more row holds the identity, which stands in for an
    empty stack (a plain row copy may allocate, and these functions run without the runtime).
    """
    into, identity, load, store, alloc, jit = ops.combine_into, ops.identity, ops.load, ops.store, ops.alloc, ops.jit
    u = ops.index

    # bufs: (vals, aggs); aggs has two rows after its ring: the identity (cap) and the answer
    # (cap + 1); st: (mask, F, E, B).
    def new_bufs(cap):
        aggs = alloc(cap + 2)
        store(aggs, cap, identity)
        store(aggs, cap + 1, identity)
        return alloc(cap), aggs

    new_bufs = ops.jit_call(new_bufs)

    def init(capacity):
        cap = power_of_two_at_least(capacity)
        return new_bufs(cap), (cap - 1, 0, 0, 0)

    def insert(bufs, st, value):
        vals, aggs = bufs
        mask, front, end, back = st
        below = load(aggs, u((end - 1) & mask)) if back != end else load(aggs, u(mask + 1))
        store(vals, u(end & mask), value)
        into(load(aggs, u(end & mask)), below, value)
        return (mask, front, end + 1, back)

    def evict(bufs, st):
        vals, aggs = bufs
        mask, front, end, back = st
        if front == back:  # flip: suffix aggregates of the back stack, right to left
            pos = end - 1
            if pos >= front:
                into(load(aggs, u(pos & mask)), load(vals, u(pos & mask)), load(aggs, u(mask + 1)))
            while pos > front:
                pos -= 1
                into(load(aggs, u(pos & mask)), load(vals, u(pos & mask)), load(aggs, u((pos + 1) & mask)))
            back = end
        return (mask, front + 1, end, back)

    def query(bufs, st):
        vals, aggs = bufs
        mask, front, end, back = st
        none = load(aggs, u(mask + 1))
        answer = load(aggs, u(mask + 2))
        into(answer, load(aggs, u(front & mask)) if front != back else none,
             load(aggs, u((end - 1) & mask)) if back != end else none)
        return answer

    def grow(bufs, st):
        mask, front, end, back = st
        new_mask = 2 * mask + 1
        grown = new_bufs(new_mask + 1)
        for pos in range(front, end):
            store(grown[0], pos & new_mask, load(bufs[0], pos & mask))
            store(grown[1], pos & new_mask, load(bufs[1], pos & mask))
        return grown, (new_mask, front, end, back)

    # calls of their own: a vector partial's row views need the runtime's reference counting
    return Funcs(jit(init), ops.jit_call(insert), ops.jit_call(evict), jit(query), ops.jit_call(grow))
