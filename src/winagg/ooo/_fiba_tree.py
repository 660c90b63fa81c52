"""The FiBA tree (papers 004 and FiBA-2019) in flat arrays: one source for Python and numba.

A node pool holds every node in parallel arrays (buffers), so the same code
runs over Python lists (any monoid, any comparable times) and, compiled, over
numpy arrays (float64 times). Node ``x`` owns key/value slots
``x*W .. x*W+W-1`` (``W = 2*mu``: ``2*mu - 1`` entries plus one for a
transient overflow) and child slots ``x*(W+1) ..``.

Aggregates are location-sensitive as in FiBA (``variant="finger"``): a node
off the spines stores its *up* aggregate (its whole subtree), the root its
*inner* aggregate (everything but its first and last child), a left-spine
node its *left* aggregate (its subtree but the first child, and everything
to its right up to the root's inner part), a right-spine node the mirror
image. ``query()`` is then ``left(leftFinger) + inner(root) +
right(rightFinger)``: O(1). ``variant="classic"`` stores *up* everywhere and
searches from the root. Each node also stores the count of entries its
aggregate covers, so the window size comes out of the same three nodes.

Freed subtrees go onto a deferred free list: freeing is O(1) per subtree,
and an allocation that pops a node pushes that node's children.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import numba as nb
import numpy as np

from ..layout import PYTHON
from ..ops import power_of_two_at_least

NIL = -1
#: Nodes kept free beyond a batch: a split cascade makes at most one node per level plus a root.
MARGIN = 72
#: Scratch layout (ints): boundary triples of a bulk evict, then the range-query stack.
_LEVELS = 64
_RQ = 4 * _LEVELS

# Buffer indices in the bufs tuple.
KEYS, VALS, AGGS, KIDS, NK, PAR, LEAF, LSP, RSP, CNT, META, FREE, SCR = range(13)
# Meta slots.
ROOT, LF, RF, FRESH, NFREE, CAP = range(6)
# Aggregate kinds.
UP, LEFT, RIGHT, INNER = 0, 1, 2, 3


@nb.njit(cache=True)
def _ints_np(n):
    return np.zeros(n, np.int64)


@nb.njit(cache=True)
def _times_np(n):
    return np.zeros(n, np.float64)


@nb.njit(cache=True)
def _times_np_int(n):
    return np.zeros(n, np.int64)


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
    # ``nrt``: functions that allocate buffers. ``jit``/``slow``: the rest (hot / rare paths).
    nrt = ops.jit_call
    if python:
        jit = slow = ops.jit
    else:
        probe = alloc(1)
        vector = isinstance(probe, np.ndarray) and probe.ndim == 2  # combine allocates: keep the runtime
        # Reference counting cost ~30 ns per buffer access in the tree's branchy loops; with
        # scalar partials nothing here allocates, so the tree runs without the runtime.
        jit, slow = (ops.jit, ops.jit_call) if vector else (ops.jit_loop, ops.jit_loop)
    if python:
        ialloc, talloc = _ints_py, _times_py
    else:
        ialloc, talloc = _ints_np, (_times_np_int if times == "int64" else _times_np)
    W = 2 * mu
    KW = W + 1
    MAXK = 2 * mu - 1  # entries of a full node (arity 2*mu)
    MINK = mu - 1  # entries of a minimal non-root node (arity mu)
    FINGER = bool(finger)

    # ------------------------------------------------------------ pool
    def new_bufs(cap):
        return (talloc(cap * W), alloc(cap * W), alloc(cap), ialloc(cap * KW), ialloc(cap), ialloc(cap),
                ialloc(cap), ialloc(cap), ialloc(cap), ialloc(cap), ialloc(8), ialloc(cap), ialloc(_RQ + 4 * _LEVELS))

    new_bufs = nrt(new_bufs)

    def alloc_node(b, is_leaf):
        meta, nk, kids, free = b[META], b[NK], b[KIDS], b[FREE]
        nfree = meta[NFREE]
        if nfree > 0:
            x = free[nfree - 1]
            nfree -= 1
            if b[LEAF][x] == 0:  # deferred freeing: the children go on the list now
                for i in range(nk[x] + 1):
                    free[nfree] = kids[x * KW + i]
                    nfree += 1
            meta[NFREE] = nfree
        else:
            x = meta[FRESH]
            meta[FRESH] = x + 1
        nk[x] = 0
        b[PAR][x] = NIL
        b[LEAF][x] = is_leaf
        b[LSP][x] = 0
        b[RSP][x] = 0
        b[CNT][x] = 0
        return x

    alloc_node = jit(alloc_node)

    def free_tree(b, x):
        # O(1): the subtree's nodes are reclaimed one by one as allocations pop them
        meta = b[META]
        b[FREE][meta[NFREE]] = x
        meta[NFREE] += 1

    free_tree = jit(free_tree)

    def free_node(b, x):
        # a node whose children live on elsewhere: free it alone
        b[LEAF][x] = 1
        b[NK][x] = 0
        free_tree(b, x)

    free_node = jit(free_node)

    def detach_last(b, p):
        # drop p's last child pointer; p is garbage about to be freed with its subtree
        if b[NK][p] == 0:
            b[LEAF][p] = 1
        else:
            b[NK][p] -= 1

    detach_last = jit(detach_last)

    # ------------------------------------------------------------ aggregates
    def kind(b, x):
        if x == b[META][ROOT]:
            return INNER if FINGER else UP
        if not FINGER:
            return UP
        left, right = b[LSP][x], b[RSP][x]
        if left != 0:
            return INNER if right != 0 else LEFT
        return RIGHT if right != 0 else UP

    kind = jit(kind)

    def recompute(b, x):
        vals, aggs, kids, cnt = b[VALS], b[AGGS], b[KIDS], b[CNT]
        k = kind(b, x)
        n = b[NK][x]
        p = b[PAR][x]
        parent_term = p != NIL and p != b[META][ROOT]
        acc = identity
        c = 0
        if k == RIGHT and parent_term:  # older than the whole node
            acc = load(aggs, p)
            c = cnt[p]
        lo_child = 1 if (k == INNER or k == LEFT) else 0
        hi_child = n - 1 if (k == INNER or k == RIGHT) else n
        internal = b[LEAF][x] == 0
        for i in range(n + 1):
            if internal and lo_child <= i <= hi_child:
                ch = kids[x * KW + i]
                acc = combine(acc, load(aggs, ch))
                c += cnt[ch]
            if i < n:
                acc = combine(acc, load(vals, x * W + i))
                c += 1
        if k == LEFT and parent_term:  # younger than the whole node
            acc = combine(acc, load(aggs, p))
            c += cnt[p]
        store(aggs, x, acc)
        cnt[x] = c

    # Calls that are not inlined pass (and reference-count) every buffer: the hot paths get
    # inlined copies, the rare structural paths the out-of-line ones.
    recompute_fast = jit(recompute)
    recompute = slow(recompute)

    def recompute_if_up(b, x):
        if kind(b, x) == UP:
            recompute(b, x)

    recompute_if_up = jit(recompute_if_up)

    def walk_down(b, x, right):
        nk, kids, leaf = b[NK], b[KIDS], b[LEAF]
        while leaf[x] == 0:
            x = kids[x * KW + (nk[x] if right else 0)]
            recompute_fast(b, x)

    walk_down_fast = jit(walk_down)
    walk_down = slow(walk_down)

    def repair(b, top, hit_left, hit_right):
        """Up-aggregates bottom-up from ``top`` to a spine node or the root, then spines top-down."""
        root = b[META][ROOT]
        x = top
        recompute_fast(b, x)
        while x != root and kind(b, x) == UP:
            x = b[PAR][x]
            recompute_fast(b, x)
        if FINGER:
            if (b[LSP][x] != 0 and x != root) or (hit_left != 0 and x == root):
                walk_down_fast(b, x, False)
            if (b[RSP][x] != 0 and x != root) or (hit_right != 0 and x == root):
                walk_down_fast(b, x, True)

    repair = jit(repair)

    def size_of(b):
        meta, cnt = b[META], b[CNT]
        root = meta[ROOT]
        if b[LEAF][root] != 0:
            return b[NK][root]
        if not FINGER:
            return cnt[root]
        return cnt[meta[LF]] + cnt[root] + cnt[meta[RF]]

    size_of = jit(size_of)

    def state(b):
        meta = b[META]
        size = size_of(b)
        avail = meta[CAP] - meta[FRESH] + meta[NFREE]
        return (size + avail - MARGIN, 0, size)

    state = jit(state)

    def query(b, st):
        meta, aggs = b[META], b[AGGS]
        root = meta[ROOT]
        if not FINGER or b[LEAF][root] != 0:
            return load(aggs, root)
        return combine(combine(load(aggs, meta[LF]), load(aggs, root)), load(aggs, meta[RF]))

    # ------------------------------------------------------------ small helpers
    def child_index(b, p, x):
        kids = b[KIDS]
        i = 0
        while kids[p * KW + i] != x:
            i += 1
        return i

    child_index = jit(child_index)

    def set_child(b, p, i, c):
        b[KIDS][p * KW + i] = c
        b[PAR][c] = p

    set_child = jit(set_child)

    def copy_entry(b, dst, src):
        b[KEYS][dst] = b[KEYS][src]
        store(b[VALS], dst, load(b[VALS], src))

    copy_entry = jit(copy_entry)

    def insert_entry(b, x, i, t, v, right_child):
        """Put (t, v) at index i of x, with ``right_child`` right of it when x is internal."""
        keys, vals, kids = b[KEYS], b[VALS], b[KIDS]
        n = b[NK][x]
        for j in range(n, i, -1):
            copy_entry(b, x * W + j, x * W + j - 1)
        keys[x * W + i] = t
        store(vals, x * W + i, v)
        if b[LEAF][x] == 0:
            for j in range(n + 1, i + 1, -1):
                kids[x * KW + j] = kids[x * KW + j - 1]
            set_child(b, x, i + 1, right_child)
        b[NK][x] = n + 1

    insert_entry = jit(insert_entry)

    def shift_left(b, x, k):
        """Drop the first k entries (and, if internal, the first k children) of x."""
        kids = b[KIDS]
        n = b[NK][x]
        for j in range(n - k):
            copy_entry(b, x * W + j, x * W + j + k)
        if b[LEAF][x] == 0:
            for j in range(n - k + 1):
                kids[x * KW + j] = kids[x * KW + j + k]
        b[NK][x] = n - k

    shift_left = jit(shift_left)

    def mark_left_chain(b, x):
        """Flag the first-child chain below x as left spine; its leaf is the left finger."""
        while b[LEAF][x] == 0:
            x = b[KIDS][x * KW]
            b[LSP][x] = 1
        b[META][LF] = x

    mark_left_chain = jit(mark_left_chain)

    def new_root_above(b, x):
        r = alloc_node(b, 0)
        set_child(b, r, 0, x)
        b[META][ROOT] = r
        b[LSP][x] = 1
        b[RSP][x] = 1
        return r

    new_root_above = jit(new_root_above)

    def collapse_root(b):
        """Lower the height while the root is internal with a single child."""
        meta = b[META]
        root = meta[ROOT]
        while b[LEAF][root] == 0 and b[NK][root] == 0:
            child = b[KIDS][root * KW]
            free_node(b, root)
            root = child
            b[PAR][root] = NIL
            b[LSP][root] = 0
            b[RSP][root] = 0
            meta[ROOT] = root
        if b[LEAF][root] != 0:
            meta[LF] = root
            meta[RF] = root

    collapse_root = slow(collapse_root)

    # ------------------------------------------------------------ single insert
    def find_start(b, t):
        """Finger search: the lowest spine node whose subtree's time range holds t (or the root)."""
        keys, nk, par, meta = b[KEYS], b[NK], b[PAR], b[META]
        root = meta[ROOT]
        if not FINGER or b[LEAF][root] != 0:
            return root
        if t < keys[root * W]:
            x = meta[LF]
            while x != root and keys[x * W + nk[x] - 1] < t:
                x = par[x]
            return x
        if t > keys[root * W + nk[root] - 1]:
            x = meta[RF]
            while x != root and t < keys[x * W]:
                x = par[x]
            return x
        return root

    find_start = jit(find_start)

    def split(b, x):
        """Split an over-full x (2*mu entries) in two; returns the new right node."""
        keys = b[KEYS]
        if x == b[META][ROOT]:
            new_root_above(b, x)
        p = b[PAR][x]
        y = alloc_node(b, b[LEAF][x])
        n = b[NK][x]
        for j in range(mu + 1, n):
            copy_entry(b, y * W + j - mu - 1, x * W + j)
        if b[LEAF][x] == 0:
            for j in range(mu + 1, n + 1):
                set_child(b, y, j - mu - 1, b[KIDS][x * KW + j])
        b[NK][y] = n - mu - 1
        b[NK][x] = mu
        b[RSP][y] = b[RSP][x]
        b[RSP][x] = 0
        if b[RSP][y] != 0 and b[LEAF][y] != 0:
            b[META][RF] = y
        insert_entry(b, p, child_index(b, p, x), keys[x * W + mu], load(b[VALS], x * W + mu), y)
        recompute_if_up(b, x)
        recompute_if_up(b, y)
        return y

    split = slow(split)

    def insert_at(b, st, t, v):
        keys, vals, nk, leaf = b[KEYS], b[VALS], b[NK], b[LEAF]
        x = find_start(b, t)
        while True:
            n = nk[x]
            i = 0
            while i < n and keys[x * W + i] < t:
                i += 1
            if i < n and keys[x * W + i] == t:  # an existing time: old (+) new, in place
                store(vals, x * W + i, combine(load(vals, x * W + i), v))
                repair(b, x, 0, 0)
                return state(b)
            if leaf[x] != 0:
                break
            x = b[KIDS][x * KW + i]
        insert_entry(b, x, i, t, v, NIL)
        hit_left = 0
        hit_right = 0
        while nk[x] > MAXK:
            y = split(b, x)
            hit_left |= b[LSP][x]
            hit_right |= b[RSP][y]
            x = b[PAR][x]
        repair(b, x, hit_left, hit_right)
        return state(b)

    insert_at = jit(insert_at)

    def youngest(b):
        meta = b[META]
        rf = meta[RF]
        return b[KEYS][rf * W + b[NK][rf] - 1]

    youngest = jit(youngest)

    def oldest(b):
        return b[KEYS][b[META][LF] * W]

    oldest = jit(oldest)

    def insert(b, st, v):
        t = youngest(b) + 1 if st[2] > 0 else 0 * st[2]
        return insert_at(b, st, t, v)

    # ------------------------------------------------------------ single evict
    def rebalance_after_evict(b, x):
        """Fix underflows upward by one-entry moves or merges; returns (top, hit_left, hit_right)."""
        keys, vals, kids, nk, par, lsp, rsp, leaf, meta = (b[KEYS], b[VALS], b[KIDS], b[NK], b[PAR], b[LSP],
                                                           b[RSP], b[LEAF], b[META])
        hit_left = lsp[x]
        hit_right = rsp[x]
        while x != meta[ROOT] and nk[x] < MINK:
            p = par[x]
            i = child_index(b, p, x)
            if i < nk[p]:
                left, right, sep, sib = x, kids[p * KW + i + 1], i, kids[p * KW + i + 1]
            else:
                left, right, sep, sib = kids[p * KW + i - 1], x, i - 1, kids[p * KW + i - 1]
            hit_left |= lsp[sib]
            hit_right |= rsp[sib]
            if nk[sib] <= MINK:  # merge right into left through the separator
                nl = nk[left]
                copy_entry(b, left * W + nl, p * W + sep)
                for j in range(nk[right]):
                    copy_entry(b, left * W + nl + 1 + j, right * W + j)
                if leaf[left] == 0:
                    for j in range(nk[right] + 1):
                        set_child(b, left, nl + 1 + j, kids[right * KW + j])
                nk[left] = nl + 1 + nk[right]
                if rsp[right] != 0:
                    rsp[left] = 1
                    if leaf[left] != 0:
                        meta[RF] = left
                for j in range(sep + 1, nk[p]):  # drop separator and right from p
                    copy_entry(b, p * W + j - 1, p * W + j)
                for j in range(sep + 2, nk[p] + 1):
                    kids[p * KW + j - 1] = kids[p * KW + j]
                nk[p] -= 1
                free_node(b, right)
                if p == meta[ROOT] and nk[p] == 0:
                    collapse_root(b)
                    return meta[ROOT], 1, 1
                recompute_if_up(b, left)
            elif sib == right:  # borrow right's first entry through the separator
                insert_entry(b, x, nk[x], keys[p * W + sep], load(vals, p * W + sep), kids[right * KW])
                copy_entry(b, p * W + sep, right * W)
                shift_left(b, right, 1)
                recompute_if_up(b, x)
                recompute_if_up(b, right)
            else:  # borrow left's last entry through the separator
                nl = nk[left]
                for j in range(nk[x], 0, -1):
                    copy_entry(b, x * W + j, x * W + j - 1)
                copy_entry(b, x * W, p * W + sep)
                if leaf[x] == 0:
                    for j in range(nk[x] + 1, 0, -1):
                        kids[x * KW + j] = kids[x * KW + j - 1]
                    set_child(b, x, 0, kids[left * KW + nl])
                nk[x] += 1
                copy_entry(b, p * W + sep, left * W + nl - 1)
                nk[left] = nl - 1
                recompute_if_up(b, x)
                recompute_if_up(b, left)
            x = p
        return x, hit_left, hit_right

    rebalance_after_evict = slow(rebalance_after_evict)

    def evict(b, st):
        x = b[META][LF]
        shift_left(b, x, 1)
        if x != b[META][ROOT] and b[NK][x] < MINK:
            top, hit_left, hit_right = rebalance_after_evict(b, x)
            repair(b, top, hit_left, hit_right)
        else:
            repair(b, x, b[LSP][x], 0)
        return state(b)

    evict = jit(evict)

    # ------------------------------------------------------------ bulk evict (paper 004, section 4)
    def local_evict(b, x, t):
        keys = b[KEYS]
        n = b[NK][x]
        i = 0
        while i < n and keys[x * W + i] <= t:
            i += 1
        if i > 0:
            if b[LEAF][x] == 0:
                for c in range(i):
                    free_tree(b, b[KIDS][x * KW + c])
            shift_left(b, x, i)

    local_evict = jit(local_evict)

    def separator(b, anc, nb_):
        # the entry of anc between node's subtree and its right neighbour's
        keys = b[KEYS]
        first = keys[nb_ * W]
        a = b[NK][anc] - 1
        while keys[anc * W + a] >= first:
            a -= 1
        return a

    separator = jit(separator)

    def move_batch(b, x, nb_, anc, k):
        """x takes the separator and nb_'s first k-1 entries (k children); nb_'s k-th entry goes up."""
        a = separator(b, anc, nb_)
        nx = b[NK][x]
        copy_entry(b, x * W + nx, anc * W + a)
        for j in range(k - 1):
            copy_entry(b, x * W + nx + 1 + j, nb_ * W + j)
        if b[LEAF][x] == 0:
            for j in range(k):
                set_child(b, x, nx + 1 + j, b[KIDS][nb_ * KW + j])
        b[NK][x] = nx + k
        copy_entry(b, anc * W + a, nb_ * W + k - 1)
        shift_left(b, nb_, k)

    move_batch = slow(move_batch)

    def merge_into_neighbor(b, x, nb_, anc):
        """nb_ absorbs x and the separator; anc drops everything left of nb_ (all of it evicted)."""
        kids = b[KIDS]
        a = separator(b, anc, nb_)
        nx = b[NK][x]
        nn = b[NK][nb_]
        s = nx + 1
        for j in range(nn - 1, -1, -1):
            copy_entry(b, nb_ * W + j + s, nb_ * W + j)
        if b[LEAF][nb_] == 0:
            for j in range(nn, -1, -1):
                kids[nb_ * KW + j + s] = kids[nb_ * KW + j]
            for j in range(nx + 1):
                set_child(b, nb_, j, kids[x * KW + j])
        for j in range(nx):
            copy_entry(b, nb_ * W + j, x * W + j)
        copy_entry(b, nb_ * W + nx, anc * W + a)
        b[NK][nb_] = nn + s
        p = b[PAR][x]
        if p != anc:
            detach_last(b, p)  # p and the chain above it up to anc are garbage
        free_node(b, x)
        for c in range(a + 1):
            if kids[anc * KW + c] != x:
                free_tree(b, kids[anc * KW + c])
        shift_left(b, anc, a + 1)

    merge_into_neighbor = slow(merge_into_neighbor)

    def make_root(b, x, first):
        """The cut reached the right spine: x (or its only child) becomes the root."""
        meta = b[META]
        root = meta[ROOT]
        new_root = b[KIDS][x * KW] if (b[LEAF][x] == 0 and b[NK][x] == 0) else x
        if x != root:
            detach_last(b, b[PAR][x])
            free_tree(b, root)
        if new_root != x:
            free_node(b, x)
        meta[ROOT] = new_root
        b[PAR][new_root] = NIL
        b[LSP][new_root] = 0
        b[RSP][new_root] = 0
        if first:
            mark_left_chain(b, new_root)
        if b[LEAF][new_root] != 0:
            meta[LF] = new_root
            meta[RF] = new_root

    make_root = slow(make_root)

    def search_boundary(b, t):
        """Step 1: one (node, neighbour, ancestor) triple per level, top first; returns the depth."""
        keys, kids, nk, par, leaf, meta, scr = b[KEYS], b[KIDS], b[NK], b[PAR], b[LEAF], b[META], b[SCR]
        root = meta[ROOT]
        x = root
        if FINGER and leaf[root] == 0:
            if t < keys[root * W]:
                x = meta[LF]
                while x != root and keys[x * W + nk[x] - 1] < t:
                    x = par[x]
            elif keys[root * W + nk[root] - 1] < t:
                x = meta[RF]
                while x != root and t < keys[x * W]:
                    x = par[x]
        anc = NIL
        nb_ = NIL
        if x != root:
            anc = par[x]
            i = child_index(b, anc, x)
            if i < nk[anc]:
                nb_ = kids[anc * KW + i + 1]
        depth = 0
        scr[0], scr[_LEVELS], scr[2 * _LEVELS] = x, nb_, anc
        while leaf[x] == 0:
            n = nk[x]
            i = 0
            while i < n and keys[x * W + i] < t:
                i += 1
            if i < n and keys[x * W + i] == t:
                break  # everything right of t below here is untouched
            if i == n:
                if nb_ != NIL:
                    nb_ = kids[nb_ * KW]
            else:
                anc = x
                nb_ = kids[x * KW + i + 1]
            x = kids[x * KW + i]
            depth += 1
            scr[depth], scr[_LEVELS + depth], scr[2 * _LEVELS + depth] = x, nb_, anc
        return depth

    search_boundary = slow(search_boundary)

    def bulk_evict_native(b, st, t):
        meta, nk, lsp, rsp, scr, keys = b[META], b[NK], b[LSP], b[RSP], b[SCR], b[KEYS]
        if st[2] == 0:
            return st
        lf = meta[LF]
        if keys[lf * W] > t:  # nothing to evict
            return st
        if nk[lf] >= 2 and keys[lf * W + 1] > t:  # only the oldest: the single eviction
            return evict(b, st)
        depth = search_boundary(b, t)
        skip = NIL
        top = NIL
        hit_left = 0
        hit_right = 0
        made_root = False
        for lev in range(depth, -1, -1):
            x, nb_, anc = scr[lev], scr[_LEVELS + lev], scr[2 * _LEVELS + lev]
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
                if nk[x] >= MINK:
                    top = x
                else:
                    deficit = MINK - nk[x]
                    surplus = nk[nb_] - MINK
                    hit_right |= rsp[nb_]
                    if deficit <= surplus:
                        move_batch(b, x, nb_, anc, deficit)
                        recompute_if_up(b, nb_)
                    else:
                        merge_into_neighbor(b, x, nb_, anc)
                        skip = anc
                    top = anc
            survivor = x if skip == NIL else nb_
            lsp[survivor] = 1
            if first:
                mark_left_chain(b, survivor)
            recompute_if_up(b, survivor)  # classic only: finger survivors are left-spine nodes
        if made_root:
            collapse_root(b)
            top = meta[ROOT]
            hit_left = 1
            hit_right = 1
        elif top == meta[ROOT]:
            collapse_root(b)
            top = meta[ROOT]
            hit_left = 1
            hit_right = 1
        elif nk[top] >= MINK:
            hit_left |= lsp[top]
            hit_right |= rsp[top]
        else:
            top, more_left, more_right = rebalance_after_evict(b, top)
            hit_left |= more_left
            hit_right |= more_right
        repair(b, top, hit_left, hit_right)
        return state(b)

    bulk_evict_native = slow(bulk_evict_native)

    def bulk_evict_loop(b, st, t):
        while st[2] > 0 and oldest(b) <= t:
            st = evict(b, st)
        return st

    bulk_evict_loop = slow(bulk_evict_loop)

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

    add_group = jit(add_group)

    def add_twig(groups, ng, tt, tv, tk, nt, t, v, child):
        tt[nt] = t
        store(tv, nt, v)
        tk[nt] = child
        groups[4 * (ng - 1) + 3] += 1
        return nt + 1

    add_twig = jit(add_twig)

    def small_insert(b, x, tt, tv, tk, s, c):
        """Interleave c twigs into x from the back (x does not overflow)."""
        keys, vals, kids = b[KEYS], b[VALS], b[KIDS]
        internal = b[LEAF][x] == 0
        i = b[NK][x] - 1
        j = c - 1
        w = b[NK][x] + c - 1
        while j >= 0:
            if i >= 0 and keys[x * W + i] > tt[s + j]:
                copy_entry(b, x * W + w, x * W + i)
                if internal:
                    kids[x * KW + w + 1] = kids[x * KW + i + 1]
                i -= 1
            else:
                keys[x * W + w] = tt[s + j]
                store(vals, x * W + w, load(tv, s + j))
                if internal:
                    set_child(b, x, w + 1, tk[s + j])
                j -= 1
            w -= 1
        b[NK][x] += c

    small_insert = slow(small_insert)

    def fill(b, y, mt, mv, mc, start, count):
        for q in range(count):
            b[KEYS][y * W + q] = mt[start + q]
            store(b[VALS], y * W + q, load(mv, start + q))
        if b[LEAF][y] == 0:
            for q in range(count + 1):
                set_child(b, y, q, mc[start + q])
        b[NK][y] = count

    fill = jit(fill)

    def bulk_split(b, x, tt, tv, tk, s, c, level, groups, ng, ntt, ntv, ntk, nt, mt, mv, mc):
        """Claim 1: pieces of mu entries while the rest is over-full; the entries between go up."""
        keys, kids, meta = b[KEYS], b[KIDS], b[META]
        internal = b[LEAF][x] == 0
        n = b[NK][x]
        p = n + c
        if internal:
            mc[0] = kids[x * KW]
        i = 0
        j = 0
        for w in range(p):
            if j >= c or (i < n and keys[x * W + i] < tt[s + j]):
                mt[w] = keys[x * W + i]
                store(mv, w, load(b[VALS], x * W + i))
                if internal:
                    mc[w + 1] = kids[x * KW + i + 1]
                i += 1
            else:
                mt[w] = tt[s + j]
                store(mv, w, load(tv, s + j))
                if internal:
                    mc[w + 1] = tk[s + j]
                j += 1
        if x == meta[ROOT]:
            new_root_above(b, x)
        parent = b[PAR][x]
        was_right = b[RSP][x]
        b[RSP][x] = 0
        fill(b, x, mt, mv, mc, 0, mu)
        pos = mu
        while True:
            y = alloc_node(b, b[LEAF][x])
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
        b[RSP][y] = was_right
        if was_right != 0 and b[LEAF][y] != 0:
            meta[RF] = y
        recompute_if_up(b, x)
        recompute_if_up(b, y)
        return y, ng, nt

    bulk_split = slow(bulk_split)

    def level_of(b, x):
        level = 0
        while b[LEAF][x] == 0:
            x = b[KIDS][x * KW]
            level += 1
        return level

    level_of = jit(level_of)

    def bulk_insert_native(b, st, bt, bv, m):
        if m == 0:
            return st
        if m == 1:  # no scratch to allocate for a single entry
            return insert_at(b, st, bt[0], load(bv, 0))
        room = m + 2
        return bulk_insert_work(b, st, bt, bv, m, talloc(room), alloc(room), ialloc(room), ialloc(8 * room),
                                talloc(room), alloc(room), ialloc(room), ialloc(8 * room),
                                talloc(W + room), alloc(W + room), ialloc(W + room + 1), ialloc(4 * _LEVELS),
                                talloc(2 * _LEVELS))

    def bulk_insert_work(b, st, bt, bv, m, tt0, tv0, tk0, g0, tt1, tv1, tk1, g1, mt, mv, mc, path, path_t):
        keys, vals, kids, nk, par, leaf, meta = b[KEYS], b[VALS], b[KIDS], b[NK], b[PAR], b[LEAF], b[META]
        pn, plev, phl, phu = path[:_LEVELS], path[_LEVELS:2 * _LEVELS], path[2 * _LEVELS:3 * _LEVELS], path[3 * _LEVELS:]
        plb, pub = path_t[:_LEVELS], path_t[_LEVELS:]
        # Step 1: multi-search from the right finger (the root for classic), leaf-level groups in time order.
        root = meta[ROOT]
        t0 = bt[0]
        x = root
        level = level_of(b, root)
        if FINGER:
            x = meta[RF]
            level = 0
            while x != root and t0 < keys[x * W]:
                x = par[x]
                level += 1
        sp = 0
        pn[0] = x
        plev[0] = level
        phl[0] = 1 if (x != root and nk[x] > 0) else 0
        plb[0] = keys[x * W] if phl[0] != 0 else t0
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
                n = nk[x]
                i = 0
                while i < n and keys[x * W + i] < t:
                    i += 1
                found = i < n and keys[x * W + i] == t
                if found or leaf[x] != 0:
                    break
                sp += 1
                if i > 0:
                    phl[sp] = 1
                    plb[sp] = keys[x * W + i - 1]
                else:
                    phl[sp] = phl[sp - 1]
                    plb[sp] = plb[sp - 1]
                if i < n:
                    phu[sp] = 1
                    pub[sp] = keys[x * W + i]
                else:
                    phu[sp] = phu[sp - 1]
                    pub[sp] = pub[sp - 1]
                x = kids[x * KW + i]
                level -= 1
                pn[sp] = x
                plev[sp] = level
            if found:
                store(vals, x * W + i, combine(load(vals, x * W + i), v))
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
                if c > 0 and nk[x] + c > MAXK:
                    last, ng2, nt2 = bulk_split(b, x, cur_t, cur_v, cur_k, s, c, level, nxt_g, ng2,
                                                nxt_t, nxt_v, nxt_k, nt2, mt, mv, mc)
                else:
                    if c > 0:
                        small_insert(b, x, cur_t, cur_v, cur_k, s, c)
                    if kind(b, x) == UP:
                        recompute(b, x)
                        if par[x] != NIL:
                            ng2 = add_group(nxt_g, ng2, par[x], level + 1, nt2)
                for z in (x, last):
                    if z == meta[ROOT]:
                        root_touched = True
                    else:
                        if b[LSP][z] != 0:
                            top_left = z
                        if b[RSP][z] != 0:
                            top_right = z
            ng = ng2
            cur_t, cur_v, cur_k, cur_g, nxt_t, nxt_v, nxt_k, nxt_g = (nxt_t, nxt_v, nxt_k, nxt_g,
                                                                      cur_t, cur_v, cur_k, cur_g)
            level += 1
        # Step 3: pass down the touched spines.
        if FINGER:
            if root_touched:
                recompute(b, meta[ROOT])
            if top_left != NIL:
                recompute(b, top_left)
                walk_down(b, top_left, False)
            if top_right != NIL:
                recompute(b, top_right)
                walk_down(b, top_right, True)
        return state(b)

    bulk_insert_work = slow(bulk_insert_work)
    bulk_insert_native = nrt(bulk_insert_native)

    def bulk_insert_loop(b, st, bt, bv, m):
        for q in range(m):
            st = insert_at(b, st, bt[q], load(bv, q))
        return st

    bulk_insert_loop = slow(bulk_insert_loop)

    # ------------------------------------------------------------ range query
    def range_query(b, st, lo, hi, lo_open):
        """Fold of the entries with lo <= time <= hi (lo < time when ``lo_open``), in time order."""
        keys, vals, aggs, kids, nk, leaf, scr = b[KEYS], b[VALS], b[AGGS], b[KIDS], b[NK], b[LEAF], b[SCR]
        acc = identity
        if st[2] == 0 or hi < lo:
            return acc
        sp = 0
        scr[_RQ] = b[META][ROOT]
        scr[_RQ + _LEVELS] = 0
        scr[_RQ + 2 * _LEVELS] = 0  # bit 0: subtree all >(=) lo; bit 1: subtree all <= hi
        while sp >= 0:
            x = scr[_RQ + sp]
            pos = scr[_RQ + _LEVELS + sp]
            flags = scr[_RQ + 2 * _LEVELS + sp]
            n = nk[x]
            if pos > 2 * n:
                sp -= 1
                continue
            scr[_RQ + _LEVELS + sp] = pos + 1
            if pos % 2 == 1:
                i = (pos - 1) // 2
                k = keys[x * W + i]
                if k > hi:
                    return acc
                if k > lo or (k == lo and not lo_open):
                    acc = combine(acc, load(vals, x * W + i))
            elif leaf[x] == 0:
                i = pos // 2
                if i < n and keys[x * W + i] <= lo:
                    continue  # the child lies wholly below the range
                if i > 0 and keys[x * W + i - 1] >= hi:
                    return acc  # it and everything after lie above the range
                child_flags = 0
                if i == 0:
                    child_flags |= flags & 1
                elif keys[x * W + i - 1] >= lo:
                    child_flags |= 1
                if i == n:
                    child_flags |= flags & 2
                elif keys[x * W + i] <= hi:
                    child_flags |= 2
                ch = kids[x * KW + i]
                if child_flags == 3 and kind(b, ch) == UP:
                    acc = combine(acc, load(aggs, ch))
                else:
                    sp += 1
                    scr[_RQ + sp] = ch
                    scr[_RQ + _LEVELS + sp] = 0
                    scr[_RQ + 2 * _LEVELS + sp] = child_flags
        return acc

    range_query = jit(range_query)

    # ------------------------------------------------------------ capacity
    def init(capacity):
        cap = power_of_two_at_least(capacity + 2 * MARGIN)
        b = new_bufs(cap)
        meta = b[META]
        meta[CAP] = cap
        meta[FRESH] = 0
        meta[NFREE] = 0
        root = alloc_node(b, 1)
        store(b[AGGS], root, identity)
        meta[ROOT] = root
        meta[LF] = root
        meta[RF] = root
        return b, state(b)

    init = nrt(init)

    def grow(b, st):
        cap = b[META][CAP]
        g = new_bufs(2 * cap)
        for i in range(cap * W):
            g[KEYS][i] = b[KEYS][i]
            store(g[VALS], i, load(b[VALS], i))
        for i in range(cap * KW):
            g[KIDS][i] = b[KIDS][i]
        for x in range(cap):
            store(g[AGGS], x, load(b[AGGS], x))
            g[NK][x] = b[NK][x]
            g[PAR][x] = b[PAR][x]
            g[LEAF][x] = b[LEAF][x]
            g[LSP][x] = b[LSP][x]
            g[RSP][x] = b[RSP][x]
            g[CNT][x] = b[CNT][x]
            g[FREE][x] = b[FREE][x]
        for i in range(8):
            g[META][i] = b[META][i]
        g[META][CAP] = 2 * cap
        return g, state(g)

    grow = nrt(grow)

    def reserve(b, st, m):
        while st[0] - st[2] < m:
            b, st = grow(b, st)
        return b, st

    reserve = nrt(reserve)

    bulk_insert = bulk_insert_native if bulk else bulk_insert_loop
    evict_upto = bulk_evict_native if bulk else bulk_evict_loop
    return TreeFuncs(init, jit(insert), evict, jit(query), grow, insert_at, evict_upto, bulk_insert,
                     range_query, reserve, oldest, youngest)
