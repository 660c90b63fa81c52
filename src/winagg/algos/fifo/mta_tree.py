"""The tree of levels shared by Log MTA and Amortized MTA (paper 001), as index ranges.

The paper keeps each tree level as a FIFO queue of sibling *pairs*, with an
empty marker where the first pair lost its left element or the last pair has
no right element yet. Here a level is a contiguous range of element indices
``[lo, hi)`` plus a pairing base: element ``k`` of level ``l`` is in pair
``(k - base) >> 1`` (left when the offset is even), and that pair's parent is
element ``(k - base) >> 1`` of level ``l + 1``. The empty markers become
arithmetic: the head pair lacks its left element when ``lo - base`` is odd,
the tail pair lacks its right one when ``hi - base`` is odd. Evicting is
advancing ``lo`` (the paper's ``remove_pairs`` only moves a head pointer
too), so a bulk eviction of any size is one O(1) step per level.

Level 0 holds the items themselves, its indices are item positions (so the
window's ``first``/``end`` are level 0's ``lo``/``hi``), and its base is 0.

Storage (one source for Python and numba): the partials of every level share
one buffer ``vals`` where level ``l`` is a ring at ``off[l]`` of size
``mask[l] + 1``; the integer fields live in ``meta``, a list in Python mode
and an int64 array when compiled. The rings hold twice the largest usable
window at level 0 and half of the level below above it (at least 16): a
level spans at most ``n / 2**l + 4`` slots, which fits when ``n`` is at most
three quarters of level 0's ring. A *virtual* tree (key-value store backing)
gives every level an unbounded index space at ``l << 48`` instead, so it
never grows and a store key is ``(slot >> 48, slot & (2**48 - 1))``.

An *in-order* tree (AMTA in memory, whose levels pair from index 0, i.e. every
base is 0) keeps all levels in one buffer instead: level 0 is a ring on the
first half, and element ``k`` of level ``l >= 1`` is at ``((2k + 1) << (l - 1)) - 1``
modulo the half size in the second half, the position of that node in an
in-order walk of the aligned binary tree of pairs. Level 1 uses the even
positions, level 2 every fourth, and so on: level ``l`` has its own ring of
``size / 2**(l + 1)`` slots, interleaved with the others, and a slot is
computed from ``(level, index)`` and one mask, without per-level offsets or
masks to read. ``meta[MASK]`` holds the buffer's mask (``size - 1``), the
stack follows it. See ``in_order_size_for`` for why the levels never overlap.
An in-order tree may leave its lowest levels unkept (``meta[FOLD]``, AMTA's
blocks): their slots then go unused, and reading such an element folds its
items instead.
"""

from __future__ import annotations

from typing import NamedTuple

import numba as nb
import numpy as np

from ...core.ops import helper_for, runs_in_python

#: Offsets of the per-level fields in ``meta`` (levels 0..MAX_LEVELS-1).
MAX_LEVELS = 64
LO, HI, BASE, OFF, MASK = 0, MAX_LEVELS, 2 * MAX_LEVELS, 3 * MAX_LEVELS, 4 * MAX_LEVELS
#: ``meta[STACK]``: where the stack of future oldest-tree aggregates (AMTA) starts in ``vals``.
STACK = 5 * MAX_LEVELS
#: AMTA's event positions: ``meta[TREE_END]`` is one past the oldest tree's last item (set when R
#: is rebuilt), ``meta[EVICT_AT]`` and ``meta[INSERT_AT]`` the values of ``first`` and ``end``
#: at which an eviction or an insert has more to do than the per-item step.
TREE_END, EVICT_AT, INSERT_AT = STACK + 1, STACK + 2, STACK + 3
#: ``meta[FOLD]``: levels ``1 .. meta[FOLD] - 1`` of an in-order tree are not kept (AMTA's blocks):
#: ``get`` folds such an element from its items in the window (``meta[LO]`` on, so ``meta`` must
#: hold the current ranges). 0 when every level is kept.
FOLD = STACK + 4
META_SIZE = STACK + 5
#: AMTA's stack index of the entries for the items of the oldest block (after the levels' entries).
SUFFIX = MAX_LEVELS
#: AMTA in memory works a block of ``2**log_block`` items at a time, at most ``2**MAX_LOG_BLOCK``.
MAX_LOG_BLOCK = 10
#: Levels of a virtual tree: level ``l`` owns the slots ``l << VIRTUAL_SHIFT ..``.
VIRTUAL_SHIFT = 48
VIRTUAL_CAPACITY = 1 << 46


