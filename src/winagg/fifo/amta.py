"""Amortized MTA (paper 001, section 4.2): a forest of pair trees, amortized O(1) insert and evict.

The tail pair of every level is the root of its own tree and gets a parent
only once a newer pair follows it, so an insert carries like a binary
counter (Algorithm 3). The top level's pair is the oldest tree. The result
pair ``R0`` (oldest tree) and ``R1`` (all younger trees) gives the query in
one combine; a stack holds, per level whose head pair is full, the oldest
tree without that level's head element, so a single eviction pops the next
``R0`` (Algorithms 6 and 7) and only fixes structure, leaving the values on
the leftmost branch stale. Digest fixes: R1 is rebuilt from the tail pairs
below the top only, starting from the identity (Algorithm 5), and both R0 and
R1 are rebuilt when an eviction empties the oldest tree.

Bulk eviction of ``count`` items (the paper's switch to Algorithm 2 after
about log n single evictions): with ``count <= h`` (the number of levels,
about log2 n) it runs single evictions, otherwise it repairs the leftmost
branch, advances every level's head past the dropped branches, and rebuilds
R and the stack: O(log n) for any size.

Levels are aligned: every level pairs from index 0 (its base is 0), so element
``k`` of level ``l`` covers items ``k 2**l .. (k + 1) 2**l - 1``. The paper
starts a new top level with the old root's aggregate as a left element; here
it lands where the alignment puts it, so a new top pair may be ⟨∅, x⟩ (the
paper's Invariant 1 allows that for a level's first pair), which costs at most
one level more. In memory the levels then share one in-order ring
(``_mta``): no per-level base, offset or mask is read on the way.

State: bufs ``(vals, meta)`` (the stack is in ``vals`` at ``meta[STACK]``);
st ``(mask, first, end, h, sp, R0, R1)`` with ``h`` levels and ``sp`` stack entries.
"""

from ._mta import (HI, LO, MASK, build_tree, capacity_of, hot_path_jit, in_order_capacity_of, in_order_size_for,
                   ring_size_for)
from .lmta import MTAFuncs

INFO = dict(order="fifo", needs_inverse=False,
            time="insert and evict O(1) amortized (O(log n) worst case), query O(1), "
                 "bulk evict of any size O(log n)",
            space="about 2n partials (n items plus n internal nodes)", paper="001",
            native=("insert", "evict", "query", "bulk_evict", "slide_policy"),
            options={})


