"""Whole-array sliding windows by block prefix and suffix scans (van Herk / Gil-Werman).

When every value is in memory, a window needs no per-item queue. Cut the rows
into segments ``[c_0, c_1), [c_1, c_2), ...`` such that every window
``[s_i, i]`` ending in segment k starts after ``c_(k-1)`` and at or before
``c_k``. Then the window is the suffix ``[s_i, c_k)`` of segment k-1 followed
by the prefix ``[c_k, i]`` of segment k, and one suffix scan and one prefix
scan per segment give every window's aggregate in one more combine. That is
Two-Stacks done a segment at a time, in loops without a data-dependent branch.
For a row window of w rows the segments are the blocks ``[k w, (k+1) w)``; for
a time window the bounds ``s_i`` come first, from one forward pass over the times, and the
segments are chosen greedily (``c_(k+1)`` is one past the last row whose window
starts at or before ``c_k``), so the same kernel serves windows of any width.

Every partial holds items of the window only and nothing is ever subtracted
from a float, so a window of zeros after huge values is exactly 0.0, and a
window's result does not depend on the rows that left it.

Semantics (those of :func:`winagg.rolling` for the built-in aggregations):
row window i covers rows ``max(0, i-window+1) .. i``; a time window covers the
rows j <= i with ``times[i] - span < times[j] <= times[i]`` (sorted times).
NaN values are skipped: sum, mean, min and max of a window without a value are
NaN; count counts non-NaN values (an int64 result); var and std use
``ddof`` 1 (``var1``/``std1``, pandas' default) or 0 (``var0``/``std0``) and are
NaN when the count is at most ``ddof``; a window holding +-inf has var/std NaN.
Integer input: ``sum_i`` is the exact int64 sum and ``mean_i`` divides that
exact sum by the count; a window whose sum is outside int64 raises
``OverflowError`` naming the first such row (the message of :func:`winagg.rolling`).
``max_i`` and ``min_i`` scan int64 and answer int64 (every window of integers holds a
value); var and std read integers as float64.

Variance partial: each segment's prefix scan keeps ``(count, sum(x-K),
sum((x-K)^2))`` with K the segment's first valid value, and its suffix scan the
same with K the segment's last valid value, so K is always a value inside the
window (never one that left it). A window's two partials merge by Chan et al.'s
update, ``M2 = M2a + M2b + delta^2 na nb / n``, with ``delta = (Kb - Ka) +
(S1b/nb - S1a/na)`` so that a large common offset never rounds the difference of
the means. Error bound: with u = 2^-53 and a window of n <= w values, the
relative error of var is at most about ``(w + 3) u kappa`` where
``kappa = 1 + n (mean - K)^2 / M2 <= 1 + n`` (K being one of the window's
values); rounding errors of the sums are in practice far below the worst case.
Measured against exact rational arithmetic (``fractions``) on 25 random windows
of 1,000 rows each: normal data 7.7e-15, 1e9 + normal noise 8.4e-15,
1e6 + 1e-3 noise 8.4e-15, Student t(2) 2.3e-15, a linear trend 6.0e-15,
normal data with 0.1% outliers of 1e9 4.2e-15 (the per-item Chan merge of
:mod:`winagg.aggregations`: 1.3e-15 to 7.2e-8 on the same data, largest on the
offsets; pandas: up to 6.9 on the outliers). ``tests/engine/test_blockscan.py`` checks
1e-12 against exact arithmetic, offsets included.
"""

from __future__ import annotations

import math
from typing import Optional

import numba as nb
import numpy as np

from ..core import jitcache
from .pieces import in_pieces, segment_end as _time_segment_end
from .plans import window_starts

#: Compiled keys handled here (see ``Aggregation.compiled_for(dtype).key``).

MOMENT_KEYS = ("var0", "var1", "std0", "std1")
#: min and max of integers: scanned as int64, so their answers are the integers themselves.
INTEGER_KEYS = ("max_i", "min_i")
KEYS = ("sum_f", "sum_i", "mean_f", "mean_i", "max", "min", "count") + MOMENT_KEYS + INTEGER_KEYS


