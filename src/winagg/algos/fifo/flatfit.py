"""FlatFIT (Shein, Chrysanthis, Labrinidis, SSDBM 2017): a jump table with path compression.

Position p of the window has a *run*: ``pointers[p]`` (an absolute position,
p < pointers[p] <= end) and ``partials[p]``, the aggregate of positions
p .. pointers[p] - 1. A fresh item is a run of one. A query of positions
a .. b-1 follows the runs from a, pushing each visited position on the
``Positions`` stack, and on the way back writes the suffix aggregate into
every visited run except the first and the newest (which the paper leaves
alone) and points it at b, so that later queries jump over it in one step.

Repairs of the printed Algorithm 1 (see the digest): a one-run chain pops
the stack once, not twice; the answer is ``partials[t] (+) answer`` (older
data on the left, right for non-commutative monoids). Extensions made here:
positions are absolute, so inserts and evicts mix freely (a dynamic window)
and the buffers double when full; the raw items are kept too, so a range
that ends before the window does (b < end) steps over a run that reaches
past b item by item instead of failing. With ranges that end at the window
end (the paper's queries), the cost is the paper's: amortized <= 3 combines
per slide for one query, one combine per query when all ranges 1..n run
largest first.

A fresh item is a run of one without being written as one: an insert stores
only the item. A pointer at most its own position is left from an earlier
occupant of the ring slot (every pointer is at most the window's end, and the
window never spans more than the ring), and means "a run of one"; the
aggregate of a run of one is its item, so ``partials`` holds only the runs
that a query compressed. The last slot of the stack buffer keeps ``written``:
one past the youngest position a query ever wrote a run for, so every position
from there on is known to be a run of one without reading its pointer, and a
query walks those positions without pushing them on the stack. At large
windows every buffer a round touches is a stream through memory (the paper's
periodic full-window compression included): an insert writes one stream
instead of three, and that compression no longer reads pointers or goes
through the stack.
"""

from __future__ import annotations

import numpy as np

from ...core.ops import RangeFuncs, helper_for, power_of_two_at_least

INFO = dict(order="fifo", needs_inverse=False,
            time="O(1) amortized (<= 3 combines per slide), O(n) worst case; n - 1 combines for all ranges 1..n",
            space="3n",
            # query_ranges (every range 1..n at once) is winagg.algos.fifo.multi_query, beside the functions
            paper="002", native=("query_ranges",))


