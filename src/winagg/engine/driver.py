"""The window driver: every in-order window is one loop of evict, insert, answer.

A window kind decides only *which* items leave and *when* an answer is due;
the aggregation loop never looks at rows, times, keys or peers. Like pandas'
window indexers, the bounds come first, as a :class:`Plan` of three steps per
input row:

1. evict the ``evicts[k]`` oldest items of the window,
2. insert row k's value (unless ``inserts[k]`` is false: a missing value),
3. answer (unless ``emits[k]`` is false: a row whose answer comes later).

Plans are made by numpy or by small compiled functions that know nothing of
the aggregation (:func:`row_plan`, :func:`time_plan`, :func:`script_plan`, and
Spark's frames in :mod:`winagg.engine.frames`), so they are compiled once per
process, not once per algorithm and aggregation. One driver,
:func:`build_driver`, runs every plan; it is written once and runs compiled
(:func:`compiled_driver`, one kernel per algorithm and aggregation, the whole
loop in numba) or in plain Python for any monoid (:func:`python_driver`).
``winagg.rolling``, the Spark partition engine and the tests' operation
scripts all run through it.
"""

from __future__ import annotations

from functools import partial
from typing import Callable, NamedTuple

import numba as nb
import numpy as np

from ..core import jitcache, state
from ..core.capabilities import BulkInsert
from ..core.ops import build_evict_many, compiled_ops, python_ops
from .pages import populated


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


# ---------------------------------------------------------------- the driver
class Driver(NamedTuple):
    """One algorithm over one aggregation, ready to run plans (see :func:`run`)."""

    #: in order (:func:`run`): ``drive(values, plan..., bufs, st, want_counts, out, counts, staging,
    #: first_step, cursor) -> (state, next_step, cursor)``; out of order (:func:`run_out_of_order`):
    #: ``drive(values, times, plan..., state, want_counts, out) -> (out, counts, state)``
    drive: Callable
    #: ``make_room(state, room) -> state``: capacity for ``room`` items
    make_room: Callable
    #: ``init(capacity) -> state``: an empty window
    init: Callable
    #: ``new_out(size)``: the array ``drive`` writes its answers into, allocated by the caller
    #: with numpy. A large one then gets numpy's huge-page hint: answering 30 million rows
    #: cost about 58,000 page faults (0.14 s) in an array allocated inside the loop's
    #: function, about 1,000 in numpy's.
    new_out: Callable
    #: cycle counts (or sizes) a step of a timed run records: three for a timed bulk build
    counts_per_step: int = 1
    #: ``staging(plan)``: the buffer a native bulk insert reads a step's partials from, made once per run
    staging: Callable = lambda plan: None


