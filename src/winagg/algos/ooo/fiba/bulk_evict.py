"""FiBA's bulk evict (paper 004, section 4): every entry up to a time in amortized O(log m)."""

from __future__ import annotations

from .layout import (
    CHILD, INTS, IS_LEAF, KEYS, LEFT_FINGER, LEVELS, NIL, N_ENTRIES, ON_LEFT_SPINE, ON_RIGHT_SPINE, PARENT,
    RIGHT_FINGER, ROOT, SCRATCH, TreeBuild)


def make_cuts(build: TreeBuild, made):
    """The structural steps of a bulk evict on one level: evict inside a node, refill it from
    its neighbour or merge it into the neighbour, and make the cut's last node the root."""
    RECORD, SLOTS, apart, at, flat, scalar = build.record, build.slots, build.apart, build.at, build.flat, build.scalar
    copy_entry, detach_last, free_node = made.copy_entry, made.detach_last, made.free_node
    free_tree, mark_left_chain, set_child, shift_left = made.free_tree, made.mark_left_chain, made.set_child, made.shift_left

    def local_evict(bufs, x, t):
        keys, ints = bufs[KEYS], bufs[INTS]
        n = ints[at(x * RECORD + N_ENTRIES)]
        i = 0
        while i < n and keys[at(x * SLOTS + i)] <= t:
            i += 1
        if i > 0:
            if ints[at(x * RECORD + IS_LEAF)] == 0:
                for c in range(i):
                    scalar(c)
                    free_tree(bufs, ints[at(x * RECORD + CHILD + c)])
            shift_left(bufs, x, i)

    local_evict = flat(local_evict)

    def separator(bufs, ancestor, neighbor):
        # the entry of ancestor between the subtree left of neighbor and neighbor's
        keys = bufs[KEYS]
        first = keys[at(neighbor * SLOTS)]
        separator_at = bufs[INTS][at(ancestor * RECORD + N_ENTRIES)] - 1
        while keys[at(ancestor * SLOTS + separator_at)] >= first:
            separator_at -= 1
        return separator_at

    separator = flat(separator)

    def move_batch(bufs, x, neighbor, ancestor, k):
        """x takes the separator and neighbor's first k-1 entries (k children); its k-th entry goes up."""
        ints = bufs[INTS]
        separator_at = separator(bufs, ancestor, neighbor)
        n_x = ints[at(x * RECORD + N_ENTRIES)]
        copy_entry(bufs, x * SLOTS + n_x, ancestor * SLOTS + separator_at)
        for j in range(k - 1):
            scalar(j)
            copy_entry(bufs, x * SLOTS + n_x + 1 + j, neighbor * SLOTS + j)
        if ints[at(x * RECORD + IS_LEAF)] == 0:
            for j in range(k):
                scalar(j)
                set_child(bufs, x, n_x + 1 + j, ints[at(neighbor * RECORD + CHILD + j)])
        ints[at(x * RECORD + N_ENTRIES)] = n_x + k
        copy_entry(bufs, ancestor * SLOTS + separator_at, neighbor * SLOTS + k - 1)
        shift_left(bufs, neighbor, k)

    move_batch = apart(move_batch)

    def merge_into_neighbor(bufs, x, neighbor, ancestor):
        """neighbor absorbs x and the separator; ancestor drops everything left of neighbor (all evicted)."""
        ints = bufs[INTS]
        separator_at = separator(bufs, ancestor, neighbor)
        n_x = ints[at(x * RECORD + N_ENTRIES)]
        n_neighbor = ints[at(neighbor * RECORD + N_ENTRIES)]
        s = n_x + 1
        for j in range(n_neighbor - 1, -1, -1):
            scalar(j)
            copy_entry(bufs, neighbor * SLOTS + j + s, neighbor * SLOTS + j)
        if ints[at(neighbor * RECORD + IS_LEAF)] == 0:
            for j in range(n_neighbor, -1, -1):
                scalar(j)
                ints[at(neighbor * RECORD + CHILD + j + s)] = ints[at(neighbor * RECORD + CHILD + j)]
            for j in range(n_x + 1):
                scalar(j)
                set_child(bufs, neighbor, j, ints[at(x * RECORD + CHILD + j)])
        for j in range(n_x):
            scalar(j)
            copy_entry(bufs, neighbor * SLOTS + j, x * SLOTS + j)
        copy_entry(bufs, neighbor * SLOTS + n_x, ancestor * SLOTS + separator_at)
        ints[at(neighbor * RECORD + N_ENTRIES)] = n_neighbor + s
        p = ints[at(x * RECORD + PARENT)]
        if p != ancestor:
            detach_last(bufs, p)  # p and the chain above it up to ancestor are garbage
        free_node(bufs, x)
        for c in range(separator_at + 1):
            scalar(c)
            if ints[at(ancestor * RECORD + CHILD + c)] != x:
                free_tree(bufs, ints[at(ancestor * RECORD + CHILD + c)])
        shift_left(bufs, ancestor, separator_at + 1)

    merge_into_neighbor = apart(merge_into_neighbor)

    def make_root(bufs, x, first):
        """The cut reached the right spine: x (or its only child) becomes the root."""
        ints = bufs[INTS]
        root = ints[ROOT]
        new_root = (ints[at(x * RECORD + CHILD)]
                    if (ints[at(x * RECORD + IS_LEAF)] == 0 and ints[at(x * RECORD + N_ENTRIES)] == 0) else x)
        if x != root:
            detach_last(bufs, ints[at(x * RECORD + PARENT)])
            free_tree(bufs, root)
        if new_root != x:
            free_node(bufs, x)
        ints[ROOT] = new_root
        ints[at(new_root * RECORD + PARENT)] = NIL
        ints[at(new_root * RECORD + ON_LEFT_SPINE)] = 0
        ints[at(new_root * RECORD + ON_RIGHT_SPINE)] = 0
        if first:
            mark_left_chain(bufs, new_root)
        if ints[at(new_root * RECORD + IS_LEAF)] != 0:
            ints[LEFT_FINGER] = new_root
            ints[RIGHT_FINGER] = new_root

    make_root = apart(make_root)
    return dict(local_evict=local_evict, move_batch=move_batch, merge_into_neighbor=merge_into_neighbor,
                make_root=make_root)


