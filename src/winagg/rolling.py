"""``winagg.rolling``: one aggregate per input row, with the whole loop compiled."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from . import aggregations
from .errors import InvalidTimeError, OutOfOrderError
from .kernels import count_kernel, time_kernel
from .registry import check_monoid_fits, info, make

#: The in-order algorithm used when none is named and subtraction is not exact: Two-Stacks
#: Lite had the highest compiled throughput of the exact algorithms for sum, max, geomean
#: and bloom (README, "Performance"). Its rare O(n) flips do not matter to a whole-array
#: call; per-item users who need a flat worst case pick daba_lite.
DEFAULT_FIFO = "two_stacks_lite"


def _to_numpy(values):
    """A 1-D numpy array from numpy, pandas or Arrow input (missing values become NaN)."""
    module = type(values).__module__
    if module.startswith("pyarrow"):
        values = values.to_numpy(zero_copy_only=False)
    elif module.startswith("pandas"):
        # numeric with missing values (numpy, nullable "Int64"/"Float64"/"boolean" or Arrow-backed
        # dtypes): float64 with NaN. Extension dtypes are not numpy dtypes, so only `.kind` is used.
        try:
            values = values.to_numpy(dtype="float64", na_value=np.nan) \
                if getattr(values.dtype, "kind", "O") in "iubf" and values.hasnans else values.to_numpy()
        except (TypeError, ValueError):
            values = values.to_numpy()
    array = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(f"rolling needs one-dimensional values, got shape {array.shape}")
    return array


def _numeric(array) -> Optional[np.ndarray]:
    """The array as int64 or float64 for the compiled path, or None if it is not numeric."""
    if array.dtype.kind in "iub":
        return array.astype(np.int64, copy=False)
    if array.dtype.kind == "f":
        return array.astype(np.float64, copy=False)
    return None


def _times_and_window(times, window):
    """Times as int64 or float64 and the window in the same unit; checks for missing times."""
    t = _to_numpy(times)
    if t.dtype.kind == "M":
        if np.isnat(t).any():
            raise InvalidTimeError(f"times hold NaT at row {int(np.flatnonzero(np.isnat(t))[0])}")
        t = t.astype("datetime64[ns]").astype(np.int64)
        import pandas as pd

        w = pd.Timedelta(window).value
    elif t.dtype.kind in "iu":
        t = t.astype(np.int64)
        w = window
    elif t.dtype.kind == "f":
        bad = np.isnan(t)
        if bad.any():
            raise InvalidTimeError(f"times hold NaN at row {int(np.flatnonzero(bad)[0])}")
        t = t.astype(np.float64)
        w = float(window)
    else:
        raise InvalidTimeError(f"times must be numbers or datetimes, got dtype {t.dtype}")
    if isinstance(w, str):
        raise ValueError(f"a duration string window ({window!r}) needs datetime times")
    if not w > 0:
        raise ValueError(f"window must be positive, got {window!r}")
    if t.dtype == np.int64 and isinstance(w, float) and w.is_integer():
        w = int(w)
    return t, w


def choose_algorithm(spec, integer_input: bool) -> str:
    """The algorithm :func:`rolling` uses when none is named.

    Subtract-on-evict only where it is exact (integer sums and counts);
    otherwise Two-Stacks Lite, whose partials come only from items in the
    window, so float results never carry residue from evicted items.
    """
    if spec is not None and spec.exact_inverse and (integer_input or spec.key == "count"):
        return "soe"
    return DEFAULT_FIFO


def rolling(values, window, agg: Any = "sum", *, times=None, algorithm: Optional[str] = None):
    """The sliding-window aggregate ending at each row.

    Parameters
    ----------
    values:
        numpy array, pandas Series or Arrow array. Missing values (NaN, null)
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
        An algorithm name; by default :func:`choose_algorithm` picks one (and
        ``"fiba"`` for unsorted times). ``"fiba"`` with sorted times runs the
        out-of-order path too; an in-order algorithm with unsorted times raises
        :class:`~winagg.OutOfOrderError`.

    Returns
    -------
    A numpy array with one result per row, or a pandas Series with the input's
    index when the input is a Series. Built-in numeric aggregations run in a
    numba kernel; any other monoid runs the same algorithm in plain Python.
    """
    monoid = aggregations.get(agg)
    array = _to_numpy(values)
    if not isinstance(window, (int, np.integer)) and times is None:
        raise TypeError(f"a row window must be an integer, got {window!r} (pass times= for a duration)")
    if times is None and window < 1:
        raise ValueError(f"window must be at least 1 row, got {window}")
    numeric = _numeric(array)
    spec = monoid.compiled_for(numeric.dtype) if numeric is not None else None
    unsorted = False
    if times is not None:
        t, w = _times_and_window(times, window)
        if t.shape != array.shape:
            raise ValueError(f"times has {t.shape[0]} rows but values has {array.shape[0]}")
        unsorted = t.size > 1 and bool((np.diff(t) < 0).any())
    name = algorithm or (OUT_OF_ORDER if unsorted else
                         choose_algorithm(spec, numeric is not None and numeric.dtype == np.int64))
    algo = info(name)
    check_monoid_fits(algo, monoid)
    if unsorted and algo.order == "fifo":
        row = int(np.flatnonzero(np.diff(t) < 0)[0]) + 1
        raise OutOfOrderError(f"times are not sorted (row {row} is older than row {row - 1}); "
                              f"in-order algorithms need sorted times (use algorithm={OUT_OF_ORDER!r} or none)")
    if times is not None and algo.order == "any":
        out = _out_of_order_rolling(algo, monoid, spec, numeric, array, t, w)
    elif spec is not None:
        if times is None:
            out = count_kernel(algo, spec)(numeric, int(window))
        else:
            out = time_kernel(algo, spec)(numeric, t, w)
        if spec.key in _NAN_WITHOUT_VALUES and numeric.dtype.kind == "f":
            out = _nan_where_no_values(out, ~np.isnan(numeric), window, None if times is None else (t, w))
    else:
        out = _python_rolling(algo, monoid, array, window, None if times is None else (t, w))
    if type(values).__module__.startswith("pandas"):
        import pandas as pd

        return pd.Series(out, index=values.index, name=getattr(values, "name", None))
    return out


#: The algorithm for unsorted times.
OUT_OF_ORDER = "fiba"


def _out_of_order_rolling(algo, monoid, spec, numeric, array, t, w):
    """Per-row results for times in any order (see :func:`rolling`), compiled when ``spec`` is given."""
    if t.dtype == np.int64 and not isinstance(w, (int, np.integer)):
        t = t.astype(np.float64)  # a fractional window on integer times
    if spec is None:
        return _python_out_of_order(algo, monoid, array, t, w)
    from .ooo._fiba_kernels import rolling_kernel

    time_type = "int64" if t.dtype == np.int64 else "float64"
    out = rolling_kernel(spec, None, time_type)(numeric, t, w)
    if spec.key in _NAN_WITHOUT_VALUES and numeric.dtype.kind == "f" and np.isnan(numeric).any():
        counts = rolling_kernel(aggregations.get("count").compiled_for(numeric.dtype), None, time_type)(numeric, t, w)
        out = out.copy()
        out[counts == 0] = np.nan
    return out


def _python_out_of_order(algo, monoid, array, t, w):
    agg = make(algo.name, monoid)
    positional = getattr(monoid, "positional", False)
    times = t.tolist()
    later_min = np.minimum.accumulate(t[::-1])[::-1].tolist()
    results = []
    for i, value in enumerate(array):
        agg.insert((value, i) if positional else value, times[i])
        horizon = later_min[i] - w
        if agg.oldest_time() <= horizon:
            agg.bulk_evict(horizon)
        results.append(agg.query_after(times[i] - w, times[i]))
    return _as_array(results)


#: Aggregations whose pandas rolling result is NaN, not the identity's lowering (0, inf, -inf),
#: for a window without a single non-missing value (pandas' ``min_periods=1``).
_NAN_WITHOUT_VALUES = ("sum_f", "min", "max")


def _nan_where_no_values(out, valid, window, timed):
    """``out`` with NaN at the rows whose window holds no valid (non-NaN) value."""
    if valid.all():
        return out
    seen = np.concatenate(([0], np.cumsum(valid)))  # seen[k]: valid values among rows 0..k-1
    ends = np.arange(1, valid.size + 1)
    if timed is None:
        starts = np.maximum(ends - window, 0)
    else:
        t, w = timed  # row i covers rows j <= i with t[j] > t[i] - w (times are sorted)
        starts = np.searchsorted(t, t - w, side="right")
    out = out.copy()
    out[seen[ends] - seen[starts] == 0] = np.nan
    return out


def _python_rolling(algo, monoid, array, window, timed):
    agg = make(algo.name, monoid)
    positional = getattr(monoid, "positional", False)
    results = []
    for i, value in enumerate(array):
        item = (value, i) if positional else value
        if timed is None:
            if len(agg) == window:
                agg.evict()
            if algo.order == "fifo":
                agg.insert(item)
            else:  # an out-of-order aggregator needs times: the row number
                agg.insert(item, i)
        else:
            t, w = timed
            agg.insert(item, t[i])
            agg.bulk_evict(t[i] - w)
        results.append(agg.query())
    return _as_array(results)


def _as_array(results):
    if all(isinstance(r, (int, float, np.number)) and not isinstance(r, bool) for r in results):
        return np.asarray(results)
    out = np.empty(len(results), dtype=object)
    for i, r in enumerate(results):
        out[i] = r
    return out
