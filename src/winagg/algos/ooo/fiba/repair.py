"""FiBA's location-sensitive aggregates and their repair: up the tree, then down the spines."""

from __future__ import annotations

from .layout import (
    CHILD, COVERED, INNER, INTS, IS_LEAF, LEFT, NIL, N_ENTRIES, ON_LEFT_SPINE, ON_RIGHT_SPINE, PARENT,
    PARTS, RIGHT, ROOT, UP, TreeBuild)


def make_repair(build: TreeBuild, made):
    """Each node's aggregate kind and refold, and the repairs after a change: up to the first
    spine node or the root, then down the touched spines to the fingers (finger repair)."""
    AGG, FINGER, LOCAL, RECORD, SLOTS = build.agg, build.finger, build.local, build.record, build.slots
    apart, at, flat, load, scalar, store = build.apart, build.at, build.flat, build.load, build.scalar, build.store
    add, add_before, finish, fold_in = made.add, made.add_before, made.finish, made.fold_in
    set_to, start, start_with, value_of = made.set_to, made.start, made.start_with, made.value_of

    def kind(bufs, x):
        ints = bufs[INTS]
        if x == ints[ROOT]:
            return INNER if FINGER else UP
        if not FINGER:
            return UP
        left, right = ints[at(x * RECORD + ON_LEFT_SPINE)], ints[at(x * RECORD + ON_RIGHT_SPINE)]
        if left != 0:
            return INNER if right != 0 else LEFT
        return RIGHT if right != 0 else UP

    kind = flat(kind)

    def refold(bufs, x, k, recount, delta):
        """Refold x's aggregate of kind k; its count is refolded too (``recount``) or moves by ``delta``."""
        parts, ints = bufs[PARTS], bufs[INTS]
        r = x * RECORD
        n = ints[at(r + N_ENTRIES)]
        p = ints[at(r + PARENT)]
        parent_term = p != NIL and p != ints[ROOT]
        c = 0
        if ints[at(r + IS_LEAF)] != 0:
            if k == RIGHT and parent_term:  # older than the whole node
                acc = start_with(parts, at(x * SLOTS + AGG), load(parts, at(p * SLOTS + AGG)))
                c = ints[at(p * RECORD + COVERED)]
            else:
                acc = start(parts, at(x * SLOTS + AGG))
            for i in range(n):
                scalar(i)
                acc = add(parts, acc, load(parts, at(x * SLOTS + i)))
            c += n
        else:
            acc = start(parts, at(x * SLOTS + AGG))
            lo_child = 1 if (k == INNER or k == LEFT) else 0
            hi_child = n - 1 if (k == INNER or k == RIGHT) else n
            for i in range(n + 1):
                scalar(i)
                if lo_child <= i <= hi_child:
                    ch = ints[at(r + CHILD + i)]
                    acc = add(parts, acc, load(parts, at(ch * SLOTS + AGG)))
                    if recount:
                        c += ints[at(ch * RECORD + COVERED)]
                if i < n:
                    acc = add(parts, acc, load(parts, at(x * SLOTS + i)))
                    c += 1
            if k == RIGHT or k == LEFT:
                store(parts, at(x * SLOTS + LOCAL), value_of(parts, acc))  # the local aggregate (see walk_down_local)
                if parent_term:
                    if k == RIGHT:  # older than the whole node
                        acc = add_before(parts, load(parts, at(p * SLOTS + AGG)), acc)
                    else:  # younger than the whole node
                        acc = add(parts, acc, load(parts, at(p * SLOTS + AGG)))
                    if recount:
                        c += ints[at(p * RECORD + COVERED)]
        if k == LEFT and parent_term and ints[at(r + IS_LEAF)] != 0:  # younger than the whole leaf
            acc = add(parts, acc, load(parts, at(p * SLOTS + AGG)))
            c += ints[at(p * RECORD + COVERED)]
        finish(parts, at(x * SLOTS + AGG), acc)
        if recount:
            ints[at(r + COVERED)] = c
        else:
            ints[at(r + COVERED)] += delta

    refold = flat(refold)

    def refold_up(bufs, x, delta):
        """``refold(b, x, UP, False, delta)`` for an internal x: children and entries alternate."""
        parts, ints = bufs[PARTS], bufs[INTS]
        r = x * RECORD
        n = ints[at(r + N_ENTRIES)]
        acc = start_with(parts, at(x * SLOTS + AGG), load(parts, at(ints[at(r + CHILD)] * SLOTS + AGG)))
        for i in range(n):
            scalar(i)
            acc = add(parts, acc, load(parts, at(x * SLOTS + i)))
            acc = add(parts, acc, load(parts, at(ints[at(r + CHILD + i + 1)] * SLOTS + AGG)))
        finish(parts, at(x * SLOTS + AGG), acc)
        ints[at(r + COVERED)] += delta

    refold_up = flat(refold_up)

    def recompute(bufs, x):
        refold(bufs, x, kind(bufs, x), True, 0)

    # The in-order paths get inlined copies, the rare structural paths the out-of-line ones.
    recompute = flat(recompute)

    def recompute_if_up(bufs, x):
        if kind(bufs, x) == UP:
            recompute(bufs, x)

    recompute_if_up = flat(recompute_if_up)

    def walk_down(bufs, x, right):
        ints = bufs[INTS]
        while ints[at(x * RECORD + IS_LEAF)] == 0:
            x = ints[at(x * RECORD + CHILD + (ints[at(x * RECORD + N_ENTRIES)] if right else 0))]
            recompute(bufs, x)

    walk_down = flat(walk_down)

    def walk_down_local(bufs, x, right, delta):
        """The spine below x after x's aggregate changed by ``delta`` entries, none below it changed.

        Each internal spine node's aggregate is its local aggregate and its parent's (one
        combine) and its count moves by ``delta``; the finger leaf is refolded. x is a
        one-spine node below the root (no spine node under the root includes the root).
        """
        parts, ints = bufs[PARTS], bufs[INTS]
        while ints[at(x * RECORD + IS_LEAF)] == 0:
            c = ints[at(x * RECORD + CHILD + (ints[at(x * RECORD + N_ENTRIES)] if right else 0))]
            if (ints[at(c * RECORD + IS_LEAF)] != 0
                    or ints[at(c * RECORD + ON_LEFT_SPINE)] == ints[at(c * RECORD + ON_RIGHT_SPINE)]):
                recompute(bufs, c)  # the finger leaf (or a node on both spines, never here in practice)
                walk_down(bufs, c, right)
                return
            if right:
                set_to(parts, at(c * SLOTS + AGG), load(parts, at(x * SLOTS + AGG)), load(parts, at(c * SLOTS + LOCAL)))
            else:
                set_to(parts, at(c * SLOTS + AGG), load(parts, at(c * SLOTS + LOCAL)), load(parts, at(x * SLOTS + AGG)))
            ints[at(c * RECORD + COVERED)] += delta
            x = c

    walk_down_local = flat(walk_down_local)

    def repair(bufs, top, hit_left, hit_right):
        """Up-aggregates bottom-up from ``top`` to a spine node or the root, then spines top-down."""
        ints = bufs[INTS]
        root = ints[ROOT]
        x = top
        recompute(bufs, x)
        while x != root and kind(bufs, x) == UP:
            x = ints[at(x * RECORD + PARENT)]
            recompute(bufs, x)
        if FINGER:
            if (ints[at(x * RECORD + ON_LEFT_SPINE)] != 0 and x != root) or (hit_left != 0 and x == root):
                walk_down(bufs, x, False)
            if (ints[at(x * RECORD + ON_RIGHT_SPINE)] != 0 and x != root) or (hit_right != 0 and x == root):
                walk_down(bufs, x, True)

    repair_apart = apart(repair)  # the flat code's rare call
    repair = flat(repair)

    def repair_local(bufs, top, delta):
        """``repair`` when no spine node changed below the node where the upward repair stops.

        ``top`` is refolded in full; every node above it on the way (and, through
        walk_down_local, on the spine below the stop) holds ``delta`` more entries
        than before, so their counts move by ``delta`` instead of being refolded.
        """
        ints = bufs[INTS]
        root = ints[ROOT]
        x = top
        k = kind(bufs, x)
        if x == root or k != UP:
            recount = True
        else:
            refold(bufs, x, UP, True, 0)
            recount = False
            x = ints[at(x * RECORD + PARENT)]
            k = kind(bufs, x)
            while x != root and k == UP:
                refold_up(bufs, x, delta)
                x = ints[at(x * RECORD + PARENT)]
                k = kind(bufs, x)
        if not FINGER or x == root:
            refold(bufs, x, k, recount, delta)
            return
        if k == INNER:  # on both spines below the root (transiently): the general repair
            repair(bufs, x, 0, 0)
            return
        refold(bufs, x, k, recount, delta)
        walk_down_local(bufs, x, k == RIGHT, delta)

    repair_local = flat(repair_local)

    def repair_commutative(bufs, top, v):
        """``repair_local(b, top, 1)`` for a commutative combine, after a new entry of value v.

        Every aggregate that covers the new entry covers it once, whatever the order of its
        terms: each is combined with v and its count grows by one. That is ``top`` and the
        nodes above it up to the first spine node or the root (whose entries and children hold
        everything they held, and v), that spine node's local aggregate, and the aggregates of
        the spine nodes below it (each holds its parent's).
        """
        parts, ints = bufs[PARTS], bufs[INTS]
        root = ints[ROOT]
        x = top
        while True:
            k = kind(bufs, x)
            fold_in(parts, at(x * SLOTS + AGG), v)
            ints[at(x * RECORD + COVERED)] += 1
            if x == root:
                return
            if k != UP:
                break
            x = ints[at(x * RECORD + PARENT)]
        if k == INNER:  # on both spines below the root (transiently): the general repair
            repair(bufs, x, 0, 0)
            return
        if ints[at(x * RECORD + IS_LEAF)] != 0:
            return  # a finger: no spine below
        fold_in(parts, at(x * SLOTS + LOCAL), v)
        right = k == RIGHT
        while ints[at(x * RECORD + IS_LEAF)] == 0:
            x = ints[at(x * RECORD + CHILD + (ints[at(x * RECORD + N_ENTRIES)] if right else 0))]
            if ints[at(x * RECORD + ON_LEFT_SPINE)] == ints[at(x * RECORD + ON_RIGHT_SPINE)]:
                return  # on both spines: its aggregate holds no parent's (never here in practice)
            fold_in(parts, at(x * SLOTS + AGG), v)
            ints[at(x * RECORD + COVERED)] += 1

    repair_commutative = flat(repair_commutative)

    return dict(kind=kind, refold=refold, refold_up=refold_up, recompute=recompute,
                recompute_if_up=recompute_if_up, walk_down=walk_down, walk_down_local=walk_down_local,
                repair=repair, repair_apart=repair_apart, repair_local=repair_local,
                repair_commutative=repair_commutative)
