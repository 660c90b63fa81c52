"""Exact rolling order statistics: median, quantiles and rank, with the whole loop compiled.

A window's order statistics need its values in order, which no constant-size monoid
keeps. Two compiled structures give them per row in logarithmic time:

- **Windows that slide forward** (row windows, sorted times): the rows are taken in
  chunks of at least two of the longest window; numpy sorts each chunk's segment (the
  chunk and the rows its first window reaches back to) as plain integers, each float's
  order-preserving bits with the row's place in their lowest bits, and a bitmap over the
  segment's sorted places marks the rows in the window. A row enters or leaves by one bit;
  the k-th smallest is reached by walking from the previous row's answer, which moves by
  about one rank per row (a step or two, each a find-next-set-bit; a time window whose row
  count jumps walks as far as it jumps), and the next value above it is kept as rows come
  and go. Rank counts the marks below a place with a Fenwick tree: O(log w) per row. A
  chunk's structures hold about 3w places, so they stay in cache where a structure over the
  whole array's ranks would not. Chunks share nothing, so runs of them go to threads.
- **Unsorted times** ("arrived so far": row i covers the rows j <= i whose time lies in
  ``(t_i - window, t_i]``): the rows in time order form a wavelet matrix over their
  value ranks; each level keeps a Fenwick tree of the rows that have arrived, so the
  k-th smallest among the arrived rows of a time range (and the count below a value)
  takes one descent through the levels: O(log^2 n) per row and O(n log n) memory.

Missing values (NaN) are never counted, as pandas skips them; a window without a value
answers NaN. The answers follow pandas' ``rolling(..., min_periods=1)`` formulas.
"""

from __future__ import annotations

import numba as nb
import numpy as np
from llvmlite import ir
from numba.extending import intrinsic

from ..aggregations.order_formulas import interpolate, position_of, rank_answer
from ..aggregations.quantile import INTERPOLATIONS, RANK_METHODS, Quantile, Rank
from ..times import read_times
from ..values import float_values
from .pieces import ROWS_PER_THREAD, on_threads

#: Rows per chunk at least: a shorter chunk would sort its segment too often.
MIN_CHUNK = 1024
#: Rows per chunk in longest windows: each chunk also sorts the window before its first row.
CHUNK_WINDOWS = 2


def handles(monoid) -> bool:
    """True when :func:`rolling` computes ``monoid`` (an exact quantile, median or rank)."""
    return isinstance(monoid, (Quantile, Rank))


def rolling(values, window, monoid, times=None, threads=1) -> np.ndarray:
    """Per-row exact quantile, median or rank of each row's window (see :func:`winagg.rolling`);
    windows that slide forward run their chunks on up to ``threads`` threads, same answers."""
    x = float_values(values, "values")
    n = x.shape[0]
    if times is None:
        return _sliding_answers(x, int(window), _NO_STARTS, monoid, threads)
    t, w, first_unsorted = read_times(times, window, n)
    if first_unsorted < 0:
        starts = np.searchsorted(t, t - w, side="right").astype(np.int64)
        return _sliding_answers(x, 0, starts, monoid, threads)
    return _arrival_answers(x, t, w, monoid)


def window_answers(values: np.ndarray, starts: np.ndarray, monoid, threads=1) -> np.ndarray:
    """Each row's exact quantile, median or rank over the rows ``starts[i]`` to ``i`` of the
    float64 ``values`` (NaN never counted), for windows cut anywhere, as per-key frames cut them:
    ``starts`` never decreases and ``starts[i] <= i``."""
    return _sliding_answers(np.asarray(values, np.float64), 0, np.asarray(starts, np.int64), monoid, threads)


def _codes(monoid):
    """``(rank, a, b, c)``: the kernel's arguments for ``monoid`` (rank or quantile)."""
    if isinstance(monoid, Rank):
        return True, float(monoid.pct), RANK_METHODS.index(monoid.method), monoid.ascending
    return False, float(monoid.q), INTERPOLATIONS.index(monoid.interpolation), True


