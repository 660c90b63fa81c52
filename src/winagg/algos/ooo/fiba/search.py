"""FiBA's finger searches: from a finger up to the node whose subtree holds a time."""

from __future__ import annotations

from .layout import (
    CHILD, INTS, IS_LEAF, KEYS, LEFT_FINGER, LEVELS, NIL, N_ENTRIES, PARENT, RIGHT_FINGER, ROOT, SCRATCH,
    TreeBuild)


def make_search(build: TreeBuild, made):
    """The search start of a single insert, and the boundary path of a bulk evict."""
    FINGER, RECORD, SLOTS, apart, at = build.finger, build.record, build.slots, build.apart, build.at
    flat = build.flat
    child_index = made.child_index

    def find_start(bufs, t):
        """Finger search: the lowest spine node whose subtree's time range holds t (or the root)."""
        keys, ints = bufs[KEYS], bufs[INTS]
        root = ints[ROOT]
        if not FINGER or ints[at(root * RECORD + IS_LEAF)] != 0:
            return root
        if t < keys[at(root * SLOTS)]:
            x = ints[LEFT_FINGER]
            while x != root and keys[at(x * SLOTS + ints[at(x * RECORD + N_ENTRIES)] - 1)] < t:
                x = ints[at(x * RECORD + PARENT)]
            return x
        if t > keys[at(root * SLOTS + ints[at(root * RECORD + N_ENTRIES)] - 1)]:
            x = ints[RIGHT_FINGER]
            while x != root and t < keys[at(x * SLOTS)]:
                x = ints[at(x * RECORD + PARENT)]
            return x
        return root

    find_start = flat(find_start)

    def search_boundary(bufs, t):
        """Step 1 of a bulk evict: the path to the boundary at time t, as one (node, neighbour,
        ancestor) triple per level in the scratch, top first; returns the depth."""
        keys, ints = bufs[KEYS], bufs[INTS]
        root = ints[ROOT]
        x = root
        if FINGER and ints[at(root * RECORD + IS_LEAF)] == 0:
            if t < keys[at(root * SLOTS)]:
                x = ints[LEFT_FINGER]
                while x != root and keys[at(x * SLOTS + ints[at(x * RECORD + N_ENTRIES)] - 1)] < t:
                    x = ints[at(x * RECORD + PARENT)]
            elif keys[at(root * SLOTS + ints[at(root * RECORD + N_ENTRIES)] - 1)] < t:
                x = ints[RIGHT_FINGER]
                while x != root and t < keys[at(x * SLOTS)]:
                    x = ints[at(x * RECORD + PARENT)]
        ancestor = NIL
        neighbor = NIL
        if x != root:
            ancestor = ints[at(x * RECORD + PARENT)]
            i = child_index(bufs, ancestor, x)
            if i < ints[at(ancestor * RECORD + N_ENTRIES)]:
                neighbor = ints[at(ancestor * RECORD + CHILD + i + 1)]
        depth = 0
        ints[SCRATCH], ints[SCRATCH + LEVELS], ints[SCRATCH + 2 * LEVELS] = x, neighbor, ancestor
        while ints[at(x * RECORD + IS_LEAF)] == 0:
            n = ints[at(x * RECORD + N_ENTRIES)]
            i = 0
            while i < n and keys[at(x * SLOTS + i)] < t:
                i += 1
            if i < n and keys[at(x * SLOTS + i)] == t:
                break  # everything right of t below here is untouched
            if i == n:
                if neighbor != NIL:
                    neighbor = ints[at(neighbor * RECORD + CHILD)]
            else:
                ancestor = x
                neighbor = ints[at(x * RECORD + CHILD + i + 1)]
            x = ints[at(x * RECORD + CHILD + i)]
            depth += 1
            ints[at(SCRATCH + depth)] = x
            ints[at(SCRATCH + LEVELS + depth)] = neighbor
            ints[at(SCRATCH + 2 * LEVELS + depth)] = ancestor
        return depth

    search_boundary = apart(search_boundary)

    return dict(find_start=find_start, search_boundary=search_boundary)
