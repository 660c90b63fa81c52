"""FiBA's rebalancing: splits of over-full nodes, merges and loans after an evict."""

from __future__ import annotations

from .layout import (
    CHILD, COVERED, INNER, INTS, IS_LEAF, KEYS, NIL, N_ENTRIES, ON_LEFT_SPINE, ON_RIGHT_SPINE, PARENT,
    PARTS, RIGHT, RIGHT_FINGER, ROOT, TreeBuild)


def make_rebalance(build: TreeBuild, made):
    """Splits after an insert (with the cheap repair of an appended right finger) and the
    merges and loans that fix underflows after an evict."""
    AGG, LOCAL, MAX_ENTRIES, MIN_ENTRIES = build.agg, build.local, build.max_entries, build.min_entries
    RECORD, SLOTS, apart, at, flat = build.record, build.slots, build.apart, build.at, build.flat
    load, mu, scalar = build.load, build.mu, build.scalar
    alloc_node, child_index, collapse_root = made.alloc_node, made.child_index, made.collapse_root
    copy_entry, free_node, insert_entry, kind = made.copy_entry, made.free_node, made.insert_entry, made.kind
    new_root_above, recompute, recompute_if_up = made.new_root_above, made.recompute, made.recompute_if_up
    fold_in, repair, set_child, shift_left = made.fold_in, made.repair, made.set_child, made.shift_left

    def split(bufs, x):
        """Split an over-full x (2*mu entries) in two; returns the new right node."""
        keys, parts, ints = bufs[KEYS], bufs[PARTS], bufs[INTS]
        if x == ints[ROOT]:
            new_root_above(bufs, x)
        p = ints[at(x * RECORD + PARENT)]
        y = alloc_node(bufs, ints[at(x * RECORD + IS_LEAF)])
        n = ints[at(x * RECORD + N_ENTRIES)]
        for j in range(mu + 1, n):
            scalar(j)
            copy_entry(bufs, y * SLOTS + j - mu - 1, x * SLOTS + j)
        if ints[at(x * RECORD + IS_LEAF)] == 0:
            for j in range(mu + 1, n + 1):
                scalar(j)
                set_child(bufs, y, j - mu - 1, ints[at(x * RECORD + CHILD + j)])
        ints[at(y * RECORD + N_ENTRIES)] = n - mu - 1
        ints[at(x * RECORD + N_ENTRIES)] = mu
        ints[at(y * RECORD + ON_RIGHT_SPINE)] = ints[at(x * RECORD + ON_RIGHT_SPINE)]
        ints[at(x * RECORD + ON_RIGHT_SPINE)] = 0
        if ints[at(y * RECORD + ON_RIGHT_SPINE)] != 0 and ints[at(y * RECORD + IS_LEAF)] != 0:
            ints[RIGHT_FINGER] = y
        middle = x * SLOTS + mu  # the separator goes up
        insert_entry(bufs, p, child_index(bufs, p, x), keys[at(middle)], load(parts, at(middle)), y)
        recompute_if_up(bufs, x)
        recompute_if_up(bufs, y)
        return y

    split = flat(split)

    def extend(parts, slot, a, b):
        """The partial at ``slot`` becomes itself (+) a (+) b."""
        fold_in(parts, slot, a)
        fold_in(parts, slot, b)

    extend = flat(extend)

    def split_right_finger(bufs, x):
        """Split the over-full right finger x after an append; repair only what changed.

        When the parent p (a right-spine node or the root) has room, p's aggregate ends where
        x's subtree began: x's first half and the separator now follow it, so p's aggregate is
        extended by two combines (in the order a recomputation would fold them), and only the
        new right finger is recomputed. Otherwise the general cascade runs.
        """
        parts, ints = bufs[PARTS], bufs[INTS]
        p = ints[at(x * RECORD + PARENT)]
        simple = False
        if p != NIL and 1 <= ints[at(p * RECORD + N_ENTRIES)] < MAX_ENTRIES:
            k = kind(bufs, p)
            simple = k == RIGHT or k == INNER
        y = split(bufs, x)
        if simple:
            separator = ints[at(p * RECORD + N_ENTRIES)] - 1  # the separator went to the end of p
            extend(parts, at(p * SLOTS + AGG), load(parts, at(x * SLOTS + AGG)),
                   load(parts, at(p * SLOTS + separator)))
            if k == RIGHT:  # its local aggregate grows the same way
                extend(parts, at(p * SLOTS + LOCAL), load(parts, at(x * SLOTS + AGG)),
                       load(parts, at(p * SLOTS + separator)))
            ints[at(p * RECORD + COVERED)] += ints[at(x * RECORD + COVERED)] + 1
            recompute(bufs, y)
            return
        hit_left = ints[at(x * RECORD + ON_LEFT_SPINE)]
        hit_right = ints[at(y * RECORD + ON_RIGHT_SPINE)]
        x = ints[at(x * RECORD + PARENT)]
        while ints[at(x * RECORD + N_ENTRIES)] > MAX_ENTRIES:
            y = split(bufs, x)
            hit_left |= ints[at(x * RECORD + ON_LEFT_SPINE)]
            hit_right |= ints[at(y * RECORD + ON_RIGHT_SPINE)]
            x = ints[at(x * RECORD + PARENT)]
        repair(bufs, x, hit_left, hit_right)

    split_right_finger = apart(split_right_finger)

    def rebalance_after_evict(bufs, x):
        """Fix underflows upward by one-entry moves or merges; returns (top, hit_left, hit_right)."""
        keys, parts, ints = bufs[KEYS], bufs[PARTS], bufs[INTS]
        hit_left = ints[at(x * RECORD + ON_LEFT_SPINE)]
        hit_right = ints[at(x * RECORD + ON_RIGHT_SPINE)]
        while x != ints[ROOT] and ints[at(x * RECORD + N_ENTRIES)] < MIN_ENTRIES:
            p = ints[at(x * RECORD + PARENT)]
            i = child_index(bufs, p, x)
            parent_entries = ints[at(p * RECORD + N_ENTRIES)]
            if i < parent_entries:
                sibling = ints[at(p * RECORD + CHILD + i + 1)]
                left, right, separator = x, sibling, i
            else:
                sibling = ints[at(p * RECORD + CHILD + i - 1)]
                left, right, separator = sibling, x, i - 1
            hit_left |= ints[at(sibling * RECORD + ON_LEFT_SPINE)]
            hit_right |= ints[at(sibling * RECORD + ON_RIGHT_SPINE)]
            if ints[at(x * RECORD + N_ENTRIES)] + 1 + ints[at(sibling * RECORD + N_ENTRIES)] <= MAX_ENTRIES:
                # Merge right into left through the separator whenever they fit in one node, not
                # only when the sibling cannot lend: in order, a leaf left by the right finger's
                # split holds mu entries, and a loan would leave the sibling at the minimum, to be
                # merged at the next underflow; merged at once, a run of mu + 1 evicts makes one
                # underflow instead of two.
                n_left = ints[at(left * RECORD + N_ENTRIES)]
                n_right = ints[at(right * RECORD + N_ENTRIES)]
                copy_entry(bufs, left * SLOTS + n_left, p * SLOTS + separator)
                for j in range(n_right):
                    scalar(j)
                    copy_entry(bufs, left * SLOTS + n_left + 1 + j, right * SLOTS + j)
                if ints[at(left * RECORD + IS_LEAF)] == 0:
                    for j in range(n_right + 1):
                        scalar(j)
                        set_child(bufs, left, n_left + 1 + j, ints[at(right * RECORD + CHILD + j)])
                ints[at(left * RECORD + N_ENTRIES)] = n_left + 1 + n_right
                if ints[at(right * RECORD + ON_RIGHT_SPINE)] != 0:
                    ints[at(left * RECORD + ON_RIGHT_SPINE)] = 1
                    if ints[at(left * RECORD + IS_LEAF)] != 0:
                        ints[RIGHT_FINGER] = left
                for j in range(separator + 1, parent_entries):  # drop separator and right from p
                    scalar(j)
                    copy_entry(bufs, p * SLOTS + j - 1, p * SLOTS + j)
                for j in range(separator + 2, parent_entries + 1):
                    scalar(j)
                    ints[at(p * RECORD + CHILD + j - 1)] = ints[at(p * RECORD + CHILD + j)]
                ints[at(p * RECORD + N_ENTRIES)] = parent_entries - 1
                free_node(bufs, right)
                if p == ints[ROOT] and parent_entries == 1:
                    collapse_root(bufs)
                    return ints[ROOT], 1, 1
                recompute_if_up(bufs, left)
            elif sibling == right:  # borrow right's first entry through the separator
                insert_entry(bufs, x, ints[at(x * RECORD + N_ENTRIES)], keys[at(p * SLOTS + separator)],
                             load(parts, at(p * SLOTS + separator)),
                             ints[at(right * RECORD + CHILD)])
                copy_entry(bufs, p * SLOTS + separator, right * SLOTS)
                shift_left(bufs, right, 1)
                recompute_if_up(bufs, x)
                recompute_if_up(bufs, right)
            else:  # borrow left's last entry through the separator
                n_left = ints[at(left * RECORD + N_ENTRIES)]
                n_x = ints[at(x * RECORD + N_ENTRIES)]
                for j in range(n_x, 0, -1):
                    scalar(j)
                    copy_entry(bufs, x * SLOTS + j, x * SLOTS + j - 1)
                copy_entry(bufs, x * SLOTS, p * SLOTS + separator)
                if ints[at(x * RECORD + IS_LEAF)] == 0:
                    for j in range(n_x + 1, 0, -1):
                        scalar(j)
                        ints[at(x * RECORD + CHILD + j)] = ints[at(x * RECORD + CHILD + j - 1)]
                    set_child(bufs, x, 0, ints[at(left * RECORD + CHILD + n_left)])
                ints[at(x * RECORD + N_ENTRIES)] = n_x + 1
                copy_entry(bufs, p * SLOTS + separator, left * SLOTS + n_left - 1)
                ints[at(left * RECORD + N_ENTRIES)] = n_left - 1
                recompute_if_up(bufs, x)
                recompute_if_up(bufs, left)
            x = p
        return x, hit_left, hit_right

    rebalance_after_evict = flat(rebalance_after_evict)

    return dict(split=split, split_right_finger=split_right_finger,
                rebalance_after_evict=rebalance_after_evict)
