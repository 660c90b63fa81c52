"""Recalc: keep the items, fold the whole window on every query (the baseline every paper beats)."""

from ...core.ops import Funcs, build_regrow, helper_for, power_of_two_at_least

INFO = dict(order="fifo", needs_inverse=False, time="query O(n), insert/evict O(1)", space="n",
            paper="000 (baseline)")


def build(ops):
    pow2_at_least = helper_for(ops, power_of_two_at_least)
    combine, identity, load, store, alloc, jit = ops.combine, ops.identity, ops.load, ops.store, ops.alloc, ops.jit
    regrow = build_regrow(ops)

    # bufs: the items; st: (mask, first, end)
    def init(capacity):
        cap = pow2_at_least(capacity)
        return alloc(cap), (cap - 1, 0, 0)

    def insert(buf, st, value):
        mask, first, end = st
        store(buf, end & mask, value)
        return (mask, first, end + 1)

    def evict(buf, st):
        mask, first, end = st
        return (mask, first + 1, end)

    u = ops.index

    def fold_span(buf, lo, count):
        # Slots lo .. lo + count - 1 in four contiguous quarters, each folded on its own and the
        # four joined in order: associativity allows it for any monoid, and four independent
        # chains of combines run side by side where one chain waits on each combine in turn.
        q = count >> 2
        a0 = identity
        a1 = identity
        a2 = identity
        a3 = identity
        for k in range(q):
            a0 = combine(a0, load(buf, u(lo + k)))
            a1 = combine(a1, load(buf, u(lo + q + k)))
            a2 = combine(a2, load(buf, u(lo + 2 * q + k)))
            a3 = combine(a3, load(buf, u(lo + 3 * q + k)))
        for k in range(4 * q, count):
            a3 = combine(a3, load(buf, u(lo + k)))
        return combine(combine(a0, a1), combine(a2, a3))

    fold_span = jit(fold_span)

    def query(buf, st):
        mask, first, end = st
        lo = first & mask
        count = end - first
        head = min(count, mask + 1 - lo)  # up to the end of the ring, then from its start
        if head == count:
            return fold_span(buf, lo, count)
        return combine(fold_span(buf, lo, head), fold_span(buf, 0, count - head))

    def grow(buf, st):
        mask, first, end = st
        return regrow(buf, mask, first, end), (2 * mask + 1, first, end)

    # query loops over the window: a call of its own (see two_stacks_lite)
    return Funcs(jit(init), jit(insert), jit(evict), ops.jit_loop(query), jit(grow))
