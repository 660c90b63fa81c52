"""``winagg.rolling``: one aggregate per input row, with the whole loop compiled."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import numpy as np

from .. import aggregations
from ..engine import blockscan, order_stats
from . import keyed
from ..core.errors import OutOfOrderError
from ..times import read_times
from ..values import describe_non_number, largest_magnitude, numeric_values, object_array, to_array
from ..engine.kernels import (compiled_driver, compiled_out_of_order_driver, compiled_spec, python_driver,
                              python_out_of_order_driver)
from ..engine.plans import rolling_plan, row_plan, time_plan, window_starts
from ..engine.loops import run, run_out_of_order
from ..algos.registry import check_monoid_fits, choose_algorithm, info, out_of_order
from ..aggregations.sketches import item_keys
from ..aggregations.multi import Multi
from ..engine.pieces import thread_count

if TYPE_CHECKING:
    import datetime

    import pandas as pd
    from numpy.typing import ArrayLike

    from ..core.monoid import Monoid

def rolling(values: ArrayLike | pd.Series | pd.DataFrame,
            window: int | float | str | datetime.timedelta | pd.Timedelta | np.timedelta64,
            agg: str | Monoid | type = "sum", *, by=None, times: ArrayLike | pd.Index | None = None,
            algorithm: Optional[str] = None, threads: Optional[int] = None) -> np.ndarray | pd.Series | pd.DataFrame:
    """The sliding-window aggregate ending at each row.

    Parameters
    ----------
    values:
        numpy array, pandas Series or Arrow array, or a DataFrame (each column
        its own series, a DataFrame of results). Missing values (NaN, null)
        are skipped by the numeric aggregations, as pandas skips them; a
        window with no value at all gives NaN for sum, min and max (pandas'
        ``min_periods=1``), 0 for count.
    window:
        Without ``times``: the number of rows (row i covers rows i-window+1..i,
        fewer at the start, like pandas ``rolling(window, min_periods=1)``).
        With ``times``: a duration (a number in the times' unit, or a string or
        Timedelta such as ``"1h"`` for datetime times); row i covers the rows
        j <= i with ``times[i] - window < times[j] <= times[i]``, like pandas
        ``rolling("1h")``. The same holds for times in any order: row i
        aggregates the rows that have *arrived* so far (j <= i) whose time lies
        in ``(times[i] - window, times[i]]``, in time order (rows of equal
        time in arrival order); a later row with an older time does not change
        earlier results.
    agg:
        An aggregation name, class or instance, or a :class:`winagg.Monoid`.
    by:
        Keys, one per row (array, Series, Arrow array, list; a DataFrame or
        2-D array groups by all its columns together), or, when ``values`` is
        a DataFrame, the name or list of names of its key columns (the other
        columns are the values). Each row's window then holds only the rows of
        its own key, exactly as pandas' ``groupby(by).rolling(...)`` (with
        ``dropna=False``: missing keys form one group of their own); keys may
        come in any order, and times are sorted (or not) within each key. One
        compiled call serves all keys (:mod:`winagg.windows.keyed`); results come in the
        input's row order, with its index. A positional aggregation (argmax)
        reports input row numbers.
    times:
        Optional times (numbers or datetime64) for a time-based window. Sorted
        times run the chosen in-order algorithm (it evicts by time with one
        bulk eviction per row); unsorted times run ``"fiba"``, the out-of-order
        finger B-tree: row i is inserted at its time, the entries no later row
        can need (time <= min(times[i:]) - window) go in one bulk eviction, and
        the answer is a range query over ``(times[i] - window, times[i]]``.
        Compiled, datetime64 and integer times stay int64 (exact); float times
        are float64.
    algorithm:
        An algorithm name. By default sum, mean, min, max, count, variance and
        stddev over in-order rows or sorted times run a whole-array block scan
        (:mod:`winagg.engine.blockscan`: no queue, no subtraction); every other
        aggregation runs the algorithm :func:`winagg.algos.registry.choose_algorithm` picks (and
        ``"fiba"`` for unsorted times). ``"fiba"`` with sorted times runs the
        out-of-order path too; an in-order algorithm with unsorted times raises
        :class:`~winagg.OutOfOrderError`.
    threads:
        How many threads the whole-array block scans (sum, mean, max, min, var,
        std), the exact order statistics over rows and sorted times (median,
        quantiles, rank) and the columns of a DataFrame may use: None (the default) for
        every core this process may run on, 1 for the calling thread only. The
        results are the same bits whatever the count. The per-item algorithms
        run on one thread.

    Returns
    -------
    A numpy array with one result per row, or a pandas Series with the input's
    index when the input is a Series; for a :class:`winagg.Multi`, a DataFrame
    with a column per member (each the member's own ``rolling``). Built-in
    numeric aggregations run in a numba kernel; any other monoid runs the same
    algorithm in plain Python. Values are read by :mod:`winagg.values` and
    times by :mod:`winagg.times`: what they cannot take exactly is refused by
    name (see the guide's page on semantics).
    """
    threads = thread_count(threads)
    if type(values).__name__ == "DataFrame" and type(values).__module__.startswith("pandas"):
        return _each_column(values, window, agg, by, times, algorithm, threads)
    monoid = aggregations.get(agg)
    if isinstance(monoid, Multi):
        return _each_member(values, window, monoid, by, times, algorithm, threads)
    array = to_array(values)
    groups = None if by is None else keyed.groups_of(by, array.shape[0], threads)
    if times is None:
        _check_row_window(window)
    if algorithm is None and order_stats.handles(monoid):  # exact median, quantiles, rank: compiled trees
        if groups is not None:
            return _like_input(values, _key_by_key(array, window, monoid, times, groups))
        return _like_input(values, order_stats.rolling(array, window, monoid, times, threads))
    numeric = _numbers(array, monoid)
    if numeric is None and monoid.keyed_input:
        numeric = item_keys(array)  # strings and other items, keyed as winagg.make keys them
        if numeric is None:  # missing items among them: plain Python, lowered as compiled
            monoid = _lowered_as_compiled(monoid)
    spec = compiled_spec(monoid, numeric.dtype) if numeric is not None else None
    if numeric is None and not monoid.keyed_input and compiled_spec(monoid, np.float64) is not None:
        raise TypeError(f"{monoid.name} needs numbers or missing values (None, NaN), but "
                        f"{describe_non_number(array)}")
    if numeric is not None and spec is None:
        array = numeric if numeric.dtype.kind == "f" else array  # None read as NaN for Python monoids too
    unsorted = False
    if times is not None:
        t, w, first_unsorted = read_times(times, window, array.shape[0])
        if groups is not None:
            t = groups.in_key_order(t)
            first_unsorted = keyed.first_unsorted(groups, t)
        unsorted = first_unsorted >= 0
    name = algorithm or (out_of_order().name if unsorted else
                         choose_algorithm(spec, numeric is not None and numeric.dtype == np.int64))
    algo = info(name)
    check_monoid_fits(algo, monoid)
    if unsorted and algo.order == "fifo":
        row, before = (first_unsorted, first_unsorted - 1) if groups is None else \
            (groups.row(first_unsorted), groups.row(first_unsorted - 1))
        within = "" if groups is None else " of the same key"
        raise OutOfOrderError(f"times are not sorted (row {row} is older than row {before}{within}); "
                              f"in-order algorithms need sorted times (use algorithm={out_of_order().name!r} or none)")
    if groups is not None:
        numeric = None if numeric is None else groups.in_key_order(numeric)
        array = numeric if spec is not None else groups.in_key_order(array)
    if times is not None and algo.order == "any":
        plan = rolling_plan(t, w) if groups is None else keyed.out_of_order_plan(groups, t, w)
        out = _out_of_order_rolling(algo, monoid, spec, numeric, array, t, plan, evict_first=groups is not None)
    else:
        timed = None if times is None else (t, w)
        if groups is not None:
            timed = keyed.row_bounds(groups, int(window)) if times is None else keyed.time_bounds(groups, t, w)
        if spec is not None:
            out = None if algorithm else _whole_array(spec, numeric, window, timed, threads)
            if out is None:
                out = _compiled_rolling(algo, monoid, spec, numeric, window, timed)
        else:
            out = _python_rolling(algo, monoid, array, window, timed)
    if groups is not None:
        out = groups.to_rows(out)
    return _like_input(values, out)


def _key_by_key(array, window, monoid, times, groups):
    """Per-key answers from one call per key (the order-statistic trees take one series a call)."""
    rows = groups.positions()
    t = None if times is None else np.asarray(times)
    out = None
    for g in range(groups.firsts.shape[0] - 1):
        own = rows[groups.firsts[g]:groups.firsts[g + 1]]
        answers = np.asarray(rolling(array[own], window, monoid, times=None if t is None else t[own], threads=1))
        out = np.empty(array.shape[0], answers.dtype) if out is None else out
        out[own] = answers
    return np.empty(0) if out is None else out


def _each_column(frame, window, agg, by, times, algorithm, threads):
    """A DataFrame of each value column's :func:`rolling` (``by`` may name key columns, which are
    then not values). Columns run at once on up to ``threads`` threads, each column on one."""
    import pandas as pd

    names = [by] if isinstance(by, str) else by
    if isinstance(names, list) and names and all(isinstance(n, str) for n in names) and len(names) <= frame.shape[1]:
        missing = [n for n in names if n not in frame.columns]
        if missing:
            raise KeyError(f"by names columns {missing} that values does not have")
        by, frame = frame[names], frame.drop(columns=names)
    if by is not None:
        by = keyed.groups_of(by, frame.shape[0], threads)  # grouped once for every column
    columns = list(frame.columns)
    workers = min(threads, len(columns))
    if workers > 1 and not isinstance(aggregations.get(agg), Multi):
        from concurrent.futures import ThreadPoolExecutor

        def one(name):
            return rolling(frame[name], window, agg, by=by, times=times, algorithm=algorithm, threads=1)

        with ThreadPoolExecutor(workers) as pool:
            results = list(pool.map(one, columns))
        return pd.DataFrame({name: result for name, result in zip(columns, results)}, index=frame.index)
    return frame.apply(lambda column: rolling(column, window, agg, by=by, times=times, algorithm=algorithm,
                                              threads=threads))


def _like_input(values, out):
    """A Series with the input's index and name when the input is a Series, else ``out``."""
    if type(values).__name__ == "Series" and type(values).__module__.startswith("pandas"):
        import pandas as pd

        return pd.Series(out, index=values.index, name=values.name)
    return out


def _numbers(array, monoid):
    """The values as int64 or float64, or None to keep the items themselves: a compiled
    aggregation refuses what it would round (:func:`winagg.values.numeric_values`), a Python
    monoid takes such items (big ints, Fractions) as they are."""
    if compiled_spec(monoid, np.float64) is not None:
        return numeric_values(array, monoid.name)
    try:
        return numeric_values(array, monoid.name)
    except (OverflowError, ValueError):
        return None


def _lowered_as_compiled(sketch):
    """``sketch`` in plain Python with the compiled lowering (a sketch's estimate as a number,
    as every compiled row gets it, not the sketch object that Python mode lowers to)."""
    from ..core.monoid import Monoid

    lower = sketch.compiled_for(np.dtype(np.float64)).lower
    python = Monoid(sketch.identity, sketch.combine, sketch.lift, lambda partial: float(lower(partial)),
                    commutative=sketch.commutative, inverse=sketch.inverse, name=sketch.name)
    python.keyed_input = True
    return python


def _each_member(values, window, multi, by, times, algorithm, threads):
    """A DataFrame of one column per member of a :class:`~winagg.Multi`, each the member's own
    :func:`rolling` over the same windows (with the input's index when it is a Series)."""
    import pandas as pd

    columns = {name: rolling(values, window, member, by=by, times=times, algorithm=algorithm, threads=threads)
               for name, member in multi.members.items()}
    index = values.index if isinstance(values, pd.Series) else None
    return pd.DataFrame({name: np.asarray(column) for name, column in columns.items()}, index=index)


def _whole_array(spec, numeric, window, timed, threads):
    """The block-scan result when no algorithm was named and :mod:`winagg.engine.blockscan` has one.

    With the whole input in memory, block prefix and suffix scans need no queue: they are
    faster than any streaming algorithm and exact in the same way (no subtraction).
    """
    if timed is None:
        return blockscan.rolling(numeric, int(window), spec.key, threads=threads)
    if isinstance(timed, keyed.Bounds):
        return blockscan.rolling(numeric, None, spec.key, starts=timed.starts, threads=threads)
    t, w = timed
    return blockscan.rolling(numeric, None, spec.key, times=t, span=w, threads=threads)


def _check_row_window(window):
    if isinstance(window, bool) or not isinstance(window, (int, np.integer)):
        raise TypeError(f"a row window must be an integer, got {window!r} (pass times= for a duration)")
    if window < 1:
        raise ValueError(f"window must be at least 1 row, got {window}")


def _compiled_rolling(algo, monoid, spec, numeric, window, timed):
    """Per-row results of an in-order algorithm over a built-in aggregation, in one driver call."""
    n = numeric.shape[0]
    # A row window never holds more rows than the input: allocate for that, not `window`.
    rows = int(min(window, max(n, 1))) if timed is None else None
    infinite = _subtracted_infinities(algo, spec, numeric)
    out = _run_kernel(algo, spec, numeric if infinite is None else np.where(infinite, np.nan, numeric), rows, timed)
    if infinite is not None:
        out = _answers_with_infinities(out, monoid, numeric, infinite, rows, timed)
    if spec.key in blockscan.MOMENT_KEYS:  # the whole-array path's answers where squares overflow
        starts = blockscan.NO_STARTS if timed is None else _window_starts(timed)
        out = out.copy()
        blockscan.extreme_moments(numeric.astype(np.float64, copy=False), starts, rows or 0,
                                  float(spec.key[-1]), spec.key.startswith("std"), out)
    if monoid.nan_without_values and numeric.dtype.kind == "f":
        out = _nan_where_no_values(out, ~np.isnan(numeric), rows, timed)
    if spec.key in _INTEGER_SUMS and numeric.shape[0]:
        longest = rows if timed is None else int(np.max(np.arange(1, n + 1) - _row_starts(n, rows, timed)))
        _check_integer_sums(numeric, longest, lambda spec, values: _run_kernel(algo, spec, values, rows, timed))
    return out


def _subtracted_infinities(algo, spec, numeric):
    """Where the float input is ±inf, when ``algo`` subtracts on eviction inexactly (soe on
    floats): inf - inf is NaN, so an infinity that left would spoil every later answer.
    None when nothing needs it."""
    if not algo.needs_inverse or spec.exact_inverse or numeric.dtype.kind != "f":
        return None
    infinite = np.isinf(numeric)
    return infinite if infinite.any() else None


def _answers_with_infinities(out, monoid, numeric, infinite, rows, timed):
    """``out`` (answers over the finite values) with each window that holds ±inf answered as
    the aggregation answers its infinities alone (an infinite sum, mean or product swamps every
    finite value; a variance is NaN): :func:`_subtracted_infinities` kept them out of the loop."""
    ends = np.arange(1, numeric.shape[0] + 1)
    starts = _row_starts(numeric.shape[0], rows, timed)
    counts = {}
    for sign in (1, -1):
        seen = np.concatenate(([0], np.cumsum(numeric == sign * np.inf)))
        counts[sign] = seen[ends] - seen[starts] > 0
    out = out.copy()
    for pos, neg in ((True, False), (False, True), (True, True)):
        rows_here = (counts[1] == pos) & (counts[-1] == neg)
        if rows_here.any():
            items = [np.inf] * pos + [-np.inf] * neg
            with np.errstate(invalid="ignore"):  # inf + -inf is NaN, the answer wanted
                out[rows_here] = monoid.fold(items)
    return out


def _plan(n, rows, timed):
    if isinstance(timed, keyed.Bounds):
        return keyed.plan(timed)
    return row_plan(n, rows) if timed is None else time_plan(*timed)


#: Aggregations that add int64 values: their window sums are checked for overflow.
_INTEGER_SUMS = ("sum_i", "mean_i")


def _check_integer_sums(numeric, longest, run):
    """OverflowError naming the first row whose window's int64 sum does not fit int64.

    ``run(spec, values)`` gives the per-row window results of ``spec``. The kernels add
    modulo 2**64, so a result is exact whenever the true window sum fits, even if a
    partial wrapped on the way. A bound (largest magnitude times the longest window,
    ``longest`` rows) clears the common case in two passes over the input; otherwise
    each window's float64 sum, whose error is far below 2**62, tells which windows'
    exact sums were wrapped.
    """
    if numeric.shape[0] == 0:
        return
    largest = largest_magnitude(numeric)
    if largest * longest <= INT64_SUM_LIMIT:
        return
    sums = aggregations.get("sum")
    exact = run(sums.compiled_for(np.dtype(np.int64)), numeric)
    approx = run(sums.compiled_for(np.dtype(np.float64)), numeric.astype(np.float64))
    # A wrapped result differs from the true sum by a multiple of 2**64, so from the float64
    # sum by more than 2**62; a true sum near the limit (2**63 - 1) is not flagged.
    wrapped = np.abs(approx - exact.astype(np.float64)) > 2.0 ** 62
    if wrapped.any():
        row = int(np.flatnonzero(wrapped)[0])
        raise OverflowError(f"the int64 sum of the window ending at row {row} overflows int64 "
                            f"(it is about {approx[row]:.6g}); pass float values to sum approximately")


INT64_SUM_LIMIT = 2 ** 63 - 1


def _run_kernel(algo, spec, numeric, rows, timed):
    driver = compiled_driver(algo, spec, dense=True)
    plan = _plan(numeric.shape[0], rows, timed)
    return run(driver, numeric, plan, driver.init(plan.room + 1))[0]


def _row_starts(n, rows, timed):
    """The first row of each of ``n`` rows' windows: ``rows`` rows back, or by time (sorted)."""
    return np.maximum(np.arange(1, n + 1) - rows, 0) if timed is None else _window_starts(timed)


def _window_starts(timed):
    """First row of each row's time window (times sorted, shifted into int64's range)."""
    if isinstance(timed, keyed.Bounds):
        return timed.starts
    t, w = timed
    return window_starts(t, w, t.shape[0])[0]




def _out_of_order_rolling(algo, monoid, spec, numeric, array, t, plan, evict_first=False):
    """Per-row results for times in any order (see :func:`rolling`), compiled when ``spec`` is given;
    ``evict_first`` for plans whose steps evict before they insert (:func:`winagg.windows.keyed.out_of_order_plan`)."""
    if spec is None:
        driver = python_out_of_order_driver(algo, monoid, evict_first=evict_first)
        return _as_array(run_out_of_order(driver, object_array(array), t, plan, driver.init(16))[0])
    time_type = "int64" if t.dtype == np.int64 else "float64"

    def run(spec, values):
        driver = compiled_out_of_order_driver(spec, None, time_type, algorithm=algo, evict_first=evict_first)
        return run_out_of_order(driver, values, t, plan, driver.init(16))[0]

    out = run(spec, numeric)
    if monoid.nan_without_values and numeric.dtype.kind == "f" and np.isnan(numeric).any():
        counts = run(aggregations.get("count").compiled_for(numeric.dtype), numeric)
        out = out.copy()
        out[counts == 0] = np.nan
    if spec.key in _INTEGER_SUMS:
        _check_integer_sums(numeric, numeric.shape[0], run)
    return out


def _nan_where_no_values(out, valid, window, timed):
    """``out`` with NaN at the rows whose window holds no valid (non-NaN) value."""
    if valid.all():
        return out
    seen = np.concatenate(([0], np.cumsum(valid)))  # seen[k]: valid values among rows 0..k-1
    ends = np.arange(1, valid.size + 1)
    starts = _row_starts(valid.size, window, timed)
    out = out.copy()
    out[seen[ends] - seen[starts] == 0] = np.nan
    return out


def _python_rolling(algo, monoid, array, window, timed):
    driver = python_driver(algo, monoid)
    values = object_array(array)
    plan = _plan(values.shape[0], window, timed)
    return _as_array(run(driver, values, plan, driver.init(plan.room + 1))[0])


def _as_array(results):
    if all(isinstance(r, (int, float, np.number)) and not isinstance(r, bool) for r in results):
        return np.asarray(results)
    out = np.empty(len(results), dtype=object)
    for i, r in enumerate(results):
        out[i] = r
    return out
