"""The one front door for values: what users pass (lists, numpy, pandas, Arrow; numbers,
None, NaN, null) turned into the exact arrays the window kernels run on, or a clear error.

Missing values: None, NaN, pd.NA and null are one thing, a missing value, skipped by the
numeric aggregations as pandas and Spark skip them.
"""

from __future__ import annotations

import numbers
from typing import Optional

import numba as nb
import numpy as np

INT64_MIN = int(np.iinfo(np.int64).min)
INT64_MAX = int(np.iinfo(np.int64).max)

def object_array(items) -> np.ndarray:
    """``items`` as a 1-D array of objects (tuples and lists stay single items, which
    ``np.array`` would unpack into a second dimension)."""
    if isinstance(items, np.ndarray) and items.ndim == 1:
        return items
    out = np.empty(len(items), dtype=object)
    for i, item in enumerate(items):
        out[i] = item
    return out


def to_array(values, what: str = "values") -> np.ndarray:
    """A 1-D numpy array from what users pass: numpy, lists, pandas Series, Index and
    extension arrays (nullable, Arrow-backed, categorical), Arrow arrays and chunked arrays.

    Floats keep NaN for a missing value. Integers with missing values become an object
    array of Python ints and None, so that no integer is rounded through float64 on the
    way in (:func:`numeric_values` decides what a kernel can take). Other missing markers
    (``pd.NA``, ``NaT`` in objects) become None. A list of mixed items (``["x", 1, 2.5]``)
    stays an array of the items themselves, never of their strings.
    """
    module = type(values).__module__
    if module.startswith("pyarrow"):
        array = _from_arrow(values)
    elif module.startswith("pandas"):
        array = _from_pandas(values, what)
    elif isinstance(values, np.ndarray):
        array = values
    else:
        array = _from_sequence(values)
    if array.ndim != 1:
        raise ValueError(f"{what} must be one-dimensional, got shape {array.shape}")
    return array


def _from_arrow(values) -> np.ndarray:
    import pyarrow as pa

    kind = values.type
    if values.null_count and (pa.types.is_integer(kind) or pa.types.is_boolean(kind)):
        return _missing_as_none(object_array(values.to_pylist()))
    array = values.to_numpy(zero_copy_only=False)
    return _missing_as_none(array) if array.dtype == object else array


def _from_pandas(values, what: str) -> np.ndarray:
    if getattr(values, "ndim", 1) != 1:
        raise ValueError(f"{what} must be one-dimensional, got a {type(values).__name__} "
                         f"of shape {values.shape}")
    dtype = values.dtype
    if getattr(dtype, "name", "") == "category":
        return _missing_as_none(np.asarray(values))  # the categories' values, row by row
    kind = getattr(dtype, "kind", "O")  # extension dtypes are not numpy dtypes: only `.kind`
    missing = bool(np.asarray(values.isna()).any()) if kind in "iubf" else False
    if kind == "f":
        return values.to_numpy(dtype=np.float64, na_value=np.nan)
    if kind in "iub" and missing:
        return values.to_numpy(dtype=object, na_value=None)
    if kind in "iub":
        return np.asarray(values.to_numpy())
    array = np.asarray(values.to_numpy())
    return _missing_as_none(array) if array.dtype == object else array


def _from_sequence(values) -> np.ndarray:
    items = values if isinstance(values, (list, tuple)) else list(values)
    array = np.asarray(items) if items and not any(isinstance(x, (tuple, list)) for x in items) else None
    if array is None or array.dtype.kind in "USO":
        # numpy would turn ["x", 1, 2.5] into three strings; keep the items themselves
        if array is not None and array.dtype.kind in "US" and all(type(x) is type(items[0]) for x in items):
            return array
        return _missing_as_none(object_array(items))
    return array


def item_array(items) -> np.ndarray:
    """:func:`object_array` with pandas' missing markers (pd.NA, NaT) as None: the items a
    Python-mode window lifts, whatever container they came in."""
    return _missing_as_none(object_array(items))


def item(x):
    """One item as every window takes it: None for pandas' missing markers, else ``x``."""
    return None if _is_missing_marker(x) else x


def _missing_as_none(array: np.ndarray) -> np.ndarray:
    """An object array with pd.NA and NaT (pandas' missing markers) replaced by None."""
    if array.dtype != object:
        return array
    marks = [i for i, x in enumerate(array.tolist()) if _is_missing_marker(x)]
    if marks:
        array = array.copy()
        array[marks] = None
    return array


def _is_missing_marker(x) -> bool:
    module = type(x).__module__
    return module.startswith("pandas") and type(x).__name__ in ("NAType", "NaTType")


def is_missing(x) -> bool:
    """Whether one item is a missing value: None, NaN, pd.NA or NaT."""
    if x is None or _is_missing_marker(x):
        return True
    return isinstance(x, (float, np.floating)) and x != x


def _is_number_or_missing(x) -> bool:
    if x is None or _is_missing_marker(x):
        return True
    return isinstance(x, (numbers.Real, np.bool_)) and not isinstance(x, (str, bytes))


