"""FiBA's single insert (append at the right finger, or out of order) and single evict."""

from __future__ import annotations

from .layout import (
    CHILD, COVERED, INNER, INTS, IS_LEAF, KEYS, LEFT_FINGER, NIL, N_ENTRIES, ON_LEFT_SPINE, ON_RIGHT_SPINE,
    PARENT, PARTS, RIGHT, RIGHT_FINGER, ROOT, UP, TreeBuild)


def make_insert_evict(build: TreeBuild, made):
    """The single insert (``insert_at``, and ``insert`` at the youngest time + 1 for the FIFO
    kernels) and the single evict of the oldest entry."""
    AGG, COMMUTATIVE, FINGER, MAX_ENTRIES = build.agg, build.commutative, build.finger, build.max_entries
    MIN_ENTRIES, RECORD, SLOTS, apart, at = build.min_entries, build.record, build.slots, build.apart, build.at
    combine, flat, load = build.combine, build.flat, build.load
    scalar, store = build.scalar, build.store
    find_start, fold_in, insert_entry, kind = made.find_start, made.fold_in, made.insert_entry, made.kind
    rebalance_after_evict, recompute, repair = made.rebalance_after_evict, made.recompute, made.repair
    repair_apart, repair_commutative = made.repair_apart, made.repair_commutative
    repair_local, shift_left, split = made.repair_local, made.shift_left, made.split
    split_right_finger, youngest = made.split_right_finger, made.youngest
    add, finish, start_with, prefetch_node = made.add, made.finish, made.start_with, made.prefetch_node

    def append(bufs, x, t, v):
        """Append (t, v) to the right finger x, t younger than every entry (the in-order insert)."""
        parts, ints = bufs[PARTS], bufs[INTS]
        n = ints[at(x * RECORD + N_ENTRIES)]
        bufs[KEYS][at(x * SLOTS + n)] = t
        store(parts, at(x * SLOTS + n), v)
        ints[at(x * RECORD + N_ENTRIES)] = n + 1
        if n + 1 > MAX_ENTRIES:
            split_right_finger(bufs, x)
            return
        k = kind(bufs, x)
        if k == RIGHT or k == INNER:
            # the aggregate ends with the finger's youngest value: extend it, O(1)
            fold_in(parts, at(x * SLOTS + AGG), v)
            ints[at(x * RECORD + COVERED)] += 1
        else:
            repair_apart(bufs, x, 0, 1)

    append = flat(append)

    def insert_at(bufs, st, t, v):
        keys, ints = bufs[KEYS], bufs[INTS]
        right_finger = ints[RIGHT_FINGER]
        last = ints[at(right_finger * RECORD + N_ENTRIES)] - 1
        if FINGER and (last < 0 or keys[at(right_finger * SLOTS + last)] < t):  # younger than every entry
            append(bufs, right_finger, t, v)
            return (st[0], st[1], st[2] + 1)
        return insert_inside(bufs, st, t, v)

    def insert_inside(bufs, st, t, v):
        """Insert at a time that is not younger than every entry (or any time, classic)."""
        keys, parts, ints = bufs[KEYS], bufs[PARTS], bufs[INTS]
        x = find_start(bufs, t)
        while True:
            n = ints[at(x * RECORD + N_ENTRIES)]
            i = 0
            while i < n and keys[at(x * SLOTS + i)] < t:
                i += 1
            if i < n and keys[at(x * SLOTS + i)] == t:  # an existing time: old (+) new, in place
                store(parts, at(x * SLOTS + i), combine(load(parts, at(x * SLOTS + i)), v))
                repair_local(bufs, x, 0)  # x's entries changed, no spine node's below it
                return st  # as many entries as before (the pool's limit moves only in grow)
            if ints[at(x * RECORD + IS_LEAF)] != 0:
                break
            x = ints[at(x * RECORD + CHILD + i)]
        insert_entry(bufs, x, i, t, v, NIL)
        hit_left = 0
        hit_right = 0
        while ints[at(x * RECORD + N_ENTRIES)] > MAX_ENTRIES:
            y = split(bufs, x)
            hit_left |= ints[at(x * RECORD + ON_LEFT_SPINE)]
            hit_right |= ints[at(y * RECORD + ON_RIGHT_SPINE)]
            x = ints[at(x * RECORD + PARENT)]
        if hit_left == 0 and hit_right == 0:
            # no split reached a spine: the spines below the repair are as they were
            if COMMUTATIVE:
                repair_commutative(bufs, x, v)
            else:
                repair_local(bufs, x, 1)
        else:
            repair(bufs, x, hit_left, hit_right)
        return (st[0], st[1], st[2] + 1)  # one entry more

    insert_inside = flat(insert_inside)
    insert_at = flat(insert_at)

    def insert(bufs, st, v):
        t = youngest(bufs) + 1 if st[2] > 0 else 0 * st[2]
        return insert_at(bufs, st, t, v)

    insert = flat(insert)

    def evict_restructuring(bufs, x):
        """Drop the oldest entry of the left finger x when a refold alone cannot (see evict)."""
        ints = bufs[INTS]
        shift_left(bufs, x, 1)
        if x != ints[ROOT] and ints[at(x * RECORD + N_ENTRIES)] < MIN_ENTRIES:
            # in order, about two evictions in five underflow the left finger: the rebalancing
            # and the repair run inlined here, in one call
            top, hit_left, hit_right = rebalance_after_evict(bufs, x)
            repair(bufs, top, hit_left, hit_right)
        elif kind(bufs, x) != UP:  # nothing above the left finger (or the root leaf) includes it
            recompute(bufs, x)
        else:
            repair(bufs, x, ints[at(x * RECORD + ON_LEFT_SPINE)], 0)

    evict_restructuring = apart(evict_restructuring)

    def drop_oldest_refold(bufs, x):
        """Drop the left finger's oldest entry and refold its left aggregate in the same pass.

        For a left-finger leaf below the root that keeps at least MIN_ENTRIES entries (the in-order
        evict without rebalancing): the shift and the fold read each entry once.
        """
        keys, parts, ints = bufs[KEYS], bufs[PARTS], bufs[INTS]
        r = x * RECORD
        n = ints[at(r + N_ENTRIES)] - 1
        # n >= MIN_ENTRIES >= 1 entries stay: the fold starts with the first of them
        keys[at(x * SLOTS)] = keys[at(x * SLOTS + 1)]
        store(parts, at(x * SLOTS), load(parts, at(x * SLOTS + 1)))
        acc = start_with(parts, at(x * SLOTS + AGG), load(parts, at(x * SLOTS)))
        for j in range(1, n):
            scalar(j)
            keys[at(x * SLOTS + j)] = keys[at(x * SLOTS + j + 1)]
            v = load(parts, at(x * SLOTS + j + 1))
            store(parts, at(x * SLOTS + j), v)
            acc = add(parts, acc, v)
        ints[at(r + N_ENTRIES)] = n
        p = ints[at(r + PARENT)]
        if p != ints[ROOT]:  # younger than the whole leaf: the parent's left aggregate
            acc = add(parts, acc, load(parts, at(p * SLOTS + AGG)))
            n += ints[at(p * RECORD + COVERED)]
        finish(parts, at(x * SLOTS + AGG), acc)
        ints[at(r + COVERED)] = n

    drop_oldest_refold = flat(drop_oldest_refold)

    def evict(bufs, st):
        ints = bufs[INTS]
        x = ints[LEFT_FINGER]
        if (FINGER and x != ints[ROOT] and ints[at(x * RECORD + N_ENTRIES)] > MIN_ENTRIES
                and ints[at(x * RECORD + ON_RIGHT_SPINE)] == 0):
            drop_oldest_refold(bufs, x)  # a left-spine leaf: its aggregate is LEFT
            # The finger's right sibling lends or merges an evict or two from now; in a large
            # window nothing has touched it since it filled, and its entries were the round's
            # slowest reads (cache misses). Asked for now, they arrive in time.
            sibling = ints[at(ints[at(x * RECORD + PARENT)] * RECORD + CHILD + 1)]
            prefetch_node(bufs, sibling)
        else:
            evict_restructuring(bufs, x)
        return (st[0], st[1], st[2] - 1)

    evict = flat(evict)

    return dict(append=append, insert_at=insert_at, insert_inside=insert_inside, insert=insert, evict=evict)
