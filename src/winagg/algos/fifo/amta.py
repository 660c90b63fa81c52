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

Blocks and events. ``R0`` is not kept in the state: the stack holds, apart
from the levels' entries, one entry per item of the oldest block (the oldest
tree from that item on) at ``SUFFIX + (p & (block - 1))``, and the oldest
item's entry is ``R0``, so a single eviction only advances ``first`` and the
query reads ``R0`` there. In memory the structure works a block of items at
a time (up to ``2**min(log_block, h - 1)`` with ``h`` levels) and keeps no level
below the block's (see ``build``); in a store a block is a pair, which is the
plain algorithm. Either way an insert or eviction has more to do only when
``end`` or ``first`` reaches a position kept in ``meta`` (``INSERT_AT``,
``EVICT_AT``): the per-item step is a store, a combine and a comparison, and
the rest runs in functions kept out of the compiled loop.

State: bufs ``(vals, meta)`` (the stack is in ``vals`` at ``meta[STACK]``);
st ``(mask, first, end, h, sp, R1)`` with ``h`` levels and ``sp`` stack entries
besides the block's.
"""

from types import SimpleNamespace

from ...core.ops import helper_for
from .mta_tree import (EVICT_AT, FOLD, HI, INSERT_AT, LO, MASK, MAX_LOG_BLOCK, SUFFIX, TREE_END, build_tree, capacity_of,
                       StoredLayout, hot_path_jit, in_order_capacity_of, in_order_size_for, ring_size_for)
from .lmta import MTAFuncs

#: A stored window's view of this tree: aligned levels; state (mask, first, end, h, sp, R1).
STORED = StoredLayout(aligned=True, state_ints=5, state_partials=1)

INFO = dict(order="fifo", needs_inverse=False,
            time="insert and evict O(1) amortized (O(log n) worst case), query O(1), "
                 "bulk evict of any size O(log n)",
            space="about 2n partials (n items plus n internal nodes)", paper="001",
            options={})

#: Blocks of 2**LOG_BLOCK items in memory (see build). 7 measured best of 3..9 at window 4096
#: (`winagg bench amta_pairs`): smaller blocks pay the event calls more often, larger ones gain nothing.
LOG_BLOCK = 7


def build(ops, virtual: bool = False, log_block: int = LOG_BLOCK):
    """AMTA specialised to ``ops``; ``virtual`` lays the levels out for a key-value store.

    Blocks (in memory): with ``h`` levels, the block's level ``b`` is at most
    ``min(log_block, h - 1)`` (``block_level_for`` says when it changes) and the
    levels below it are not kept. A block's node (level ``b``)
    is folded from its ``2**b`` items when it is due (Algorithm 3's carry goes
    on from there), and the other operations fold a lower element from its
    items when they read one (at most ``2**(b - 1)`` items). An eviction that
    reaches a new block runs Algorithm 7's refill down to level ``b``, then
    writes the oldest tree's aggregate from each of the block's items on, one
    combine per item. Same forest, same stack, same bounds (a block is at most a
    constant), and the structural work runs in tight loops once per block
    instead of every other item. When ``h`` changes, so may ``b``: R and the
    stack are rebuilt, and a smaller block builds the levels it keeps again
    over the (then small) window. ``log_block`` 1 is the plain algorithm; the
    store-backed (virtual) tree always uses it.
    """
    if not 1 <= log_block <= MAX_LOG_BLOCK:
        raise ValueError(f"log_block must be in 1..{MAX_LOG_BLOCK}, got {log_block}")
    if virtual:
        log_block = 1
    tree = build_tree(ops, virtual, in_order=True, suffix=1 << log_block)
    size_for, capacity_for = (ring_size_for, capacity_of) if virtual else (in_order_size_for, in_order_capacity_of)
    size_for, capacity_for = helper_for(ops, size_for), helper_for(ops, capacity_for)
    parts = _build_structure(ops, tree, log_block, size_for, capacity_for)
    insert_event, evict_event = _build_events(ops, tree, parts, log_block)
    return _build_per_item(ops, tree, parts, insert_event, evict_event, log_block, capacity_for)


def _build_structure(ops, tree, log_block, size_for, capacity_for):
    """The forest's structural steps (blocks, ranges, R0/R1 and the stack rebuilt from the levels),
    run on the rare events; returns them in a namespace."""
    combine, identity, jit = ops.combine, ops.identity, ops.jit
    block_mask = (1 << log_block) - 1
    get, put, pair_agg, put_stack, locate = tree.get, tree.put, tree.pair_agg, tree.put_stack, tree.locate
    item_slot, node_slot, stack_slot = tree.item_slot, tree.node_slot, tree.stack_slot
    load_at, store_at = tree.load_at, tree.store_at

    def block_level_for(b, h):
        # The block's level (meta[FOLD]) for a tree of h levels whose block level is b: below
        # the top (b <= h - 1), up to log_block. It grows once the tree is three levels above
        # it and shrinks only when it must, so a window whose height swings between two
        # values keeps its block level (each change rebuilds R, and a smaller one rebuilds
        # the levels it keeps again).
        if b > h - 1:
            return max(h - 1, 1)
        if h - b >= 3 and b < log_block:
            return min(log_block, h - 2)
        return b

    block_level_for = jit(block_level_for)

    def schedule(meta, first, end, h, tree_end):
        # The next events: an eviction reaching the end of the oldest tree or a new block of
        # it, and the insert that makes a block's node due (see insert_event).
        lb = meta[FOLD]
        meta[TREE_END] = tree_end
        meta[EVICT_AT] = min(((first >> lb) + 1) << lb, tree_end)
        meta[INSERT_AT] = (((end + 1) >> lb) + 1 << lb) - 1

    schedule = jit(schedule)

    def empty(vals, meta, mask, end):
        meta[TREE_END] = end
        meta[EVICT_AT] = end + 1
        meta[INSERT_AT] = end + 1  # the first item is an event
        meta[FOLD] = 1  # blocks of a pair
        put_stack(vals, meta, SUFFIX + (end & block_mask), identity)  # R0
        return (mask, end, end, 1, 0, identity)

    empty = jit(empty)

    def init(capacity):
        size = size_for(capacity)
        vals, meta = tree.new_tree(size)
        return (vals, meta), empty(vals, meta, capacity_for(size) - 1, 0)

    # With aligned levels, a level's index range follows from the items' (first, end): level
    # l < h holds indices first >> l .. ((end + 1) >> l) - 2 (its head covers the oldest item;
    # element m exists once element 2m + 2 below does). The per-item operations never write
    # the ranges; the others, which read them from `meta` (shared with lmta), write them first.
    def write_ranges(meta, first, end, h):
        for level in range(h):
            meta[LO + level] = first >> level
            meta[HI + level] = ((end + 1) >> level) - 1

    write_ranges = jit(write_ranges)

    def build_nodes(vals, where, start, stop, top):
        # every node of levels 1 .. top over items start .. stop - 1, inside one aligned run
        # (start a multiple of 2**(top + 1), stop of 2, at most 2**(top + 1) items); a level-l
        # node is 2**l from the next one and 2**(l - 2) from its children. Offsets from the
        # run's first slots (Tree.item_slot).
        items = item_slot(where, start)
        nodes = node_slot(where, start)
        count = stop - start
        for k in range(0, count, 2):
            store_at(vals, nodes + k, combine(load_at(vals, items + k), load_at(vals, items + k + 1)))
        half = 1
        level = 2
        while level <= top:
            for k in range(2 * half - 1, count - 2 * half, 4 * half):
                store_at(vals, nodes + k, combine(load_at(vals, nodes + k - half), load_at(vals, nodes + k + half)))
            half *= 2
            level += 1

    build_nodes = jit(build_nodes)

    def keep_lower_levels(vals, meta, mask, first, end, top):
        # Smaller blocks (the tree fell to as few levels as the block's level, so the window
        # holds at most 2**(top + 1) items): the carry reads levels up to top again, so build them
        # over the items, a run of 2**(top + 1) at a time, from the start of the oldest one's
        # run. The evicted items of that run read as the identity (their slots are free: the
        # window and one block fit in half the ring), so the head elements come out repaired.
        where = locate(meta, mask)
        run = 2 << top
        start = (first >> (top + 1)) << (top + 1)
        evicted = item_slot(where, start)
        for k in range(first - start):
            store_at(vals, evicted + k, identity)
        stop = end - (end & 1)
        while start < stop:
            build_nodes(vals, where, start, min(start + run, stop), top)
            start += run

    keep_lower_levels = ops.jit_loop(keep_lower_levels)  # rare (the block shrinks): a call

    def fill_suffixes(vals, where, first, stop, acc):
        # level 0's stack entries: for each item p of first + 1 .. stop - 1 (one block), the
        # oldest tree from p on, which ends with acc; returns the one from first + 1 on
        items = item_slot(where, first)
        entries = stack_slot(where, SUFFIX + (first & block_mask))
        for k in range(stop - 1 - first, 0, -1):
            acc = combine(load_at(vals, items + k), acc)
            store_at(vals, entries + k, acc)
        return acc

    fill_suffixes = jit(fill_suffixes)

    def left_result(vals, meta, mask, h):
        # Algorithm 4: the stack, top level down, of the oldest tree without each full
        # head pair's left element; reads only right elements of full head pairs and
        # the oldest item, which are never stale. The oldest tree ends where the highest full
        # head pair does. The levels below the block's (level 0 without blocks) become
        # entries per item of the oldest item's block, R0 the entry of the oldest item.
        # Returns (stack size, tree end).
        first = meta[LO]
        lb = meta[FOLD]
        sp = 0
        acc = identity
        tree_end = -1
        for level in range(h - 1, -1, -1):
            lo = meta[LO + level]
            if (lo & 1) == 0 and lo + 1 < meta[HI + level]:
                if tree_end < 0:
                    tree_end = (lo + 2) << level
                if level >= lb:
                    acc = combine(get(vals, meta, level, lo + 1), acc)
                    put_stack(vals, meta, sp, acc)
                    sp += 1
        if tree_end < 0:
            tree_end = first + 1
        stop = ((first >> lb) + 1) << lb
        if stop >= tree_end:
            stop = tree_end
            acc = identity
        acc = fill_suffixes(vals, locate(meta, mask), first, stop, acc)
        put_stack(vals, meta, SUFFIX + (first & block_mask), combine(get(vals, meta, 0, first), acc))
        return sp, tree_end

    left_result = ops.jit_loop(left_result)

    def right_result(vals, meta, h):
        # Algorithm 5 (fixed): the younger trees are the tail pairs below the top level.
        acc = identity
        for level in range(h - 1):
            hi = meta[HI + level]
            acc = combine(pair_agg(vals, meta, level, (hi - 1) >> 1), acc)
        return acc

    right_result = ops.jit_loop(right_result)

    def rebuild(vals, meta, mask, first, end, h):
        # R0, R1 and the stack from the levels, which are up to date (every operation that
        # changes the block's level ends here, so the levels kept are set here too)
        lb = block_level_for(meta[FOLD], h)
        if lb < meta[FOLD]:
            keep_lower_levels(vals, meta, mask, first, end, meta[FOLD] - 1)
        meta[FOLD] = lb
        write_ranges(meta, first, end, h)
        sp, tree_end = left_result(vals, meta, mask, h)
        schedule(meta, first, end, h, tree_end)
        return (mask, first, end, h, sp, right_result(vals, meta, h))

    # bulk_evict's is out of line in every compiled case; the events' is compiled into them
    # (they are out of line themselves), which saves a call where rebuilds are frequent
    # (small windows: the oldest tree empties every few items)
    rebuild_apart = ops.jit_loop(rebuild)
    rebuild = ops.jit_flat(rebuild)

    def new_top(vals, meta, mask, first, end, h, sp, r1):
        # a second pair on the top level h - 1: the oldest tree gets a parent level (same
        # items), aligned: its element is the left one when the old root pair is even (base 0)
        write_ranges(meta, first, end, h)
        root_pair = first >> h
        meta[LO + h] = root_pair
        meta[HI + h] = root_pair + 1
        put(vals, meta, h, root_pair, pair_agg(vals, meta, h - 1, root_pair))
        if block_level_for(meta[FOLD], h + 1) != meta[FOLD]:  # larger blocks: level 0's entries change
            return rebuild(vals, meta, mask, first, end, h + 1)
        schedule(meta, first, end, h + 1, meta[TREE_END])
        return (mask, first, end, h + 1, sp, r1)

    new_top = ops.jit_flat(new_top)  # compiled into insert_event, as rebuild

    return SimpleNamespace(block_level_for=block_level_for, schedule=schedule, empty=empty, init=init,
                           write_ranges=write_ranges, fill_suffixes=fill_suffixes, rebuild=rebuild,
                           rebuild_apart=rebuild_apart, new_top=new_top)


def _build_events(ops, tree, parts, log_block):
    """``(insert_event, evict_event)``: what an insert or an eviction does when it reaches the
    next scheduled event (a block's node falls due; the oldest tree or block runs out)."""
    combine, identity = ops.combine, ops.identity
    block_mask = (1 << log_block) - 1
    locate, get_node, put_node = tree.locate, tree.get_node, tree.put_node
    get_stack_at, put_stack_at = tree.get_stack_at, tree.put_stack_at
    item_slot, node_slot, store_at, fold_run = tree.item_slot, tree.node_slot, tree.store_at, tree.fold_run
    schedule, empty, rebuild, new_top = parts.schedule, parts.empty, parts.rebuild, parts.new_top
    fill_suffixes = parts.fill_suffixes

    def insert_event(vals, meta, mask, first, end, h, sp, r1):
        # Item end - 1 is in and end + 1 is a multiple of the block (of 2 without blocks):
        # the node of the block two back is due (element m of a level exists once element
        # 2m + 2 below does), folded from its items (a level-1 pair's parent without
        # blocks). Then the carry goes on as in Algorithm 3: on each level where the new
        # element starts a pair, the previous pair's parent is due (a tail pair is a tree
        # root, without a parent, until a newer pair follows it). A level-l node u (l >= 1)
        # is element ((u + 1) >> l) of its level, 2**(l - 1) from its children.
        where = locate(meta, mask)
        if end - first == 1:  # the first item: one tree of one item (R1 took it: it is R0)
            schedule(meta, first, end, 1, end)
            put_stack_at(vals, where, SUFFIX + (first & block_mask), r1)
            return (mask, first, end, 1, 0, identity)
        lb = meta[FOLD]
        if h == 1:
            top_pair = (end - 1) >> 1
        else:
            start = end + 1 - (2 << lb)
            if start < 0:  # no block two back yet
                schedule(meta, first, end, h, meta[TREE_END])
                return (mask, first, end, h, sp, r1)
            half_width = 1 << (lb - 1)
            node = start + half_width - 1
            store_at(vals, node_slot(where, node), fold_run(vals, item_slot(where, start), 1 << lb))
            top_width = 1 << (h - 2)  # half_width on the top level
            while half_width < top_width:
                if (node + 1) & (2 * half_width):  # fills the tail pair of this level: no parent yet
                    schedule(meta, first, end, h, meta[TREE_END])
                    return (mask, first, end, h, sp, r1)
                node -= 3 * half_width  # the parent of the previous pair, one level up
                put_node(vals, where, node, combine(get_node(vals, where, node - half_width),
                                                    get_node(vals, where, node + half_width)))
                half_width *= 2
            top_pair = (node + 1) >> h
        if top_pair != first >> h:
            return new_top(vals, meta, mask, first, end, h, sp, r1)
        # the new element completed the top pair: a younger tree merged into the oldest
        return rebuild(vals, meta, mask, first, end, h)

    insert_event = ops.jit_rare(insert_event)

    def evict_event(vals, meta, mask, first, end, h, sp, r1):
        # An eviction reached the end of the oldest tree, or the start of a block (a pair
        # without blocks) inside it: the next R0 is on top of the stack (Algorithm 6), the
        # levels' entries down to the block's level are refilled (Algorithm 7), then level
        # 0's for the block.
        if first == end:
            return empty(vals, meta, mask, end)
        where = locate(meta, mask)
        tree_end = meta[TREE_END]
        width = first & -first  # 2**level, level the number of trailing zero bits of first
        top_width = 1 << (h - 1)
        if width >= top_width:
            if (first >> (h - 1)) == ((end + 1) >> (h - 1)) - 1:
                # the top pair is empty: the oldest tree is gone and the tail pair of the level
                # below, alone on it now, is the oldest tree (rebuild R0 and R1: digest fix)
                return rebuild(vals, meta, mask, first, end, h - 1)
            width = top_width
        if first >= tree_end:  # the oldest tree is gone below the top: rebuild too
            return rebuild(vals, meta, mask, first, end, h)
        if sp > 0:  # R0, in the oldest item's entry
            sp -= 1
            put_stack_at(vals, where, SUFFIX + (first & block_mask), get_stack_at(vals, where, sp))
        else:
            put_stack_at(vals, where, SUFFIX + (first & block_mask), identity)
        lb = meta[FOLD]
        # The right element of level b's head pair covers items first + 2**b ..
        # first + 2**(b + 1) - 1 (first is a multiple of 2**level), so its node number is
        # first - 1 + 3 * 2**(b - 1), and it exists when first + 3 * 2**b <= end + 1.
        acc = get_stack_at(vals, where, sp - 1) if sp > 0 else identity
        offset = (3 * width) >> 1
        lowest = 3 << (lb - 1)  # offset before the step to level lb
        while offset > lowest and first + offset > end + 1:  # near the tail: not there yet
            offset >>= 1
        while offset > lowest:  # levels level - 1 .. lb
            offset >>= 1
            acc = combine(get_node(vals, where, first - 1 + offset), acc)
            put_stack_at(vals, where, sp, acc)
            sp += 1
        stop = first + (1 << lb)
        if stop >= tree_end:
            stop = tree_end
            acc = identity
        fill_suffixes(vals, where, first, stop, acc)
        meta[EVICT_AT] = stop
        return (mask, first, end, h, sp, r1)

    evict_event = ops.jit_rare(evict_event)

    return insert_event, evict_event


def _build_per_item(ops, tree, parts, insert_event, evict_event, log_block, capacity_for):
    """The operations: the common step of each inline, the events out of line."""
    combine, jit = ops.combine, ops.jit
    block = 1 << log_block
    block_mask = block - 1
    get, repair_left, locate, put_item = tree.get, tree.repair_left, tree.locate, tree.put_item
    get_stack, put_stack, get_stack_at = tree.get_stack, tree.put_stack, tree.get_stack_at
    empty, write_ranges, rebuild_apart, init = parts.empty, parts.write_ranges, parts.rebuild_apart, parts.init
    hot = hot_path_jit(ops)

    def insert(bufs, st, value):
        vals, meta = bufs
        mask, first, end, h, sp, r1 = st
        put_item(vals, locate(meta, mask), end, value)
        r1 = combine(r1, value)
        end += 1
        if end != meta[INSERT_AT]:  # the common case
            return (mask, first, end, h, sp, r1)
        return insert_event(vals, meta, mask, first, end, h, sp, r1)

    def evict(bufs, st):
        vals, meta = bufs
        mask, first, end, h, sp, r1 = st
        first += 1
        if first != meta[EVICT_AT]:  # the common case: R0 is in the new oldest item's entry
            return (mask, first, end, h, sp, r1)
        return evict_event(vals, meta, mask, first, end, h, sp, r1)

    evict_one = hot(evict)

    def bulk_evict(bufs, st, count):
        vals, meta = bufs
        mask, first, end, h, sp, r1 = st
        if count <= 0:
            return st
        if count >= end - first:
            return empty(vals, meta, mask, end)
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
        return rebuild_apart(vals, meta, mask, first, end, h)

    bulk_evict = hot(bulk_evict)

    def query(bufs, st):
        vals, meta = bufs
        mask, first, _, _, _, r1 = st
        return combine(get_stack_at(vals, locate(meta, mask), SUFFIX + (first & block_mask)), r1)

    def grow(bufs, st):
        mask, first, end, h, sp, r1 = st
        old_vals, old_meta = bufs
        write_ranges(old_meta, first, end, h)
        vals, meta = tree.regrow(old_vals, old_meta, h, sp)
        for i in range(block):  # level 0's stack entries (R0 among them)
            put_stack(vals, meta, SUFFIX + i, get_stack(old_vals, old_meta, SUFFIX + i))
        return (vals, meta), (capacity_for(meta[MASK] + 1) - 1, first, end, h, sp, r1)

    def removable(bufs, st, total, removed, wsp):
        vals, meta = bufs
        _, first, end, h, _, _ = st
        write_ranges(meta, first, end, h)
        repair_left(vals, meta, h)  # the search reads the leftmost branch
        return tree.removable(vals, meta, h, True, total, removed, wsp)

    def oldest_partial(bufs, st):
        _, first, _, _, _, _ = st
        return get(bufs[0], bufs[1], 0, first)

    def single_evictions(st):
        # single evictions are amortized O(1): a policy tries about log n of them (the tree's
        # height) before the O(log n) search and bulk eviction take over
        _, _, _, h, _, _ = st
        return h

    return MTAFuncs(jit(init), hot(insert), evict_one, jit(query), jit(grow), bulk_evict,
                    jit(removable), jit(oldest_partial), single_evictions)
