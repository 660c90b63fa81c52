"""The FiBA tree (papers 004 and FiBA-2019) in flat arrays: one source for Python and numba.

A node pool keeps every node in three buffers, so the same code runs over
Python lists (any monoid, any comparable times) and, compiled, over numpy
arrays (float64 or int64 times):

* ``keys``: node ``x``'s times in slots ``x*E .. x*E+W-1`` (``W = 2*mu``:
  ``2*mu - 1`` entries plus one for a transient overflow; ``E = W + 1``);
* ``parts``: its values in the same slots, and its aggregate in slot ``x*E + W``;
  an internal node on one spine also keeps its *local* aggregate (its kind's fold
  without the parent's term) in the overflow slot ``x*E + W - 1``, which holds an
  entry only for the moment between an insert that overflows the node and its split;
* ``ints``: a header (root, fingers, pool counters, scratch), then one record
  of ``S`` ints per node (entry count, parent, leaf flag, spine flags, the
  count of entries its aggregate covers, child pointers), then the free list.

Three buffers rather than one per field because every call that numba does
not inline passes each array as seven machine words: with a dozen buffers
the in-order round spent as long passing arguments as working.

Aggregates are location-sensitive as in FiBA (``variant="finger"``): a node
off the spines stores its *up* aggregate (its whole subtree), the root its
*inner* aggregate (everything but its first and last child), a left-spine
node its *left* aggregate (its subtree but the first child, and everything
to its right up to the root's inner part), a right-spine node the mirror
image. ``query()`` is then ``left(leftFinger) + inner(root) +
right(rightFinger)``: O(1). ``variant="classic"`` stores *up* everywhere and
searches from the root. With the local aggregates, an out-of-order insert that
changes no spine node's entries repairs the spine below the node where its
upward repair stops with one combine per level (the parent's aggregate and the
child's local one) instead of a fold of each node's entries and children. Each node also stores the count of entries its
aggregate covers, so the window size comes out of the same three nodes.

Freed subtrees go onto a deferred free list: freeing is O(1) per subtree,
and an allocation that pops a node pushes that node's children.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import numba as nb
import numpy as np
from llvmlite import ir
from numba.core import cgutils
from numba.extending import intrinsic

from ..layout import PYTHON

NIL = -1
#: Nodes kept free beyond a batch: a split cascade makes at most one node per level plus a root.
MARGIN = 72
#: Scratch layout: boundary triples of a bulk evict, then (at ``_RQ``) the range-query stack.
_LEVELS = 64
_RQ = 4 * _LEVELS

# Buffer indices in the bufs tuple.
KEYS, PARTS, INTS = range(3)
# Header slots of ``ints``.
ROOT, LF, RF, FRESH, NFREE, CAP = range(6)
#: Where the scratch starts in ``ints``.
SCR = 8
#: Where the node records start in ``ints``.
HEAD = SCR + _RQ + 4 * _LEVELS
# Fields of a node record: node x's field F is ``ints[x * S + F]`` (the offsets include HEAD);
# its i-th child is ``ints[x * S + KID + i]``.
NK, PAR, LEAF, LSP, RSP, CNT, KID = (HEAD + k for k in range(7))
# Aggregate kinds.
UP, LEFT, RIGHT, INNER = 0, 1, 2, 3


def slots_per_node(mu: int) -> int:
    """``E``: key and partial slots per node (2*mu entry slots, then the aggregate's)."""
    return 2 * mu + 1


def ints_per_node(mu: int) -> int:
    """``S``: ints per node record (six fields, then 2*mu + 1 child slots)."""
    return 6 + 2 * mu + 1


def free_list_start(ints, mu: int) -> int:
    """Where the free list starts in ``ints`` (after the records of every node of the pool)."""
    return HEAD + ints[CAP] * ints_per_node(mu)


@nb.njit(cache=True)
def _ints_np(n):
    return np.zeros(n, np.int64)


@nb.njit(cache=True)
def _times_np(n):
    return np.zeros(n, np.float64)


@nb.njit(cache=True)
def _times_np_int(n):
    return np.zeros(n, np.int64)


def _never_inlined(fn):
    """Compiled without the runtime and never inlined: a rare path called from the flat code.

    A function compiled flat (``ops.jit_flat``, LLVM ``alwaysinline``) passes that flag on
    to the functions it calls, so its rare paths would be inlined into the kernel's loop too
    and crowd its registers. numba marks a function ``noinline`` only when it carries debug
    information, hence ``debug=True`` (with bounds checks and lifetime extension kept off).
    """
    from .. import jitcache

    return jitcache.njit(fn, _nrt=False, forceinline=False, debug=True, boundscheck=False,
                         _dbg_extend_lifetimes=False)


def _prefetch_slot(context, builder, array_type, array, index):
    if array_type.ndim != 1:
        return  # rows of vector partials: no hint
    data = context.make_array(array_type)(context, builder, array).data
    address = builder.bitcast(builder.gep(data, [index]), ir.IntType(8).as_pointer())
    i32 = ir.IntType(32)
    prefetch = cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(ir.VoidType(), [address.type, i32, i32, i32]), "llvm.prefetch.p0")
    builder.call(prefetch, [address, i32(0), i32(3), i32(1)])  # a read, kept in every cache level


@intrinsic
def _prefetch(typingctx, buffer, index):
    """Ask for slot ``index`` of a 1-D buffer (or of every array of a tuple of them) to be cached.

    A hint, never a fault: the in-order evict names the node it will read a round or two later.
    """
    def codegen(context, builder, signature, args):
        buffer_type = signature.args[0]
        if isinstance(buffer_type, nb.types.BaseTuple):
            for k, array_type in enumerate(buffer_type.types):
                _prefetch_slot(context, builder, array_type, builder.extract_value(args[0], k), args[1])
        else:
            _prefetch_slot(context, builder, buffer_type, args[0], args[1])
        return context.get_dummy_value()

    return nb.types.void(buffer, index), codegen


def _no_prefetch(buffer, index):
    pass


def _ints_py(n):
    return [0] * n


def _times_py(n):
    return [None] * n


class TreeFuncs(NamedTuple):
    """The FiBA operations on ``(bufs, st)``; ``st = (limit, 0, size)`` (see :func:`build_tree`)."""

    init: Callable
    insert: Callable  # (b, st, partial) -> st: append at youngest time + 1 (for the FIFO kernels)
    evict: Callable
    query: Callable
    grow: Callable
    insert_at: Callable  # (b, st, t, partial) -> st
    evict_upto: Callable  # (b, st, t) -> st: drop every entry with time <= t
    bulk_insert: Callable  # (b, st, times, partials, m) -> st: times sorted (equal ones combine)
    range_query: Callable  # (b, st, lo, hi, lo_open) -> partial of entries lo <(=) time <= hi
    reserve: Callable  # (b, st, m) -> (b, st): room for m more entries
    oldest: Callable
    youngest: Callable


