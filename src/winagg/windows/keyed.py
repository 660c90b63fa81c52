"""Windows per key: the bounds of ``winagg.rolling(..., by=keys)``.

Rows are put in key order by a stable sort (the rows of one key keep their
input order), every window is cut at its key's first row, and one call of
:func:`winagg.rolling`'s kernels then runs over all keys at once, as over one
series whose windows never reach back into another key. The answers go back
to the input's row order. Keys are read as pandas groups them: any hashable
values, or several columns (a DataFrame, or column names of the values'
DataFrame) grouped together; missing keys (None, NaN, NaT) form one group of
their own, like pandas' ``groupby(..., dropna=False)``.
"""

from __future__ import annotations

from typing import NamedTuple

import numba as nb
import numpy as np

from ..engine.plans import OutOfOrderPlan, Plan
from ..engine.pieces import even_cuts, on_threads

_NONE_I = np.empty(0, np.int64)
_NONE_B = np.empty(0, np.bool_)


class Groups(NamedTuple):
    """Rows in key order: ``order[p]`` is the input row at sorted position p (None when the input
    is already in key order), ``firsts`` the first sorted position of each key plus the row count;
    the passes over the rows run on up to ``threads`` threads."""

    order: object
    firsts: np.ndarray
    threads: int = 1

    def in_key_order(self, array: np.ndarray) -> np.ndarray:
        if self.order is None:
            return array
        if array.dtype.kind not in "fiub":
            return array[self.order]
        out = np.empty_like(array)
        on_threads(_gather, self.order.shape[0], self.threads, array, self.order, out)
        return out

    def to_rows(self, out) -> np.ndarray:
        """Per-position answers ``out`` back in the input's row order."""
        if self.order is None:
            return out
        rows = np.empty_like(out)
        if out.dtype.kind in "fiub":
            on_threads(_scatter, self.order.shape[0], self.threads, out, self.order, rows)
        else:
            rows[self.order] = out
        return rows

    def row(self, position: int) -> int:
        """The input row at sorted position ``position``."""
        return position if self.order is None else int(self.order[position])

    def positions(self) -> np.ndarray:
        """The input row of each sorted position, as positional aggregations (argmax) report it."""
        return np.arange(self.firsts[-1], dtype=np.int64) if self.order is None else self.order


def _group_cuts(firsts: np.ndarray, threads: int) -> list:
    """Group indexes that cut the keys into up to ``threads`` runs of about equal rows."""
    groups = firsts.shape[0] - 1
    inner = np.searchsorted(firsts, even_cuts(int(firsts[-1]), threads)[1:-1]).tolist()
    return sorted({0, groups, *(g for g in inner if 0 < g < groups)})


# numpy's fancy indexing takes longer over the same positions (it checks each index's bounds)
@nb.njit(cache=True, nogil=True)
def _gather(array, order, out, lo, hi):
    for p in range(lo, hi):
        out[p] = array[order[p]]


@nb.njit(cache=True, nogil=True)
def _scatter(array, order, out, lo, hi):
    for p in range(lo, hi):
        out[order[p]] = array[p]


class Bounds(NamedTuple):
    """Each sorted position's first row (``starts``), never before its key's first row."""

    starts: np.ndarray
    groups: Groups


def groups_of(by, rows: int, threads: int = 1) -> Groups:
    """The :class:`Groups` of the keys ``by`` (array, Series, Arrow array, list; a DataFrame or 2-D
    array groups by all its columns) for ``rows`` rows."""
    if isinstance(by, Groups):
        return by._replace(threads=threads)
    codes, count = _key_codes(by, rows)
    firsts = np.zeros(count + 1, np.int64)
    grouped = _firsts(codes, firsts)
    return Groups(None if grouped else _stable_order(codes, firsts, threads), firsts, threads)