def make_bulk_evict(build: TreeBuild, made):
    """``bulk_evict_native`` (cut along the boundary path, one repair) and ``bulk_evict_loop``
    (single evicts, nb_fiba)."""
    FINGER, MAX_ENTRIES, MIN_ENTRIES = build.finger, build.max_entries, build.min_entries
    RECORD, SLOTS, apart, at, flat = build.record, build.slots, build.apart, build.at, build.flat
    prefetch_node = made.prefetch_node
    collapse_root, evict, local_evict, make_root = made.collapse_root, made.evict, made.local_evict, made.make_root
    mark_left_chain, merge_into_neighbor, move_batch = made.mark_left_chain, made.merge_into_neighbor, made.move_batch
    oldest, rebalance_after_evict, recompute_if_up = made.oldest, made.rebalance_after_evict, made.recompute_if_up
    repair, search_boundary, state_of = made.repair, made.search_boundary, made.state_of

    def prefetch_next_cut(bufs):
        """Ask for the nodes a next cut as long as this one will read: the leaves after the new
        left finger (its parent's other children), and the parent's right sibling with its
        children. In a large window nothing has touched them since they filled; read cold, one
        after another down the boundary path and in the repair, they were the slowest part of a
        cut of a few dozen entries."""
        ints = bufs[INTS]
        p = ints[at(ints[LEFT_FINGER] * RECORD + PARENT)]
        if p == NIL:
            return
        for i in range(1, ints[at(p * RECORD + N_ENTRIES)] + 1):
            prefetch_node(bufs, ints[at(p * RECORD + CHILD + i)])
        g = ints[at(p * RECORD + PARENT)]
        if g == NIL or ints[at(g * RECORD + N_ENTRIES)] == 0:
            return
        q = ints[at(g * RECORD + CHILD + 1)]  # p is g's first child: both are on the left spine
        for i in range(ints[at(q * RECORD + N_ENTRIES)] + 1):
            prefetch_node(bufs, ints[at(q * RECORD + CHILD + i)])

    prefetch_next_cut = flat(prefetch_next_cut)

    def bulk_evict_native(bufs, st, t):
        keys, ints = bufs[KEYS], bufs[INTS]
        if st[2] == 0:
            return st
        left_finger = ints[LEFT_FINGER]
        if keys[at(left_finger * SLOTS)] > t:  # nothing to evict
            return st
        if ints[at(left_finger * RECORD + N_ENTRIES)] >= 2 and keys[at(left_finger * SLOTS + 1)] > t:
            # only the oldest goes: the single eviction
            return evict(bufs, st)
        depth = search_boundary(bufs, t)
        skip = NIL
        top = NIL
        hit_left = 0
        hit_right = 0
        made_root = False
        for level in range(depth, -1, -1):
            x = ints[at(SCRATCH + level)]
            neighbor = ints[at(SCRATCH + LEVELS + level)]
            ancestor = ints[at(SCRATCH + 2 * LEVELS + level)]
            first = level == depth
            if neighbor != NIL and not first:
                recompute_if_up(bufs, neighbor)  # one of its children changed a level down
            if skip == NIL or skip == x:
                skip = NIL
                local_evict(bufs, x, t)
                if neighbor == NIL:
                    make_root(bufs, x, first)
                    made_root = True
                    break
                if ints[at(x * RECORD + N_ENTRIES)] >= MIN_ENTRIES:
                    top = x
                else:
                    deficit = MIN_ENTRIES - ints[at(x * RECORD + N_ENTRIES)]
                    surplus = ints[at(neighbor * RECORD + N_ENTRIES)] - MIN_ENTRIES
                    hit_right |= ints[at(neighbor * RECORD + ON_RIGHT_SPINE)]
                    if deficit <= surplus:
                        move_batch(bufs, x, neighbor, ancestor, deficit)
                        recompute_if_up(bufs, neighbor)
                    else:
                        merge_into_neighbor(bufs, x, neighbor, ancestor)
                        skip = ancestor
                    top = ancestor
            survivor = x if skip == NIL else neighbor
            ints[at(survivor * RECORD + ON_LEFT_SPINE)] = 1
            if first:
                mark_left_chain(bufs, survivor)
            recompute_if_up(bufs, survivor)  # classic only: finger survivors are left-spine nodes
        if made_root:
            collapse_root(bufs)
            top = ints[ROOT]
            hit_left = 1
            hit_right = 1
        elif top == ints[ROOT]:
            collapse_root(bufs)
            top = ints[ROOT]
            hit_left = 1
            hit_right = 1
        elif ints[at(top * RECORD + N_ENTRIES)] >= MIN_ENTRIES:
            hit_left |= ints[at(top * RECORD + ON_LEFT_SPINE)]
            hit_right |= ints[at(top * RECORD + ON_RIGHT_SPINE)]
        else:
            top, more_left, more_right = rebalance_after_evict(bufs, top)
            hit_left |= more_left
            hit_right |= more_right
        repair(bufs, top, hit_left, hit_right)
        after = state_of(bufs)
        if FINGER and st[2] - after[2] > 4 * MAX_ENTRIES:
            prefetch_next_cut(bufs)
        return after

    bulk_evict_native = apart(bulk_evict_native)

    def bulk_evict_loop(bufs, st, t):
        while st[2] > 0 and oldest(bufs) <= t:
            st = evict(bufs, st)
        return st

    bulk_evict_loop = apart(bulk_evict_loop)

    return dict(bulk_evict_native=bulk_evict_native, bulk_evict_loop=bulk_evict_loop)
