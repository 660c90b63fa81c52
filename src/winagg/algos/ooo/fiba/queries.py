"""FiBA's queries: the whole window in O(1), a time range, the size and the end times."""

from __future__ import annotations

from .layout import (
    CAPACITY, CHILD, COVERED, INTS, IS_LEAF, KEYS, LEFT_FINGER, LEVELS, MARGIN, N_ENTRIES, PARTS,
    RANGE_STACK, RIGHT_FINGER, ROOT, SCRATCH, UP, TreeBuild)


def make_extent(build: TreeBuild, made):
    """The window's size and state, its oldest and youngest times (no aggregate involved)."""
    FINGER, MIN_ENTRIES, RECORD, SLOTS, at, flat = (build.finger, build.min_entries, build.record, build.slots,
                                                    build.at, build.flat)

    def size_of(bufs):
        ints = bufs[INTS]
        root = ints[ROOT]
        if ints[at(root * RECORD + IS_LEAF)] != 0:
            return ints[at(root * RECORD + N_ENTRIES)]
        if not FINGER:
            return ints[at(root * RECORD + COVERED)]
        return (ints[at(ints[LEFT_FINGER] * RECORD + COVERED)] + ints[at(root * RECORD + COVERED)]
                + ints[at(ints[RIGHT_FINGER] * RECORD + COVERED)])

    size_of = flat(size_of)

    def state_of(bufs):
        # Every non-root node holds at least MIN_ENTRIES entries, so a tree of `size` entries has at most
        # size / MIN_ENTRIES + 1 nodes; a node is taken from the fresh part of the pool only when the
        # free list is empty, i.e. when every node below it is in the tree.
        return ((bufs[INTS][CAPACITY] - MARGIN) * MIN_ENTRIES, 0, size_of(bufs))

    state_of = flat(state_of)

    def youngest(bufs):
        ints = bufs[INTS]
        right_finger = ints[RIGHT_FINGER]
        return bufs[KEYS][at(right_finger * SLOTS + ints[at(right_finger * RECORD + N_ENTRIES)] - 1)]

    youngest = flat(youngest)

    def oldest(bufs):
        return bufs[KEYS][at(bufs[INTS][LEFT_FINGER] * SLOTS)]

    oldest = flat(oldest)

    return dict(size_of=size_of, state_of=state_of, youngest=youngest, oldest=oldest)


def make_queries(build: TreeBuild, made):
    """The whole-window query and the range query."""
    AGG, FINGER, LOCAL, RECORD, SLOTS = build.agg, build.finger, build.local, build.record, build.slots
    at, combine, flat, identity, load = build.at, build.combine, build.flat, build.identity, build.load
    add, kind, start_combined, value_of = made.add, made.kind, made.start_combined, made.value_of

    def query(bufs, st):  # flat: O(1)
        parts, ints = bufs[PARTS], bufs[INTS]
        root = ints[ROOT]
        if not FINGER or ints[at(root * RECORD + IS_LEAF)] != 0:
            return load(parts, at(root * SLOTS + AGG))
        # A row partial's answer goes to the root's overflow slot: an internal root keeps no local
        # aggregate and holds an entry there only inside an insert. Like the FIFO algorithms'
        # in-place queries, the row is overwritten by the next query.
        answer = start_combined(parts, at(root * SLOTS + LOCAL), load(parts, at(ints[LEFT_FINGER] * SLOTS + AGG)),
                                load(parts, at(root * SLOTS + AGG)))
        return value_of(parts, add(parts, answer, load(parts, at(ints[RIGHT_FINGER] * SLOTS + AGG))))

    query = flat(query)

    def range_query(bufs, st, lo, hi, lo_open):
        """Fold of the entries with lo <= time <= hi (lo < time when ``lo_open``), in time order."""
        keys, parts, ints = bufs[KEYS], bufs[PARTS], bufs[INTS]
        acc = identity
        if st[2] == 0 or hi < lo:
            return acc
        # three stacks in the scratch: node, next position in it, and its flags
        stack, pos_of, flags_of = (SCRATCH + RANGE_STACK, SCRATCH + RANGE_STACK + LEVELS,
                                   SCRATCH + RANGE_STACK + 2 * LEVELS)
        sp = 0
        ints[at(stack)] = ints[ROOT]
        ints[at(pos_of)] = 0
        ints[at(flags_of)] = 0  # bit 0: subtree all >(=) lo; bit 1: subtree all <= hi
        while sp >= 0:
            x = ints[at(stack + sp)]
            pos = ints[at(pos_of + sp)]
            flags = ints[at(flags_of + sp)]
            n = ints[at(x * RECORD + N_ENTRIES)]
            if pos > 2 * n:
                sp -= 1
                continue
            ints[at(pos_of + sp)] = pos + 1
            if pos % 2 == 1:
                i = (pos - 1) // 2
                k = keys[at(x * SLOTS + i)]
                if k > hi:
                    return acc
                if k > lo or (k == lo and not lo_open):
                    acc = combine(acc, load(parts, at(x * SLOTS + i)))
            elif ints[at(x * RECORD + IS_LEAF)] == 0:
                i = pos // 2
                if i < n and keys[at(x * SLOTS + i)] <= lo:
                    continue  # the child lies wholly below the range
                if i > 0 and keys[at(x * SLOTS + i - 1)] >= hi:
                    return acc  # it and everything after lie above the range
                child_flags = 0
                if i == 0:
                    child_flags |= flags & 1
                elif keys[at(x * SLOTS + i - 1)] >= lo:
                    child_flags |= 1
                if i == n:
                    child_flags |= flags & 2
                elif keys[at(x * SLOTS + i)] <= hi:
                    child_flags |= 2
                ch = ints[at(x * RECORD + CHILD + i)]
                if child_flags == 3 and kind(bufs, ch) == UP:
                    acc = combine(acc, load(parts, at(ch * SLOTS + AGG)))
                else:
                    sp += 1
                    ints[at(stack + sp)] = ch
                    ints[at(pos_of + sp)] = 0
                    ints[at(flags_of + sp)] = child_flags
        return acc

    range_query = flat(range_query)

    return dict(query=query, range_query=range_query)
