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
    locate, get_item, put_item, get_node, put_node = (tree.locate, tree.get_item, tree.put_item, tree.get_node,
                                                      tree.put_node)
    get_stack_at, put_stack_at, own = tree.get_stack_at, tree.put_stack_at, tree.own
    hot = hot_path_jit(ops)

    def init(capacity):
        size = size_for(capacity)
        vals, meta = tree.new_tree(size)
        return (vals, meta), (capacity_for(size) - 1, 0, 0, 1, 0, identity, identity)

    # With aligned levels, a level's index range follows from the items' (first, end): level
    # l < h holds indices first >> l .. ((end + 1) >> l) - 2 (its head covers the oldest item;
    # element m exists once element 2m + 2 below does). The per-item operations never write
    # the ranges; the others, which read them from `meta` (shared with lmta), write them first.
    def write_ranges(meta, first, end, h):
        for level in range(h):
            meta[LO + level] = first >> level
            meta[HI + level] = ((end + 1) >> level) - 1

    write_ranges = jit(write_ranges)

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
        write_ranges(meta, first, end, h)
        sp, r0 = left_result(vals, meta, h)
        return (mask, first, end, h, sp, r0, right_result(vals, meta, h))

    rebuild = ops.jit_loop(rebuild)  # out of line in every compiled case

    def new_top(vals, meta, mask, first, end, h, sp, r0, r1):
        # a second pair on the top level h - 1: the oldest tree gets a parent level (same
        # items), aligned: its element is the left one when the old root pair is even (base 0)
        write_ranges(meta, first, end, h)
        root_pair = first >> h
        meta[LO + h] = root_pair
        meta[HI + h] = root_pair + 1
        put(vals, meta, h, root_pair, pair_agg(vals, meta, h - 1, root_pair))
        return (mask, first, end, h + 1, sp, r0, r1)

    new_top = ops.jit_loop(new_top)

    def insert(bufs, st, value):
        vals, meta = bufs
        mask, first, end, h, sp, r0, r1 = st
        where = locate(meta, mask)
        put_item(vals, where, end, value)
        if first == end:  # the first item: one tree of one item
            return (mask, first, end + 1, h, 0, value, identity)
        r1 = combine(r1, value)
        if end & 1:  # fills the tail pair of the items: the common case
            return (mask, first, end + 1, h, sp, r0, r1)
        # A new pair on level 0: the previous tail pair is final and full, and gets its parent
        # above; on each level where that parent starts a new pair, the carry goes on (a tail
        # pair is a tree root, without a parent, until a newer pair follows it). A level-l node
        # u (level >= 1) is element ((u + 1) >> l) of its level, 2**(l - 1) from its children.
        if h > 1:
            node = end - 2  # element (end >> 1) - 1 of level 1
            put_node(vals, where, node, combine(get_item(vals, where, end - 2), get_item(vals, where, end - 1)))
            half_width = 1
            top_width = 1 << (h - 2)  # half_width on the top level
            while half_width < top_width:
                if (node + 1) & (2 * half_width):  # fills the tail pair of this level: no parent yet
                    return (mask, first, end + 1, h, sp, r0, r1)
                node -= 3 * half_width  # the parent of the previous pair, one level up
                put_node(vals, where, node, combine(get_node(vals, where, node - half_width),
                                                    get_node(vals, where, node + half_width)))
                half_width *= 2
            top_pair = (node + 1) >> h
        else:
            top_pair = end >> 1
        if top_pair != first >> h:
            return new_top(vals, meta, mask, first, end + 1, h, sp, r0, r1)
        # the new element completed the top pair: a younger tree merged into the oldest
        return rebuild(vals, meta, mask, first, end + 1, h)

    def evict(bufs, st):
        vals, meta = bufs
        mask, first, end, h, sp, r0, r1 = st
        if end - first == 1:
            return (mask, end, end, 1, 0, identity, identity)
        where = locate(meta, mask)
        # the next R0 is on top of the stack (Algorithm 6)
        if sp > 0:
            sp -= 1
            r0 = own(get_stack_at(vals, where, sp))  # the slot is reused below
        else:
            r0 = identity
        first += 1
        if first & 1:  # the head pair of the items keeps its right element: the common case
            return (mask, first, end, h, sp, r0, r1)
        # The head pair of each level below `level` lost its last element, and so did its
        # parent: `level` is the number of trailing zero bits of first, at most h - 1.
        width = first & -first  # 2**level
        top_width = 1 << (h - 1)
        if width >= top_width:
            if (first >> (h - 1)) == ((end + 1) >> (h - 1)) - 1:
                # the top pair is empty: the oldest tree is gone and the tail pair of the level
                # below, alone on it now, is the oldest tree (rebuild R0 and R1: digest fix)
                return rebuild(vals, meta, mask, first, end, h - 1)
            if h == 1:  # a single level: no head pair above the items to refill from
                return (mask, first, end, h, sp, r0, r1)
            width = top_width
        # New head pairs below `level` are full: push their stack entries, top down (Algorithm
        # 7). The right element of level b's head pair covers items first + 2**b ..
        # first + 2**(b + 1) - 1 (first is a multiple of 2**level), so its node number is
        # first - 1 + 3 * 2**(b - 1), and it exists when first + 3 * 2**b <= end + 1.
        acc = get_stack_at(vals, where, sp - 1) if sp > 0 else identity
        offset = (3 * width) >> 1
        while offset > 3 and first + offset > end + 1:  # near the tail: not there yet
            offset >>= 1
        while offset > 3:  # levels level - 1 .. 1
            offset >>= 1
            acc = combine(get_node(vals, where, first - 1 + offset), acc)
            put_stack_at(vals, where, sp, acc)
            sp += 1
        if first + 2 <= end:  # level 0: the item first + 1
            put_stack_at(vals, where, sp, combine(get_item(vals, where, first + 1), acc))
            sp += 1
        return (mask, first, end, h, sp, r0, r1)

    evict_one = hot(evict)

    def bulk_evict(bufs, st, count):
        vals, meta = bufs
        mask, first, end, h, sp, r0, r1 = st
        if count <= 0:
            return st
        if count >= end - first:
            return (mask, end, end, 1, 0, identity, identity)
        if count <= h:  # a few single evictions cost less than the O(log n) bulk path
            for _ in range(count):
                st = evict_one(bufs, st)
            return st
        write_ranges(meta, first, end, h)
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
        write_ranges(bufs[1], first, end, h)
        vals, meta = tree.regrow(bufs[0], bufs[1], h, sp)
        return (vals, meta), (capacity_for(meta[MASK] + 1) - 1, first, end, h, sp, r0, r1)

    def removable(bufs, st, total, removed, wsp):
        vals, meta = bufs
        write_ranges(meta, st[1], st[2], st[3])
        repair_left(vals, meta, st[3])  # the search reads the leftmost branch
        return tree.removable(vals, meta, st[3], True, total, removed, wsp)

    def oldest(bufs, st):
        return get(bufs[0], bufs[1], 0, st[1])

    return MTAFuncs(jit(init), hot(insert), evict_one, jit(query), jit(grow), bulk_evict,
                    jit(removable), jit(oldest))


from ._mta_aggregator import MTAAggregator as Aggregator  # noqa: E402  (winagg.make uses it)
