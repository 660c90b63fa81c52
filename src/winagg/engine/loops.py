"""The two loops every window runs through: evict, insert, answer.

:func:`build_driver` runs an in-order algorithm over a :class:`~winagg.engine.plans.Plan`,
:func:`build_out_of_order_driver` an out-of-order one (FiBA) over an
:class:`~winagg.engine.plans.OutOfOrderPlan`. Each is written once and runs compiled
(the whole loop in numba, one kernel per algorithm and aggregation) or in plain Python
for any monoid; :mod:`winagg.engine.kernels` builds and caches them. The loops never
look at rows, times, keys or peers: the plan says what each step does.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np

from ..core import jitcache, state
from ..core.capabilities import BulkInsert
from .pages import populated
from .plans import FEW_ONE_BY_ONE, NO_ANSWER, RANGE, WHOLE, OutOfOrderPlan, Plan, is_bulk, script_plan


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
    #: with numpy. A large one then gets numpy's huge-page hint: an array allocated inside the
    #: loop's function is faulted in one small page at a time.
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
    function, numba keeps reference counts and reloads it on every row.

    ``dense`` builds the loop for plans whose every step inserts and answers (``inserts``
    and ``emits`` empty, no counts), as :func:`row_plan` and :func:`time_plan` make: numba
    prunes the general branch, and the tightest loops (a sum by subtract-on-evict) lose its
    tests, a large part of their work per row.

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
    inserts nothing is stamped only at its start and after its answer (each stamp costs cycles
    of its own), so its evictions count with its answer.

    ``resize`` builds the loop that grows a full window and halves one less than a quarter full
    (above :data:`SMALLEST_ROOM`) as it goes, instead of making room for the whole plan first:
    the RA paper's oscillating-capacity experiment. The loop stops at each resize and a second
    compiled function resizes between two runs of it, so the loop's own function never
    reassigns a buffer.

    The loop is ``drive`` itself, called from Python by :func:`run`, which makes the counts and
    the staging buffer: inlined into a compiled wrapper that made them, every build compiles
    longer (numba types the loop once more, through many more Python calls), which adds up
    across the suite.
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
        # Only a resizing build resumes mid-plan: from a constant 0 numba knows the loop's start
        # and compiles a tighter loop than from first_step.
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


def planned_position(positions, k):
    return positions[k] if positions.shape[0] else k


#: ``position(positions, k)`` for aggregations that ignore positions (False) and read them
#: (True). Chosen when the driver is built, not by a branch in its loop: a per-row choice
#: between k and positions[k] costs a branch on every row of the tightest loops.
POSITIONS = {False: jitcache.njit(_step_number, inline="always"),
             True: jitcache.njit(planned_position, inline="always")}


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


def build_out_of_order_driver(f, lift, lower, new_out, alloc, store, position, jit, per_row: bool,
                              clock=None, evict_first: bool = False) -> Driver:
    """The loop over an out-of-order algorithm's functions ``f`` (FiBA's ``TreeFuncs``).

    ``per_row`` builds the loop for plans of one item per step (``adds`` and ``evicts``
    empty): numba prunes the general branch, whose conditional insert alone slows the whole
    loop. Each operation has one call site in a built loop: FiBA's operations are inlined
    into it, and a second inlined copy of one (insert_at, query) slows it as much.

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
        on every step."""
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
            # call alone costs more than the eviction. The same lines stand before the inserts
            # (EVICT_FIRST) and after them, one copy pruned in each build: as one inlined helper
            # function they slowed the per-row loop (winagg bench reference_ooo).
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
    # compiled, it took the tree's code through LLVM a second time, a large share of the build.
    return Driver(drive, jit(make_room), f.init, new_out)


def run_out_of_order(driver: Driver, values, times, plan: OutOfOrderPlan, state, want_counts: bool = False,
                     few=FEW_ONE_BY_ONE):
    """``(out, counts, state)``: an out-of-order ``driver`` over ``plan``; ``counts`` are entries
    (cycles, in a timed build)."""
    out = driver.new_out(plan.horizons.shape[0])
    with populated(out):
        return driver.drive(values, times, plan.adds, plan.evicts, plan.horizons, plan.answers, plan.lows,
                            plan.highs, plan.positions, plan.span, few, state, want_counts, out)
