"""The FiBA node pool and the moves of entries and children between nodes."""

from __future__ import annotations

from .layout import (
    CACHE_LINE, CAPACITY, CHILD, COVERED, FREE_COUNT, INTS, IS_LEAF, KEYS, LEFT_FINGER, NEXT_FRESH, NIL, N_ENTRIES,
    ON_LEFT_SPINE, ON_RIGHT_SPINE, PARENT, PARTS, RECORDS, RIGHT_FINGER, ROOT, TreeBuild)


def make_nodes(build: TreeBuild, made):
    """The node pool (allocation, deferred freeing) and the moves of entries and children inside
    and between nodes, the new root of a split and the collapse of a root with one child."""
    RECORD, SLOTS, alloc, alloc_ints = build.record, build.slots, build.alloc, build.alloc_ints
    alloc_times, apart, at, flat, load = build.alloc_times, build.apart, build.at, build.flat, build.load
    nrt, prefetch, scalar, store = build.nrt, build.prefetch, build.scalar, build.store
    LINE_KEYS, LINE_PARTS = CACHE_LINE // 8, build.line_parts  # slots of a cache line

    # the pool
    def new_bufs(cap):
        ints = alloc_ints(RECORDS + cap * (RECORD + 1))
        ints[CAPACITY] = cap
        return alloc_times(cap * SLOTS), alloc(cap * SLOTS), ints

    new_bufs = nrt(new_bufs)

    def prefetch_span(buf, first, count, per_line):
        """Ask for every cache line of slots first .. first + count - 1 of buf, ``per_line`` slots
        a line; the last slot is named too, for a span that starts inside a line."""
        for j in range(0, count, per_line):
            prefetch(buf, at(first + j))
        prefetch(buf, at(first + count - 1))

    prefetch_span = flat(prefetch_span)

    def prefetch_node(bufs, x):
        """Ask for every cache line of node x: its keys, partials (its aggregate too) and record."""
        prefetch_span(bufs[KEYS], x * SLOTS, SLOTS, LINE_KEYS)
        prefetch_span(bufs[PARTS], x * SLOTS, SLOTS, LINE_PARTS)
        prefetch_span(bufs[INTS], x * RECORD + N_ENTRIES, RECORD, LINE_KEYS)

    prefetch_node = flat(prefetch_node)

    def alloc_node(bufs, is_leaf):
        ints = bufs[INTS]
        free_count = ints[FREE_COUNT]
        if free_count > 0:
            free_list = RECORDS + ints[CAPACITY] * RECORD
            x = ints[at(free_list + free_count - 1)]
            free_count -= 1
            if ints[at(x * RECORD + IS_LEAF)] == 0:  # deferred freeing: the children go on the list now
                for i in range(ints[at(x * RECORD + N_ENTRIES)] + 1):
                    scalar(i)
                    ints[at(free_list + free_count)] = ints[at(x * RECORD + CHILD + i)]
                    free_count += 1
            ints[FREE_COUNT] = free_count
            if free_count > 0:
                # The next allocation takes the node now on top. A bulk evict freed it without
                # reading it, long after it was last written: asked for now, it arrives by then.
                prefetch_node(bufs, ints[at(free_list + free_count - 1)])
        else:
            x = ints[NEXT_FRESH]
            ints[NEXT_FRESH] = x + 1
        r = x * RECORD
        ints[at(r + N_ENTRIES)] = 0
        ints[at(r + PARENT)] = NIL
        ints[at(r + IS_LEAF)] = is_leaf
        ints[at(r + ON_LEFT_SPINE)] = 0
        ints[at(r + ON_RIGHT_SPINE)] = 0
        ints[at(r + COVERED)] = 0
        return x

    alloc_node = flat(alloc_node)

    def free_tree(bufs, x):
        # O(1): the subtree's nodes are reclaimed one by one as allocations pop them
        ints = bufs[INTS]
        ints[at(RECORDS + ints[CAPACITY] * RECORD + ints[FREE_COUNT])] = x
        ints[FREE_COUNT] += 1

    free_tree = flat(free_tree)

    def free_node(bufs, x):
        # a node whose children live on elsewhere: free it alone
        ints = bufs[INTS]
        ints[at(x * RECORD + IS_LEAF)] = 1
        ints[at(x * RECORD + N_ENTRIES)] = 0
        free_tree(bufs, x)

    free_node = flat(free_node)

    def detach_last(bufs, p):
        # drop p's last child pointer; p is garbage about to be freed with its subtree
        ints = bufs[INTS]
        if ints[at(p * RECORD + N_ENTRIES)] == 0:
            ints[at(p * RECORD + IS_LEAF)] = 1
        else:
            ints[at(p * RECORD + N_ENTRIES)] -= 1

    detach_last = flat(detach_last)

    # moves of entries and children
    def child_index(bufs, p, x):
        ints = bufs[INTS]
        i = 0
        while ints[at(p * RECORD + CHILD + i)] != x:
            i += 1
        return i

    child_index = flat(child_index)

    def set_child(bufs, p, i, c):
        ints = bufs[INTS]
        ints[at(p * RECORD + CHILD + i)] = c
        ints[at(c * RECORD + PARENT)] = p

    set_child = flat(set_child)

    def copy_entry(bufs, dst, src):
        bufs[KEYS][at(dst)] = bufs[KEYS][at(src)]
        store(bufs[PARTS], at(dst), load(bufs[PARTS], at(src)))

    copy_entry = flat(copy_entry)

    def insert_entry(bufs, x, i, t, v, right_child):
        """Put (t, v) at index i of x, with ``right_child`` right of it when x is internal."""
        ints = bufs[INTS]
        n = ints[at(x * RECORD + N_ENTRIES)]
        for j in range(n, i, -1):
            scalar(j)
            copy_entry(bufs, x * SLOTS + j, x * SLOTS + j - 1)
        bufs[KEYS][at(x * SLOTS + i)] = t
        store(bufs[PARTS], at(x * SLOTS + i), v)
        if ints[at(x * RECORD + IS_LEAF)] == 0:
            for j in range(n + 1, i + 1, -1):
                scalar(j)
                ints[at(x * RECORD + CHILD + j)] = ints[at(x * RECORD + CHILD + j - 1)]
            set_child(bufs, x, i + 1, right_child)
        ints[at(x * RECORD + N_ENTRIES)] = n + 1

    insert_entry = flat(insert_entry)

    def shift_left(bufs, x, k):
        """Drop the first k entries (and, if internal, the first k children) of x."""
        ints = bufs[INTS]
        n = ints[at(x * RECORD + N_ENTRIES)]
        for j in range(n - k):
            scalar(j)
            copy_entry(bufs, x * SLOTS + j, x * SLOTS + j + k)
        if ints[at(x * RECORD + IS_LEAF)] == 0:
            for j in range(n - k + 1):
                scalar(j)
                ints[at(x * RECORD + CHILD + j)] = ints[at(x * RECORD + CHILD + j + k)]
        ints[at(x * RECORD + N_ENTRIES)] = n - k

    shift_left = flat(shift_left)

    def mark_left_chain(bufs, x):
        """Flag the first-child chain below x as left spine; its leaf is the left finger."""
        ints = bufs[INTS]
        while ints[at(x * RECORD + IS_LEAF)] == 0:
            x = ints[at(x * RECORD + CHILD)]
            ints[at(x * RECORD + ON_LEFT_SPINE)] = 1
        ints[LEFT_FINGER] = x

    mark_left_chain = flat(mark_left_chain)

    def new_root_above(bufs, x):
        ints = bufs[INTS]
        r = alloc_node(bufs, 0)
        set_child(bufs, r, 0, x)
        ints[ROOT] = r
        ints[at(x * RECORD + ON_LEFT_SPINE)] = 1
        ints[at(x * RECORD + ON_RIGHT_SPINE)] = 1
        return r

    new_root_above = flat(new_root_above)

    def collapse_root(bufs):
        """Lower the height while the root is internal with a single child."""
        ints = bufs[INTS]
        root = ints[ROOT]
        while ints[at(root * RECORD + IS_LEAF)] == 0 and ints[at(root * RECORD + N_ENTRIES)] == 0:
            child = ints[at(root * RECORD + CHILD)]
            free_node(bufs, root)
            root = child
            ints[at(root * RECORD + PARENT)] = NIL
            ints[at(root * RECORD + ON_LEFT_SPINE)] = 0
            ints[at(root * RECORD + ON_RIGHT_SPINE)] = 0
            ints[ROOT] = root
        if ints[at(root * RECORD + IS_LEAF)] != 0:
            ints[LEFT_FINGER] = root
            ints[RIGHT_FINGER] = root

    collapse_root = apart(collapse_root)

    def level_of(bufs, x):
        ints = bufs[INTS]
        level = 0
        while ints[at(x * RECORD + IS_LEAF)] == 0:
            x = ints[at(x * RECORD + CHILD)]
            level += 1
        return level

    level_of = flat(level_of)

    return dict(new_bufs=new_bufs, alloc_node=alloc_node, prefetch_node=prefetch_node, free_tree=free_tree,
                free_node=free_node, detach_last=detach_last, child_index=child_index, set_child=set_child,
                copy_entry=copy_entry, insert_entry=insert_entry, shift_left=shift_left,
                mark_left_chain=mark_left_chain, new_root_above=new_root_above, collapse_root=collapse_root,
                level_of=level_of)
