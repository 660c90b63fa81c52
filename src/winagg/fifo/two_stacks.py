"""Two-Stacks (DABA paper, section 3): a front stack of suffix aggregates and a back stack of
prefix aggregates on one ring buffer; an eviction from an empty front stack flips the back
stack over in one O(n) pass. Amortized O(1), worst case O(n)."""

from ..ops import Funcs, build_grow, power_of_two_at_least

INFO = dict(order="fifo", needs_inverse=False, time="O(1) amortized, O(n) worst case", space="2n",
            paper="003")


def build(ops):
    combine, identity, load, store, alloc, jit = ops.combine, ops.identity, ops.load, ops.store, ops.alloc, ops.jit
    grow = build_grow(ops)

    # State: (vals, aggs, mask, F, B, E). [F, B) is the front stack (aggs hold suffix
    # aggregates up to B-1), [B, E) the back stack (aggs hold prefix aggregates from B).
    def init(capacity):
        cap = power_of_two_at_least(capacity)
        return (alloc(cap), alloc(cap), cap - 1, 0, 0, 0)

    def insert(st, value):
        vals, aggs, mask, front, back, end = st
        if end - front > mask:
            vals, mask_v = grow(vals, mask, front, end)
            aggs, mask = grow(aggs, mask, front, end)
        back_agg = load(aggs, (end - 1) & mask) if back != end else identity
        store(vals, end & mask, value)
        store(aggs, end & mask, combine(back_agg, value))
        return (vals, aggs, mask, front, back, end + 1)

    def evict(st):
        vals, aggs, mask, front, back, end = st
        if front == back:  # flip: turn the back stack into suffix aggregates
            acc = identity
            pos = end - 1
            while pos >= front:
                acc = combine(load(vals, pos & mask), acc)
                store(aggs, pos & mask, acc)
                pos -= 1
            back = end
        return (vals, aggs, mask, front + 1, back, end)

    def query(st):
        vals, aggs, mask, front, back, end = st
        front_agg = load(aggs, front & mask) if front != back else identity
        back_agg = load(aggs, (end - 1) & mask) if back != end else identity
        return combine(front_agg, back_agg)

    def size(st):
        return st[5] - st[3]

    return Funcs(jit(init), jit(insert), jit(evict), jit(query), jit(size))