def hot_path_jit(ops):
    """The decorator for the MTA's per-item operations under ``ops`` (see the comment)."""
    # numba's reference-count pruning gives up on functions with loops and calls like
    # insert's carry and evict's stack refill: inlined by numba into a kernel loop, they paid
    # atomic increments and decrements of both buffers on every row; as calls of their own
    # (ops.jit_loop) they paid a call with the whole state through memory, twice per row.
    # ops.jit_flat compiles them without the runtime and lets LLVM inline them: neither cost.
    # Vector partials allocate in combine and stay inlined by numba; Python mode is unchanged.
    return ops.jit_flat


@nb.njit(inline="always")
def _unsigned(slot):
    return np.uint64(slot)


def _as_is(slot):
    return slot


@nb.njit(cache=True)
def _int_array(n):
    return np.zeros(n, np.int64)


def _int_list(n):
    return [0] * n


@nb.njit(cache=True)
def ring_size_for(capacity):
    """Level 0's ring size for a window of up to ``capacity`` items (a power of two >= 16)."""
    ring = 16
    while ring * 3 // 4 < capacity:
        ring *= 2
    return ring


@nb.njit(cache=True)
def in_order_size_for(capacity):
    """The in-order ring's size for a window of up to ``capacity`` items: 4 * a power of two >= capacity.

    With the levels aligned (element ``k`` of level ``l`` covers items ``k 2**l ..
    (k + 1) 2**l - 1``), the live elements of level ``l`` are at most
    ``floor((n - 1) / 2**l) + 1`` consecutive indices for ``n`` items, and a level
    above ``l`` is only created while ``n > 2**l``, so ``2**l < 2n`` on every
    level. With ``n <= size / 4`` each level's interleaved ring
    (``size / 2**(l + 1)`` slots) holds its live elements without overlap.
    """
    half = 16
    while half < 2 * capacity:
        half *= 2
    return 2 * half


@nb.njit(cache=True)
def in_order_capacity_of(size):
    """Usable window size of an in-order ring of ``size`` slots."""
    return size // 4


def in_order_slot_of(mask, level, index):
    """Where element ``index`` of ``level`` lives in an in-order ring with mask ``mask``."""
    # level 0 (the items) fills the first half contiguously, for locality; the levels above
    # interleave in order in the second half
    half = (mask >> 1) + 1
    if level == 0:
        return index & (half - 1)
    return half + (((((index << 1) + 1) << (level - 1)) - 1) & (half - 1))


in_order_slot = nb.njit(inline="always")(in_order_slot_of)


@nb.njit(cache=True)
def level_count_for(ring):
    """Levels to lay out for level 0's ring size ``ring`` (more than a full tree ever needs)."""
    levels = 4
    size = ring
    while size > 1:
        size //= 2
        levels += 1
    return min(levels, MAX_LEVELS)


class StoredLayout(NamedTuple):
    """How a window kept in a key-value store (:mod:`winagg.store`) reads an MTA laid out for it
    (``build(ops, virtual=True)``): whether its levels are aligned (level l's oldest index is the
    oldest item's >> l, so their ranges follow from one number), and how its state tuple splits
    into integers, then partials. The tree's height is the state's fourth integer in both MTAs."""

    aligned: bool
    state_ints: int
    state_partials: int


def height(st) -> int:
    """The levels of an MTA's tree, from its state ``(mask, first, end, h, ...)``."""
    return st[3]


