"""Two-Stacks Lite (DABA paper, section 4): Two-Stacks with n + 1 partials. The front part
holds suffix aggregates, the back part raw items plus one running aggregate ``aggB``.
Amortized O(1), worst case O(n)."""

from ..ops import Funcs, build_grow, power_of_two_at_least

INFO = dict(order="fifo", needs_inverse=False, time="O(1) amortized, O(n) worst case", space="n + 1",
            paper="003")


def build(ops):
    combine, identity, load, store, alloc, jit = ops.combine, ops.identity, ops.load, ops.store, ops.alloc, ops.jit
    grow = build_grow(ops)

    # State: (buf, mask, F, B, E, aggB).
    def init(capacity):
        cap = power_of_two_at_least(capacity)
        return (alloc(cap), cap - 1, 0, 0, 0, identity)

    def insert(st, value):
        buf, mask, front, back, end, agg_back = st
        if end - front > mask:
            buf, mask = grow(buf, mask, front, end)
        store(buf, end & mask, value)
        return (buf, mask, front, back, end + 1, combine(agg_back, value))

    def evict(st):
        buf, mask, front, back, end, agg_back = st
        if front == back and back != end:  # flip: right-to-left suffix scan, older on the left
            pos = end - 1
            while pos != front:
                pos -= 1
                store(buf, pos & mask, combine(load(buf, pos & mask), load(buf, (pos + 1) & mask)))
            back = end
            agg_back = identity
        return (buf, mask, front + 1, back, end, agg_back)

    def query(st):
        buf, mask, front, back, end, agg_back = st
        front_agg = load(buf, front & mask) if front != back else identity
        return combine(front_agg, agg_back)

    def size(st):
        return st[4] - st[2]

    return Funcs(jit(init), jit(insert), jit(evict), jit(query), jit(size))
