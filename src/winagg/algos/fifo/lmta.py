"""Log MTA (paper 001, section 4.1): one tree of pair levels, O(log n) insert and any-size eviction.

Every level above the items holds the parents of all pairs of the level
below, and the top level is one pair, so the window's aggregate is that
pair's (O(1) query). An insert refreshes or creates one element per level
(Algorithm 1, with the digest's fix: a new root keeps the old root pair's
aggregate as its left element). Evicting ``count`` items advances each
level's head past the dropped branches and rebuilds the leftmost branch
(Algorithm 2 with the digest's corrected pair count): O(log n) for one item
or for millions. See :mod:`winagg.algos.fifo.mta_tree` for the representation.

State: bufs ``(vals, meta)``; st ``(mask, first, end, h)`` with ``h`` levels.
"""

from typing import Callable, NamedTuple

from ...core.ops import helper_for
from .mta_tree import BASE, HI, LO, MASK, StoredLayout, build_tree, capacity_of, hot_path_jit, ring_size_for

#: A stored window's view of this tree: each level keeps its own range; state (mask, first, end, h).
STORED = StoredLayout(aligned=False, state_ints=4, state_partials=0)

INFO = dict(order="fifo", needs_inverse=False,
            time="insert O(log n), query O(1), evict or bulk evict of any size O(log n)",
            space="about 2n partials (n items plus n internal nodes)", paper="001",
            options={})


class MTAFuncs(NamedTuple):
    """The Funcs contract plus the MTA's native operations."""

    init: Callable
    insert: Callable
    evict: Callable
    query: Callable
    grow: Callable
    bulk_evict: Callable   # (bufs, st, count) -> st
    removable: Callable    # (bufs, st, total, removed, wsp) -> how many oldest items the policy removes
    oldest_partial: Callable    # (bufs, st) -> partial of the oldest item (window not empty)
    single_evictions: Callable  # (st) -> how many single evictions a policy tries before its search


def build(ops, virtual: bool = False):
    """LMTA specialised to ``ops``; ``virtual`` lays the levels out for a key-value store."""
    combine, identity, jit = ops.combine, ops.identity, ops.jit
    tree = build_tree(ops, virtual)
    get, put, pair_agg, repair_left = tree.get, tree.put, tree.pair_agg, tree.repair_left
    hot = hot_path_jit(ops)
    ring_size, ring_capacity = helper_for(ops, ring_size_for), helper_for(ops, capacity_of)

    def init(capacity):
        ring = ring_size(capacity)
        vals, meta = tree.new_tree(ring)
        return (vals, meta), (ring_capacity(ring) - 1, 0, 0, 1)

    def insert(bufs, st, value):
        vals, meta = bufs
        mask, first, end, h = st
        put(vals, meta, 0, end, value)
        meta[HI] = end + 1
        index = end
        level = 0
        created = True  # is `index` a new element of `level` (else an updated one)?
        while level < h - 1:
            rel = index - meta[BASE + level]
            parent = rel >> 1
            if created and (rel & 1) == 0:
                # a new pair: its parent is new and holds the same value
                put(vals, meta, level + 1, parent, get(vals, meta, level, index))
                meta[HI + level + 1] = parent + 1
            else:
                put(vals, meta, level + 1, parent, pair_agg(vals, meta, level, parent))
                created = False
            index = parent
            level += 1
        base = meta[BASE + level]
        root_pair = (meta[LO + level] - base) >> 1
        if ((index - base) >> 1) != root_pair:
            # the top level now spans two pairs: a new root level above them
            top = level + 1
            meta[BASE + top] = root_pair
            meta[LO + top] = root_pair
            meta[HI + top] = root_pair + 2
            put(vals, meta, top, root_pair, pair_agg(vals, meta, level, root_pair))
            put(vals, meta, top, root_pair + 1, pair_agg(vals, meta, level, root_pair + 1))
            h += 1
        return (mask, first, end + 1, h)

    def bulk_evict(bufs, st, count):
        vals, meta = bufs
        mask, first, end, h = st
        if count <= 0:
            return st
        if count >= end - first:
            meta[LO] = end
            return (mask, end, end, 1)
        first += count
        meta[LO] = first
        # dropping whole branches: each level's head moves to the parent of the head below
        for level in range(h - 1):
            meta[LO + level + 1] = (meta[LO + level] - meta[BASE + level]) >> 1
        repair_left(vals, meta, h)
        # a top level with one live element has a single pair below it, which becomes the root
        while h > 1 and meta[HI + h - 1] - meta[LO + h - 1] == 1:
            h -= 1
        return (mask, first, end, h)

    bulk_evict = hot(bulk_evict)

    def evict(bufs, st):
        return bulk_evict(bufs, st, 1)

    def query(bufs, st):
        vals, meta = bufs
        _, _, _, h = st
        top = h - 1
        lo = meta[LO + top]
        hi = meta[HI + top]
        if hi - lo == 2:
            return combine(get(vals, meta, top, lo), get(vals, meta, top, lo + 1))
        if hi - lo == 1:
            return get(vals, meta, top, lo)
        return identity

    def grow(bufs, st):
        _, first, end, h = st
        vals, meta = tree.regrow(bufs[0], bufs[1], h, 0)
        return (vals, meta), (ring_capacity(meta[MASK] + 1) - 1, first, end, h)

    def removable(bufs, st, total, removed, wsp):
        _, _, _, h = st
        return tree.removable(bufs[0], bufs[1], h, False, total, removed, wsp)

    def oldest_partial(bufs, st):
        _, first, _, _ = st
        return get(bufs[0], bufs[1], 0, first)

    def single_evictions(st):
        return 0  # every eviction is O(log n): the search alone

    return MTAFuncs(jit(init), hot(insert), hot(evict), jit(query), jit(grow), bulk_evict,
                    jit(removable), jit(oldest_partial), single_evictions)
