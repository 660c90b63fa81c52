"""Whole-array passes cut into pieces that run at once on threads.

winagg's compiled passes over whole arrays (block scans, the key sort and its
gather and scatter) release the GIL, so pieces of the rows run on the threads
of a pool. Each piece is a range of rows that no other piece writes; a block
scan's pieces begin at segment boundaries and rescan the segment before them
(:func:`in_pieces`), so that every answer is the one a single scan gives, bit
for bit.
"""

from __future__ import annotations

import os

import numba as nb
import numpy as np

#: Fewer rows than this per thread run in one piece: starting a thread (and rescanning a
#: segment) would cost more than the piece saves.
ROWS_PER_THREAD = 1 << 16


def thread_count(threads) -> int:
    """``threads`` checked, or every core this process may run on when it is None."""
    if threads is None:
        return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)):
        raise TypeError(f"threads must be a whole number of threads (or None for every core), got {threads!r}")
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads}")
    return int(threads)


def even_cuts(n: int, threads: int) -> list:
    """``0 = c_0 < ... < c_p = n``: at most ``threads`` ranges of about equal size, none much
    below :data:`ROWS_PER_THREAD` rows."""
    pieces = max(1, min(threads, n // ROWS_PER_THREAD))
    return [n * k // pieces for k in range(pieces + 1)]


def on_threads(kernel, n: int, threads: int, *args, cuts=None) -> list:
    """``[kernel(*args, lo, hi), ...]`` over ``[0, n)`` cut into up to ``threads`` ranges
    (:func:`even_cuts`) run at once; ``cuts`` gives the ranges' bounds instead."""
    cuts = even_cuts(n, threads) if cuts is None else cuts
    if len(cuts) <= 2:
        return [kernel(*args, cuts[0], cuts[1])] if len(cuts) == 2 else []
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(len(cuts) - 1) as pool:
        return list(pool.map(lambda k: kernel(*args, cuts[k], cuts[k + 1]), range(len(cuts) - 1)))


# ---------------------------------------------------------------- block scans
@nb.njit(cache=True, inline="always", nogil=True)
def segment_end(starts, n, c):
    """One past the last row whose window (first rows ``starts``) starts at or before row ``c``:
    the end of the block-scan segment that begins at ``c``."""
    e = c + 1
    while e < n and starts[e] <= c:
        e += 1
    return e


def in_pieces(kernel, x, starts, width, widest, threads, out, extra):
    """Run ``kernel(x, starts, width, *extra(widest), out, first)`` over ``threads`` pieces of the
    rows at once; the sum of the pieces' returns (saw_nan, extreme answers).

    A piece [lo, hi) begins at a segment boundary and is scanned from the start of the
    segment before it (``first`` = the rows of that segment, whose answers the kernel does not
    write): its windows then see the same suffix and prefix partials as in one scan over all
    rows. Row windows (``width``) have segments of ``width`` rows; windows with first rows
    ``starts`` are cut by :func:`segment_end`.
    """
    befores, cuts = _piece_cuts(x.shape[0], starts, width, threads)
    if len(cuts) <= 2:
        return kernel(x, starts, width, *extra(widest), out, 0)

    def piece(lo, hi):
        before = befores[cuts.index(lo)]
        local = starts if width > 0 else np.maximum(starts[before:hi] - before, 0)
        return kernel(x[before:hi], local, width, *extra(widest), out[before:hi], lo - before)

    return sum(on_threads(piece, x.shape[0], threads, cuts=cuts))


def _piece_cuts(n, starts, width, threads):
    """``(befores, cuts)``: segment boundaries ``0 = c_0 < ... < c_p = n`` near :func:`even_cuts`,
    and the first row of the segment before each piece's first (0 for the first piece)."""
    wanted = np.array(even_cuts(n, threads)[1:-1], np.int64)
    if wanted.size == 0:
        return [0], [0, n]
    if width > 0:
        cuts = wanted - wanted % width
        befores = cuts - width
    else:
        befores, cuts = _segments_at(starts, wanted)
    keep = (cuts > 0) & (cuts < n) & np.r_[True, cuts[1:] > cuts[:-1]]
    return [0, *befores[keep].tolist()], [0, *cuts[keep].tolist(), n]


@nb.njit(cache=True, nogil=True)
def _segments_at(starts, rows):
    """For each of the increasing ``rows``: the first segment boundary at or after it (or n) and the
    boundary before that one, walking the segments as the kernels cut them."""
    n = starts.shape[0]
    cuts = np.empty(rows.shape[0], np.int64)
    befores = np.empty(rows.shape[0], np.int64)
    before = 0
    c = 0
    for q in range(rows.shape[0]):
        while c < rows[q] and c < n:
            before = c
            c = segment_end(starts, n, c)
        befores[q] = before
        cuts[q] = c
    return befores, cuts