# ---------------------------------------------------------------- public entry point
def rolling(values: np.ndarray, window: Optional[int], key: str, times: Optional[np.ndarray] = None,
            span=None, *, starts: Optional[np.ndarray] = None, threads: int = 1) -> Optional[np.ndarray]:
    """The aggregate ``key`` of every window, or None when this module does not handle the call.

    ``values`` is a 1-D int64 or float64 array; ``key`` a compiled aggregation
    key (:data:`KEYS`). Without ``times``, ``window`` (>= 1) is a row count;
    with ``times`` (sorted int64 or float64, same length) ``span`` is the
    window's duration in the times' unit and ``window`` is ignored. ``starts``
    instead of both gives each row's first row directly (non-decreasing, each
    ``starts[i] <= i``): :mod:`winagg.windows.keyed` passes windows that never reach
    back past their key's first row. None is returned for other keys or dtypes
    and for unsorted times, so that the caller can run its per-item kernels instead.

    ``threads`` (>= 1) splits the scans of sum, mean, max, min, var and std
    into that many pieces run at once (:func:`winagg.engine.pieces.in_pieces`: the
    results are the same bits). The default, 1, runs in the calling thread.
    """
    if key not in KEYS or not isinstance(values, np.ndarray) or values.ndim != 1:
        return None
    if values.dtype not in (np.int64, np.float64):
        return None
    integer = values.dtype == np.int64
    if key in ("sum_i", "mean_i") + INTEGER_KEYS and not integer or key in ("sum_f", "mean_f") and integer:
        return None
    n = values.shape[0]
    if starts is not None:
        starts = np.asarray(starts, np.int64)
        width, widest = 0, int(np.max(np.arange(1, n + 1) - starts, initial=1))
    elif times is None:
        if isinstance(window, bool) or not isinstance(window, (int, np.integer)) or window < 1:
            raise ValueError(f"window must be a row count of at least 1, got {window!r}")
        starts, width = NO_STARTS, int(min(window, max(n, 1)))
        widest = width
    else:
        bounds = window_starts(times, span, n)
        if bounds is None:
            return None
        (starts, widest), width = bounds, 0
    if n == 0:
        return np.empty(0, np.int64 if key in ("count", "sum_i") else np.float64)
    if key == "count":
        return _row_counts(n, starts, width) if integer else _valid_counts(values, starts, width)
    if key in ("sum_i", "mean_i"):
        return _integer_sum(values, starts, width, key == "mean_i")
    if key in INTEGER_KEYS:  # no NaN among integers: every window has a value
        out = np.empty(n, np.int64)
        in_pieces(_kernel(key, width > 0), values, starts, width, widest, threads, out,
                  lambda rows: (_scratch(6, rows, np.int64),))
        return out
    x = values.astype(np.float64, copy=False)
    out = np.empty(n, np.float64)
    if key in MOMENT_KEYS:
        ddof, root = float(key[-1]), key.startswith("std")
        extreme = in_pieces(_kernel("moments", width > 0), x, starts, width, widest, threads, out,
                            lambda rows: (ddof, root, _scratch(12, rows)))
        extreme_moments(x, starts, width, ddof, root, out, extreme)
        return out
    scratch = lambda rows: (_scratch(6, rows),)  # noqa: E731
    if key == "mean_f" and not in_pieces(_kernel("mean_rows", width > 0), x, starts, width, widest, threads,
                                         out, scratch):
        return out  # no NaN: each window's rows were its count, and no second scan counted them
    saw_nan = in_pieces(_kernel(key, width > 0), x, starts, width, widest, threads, out, scratch)
    if saw_nan and key != "mean_f":  # a window of NaN only is NaN, not the identity (0, -inf, inf)
        _nan_where_empty(x, starts, width, out)
    return out


NO_STARTS = np.empty(0, np.int64)


def _scratch(rows: int, widest: int, dtype=np.float64) -> np.ndarray:
    """Buffers for the kernels: a segment is never longer than the widest window."""
    return np.empty((rows, widest + 1), dtype)


# ---------------------------------------------------------------- segments
# Each kernel is built twice, for row windows and for time windows (``ROWS``, a constant of its
# closure: numba drops the branches of the other kind before typing them), so a first call
# compiles only its kind's code.
_kernels: dict = {}


def _kernel(key: str, rows: bool):
    """The compiled kernel of ``key`` ("moments" for var and std) for row or time windows."""
    if (key, rows) not in _kernels:
        _kernels[key, rows] = (_build_moments_kernel(rows) if key == "moments"
                               else _build_scan_kernel(*_SCALAR_MONOIDS[key], rows, by_rows=key == "mean_rows"))
    return _kernels[key, rows]