#: The ``starts`` of a row window: the kernels compute them from the window's rows.
_NO_STARTS = np.zeros(0, np.int64)


def _sliding_answers(x, rows, starts, monoid, threads):
    is_rank, param, code, ascending = _codes(monoid)
    out = np.empty(x.shape[0], np.float64)
    if x.shape[0]:
        _sliding(x if ascending else -x, rows, starts, is_rank, param, code, out, threads)
    return out


def _arrival_answers(x, t, w, monoid):
    is_rank, param, code, ascending = _codes(monoid)
    n = x.shape[0]
    out = np.empty(n, np.float64)
    if not n:
        return out
    keys = x if ascending else -x
    by_time = np.argsort(t, kind="stable")
    sorted_times = t[by_time]
    lows = np.searchsorted(sorted_times, t - w, side="right").astype(np.int64)
    _arrivals(keys, by_time, lows, is_rank, param, code, out)
    return out


# ------------------------------------------------------------------ Fenwick tree
@nb.njit(cache=True, inline="always")
def _add(tree, position, delta):
    i = position + 1
    while i < tree.shape[0]:
        tree[i] += delta
        i += i & -i


@nb.njit(cache=True, inline="always")
def _below(tree, position):
    """How many counted positions lie before ``position``."""
    total = 0
    i = position
    while i > 0:
        total += tree[i]
        i -= i & -i
    return total


@nb.njit(cache=True, inline="always")
def _kth(tree, k, top):
    """The position of the k-th (from 0) counted position; ``top``: the largest power of two <= size."""
    position = 0
    step = top
    while step:
        nxt = position + step
        if nxt < tree.shape[0] and tree[nxt] <= k:
            position = nxt
            k -= tree[nxt]
        step >>= 1
    return position