def build_driver(funcs, evict_many, lift: Callable, lower: Callable, new_out: Callable, position: Callable,
                 jit: Callable, dense: bool = False, clock=None, sub_windows: bool = False, bulk=None,
                 resize: bool = False) -> Driver:
    """The driver's loop over ``funcs``, one source for both modes (``jit`` compiles or not).

    ``position(positions, k)`` is the position step k lifts with (see :data:`POSITIONS`).
    ``new_out(size)`` allocates the answers, outside the loop (see :class:`Driver`).
    ``state`` is the algorithm's ``(bufs, st)``. ``out[k]`` and ``counts[k]``
    (the window's size, when ``want_counts``) are written where the step answers
    and left unset elsewhere. Room for the whole plan is made before the loop, in
    its own function: where a buffer may be reassigned (a grow) in the loop's
    function, numba keeps reference counts and reloads it on every row (FiBA ran
    at half speed; the range kernel was 6x slower with a grow in its loop).

    ``dense`` builds the loop for plans whose every step inserts and answers (``inserts``
    and ``emits`` empty, no counts), as :func:`row_plan` and :func:`time_plan` make: numba
    prunes the general branch, and the tightest loops (a sum by subtract-on-evict, 1.2 ns a
    row) lose the 5-20% its tests cost.

    ``clock`` = ``(read_cycles, cycles_after)`` (:mod:`winagg.bench.cycles`) builds the timed
    loop of the latency experiments: with ``want_counts``, ``counts[k]`` of an answering step is
    the cycles its evictions, insert and answer took, and a step that does not answer goes
    untimed (without ``want_counts`` the loop runs untimed).

    ``sub_windows`` builds the loop whose answers are range queries over the youngest
    ``widths[q]`` items (an algorithm with sub-window queries, the FlatFIT paper's
    multi-query workload): ``out[k * len(widths) + q]`` is step k's q-th answer.

    ``bulk`` = ``(alloc, store)`` of the aggregation's layout builds the loop for plans whose
    ``inserts`` are counts (:func:`bulk_plan`): step k inserts the next ``inserts[k]`` values of
    ``values``, in one native bulk insert (FlatFAT's) when the algorithm has one and the step
    inserts more than one, else one by one. A timed bulk build writes three cycle counts per
    step, its evictions' in ``counts[k]``, its inserts' in ``counts[n + k]`` and its answer's in
    ``counts[2n + k]`` (0 for a step that does not answer), n the plan's steps; a step that
    inserts nothing is stamped only at its start and after its answer (the stamps cost about
    40 ns each), so its evictions count with its answer.

    ``resize`` builds the loop that grows a full window and halves one less than a quarter full
    (above :data:`SMALLEST_ROOM`) as it goes, instead of making room for the whole plan first:
    the RA paper's oscillating-capacity experiment. The loop stops at each resize and a second
    compiled function resizes between two runs of it, so the loop's own function never
    reassigns a buffer.

    The loop is ``drive`` itself, called from Python by :func:`run`, which makes the counts and
    the staging buffer: inlined into a compiled wrapper that made them, six builds took 18-21 s
    to compile instead of 15-18 (30.8 M Python calls against 18.9 M), minutes of the suite.
    """
    insert, evict, query, grow = funcs.insert, funcs.evict, funcs.query, funcs.grow
    range_query = getattr(funcs, "range_query", None)
    DENSE, SUBS, BULK, RESIZE = dense, sub_windows, bulk is not None, resize  # closure constants: numba
    TIMED = clock is not None                                                  # drops the branches not taken
    read_cycles, cycles_after = clock if TIMED else (None, None)
    bulk_insert = funcs.bulk_insert if BULK and isinstance(funcs, BulkInsert) else None
    NATIVE_BULK = bulk_insert is not None
    alloc, store = bulk if BULK else (None, None)
    shrink = funcs.shrink if RESIZE else None
    if DENSE and BULK:
        raise ValueError("a dense loop inserts one value a step; bulk plans need the general loop")
    named = state.accessors(jit is jitcache.njit)
    capacity, end, size = named.capacity, named.end, named.size

    def make_room(window_state, room):
        bufs, st = window_state
        while room > capacity(st):
            bufs, st = grow(bufs, st)
        return bufs, st

    def needs(inserts, k):
        """Items step k inserts (for a resizing loop)."""
        if BULK:
            return inserts[k]
        return 1 if inserts.shape[0] == 0 or inserts[k] else 0

    def drive(values, evicts, inserts, emits, positions, window, widths, bufs, st, want_counts, out, counts,
              staging, first_step, cursor):
        n = inserts.shape[0] if BULK else values.shape[0]
        rows_only = evicts.shape[0] == 0
        every_insert = inserts.shape[0] == 0
        every_emit = emits.shape[0] == 0
        # Only a resizing build resumes mid-plan. From a constant 0 the loop ran 7-13% faster than from
        # first_step (same process, interleaved; Two-Stacks Lite's sum 286 against 252 M rows/s).
        for k in range(first_step if RESIZE else 0, n):
            if RESIZE:
                room, live = capacity(st), size(st) + needs(inserts, k)
                if live > room or (room > SMALLEST_ROOM and 4 * live < room):
                    return (bufs, st), k, cursor
            if not BULK:
                value = values[k]  # read first: in a timed build, before the stamp, as the round's input
            if TIMED:
                started = read_cycles() if want_counts else 0
            if rows_only:
                if k >= window:
                    st = evict(bufs, st)
            else:
                gone = evicts[k]
                if gone == 1:
                    st = evict(bufs, st)
                elif gone > 1:
                    st = evict_many(bufs, st, gone)
            if DENSE:
                st = insert(bufs, st, lift(value, position(positions, k)))
                answer = lower(query(bufs, st))
                if TIMED:
                    if want_counts:
                        counts[k] = cycles_after(np.float64(answer)) - started
                out[k] = answer
            else:
                if BULK:
                    m = inserts[k]
                    if TIMED:  # a step that inserts nothing gets no stamps between evictions and answer
                        evicted = cycles_after(np.float64(size(st))) if want_counts and m > 0 else started
                    if NATIVE_BULK and m > 1:
                        for q in range(m):
                            store(staging, q, lift(values[cursor + q], position(positions, cursor + q)))
                        st = bulk_insert(bufs, st, staging, m)
                    else:
                        for q in range(cursor, cursor + m):
                            st = insert(bufs, st, lift(values[q], position(positions, q)))
                    cursor += m
                    if TIMED:
                        if want_counts:
                            inserted = cycles_after(np.float64(size(st))) if m > 0 else started
                            counts[k] = evicted - started
                            counts[n + k] = inserted - evicted
                            counts[2 * n + k] = 0
                elif every_insert or inserts[k]:
                    st = insert(bufs, st, lift(value, position(positions, k)))
                if SUBS:  # a plain constant test: numba prunes it, not a constant inside an `and`
                    if every_emit or emits[k]:
                        live, youngest = size(st), end(st)
                        for q in range(widths.shape[0]):
                            width = min(widths[q], live)
                            out[k * widths.shape[0] + q] = lower(range_query(bufs, st, youngest - width, youngest))
                elif every_emit or emits[k]:
                    answer = lower(query(bufs, st))
                    if TIMED:  # stamped before the store: the first touch of a page of out is not the round's
                        if want_counts:
                            if BULK:
                                counts[2 * n + k] = cycles_after(np.float64(answer)) - inserted
                            else:
                                counts[k] = cycles_after(np.float64(answer)) - started
                    elif want_counts:
                        counts[k] = size(st)
                    out[k] = answer
        return (bufs, st), n, cursor

    if RESIZE:
        needs, loop = jit(needs), jit(drive)

        def drive(values, evicts, inserts, emits, positions, window, widths, bufs, st, want_counts, out, counts,
                  staging, first_step, cursor):
            n = inserts.shape[0] if BULK else values.shape[0]
            (bufs, st), k, cursor = loop(values, evicts, inserts, emits, positions, window, widths, bufs, st,
                                         want_counts, out, counts, staging, first_step, cursor)
            while k < n:
                if size(st) + needs(inserts, k) > capacity(st):
                    bufs, st = grow(bufs, st)
                else:
                    bufs, st = shrink(bufs, st)
                (bufs, st), k, cursor = loop(values, evicts, inserts, emits, positions, window, widths, bufs, st,
                                             want_counts, out, counts, staging, k, cursor)
            return (bufs, st), k, cursor

    def staging(plan):
        if NATIVE_BULK:
            return alloc(max(int(plan.inserts.max()), 1) if plan.inserts.shape[0] else 1)

    return Driver(jit(drive), jit(make_room), funcs.init, new_out, 3 if BULK and TIMED else 1, staging)