def build_tree(ops, mu: int, finger: bool, bulk: bool, times: str = "float64") -> TreeFuncs:
    """The FiBA operations for min arity ``mu``, specialised to ``ops``.

    Compiled, times are kept as ``times`` ("float64" or "int64": int64 keeps
    datetime64 nanoseconds exact); in Python mode they are any comparable objects.
    """
    combine, identity, load, store, alloc = ops.combine, ops.identity, ops.load, ops.store, ops.alloc
    python = ops.alloc is PYTHON.alloc
    # ``nrt``: functions that allocate buffers. ``flat``: everything small or on the in-order
    # round (append at the right finger, evict at the left finger, query), compiled without
    # the runtime and inlined by LLVM into its callers: the kernel's loop makes no call in the
    # common case, and a rare path makes no call inside. ``apart``: the rare paths (splits,
    # underflows, out-of-order inserts, bulk operations), each one real call, never inlined.
    nrt = ops.jit_call
    if python:
        flat = apart = ops.jit
    else:
        probe = alloc(1)
        vector = isinstance(probe, np.ndarray) and probe.ndim == 2  # combine allocates: keep the runtime
        if vector:
            # a combine allocates (and costs more than a call): everything out of line, which
            # also keeps compiling each function once instead of once per call site
            flat = apart = ops.jit_call
        else:
            # Reference counting cost ~30 ns per buffer access in the tree's branchy loops, and
            # each call passes the three buffers as 21 words; with scalar partials nothing here
            # allocates, so the tree runs without the runtime and mostly without calls.
            flat = ops.jit_flat
            apart = _never_inlined
    if python:
        ialloc, talloc = _ints_py, _times_py
    else:
        ialloc, talloc = _ints_np, (_times_np_int if times == "int64" else _times_np)
    # Every index into the buffers goes through ``u``: unsigned when compiled, so numba does not
    # test it for a negative value (the in-order round at window 4096 ran 1.75x faster, from
    # about 0.8x to 1.4x of the C++ reference). Every loop over a node's entries or children
    # calls ``scalar`` first: LLVM vectorised them, and the setup cost more than the few items
    # they touch (the round ran about 1.3x slower).
    u, scalar = ops.index, ops.one_at_a_time
    prefetch = _no_prefetch if python else _prefetch
    W = 2 * mu
    LOC = W - 1  # an internal one-spine node's local aggregate (the overflow slot)
    E = slots_per_node(mu)
    S = ints_per_node(mu)
    MAXK = 2 * mu - 1  # entries of a full node (arity 2*mu)
    MINK = mu - 1  # entries of a minimal non-root node (arity mu)
    FINGER = bool(finger)
    # With a commutative combine, an insert's new value is folded into each aggregate that
    # covers it (one combine per node, see repair_commutative) instead of refolding the nodes.
    COMMUTATIVE = bool(ops.commutative)
    # Vector partials (sketches) with an in-place combine: the in-order round's folds write
    # into the aggregate's row instead of allocating a new partial for each combine.
    into = ops.combine_into

    if into is None:
        def fold_in(parts, slot, v):
            """The partial at ``slot`` becomes itself (+) v."""
            store(parts, slot, combine(load(parts, slot), v))
    else:
        def fold_in(parts, slot, v):
            row = load(parts, slot)
            into(row, row, v)

    fold_in = flat(fold_in)

    # ------------------------------------------------------------ pool
    def new_bufs(cap):
        ints = ialloc(HEAD + cap * (S + 1))
        ints[CAP] = cap
        return talloc(cap * E), alloc(cap * E), ints

    new_bufs = nrt(new_bufs)

    def alloc_node(b, is_leaf):
        ints = b[INTS]
        nfree = ints[NFREE]
        if nfree > 0:
            fl = HEAD + ints[CAP] * S
            x = ints[u(fl + nfree - 1)]
            nfree -= 1
            if ints[u(x * S + LEAF)] == 0:  # deferred freeing: the children go on the list now
                for i in range(ints[u(x * S + NK)] + 1):
                    scalar(i)
                    ints[u(fl + nfree)] = ints[u(x * S + KID + i)]
                    nfree += 1
            ints[NFREE] = nfree
        else:
            x = ints[FRESH]
            ints[FRESH] = x + 1
        r = x * S
        ints[u(r + NK)] = 0
        ints[u(r + PAR)] = NIL
        ints[u(r + LEAF)] = is_leaf
        ints[u(r + LSP)] = 0
        ints[u(r + RSP)] = 0
        ints[u(r + CNT)] = 0
        return x

    alloc_node = flat(alloc_node)

    def free_tree(b, x):
        # O(1): the subtree's nodes are reclaimed one by one as allocations pop them
        ints = b[INTS]
        ints[u(HEAD + ints[CAP] * S + ints[NFREE])] = x
        ints[NFREE] += 1

    free_tree = flat(free_tree)

    def free_node(b, x):
        # a node whose children live on elsewhere: free it alone
        ints = b[INTS]
        ints[u(x * S + LEAF)] = 1
        ints[u(x * S + NK)] = 0
        free_tree(b, x)

    free_node = flat(free_node)

    def detach_last(b, p):
        # drop p's last child pointer; p is garbage about to be freed with its subtree
        ints = b[INTS]
        if ints[u(p * S + NK)] == 0:
            ints[u(p * S + LEAF)] = 1
        else:
            ints[u(p * S + NK)] -= 1

    detach_last = flat(detach_last)

    # ------------------------------------------------------------ aggregates
    def kind(b, x):
        ints = b[INTS]
        if x == ints[ROOT]:
            return INNER if FINGER else UP
        if not FINGER:
            return UP
        left, right = ints[u(x * S + LSP)], ints[u(x * S + RSP)]
        if left != 0:
            return INNER if right != 0 else LEFT
        return RIGHT if right != 0 else UP

    kind = flat(kind)

    def refold(b, x, k, recount, delta):
        """Refold x's aggregate of kind k; its count is refolded too (``recount``) or moves by ``delta``."""
        parts, ints = b[PARTS], b[INTS]
        r = x * S
        n = ints[u(r + NK)]
        p = ints[u(r + PAR)]
        parent_term = p != NIL and p != ints[ROOT]
        acc = identity
        c = 0
        if ints[u(r + LEAF)] != 0:
            if k == RIGHT and parent_term:  # older than the whole node
                acc = load(parts, u(p * E + W))
                c = ints[u(p * S + CNT)]
            for i in range(n):
                scalar(i)
                acc = combine(acc, load(parts, u(x * E + i)))
            c += n
        else:
            lo_child = 1 if (k == INNER or k == LEFT) else 0
            hi_child = n - 1 if (k == INNER or k == RIGHT) else n
            for i in range(n + 1):
                scalar(i)
                if lo_child <= i <= hi_child:
                    ch = ints[u(r + KID + i)]
                    acc = combine(acc, load(parts, u(ch * E + W)))
                    if recount:
                        c += ints[u(ch * S + CNT)]
                if i < n:
                    acc = combine(acc, load(parts, u(x * E + i)))
                    c += 1
            if k == RIGHT or k == LEFT:
                store(parts, u(x * E + LOC), acc)  # the local aggregate (see walk_down_local)
                if parent_term:
                    if k == RIGHT:  # older than the whole node
                        acc = combine(load(parts, u(p * E + W)), acc)
                    else:  # younger than the whole node
                        acc = combine(acc, load(parts, u(p * E + W)))
                    if recount:
                        c += ints[u(p * S + CNT)]
        if k == LEFT and parent_term and ints[u(r + LEAF)] != 0:  # younger than the whole leaf
            acc = combine(acc, load(parts, u(p * E + W)))
            c += ints[u(p * S + CNT)]
        store(parts, u(x * E + W), acc)
        if recount:
            ints[u(r + CNT)] = c
        else:
            ints[u(r + CNT)] += delta

    refold = flat(refold)

    def refold_up(b, x, delta):
        """``refold(b, x, UP, False, delta)`` for an internal x: children and entries alternate."""
        parts, ints = b[PARTS], b[INTS]
        r = x * S
        n = ints[u(r + NK)]
        acc = load(parts, u(ints[u(r + KID)] * E + W))
        for i in range(n):
            scalar(i)
            acc = combine(acc, load(parts, u(x * E + i)))
            acc = combine(acc, load(parts, u(ints[u(r + KID + i + 1)] * E + W)))
        store(parts, u(x * E + W), acc)
        ints[u(r + CNT)] += delta

    refold_up = flat(refold_up)

    def recompute(b, x):
        refold(b, x, kind(b, x), True, 0)

    # The in-order paths get inlined copies, the rare structural paths the out-of-line ones.
    recompute = flat(recompute)

    def recompute_if_up(b, x):
        if kind(b, x) == UP:
            recompute(b, x)

    recompute_if_up = flat(recompute_if_up)

    def walk_down(b, x, right):
        ints = b[INTS]
        while ints[u(x * S + LEAF)] == 0:
            x = ints[u(x * S + KID + (ints[u(x * S + NK)] if right else 0))]
            recompute(b, x)

    walk_down = flat(walk_down)

    def walk_down_local(b, x, right, delta):
        """The spine below x after x's aggregate changed by ``delta`` entries, none below it changed.

        Each internal spine node's aggregate is its local aggregate and its parent's (one
        combine) and its count moves by ``delta``; the finger leaf is refolded. x is a
        one-spine node below the root (no spine node under the root includes the root).
        """
        parts, ints = b[PARTS], b[INTS]
        while ints[u(x * S + LEAF)] == 0:
            c = ints[u(x * S + KID + (ints[u(x * S + NK)] if right else 0))]
            if ints[u(c * S + LEAF)] != 0 or ints[u(c * S + LSP)] == ints[u(c * S + RSP)]:
                recompute(b, c)  # the finger leaf (or a node on both spines, never here in practice)
                walk_down(b, c, right)
                return
            if right:
                store(parts, u(c * E + W), combine(load(parts, u(x * E + W)), load(parts, u(c * E + LOC))))
            else:
                store(parts, u(c * E + W), combine(load(parts, u(c * E + LOC)), load(parts, u(x * E + W))))
            ints[u(c * S + CNT)] += delta
            x = c

    walk_down_local = flat(walk_down_local)

    def repair(b, top, hit_left, hit_right):
        """Up-aggregates bottom-up from ``top`` to a spine node or the root, then spines top-down."""
        ints = b[INTS]
        root = ints[ROOT]
        x = top
        recompute(b, x)
        while x != root and kind(b, x) == UP:
            x = ints[u(x * S + PAR)]
            recompute(b, x)
        if FINGER:
            if (ints[u(x * S + LSP)] != 0 and x != root) or (hit_left != 0 and x == root):
                walk_down(b, x, False)
            if (ints[u(x * S + RSP)] != 0 and x != root) or (hit_right != 0 and x == root):
                walk_down(b, x, True)

    repair_apart = apart(repair)  # the flat code's rare call
    repair = flat(repair)

    def repair_local(b, top, delta):
        """``repair`` when no spine node changed below the node where the upward repair stops.

        ``top`` is refolded in full; every node above it on the way (and, through
        walk_down_local, on the spine below the stop) holds ``delta`` more entries
        than before, so their counts move by ``delta`` instead of being refolded.
        """
        ints = b[INTS]
        root = ints[ROOT]
        x = top
        k = kind(b, x)
        if x == root or k != UP:
            recount = True
        else:
            refold(b, x, UP, True, 0)
            recount = False
            x = ints[u(x * S + PAR)]
            k = kind(b, x)
            while x != root and k == UP:
                refold_up(b, x, delta)
                x = ints[u(x * S + PAR)]
                k = kind(b, x)
        if not FINGER or x == root:
            refold(b, x, k, recount, delta)
            return
        if k == INNER:  # on both spines below the root (transiently): the general repair
            repair(b, x, 0, 0)
            return
        refold(b, x, k, recount, delta)
        walk_down_local(b, x, k == RIGHT, delta)

    repair_local = flat(repair_local)

    def repair_commutative(b, top, v):
        """``repair_local(b, top, 1)`` for a commutative combine, after a new entry of value v.

        Every aggregate that covers the new entry covers it once, whatever the order of its
        terms: each is combined with v and its count grows by one. That is ``top`` and the
        nodes above it up to the first spine node or the root (whose entries and children hold
        everything they held, and v), that spine node's local aggregate, and the aggregates of
        the spine nodes below it (each holds its parent's).
        """
        parts, ints = b[PARTS], b[INTS]
        root = ints[ROOT]
        x = top
        while True:
            k = kind(b, x)
            store(parts, u(x * E + W), combine(load(parts, u(x * E + W)), v))
            ints[u(x * S + CNT)] += 1
            if x == root:
                return
            if k != UP:
                break
            x = ints[u(x * S + PAR)]
        if k == INNER:  # on both spines below the root (transiently): the general repair
            repair(b, x, 0, 0)
            return
        if ints[u(x * S + LEAF)] != 0:
            return  # a finger: no spine below
        store(parts, u(x * E + LOC), combine(load(parts, u(x * E + LOC)), v))
        right = k == RIGHT
        while ints[u(x * S + LEAF)] == 0:
            x = ints[u(x * S + KID + (ints[u(x * S + NK)] if right else 0))]
            if ints[u(x * S + LSP)] == ints[u(x * S + RSP)]:
                return  # on both spines: its aggregate holds no parent's (never here in practice)
            store(parts, u(x * E + W), combine(load(parts, u(x * E + W)), v))
            ints[u(x * S + CNT)] += 1

    repair_commutative = flat(repair_commutative)

    def size_of(b):
        ints = b[INTS]
        root = ints[ROOT]
        if ints[u(root * S + LEAF)] != 0:
            return ints[u(root * S + NK)]
        if not FINGER:
            return ints[u(root * S + CNT)]
        return ints[u(ints[LF] * S + CNT)] + ints[u(root * S + CNT)] + ints[u(ints[RF] * S + CNT)]

    size_of = flat(size_of)

    def state(b):
        # Every non-root node holds at least MINK entries, so a tree of `size` entries has at most
        # size / MINK + 1 nodes; a node is taken from the fresh part of the pool only when the
        # free list is empty, i.e. when every node below it is in the tree.
        return ((b[INTS][CAP] - MARGIN) * MINK, 0, size_of(b))

    state = flat(state)

    def query(b, st):  # flat: O(1)
        parts, ints = b[PARTS], b[INTS]
        root = ints[ROOT]
        if not FINGER or ints[u(root * S + LEAF)] != 0:
            return load(parts, u(root * E + W))
        return combine(combine(load(parts, u(ints[LF] * E + W)), load(parts, u(root * E + W))),
                       load(parts, u(ints[RF] * E + W)))

    if into is not None and FINGER:
        def query(b, st):  # noqa: F811 - the same, folded into a row instead of allocated
            # The answer goes to the root's overflow slot: an internal root keeps no local
            # aggregate and holds an entry there only inside an insert. Like the FIFO
            # algorithms' in-place queries, the row is overwritten by the next query.
            parts, ints = b[PARTS], b[INTS]
            root = ints[ROOT]
            if ints[u(root * S + LEAF)] != 0:
                return load(parts, u(root * E + W))
            answer = load(parts, u(root * E + LOC))
            into(answer, load(parts, u(ints[LF] * E + W)), load(parts, u(root * E + W)))
            into(answer, answer, load(parts, u(ints[RF] * E + W)))
            return answer

    # ------------------------------------------------------------ small helpers
    def child_index(b, p, x):
        ints = b[INTS]
        i = 0
        while ints[u(p * S + KID + i)] != x:
            i += 1
        return i

    child_index = flat(child_index)

    def set_child(b, p, i, c):
        ints = b[INTS]
        ints[u(p * S + KID + i)] = c
        ints[u(c * S + PAR)] = p

    set_child = flat(set_child)

    def copy_entry(b, dst, src):
        b[KEYS][u(dst)] = b[KEYS][u(src)]
        store(b[PARTS], u(dst), load(b[PARTS], u(src)))

    copy_entry = flat(copy_entry)

    def insert_entry(b, x, i, t, v, right_child):
        """Put (t, v) at index i of x, with ``right_child`` right of it when x is internal."""
        ints = b[INTS]
        n = ints[u(x * S + NK)]
        for j in range(n, i, -1):
            scalar(j)
            copy_entry(b, x * E + j, x * E + j - 1)
        b[KEYS][u(x * E + i)] = t
        store(b[PARTS], u(x * E + i), v)
        if ints[u(x * S + LEAF)] == 0:
            for j in range(n + 1, i + 1, -1):
                scalar(j)
                ints[u(x * S + KID + j)] = ints[u(x * S + KID + j - 1)]
            set_child(b, x, i + 1, right_child)
        ints[u(x * S + NK)] = n + 1

    insert_entry = flat(insert_entry)

    def shift_left(b, x, k):
        """Drop the first k entries (and, if internal, the first k children) of x."""
        ints = b[INTS]
        n = ints[u(x * S + NK)]
        for j in range(n - k):
            scalar(j)
            copy_entry(b, x * E + j, x * E + j + k)
        if ints[u(x * S + LEAF)] == 0:
            for j in range(n - k + 1):
                scalar(j)
                ints[u(x * S + KID + j)] = ints[u(x * S + KID + j + k)]
        ints[u(x * S + NK)] = n - k

    shift_left = flat(shift_left)

    def mark_left_chain(b, x):
        """Flag the first-child chain below x as left spine; its leaf is the left finger."""
        ints = b[INTS]
        while ints[u(x * S + LEAF)] == 0:
            x = ints[u(x * S + KID)]
            ints[u(x * S + LSP)] = 1
        ints[LF] = x

    mark_left_chain = flat(mark_left_chain)

    def new_root_above(b, x):
        ints = b[INTS]
        r = alloc_node(b, 0)
        set_child(b, r, 0, x)
        ints[ROOT] = r
        ints[u(x * S + LSP)] = 1
        ints[u(x * S + RSP)] = 1
        return r

    new_root_above = flat(new_root_above)

    def collapse_root(b):
        """Lower the height while the root is internal with a single child."""
        ints = b[INTS]
        root = ints[ROOT]
        while ints[u(root * S + LEAF)] == 0 and ints[u(root * S + NK)] == 0:
            child = ints[u(root * S + KID)]
            free_node(b, root)
            root = child
            ints[u(root * S + PAR)] = NIL
            ints[u(root * S + LSP)] = 0
            ints[u(root * S + RSP)] = 0
            ints[ROOT] = root
        if ints[u(root * S + LEAF)] != 0:
            ints[LF] = root
            ints[RF] = root

    collapse_root = apart(collapse_root)

    # ------------------------------------------------------------ single insert
    def find_start(b, t):
        """Finger search: the lowest spine node whose subtree's time range holds t (or the root)."""
        keys, ints = b[KEYS], b[INTS]
        root = ints[ROOT]
        if not FINGER or ints[u(root * S + LEAF)] != 0:
            return root
        if t < keys[u(root * E)]:
            x = ints[LF]
            while x != root and keys[u(x * E + ints[u(x * S + NK)] - 1)] < t:
                x = ints[u(x * S + PAR)]
            return x
        if t > keys[u(root * E + ints[u(root * S + NK)] - 1)]:
            x = ints[RF]
            while x != root and t < keys[u(x * E)]:
                x = ints[u(x * S + PAR)]
            return x
        return root

    find_start = flat(find_start)

    def split(b, x):
        """Split an over-full x (2*mu entries) in two; returns the new right node."""
        keys, parts, ints = b[KEYS], b[PARTS], b[INTS]
        if x == ints[ROOT]:
            new_root_above(b, x)
        p = ints[u(x * S + PAR)]
        y = alloc_node(b, ints[u(x * S + LEAF)])
        n = ints[u(x * S + NK)]
        for j in range(mu + 1, n):
            scalar(j)
            copy_entry(b, y * E + j - mu - 1, x * E + j)
        if ints[u(x * S + LEAF)] == 0:
            for j in range(mu + 1, n + 1):
                scalar(j)
                set_child(b, y, j - mu - 1, ints[u(x * S + KID + j)])
        ints[u(y * S + NK)] = n - mu - 1
        ints[u(x * S + NK)] = mu
        ints[u(y * S + RSP)] = ints[u(x * S + RSP)]
        ints[u(x * S + RSP)] = 0
        if ints[u(y * S + RSP)] != 0 and ints[u(y * S + LEAF)] != 0:
            ints[RF] = y
        insert_entry(b, p, child_index(b, p, x), keys[u(x * E + mu)], load(parts, u(x * E + mu)), y)
        recompute_if_up(b, x)
        recompute_if_up(b, y)
        return y

    split = flat(split)

    def split_right_finger(b, x):
        """Split the over-full right finger x after an append; repair only what changed.

        When the parent p (a right-spine node or the root) has room, p's aggregate ends where
        x's subtree began: x's first half and the separator now follow it, so p's aggregate is
        extended by two combines (in the order a recomputation would fold them), and only the
        new right finger is recomputed. Otherwise the general cascade runs.
        """
        parts, ints = b[PARTS], b[INTS]
        p = ints[u(x * S + PAR)]
        simple = False
        if p != NIL and 1 <= ints[u(p * S + NK)] < MAXK:
            k = kind(b, p)
            simple = k == RIGHT or k == INNER
        y = split(b, x)
        if simple:
            sep = ints[u(p * S + NK)] - 1  # the separator went to the end of p
            acc = combine(load(parts, u(p * E + W)), load(parts, u(x * E + W)))
            store(parts, u(p * E + W), combine(acc, load(parts, u(p * E + sep))))
            if k == RIGHT:  # its local aggregate grows the same way
                acc = combine(load(parts, u(p * E + LOC)), load(parts, u(x * E + W)))
                store(parts, u(p * E + LOC), combine(acc, load(parts, u(p * E + sep))))
            ints[u(p * S + CNT)] += ints[u(x * S + CNT)] + 1
            recompute(b, y)
            return
        hit_left = ints[u(x * S + LSP)]
        hit_right = ints[u(y * S + RSP)]
        x = ints[u(x * S + PAR)]
        while ints[u(x * S + NK)] > MAXK:
            y = split(b, x)
            hit_left |= ints[u(x * S + LSP)]
            hit_right |= ints[u(y * S + RSP)]
            x = ints[u(x * S + PAR)]
        repair(b, x, hit_left, hit_right)

    split_right_finger = apart(split_right_finger)

    def append(b, x, t, v):
        """Append (t, v) to the right finger x, t younger than every entry (the in-order insert)."""
        parts, ints = b[PARTS], b[INTS]
        n = ints[u(x * S + NK)]
        b[KEYS][u(x * E + n)] = t
        store(parts, u(x * E + n), v)
        ints[u(x * S + NK)] = n + 1
        if n + 1 > MAXK:
            split_right_finger(b, x)
            return
        k = kind(b, x)
        if k == RIGHT or k == INNER:
            # the aggregate ends with the finger's youngest value: extend it, O(1)
            fold_in(parts, u(x * E + W), v)
            ints[u(x * S + CNT)] += 1
        else:
            repair_apart(b, x, 0, 1)

    append = flat(append)

    def insert_at(b, st, t, v):
        keys, ints = b[KEYS], b[INTS]
        rf = ints[RF]
        last = ints[u(rf * S + NK)] - 1
        if FINGER and (last < 0 or keys[u(rf * E + last)] < t):  # younger than every entry
            append(b, rf, t, v)
            return (st[0], st[1], st[2] + 1)
        return insert_inside(b, st, t, v)

    def insert_inside(b, st, t, v):
        """Insert at a time that is not younger than every entry (or any time, classic)."""
        keys, parts, ints = b[KEYS], b[PARTS], b[INTS]
        x = find_start(b, t)
        while True:
            n = ints[u(x * S + NK)]
            i = 0
            while i < n and keys[u(x * E + i)] < t:
                i += 1
            if i < n and keys[u(x * E + i)] == t:  # an existing time: old (+) new, in place
                store(parts, u(x * E + i), combine(load(parts, u(x * E + i)), v))
                repair_local(b, x, 0)  # x's entries changed, no spine node's below it
                return st  # as many entries as before (the pool's limit moves only in grow)
            if ints[u(x * S + LEAF)] != 0:
                break
            x = ints[u(x * S + KID + i)]
        insert_entry(b, x, i, t, v, NIL)
        hit_left = 0
        hit_right = 0
        while ints[u(x * S + NK)] > MAXK:
            y = split(b, x)
            hit_left |= ints[u(x * S + LSP)]
            hit_right |= ints[u(y * S + RSP)]
            x = ints[u(x * S + PAR)]
        if hit_left == 0 and hit_right == 0:
            # no split reached a spine: the spines below the repair are as they were
            if COMMUTATIVE:
                repair_commutative(b, x, v)
            else:
                repair_local(b, x, 1)
        else:
            repair(b, x, hit_left, hit_right)
        return (st[0], st[1], st[2] + 1)  # one entry more

    insert_inside = flat(insert_inside)
    insert_at = flat(insert_at)

    def youngest(b):
        ints = b[INTS]
        rf = ints[RF]
        return b[KEYS][u(rf * E + ints[u(rf * S + NK)] - 1)]

    youngest = flat(youngest)

    def oldest(b):
        return b[KEYS][u(b[INTS][LF] * E)]

    oldest = flat(oldest)

    def insert(b, st, v):
        t = youngest(b) + 1 if st[2] > 0 else 0 * st[2]
        return insert_at(b, st, t, v)

    # ------------------------------------------------------------ single evict
    def rebalance_after_evict(b, x):
        """Fix underflows upward by one-entry moves or merges; returns (top, hit_left, hit_right)."""
        keys, parts, ints = b[KEYS], b[PARTS], b[INTS]
        hit_left = ints[u(x * S + LSP)]
        hit_right = ints[u(x * S + RSP)]
        while x != ints[ROOT] and ints[u(x * S + NK)] < MINK:
            p = ints[u(x * S + PAR)]
            i = child_index(b, p, x)
            np_ = ints[u(p * S + NK)]
            if i < np_:
                left, right, sep, sib = x, ints[u(p * S + KID + i + 1)], i, ints[u(p * S + KID + i + 1)]
            else:
                left, right, sep, sib = ints[u(p * S + KID + i - 1)], x, i - 1, ints[u(p * S + KID + i - 1)]
            hit_left |= ints[u(sib * S + LSP)]
            hit_right |= ints[u(sib * S + RSP)]
            if ints[u(sib * S + NK)] <= MINK:  # merge right into left through the separator
                nl = ints[u(left * S + NK)]
                nr = ints[u(right * S + NK)]
                copy_entry(b, left * E + nl, p * E + sep)
                for j in range(nr):
                    scalar(j)
                    copy_entry(b, left * E + nl + 1 + j, right * E + j)
                if ints[u(left * S + LEAF)] == 0:
                    for j in range(nr + 1):
                        scalar(j)
                        set_child(b, left, nl + 1 + j, ints[u(right * S + KID + j)])
                ints[u(left * S + NK)] = nl + 1 + nr
                if ints[u(right * S + RSP)] != 0:
                    ints[u(left * S + RSP)] = 1
                    if ints[u(left * S + LEAF)] != 0:
                        ints[RF] = left
                for j in range(sep + 1, np_):  # drop separator and right from p
                    scalar(j)
                    copy_entry(b, p * E + j - 1, p * E + j)
                for j in range(sep + 2, np_ + 1):
                    scalar(j)
                    ints[u(p * S + KID + j - 1)] = ints[u(p * S + KID + j)]
                ints[u(p * S + NK)] = np_ - 1
                free_node(b, right)
                if p == ints[ROOT] and np_ == 1:
                    collapse_root(b)
                    return ints[ROOT], 1, 1
                recompute_if_up(b, left)
            elif sib == right:  # borrow right's first entry through the separator
                insert_entry(b, x, ints[u(x * S + NK)], keys[u(p * E + sep)], load(parts, u(p * E + sep)),
                             ints[u(right * S + KID)])
                copy_entry(b, p * E + sep, right * E)
                shift_left(b, right, 1)
                recompute_if_up(b, x)
                recompute_if_up(b, right)
            else:  # borrow left's last entry through the separator
                nl = ints[u(left * S + NK)]
                nx = ints[u(x * S + NK)]
                for j in range(nx, 0, -1):
                    scalar(j)
                    copy_entry(b, x * E + j, x * E + j - 1)
                copy_entry(b, x * E, p * E + sep)
                if ints[u(x * S + LEAF)] == 0:
                    for j in range(nx + 1, 0, -1):
                        scalar(j)
                        ints[u(x * S + KID + j)] = ints[u(x * S + KID + j - 1)]
                    set_child(b, x, 0, ints[u(left * S + KID + nl)])
                ints[u(x * S + NK)] = nx + 1
                copy_entry(b, p * E + sep, left * E + nl - 1)
                ints[u(left * S + NK)] = nl - 1
                recompute_if_up(b, x)
                recompute_if_up(b, left)
            x = p
        return x, hit_left, hit_right

    rebalance_after_evict = flat(rebalance_after_evict)

    def evict_restructuring(b, x):
        """Drop the oldest entry of the left finger x when a refold alone cannot (see evict)."""
        ints = b[INTS]
        shift_left(b, x, 1)
        if x != ints[ROOT] and ints[u(x * S + NK)] < MINK:
            # in order, about two evictions in five underflow the left finger: the rebalancing
            # and the repair run inlined here, in one call
            top, hit_left, hit_right = rebalance_after_evict(b, x)
            repair(b, top, hit_left, hit_right)
        elif kind(b, x) != UP:  # nothing above the left finger (or the root leaf) includes it
            recompute(b, x)
        else:
            repair(b, x, ints[u(x * S + LSP)], 0)

    evict_restructuring = apart(evict_restructuring)

    def drop_oldest_refold(b, x):
        """Drop the left finger's oldest entry and refold its left aggregate in the same pass.

        For a left-finger leaf below the root that keeps at least MINK entries (the in-order
        evict without rebalancing): the shift and the fold read each entry once.
        """
        keys, parts, ints = b[KEYS], b[PARTS], b[INTS]
        r = x * S
        n = ints[u(r + NK)] - 1
        acc = identity
        for j in range(n):
            scalar(j)
            keys[u(x * E + j)] = keys[u(x * E + j + 1)]
            v = load(parts, u(x * E + j + 1))
            store(parts, u(x * E + j), v)
            acc = combine(acc, v)
        ints[u(r + NK)] = n
        p = ints[u(r + PAR)]
        if p != ints[ROOT]:  # younger than the whole leaf: the parent's left aggregate
            acc = combine(acc, load(parts, u(p * E + W)))
            n += ints[u(p * S + CNT)]
        store(parts, u(x * E + W), acc)
        ints[u(r + CNT)] = n

    if into is not None:
        def drop_oldest_refold(b, x):  # noqa: F811 - the same, folding into the aggregate's row
            keys, parts, ints = b[KEYS], b[PARTS], b[INTS]
            r = x * S
            n = ints[u(r + NK)] - 1
            for j in range(n):
                keys[u(x * E + j)] = keys[u(x * E + j + 1)]
                store(parts, u(x * E + j), load(parts, u(x * E + j + 1)))
            ints[u(r + NK)] = n
            row = load(parts, u(x * E + W))
            into(row, load(parts, u(x * E)), identity)  # n >= MINK >= 1 entries stay
            for j in range(1, n):
                into(row, row, load(parts, u(x * E + j)))
            p = ints[u(r + PAR)]
            if p != ints[ROOT]:  # younger than the whole leaf: the parent's left aggregate
                into(row, row, load(parts, u(p * E + W)))
                n += ints[u(p * S + CNT)]
            ints[u(r + CNT)] = n

    drop_oldest_refold = flat(drop_oldest_refold)


    def evict(b, st):
        ints = b[INTS]
        x = ints[LF]
        if FINGER and x != ints[ROOT] and ints[u(x * S + NK)] > MINK and ints[u(x * S + RSP)] == 0:
            drop_oldest_refold(b, x)  # a left-spine leaf: its aggregate is LEFT
            # The finger's right sibling lends or merges an evict or two from now; in a large
            # window nothing has touched it since it filled, and its entries were the round's
            # slowest reads (cache misses). Asked for now, they arrive in time.
            sibling = ints[u(ints[u(x * S + PAR)] * S + KID + 1)]
            prefetch(b[KEYS], u(sibling * E))
            prefetch(b[PARTS], u(sibling * E))
            prefetch(ints, u(sibling * S + NK))
        else:
            evict_restructuring(b, x)
        return (st[0], st[1], st[2] - 1)

    evict = flat(evict)

    # ------------------------------------------------------------ bulk evict (paper 004, section 4)
    def local_evict(b, x, t):
        keys, ints = b[KEYS], b[INTS]
        n = ints[u(x * S + NK)]
        i = 0
        while i < n and keys[u(x * E + i)] <= t:
            i += 1
        if i > 0:
            if ints[u(x * S + LEAF)] == 0:
                for c in range(i):
                    scalar(c)
                    free_tree(b, ints[u(x * S + KID + c)])
            shift_left(b, x, i)

    local_evict = flat(local_evict)

    def separator(b, anc, nb_):
        # the entry of anc between node's subtree and its right neighbour's
        keys = b[KEYS]
        first = keys[u(nb_ * E)]
        a = b[INTS][u(anc * S + NK)] - 1
        while keys[u(anc * E + a)] >= first:
            a -= 1
        return a

    separator = flat(separator)

    def move_batch(b, x, nb_, anc, k):
        """x takes the separator and nb_'s first k-1 entries (k children); nb_'s k-th entry goes up."""
        ints = b[INTS]
        a = separator(b, anc, nb_)
        nx = ints[u(x * S + NK)]
        copy_entry(b, x * E + nx, anc * E + a)
        for j in range(k - 1):
            scalar(j)
            copy_entry(b, x * E + nx + 1 + j, nb_ * E + j)
        if ints[u(x * S + LEAF)] == 0:
            for j in range(k):
                scalar(j)
                set_child(b, x, nx + 1 + j, ints[u(nb_ * S + KID + j)])
        ints[u(x * S + NK)] = nx + k
        copy_entry(b, anc * E + a, nb_ * E + k - 1)
        shift_left(b, nb_, k)

    move_batch = apart(move_batch)

    def merge_into_neighbor(b, x, nb_, anc):
        """nb_ absorbs x and the separator; anc drops everything left of nb_ (all of it evicted)."""
        ints = b[INTS]
        a = separator(b, anc, nb_)
        nx = ints[u(x * S + NK)]
        nn = ints[u(nb_ * S + NK)]
        s = nx + 1
        for j in range(nn - 1, -1, -1):
            scalar(j)
            copy_entry(b, nb_ * E + j + s, nb_ * E + j)
        if ints[u(nb_ * S + LEAF)] == 0:
            for j in range(nn, -1, -1):
                scalar(j)
                ints[u(nb_ * S + KID + j + s)] = ints[u(nb_ * S + KID + j)]
            for j in range(nx + 1):
                scalar(j)
                set_child(b, nb_, j, ints[u(x * S + KID + j)])
        for j in range(nx):
            scalar(j)
            copy_entry(b, nb_ * E + j, x * E + j)
        copy_entry(b, nb_ * E + nx, anc * E + a)
        ints[u(nb_ * S + NK)] = nn + s
        p = ints[u(x * S + PAR)]
        if p != anc:
            detach_last(b, p)  # p and the chain above it up to anc are garbage
        free_node(b, x)
        for c in range(a + 1):
            scalar(c)
            if ints[u(anc * S + KID + c)] != x:
                free_tree(b, ints[u(anc * S + KID + c)])
        shift_left(b, anc, a + 1)

    merge_into_neighbor = apart(merge_into_neighbor)

    def make_root(b, x, first):
        """The cut reached the right spine: x (or its only child) becomes the root."""
        ints = b[INTS]
        root = ints[ROOT]
        new_root = ints[u(x * S + KID)] if (ints[u(x * S + LEAF)] == 0 and ints[u(x * S + NK)] == 0) else x
        if x != root:
            detach_last(b, ints[u(x * S + PAR)])
            free_tree(b, root)
        if new_root != x:
            free_node(b, x)
        ints[ROOT] = new_root
        ints[u(new_root * S + PAR)] = NIL
        ints[u(new_root * S + LSP)] = 0
        ints[u(new_root * S + RSP)] = 0
        if first:
            mark_left_chain(b, new_root)
        if ints[u(new_root * S + LEAF)] != 0:
            ints[LF] = new_root
            ints[RF] = new_root

    make_root = apart(make_root)

    def search_boundary(b, t):
        """Step 1: one (node, neighbour, ancestor) triple per level, top first; returns the depth."""
        keys, ints = b[KEYS], b[INTS]
        root = ints[ROOT]
        x = root
        if FINGER and ints[u(root * S + LEAF)] == 0:
            if t < keys[u(root * E)]:
                x = ints[LF]
                while x != root and keys[u(x * E + ints[u(x * S + NK)] - 1)] < t:
                    x = ints[u(x * S + PAR)]
            elif keys[u(root * E + ints[u(root * S + NK)] - 1)] < t:
                x = ints[RF]
                while x != root and t < keys[u(x * E)]:
                    x = ints[u(x * S + PAR)]
        anc = NIL
        nb_ = NIL
        if x != root:
            anc = ints[u(x * S + PAR)]
            i = child_index(b, anc, x)
            if i < ints[u(anc * S + NK)]:
                nb_ = ints[u(anc * S + KID + i + 1)]
        depth = 0
        ints[SCR], ints[SCR + _LEVELS], ints[SCR + 2 * _LEVELS] = x, nb_, anc
        while ints[u(x * S + LEAF)] == 0:
            n = ints[u(x * S + NK)]
            i = 0
            while i < n and keys[u(x * E + i)] < t:
                i += 1
            if i < n and keys[u(x * E + i)] == t:
                break  # everything right of t below here is untouched
            if i == n:
                if nb_ != NIL:
                    nb_ = ints[u(nb_ * S + KID)]
            else:
                anc = x
                nb_ = ints[u(x * S + KID + i + 1)]
            x = ints[u(x * S + KID + i)]
            depth += 1
            ints[u(SCR + depth)], ints[u(SCR + _LEVELS + depth)], ints[u(SCR + 2 * _LEVELS + depth)] = x, nb_, anc
        return depth

    search_boundary = apart(search_boundary)

    def bulk_evict_native(b, st, t):
        keys, ints = b[KEYS], b[INTS]
        if st[2] == 0:
            return st
        lf = ints[LF]
        if keys[u(lf * E)] > t:  # nothing to evict
            return st
        if ints[u(lf * S + NK)] >= 2 and keys[u(lf * E + 1)] > t:  # only the oldest: the single eviction
            return evict(b, st)
        depth = search_boundary(b, t)
        skip = NIL
        top = NIL
        hit_left = 0
        hit_right = 0
        made_root = False
        for lev in range(depth, -1, -1):
            x, nb_, anc = ints[u(SCR + lev)], ints[u(SCR + _LEVELS + lev)], ints[u(SCR + 2 * _LEVELS + lev)]
            first = lev == depth
            if nb_ != NIL and not first:
                recompute_if_up(b, nb_)  # one of its children changed a level down
            if skip == NIL or skip == x:
                skip = NIL
                local_evict(b, x, t)
                if nb_ == NIL:
                    make_root(b, x, first)
                    made_root = True
                    break
                if ints[u(x * S + NK)] >= MINK:
                    top = x
                else:
                    deficit = MINK - ints[u(x * S + NK)]
                    surplus = ints[u(nb_ * S + NK)] - MINK
                    hit_right |= ints[u(nb_ * S + RSP)]
                    if deficit <= surplus:
                        move_batch(b, x, nb_, anc, deficit)
                        recompute_if_up(b, nb_)
                    else:
                        merge_into_neighbor(b, x, nb_, anc)
                        skip = anc
                    top = anc
            survivor = x if skip == NIL else nb_
            ints[u(survivor * S + LSP)] = 1
            if first:
                mark_left_chain(b, survivor)
            recompute_if_up(b, survivor)  # classic only: finger survivors are left-spine nodes
        if made_root:
            collapse_root(b)
            top = ints[ROOT]
            hit_left = 1
            hit_right = 1
        elif top == ints[ROOT]:
            collapse_root(b)
            top = ints[ROOT]
            hit_left = 1
            hit_right = 1
        elif ints[u(top * S + NK)] >= MINK:
            hit_left |= ints[u(top * S + LSP)]
            hit_right |= ints[u(top * S + RSP)]
        else:
            top, more_left, more_right = rebalance_after_evict(b, top)
            hit_left |= more_left
            hit_right |= more_right
        repair(b, top, hit_left, hit_right)
        return state(b)

    bulk_evict_native = apart(bulk_evict_native)

    def bulk_evict_loop(b, st, t):
        while st[2] > 0 and oldest(b) <= t:
            st = evict(b, st)
        return st

    bulk_evict_loop = apart(bulk_evict_loop)

    # ------------------------------------------------------------ bulk insert (paper 004, section 5)
    def add_group(groups, ng, node, level, first_twig):
        """Open a group for ``node`` unless the last group already targets it (one group per node)."""
        if ng > 0 and groups[4 * (ng - 1)] == node:
            return ng
        groups[4 * ng] = node
        groups[4 * ng + 1] = level
        groups[4 * ng + 2] = first_twig
        groups[4 * ng + 3] = 0
        return ng + 1

    add_group = flat(add_group)

    def add_twig(groups, ng, tt, tv, tk, nt, t, v, child):
        tt[nt] = t
        store(tv, nt, v)
        tk[nt] = child
        groups[4 * (ng - 1) + 3] += 1
        return nt + 1

    add_twig = flat(add_twig)

    def small_insert(b, x, tt, tv, tk, s, c):
        """Interleave c twigs into x from the back (x does not overflow)."""
        keys, parts, ints = b[KEYS], b[PARTS], b[INTS]
        internal = ints[u(x * S + LEAF)] == 0
        i = ints[u(x * S + NK)] - 1
        j = c - 1
        w = ints[u(x * S + NK)] + c - 1
        while j >= 0:
            if i >= 0 and keys[u(x * E + i)] > tt[s + j]:
                copy_entry(b, x * E + w, x * E + i)
                if internal:
                    ints[u(x * S + KID + w + 1)] = ints[u(x * S + KID + i + 1)]
                i -= 1
            else:
                keys[u(x * E + w)] = tt[s + j]
                store(parts, u(x * E + w), load(tv, s + j))
                if internal:
                    set_child(b, x, w + 1, tk[s + j])
                j -= 1
            w -= 1
        ints[u(x * S + NK)] += c

    small_insert = apart(small_insert)

    def fill(b, y, mt, mv, mc, start, count):
        ints = b[INTS]
        for q in range(count):
            scalar(q)
            b[KEYS][u(y * E + q)] = mt[start + q]
            store(b[PARTS], u(y * E + q), load(mv, start + q))
        if ints[u(y * S + LEAF)] == 0:
            for q in range(count + 1):
                scalar(q)
                set_child(b, y, q, mc[start + q])
        ints[u(y * S + NK)] = count

    fill = flat(fill)

    def bulk_split(b, x, tt, tv, tk, s, c, level, groups, ng, ntt, ntv, ntk, nt, mt, mv, mc):
        """Claim 1: pieces of mu entries while the rest is over-full; the entries between go up."""
        keys, ints = b[KEYS], b[INTS]
        internal = ints[u(x * S + LEAF)] == 0
        n = ints[u(x * S + NK)]
        p = n + c
        if internal:
            mc[0] = ints[u(x * S + KID)]
        i = 0
        j = 0
        for w in range(p):
            scalar(w)
            if j >= c or (i < n and keys[u(x * E + i)] < tt[s + j]):
                mt[w] = keys[u(x * E + i)]
                store(mv, w, load(b[PARTS], u(x * E + i)))
                if internal:
                    mc[w + 1] = ints[u(x * S + KID + i + 1)]
                i += 1
            else:
                mt[w] = tt[s + j]
                store(mv, w, load(tv, s + j))
                if internal:
                    mc[w + 1] = tk[s + j]
                j += 1
        if x == ints[ROOT]:
            new_root_above(b, x)
        parent = ints[u(x * S + PAR)]
        was_right = ints[u(x * S + RSP)]
        ints[u(x * S + RSP)] = 0
        fill(b, x, mt, mv, mc, 0, mu)
        pos = mu
        while True:
            y = alloc_node(b, ints[u(x * S + LEAF)])
            ng = add_group(groups, ng, parent, level + 1, nt)
            nt = add_twig(groups, ng, ntt, ntv, ntk, nt, mt[pos], load(mv, pos), y)
            rest = p - pos - 1
            if rest > MAXK:
                fill(b, y, mt, mv, mc, pos + 1, mu)
                recompute_if_up(b, y)
                pos += mu + 1
            else:
                fill(b, y, mt, mv, mc, pos + 1, rest)
                break
        ints[u(y * S + RSP)] = was_right
        if was_right != 0 and ints[u(y * S + LEAF)] != 0:
            ints[RF] = y
        recompute_if_up(b, x)
        recompute_if_up(b, y)
        return y, ng, nt

    bulk_split = apart(bulk_split)

    def level_of(b, x):
        ints = b[INTS]
        level = 0
        while ints[u(x * S + LEAF)] == 0:
            x = ints[u(x * S + KID)]
            level += 1
        return level

    level_of = flat(level_of)

    def bulk_insert_loop(b, st, bt, bv, m):
        for q in range(m):
            st = insert_at(b, st, bt[q], load(bv, q))
        return st

    bulk_insert_loop = apart(bulk_insert_loop)

    def bulk_insert_native(b, st, bt, bv, m):
        if m == 0:
            return st
        if m == 1:  # no scratch to allocate for a single entry
            return insert_at(b, st, bt[0], load(bv, 0))
        if FINGER and (st[2] == 0 or youngest(b) < bt[0]):
            # younger than every entry: appends at the right finger, O(1) amortized each, are
            # the bulk insert at d = 0 without its scratch and merge passes
            return bulk_insert_loop(b, st, bt, bv, m)
        room = m + 2
        return bulk_insert_work(b, st, bt, bv, m, talloc(room), alloc(room), ialloc(room), ialloc(8 * room),
                                talloc(room), alloc(room), ialloc(room), ialloc(8 * room),
                                talloc(W + room), alloc(W + room), ialloc(W + room + 1), ialloc(4 * _LEVELS),
                                talloc(2 * _LEVELS))

    def bulk_insert_work(b, st, bt, bv, m, tt0, tv0, tk0, g0, tt1, tv1, tk1, g1, mt, mv, mc, path, path_t):
        keys, parts, ints = b[KEYS], b[PARTS], b[INTS]
        pn, plev, phl, phu = path[:_LEVELS], path[_LEVELS:2 * _LEVELS], path[2 * _LEVELS:3 * _LEVELS], path[3 * _LEVELS:]
        plb, pub = path_t[:_LEVELS], path_t[_LEVELS:]
        # Step 1: multi-search from the right finger (the root for classic), leaf-level groups in time order.
        root = ints[ROOT]
        t0 = bt[0]
        x = root
        level = level_of(b, root)
        if FINGER:
            x = ints[RF]
            level = 0
            while x != root and t0 < keys[u(x * E)]:
                x = ints[u(x * S + PAR)]
                level += 1
        sp = 0
        pn[0] = x
        plev[0] = level
        phl[0] = 1 if (x != root and ints[u(x * S + NK)] > 0) else 0
        plb[0] = keys[u(x * E)] if phl[0] != 0 else t0
        phu[0] = 0
        pub[0] = t0
        ng = 0
        nt = 0
        prev_new = False
        for q in range(m):
            t = bt[q]
            v = load(bv, q)
            if prev_new and t == bt[q - 1]:  # equal times in a batch combine in batch order
                store(tv0, nt - 1, combine(load(tv0, nt - 1), v))
                continue
            while sp > 0 and not ((phl[sp] == 0 or plb[sp] < t) and (phu[sp] == 0 or t < pub[sp])):
                sp -= 1
            x = pn[sp]
            level = plev[sp]
            while True:
                n = ints[u(x * S + NK)]
                i = 0
                while i < n and keys[u(x * E + i)] < t:
                    i += 1
                found = i < n and keys[u(x * E + i)] == t
                if found or ints[u(x * S + LEAF)] != 0:
                    break
                sp += 1
                if i > 0:
                    phl[sp] = 1
                    plb[sp] = keys[u(x * E + i - 1)]
                else:
                    phl[sp] = phl[sp - 1]
                    plb[sp] = plb[sp - 1]
                if i < n:
                    phu[sp] = 1
                    pub[sp] = keys[u(x * E + i)]
                else:
                    phu[sp] = phu[sp - 1]
                    pub[sp] = pub[sp - 1]
                x = ints[u(x * S + KID + i)]
                level -= 1
                pn[sp] = x
                plev[sp] = level
            if found:
                store(parts, u(x * E + i), combine(load(parts, u(x * E + i)), v))
                ng = add_group(g0, ng, x, level, nt)  # a recompute event riding from the leaf level
                prev_new = False
            else:
                ng = add_group(g0, ng, x, 0, nt)
                nt = add_twig(g0, ng, tt0, tv0, tk0, nt, t, v, NIL)
                prev_new = True
        # Step 2: pass up, one level per round; events stay in time order, one group per node.
        top_left = NIL
        top_right = NIL
        root_touched = False
        level = 0
        cur_t, cur_v, cur_k, cur_g = tt0, tv0, tk0, g0
        nxt_t, nxt_v, nxt_k, nxt_g = tt1, tv1, tk1, g1
        while ng > 0:
            ng2 = 0
            nt2 = 0
            for g in range(ng):
                x = cur_g[4 * g]
                glevel = cur_g[4 * g + 1]
                s = cur_g[4 * g + 2]
                c = cur_g[4 * g + 3]
                if glevel > level:  # a recompute event still riding up
                    ng2 = add_group(nxt_g, ng2, x, glevel, nt2)
                    continue
                last = x
                if c > 0 and ints[u(x * S + NK)] + c > MAXK:
                    last, ng2, nt2 = bulk_split(b, x, cur_t, cur_v, cur_k, s, c, level, nxt_g, ng2,
                                                nxt_t, nxt_v, nxt_k, nt2, mt, mv, mc)
                else:
                    if c > 0:
                        small_insert(b, x, cur_t, cur_v, cur_k, s, c)
                    if kind(b, x) == UP:
                        recompute(b, x)
                        if ints[u(x * S + PAR)] != NIL:
                            ng2 = add_group(nxt_g, ng2, ints[u(x * S + PAR)], level + 1, nt2)
                for z in (x, last):
                    if z == ints[ROOT]:
                        root_touched = True
                    else:
                        if ints[u(z * S + LSP)] != 0:
                            top_left = z
                        if ints[u(z * S + RSP)] != 0:
                            top_right = z
            ng = ng2
            cur_t, cur_v, cur_k, cur_g, nxt_t, nxt_v, nxt_k, nxt_g = (nxt_t, nxt_v, nxt_k, nxt_g,
                                                                      cur_t, cur_v, cur_k, cur_g)
            level += 1
        # Step 3: pass down the touched spines.
        if FINGER:
            if root_touched:
                recompute(b, ints[ROOT])
            if top_left != NIL:
                recompute(b, top_left)
                walk_down(b, top_left, False)
            if top_right != NIL:
                recompute(b, top_right)
                walk_down(b, top_right, True)
        return state(b)

    bulk_insert_work = apart(bulk_insert_work)
    bulk_insert_native = nrt(bulk_insert_native)

    # ------------------------------------------------------------ range query
    def range_query(b, st, lo, hi, lo_open):
        """Fold of the entries with lo <= time <= hi (lo < time when ``lo_open``), in time order."""
        keys, parts, ints = b[KEYS], b[PARTS], b[INTS]
        acc = identity
        if st[2] == 0 or hi < lo:
            return acc
        stack, pos_of, flags_of = SCR + _RQ, SCR + _RQ + _LEVELS, SCR + _RQ + 2 * _LEVELS
        sp = 0
        ints[u(stack)] = ints[ROOT]
        ints[u(pos_of)] = 0
        ints[u(flags_of)] = 0  # bit 0: subtree all >(=) lo; bit 1: subtree all <= hi
        while sp >= 0:
            x = ints[u(stack + sp)]
            pos = ints[u(pos_of + sp)]
            flags = ints[u(flags_of + sp)]
            n = ints[u(x * S + NK)]
            if pos > 2 * n:
                sp -= 1
                continue
            ints[u(pos_of + sp)] = pos + 1
            if pos % 2 == 1:
                i = (pos - 1) // 2
                k = keys[u(x * E + i)]
                if k > hi:
                    return acc
                if k > lo or (k == lo and not lo_open):
                    acc = combine(acc, load(parts, u(x * E + i)))
            elif ints[u(x * S + LEAF)] == 0:
                i = pos // 2
                if i < n and keys[u(x * E + i)] <= lo:
                    continue  # the child lies wholly below the range
                if i > 0 and keys[u(x * E + i - 1)] >= hi:
                    return acc  # it and everything after lie above the range
                child_flags = 0
                if i == 0:
                    child_flags |= flags & 1
                elif keys[u(x * E + i - 1)] >= lo:
                    child_flags |= 1
                if i == n:
                    child_flags |= flags & 2
                elif keys[u(x * E + i)] <= hi:
                    child_flags |= 2
                ch = ints[u(x * S + KID + i)]
                if child_flags == 3 and kind(b, ch) == UP:
                    acc = combine(acc, load(parts, u(ch * E + W)))
                else:
                    sp += 1
                    ints[u(stack + sp)] = ch
                    ints[u(pos_of + sp)] = 0
                    ints[u(flags_of + sp)] = child_flags
        return acc

    range_query = flat(range_query)

    # ------------------------------------------------------------ capacity
    def init(capacity):
        b = new_bufs(capacity // MINK + 2 * MARGIN)  # room for `capacity` entries (see state)
        ints = b[INTS]
        ints[FRESH] = 0
        ints[NFREE] = 0
        root = alloc_node(b, 1)
        store(b[PARTS], u(root * E + W), identity)
        ints[ROOT] = root
        ints[LF] = root
        ints[RF] = root
        return b, state(b)

    init = nrt(init)

    def grow(b, st):
        keys, parts, ints = b
        cap = ints[CAP]
        g = new_bufs(2 * cap)
        gkeys, gparts, gints = g
        for i in range(cap * E):
            gkeys[u(i)] = keys[u(i)]
            store(gparts, u(i), load(parts, u(i)))
        for i in range(HEAD + cap * S):
            gints[u(i)] = ints[u(i)]
        gints[CAP] = 2 * cap
        old_free, new_free = HEAD + cap * S, HEAD + 2 * cap * S
        for i in range(ints[NFREE]):
            gints[u(new_free + i)] = ints[u(old_free + i)]
        return g, state(g)

    grow = nrt(grow)

    def reserve(b, st, m):
        while st[0] - st[2] < m:
            b, st = grow(b, st)
        return b, st

    reserve = nrt(reserve)

    bulk_insert = bulk_insert_native if bulk else bulk_insert_loop
    evict_upto = bulk_evict_native if bulk else bulk_evict_loop
    return TreeFuncs(init, flat(insert), evict, flat(query), grow, insert_at, evict_upto, bulk_insert,
                     range_query, reserve, oldest, youngest)
