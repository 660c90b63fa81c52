"""Recalc: keep the items, fold the whole window on every query (the baseline every paper beats)."""

from ..ops import Funcs, build_regrow, power_of_two_at_least

INFO = dict(order="fifo", needs_inverse=False, time="query O(n), insert/evict O(1)", space="n",
            paper="000 (baseline)")


def build(ops):
    combine, identity, load, store, alloc, jit = ops.combine, ops.identity, ops.load, ops.store, ops.alloc, ops.jit
    regrow = build_regrow(ops)

    # bufs: the items; st: (mask, first, end)
    def init(capacity):
        cap = power_of_two_at_least(capacity)
        return alloc(cap), (cap - 1, 0, 0)

    def insert(buf, st, value):
        mask, first, end = st
        store(buf, end & mask, value)
        return (mask, first, end + 1)

    def evict(buf, st):
        mask, first, end = st
        return (mask, first + 1, end)

    def query(buf, st):
        mask, first, end = st
        acc = identity
        for pos in range(first, end):
            acc = combine(acc, load(buf, pos & mask))
        return acc

    def grow(buf, st):
        mask, first, end = st
        return regrow(buf, mask, first, end), (2 * mask + 1, first, end)

    # query loops over the window: a call of its own (see two_stacks_lite)
    return Funcs(jit(init), jit(insert), jit(evict), ops.jit_loop(query), jit(grow))