#: A resizing driver halves a window less than a quarter full only above this room.
SMALLEST_ROOM = 16


def _step_number(positions, k):
    return k


def _planned_position(positions, k):
    return positions[k] if positions.shape[0] else k


#: ``position(positions, k)`` for aggregations that ignore positions (False) and read them
#: (True). Chosen when the driver is built, not by a branch in its loop: a per-row choice
#: between k and positions[k] halved FiBA's speed as a row window, even for a sum.
POSITIONS = {False: jitcache.njit(_step_number, inline="always"),
             True: jitcache.njit(_planned_position, inline="always")}


def run(driver: Driver, values, plan: Plan, state, want_counts: bool = False):
    """``(out, counts, state)``: ``driver`` (:func:`compiled_driver`, :func:`python_driver`) over ``plan``."""
    bufs, st = driver.make_room(state, plan.room)
    n = plan.inserts.shape[0] if is_bulk(plan) else values.shape[0]
    out = driver.new_out(n * plan.widths.shape[0] if plan.widths.shape[0] else n)
    counts = np.empty((driver.counts_per_step * n) if want_counts else 0, np.int64)
    staging = driver.staging(plan)
    with populated(out):
        state, _, _ = driver.drive(values, plan.evicts, plan.inserts, plan.emits, plan.positions, plan.window,
                                   plan.widths, bufs, st, want_counts, out, counts, staging, 0, 0)
    return out, counts, state


