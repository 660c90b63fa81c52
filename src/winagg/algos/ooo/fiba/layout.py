"""The FiBA tree's node layout in flat arrays, and the compile choices each part is built with.

A node pool keeps every node in three buffers, so the same code runs over
Python lists (any monoid, any comparable times) and, compiled, over numpy
arrays (float64 or int64 times):

* ``keys``: node ``x``'s times in slots ``x*SLOTS .. x*SLOTS + 2*mu - 1`` (``2*mu - 1``
  entries plus one for a transient overflow);
* ``parts``: its values in the same slots, and its aggregate in slot ``x*SLOTS + AGG``
  (``AGG = 2*mu``); an internal node on one spine also keeps its *local* aggregate
  (its kind's fold without the parent's term) in the overflow slot ``x*SLOTS + LOCAL``,
  which holds an entry only for the moment between an insert that overflows the node
  and its split;
* ``ints``: a header (root, fingers, pool counters, scratch), then one record
  of ``RECORD`` ints per node (entry count, parent, leaf flag, spine flags, the
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
child's local one) instead of a fold of each node's entries and children. Each
node also stores the count of entries its aggregate covers, so the window size
comes out of the same three nodes.

Freed subtrees go onto a deferred free list: freeing is O(1) per subtree,
and an allocation that pops a node pushes that node's children.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple, Optional

import numba as nb
import numpy as np
from llvmlite import ir
from numba.core import cgutils
from numba.extending import intrinsic

from ....core.ops import runs_in_python

NIL = -1
#: Nodes kept free beyond a batch: a split cascade makes at most one node per level plus a root.
MARGIN = 72
#: Levels a path through the tree may have (the scratch areas' length).
LEVELS = 64
#: Scratch layout: boundary triples of a bulk evict, then (at ``RANGE_STACK``) the range-query stack.
RANGE_STACK = 4 * LEVELS
#: Bytes in a cache line (x86-64 and most ARM cores).
CACHE_LINE = 64

# Buffer indices in the bufs tuple.
KEYS, PARTS, INTS = range(3)
# Header slots of ``ints``: the root, the leftmost and rightmost leaves, the next never-used
# node, the length of the free list and the pool's capacity in nodes.
ROOT, LEFT_FINGER, RIGHT_FINGER, NEXT_FRESH, FREE_COUNT, CAPACITY = range(6)
#: Where the scratch starts in ``ints``.
SCRATCH = 8
#: Where the node records start in ``ints``.
RECORDS = SCRATCH + RANGE_STACK + 4 * LEVELS
# Fields of a node record: node x's field F is ``ints[x * RECORD + F]`` (the offsets include
# RECORDS); its i-th child is ``ints[x * RECORD + CHILD + i]``. COVERED counts the entries the
# node's aggregate covers.
N_ENTRIES, PARENT, IS_LEAF, ON_LEFT_SPINE, ON_RIGHT_SPINE, COVERED, CHILD = (RECORDS + k for k in range(7))
# Aggregate kinds.
UP, LEFT, RIGHT, INNER = 0, 1, 2, 3


def slots_per_node(mu: int) -> int:
    """``SLOTS``: key and partial slots per node (2*mu entry slots, then the aggregate's)."""
    return 2 * mu + 1


def ints_per_node(mu: int) -> int:
    """``RECORD``: ints per node record (six fields, then 2*mu + 1 child slots)."""
    return 6 + 2 * mu + 1


def free_list_start(ints, mu: int) -> int:
    """Where the free list starts in ``ints`` (after the records of every node of the pool)."""
    return RECORDS + ints[CAPACITY] * ints_per_node(mu)


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


def never_inlined(fn):
    """Compiled without the runtime and never inlined: a rare path called from the flat code.

    A function compiled flat (``ops.jit_flat``, LLVM ``alwaysinline``) passes that flag on
    to the functions it calls, so its rare paths would be inlined into the kernel's loop too
    and crowd its registers. numba marks a function ``noinline`` only when it carries debug
    information, hence ``debug=True`` (with bounds checks and lifetime extension kept off).
    """
    from ....core import jitcache

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


class TreeBuild(NamedTuple):
    """What every part of one FiBA tree is built from: the monoid, the sizes, the decorators.

    The parts (:mod:`.fiba_nodes`, :mod:`.fiba_repair`, ...) unpack the fields they use into
    locals before defining their functions: numba reads a closure's variables as compile-time
    constants, so ``finger`` or ``mu`` prune the branches they decide.
    """

    combine: Callable
    identity: Any
    load: Callable
    store: Callable
    alloc: Callable  # partial buffers
    #: ``combine_into(out, a, b)`` of vector partials with an in-place combine, else None
    into: Optional[Callable]
    python: bool
    #: Decorators. ``nrt``: functions that allocate buffers. ``flat``: everything small or on
    #: the in-order round (append at the right finger, evict at the left finger, query),
    #: compiled without the runtime and inlined by LLVM into its callers: the kernel's loop
    #: makes no call in the common case, and a rare path makes no call inside. ``apart``: the
    #: rare paths (splits, underflows, out-of-order inserts, bulk operations), each one real
    #: call, never inlined.
    flat: Callable
    apart: Callable
    nrt: Callable
    #: Small steps always inlined into their callers, by numba for vector partials (a call that
    #: passes rows counts their references), by LLVM otherwise (``ops.jit_flat``).
    inline: Callable
    #: Every index into the buffers goes through ``at``: unsigned when compiled, so numba does
    #: not test it for a negative value (a branch on every buffer access in the tree's loops).
    #: Every loop over a node's entries or children calls ``scalar`` first: LLVM vectorised
    #: them, and the setup costs more than the few items they touch.
    at: Callable
    scalar: Callable
    prefetch: Callable
    #: partial slots in one 64-byte cache line (at least 1): a node's partials span
    #: ``SLOTS / line_parts`` lines, and a prefetch names each of them
    line_parts: int
    alloc_ints: Callable
    alloc_times: Callable
    mu: int  # min arity
    finger: bool  # spine aggregates and finger searches (else the classic B-tree)
    #: With a commutative combine, an insert's new value is folded into each aggregate that
    #: covers it (one combine per node, see repair_commutative) instead of refolding the nodes.
    commutative: bool
    slots: int  # key and partial slots per node
    record: int  # ints per node record
    agg: int  # the node's aggregate's slot (after the 2*mu entry slots)
    local: int  # an internal one-spine node's local aggregate (the overflow slot)
    max_entries: int  # entries of a full node (arity 2*mu)
    min_entries: int  # entries of a minimal non-root node (arity mu)


def tree_build(ops, mu: int, finger: bool, times: str = "float64") -> TreeBuild:
    """The :class:`TreeBuild` of a tree of min arity ``mu`` over ``ops`` with ``times`` keys."""
    python = runs_in_python(ops)
    nrt = ops.jit_call
    if python:
        flat = apart = ops.jit
    else:
        probe = ops.alloc(1)
        vector = isinstance(probe, np.ndarray) and probe.ndim == 2  # combine allocates: keep the runtime
        if vector:
            # a combine allocates (and costs more than a call): everything out of line, which
            # also keeps compiling each function once instead of once per call site
            flat = apart = ops.jit_call
        else:
            # Reference counting costs atomic operations on every buffer access in the tree's
            # branchy loops, and each call passes the three buffers as 21 words; with scalar
            # partials nothing here allocates, so the tree runs without the runtime and mostly
            # without calls.
            flat = ops.jit_flat
            apart = never_inlined
    line_parts = 1
    if python:
        alloc_ints, alloc_times = _ints_py, _times_py
    else:
        alloc_ints, alloc_times = _ints_np, (_times_np_int if times == "int64" else _times_np)
        if isinstance(probe, np.ndarray):  # one slot
            line_parts = max(1, CACHE_LINE * len(probe) // max(1, probe.nbytes))
    return TreeBuild(
        combine=ops.combine, identity=ops.identity, load=ops.load, store=ops.store, alloc=ops.alloc,
        # Vector partials (sketches) with an in-place combine: the in-order round's folds write
        # into the aggregate's row instead of allocating a new partial for each combine.
        into=ops.combine_into, python=python, flat=flat, apart=apart, nrt=nrt, inline=ops.jit_flat,
        at=ops.index, scalar=ops.one_at_a_time, prefetch=_no_prefetch if python else _prefetch,
        line_parts=line_parts,
        alloc_ints=alloc_ints, alloc_times=alloc_times, mu=mu, finger=bool(finger),
        commutative=bool(ops.commutative), slots=slots_per_node(mu), record=ints_per_node(mu),
        agg=2 * mu, local=2 * mu - 1, max_entries=2 * mu - 1, min_entries=mu - 1)