def build(ops, virtual: bool = False):
    """AMTA specialised to ``ops``; ``virtual`` lays the levels out for a key-value store."""
    combine, identity, jit = ops.combine, ops.identity, ops.jit
    tree = build_tree(ops, virtual, in_order=True)
    size_for, capacity_for = (ring_size_for, capacity_of) if virtual else (in_order_size_for, in_order_capacity_of)
    get, put, pair_agg, repair_left = tree.get, tree.put, tree.pair_agg, tree.repair_left
    get_stack, put_stack = tree.get_stack, tree.put_stack
    locate, get_at, put_at = tree.locate, tree.get_at, tree.put_at
    get_stack_at, put_stack_at = tree.get_stack_at, tree.put_stack_at
    hot = hot_path_jit(ops)

    def init(capacity):
        size = size_for(capacity)
        vals, meta = tree.new_tree(size)
        return (vals, meta), (capacity_for(size) - 1, 0, 0, 1, 0, identity, identity)

    def left_result(vals, meta, h):
        # Algorithm 4: the stack, top level down, of the oldest tree without each full
        # head pair's left element; reads only right elements of full head pairs and
        # the oldest item, which are never stale. Returns (stack size, R0).
        sp = 0
        acc = identity
        for level in range(h - 1, -1, -1):
            lo = meta[LO + level]
            if (lo & 1) == 0 and lo + 1 < meta[HI + level]:
                acc = combine(get(vals, meta, level, lo + 1), acc)
                put_stack(vals, meta, sp, acc)
                sp += 1
        return sp, combine(get(vals, meta, 0, meta[LO]), acc)

    left_result = jit(left_result)

    def right_result(vals, meta, h):
        # Algorithm 5 (fixed): the younger trees are the tail pairs below the top level.
        acc = identity
        for level in range(h - 1):
            hi = meta[HI + level]
            acc = combine(pair_agg(vals, meta, level, (hi - 1) >> 1), acc)
        return acc

    right_result = jit(right_result)

    def rebuild(vals, meta, mask, first, end, h):
        sp, r0 = left_result(vals, meta, h)
        return (mask, first, end, h, sp, r0, right_result(vals, meta, h))

    rebuild = ops.jit_loop(rebuild)  # out of line in every compiled case

    # With aligned levels, a level's index range follows from the items' (first, end): level
    # l < h holds indices first >> l .. ((end + 1) >> l) - 2 (its head covers the oldest item;
    # element m exists once element 2m + 2 below does). The per-item operations compute the
    # ranges instead of reading them and only write them into `meta` for the other operations
    # (tests/fifo/test_amta.py checks the identity).

    def insert(bufs, st, value):
        vals, meta = bufs
        mask, first, end, h, sp, r0, r1 = st
        where = locate(meta)
        put_at(vals, where, 0, end, value)
        meta[HI] = end + 1
        if first == end:  # the first item: one tree of one item
            return (mask, first, end + 1, h, 0, value, identity)
        r1 = combine(r1, value)
        if end & 1:  # fills the tail pair of the items: the common case
            return (mask, first, end + 1, h, sp, r0, r1)
        index = end
        level = 0
        while level < h - 1:
            if index & 1:  # fills the tail pair of this level: a tree root, no parent yet
                return (mask, first, end + 1, h, sp, r0, r1)
            # a new pair: the previous tail pair is final, and full (it is not the head pair
            # of a level with a parent level), and gets its parent above
            parent = (index >> 1) - 1
            put_at(vals, where, level + 1, parent,
                   combine(get_at(vals, where, level, index - 2), get_at(vals, where, level, index - 1)))
            meta[HI + level + 1] = parent + 1
            index = parent
            level += 1
        root_pair = (first >> level) >> 1
        if (index >> 1) != root_pair:
            # a second pair on the top level: the oldest tree gets a parent level (same items),
            # aligned: its element is the left one when root_pair is even (base 0)
            top = level + 1
            meta[LO + top] = root_pair
            meta[HI + top] = root_pair + 1
            put_at(vals, where, top, root_pair, pair_agg(vals, meta, level, root_pair))
            return (mask, first, end + 1, h + 1, sp, r0, r1)
        # the new element completed the top pair: a younger tree merged into the oldest
        return rebuild(vals, meta, mask, first, end + 1, h)

    def evict(bufs, st):
        vals, meta = bufs
        mask, first, end, h, sp, r0, r1 = st
        if end - first == 1:
            meta[LO] = end
            return (mask, end, end, 1, 0, identity, identity)
        where = locate(meta)
        # the next R0 is on top of the stack (Algorithm 6)
        if sp > 0:
            sp -= 1
            # a copy: the stack slot is reused below (vector partials load as views)
            r0 = combine(get_stack_at(vals, where, sp), identity)
        else:
            r0 = identity
        first += 1
        meta[LO] = first
        if first & 1:  # the head pair of the items keeps its right element: the common case
            return (mask, first, end, h, sp, r0, r1)
        level = 0
        # while the head pair of `level` lost its last element, its parent goes too
        while level < h - 1 and ((first >> level) & 1) == 0:
            level += 1
            meta[LO + level] = first >> level
        if level == h - 1 and (first >> level) == ((end + 1) >> level) - 1:
            # the top pair is empty: the oldest tree is gone and the tail pair of the level
            # below, alone on it now, is the oldest tree (rebuild R0 and R1: digest fix)
            return rebuild(vals, meta, mask, first, end, h - 1)
        # new head pairs below `level` are full: push their stack entries, top down (Algorithm 7)
        acc = get_stack_at(vals, where, sp - 1) if sp > 0 else identity
        for below in range(level - 1, -1, -1):
            lo = first >> below
            if lo + 2 < (end + 1) >> below:  # the head pair's right element exists
                acc = combine(get_at(vals, where, below, lo + 1), acc)
                put_stack_at(vals, where, sp, acc)
                sp += 1
        return (mask, first, end, h, sp, r0, r1)

    evict_one = hot(evict)

    def bulk_evict(bufs, st, count):
        vals, meta = bufs
        mask, first, end, h, sp, r0, r1 = st
        if count <= 0:
            return st
        if count >= end - first:
            meta[LO] = end
            return (mask, end, end, 1, 0, identity, identity)
        if count <= h:  # a few single evictions cost less than the O(log n) bulk path
            for _ in range(count):
                st = evict_one(bufs, st)
            return st
        repair_left(vals, meta, h)
        first += count
        meta[LO] = first
        level = 0
        while level < h - 1:
            head_pair = meta[LO + level] >> 1
            if head_pair == (meta[HI + level] - 1) >> 1:
                break  # only the tail pair is left here: it is the oldest tree now
            meta[LO + level + 1] = head_pair
            level += 1
        h = level + 1
        repair_left(vals, meta, h)
        return rebuild(vals, meta, mask, first, end, h)

    bulk_evict = hot(bulk_evict)

    def query(bufs, st):
        return combine(st[5], st[6])

    def grow(bufs, st):
        mask, first, end, h, sp, r0, r1 = st
        vals, meta = tree.regrow(bufs[0], bufs[1], h, sp)
        return (vals, meta), (capacity_for(meta[MASK] + 1) - 1, first, end, h, sp, r0, r1)

    def removable(bufs, st, total, removed, wsp):
        vals, meta = bufs
        repair_left(vals, meta, st[3])  # the search reads the leftmost branch
        return tree.removable(vals, meta, st[3], True, total, removed, wsp)

    def oldest(bufs, st):
        return get(bufs[0], bufs[1], 0, st[1])

    return MTAFuncs(jit(init), hot(insert), evict_one, jit(query), jit(grow), bulk_evict,
                    jit(removable), jit(oldest))


from ._mta_aggregator import MTAAggregator as Aggregator  # noqa: E402  (winagg.make uses it)