def is_bulk(plan: Plan) -> bool:
    """Whether ``plan``'s inserts are counts (:func:`bulk_plan`), for a driver built with ``bulk``."""
    return plan.inserts.dtype.kind == "i"


def bulk_plan(evicts, inserts, emits=_NONE_B, room: int = 1) -> Plan:
    """Step k evicts the ``evicts[k]`` oldest items, inserts the next ``inserts[k]`` values and
    answers if ``emits[k]`` (every step when empty), from a window with room for ``room`` items
    (made before the loop, or by a resizing driver as it goes)."""
    evicts = np.asarray(evicts, np.int64)
    return Plan(evicts, np.asarray(inserts, np.int64), np.asarray(emits, np.bool_), _NONE_I, 0, int(room))


_compiled: dict = {}


def compiled_funcs(algorithm, spec):
    """``(funcs, evict_many)``: the algorithm's compiled operations over ``spec`` and its count-based
    bulk eviction (native, or a loop of evicts), built once per process."""
    key = ("funcs", algorithm.name, _options_key(algorithm.options), spec.key)
    if key not in _compiled:
        ops = compiled_ops(spec)
        funcs = algorithm.load().build(ops, **algorithm.options)
        _compiled[key] = (funcs, build_evict_many(funcs, ops))
    return _compiled[key]


def _options_key(options: dict) -> tuple:
    return tuple(sorted(options.items()))


def compiled_driver(algorithm, spec, dense: bool = False, timed: bool = False, sub_windows: bool = False,
                    bulk: bool = False, resize: bool = False) -> Driver:
    """The :class:`Driver` of an in-order algorithm over a built-in aggregation's compiled description.

    ``dense`` (see :func:`build_driver`): for plans whose every step inserts and answers,
    as ``winagg.rolling`` runs; False for any plan. ``timed``: the loop that times each
    answering step with the cycle counter (the latency experiments). ``sub_windows``: answers
    over the youngest ``plan.widths`` items. ``bulk``: for :func:`bulk_plan`'s plans, which insert
    any number of values a step. ``resize``: the loop grows and shrinks the window as it goes.
    Built once per process and cached on disk (:mod:`winagg.core.jitcache`).
    """
    key = (algorithm.name, _options_key(algorithm.options), spec.key, dense, timed, sub_windows, bulk, resize)
    if key not in _compiled:
        funcs, evict_many = compiled_funcs(algorithm, spec)
        clock = _clock() if timed else None
        new_out = partial(np.empty, dtype=spec.out_dtype)
        layout = (spec.layout.alloc, spec.layout.store) if bulk else None
        _compiled[key] = build_driver(funcs, evict_many, spec.lift, spec.lower, new_out, POSITIONS[spec.positional],
                                      jitcache.njit, dense, clock, sub_windows, layout, resize)
    return _compiled[key]


