"""What an algorithm is built from, so that one source runs in Python and in numba.

An algorithm module defines ``build(ops)`` returning :class:`Funcs`. Its
functions take and return a *state tuple* (buffers, integer positions and
partials) and only mutate buffers in place, so numba keeps positions in
registers and plain Python runs the same code unchanged.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple, Optional

import numba as nb
import numpy as np
from llvmlite import ir
from numba.extending import intrinsic

from . import jitcache
from .layout import PYTHON


def _no_jit(fn):
    return fn


def _as_is(index):
    return index


def _nothing(index):
    pass


@intrinsic
def _unsigned(typingctx, index):
    """``index`` as an unsigned integer (the same bits): an array index numba does not wrap.

    numba turns a negative signed index ``i`` into ``len + i``, a compare and a select on every
    access, which LLVM can only drop where it proves the index non-negative (not for indices
    read from memory or masked ring positions). Algorithms whose indices are never negative
    index through ``Ops.index`` and pay nothing.
    """
    def codegen(context, builder, signature, args):
        return context.cast(builder, args[0], signature.args[0], nb.types.uint64)

    return nb.types.uint64(index), codegen


@intrinsic
def _one_at_a_time(typingctx, index):
    """Compiles to no instruction, but keeps LLVM from vectorising the loop that calls it.

    For loops over a handful of items (a tree node's entries): vectorised for 8 lanes on
    AVX-512, with masked gathers when the count is bounded, their setup costs more than the
    few items they touch. An empty ``asm sideeffect`` that reads the loop index (and no
    memory) is a call the vectoriser cannot widen; it emits nothing and leaves every other
    optimisation be.
    """
    def codegen(context, builder, signature, args):
        barrier = ir.InlineAsm(ir.FunctionType(ir.VoidType(), [args[0].type]), "", "r", side_effect=True)
        builder.call(barrier, [args[0]], attrs=("nounwind", "readnone"))
        return context.get_dummy_value()

    return nb.types.void(index), codegen


class Ops(NamedTuple):
    """The monoid and storage an algorithm is specialised to."""

    combine: Callable
    identity: Any
    alloc: Callable
    load: Callable
    store: Callable
    inverse: Optional[Callable]
    jit: Callable  # decorator applied to each built function (identity in Python mode)
    jit_call: Callable  # the same, for a rare slow path kept out of line (not inlined)
    #: the same, for a function that loops over the buffers (see :func:`compiled_ops`)
    jit_loop: Callable = _no_jit
    #: like ``jit_loop``, but inlined into every caller by LLVM rather than called: a per-item
    #: operation with loops that a kernel runs with neither a call nor reference counts
    jit_flat: Callable = _no_jit
    #: ``index(i)``: ``i`` (never negative) as an array index without numba's wraparound for
    #: negative indices (unsigned when compiled); the identity in Python
    index: Callable = _as_is
    #: ``one_at_a_time(i)``, called first in a short loop's body: the loop stays scalar (compiled)
    one_at_a_time: Callable = _nothing
    #: ``combine_into(out, a, b)``: writes ``combine(a, b)`` into the vector partial ``out``, which
    #: may be ``a`` or ``b`` (rows of a buffer); None when partials are not vectors or the
    #: aggregation gives none. A vector ``combine`` allocates its result, and an algorithm that
    #: keeps its partials in rows (FlatFAT's nodes) can fold into them without that allocation.
    #: A function folding vector partials in place still needs numba's runtime: compiled without
    #: it, it never released the buffers its caller passed (64 MB kept per Bloom call at 2^16).
    combine_into: Optional[Callable] = None
    #: True when ``combine`` is commutative (the monoid or the aggregation says so)
    commutative: bool = False
    #: ``combine_rows(out_buf, out, a_buf, a, b_buf, b)``: writes ``combine(a_buf[a], b_buf[b])``
    #: into row ``out`` of ``out_buf`` (the rows may be one), reading and writing the 2D buffers
    #: by index; None where ``combine_into`` is None. A row loaded as a view costs two atomic
    #: reference-count updates (numba's runtime), which cost more than a 64-word OR: an
    #: algorithm that folds rows by index (with :func:`store_row` and :func:`copy_row`) makes no
    #: views at all (FlatFAT on Bloom at window 4096: a third of a round's time went to them).
    combine_rows: Optional[Callable] = None
    #: for the rare events of a per-item operation compiled flat (``jit_flat``): kept out of
    #: line, as a call, so that their loops do not crowd the common step's registers
    jit_rare: Callable = _no_jit


class Funcs(NamedTuple):
    """One algorithm specialised to one monoid.

    The state is split in two: ``bufs`` (the buffers, mutated in place) and
    ``st``, a tuple of positions and partials that every call returns anew.
    Returning arrays from a compiled function costs reference counting on
    every call, so only ``init`` and ``grow`` return buffers. By convention
    ``st`` starts with ``(mask, first, end)``: capacity is ``mask + 1`` and the
    window holds positions ``first .. end - 1``.

    ``init(capacity) -> (bufs, st)``; ``insert(bufs, st, partial) -> st``
    (the caller grows first when the window is full: :func:`winagg.core.state.full`);
    ``evict(bufs, st) -> st`` (the caller guarantees a non-empty window);
    ``query(bufs, st) -> partial``; ``grow(bufs, st) -> (bufs, st)`` doubles
    the capacity.

    An algorithm with more native operations returns a NamedTuple with these
    five fields first and any of these after them, which the wrappers and
    kernels use when present: ``bulk_evict(bufs, st, count) -> st`` (drop the
    ``count`` oldest items) and ``range_query(bufs, st, pos_from, pos_to) ->
    partial`` (aggregate of positions ``pos_from .. pos_to - 1``).
    """

    init: Callable
    insert: Callable
    evict: Callable
    query: Callable
    grow: Callable


class RangeFuncs(NamedTuple):
    """:class:`Funcs` plus the native ``bulk_evict`` and ``range_query`` (B-Int, FlatFIT)."""

    init: Callable
    insert: Callable
    evict: Callable
    query: Callable
    grow: Callable
    bulk_evict: Callable
    range_query: Callable




def python_ops(monoid) -> Ops:
    """Ops that run the algorithm in plain Python over a list of arbitrary partials."""
    return Ops(monoid.combine, monoid.identity, PYTHON.alloc, PYTHON.load, PYTHON.store,
               monoid.inverse, _no_jit, _no_jit, _no_jit, _no_jit, commutative=bool(monoid.commutative))


def _njit_inline(fn):
    # Inlined at numba's IR level: the kernel loop then holds the whole algorithm.
    return jitcache.njit(fn, inline="always")


def _njit_call(fn):
    return jitcache.njit(fn)


def _njit_without_refcounts(fn):
    return jitcache.njit(fn, _nrt=False)


def _njit_out_of_line(fn):
    # LLVM inlines every compiled callee it sees, and a function compiled flat passes its
    # forceinline on to the functions it calls; numba marks a function noinline when it is
    # compiled with debug information, and only then, and forceinline=False stops the inherited
    # flag. (Without the runtime, as jit_loop for scalar and tuple partials.)
    return jitcache.njit(fn, _nrt=False, forceinline=False, debug=True, boundscheck=False,
                         _dbg_extend_lifetimes=False)


def _njit_flat(fn):
    # Compiled without numba's runtime, then marked "alwaysinline" for LLVM: the caller
    # gets the body in place after numba's reference counting was decided, so the body
    # adds none (numba's own inlining, inline="always", would re-type it with the caller's
    # reference counting).
    return jitcache.njit(fn, _nrt=False, forceinline=True)


def compiled_ops(spec) -> Ops:
    """Ops that compile the algorithm with numba for a built-in aggregation's description."""
    layout = spec.layout
    # numba cannot prune the reference counting of the buffers in a function that loops and is
    # inlined into a kernel: every call then pays atomic increments and decrements, more than
    # the work of a small query or evict. Such functions are compiled apart with numba's
    # runtime off, which is safe while nothing in them allocates: true for scalar and tuple
    # partials, not for vector partials (Bloom filters), whose combine allocates and keeps the
    # ordinary call.
    # jit_flat goes further for per-item operations that branch into loops and rare calls:
    # numba's pruning also gives up when an inlined function calls another one (the call's
    # error exit keeps the references), while a body inlined by LLVM from a function compiled
    # without the runtime carries no reference counting at all, and no call either (a call
    # per operation costs more than a small round's work).
    vector = isinstance(spec.identity, np.ndarray)
    return Ops(spec.combine, spec.identity, layout.alloc, layout.load, layout.store, spec.inverse,
               _njit_inline, _njit_call, _njit_call if vector else _njit_without_refcounts,
               _njit_inline if vector else _njit_flat, _unsigned, _one_at_a_time,
               getattr(spec, "combine_into", None) if vector else None, bool(getattr(spec, "commutative", False)),
               getattr(spec, "combine_rows", None) if vector else None,
               _njit_call if vector else _njit_out_of_line)


@nb.njit(cache=True, inline="always")
def store_row(buf, row, value):
    """``buf[row] = value`` for a vector partial ``value``, without making a view of the row."""
    for i in range(value.shape[0]):
        buf[row, i] = value[i]


@nb.njit(cache=True, inline="always")
def copy_row(dst_buf, dst, src_buf, src):
    """``dst_buf[dst] = src_buf[src]`` (rows of 2D buffers), without making a view of either."""
    for i in range(dst_buf.shape[1]):
        dst_buf[dst, i] = src_buf[src, i]


def flat_unless_vector(ops: Ops) -> Callable:
    """``ops.jit_flat`` for scalar and tuple partials, ``ops.jit_loop`` for vector ones.

    For an in-order operation that holds a rare loop (a flip): flat, it runs with neither a
    call nor reference counting; a vector combine allocates, so there it stays a call.
    """
    return ops.jit_loop if ops.jit_flat is ops.jit else ops.jit_flat


@nb.njit(cache=True)
def power_of_two_at_least(n):
    """Smallest power of two that is >= max(n, 2) (compiled, so kernels can call it)."""
    cap = 2
    while cap < n:
        cap *= 2
    return cap


def runs_in_python(ops: Ops) -> bool:
    """Whether ``ops`` are :func:`python_ops` (plain Python for any monoid), not compiled ones."""
    return ops.alloc is PYTHON.alloc


def helper_for(ops: Ops, helper):
    """A compiled helper as ``ops`` run it: the helper for compiled ops, its plain Python function for
    Python ones, so that a per-item window in Python never loads numba (a process's first load
    takes longer than a small window's whole work)."""
    return helper.py_func if runs_in_python(ops) else helper


def build_alloc_empty(ops: Ops):
    """``alloc_empty(slots) -> buf``: a buffer whose every slot holds the identity.

    For trees whose nodes are read before they are first written: an unwritten
    node then reads as an empty aggregate, never as garbage.
    """
    alloc, store, identity = ops.alloc, ops.store, ops.identity

    def alloc_empty(slots):
        buf = alloc(slots)
        for slot in range(slots):
            store(buf, slot, identity)
        return buf

    return ops.jit_call(alloc_empty)


def build_regrow(ops: Ops):
    """``regrow(buf, mask, first, end) -> buf``: a ring buffer of twice the capacity.

    Positions are never wrapped: a slot is ``position & mask``, so after the
    copy every position in ``[first, end)`` still finds its partial.
    """
    alloc, load, store = ops.alloc, ops.load, ops.store

    def regrow(buf, mask, first, end):
        new_mask = 2 * mask + 1
        new_buf = alloc(new_mask + 1)
        for pos in range(first, end):
            store(new_buf, pos & new_mask, load(buf, pos & mask))
        return new_buf

    return ops.jit(regrow)


def build_evict_many(funcs: Funcs, ops: Ops):
    """``evict_many(bufs, st, count) -> st``: the algorithm's native bulk eviction, or a loop of evicts."""
    from .capabilities import BulkEvict

    if isinstance(funcs, BulkEvict):
        return funcs.bulk_evict
    evict = funcs.evict

    def evict_many(bufs, st, count):
        for _ in range(count):
            st = evict(bufs, st)
        return st

    # A call, not inlined: a second inlined copy of a large evict (FiBA's) beside the driver's
    # own slows FiBA's row window, where this loop never even runs.
    return ops.jit_call(evict_many)
