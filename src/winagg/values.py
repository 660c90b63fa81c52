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
    """A 1-D numpy array from numpy, pandas or Arrow input (missing numbers become NaN)."""
    module = type(values).__module__
    if module.startswith("pyarrow"):
        values = values.to_numpy(zero_copy_only=False)
    elif module.startswith("pandas"):
        if getattr(values, "ndim", 1) != 1:
            raise ValueError(f"{what} must be one-dimensional, got a {type(values).__name__} "
                             f"of shape {values.shape}")
        # numeric with missing values (numpy, nullable "Int64"/"Float64"/"boolean" or Arrow-backed
        # dtypes): float64 with NaN. Extension dtypes are not numpy dtypes, so only `.kind` is used.
        try:
            values = values.to_numpy(dtype="float64", na_value=np.nan) \
                if getattr(values.dtype, "kind", "O") in "iubf" and values.hasnans else values.to_numpy()
        except (TypeError, ValueError):
            values = values.to_numpy()
    array = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(f"{what} must be one-dimensional, got shape {array.shape}")
    return array


def _is_number_or_missing(x) -> bool:
    if x is None:
        return True
    return isinstance(x, (numbers.Real, np.bool_)) and not isinstance(x, (str, bytes))


def numeric_values(array: np.ndarray, agg_name: str) -> Optional[np.ndarray]:
    """``array`` as int64 or float64 for a compiled aggregation, or None if it is not numbers.

    Object arrays of numbers and None (a Python list with None in it) become float64 with
    NaN for None, as pandas reads them. Raises OverflowError for unsigned values above
    int64's range, naming the first such row.
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
    if kind == "O" and all(_is_number_or_missing(x) for x in array.tolist()):
        if any(x is None for x in array.tolist()) or any(isinstance(x, float) for x in array.tolist()):
            return np.array([np.nan if x is None else x for x in array.tolist()], dtype=np.float64)
        return numeric_values(np.array(array.tolist()), agg_name)
    return None


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