def _clock():
    from ..bench.cycles import cycles_after, read_cycles

    return read_cycles, cycles_after


def python_driver(algorithm, monoid) -> Driver:
    """The :class:`Driver` of an algorithm over any monoid, in plain Python."""
    ops = python_ops(monoid)
    funcs = algorithm.load().build(ops, **algorithm.options)
    return build_driver(funcs, build_evict_many(funcs, ops), _python_lift(monoid), monoid.lower, _python_out,
                        _planned_position, ops.jit)


def _python_lift(monoid):
    if monoid.positional:
        def lift(value, position):
            return monoid.lift((value, position))
    else:
        def lift(value, position):
            return monoid.lift(value)
    return lift


def _python_out(n):
    return [None] * n


# ---------------------------------------------------------------- plans for whole arrays
def row_plan(n: int, window: int) -> Plan:
    """Row k's window is rows ``max(0, k - window + 1) .. k``."""
    return Plan(_NONE_I, _NONE_B, _NONE_B, _NONE_I, int(window), int(min(window, max(n, 1))))


def time_plan(times: np.ndarray, span) -> Plan:
    """Row k's window is the rows j <= k with ``times[k] - span < times[j]`` (sorted times)."""
    evicts, room = _time_evictions(times, times.dtype.type(span))
    return Plan(evicts, _NONE_B, _NONE_B, _NONE_I, 0, max(int(room), 1))


@nb.njit(cache=True)
def _time_evictions(times, span):
    # One pass with two pointers: a binary search per row (np.searchsorted) took as long as
    # the aggregation itself.
    n = times.shape[0]
    evicts = np.zeros(n, np.int64)
    oldest, room = 0, 0
    for k in range(n):
        horizon = times[k] - span
        expired = oldest
        while expired < k and times[expired] <= horizon:  # row k leaves only after its step
            expired += 1
        evicts[k] = expired - oldest
        oldest = expired
        room = max(room, k + 1 - oldest)
    return evicts, room


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


def run_script(driver: Driver, codes: np.ndarray, values: np.ndarray, chunk: int = 0) -> np.ndarray:
    """Answers of a script (:func:`script_plan`), 0 where no answer is due.

    With ``chunk`` > 0 the script runs ``chunk`` operations per driver call from
    a window of capacity 2, so that buffers grow while they hold items.
    """
    codes, values = np.asarray(codes), np.asarray(values)
    pieces, state, held = [], driver.init(2), 0
    step = chunk if chunk > 0 else max(codes.shape[0], 1)
    for first in range(0, codes.shape[0], step):
        part = slice(first, first + step)
        plan = script_plan(codes[part], values[part], held)
        plan = plan._replace(positions=np.arange(first, first + plan.evicts.shape[0], dtype=np.int64))
        held += int(plan.inserts.sum() - plan.evicts.sum())
        out, _, state = run(driver, values[part], plan, state)
        pieces.append(np.where(plan.emits, out, 0) if isinstance(out, np.ndarray) else
                      [o if e else 0 for o, e in zip(out, plan.emits)])
    if not pieces:
        return np.zeros(0)
    return np.concatenate(pieces) if isinstance(pieces[0], np.ndarray) else sum(pieces, [])


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
#: insert allocates its scratch for every batch: at 1,024 entries from the youngest end a batch
#: of two cost about 1 us an item (bench/vs_reference_ooo.py --experiment bulk_evict_insert),
#: single inserts were faster up to about 16 items a batch and slower at 64.
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


