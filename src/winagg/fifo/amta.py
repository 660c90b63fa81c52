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

State: bufs ``(vals, meta)`` (the stack is in ``vals`` at ``meta[STACK]``);
st ``(mask, first, end, h, sp, R0, R1)`` with ``h`` levels and ``sp`` stack entries.
"""

from ._mta import BASE, HI, LO, MASK, STACK, build_tree, capacity_of, hot_path_jit, ring_size_for
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
    tree = build_tree(ops, virtual)
    get, put, pair_agg, repair_left = tree.get, tree.put, tree.pair_agg, tree.repair_left
    get_stack, put_stack = tree.get_stack, tree.put_stack
    hot = hot_path_jit(ops)

    def init(capacity):
        ring = ring_size_for(capacity)
        vals, meta = tree.new_tree(ring)
        return (vals, meta), (capacity_of(ring) - 1, 0, 0, 1, 0, identity, identity)

    def left_result(vals, meta, h):
        # Algorithm 4: the stack, top level down, of the oldest tree without each full
        # head pair's left element; reads only right elements of full head pairs and
        # the oldest item, which are never stale. Returns (stack size, R0).
        sp = 0
        acc = identity
        for level in range(h - 1, -1, -1):
            lo = meta[LO + level]
            if ((lo - meta[BASE + level]) & 1) == 0 and lo + 1 < meta[HI + level]:
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
            acc = combine(pair_agg(vals, meta, level, (hi - 1 - meta[BASE + level]) >> 1), acc)
        return acc

    right_result = jit(right_result)

    def rebuild(vals, meta, mask, first, end, h):
        sp, r0 = left_result(vals, meta, h)
        return (mask, first, end, h, sp, r0, right_result(vals, meta, h))

    rebuild = ops.jit_loop(rebuild)  # out of line in every compiled case

    def insert(bufs, st, value):
        vals, meta = bufs
        mask, first, end, h, sp, r0, r1 = st
        put(vals, meta, 0, end, value)
        meta[HI] = end + 1
        if first == end:  # the first item: one tree of one item
            return (mask, first, end + 1, h, 0, value, identity)
        r1 = combine(r1, value)
        if end & 1:  # fills the tail pair of the items (level 0's base is 0): the common case
            return (mask, first, end + 1, h, sp, r0, r1)
        index = end
        level = 0
        while level < h - 1:
            rel = index - meta[BASE + level]
            if rel & 1:  # fills the tail pair of this level: a tree root, no parent yet
                return (mask, first, end + 1, h, sp, r0, r1)
            # a new pair: the previous tail pair is final, and full (it is not the head pair
            # of a level with a parent level), and gets its parent above
            parent = (rel >> 1) - 1
            put(vals, meta, level + 1, parent,
                combine(get(vals, meta, level, index - 2), get(vals, meta, level, index - 1)))
            meta[HI + level + 1] = parent + 1
            index = parent
            level += 1
        base = meta[BASE + level]
        root_pair = (meta[LO + level] - base) >> 1
        if ((index - base) >> 1) != root_pair:
            # a second pair on the top level: the oldest tree gets a parent level (same items)
            top = level + 1
            meta[BASE + top] = root_pair
            meta[LO + top] = root_pair
            meta[HI + top] = root_pair + 1
            put(vals, meta, top, root_pair, pair_agg(vals, meta, level, root_pair))
            return (mask, first, end + 1, h + 1, sp, r0, r1)
        # the new element completed the top pair: a younger tree merged into the oldest
        return rebuild(vals, meta, mask, first, end + 1, h)

    def evict(bufs, st):
        vals, meta = bufs
        mask, first, end, h, sp, r0, r1 = st
        if end - first == 1:
            meta[LO] = end
            return (mask, end, end, 1, 0, identity, identity)
        # the next R0 is on top of the stack (Algorithm 6)
        if sp > 0:
            sp -= 1
            # a copy: the stack slot is reused below (vector partials load as views)
            r0 = combine(get_stack(vals, meta, sp), identity)
        else:
            r0 = identity
        first += 1
        meta[LO] = first
        if first & 1:  # the head pair of the items keeps its right element: the common case
            return (mask, first, end, h, sp, r0, r1)
        level = 0
        # while the head pair of `level` lost its last element, its parent goes too
        while level < h - 1 and ((meta[LO + level] - meta[BASE + level]) & 1) == 0:
            meta[LO + level + 1] += 1
            level += 1
        if level == h - 1 and meta[LO + level] == meta[HI + level]:
            # the top pair is empty: the oldest tree is gone and the tail pair of the level
            # below, alone on it now, is the oldest tree (rebuild R0 and R1: digest fix)
            return rebuild(vals, meta, mask, first, end, h - 1)
        # new head pairs below `level` are full: push their stack entries, top down (Algorithm 7)
        acc = get_stack(vals, meta, sp - 1) if sp > 0 else identity
        for below in range(level - 1, -1, -1):
            lo = meta[LO + below]
            if lo + 1 < meta[HI + below]:
                acc = combine(get(vals, meta, below, lo + 1), acc)
                put_stack(vals, meta, sp, acc)
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
            base = meta[BASE + level]
            head_pair = (meta[LO + level] - base) >> 1
            if head_pair == (meta[HI + level] - 1 - base) >> 1:
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
        return (vals, meta), (capacity_of(meta[MASK] + 1) - 1, first, end, h, sp, r0, r1)

    def removable(bufs, st, total, removed, wsp):
        vals, meta = bufs
        repair_left(vals, meta, st[3])  # the search reads the leftmost branch
        return tree.removable(vals, meta, st[3], True, total, removed, wsp)

    def oldest(bufs, st):
        return get(bufs[0], bufs[1], 0, st[1])

    return MTAFuncs(jit(init), hot(insert), evict_one, jit(query), jit(grow), bulk_evict,
                    jit(removable), jit(oldest))


from ._mta_aggregator import MTAAggregator as Aggregator  # noqa: E402  (winagg.make uses it)
