"""Two-Stacks Lite (DABA paper, section 4): Two-Stacks with n + 1 partials. The front part
holds suffix aggregates, the back part raw items plus one running aggregate ``aggB``.
Amortized O(1), worst case O(n)."""

from ..ops import Funcs, build_regrow, flat_unless_vector, power_of_two_at_least

INFO = dict(order="fifo", needs_inverse=False, time="O(1) amortized, O(n) worst case", space="n + 1",
            paper="003")


def build(ops):
    combine, identity, load, store, alloc, jit = ops.combine, ops.identity, ops.load, ops.store, ops.alloc, ops.jit
    u = ops.index  # ring slots (position & mask) are never negative: no wraparound test
    regrow = build_regrow(ops)

    # bufs: one buffer; st: (mask, F, E, B, aggB).
    def init(capacity):
        cap = power_of_two_at_least(capacity)
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
    # evict; as a call of its own (ops.jit_loop) it cost the call, most of the round at window
    # 4096 (sum: 11.4 ns per round). Compiled without the runtime and inlined by LLVM
    # (ops.jit_flat) it costs neither: 6-8 ns.
    return Funcs(jit(init), jit(insert), flat_unless_vector(ops)(evict), jit(query), jit(grow))