def build_out_of_order_driver(f, lift, lower, new_out, alloc, store, position, jit, per_row: bool,
                              clock=None, evict_first: bool = False) -> Driver:
    """The loop over an out-of-order algorithm's functions ``f`` (FiBA's ``TreeFuncs``).

    ``per_row`` builds the loop for plans of one item per step (``adds`` and ``evicts``
    empty): numba prunes the general branch, whose conditional insert alone made the whole
    loop 1.5x slower. Each operation has one call site in a built loop: FiBA's operations are
    inlined into it, and a second copy of one (insert_at, query) also cost 1.5-2x.

    ``few = (few_evicts, few_adds)``, an argument of ``drive``: a step evicts up to ``few_evicts``
    entries at or below its horizon one by one before it turns to one bulk evict, and inserts
    up to ``few_adds`` items one by one, more in one bulk insert (:data:`FEW`, :data:`FEW_ADDS`;
    the FiBA experiments pass 0 and 0 or the batch size, to time one operation or the other).

    ``clock`` = ``(read_cycles, cycles_after)`` builds the timed loop of the FiBA latency
    experiments: with ``want_counts``, ``counts[k]``, ``counts[n + k]`` and ``counts[2n + k]`` are
    the cycles step k's inserts, evictions and answer took (0 for a step that does not answer),
    n the plan's steps; without it the loop runs untimed. A timed loop answers whole windows only.

    ``evict_first`` builds the loop whose steps evict before they insert, as the reference's
    bulk rounds do, so that the FiBA experiments time the same operations on windows of the
    same sizes (an eviction finds n entries, not n + m). The plans that the library makes
    insert first: a batch's own items may be due for eviction.
    """
    insert_at, evict, evict_upto, query, range_query = f.insert_at, f.evict, f.evict_upto, f.query, f.range_query
    bulk_insert, reserve, oldest, youngest = f.bulk_insert, f.reserve, f.oldest, f.youngest
    PER_ROW, EVICT_FIRST = per_row, evict_first  # constants of the closure: numba drops the branches
    TIMED = clock is not None                    # not taken
    read_cycles, cycles_after = clock if TIMED else (None, None)
    named = state.accessors(jit is jitcache.njit)
    free_entries, entries = named.free_entries, named.size

    def make_room(tree_state, room):
        return reserve(tree_state[0], tree_state[1], room)

    def run_steps(values, times, adds, evicts, horizons, answers, lows, highs, positions, span, few, b, st,
                  want_counts, out, counts, batch_times, partials, k, cursor):
        """Steps k, k + 1, ... until the plan ends or the pool lacks room for a step's inserts:
        ``(k, cursor, st)`` of the first step not run. ``b`` is never reassigned here: where a
        loop's function reassigns a buffer (a grow), numba keeps reference counts and reloads it
        on every step, which halved the per-row loop's speed."""
        n = horizons.shape[0]
        row_ranges = answers.shape[0] == 0
        few_evicts, few_adds = few
        while k < n:
            m = 1 if PER_ROW else adds[k]
            if free_entries(st) < m:  # before any change: the step runs again after the pool grows
                return k, cursor, st
            forced = 0 if PER_ROW else evicts[k]
            if TIMED:
                stamp = read_cycles() if want_counts else 0
            # A step's evictions: the plan's single evictions, then the entries at or below the
            # horizon, the first few_evicts of those one by one from the oldest end and the rest in
            # one bulk evict. In a stream in time order one or two leave per step; the single evict is
            # inlined into this loop, while FiBA compiles its bulk evict out of line (apart), so the
            # call alone cost more than the eviction (11.8 -> 13.9 M rounds/s on vs_reference_ooo's
            # rounds at d = 0). The same lines stand before the inserts (EVICT_FIRST) and after them,
            # one copy pruned in each build: as one inlined helper function they made the per-row
            # loop 15-20% slower on geomean (vs_reference_ooo, d = 0 to 64).
            if EVICT_FIRST:
                done = 0
                while entries(st) > 0 and (done < forced or oldest(b) <= horizons[k]):
                    if done == forced + few_evicts:
                        st = evict_upto(b, st, horizons[k])
                        break
                    st = evict(b, st)
                    done += 1
                if TIMED:
                    evict_cycles = cycles_after(np.float64(entries(st))) - stamp if want_counts else 0
                    stamp += evict_cycles
            if PER_ROW:
                st = insert_at(b, st, times[k], lift(values[k], position(positions, k)))
            else:
                if m <= few_adds:
                    for q in range(cursor, cursor + m):
                        st = insert_at(b, st, times[q], lift(values[q], position(positions, q)))
                else:
                    for q in range(m):
                        batch_times[q] = times[cursor + q]
                        store(partials, q, lift(values[cursor + q], position(positions, cursor + q)))
                    if TIMED:  # the bulk insert alone, as the reference times it: restamped after the staging
                        stamp = read_cycles() if want_counts else 0
                    st = bulk_insert(b, st, batch_times, partials, m)
                cursor += m
            if TIMED:
                insert_cycles = cycles_after(np.float64(entries(st))) - stamp if want_counts else 0
                stamp += insert_cycles
            if not EVICT_FIRST:
                done = 0
                while entries(st) > 0 and (done < forced or oldest(b) <= horizons[k]):
                    if done == forced + few_evicts:
                        st = evict_upto(b, st, horizons[k])
                        break
                    st = evict(b, st)
                    done += 1
                if TIMED:
                    evict_cycles = cycles_after(np.float64(entries(st))) - stamp if want_counts else 0
                    stamp += evict_cycles
            if row_ranges:
                # Row k's entry stays (its time is above the horizon), so the window is not empty.
                # When every entry lies in the range (always, for sorted times), the answer is the
                # whole-window query, O(1), instead of a range query's walk down from the root.
                hi = times[k]
                lo = hi - span
                answer = WHOLE if oldest(b) > lo and youngest(b) <= hi else RANGE
            else:
                lo, hi, answer = lows[k], highs[k], answers[k]
            if answer == WHOLE:
                out[k] = lower(query(b, st))
            elif answer == RANGE:
                if not TIMED:  # the experiments' timed loop answers whole windows: no range query's code
                    # always open below: range_query inlined with a constant flag folds its branches
                    out[k] = lower(range_query(b, st, lo, hi, True))
            if want_counts:
                if TIMED:
                    counts[k] = insert_cycles
                    counts[n + k] = evict_cycles
                    counts[2 * n + k] = cycles_after(np.float64(out[k])) - stamp if answer != NO_ANSWER else 0
                else:
                    counts[k] = entries(st)
            k += 1
        return k, cursor, st

    run_steps = jit(run_steps)

    def drive(values, times, adds, evicts, horizons, answers, lows, highs, positions, span, few, tree_state,
              want_counts, out):
        b, st = tree_state
        n = horizons.shape[0]
        counts = np.empty((3 * n if TIMED else n) if want_counts else 0, np.int64)
        # A bulk insert's times and partials are staged in buffers made once for the whole plan:
        # allocated for each step (and the times sliced), they took about a third of FiBA's rounds
        # of one item in the experiments.
        most = 1 if PER_ROW or n == 0 else max(adds.max(), 1)
        batch_times, partials = np.empty(most, times.dtype), alloc(most)
        k, cursor = 0, 0
        while True:
            k, cursor, st = run_steps(values, times, adds, evicts, horizons, answers, lows, highs, positions,
                                      span, few, b, st, want_counts, out, counts, batch_times, partials, k, cursor)
            if k == n:
                return out, counts, (b, st)
            b, st = reserve(b, st, 1 if PER_ROW else adds[k])  # doubles the pool: rare

    # drive runs uncompiled around the compiled loop (it loops again only when the pool grows):
    # compiled, it took the tree's code through LLVM a second time, about a quarter of the build.
    return Driver(drive, jit(make_room), f.init, new_out)