def build(ops):
    """FlatFIT specialised to ``ops`` (see the module docstring).

    ``bufs`` is ``(partials, items, pointers, stack)``; pointers and the
    stack are int64 numpy arrays in both modes.
    """
    pow2_at_least = helper_for(ops, power_of_two_at_least)
    combine, identity, load, store, alloc, jit = ops.combine, ops.identity, ops.load, ops.store, ops.alloc, ops.jit
    u = ops.index  # positions and stack depths are never negative: unsigned indices, no wraparound test

    into = ops.combine_into
    extra = 0 if into is None else 1

    def new_bufs(cap):
        # the stack holds at most one entry per position of the window, then ``written``
        # (with an in-place combine, one more partial after the ring: the whole-window answer)
        return alloc(cap + extra), alloc(cap), np.zeros(cap, np.int64), np.zeros(cap + 2, np.int64)

    new_bufs = ops.jit_call(new_bufs)

    def chain_folder(bounded):
        """The chain fold; ``bounded`` for ranges that may end before the window does."""

        def chain_fold(partials, items, pointers, stack, mask, pos_from, pos_to):
            if pos_to <= pos_from:
                return identity
            last = u(stack.shape[0] - 1)
            written = stack[last]
            depth = 0
            pos = pos_from
            while pos < pos_to and pos < written:
                stack[u(depth)] = pos
                depth += 1
                slot = u(pos & mask)
                nxt = pointers[slot]
                if nxt <= pos:  # left by the slot's earlier occupant: a fresh item, a run of one
                    nxt = pos + 1
                # A run reaches past the range only when the range ends before the window: every
                # pointer is at most the window's end. Such a run restarts as the lone item.
                if bounded and nxt > pos_to:
                    nxt = pos + 1
                    pointers[slot] = nxt
                pos = nxt
            # Unwind, the newest run first: every run between it and the oldest (pos_from, the
            # paper's startInd, combined but not written back) now ends at pos_to. Positions
            # tail .. pos_to - 1 (none if tail == pos_to) are runs of one, walked without the stack;
            # a run on the stack is one item exactly when the next run starts right after it.
            tail = pos
            if tail < pos_to:
                run = pos_to - 1
                answer = load(items, u(run & mask))
                if run - 1 > pos_from and run - 1 >= tail and run > written:
                    written = run  # the youngest run written below
                while run > tail:
                    run -= 1
                    slot = u(run & mask)
                    answer = combine(load(items, slot), answer)
                    if run != pos_from:
                        store(partials, slot, answer)
                        pointers[slot] = pos_to
                later = tail
            else:
                depth -= 1
                later = stack[u(depth)]
                slot = u(later & mask)
                answer = load(items, slot) if later + 1 == pos_to else load(partials, slot)
            if depth > 0:
                while depth > 1:
                    depth -= 1
                    run = stack[u(depth)]
                    slot = u(run & mask)
                    answer = combine(load(items, slot) if run + 1 == later else load(partials, slot), answer)
                    store(partials, slot, answer)
                    pointers[slot] = pos_to
                    later = run
                run = stack[0]
                slot = u(run & mask)
                answer = combine(load(items, slot) if run + 1 == later else load(partials, slot), answer)
            stack[last] = written
            return answer

        return chain_fold

    # The whole-window query is compiled into its caller (flat): its chain is two or three
    # runs long in a sliding window, and a call passing the four buffers cost more than the walk.
    window_fold = ops.jit_flat(chain_folder(False))

    if into is not None:

        def window_fold_in_place(partials, items, pointers, stack, mask, pos_from, pos_to):
            # chain_fold for the whole window with vector partials (sketches): each run's
            # new aggregate is combined straight into its row, and the answer into the row
            # after the ring, instead of each combine allocating its result
            if pos_to <= pos_from:
                return identity
            last = u(stack.shape[0] - 1)
            written = stack[last]
            depth = 0
            pos = pos_from
            while pos < pos_to and pos < written:
                stack[u(depth)] = pos
                depth += 1
                nxt = pointers[u(pos & mask)]
                if nxt <= pos:
                    nxt = pos + 1
                pos = nxt
            answer_row = load(partials, u(mask + 1))
            tail = pos
            if tail < pos_to:
                run = pos_to - 1
                answer = load(items, u(run & mask))
                if run - 1 > pos_from and run - 1 >= tail and run > written:
                    written = run
                while run > tail:
                    run -= 1
                    slot = u(run & mask)
                    if run != pos_from:
                        row = load(partials, slot)
                        into(row, load(items, slot), answer)
                        pointers[slot] = pos_to
                        answer = row
                    else:
                        into(answer_row, load(items, slot), answer)
                        answer = answer_row
                later = tail
            else:
                depth -= 1
                later = stack[u(depth)]
                slot = u(later & mask)
                answer = load(items, slot) if later + 1 == pos_to else load(partials, slot)
            if depth > 0:
                while depth > 1:
                    depth -= 1
                    run = stack[u(depth)]
                    slot = u(run & mask)
                    row = load(partials, slot)
                    into(row, load(items, slot) if run + 1 == later else row, answer)
                    pointers[slot] = pos_to
                    answer = row
                    later = run
                run = stack[0]
                slot = u(run & mask)
                into(answer_row, load(items, slot) if run + 1 == later else load(partials, slot), answer)
                answer = answer_row
            stack[last] = written
            return answer

        window_fold = jit(window_fold_in_place)
    range_fold = jit(chain_folder(True))

    def init(capacity):
        cap = pow2_at_least(capacity)
        return new_bufs(cap), (cap - 1, 0, 0)

    def insert(bufs, st, value):
        mask, first, end = st
        store(bufs[1], u(end & mask), value)  # a run of one: its pointer and partial are implied
        return (mask, first, end + 1)

    def evict(bufs, st):
        mask, first, end = st
        return (mask, first + 1, end)

    def bulk_evict(bufs, st, count):
        mask, first, end = st
        return (mask, first + count, end)

    def query(bufs, st):
        mask, first, end = st
        return window_fold(bufs[0], bufs[1], bufs[2], bufs[3], mask, first, end)

    def range_query(bufs, st, pos_from, pos_to):
        mask, _, _ = st
        return range_fold(bufs[0], bufs[1], bufs[2], bufs[3], mask, pos_from, pos_to)

    def grow(bufs, st):
        mask, first, end = st
        partials, items, pointers, stack = bufs
        new_mask = 2 * mask + 1
        grown = new_bufs(new_mask + 1)
        grown[3][grown[3].shape[0] - 1] = stack[stack.shape[0] - 1]
        # pointers are absolute positions: copied unchanged (one at most its position stays so)
        for pos in range(first, end):
            old, new = pos & mask, pos & new_mask
            store(grown[0], new, load(partials, old))
            store(grown[1], new, load(items, old))
            grown[2][new] = pointers[old]
        return grown, (new_mask, first, end)

    # The range queries loop: they run as calls of their own without reference counting (ops.jit_loop).
    looping = ops.jit_loop
    return RangeFuncs(jit(init), jit(insert), jit(evict), jit(query), ops.jit_call(grow), jit(bulk_evict),
                        looping(range_query))