# ---------------------------------------------------------------- sum, mean, max, min
@nb.njit(cache=True, inline="always")
def _sum_lift(v):
    return v if v == v else 0.0


@nb.njit(cache=True, inline="always")
def _add(a, b):
    return a + b


@nb.njit(cache=True, inline="always")
def _keep(v):
    return v


@nb.njit(cache=True, inline="always")
def _max(a, b):
    # NaN never wins a comparison, so a NaN item leaves the partial as it was.
    return b if b > a else a


@nb.njit(cache=True, inline="always")
def _min(a, b):
    return b if b < a else a


@nb.njit(cache=True, inline="always")
def _no_count(value, count):
    return value


@nb.njit(cache=True, inline="always", error_model="numpy")
def _divide(value, count):
    return value / count  # 0 / 0 is NaN: the mean of a window without a value


#: key -> (lift, combine, identity, finish, counted). NaN lifts to the identity (or loses every
#: comparison); a ``counted`` kernel also scans the number of valid values and gives it to ``finish``.
_SCALAR_MONOIDS = {"sum_f": (_sum_lift, _add, 0.0, _no_count, False),
                   "mean_f": (_sum_lift, _add, 0.0, _divide, True),
                   "mean_rows": (_sum_lift, _add, 0.0, _divide, False),
                   "max": (_keep, _max, -np.inf, _no_count, False),
                   "min": (_keep, _min, np.inf, _no_count, False),
                   "max_i": (_keep, _max, np.iinfo(np.int64).min, _no_count, False),
                   "min_i": (_keep, _min, np.iinfo(np.int64).max, _no_count, False)}


def _build_scan_kernel(lift, combine, identity, finish, counted, rows, by_rows=False):
    """``kernel(x, starts, width, scratch, out, first) -> saw_nan``: rows (``width``) or time windows
    (``starts``); the answers of the segment starting before row ``first`` are not written.
    ``by_rows`` (a mean that takes each window's rows as its count) stops at the first segment
    that holds a NaN, its answers unfinished."""
    segment_end, ROWS, BY_ROWS = _time_segment_end, rows, by_rows

    @jitcache.njit(error_model="numpy", nogil=True)
    def kernel(x, starts, width, scratch, out, first):
        # scratch rows 1-2: this segment's suffix scans and those of the segment before; rows 4-5
        # the same for the counts of valid values (``counted`` only); rows 0 and 3 are not used.
        # One pass per segment runs two independent chains, its prefix (each answer comes at once
        # from the prefix and the suffix of the segment before) and its suffix, for the next.
        # Loop indices are unsigned: numba then emits no negative-index wraparound.
        n = x.shape[0]
        one = np.uint64(1)
        suffix, previous = scratch[1], scratch[2]
        suffix_n, previous_n = scratch[4], scratch[5]
        for k in range(previous.shape[0]):
            previous[k] = identity  # no segment before the first
            previous_n[k] = 0.0
        saw_nan = False
        c_prev = 0
        c = 0
        while c < n:
            e = min(c + width, n) if ROWS else segment_end(starts, n, c)
            m = np.uint64(e - c)
            base = np.uint64(c)
            last = np.uint64(e - 1)
            before = np.uint64(c_prev)
            p = identity
            s = identity
            pn = 0.0
            sn = 0.0
            if c < first:  # a piece's lead-in segment: only its suffixes are needed
                for k in range(m):
                    u = x[last - k]
                    s = combine(s, lift(u))
                    suffix[m - one - k] = s
                    if counted:
                        sn += 1.0 if u == u else 0.0
                        suffix_n[m - one - k] = sn
            else:
                segment_nan = False
                for k in range(m):
                    v = x[base + k]
                    segment_nan |= v != v
                    p = combine(p, lift(v))
                    u = x[last - k]
                    s = combine(s, lift(u))
                    suffix[m - one - k] = s
                    # row c+k's window starts at c_prev + k + 1 (rows), or at starts[c+k]
                    a = k + one if ROWS else np.uint64(starts[base + k]) - before
                    if counted:
                        pn += 1.0 if v == v else 0.0
                        sn += 1.0 if u == u else 0.0
                        suffix_n[m - one - k] = sn
                        out[base + k] = finish(combine(previous[a], p), previous_n[a] + pn)
                    elif BY_ROWS:  # a mean without NaN: the window's rows are its count
                        # (a piece's rows: row windows past the lead-in are full; starts are the piece's)
                        size = min(base + k + one, np.uint64(width)) if ROWS else base + k + one - np.uint64(
                            starts[base + k])
                        out[base + k] = finish(combine(previous[a], p), np.float64(size))
                    else:
                        out[base + k] = combine(previous[a], p)
                saw_nan |= segment_nan
                if BY_ROWS:  # a constant: numba prunes the test from the other kernels
                    if segment_nan:  # a window may hold fewer values than rows: the counted kernel answers
                        return True
            suffix[m] = identity  # a window that starts at c takes nothing from the segment before
            suffix_n[m] = 0.0
            previous, suffix = suffix, previous
            previous_n, suffix_n = suffix_n, previous_n
            c_prev = c
            c = e
        return saw_nan

    return kernel