# ------------------------------------------------------------------ windows sliding forward
def _sliding(keys, rows, starts, is_rank, param, code, out, threads):
    """Rows in chunks of ``chunk``; chunk c's windows lie in the ``width`` keys ending where the
    chunk ends (its segment). numpy sorts a batch of segments (its sort is vectorised, a compiled
    one is not), the compiled loop runs their rows. Chunks share nothing: runs of them go to
    threads, each with its own sort keys."""
    n = keys.shape[0]
    longest = min(rows, n) if rows else int(np.max(np.arange(1, n + 1) - starts))
    chunk = max(CHUNK_WINDOWS * longest, MIN_CHUNK)
    width = chunk + longest - 1
    chunks = -(-n // chunk)
    place_bits = max(1, (width - 1).bit_length())
    per_batch = max(1, SORT_BATCH // width)

    def run_chunks(lo, hi):
        packed = np.empty((min(per_batch, hi - lo), width), np.uint64)
        for first in range(lo, hi, per_batch):
            batch = packed[:min(per_batch, hi - first)]
            _pack_segments(keys, first, chunk, place_bits, batch)
            batch.sort(axis=1)  # numpy lets go of the GIL while it sorts
            chunks_kernel = _rank_chunks if is_rank else _quantile_chunks
            chunks_kernel(keys, rows, starts, first, batch, place_bits, chunk, param, code, out)

    pieces = max(1, min(threads, n // ROWS_PER_THREAD, chunks))
    on_threads(run_chunks, chunks, pieces, cuts=[chunks * k // pieces for k in range(pieces + 1)])


#: Keys sorted in one numpy call: bounds the memory of the sort keys (8 bytes each).
SORT_BATCH = 1 << 22

_SIGN = np.uint64(1 << 63)
#: The bits of +inf: NaN rows (never counted) and the places before row 0 and after the last row
#: sort as +inf.
_INF_BITS = np.float64(np.inf).view(np.uint64)


@nb.njit(cache=True, nogil=True)
def _pack_segments(keys, first_chunk, chunk, place_bits, packed):
    """Each segment's keys as one uint64 apiece, in the order of their values: the float's bits
    made order-preserving, their lowest ``place_bits`` replaced by the key's place in the segment.
    numpy sorts plain integers several times faster than it argsorts floats; the places lost
    from the values only tie keys whose values differ in those bits, which the kernel re-sorts
    (:func:`_sort_close_runs`)."""
    n = keys.shape[0]
    bits = keys.view(np.uint64)
    width = packed.shape[1]
    high = ~np.uint64((1 << place_bits) - 1)
    for c in range(packed.shape[0]):
        base = (first_chunk + c + 1) * chunk - width  # the row at the segment's place 0
        inside_from = min(max(-base, 0), width)
        inside_to = max(min(n - base, width), inside_from)
        for p in range(inside_from):
            packed[c, p] = (_order_bits(_INF_BITS) & high) | np.uint64(p)
        for p in range(inside_from, inside_to):  # no branch: the compiler vectorises it
            word = bits[base + p]
            word = _INF_BITS if (word & ~_SIGN) > _INF_BITS else word  # NaN
            packed[c, p] = (_order_bits(word) & high) | np.uint64(p)
        for p in range(inside_to, width):
            packed[c, p] = (_order_bits(_INF_BITS) & high) | np.uint64(p)


@nb.njit(cache=True, inline="always")
def _order_bits(word):
    """A float's bits as an unsigned integer that orders as the float does (-0.0 just below 0.0)."""
    flip = (np.uint64(0) - (word >> np.uint64(63))) | _SIGN  # negatives: all bits; else the sign
    return word ^ flip


@nb.njit(cache=True)
def _sort_close_runs(keys, rows_at, ordered, place_bits):
    """Re-sort by value each run of sorted places whose ``keys`` agree above ``place_bits`` (their
    values differ only in the bits the places replaced) and whose values are out of order."""
    size = keys.shape[0]
    start = 0
    for p in range(1, size + 1):
        if p < size and (keys[p] >> np.uint64(place_bits)) == (keys[start] >> np.uint64(place_bits)):
            continue
        if p - start > 1 and not _ascending(ordered, start, p):
            by_value = np.argsort(ordered[start:p], kind="mergesort")
            run_rows = rows_at[start:p].copy()
            run_values = ordered[start:p].copy()
            for q in range(p - start):
                rows_at[start + q] = run_rows[by_value[q]]
                ordered[start + q] = run_values[by_value[q]]
        start = p


@nb.njit(cache=True, inline="always")
def _ascending(ordered, start, end):
    for p in range(start + 1, end):
        if ordered[p] < ordered[p - 1]:
            return False
    return True


@nb.njit(cache=True, inline="always")
def _unpack(packed, place_mask, keys, base, rows_at, ordered):
    """Each sorted place's segment row and value (+inf for NaN and the places outside the rows);
    True when two neighbours' values are out of order (a run :func:`_sort_close_runs` re-sorts)."""
    n = keys.shape[0]
    disordered = False
    previous = -np.inf
    for p in range(packed.shape[0]):
        row = np.int64(packed[p] & place_mask)
        rows_at[p] = row
        value = np.inf
        if 0 <= base + row < n and keys[base + row] == keys[base + row]:
            value = keys[base + row]
        ordered[p] = value
        disordered |= value < previous
        previous = value
    return disordered


@nb.njit(cache=True, nogil=True)
def _quantile_chunks(keys, rows, starts, first_chunk, packed, place_bits, chunk, param, code, out):
    """:func:`_sliding_chunks` for a quantile: compiled without the rank's branches and tree."""
    _sliding_chunks(keys, rows, starts, first_chunk, packed, place_bits, chunk, False, param, code, out)


@nb.njit(cache=True, nogil=True)
def _rank_chunks(keys, rows, starts, first_chunk, packed, place_bits, chunk, param, code, out):
    """:func:`_sliding_chunks` for a rank."""
    _sliding_chunks(keys, rows, starts, first_chunk, packed, place_bits, chunk, True, param, code, out)


@nb.njit(cache=True, inline="always")
def _sliding_chunks(keys, rows, starts, first_chunk, packed, place_bits, chunk, is_rank, param, code, out):
    """The rows of the chunks from ``first_chunk``, their segments' places in the order of
    ``packed`` (sorted :func:`_pack_segments`); row i's window starts at row
    ``max(i - rows + 1, 0)``, or at ``starts[i]`` when ``rows`` is 0."""
    n = keys.shape[0]
    width = packed.shape[1]
    place_mask = np.uint64((1 << place_bits) - 1)
    slot = np.empty(width, np.int64)  # each segment row's place in sorted order
    rows_at = np.empty(width, np.int64)  # the segment row at each sorted place
    ordered = np.empty(width, np.float64)
    present = np.zeros((width + 63) // 64, np.uint64)  # one bit per sorted place: counted or not
    tree = np.zeros(width + 1, np.int32)
    first_equal = np.empty(width, np.int64)
    after_equal = np.empty(width, np.int64)
    for c in range(packed.shape[0]):
        first = (first_chunk + c) * chunk
        end = min(n, first + chunk)
        base = first + chunk - width
        if _unpack(packed[c], place_mask, keys, base, rows_at, ordered):
            _sort_close_runs(packed[c], rows_at, ordered, place_bits)
        for p in range(width):
            slot[rows_at[p]] = p
        present[:] = 0
        if is_rank:
            tree[:] = 0
            _tie_runs(ordered, first_equal, after_equal)
        # at: the sorted place of the value of rank at_rank; above: the next marked place (width: none)
        count, at, at_rank, above = 0, -1, 0, width
        low = _start(rows, starts, first)
        high = low  # rows low..high-1 are counted
        for i in range(first, end):
            while high <= i:
                if keys[high] == keys[high]:
                    place = slot[high - base]
                    _mark(present, place, True)
                    if is_rank:
                        _add(tree, place, 1)
                    if count == 0:
                        at, at_rank, above = place, 0, width
                    at_rank += place < at  # added, not branched on: below or above is a coin toss
                    above = min(above, place if place > at else width)
                    count += 1
                high += 1
            while low < _start(rows, starts, i):
                if keys[low] == keys[low]:
                    place = slot[low - base]
                    _mark(present, place, False)
                    if is_rank:
                        _add(tree, place, -1)
                    count -= 1
                    at_rank -= place < at
                    if place == at:  # its neighbour above takes its rank, else the one below
                        if above < width:
                            at, above = above, _next_present(present, above)
                        else:
                            at = _previous_present(present, place)
                            at_rank -= 1
                    elif place == above:
                        above = _next_present(present, place)
                low += 1
            if is_rank:
                value = keys[i]
                if value != value:
                    out[i] = np.nan
                    continue
                place = slot[i - base]
                below = _below(tree, first_equal[place])
                out[i] = rank_answer(below, _below(tree, after_equal[place]) - below, count, code, param != 0.0)
            elif count == 0:
                out[i] = np.nan
            else:
                index, fraction = position_of(count, param)
                while at_rank < index:  # the rank moves by about one row per row: a few steps
                    at, above = above, _next_present(present, above)
                    at_rank += 1
                while at_rank > index:
                    at, above = _previous_present(present, at), at
                    at_rank -= 1
                low_value = ordered[at]
                high_value = ordered[above] if fraction != 0.0 else low_value  # a value lies above
                out[i] = interpolate(low_value, high_value, fraction, index, code)


#: The type of LLVM's cttz and ctlz: (word, whether zero is undefined) -> count.
_COUNT_BITS = ir.FunctionType(ir.IntType(64), [ir.IntType(64), ir.IntType(1)])


def _bit_count(llvm_name: str):
    """A numba intrinsic ``(word: uint64) -> uint64`` that is LLVM's ``llvm_name`` (cttz: the index
    of a non-zero word's lowest set bit; ctlz: the zero bits above its highest): one instruction."""
    def count(typingctx, word):
        def codegen(context, builder, signature, args):
            declared = builder.module.declare_intrinsic(llvm_name, [args[0].type], _COUNT_BITS)
            return builder.call(declared, [args[0], ir.Constant(ir.IntType(1), 0)])

        return nb.types.uint64(nb.types.uint64), codegen

    count.__name__ = count.__qualname__ = llvm_name.replace(".", "_")  # numba names a kernel's calls by it
    return intrinsic(count)


_trailing_zeros = _bit_count("llvm.cttz")
_leading_zeros = _bit_count("llvm.ctlz")


_ONE = np.uint64(1)
_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)


@nb.njit(cache=True, inline="always")
def _mark(bits, place, on):
    if on:
        bits[place >> 6] |= _ONE << np.uint64(place & 63)
    else:
        bits[place >> 6] &= ~(_ONE << np.uint64(place & 63))


@nb.njit(cache=True, inline="always")
def _start(rows, starts, i):
    return max(i - rows + 1, 0) if rows else starts[i]


@nb.njit(cache=True, inline="always")
def _next_present(bits, place):
    """The first marked place after ``place``, or 64 * len(bits) when there is none."""
    place += 1
    word = place >> 6
    if word >= bits.shape[0]:
        return bits.shape[0] * 64
    rest = bits[word] & (_ALL << np.uint64(place & 63))
    while rest == 0:
        word += 1
        if word == bits.shape[0]:
            return bits.shape[0] * 64
        rest = bits[word]
    return word * 64 + np.int64(_trailing_zeros(rest))


@nb.njit(cache=True, inline="always")
def _previous_present(bits, place):
    """The last marked place before ``place``, or -1 when there is none."""
    place -= 1
    if place < 0:
        return -1
    word = place >> 6
    rest = bits[word] & (_ALL >> np.uint64(63 - (place & 63)))
    while rest == 0:
        word -= 1
        if word < 0:
            return -1
        rest = bits[word]
    return word * 64 + 63 - np.int64(_leading_zeros(rest))


@nb.njit(cache=True)
def _tie_runs(ordered, first_equal, after_equal):
    """For each sorted place, where its run of equal values starts and ends (NaN: its own run)."""
    size = ordered.shape[0]
    start = 0
    for p in range(1, size + 1):
        if p == size or not ordered[p] == ordered[start]:
            for q in range(start, p):
                first_equal[q] = start
                after_equal[q] = p
            start = p


# ------------------------------------------------------------------ rows in any time order
@nb.njit(cache=True)
def _arrivals(keys, by_time, lows, is_rank, param, code, out):
    n = keys.shape[0]
    order = np.argsort(keys)  # value ranks; NaN last, never arriving
    ordered = keys[order]
    value_rank = np.empty(n, np.int64)
    for r in range(n):
        value_rank[order[r]] = r
    first_equal = np.empty(n, np.int64)
    after_equal = np.empty(n, np.int64)
    if is_rank:
        _tie_runs(ordered, first_equal, after_equal)
    place = np.empty(n, np.int64)  # each row's position in time order
    sequence = np.empty(n, np.int64)  # the value ranks in time order
    for p in range(n):
        place[by_time[p]] = p
        sequence[p] = value_rank[by_time[p]]
    levels = 1
    while (1 << levels) < n:
        levels += 1
    zeros_before, zeros = _wavelet_matrix(sequence, levels)
    arrived_zeros = np.zeros((levels, n + 1), np.int32)
    arrived = np.zeros(n + 1, np.int32)
    top = 1
    while top * 2 <= n:
        top *= 2
    for i in range(n):
        if keys[i] == keys[i]:
            _arrive(arrived, arrived_zeros, zeros_before, zeros, place[i], value_rank[i], levels)
        lo, hi = lows[i], place[i] + 1
        count = _below(arrived, hi) - _below(arrived, lo)
        if is_rank:
            value = keys[i]
            if value != value:
                out[i] = np.nan
                continue
            run_start, run_end = first_equal[value_rank[i]], after_equal[value_rank[i]]
            below = _ranked_below(arrived_zeros, zeros_before, zeros, lo, hi, run_start, levels)
            not_above = count if run_end >= n else _ranked_below(arrived_zeros, zeros_before, zeros, lo, hi,
                                                                 run_end, levels)
            out[i] = rank_answer(below, not_above - below, count, code, param != 0.0)
        elif count == 0:
            out[i] = np.nan
        else:
            index, fraction = position_of(count, param)
            low_value = ordered[_ranked_kth(arrived_zeros, zeros_before, zeros, lo, hi, index, levels)]
            high_value = low_value
            if fraction != 0.0:
                high_value = ordered[_ranked_kth(arrived_zeros, zeros_before, zeros, lo, hi, index + 1, levels)]
            out[i] = interpolate(low_value, high_value, fraction, index, code)


@nb.njit(cache=True)
def _wavelet_matrix(sequence, levels):
    """Per level (highest bit first): how many zero bits precede each position, and the zeros in all."""
    n = sequence.shape[0]
    zeros_before = np.zeros((levels, n + 1), np.int32)
    zeros = np.zeros(levels, np.int64)
    current = sequence.copy()
    following = np.empty_like(current)
    for level in range(levels):
        bit = levels - 1 - level
        for p in range(n):
            zeros_before[level, p + 1] = zeros_before[level, p] + (1 - ((current[p] >> bit) & 1))
        zeros[level] = zeros_before[level, n]
        z, o = 0, zeros[level]
        for p in range(n):  # stable: the zero bits first, then the ones
            if (current[p] >> bit) & 1:
                following[o] = current[p]
                o += 1
            else:
                following[z] = current[p]
                z += 1
        current, following = following, current
    return zeros_before, zeros


@nb.njit(cache=True, inline="always")
def _descend(zeros_before, zeros, level, position, right):
    if right:
        return zeros[level] + position - zeros_before[level, position]
    return zeros_before[level, position]


@nb.njit(cache=True)
def _arrive(arrived, arrived_zeros, zeros_before, zeros, position, rank, levels):
    _add(arrived, position, 1)
    for level in range(levels):
        right = (rank >> (levels - 1 - level)) & 1
        if not right:
            _add(arrived_zeros[level], position, 1)
        position = _descend(zeros_before, zeros, level, position, right)


@nb.njit(cache=True)
def _ranked_kth(arrived_zeros, zeros_before, zeros, lo, hi, k, levels):
    """The value rank of the k-th smallest (from 0) arrived row among time positions lo..hi-1."""
    rank = 0
    for level in range(levels):
        left = _below(arrived_zeros[level], hi) - _below(arrived_zeros[level], lo)
        right = k >= left
        if right:
            k -= left
            rank |= 1 << (levels - 1 - level)
        lo = _descend(zeros_before, zeros, level, lo, right)
        hi = _descend(zeros_before, zeros, level, hi, right)
    return rank


@nb.njit(cache=True)
def _ranked_below(arrived_zeros, zeros_before, zeros, lo, hi, rank, levels):
    """How many arrived rows among time positions lo..hi-1 have a value rank below ``rank`` (< 2**levels)."""
    total = 0
    for level in range(levels):
        right = (rank >> (levels - 1 - level)) & 1
        if right:
            total += _below(arrived_zeros[level], hi) - _below(arrived_zeros[level], lo)
        lo = _descend(zeros_before, zeros, level, lo, right)
        hi = _descend(zeros_before, zeros, level, hi, right)
    return total
