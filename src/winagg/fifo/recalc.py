"""Recalc: keep the items, fold the whole window on every query (the baseline every paper beats)."""

from ..ops import Funcs, build_grow, power_of_two_at_least

INFO = dict(order="fifo", needs_inverse=False, time="query O(n), insert/evict O(1)", space="n",
            paper="000 (baseline)")


def build(ops):
    combine, identity, load, store, alloc, jit = ops.combine, ops.identity, ops.load, ops.store, ops.alloc, ops.jit
    grow = build_grow(ops)

    def init(capacity):
        cap = power_of_two_at_least(capacity)
        return (alloc(cap), cap - 1, 0, 0)

    def insert(st, value):
        buf, mask, first, end = st
        if end - first > mask:
            buf, mask = grow(buf, mask, first, end)
        store(buf, end & mask, value)
        return (buf, mask, first, end + 1)

    def evict(st):
        buf, mask, first, end = st
        return (buf, mask, first + 1, end)

    def query(st):
        buf, mask, first, end = st
        acc = identity
        for pos in range(first, end):
            acc = combine(acc, load(buf, pos & mask))
        return acc

    def size(st):
        return st[3] - st[2]

    return Funcs(jit(init), jit(insert), jit(evict), jit(query), jit(size))