# ---------------------------------------------------------------- count, windows without a value
@nb.njit(cache=True)
def _valid_counts_kernel(x, starts, width, out):
    """out[i]: non-NaN values in window i, by exact integer counts."""
    n = x.shape[0]
    if width > 0:  # a running count of the NaN rows inside the window
        missing = 0
        for i in range(n):
            if x[i] != x[i]:
                missing += 1
            if i >= width and x[i - width] != x[i - width]:
                missing -= 1
            out[i] = min(i + 1, width) - missing
        return
    # Time windows: out[i] first holds the valid values of rows 0..i; then, from the last row
    # back, the count before the window's first row is taken off (the rows below i still hold
    # theirs). A running count advances its first row in a loop whose length varies from row
    # to row, a branch the processor cannot predict; these two passes have none.
    valid = 0
    for i in range(n):
        valid += 1 if x[i] == x[i] else 0
        out[i] = valid
    for i in range(n - 1, -1, -1):
        if starts[i] > 0:
            out[i] -= out[starts[i] - 1]


def _valid_counts(x, starts, width) -> np.ndarray:
    out = np.empty(x.shape[0], np.int64)
    _valid_counts_kernel(x, starts, width, out)
    return out


def _row_counts(n: int, starts, width) -> np.ndarray:
    """Rows per window (every row counts: integer input has no missing values)."""
    ends = np.arange(1, n + 1, dtype=np.int64)
    return np.minimum(ends, width) if width > 0 else ends - starts


@nb.njit(cache=True)
def _nan_where_empty(x, starts, width, out):
    """NaN in ``out`` for every window without a valid value (its newest valid row is before its start)."""
    newest_valid = -1
    for i in range(x.shape[0]):
        if x[i] == x[i]:
            newest_valid = i
        s = max(i - width + 1, 0) if width > 0 else starts[i]
        if newest_valid < s:
            out[i] = np.nan


# ---------------------------------------------------------------- exact int64 sums
@nb.njit(cache=True)
def _integer_sum_kernel(x, starts, width, out):
    """Exact int64 window sums; returns the first row whose sum is outside int64, or -1.

    Each value is split as ``hi * 2^32 + lo`` (hi signed 32-bit, lo in [0, 2^32)).
    The window sums H of hi and L of lo fit in int64 for windows of fewer than
    2^31 rows, so adding the entering row and subtracting the leaving ones is
    exact; the window sum is ``(H + (L >> 32)) * 2^32 + (L & (2^32 - 1))`` and is
    in range exactly when ``H + (L >> 32)`` fits in 32 signed bits.
    """
    n = x.shape[0]
    low_mask = np.int64(0xFFFFFFFF)
    limit = np.int64(1) << 31
    high_sum = np.int64(0)
    low_sum = np.int64(0)
    first = 0
    for i in range(n):
        high_sum += x[i] >> 32
        low_sum += x[i] & low_mask
        s = max(i - width + 1, 0) if width > 0 else starts[i]
        while first < s:
            high_sum -= x[first] >> 32
            low_sum -= x[first] & low_mask
            first += 1
        top = high_sum + (low_sum >> 32)
        if top < -limit or top >= limit:
            return i
        out[i] = (top << 32) + (low_sum & low_mask)
    return -1


