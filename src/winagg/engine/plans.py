"""Plans: which items each step of a window's loop evicts, inserts and answers.

A window kind is a plan and nothing else. Like pandas' window indexers, the
bounds come apart from the aggregation: a :class:`Plan` (in-order windows) or an
:class:`OutOfOrderPlan` (FiBA's windows keyed by time) is made by numpy or by
small compiled functions that know nothing of the aggregation, so they compile
once per process, not once per algorithm and aggregation. The loops that run
them are :mod:`winagg.engine.loops`.

An in-order plan has three steps per input row:

1. evict the ``evicts[k]`` oldest items of the window,
2. insert row k's value (unless ``inserts[k]`` is false: a missing value),
3. answer (unless ``emits[k]`` is false: a row whose answer comes later).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba as nb
import numpy as np

from ..values import INT64_MAX, INT64_MIN

#: -infinity and +infinity among int64 times and hopping window numbers (event times are kept
#: strictly between them, with room for every window bound).
INT_LOW = INT64_MIN
INT_HIGH = INT64_MAX - 1

_NONE_I = np.empty(0, np.int64)
_NONE_B = np.empty(0, np.bool_)


class Plan(NamedTuple):
    """What each step of the driver does (see the module's docstring).

    An empty array means the common case for every step: ``evicts`` empty
    evicts one item at each step from ``window`` on (a row window of
    ``window`` rows), ``inserts`` empty inserts at every step, ``emits``
    empty answers at every step and ``positions`` empty gives step k the
    position k (the row number positional aggregations such as argmax see).
    ``room`` is the most items the window holds at once during the plan.
    ``widths``, for a driver built with ``sub_windows``: each answer is the aggregate of
    the ``widths[q]`` youngest items (all of them when fewer), for every q.
    """

    evicts: np.ndarray
    inserts: np.ndarray
    emits: np.ndarray
    positions: np.ndarray
    window: int
    room: int
    widths: np.ndarray = _NONE_I


def is_bulk(plan: Plan) -> bool:
    """Whether ``plan``'s inserts are counts (:func:`bulk_plan`), for a driver built with ``bulk``."""
    return plan.inserts.dtype.kind == "i"


def bulk_plan(evicts, inserts, emits=_NONE_B, room: int = 1) -> Plan:
    """Step k evicts the ``evicts[k]`` oldest items, inserts the next ``inserts[k]`` values and
    answers if ``emits[k]`` (every step when empty), from a window with room for ``room`` items
    (made before the loop, or by a resizing driver as it goes)."""
    evicts = np.asarray(evicts, np.int64)
    return Plan(evicts, np.asarray(inserts, np.int64), np.asarray(emits, np.bool_), _NONE_I, 0, int(room))


# ---------------------------------------------------------------- plans for whole arrays
def row_plan(n: int, window: int) -> Plan:
    """Row k's window is rows ``max(0, k - window + 1) .. k``."""
    return Plan(_NONE_I, _NONE_B, _NONE_B, _NONE_I, int(window), int(min(window, max(n, 1))))


def time_plan(times: np.ndarray, span) -> Plan:
    """Row k's window is the rows j <= k with ``times[k] - span < times[j]`` (sorted times whose
    windows stay inside int64: :mod:`winagg.times` shifts those that would leave it)."""
    bounds = window_starts(times, span, times.shape[0])
    if bounds is None:
        raise ValueError("time_plan needs sorted int64 or float64 times whose windows stay inside int64")
    starts, widest = bounds
    evicts = np.diff(starts, prepend=np.int64(0))  # the rows whose window ended before row k's
    return Plan(evicts, _NONE_B, _NONE_B, _NONE_I, 0, max(int(widest), 1))


def window_starts(times, span, n: int):
    """``(starts, widest)``: ``starts[i]`` is the first row j with ``times[j] > times[i] - span``
    (sorted times) and ``widest`` the most rows in one window; None if the times are unsorted."""
    t = np.asarray(times)
    if t.ndim != 1 or t.shape[0] != n:
        raise ValueError(f"times must be one-dimensional with {n} rows, got shape {t.shape}")
    if t.dtype not in (np.int64, np.float64):
        return None
    if span is None or isinstance(span, str) or not span > 0:
        raise ValueError(f"span must be a positive number in the times' unit, got {span!r}")
    starts = np.empty(n, np.int64)
    if n == 0:
        return starts, 1
    if t.dtype == np.int64:
        # integer times: (t - w, t] holds the same integers as (t - ceil(w), t], computed exactly
        span = int(math.ceil(span)) if span < 2**63 else 2**63
        if int(t.min()) - span < -2**63:
            return None  # t - span would wrap; the caller shifts such times first
        widest = _starts_kernel(t, np.int64(span), starts)
    else:
        widest = _starts_kernel(t, float(span), starts)
    return None if widest < 0 else (starts, widest)


@nb.njit(cache=True)
def _starts_kernel(t, span, starts):
    """Fill ``starts`` in one forward pass (both ends of a window only move forward);
    return the most rows in one window, or -1 at the first row older than the row before."""
    first = 0
    widest = 1
    for i in range(t.shape[0]):
        if i > 0 and t[i] < t[i - 1]:
            return -1
        horizon = t[i] - span
        while t[first] <= horizon:
            first += 1
        starts[i] = first
        widest = max(widest, i - first + 1)
    return widest


#: Operation codes of :func:`script_plan`.
OP_INSERT, OP_EVICT, OP_QUERY, OP_BULK_EVICT = 0, 1, 2, 3


def script_plan(codes: np.ndarray, values: np.ndarray, held: int = 0) -> Plan:
    """One step per operation: ``codes[k]`` is OP_INSERT (insert ``values[k]``),
    OP_EVICT (evict the oldest; never from an empty window), OP_BULK_EVICT (evict
    the ``values[k]`` oldest) or OP_QUERY (answer into ``out[k]``), from a window
    that holds ``held`` items."""
    codes = np.asarray(codes)
    evicts = np.where(codes == OP_EVICT, 1, 0).astype(np.int64)
    bulk = codes == OP_BULK_EVICT
    evicts[bulk] = np.asarray(values)[bulk].astype(np.int64)
    inserts = codes == OP_INSERT
    sizes = held + np.cumsum(inserts.astype(np.int64) - evicts)
    room = int(max(sizes.max(initial=held), 1))
    return Plan(evicts, inserts, codes == OP_QUERY, _NONE_I, 0, room)


# ---------------------------------------------------------------- out-of-order windows
# An algorithm that takes items at any time (FiBA) runs through a second loop of the same shape,
# keyed by time instead of by arrival: step k inserts ``adds[k]`` items (a batch sorted by time:
# up to FEW_ADDS one by one, more in one bulk insert), evicts ``evicts[k]`` oldest entries, evicts every
# entry at or before ``horizons[k]``, then answers as ``answers[k]`` says.

#: Codes of an out-of-order plan's ``answers``: no answer, the whole window, the entries with
#: ``lows[k] < time <= highs[k]`` (a closed range ``[lo, hi]`` is ``(just_below(lo), hi]``).
NO_ANSWER, WHOLE, RANGE = 0, 1, 2


#: How many entries at or below a step's horizon the out-of-order driver evicts one by one
#: before it turns to a bulk evict.
FEW = 4


#: A step's items up to this many are inserted one by one, more in one bulk insert. FiBA's bulk
#: insert allocates its scratch for every batch, which costs more than a few single inserts
#: and less than many (``winagg bench reference_ooo --ooo-driver bulk_evict_insert``).
FEW_ADDS = 8


def just_below(low):
    """The time just below ``low`` (int64 or float64), so that ``(just_below(lo), hi]`` is ``[lo, hi]``."""
    low = np.asarray(low)
    if low.dtype.kind == "i":
        return low - 1
    return np.nextafter(low, -np.inf)


class OutOfOrderPlan(NamedTuple):
    """What each step of the out-of-order driver does.

    ``adds[k]`` items are inserted at step k (a batch sorted by time: up to
    :data:`FEW_ADDS` one by one, more in one bulk insert) and ``evicts[k]`` oldest
    entries evicted; both are empty
    for a driver built ``per_row`` (one item per step, no single evictions).
    ``answers`` empty answers every step over ``(times[k] - span, times[k]]`` (the
    range of a row's time window, which is the whole window whenever every entry
    lies inside it). ``positions`` as in :class:`Plan`.
    """

    adds: np.ndarray
    evicts: np.ndarray
    horizons: np.ndarray
    answers: np.ndarray
    lows: np.ndarray
    highs: np.ndarray
    positions: np.ndarray
    span: object


#: The ``few`` of every out-of-order plan but the FiBA experiments' (see :func:`build_out_of_order_driver`).
FEW_ONE_BY_ONE = (FEW, FEW_ADDS)


def rolling_plan(times: np.ndarray, span) -> OutOfOrderPlan:
    """Row k's answer covers the rows j <= k with ``times[k] - span < times[j] <= times[k]``,
    times in any order; the entries no later row can need (time <= min(times[k:]) - span)
    leave at step k in one bulk eviction."""
    later_min = np.minimum.accumulate(times[::-1])[::-1]
    return OutOfOrderPlan(_NONE_I, _NONE_I, later_min - span, _NONE_I, _NONE_I, _NONE_I, _NONE_I,
                          times.dtype.type(span))


def count_plan(n: int, rows: int, held: int, since_answer: int, slide: int, first_position: int) -> Plan:
    """A batch of ``n`` events on a window of the last ``rows`` events that holds ``held`` now
    and answered ``since_answer`` events ago: every event enters, the oldest leaves once
    ``rows`` are held, every ``slide``-th event answers, and so does the batch's last
    (the latest answer). Positions count events from ``first_position`` on."""
    step = np.arange(n, dtype=np.int64)
    evicts = (held + step >= rows).astype(np.int64)  # full before this event enters
    emits = (since_answer + step + 1) % slide == 0
    emits[-1] = True
    return Plan(evicts, _NONE_B, emits, first_position + step, 0, rows)


def batch_steps(m, lows, highs, horizon, lowest):
    """The plan's arrays ``(adds, evicts, horizons, answers, lows, highs)`` for a batch of ``m`` items
    and the open-below ranges ``(lows[j], highs[j]]``; ``lowest`` evicts nothing."""
    ranges = lows.shape[0]
    steps = ranges + 1
    adds = np.zeros(steps, np.int64)
    adds[0] = m
    evicts = np.zeros(steps, np.int64)
    horizons = np.full(steps, lowest)
    horizons[ranges] = horizon
    answers = np.full(steps, RANGE, np.int64)
    answers[ranges] = NO_ANSWER
    step_lows = np.full(steps, lowest)
    step_highs = np.full(steps, lowest)
    step_lows[:ranges] = lows
    step_highs[:ranges] = highs
    return adds, evicts, horizons, answers, step_lows, step_highs


def in_a_hopping_window(times, size: int, slide: int) -> np.ndarray:
    """Whether each int64 time lies in a hopping window ``[k*slide, k*slide + size)``: every time
    does unless ``slide > size``, where the times between two windows lie in none (Spark's
    ``window()`` gives such a row no window, so it is neither aggregated nor late)."""
    times = np.asarray(times, np.int64)
    if size >= slide:
        return np.ones(times.shape, np.bool_)
    return np.mod(times, np.int64(slide)) < size


def last_closed_window(size, slide, watermark) -> int:
    """The largest k whose hopping window ``[k*slide, k*slide + size)`` ends at or before
    ``watermark`` (int64 or float times): :data:`INT_HIGH` once every window has closed (an
    infinite watermark, or one at int64's top), :data:`INT_LOW` before any watermark."""
    if watermark == math.inf or watermark >= INT_HIGH:
        return INT_HIGH
    if watermark == -math.inf:
        return INT_LOW
    if all(isinstance(x, (int, np.integer)) for x in (size, slide, watermark)):
        return (int(watermark) - int(size)) // int(slide)  # exact for int64 times
    k = (watermark - size) / slide
    if not INT_LOW < k < INT_HIGH:  # (float times) beyond every window an int64 k numbers
        return INT_LOW if k <= INT_LOW else INT_HIGH
    k = math.floor(k)
    while k * slide + size > watermark:  # guard the float division against rounding
        k -= 1
    while (k + 1) * slide + size <= watermark:
        k += 1
    return k