class Tree(NamedTuple):
    """The jitted helpers over ``(vals, meta)`` that both MTA algorithms use."""

    new_tree: object       # new_tree(ring) -> (vals, meta): empty window, one level
    get: object            # get(vals, meta, level, index) -> partial
    put: object            # put(vals, meta, level, index, partial)
    get_stack: object      # get_stack(vals, meta, i) -> the AMTA stack's entry i
    put_stack: object      # put_stack(vals, meta, i, partial)
    pair_agg: object       # pair_agg(vals, meta, level, pair) -> aggregate of the pair's live elements
    repair_left: object    # repair_left(vals, meta, h): recompute the leftmost branch bottom-up
    regrow: object         # regrow(vals, meta, h, stack_size) -> (vals, meta) with twice the ring sizes
    removable: object      # removable(vals, meta, h, forest, total, removed, wsp) -> items the WSP removes
    # The per-item operations of AMTA address elements by *node number* through a locator
    # computed once per operation (``locate(meta, mask)``, ``mask`` the state's capacity mask):
    # item ``i`` of level 0 by ``i``, element ``k`` of level ``l >= 1`` by its in-order number
    # ``u = ((2k + 1) << (l - 1)) - 1``. In that numbering a pair's parent sits halfway between
    # its two elements (``2**(l - 1)`` from each), so the carry and the stack refill step from
    # node to node by additions instead of recomputing each slot from (level, index); on the
    # in-order ring a node number is a slot modulo half the ring, and a hot loop that also
    # stores keeps the ring's mask in a register.
    locate: object         # locate(meta, mask) -> locator
    put_item: object       # put_item(vals, locator, i, partial)
    get_node: object       # get_node(vals, locator, u) -> the element with node number u (level >= 1)
    put_node: object       # put_node(vals, locator, u, partial)
    get_stack_at: object   # get_stack_at(vals, locator, i) -> the AMTA stack's entry i
    put_stack_at: object   # put_stack_at(vals, locator, i, partial)
    # Raw slots, for AMTA's loops over a block of items: an aligned block of 2**b items, its
    # nodes (node numbers start .. start + 2**b - 2) and a run of stack entries each take
    # consecutive slots (in order: no wrap, since half the ring is a multiple of the block),
    # so such a loop steps from a base slot instead of masking every access. A virtual tree's
    # items and stack are consecutive too, its nodes are not: it only builds blocks of one pair.
    item_slot: object      # item_slot(locator, i) -> the slot of item i
    node_slot: object      # node_slot(locator, u) -> the slot of node u
    stack_slot: object     # stack_slot(locator, i) -> the slot of the AMTA stack's entry i
    load_at: object        # load_at(vals, slot) -> partial
    store_at: object       # store_at(vals, slot, partial)
    fold_run: object       # fold_run(vals, slot, count) -> aggregate of count consecutive slots


