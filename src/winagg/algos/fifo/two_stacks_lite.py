"""Two-Stacks Lite (DABA paper, section 4): Two-Stacks with n + 1 partials. The front part
holds suffix aggregates, the back part raw items plus one running aggregate ``aggB``.
Amortized O(1), worst case O(n)."""

from ...core.ops import Funcs, build_regrow, flat_unless_vector, helper_for, power_of_two_at_least

INFO = dict(order="fifo", needs_inverse=False, time="O(1) amortized, O(n) worst case", space="n + 1",
            paper="003")


def build(ops):
    pow2_at_least = helper_for(ops, power_of_two_at_least)
    combine, identity, load, store, alloc, jit = ops.combine, ops.identity, ops.load, ops.store, ops.alloc, ops.jit
    u = ops.index  # ring slots (position & mask) are never negative: no wraparound test
    regrow = build_regrow(ops)

    # bufs: one buffer; st: (mask, F, E, B, aggB).
    def init(capacity):
        cap = pow2_at_least(capacity)
        return alloc(cap), (cap - 1, 0, 0, 0, identity)

    def insert(buf, st, value):
        mask, front, end, back, agg_back = st
        store(buf, u(end & mask), value)
        return (mask, front, end + 1, back, combine(agg_back, value))

    def flip(buf, mask, front, end):
        # Right-to-left suffix scan, older on the left. The running suffix stays in a
        # local rather than being re-read from the slot just written.
        pos = end - 1
        suffix = load(buf, u(pos & mask))
        while pos != front:
            pos -= 1
            suffix = combine(load(buf, u(pos & mask)), suffix)
            store(buf, u(pos & mask), suffix)

    flip = ops.jit(flip)

    def evict(buf, st):
        mask, front, end, back, agg_back = st
        if front == back and back != end:
            flip(buf, mask, front, end)
            back = end
            agg_back = identity
        return (mask, front + 1, end, back, agg_back)

    def query(buf, st):
        mask, front, end, back, agg_back = st
        front_agg = load(buf, u(front & mask)) if front != back else identity
        return combine(front_agg, agg_back)

    def grow(buf, st):
        mask, front, end, back, agg_back = st
        return regrow(buf, mask, front, end), (2 * mask + 1, front, end, back, agg_back)

    # evict holds the flip loop: inlined by numba into a kernel, the loop stops numba from
    # pruning the buffer's reference counting, which then costs two atomic operations on every
    # evict; as a call of its own (ops.jit_loop) it costs the call, more than the round's own
    # work. Compiled without the runtime and inlined by LLVM (ops.jit_flat) it costs neither.
    if ops.combine_into is not None:
        return _build_in_place(ops)
    return Funcs(jit(init), jit(insert), flat_unless_vector(ops)(evict), jit(query), jit(grow))


def _build_in_place(ops):
    """Two-Stacks Lite for vector partials with an in-place combine (sketches).

    The same algorithm, with ``aggB`` and the query's answer kept in two rows after the
    ring (``cap`` and ``cap + 1``) instead of in the state, and every combine written into
    its row: a round allocates nothing, where each vector combine allocated its result
    (about three per round, most of a Bloom round's time). ``aggB``'s row is read only
    while the back stack holds items (``back != end``), so it is never reset.
    """
    into, identity, load, store, alloc, jit = ops.combine_into, ops.identity, ops.load, ops.store, ops.alloc, ops.jit
    u = ops.index

    # bufs: the ring of cap rows, then aggB's row and the answer's; st: (mask, F, E, B).
    def init(capacity):
        cap = power_of_two_at_least(capacity)
        return alloc(cap + 2), (cap - 1, 0, 0, 0)

    def insert(buf, st, value):
        mask, front, end, back = st
        store(buf, u(end & mask), value)
        if back == end:  # the back stack was empty: aggB is the item
            store(buf, u(mask + 1), value)
        else:
            agg_back = load(buf, u(mask + 1))
            into(agg_back, agg_back, value)
        return (mask, front, end + 1, back)

    def evict(buf, st):
        mask, front, end, back = st
        if front == back and back != end:
            # the suffix scan, each slot folded into itself with the suffix after it
            pos = end - 1
            while pos != front:
                pos -= 1
                slot = load(buf, u(pos & mask))
                into(slot, slot, load(buf, u((pos + 1) & mask)))
            back = end
        return (mask, front + 1, end, back)

    def query(buf, st):
        mask, front, end, back = st
        if back == end:
            return load(buf, u(front & mask)) if front != end else identity
        if front == back:
            return load(buf, u(mask + 1))
        answer = load(buf, u(mask + 2))
        into(answer, load(buf, u(front & mask)), load(buf, u(mask + 1)))
        return answer

    def grow(buf, st):
        mask, front, end, back = st
        new_mask = 2 * mask + 1
        grown = alloc(new_mask + 3)
        for pos in range(front, end):
            store(grown, pos & new_mask, load(buf, pos & mask))
        store(grown, new_mask + 1, load(buf, mask + 1))
        return grown, (new_mask, front, end, back)

    # calls of their own: a vector partial's row views need the runtime's reference counting
    return Funcs(jit(init), ops.jit_call(insert), ops.jit_call(evict), jit(query), ops.jit_call(grow))