def _integer_sum(values, starts, width, mean: bool) -> np.ndarray:
    n = values.shape[0]
    sums = np.empty(n, np.int64)
    row = _integer_sum_kernel(values, starts, width, sums)
    if row >= 0:
        first = max(row - width + 1, 0) if width > 0 else int(starts[row])
        approx = float(np.sum(values[first:row + 1].astype(np.float64)))
        raise OverflowError(f"the int64 sum of the window ending at row {row} overflows int64 "
                            f"(it is about {approx:.6g}); pass float values to sum approximately")
    if not mean:
        return sums
    return sums.astype(np.float64) / _row_counts(n, starts, width)


# ---------------------------------------------------------------- var, std
def _build_moments_kernel(rows):
    """``kernel(x, starts, width, ddof, root, scratch, out, first)``: the variance (``root``: its square root)
    of every row (``width``) or time window (``starts``), from shifted-sum partials.

    A prefix partial of segment [c, e) is (count, sum(x-K), sum((x-K)^2)) with K
    the segment's first valid value; a suffix partial uses its last valid value.
    A partial is empty (count 0) until it reaches K, so K is in every window
    that a non-empty partial serves. ``scratch`` rows 0-2: this segment's prefix
    partials, 3-5: its suffix partials, 6-8: the suffix partials of the segment before,
    9-11 (time windows): the partials of rows 6-8 each window starts with; (row windows) the
    reciprocals of the two counts and the merge's ``na nb / n`` of a full window at each place
    of a segment, so that a segment without NaN after a full one merges with one division a row
    (the same bits as :func:`_window_variance`, which divides each time).
    """
    segment_end, ROWS = _time_segment_end, rows

    @jitcache.njit(error_model="numpy", nogil=True)
    def kernel(x, starts, width, ddof, root, scratch, out, first):
        n = x.shape[0]
        one = np.uint64(1)
        pre_n, pre_s1, pre_s2 = scratch[0], scratch[1], scratch[2]
        suf_n, suf_s1, suf_s2 = scratch[3], scratch[4], scratch[5]
        prev_n, prev_s1, prev_s2 = scratch[6], scratch[7], scratch[8]
        got_n, got_s1, got_s2 = scratch[9], scratch[10], scratch[11]  # time windows only
        for k in range(prev_n.shape[0]):  # no segment before the first: empty partials
            prev_n[k] = 0.0
            prev_s1[k] = 0.0
            prev_s2[k] = 0.0
        inverse_a, inverse_b, weight = scratch[9], scratch[10], scratch[11]  # row windows only
        if ROWS:
            for k in range(width):  # window c+k of a full window: width-k-1 rows before c, k+1 from c
                inverse_a[k], inverse_b[k], weight[k] = _merge_factors(np.float64(width - k - 1),
                                                                       np.float64(k + 1))
        prev_valid = -1.0  # values in the segment before (none before the first)
        prev_shift = 0.0
        c_prev = 0
        extreme = 0  # answers that are NaN or infinite: extreme_moments looks at them again
        c = 0
        while c < n:
            e = min(c + width, n) if ROWS else segment_end(starts, n, c)
            head = c
            while head < e - 1 and x[head] != x[head]:
                head += 1
            tail = e - 1
            while tail > c and x[tail] != x[tail]:
                tail -= 1
            pre_shift = x[head] if x[head] == x[head] else 0.0
            suf_shift = x[tail] if x[tail] == x[tail] else 0.0
            m = np.uint64(e - c)
            base = np.uint64(c)
            last = np.uint64(e - 1)
            pn = 0.0
            p1 = 0.0
            p2 = 0.0
            sn = 0.0
            s1 = 0.0
            s2 = 0.0
            for k in range(m):
                v = x[base + k]
                valid = v == v
                d = v - pre_shift if valid else 0.0
                pn += 1.0 if valid else 0.0
                p1 += d
                p2 += d * d
                pre_n[k] = pn
                pre_s1[k] = p1
                pre_s2[k] = p2
                u = x[last - k]
                valid = u == u
                d = u - suf_shift if valid else 0.0
                sn += 1.0 if valid else 0.0
                s1 += d
                s2 += d * d
                j = m - one - k
                suf_n[j] = sn
                suf_s1[j] = s1
                suf_s2[j] = s2
            suf_n[m] = 0.0
            suf_s1[m] = 0.0
            suf_s2[m] = 0.0
            if c < first:  # a piece's lead-in segment: only its suffixes are needed
                pass
            elif ROWS and pn == np.float64(m) and prev_valid == np.float64(width):
                # no NaN here nor in the full segment before: every count is known ahead
                dof = np.float64(width) - ddof
                for k in range(m):
                    v = _full_window_variance(prev_s1[k + one], prev_s2[k + one], prev_shift, pre_s1[k],
                                              pre_s2[k], pre_shift, inverse_a[k], inverse_b[k], weight[k],
                                              dof, root)
                    out[base + k] = v
                    extreme += not (abs(v) < np.inf)
            elif ROWS:  # window c+k starts at c_prev + k + 1
                for k in range(m):
                    a = k + one
                    v = _window_variance(prev_n[a], prev_s1[a], prev_s2[a], prev_shift,
                                         pre_n[k], pre_s1[k], pre_s2[k], pre_shift, ddof, root)
                    out[base + k] = v
                    extreme += not (abs(v) < np.inf)
            else:
                # the partials each window takes from the segment before, gathered first: the merge
                # then runs over contiguous arrays and numba vectorises its divisions, which a merge
                # that reads them by index prevents)
                before = np.uint64(c_prev)
                for k in range(m):
                    a = np.uint64(starts[base + k]) - before
                    got_n[k] = prev_n[a]
                    got_s1[k] = prev_s1[a]
                    got_s2[k] = prev_s2[a]
                for k in range(m):
                    v = _window_variance(got_n[k], got_s1[k], got_s2[k], prev_shift,
                                         pre_n[k], pre_s1[k], pre_s2[k], pre_shift, ddof, root)
                    out[base + k] = v
                    extreme += not (abs(v) < np.inf)
            prev_n, suf_n = suf_n, prev_n
            prev_s1, suf_s1 = suf_s1, prev_s1
            prev_s2, suf_s2 = suf_s2, prev_s2
            prev_shift = suf_shift
            prev_valid = sn
            c_prev = c
            c = e
        return extreme

    return kernel