def build_tree(ops, virtual: bool = False, in_order: bool = False, suffix: int = 0) -> Tree:
    """Helpers specialised to ``ops``; ``virtual`` lays levels out for a key-value store.

    ``in_order`` (ignored when ``virtual``) keeps the levels in one in-order ring
    (module docstring): ``new_tree``/``regrow`` then take and double the ring's
    size (``in_order_size_for``), and every level's base must stay 0. The stack
    gets ``suffix`` entries from ``SUFFIX`` on besides the levels' (AMTA's oldest block).
    """
    combine, load, store, alloc, jit = ops.combine, ops.load, ops.store, ops.alloc, ops.jit
    python_mode = runs_in_python(ops) or virtual
    int_buffer = _int_list if python_mode else _int_array
    # Slots are never negative: compiled, as unsigned integers, the loads and stores skip
    # numba's wraparound of negative indices (two instructions per access).
    slot = _as_is if python_mode else _unsigned
    level_count = helper_for(ops, level_count_for)

    def lay_out(meta, ring):
        # level 0 gets the whole ring, each level above half of the one below (at least 16)
        levels = level_count(ring)
        offset = 0
        for level in range(levels):
            size = ring if level == 0 else max(ring >> level, 16)
            meta[OFF + level] = offset
            meta[MASK + level] = size - 1
            offset += size
        meta[STACK] = offset
        return offset + MAX_LEVELS

    def lay_out_virtual(meta, ring):
        for level in range(MAX_LEVELS):
            meta[OFF + level] = level << VIRTUAL_SHIFT
            meta[MASK + level] = (1 << VIRTUAL_SHIFT) - 1
        meta[STACK] = MAX_LEVELS << VIRTUAL_SHIFT
        return 0

    def lay_out_in_order(meta, size):
        for level in range(MAX_LEVELS):
            meta[OFF + level] = 0
            meta[MASK + level] = size - 1
        meta[STACK] = size
        return size + SUFFIX + suffix

    in_order = in_order and not virtual
    layout = lay_out_virtual if virtual else jit(lay_out_in_order if in_order else lay_out)
    at = in_order_slot_of if python_mode else in_order_slot

    def new_tree(ring):
        meta = int_buffer(META_SIZE)
        total = layout(meta, ring)
        return alloc(total), meta

    def get(vals, meta, level, index):
        return load(vals, slot(meta[OFF + level] + (index & meta[MASK + level])))

    def put(vals, meta, level, index, value):
        store(vals, slot(meta[OFF + level] + (index & meta[MASK + level])), value)

    def fold_run(vals, first_slot, count):
        # the aggregate of the partials in count consecutive slots from first_slot, as four
        # interleaved runs when count allows (independent chains of combines, which the CPU
        # overlaps; associativity puts them back together in order)
        if count < 8 or count & 3:
            acc = load(vals, slot(first_slot))
            for k in range(1, count):
                acc = combine(acc, load(vals, slot(first_slot + k)))
            return acc
        quarter = count >> 2
        a = load(vals, slot(first_slot))
        b = load(vals, slot(first_slot + quarter))
        c = load(vals, slot(first_slot + 2 * quarter))
        d = load(vals, slot(first_slot + 3 * quarter))
        for k in range(1, quarter):
            a = combine(a, load(vals, slot(first_slot + k)))
            b = combine(b, load(vals, slot(first_slot + quarter + k)))
            c = combine(c, load(vals, slot(first_slot + 2 * quarter + k)))
            d = combine(d, load(vals, slot(first_slot + 3 * quarter + k)))
        return combine(combine(a, b), combine(c, d))

    fold_run = ops.jit_loop(fold_run)

    def get_in_order(vals, meta, level, index):
        if 0 < level < meta[FOLD]:
            # not kept: fold the element's items that are in the window (its run of the ring
            # is aligned, so it does not wrap); for the head element that is the value
            # repair_left would give it
            start = max(index << level, meta[LO])
            return fold_run(vals, at(meta[MASK], 0, start), ((index + 1) << level) - start)
        return load(vals, slot(at(meta[MASK], level, index)))

    def put_in_order(vals, meta, level, index, value):
        store(vals, slot(at(meta[MASK], level, index)), value)

    get = jit(get_in_order if in_order else get)
    put = jit(put_in_order if in_order else put)

    # Node-number accessors (see Tree). In order, the locator is the mask of half the ring:
    # the state's capacity mask is a quarter of the ring's size minus one (in_order_size_for).
    def locate_in_order(meta, mask):
        return 2 * mask + 1

    def put_item_in_order(vals, half_mask, i, value):
        store(vals, slot(i & half_mask), value)

    def get_node_in_order(vals, half_mask, u):
        return load(vals, slot(half_mask + 1 + (u & half_mask)))

    def put_node_in_order(vals, half_mask, u, value):
        store(vals, slot(half_mask + 1 + (u & half_mask)), value)

    def item_slot_in_order(half_mask, i):
        return i & half_mask

    def node_slot_in_order(half_mask, u):
        return half_mask + 1 + (u & half_mask)

    def stack_slot_in_order(half_mask, i):
        return 2 * half_mask + 2 + i

    def get_stack_at_in_order(vals, half_mask, i):
        return load(vals, slot(2 * half_mask + 2 + i))  # the stack follows the ring

    def put_stack_at_in_order(vals, half_mask, i, value):
        store(vals, slot(2 * half_mask + 2 + i), value)

    # Elsewhere (a virtual tree) the locator is meta and a node number is turned back into
    # (level, index): u + 1 = (2k + 1) * 2**(l - 1).
    def locate_by_meta(meta, mask):
        return meta

    def put_item_by_level(vals, meta, i, value):
        put(vals, meta, 0, i, value)

    def level_and_index(u):
        odd = u + 1
        level = 1
        while (odd & 1) == 0:
            odd >>= 1
            level += 1
        return level, odd >> 1

    level_and_index = jit(level_and_index)

    def item_slot_by_level(meta, i):
        return meta[OFF] + (i & meta[MASK])

    def node_slot_by_level(meta, u):
        level, index = level_and_index(u)
        return meta[OFF + level] + (index & meta[MASK + level])

    def stack_slot_by_level(meta, i):
        return meta[STACK] + i

    def get_node_by_level(vals, meta, u):
        level, index = level_and_index(u)
        return get(vals, meta, level, index)

    def put_node_by_level(vals, meta, u, value):
        level, index = level_and_index(u)
        put(vals, meta, level, index, value)

    def load_at(vals, at):
        return load(vals, slot(at))

    def store_at(vals, at, value):
        store(vals, slot(at), value)

    def get_stack(vals, meta, i):
        return load(vals, slot(meta[STACK] + i))

    get_stack = jit(get_stack)

    def put_stack(vals, meta, i, value):
        store(vals, slot(meta[STACK] + i), value)

    put_stack = jit(put_stack)

    def pair_agg(vals, meta, level, pair):
        left = meta[BASE + level] + 2 * pair
        lo = meta[LO + level]
        hi = meta[HI + level]
        if left >= lo:
            if left + 1 < hi:
                return combine(get(vals, meta, level, left), get(vals, meta, level, left + 1))
            return get(vals, meta, level, left)
        return get(vals, meta, level, left + 1)

    pair_agg = jit(pair_agg)

    def repair_left(vals, meta, h):
        # The head element of each level above 0 is the parent of the head pair below;
        # after evictions it may still cover evicted items, so rebuild it from below.
        for level in range(h - 1):
            parent = meta[LO + level + 1]
            put(vals, meta, level + 1, parent, pair_agg(vals, meta, level, parent))

    repair_left = jit(repair_left)

    def regrow(vals, meta, h, stack_size):
        new_meta = int_buffer(META_SIZE)
        for i in range(META_SIZE):
            new_meta[i] = meta[i]
        # doubles level 0's ring (per-level layout) or the whole ring (in order)
        total = layout(new_meta, 2 * (meta[MASK] + 1))
        new_vals = alloc(total)
        for level in range(h):
            if 0 < level < meta[FOLD]:
                continue  # not kept (folded from the items)
            for index in range(meta[LO + level], meta[HI + level]):
                put(new_vals, new_meta, level, index, get(vals, meta, level, index))
        for i in range(stack_size):
            put_stack(new_vals, new_meta, i, get_stack(vals, meta, i))
        return new_vals, new_meta

    regrow = ops.jit_call(regrow)

    def removable(vals, meta, h, forest, total, removed, wsp):
        # Root-to-leaf search for the oldest item that must stay (the paper's Algorithm 2,
        # one wsp test per level). Trees are tried oldest first: the top pair, then (forest
        # only) the tail pair of each lower level. `removed` is what is already evicted.
        level = h - 1
        start = meta[LO + level]
        stop = meta[HI + level]
        while True:
            index = start
            while index < stop:
                candidate = combine(removed, get(vals, meta, level, index))
                if not wsp(total, candidate):
                    break
                removed = candidate
                index += 1
            if index < stop:  # element `index` must (partly) stay: search its children
                if level == 0:
                    return index - meta[LO]
                level -= 1
                left = meta[BASE + level] + 2 * index
                start = max(meta[LO + level], left)
                stop = min(meta[HI + level], left + 2)
            elif forest and level > 0:  # this whole tree goes: try the next (younger) one
                level -= 1
                hi = meta[HI + level]
                base = meta[BASE + level]
                start = max(meta[LO + level], base + 2 * ((hi - 1 - base) >> 1))
                stop = hi
            else:
                return meta[HI] - meta[LO]

    removable = jit(removable)

    if in_order:
        accessors = tuple(jit(f) for f in (locate_in_order, put_item_in_order,
                                           get_node_in_order, put_node_in_order, get_stack_at_in_order,
                                           put_stack_at_in_order, item_slot_in_order, node_slot_in_order,
                                           stack_slot_in_order))
    else:
        accessors = (tuple(jit(f) for f in (locate_by_meta, put_item_by_level,
                                            get_node_by_level, put_node_by_level)) + (get_stack, put_stack)
                     + tuple(jit(f) for f in (item_slot_by_level, node_slot_by_level, stack_slot_by_level)))
    accessors += (jit(load_at), jit(store_at), fold_run)
    return Tree(jit(new_tree), get, put, get_stack, put_stack, pair_agg, repair_left, regrow, removable,
                *accessors)


@nb.njit(cache=True)
def capacity_of(ring):
    """Usable window size (``mask + 1`` in the state) of a tree whose level 0 ring is ``ring``."""
    return ring * 3 // 4
