"""FiBA's folds written into a node's own row, for vector partials with an in-place combine.

A sketch's ``combine`` (Bloom filter, Count-Min, HyperLogLog) returns a new array, so every
refold of a node allocated one partial per term: after a split, a loan or a merge, and down
each repaired spine. With ``combine_into`` the same folds, in the same order, write into the
node's aggregate row instead. Each function here replaces the one of the same name in
:mod:`.fiba_repair` or :mod:`.fiba_rebalance` when ``build.into`` is set; scalar and tuple
partials keep those.
"""

from __future__ import annotations

from .fiba_layout import (
    CHILD, COVERED, INNER, INTS, IS_LEAF, LEFT, NIL, N_ENTRIES, ON_LEFT_SPINE, ON_RIGHT_SPINE, PARENT, PARTS,
    RIGHT, ROOT, UP, TreeBuild)


def refold_in_row(build: TreeBuild):
    """``refold(bufs, x, k, recount, delta)`` folding into x's aggregate row."""
    AGG, LOCAL, RECORD, SLOTS = build.agg, build.local, build.record, build.slots
    at, identity, into, load, store = build.at, build.identity, build.into, build.load, build.store

    def refold(bufs, x, k, recount, delta):
        parts, ints = bufs[PARTS], bufs[INTS]
        r = x * RECORD
        n = ints[at(r + N_ENTRIES)]
        p = ints[at(r + PARENT)]
        parent_term = p != NIL and p != ints[ROOT]
        row = load(parts, at(x * SLOTS + AGG))  # x's own aggregate is never one of its terms
        into(row, identity, identity)
        c = 0
        if ints[at(r + IS_LEAF)] != 0:
            if k == RIGHT and parent_term:  # older than the whole node
                into(row, row, load(parts, at(p * SLOTS + AGG)))
                c = ints[at(p * RECORD + COVERED)]
            for i in range(n):
                into(row, row, load(parts, at(x * SLOTS + i)))
            c += n
        else:
            lo_child = 1 if (k == INNER or k == LEFT) else 0
            hi_child = n - 1 if (k == INNER or k == RIGHT) else n
            for i in range(n + 1):
                if lo_child <= i <= hi_child:
                    ch = ints[at(r + CHILD + i)]
                    into(row, row, load(parts, at(ch * SLOTS + AGG)))
                    if recount:
                        c += ints[at(ch * RECORD + COVERED)]
                if i < n:
                    into(row, row, load(parts, at(x * SLOTS + i)))
                    c += 1
            if k == RIGHT or k == LEFT:
                store(parts, at(x * SLOTS + LOCAL), row)  # the local aggregate (a copy)
                if parent_term:
                    if k == RIGHT:  # older than the whole node
                        into(row, load(parts, at(p * SLOTS + AGG)), row)
                    else:  # younger than the whole node
                        into(row, row, load(parts, at(p * SLOTS + AGG)))
                    if recount:
                        c += ints[at(p * RECORD + COVERED)]
        if k == LEFT and parent_term and ints[at(r + IS_LEAF)] != 0:  # younger than the whole leaf
            into(row, row, load(parts, at(p * SLOTS + AGG)))
            c += ints[at(p * RECORD + COVERED)]
        if recount:
            ints[at(r + COVERED)] = c
        else:
            ints[at(r + COVERED)] += delta

    return refold


def refold_up_in_row(build: TreeBuild):
    """``refold_up(bufs, x, delta)`` folding into x's aggregate row."""
    AGG, RECORD, SLOTS, at, into, load = build.agg, build.record, build.slots, build.at, build.into, build.load
    identity = build.identity

    def refold_up(bufs, x, delta):
        parts, ints = bufs[PARTS], bufs[INTS]
        r = x * RECORD
        n = ints[at(r + N_ENTRIES)]
        row = load(parts, at(x * SLOTS + AGG))
        into(row, load(parts, at(ints[at(r + CHILD)] * SLOTS + AGG)), identity)
        for i in range(n):
            into(row, row, load(parts, at(x * SLOTS + i)))
            into(row, row, load(parts, at(ints[at(r + CHILD + i + 1)] * SLOTS + AGG)))
        ints[at(r + COVERED)] += delta

    return refold_up


def walk_down_local_in_row(build: TreeBuild, recompute, walk_down):
    """``walk_down_local(bufs, x, right, delta)`` writing each spine node's aggregate in place."""
    AGG, LOCAL, RECORD, SLOTS, at, into, load = (build.agg, build.local, build.record, build.slots, build.at,
                                                 build.into, build.load)

    def walk_down_local(bufs, x, right, delta):
        parts, ints = bufs[PARTS], bufs[INTS]
        while ints[at(x * RECORD + IS_LEAF)] == 0:
            c = ints[at(x * RECORD + CHILD + (ints[at(x * RECORD + N_ENTRIES)] if right else 0))]
            if (ints[at(c * RECORD + IS_LEAF)] != 0
                    or ints[at(c * RECORD + ON_LEFT_SPINE)] == ints[at(c * RECORD + ON_RIGHT_SPINE)]):
                recompute(bufs, c)
                walk_down(bufs, c, right)
                return
            row = load(parts, at(c * SLOTS + AGG))
            if right:
                into(row, load(parts, at(x * SLOTS + AGG)), load(parts, at(c * SLOTS + LOCAL)))
            else:
                into(row, load(parts, at(c * SLOTS + LOCAL)), load(parts, at(x * SLOTS + AGG)))
            ints[at(c * RECORD + COVERED)] += delta
            x = c

    return walk_down_local


def repair_commutative_in_row(build: TreeBuild, kind, repair, fold_in):
    """``repair_commutative(bufs, top, v)`` folding v into each covering aggregate in place."""
    AGG, LOCAL, RECORD, SLOTS, at = build.agg, build.local, build.record, build.slots, build.at

    def repair_commutative(bufs, top, v):
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
        if k == INNER:
            repair(bufs, x, 0, 0)
            return
        if ints[at(x * RECORD + IS_LEAF)] != 0:
            return
        fold_in(parts, at(x * SLOTS + LOCAL), v)
        right = k == RIGHT
        while ints[at(x * RECORD + IS_LEAF)] == 0:
            x = ints[at(x * RECORD + CHILD + (ints[at(x * RECORD + N_ENTRIES)] if right else 0))]
            if ints[at(x * RECORD + ON_LEFT_SPINE)] == ints[at(x * RECORD + ON_RIGHT_SPINE)]:
                return
            fold_in(parts, at(x * SLOTS + AGG), v)
            ints[at(x * RECORD + COVERED)] += 1

    return repair_commutative


def extend_in_row(build: TreeBuild):
    """``extend(parts, slot, a, b)``: the partial at ``slot`` becomes itself (+) a (+) b, in place."""
    into, load = build.into, build.load

    def extend(parts, slot, a, b):
        row = load(parts, slot)
        into(row, row, a)
        into(row, row, b)

    return extend