def _stable_order(codes, firsts, threads):
    """A stable sort of the rows by code, by counting: each range of rows counts its codes, and
    then writes its rows into the slots that follow the earlier ranges' rows of each code."""
    n = codes.shape[0]
    cuts = even_cuts(n, threads)
    order = np.empty(n, np.int64)
    if len(cuts) <= 2:
        _place(codes, firsts[:-1].copy(), order, 0, n)
        return order
    counts = np.zeros((len(cuts) - 1, firsts.shape[0] - 1), np.int64)
    on_threads(lambda lo, hi: _count(codes, counts[cuts.index(lo)], lo, hi), n, threads, cuts=cuts)
    slots = firsts[:-1] + np.cumsum(counts, axis=0) - counts  # where each range's rows of a code begin
    on_threads(lambda lo, hi: _place(codes, slots[cuts.index(lo)], order, lo, hi), n, threads, cuts=cuts)
    return order


@nb.njit(cache=True, nogil=True)
def _count(codes, counts, lo, hi):
    for i in range(lo, hi):
        counts[codes[i]] += 1


@nb.njit(cache=True, nogil=True)
def _place(codes, slot, order, lo, hi):
    # numpy's stable argsort of int64 compares; the codes are known to be 0..G-1
    for i in range(lo, hi):
        c = codes[i]
        order[slot[c]] = i
        slot[c] += 1


@nb.njit(cache=True)
def _firsts(codes, firsts):
    """Fill ``firsts`` (each code's first sorted position, then the row count); whether the codes
    never decrease (the rows are already in key order)."""
    grouped = True
    for i in range(codes.shape[0]):
        firsts[codes[i] + 1] += 1
        if i > 0 and codes[i] < codes[i - 1]:
            grouped = False
    for g in range(1, firsts.shape[0]):
        firsts[g] += firsts[g - 1]
    return grouped



def _key_codes(by, rows: int) -> np.ndarray:
    """``(codes, count)``: one int64 code in 0..count-1 per row; missing keys share one code."""
    import pandas as pd

    if isinstance(by, (pd.Series, pd.Index)) or (hasattr(by, "__len__") and not isinstance(by, (str, bytes))):
        frame = isinstance(by, pd.DataFrame) or (isinstance(by, np.ndarray) and by.ndim == 2)
        length = len(by)
    else:
        raise TypeError(f"by must be an array of keys (one per row) or column names, got {by!r}")
    if length != rows:
        raise ValueError(f"by has {length} keys but values has {rows} rows: give one key per row")
    if frame:
        columns = pd.DataFrame(by)
        if columns.shape[1] == 0:
            raise ValueError("by has no key columns")
        codes = columns.groupby(list(columns.columns), sort=False, dropna=False).ngroup().to_numpy(np.int64)
        return codes, int(codes.max(initial=-1)) + 1
    narrow = _narrow_integer_codes(by)
    if narrow is not None:
        return narrow
    if hasattr(by, "to_numpy") and not isinstance(by, (pd.Series, pd.Index)):
        by = by.to_numpy(zero_copy_only=False) if "pyarrow" in type(by).__module__ else by.to_numpy()
    codes, uniques = pd.factorize(by if isinstance(by, (pd.Series, pd.Index, np.ndarray))
                                  else np.asarray(by, dtype=object), use_na_sentinel=False)
    return codes.astype(np.int64, copy=False), len(uniques)


def _narrow_integer_codes(by):
    """``key - smallest key`` for integer keys whose range is at most twice the rows (no hash
    table; keys that never occur are empty groups), else None."""
    keys = by.to_numpy() if type(by).__name__ == "Series" and by.dtype.kind in "iu" else by
    if not isinstance(keys, np.ndarray) or keys.dtype.kind not in "iu" or keys.ndim != 1 or not keys.size:
        return None
    lo, hi = int(keys.min()), int(keys.max())
    if hi - lo > 2 * keys.size:
        return None
    return (keys - np.asarray(lo, keys.dtype)).astype(np.int64, copy=False), hi - lo + 1