#: The ``few`` of every out-of-order plan but the FiBA experiments' (see :func:`build_out_of_order_driver`).
FEW_ONE_BY_ONE = (FEW, FEW_ADDS)


def run_out_of_order(driver: Driver, values, times, plan: OutOfOrderPlan, state, want_counts: bool = False,
                     few=FEW_ONE_BY_ONE):
    """``(out, counts, state)``: an out-of-order ``driver`` over ``plan``; ``counts`` are entries
    (cycles, in a timed build)."""
    out = driver.new_out(plan.horizons.shape[0])
    with populated(out):
        return driver.drive(values, times, plan.adds, plan.evicts, plan.horizons, plan.answers, plan.lows,
                            plan.highs, plan.positions, plan.span, few, state, want_counts, out)


def out_of_order_funcs(algorithm, spec, options=None, time_type: str = "float64"):
    """An out-of-order algorithm's compiled functions over ``spec`` for ``time_type`` times
    ("float64" or "int64"), built once per process per (options, aggregation, time type)."""
    opts = {**algorithm.options, **(options or {})}
    opts.pop("check", None)  # checks only matter to the Python aggregator
    key = ("ooo funcs", algorithm.name, _options_key(opts), spec.key, time_type)
    if key not in _compiled:
        _compiled[key] = algorithm.load().build(compiled_ops(spec), times=time_type, **opts)
    return _compiled[key]