# inlined: each kernel calls it once, and a function compiled apart takes the first call through
# numba's whole pipeline a second time
@nb.njit(cache=True, error_model="numpy", inline="always")
def _merge_factors(na, nb_):
    """``(1/na, 1/nb, na nb / n)`` of two partials' counts, the weight 0 unless both hold values
    (an empty partial has s1 = s2 = 0, so its M2 comes out as 0)."""
    weight = na * nb_ / max(na + nb_, 1.0) if na > 0.0 and nb_ > 0.0 else 0.0
    return 1.0 / max(na, 1.0), 1.0 / max(nb_, 1.0), weight


@nb.njit(cache=True, error_model="numpy", inline="always")
def _window_variance(na, s1a, s2a, ka, nb_, s1b, s2b, kb, ddof, root):
    """Merge two shifted-sum partials (Chan et al.) and lower to variance or stddev."""
    ra, rb, weight = _merge_factors(na, nb_)
    return _full_window_variance(s1a, s2a, ka, s1b, s2b, kb, ra, rb, weight, na + nb_ - ddof, root)


@nb.njit(cache=True, error_model="numpy", inline="always")
def _full_window_variance(s1a, s2a, ka, s1b, s2b, kb, ra, rb, weight, dof, root):
    """The merge of :func:`_window_variance` with its counts' :func:`_merge_factors` given
    (computed once per call for full row windows) and ``dof`` = count - ddof."""
    m2a = s2a - s1a * (s1a * ra)
    m2b = s2b - s1b * (s1b * rb)
    # mean_b - mean_a without forming the means: kb - ka is exact for nearby shifts, so the
    # offset of the data (1e9 + noise) does not round the difference of the means.
    delta = (kb - ka) + (s1b * rb - s1a * ra) if weight > 0.0 else 0.0
    m2 = m2a + m2b + delta * delta * weight
    if m2 < 0.0:  # rounding; NaN (an infinite value in the window) stays NaN
        m2 = 0.0
    if dof <= 0.0:
        return np.nan
    return math.sqrt(m2 / dof) if root else m2 / dof