#: The largest integer magnitude float64 holds with every integer below it: 2**53.
FLOAT_EXACT_INT = 2 ** 53


def numeric_values(array: np.ndarray, agg_name: str) -> Optional[np.ndarray]:
    """``array`` as int64 or float64 for a compiled aggregation, or None if it is not numbers.

    Object arrays of numbers and missing values become float64 with NaN for a missing
    value, as pandas reads them, when float64 holds every integer among them exactly;
    integers of int64 stay int64. What neither holds exactly is refused, naming the first
    such row: an unsigned value above int64's range or a Python int beyond it
    (OverflowError), an integer above 2**53 beside missing values, a Fraction or
    Decimal (ValueError: a compiled aggregation would round it).
    """
    kind = array.dtype.kind
    if kind == "u" and array.size and array.dtype.itemsize >= 8:
        too_big = array > np.uint64(INT64_MAX)
        if too_big.any():
            row = int(np.flatnonzero(too_big)[0])
            raise OverflowError(f"values[{row}] = {array[row]} is above int64's range; "
                                f"pass values.astype(float) to {agg_name} them approximately")
    if kind in "iub":
        return array.astype(np.int64, copy=False)
    if kind == "f":
        return array.astype(np.float64, copy=False)
    if kind != "O":
        return None
    items = array.tolist()
    if not all(_is_number_or_missing(x) for x in items):
        return None
    return _numbers_from_objects(items, agg_name)


def _numbers_from_objects(items: list, agg_name: str) -> np.ndarray:
    exact_ints = all(isinstance(x, (int, np.integer, bool, np.bool_)) for x in items)
    for row, x in enumerate(items):
        if isinstance(x, (int, np.integer)) and not INT64_MIN <= int(x) <= INT64_MAX:
            raise OverflowError(f"values[{row}] = {x} does not fit int64, which {agg_name} runs on; pass "
                                f"floats to {agg_name} approximately, or a winagg.Monoid of Python ints")
        if not isinstance(x, (int, float, np.integer, np.floating, bool, np.bool_)) and not is_missing(x):
            raise ValueError(f"values[{row}] = {x!r} is a {type(x).__name__}, which {agg_name} would round to "
                             f"float64; pass floats to accept that, or a winagg.Monoid over {type(x).__name__}s")
    if exact_ints:
        return np.array([int(x) for x in items], dtype=np.int64)
    for row, x in enumerate(items):
        if isinstance(x, (int, np.integer)) and abs(int(x)) > FLOAT_EXACT_INT:
            raise ValueError(f"values[{row}] = {x} is an integer beyond 2**53 beside missing or float "
                             f"values: float64 would round it; fill or drop the missing values first")
    return np.array([np.nan if is_missing(x) else float(x) for x in items], dtype=np.float64)


def _refuse_rounded_ints(array: np.ndarray, what: str) -> None:
    """ValueError naming the first integer that float64 would round (beyond 2**53)."""
    if not array.size or array.dtype.kind == "b":
        return
    if array.dtype.kind == "u":
        too_big = array > np.uint64(FLOAT_EXACT_INT)
    else:
        too_big = (array > FLOAT_EXACT_INT) | (array < -FLOAT_EXACT_INT)
    if too_big.any():
        row = int(np.flatnonzero(too_big)[0])
        raise ValueError(f"{what}[{row}] = {array[row]} is an integer beyond 2**53, which this compiled "
                         f"window keeps as float64 and would round; pass compiled=False for exact "
                         f"integers, or floats to accept the rounding")


def float_values(values, what: str = "values") -> np.ndarray:
    """``values`` as float64 with NaN for every missing value (None, pd.NA, null), for the
    compiled Window paths that keep float64 state; non-numbers are refused by name."""
    array = to_array(values, what)
    numeric = array if array.dtype.kind in "iubf" else numeric_values(array, what)
    if numeric is None:
        raise TypeError(f"{what} must be numbers or missing values, but {describe_non_number(array)}")
    if numeric.dtype.kind in "iu":
        _refuse_rounded_ints(numeric, what)
    return numeric.astype(np.float64)


def describe_non_number(array: np.ndarray) -> str:
    """'values[3] = 'a' (str)': the first entry that is not a number or missing."""
    for row, x in enumerate(array.tolist()):
        if not _is_number_or_missing(x):
            return f"values[{row}] = {x!r} ({type(x).__name__})"
    return f"values have dtype {array.dtype}"


@nb.njit(cache=True)
def _extremes(values):
    lo, hi = values[0], values[0]
    for x in values:  # branch-free, so LLVM vectorises the pass
        lo = min(lo, x)
        hi = max(hi, x)
    return lo, hi


def largest_magnitude(values: np.ndarray) -> int:
    """max |x| of a non-empty int64 array, exactly (a Python int; -2**63 included), in one pass."""
    lo, hi = _extremes(values)
    return max(int(hi), -int(lo))