# ---------------------------------------------------------------- bounds
def row_bounds(groups: Groups, window: int) -> Bounds:
    """Row window: sorted position p covers its key's rows ``max(first, p - window + 1) .. p``."""
    starts = np.empty(groups.firsts[-1], np.int64)
    on_threads(_row_starts, 0, groups.threads, groups.firsts, np.int64(window), starts,
               cuts=_group_cuts(groups.firsts, groups.threads))
    return Bounds(starts, groups)


@nb.njit(cache=True, nogil=True)
def _row_starts(firsts, window, starts, g_lo, g_hi):
    for g in range(g_lo, g_hi):
        for p in range(firsts[g], firsts[g + 1]):
            starts[p] = max(firsts[g], p - window + 1)


def time_bounds(groups: Groups, t: np.ndarray, w) -> Bounds:
    """Time window over times sorted within each key: position p covers its key's positions
    q <= p with ``t[p] - w < t[q]``."""
    starts = np.empty(t.shape[0], np.int64)
    on_threads(_time_starts, 0, groups.threads, t, t.dtype.type(w), groups.firsts, starts,
               cuts=_group_cuts(groups.firsts, groups.threads))
    return Bounds(starts, groups)


def first_unsorted(groups: Groups, t: np.ndarray) -> int:
    """The first sorted position whose time is older than the time before it in its key, or -1."""
    return int(_first_unsorted(t, groups.firsts))


@nb.njit(cache=True)
def _first_unsorted(t, firsts):
    for g in range(firsts.shape[0] - 1):
        for p in range(firsts[g] + 1, firsts[g + 1]):
            if t[p] < t[p - 1]:
                return p
    return -1


@nb.njit(cache=True, nogil=True)
def _time_starts(t, span, firsts, starts, g_lo, g_hi):
    # two pointers per key: both ends of a window only move forward within a key
    for g in range(g_lo, g_hi):
        first = firsts[g]
        for p in range(firsts[g], firsts[g + 1]):
            horizon = t[p] - span
            while t[first] <= horizon:
                first += 1
            starts[p] = first


def plan(bounds: Bounds) -> Plan:
    """The driver's :class:`~winagg.engine.plans.Plan` of ``bounds``: each step evicts the rows its
    window no longer holds (at a key's first row, all of the key before)."""
    starts = bounds.starts
    n = starts.shape[0]
    evicts = np.diff(starts, prepend=np.int64(0))
    room = int(np.max(np.arange(1, n + 1) - starts, initial=1))
    return Plan(evicts, _NONE_B, _NONE_B, bounds.groups.positions(), 0, room)


def out_of_order_plan(groups: Groups, t: np.ndarray, w) -> OutOfOrderPlan:
    """The out-of-order plan of time windows per key, times in any order within a key (for a
    driver whose steps evict before they insert): at a key's first row every entry of the key
    before leaves; elsewhere the entries that no later row of the key can need
    (time <= min of the key's later times - w), as :func:`winagg.engine.plans.rolling_plan` for one series."""
    span = t.dtype.type(w)
    everything = np.iinfo(np.int64).max if t.dtype == np.int64 else np.inf
    horizons = np.empty(t.shape[0], t.dtype)
    _key_horizons(t, span, groups.firsts, t.dtype.type(everything), horizons)
    return OutOfOrderPlan(_NONE_I, _NONE_I, horizons, _NONE_I, _NONE_I, _NONE_I, groups.positions(), span)


@nb.njit(cache=True)
def _key_horizons(t, span, firsts, everything, horizons):
    for g in range(firsts.shape[0] - 1):
        lo, hi = firsts[g], firsts[g + 1]
        if hi == lo:
            continue
        later = t[hi - 1]
        for p in range(hi - 1, lo - 1, -1):
            later = min(later, t[p])
            horizons[p] = later - span
        if g > 0:
            horizons[lo] = everything