def extreme_moments(x, starts, width, ddof, root, out, rows=None) -> None:
    """Recompute the NaN and infinite variances (``root``: deviations) of windows that hold
    only finite values, and enough of them, in place.

    Sums of squares pass float64's range as soon as one squared distance does (|d| > 1.3e154),
    before the variance or the deviation does: such a window came out NaN (inf - inf) or inf.
    Its answer is taken again from values scaled by the window's largest magnitude: the finite
    answer, or inf where the answer itself is beyond float64. A window with an infinite value,
    or with fewer than ddof + 1 values, stays NaN (pandas' answers). Row windows (``width``)
    or sorted time windows (``starts``).
    """
    rows = _non_finite(out) if rows is None else rows  # how many answers are NaN or infinite
    if rows:
        # a few such rows (the first row of a sample variance) are checked by scanning their
        # windows; many (every window around an infinity) by prefix counts of the whole input
        _redo_extreme_moments(x, starts, width, ddof, root, out, rows, rows <= SCAN_ROWS)


#: Non-finite answers up to which each one's window is scanned instead of counted by prefixes.
SCAN_ROWS = 64


@nb.njit(cache=True)
def _non_finite(out):
    rows = 0
    for v in out:  # branch-free, so it vectorises
        rows += not (abs(v) < np.inf)
    return rows


@nb.njit(cache=True, error_model="numpy")
def _redo_extreme_moments(x, starts, width, ddof, root, out, rows, scan):
    n = x.shape[0]
    seen = 0
    valid = np.zeros(0 if scan else n + 1, np.int64)  # prefix counts of values and of infinities
    infinite = np.zeros(0 if scan else n + 1, np.int64)
    if not scan:
        for j in range(n):
            valid[j + 1] = valid[j] + (x[j] == x[j])
            infinite[j + 1] = infinite[j] + (abs(x[j]) == np.inf)
    for i in range(n):
        if seen == rows:  # the last of them is behind: no pass over the rest
            break
        if abs(out[i]) < np.inf:
            continue
        seen += 1
        s = max(i - width + 1, 0) if width > 0 else starts[i]
        if scan:
            count, infinities = _window_counts(x, s, i + 1)
        else:
            count, infinities = valid[i + 1] - valid[s], infinite[i + 1] - infinite[s]
        if infinities > 0 or count - ddof <= 0:
            continue
        out[i] = _scaled_moment(x, s, i + 1, count, ddof, root)


@nb.njit(cache=True)
def _window_counts(x, start, end):
    """(values, infinities) among ``x[start:end]``."""
    count = 0
    infinities = 0
    for j in range(start, end):
        count += x[j] == x[j]
        infinities += abs(x[j]) == np.inf
    return count, infinities


@nb.njit(cache=True, error_model="numpy")
def _scaled_moment(x, start, end, count, ddof, root):
    scale = 0.0
    for j in range(start, end):
        if x[j] == x[j]:
            scale = max(scale, abs(x[j]))
    mean = 0.0
    for j in range(start, end):
        if x[j] == x[j]:
            mean += x[j] / scale
    mean /= count
    squares = 0.0
    for j in range(start, end):
        if x[j] == x[j]:
            d = x[j] / scale - mean
            squares += d * d
    spread = scale * math.sqrt(squares / (count - ddof))
    return spread if root else spread * spread


# ---------------------------------------------------------------- compiling ahead
#: The aggregations :func:`warm` compiles by default: winagg.rolling's commonest calls.
COMMON = ("sum", "mean", "std", "var", "max", "min", "count")


def warm(aggs=COMMON) -> list:
    """Compile the kernels of ``aggs`` over float64 and int64 rows and sorted times into numba's disk cache.

    A later process then loads them instead of compiling (the README's setup runs
    ``winagg warm``). Returns the compiled keys.
    """
    from .. import aggregations
    from ..times import read_times

    floats = np.array([1.0, np.nan, 2.5, 4.0])
    integers = np.array([1, 2, 3, 4], np.int64)
    times = np.array([0, 1, 1, 3], np.int64)
    read_times(times, 2, times.size)  # the pass over the times winagg.rolling makes before a time window
    keys = []
    for agg in aggs:
        for values in (floats, integers):
            key = aggregations.get(agg).compiled_for(values.dtype).key
            if key in KEYS:
                rolling(values, 2, key)
                rolling(values, None, key, times=times, span=2)
                keys.append(key)
    return list(dict.fromkeys(keys))