def compiled_out_of_order_driver(spec, options=None, time_type: str = "float64", per_row: bool = True,
                                 algorithm=None, timed: bool = False, evict_first: bool = False) -> Driver:
    """The out-of-order :class:`Driver` of ``algorithm`` (default: the registry's out-of-order
    algorithm, FiBA) with ``options`` over a compiled aggregation.

    ``per_row`` (see :func:`build_out_of_order_driver`): for plans of one item per step,
    as :func:`rolling_plan` makes; False for any plan. ``timed``: the loop that times each step's
    inserts, evictions and answer with the cycle counter (the FiBA latency experiments).
    ``evict_first``: steps evict before they insert (the reference's rounds).
    """
    from ..algos.registry import out_of_order

    algorithm = algorithm or out_of_order()
    funcs = out_of_order_funcs(algorithm, spec, options, time_type)
    key = ("ooo", id(funcs), per_row, timed, evict_first)  # funcs cached: one per (algorithm, options, spec, times)
    if key not in _compiled:
        new_out = partial(np.zeros, dtype=spec.out_dtype)  # zeros: a step that does not answer leaves its row 0
        _compiled[key] = build_out_of_order_driver(funcs, spec.lift, spec.lower, new_out, spec.layout.alloc,
                                                   spec.layout.store, POSITIONS[spec.positional], jitcache.njit,
                                                   per_row, _clock() if timed else None, evict_first)
    return _compiled[key]


def python_out_of_order_driver(algorithm, monoid, per_row: bool = True, evict_first: bool = False) -> Driver:
    """The out-of-order :class:`Driver` of ``algorithm`` over any monoid, in plain Python
    (``evict_first`` as in :func:`build_out_of_order_driver`)."""
    ops = python_ops(monoid)
    f = algorithm.load().build(ops, **algorithm.options)
    return build_out_of_order_driver(f, _python_lift(monoid), monoid.lower, _python_out, ops.alloc, ops.store,
                                     _planned_position, ops.jit, per_row, evict_first=evict_first)


def rolling_plan(times: np.ndarray, span) -> OutOfOrderPlan:
    """Row k's answer covers the rows j <= k with ``times[k] - span < times[j] <= times[k]``,
    times in any order; the entries no later row can need (time <= min(times[k:]) - span)
    leave at step k in one bulk eviction."""
    later_min = np.minimum.accumulate(times[::-1])[::-1]
    return OutOfOrderPlan(_NONE_I, _NONE_I, later_min - span, _NONE_I, _NONE_I, _NONE_I, _NONE_I,
                          times.dtype.type(span))
