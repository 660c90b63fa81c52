"""The fold of a window's panes (``winagg.spark.panes.window_folds``) against a loop over each run."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

pytest.importorskip("pyarrow")

from winagg.spark.panes import window_folds  # noqa: E402

PANE_NUMBERS = st.one_of(st.just(math.nan), st.just(math.inf), st.just(-math.inf),
                         st.floats(-1e6, 1e6, allow_nan=False))


def _by_loop(values, first, after, part):
    out = []
    for lo, hi in zip(first, after):
        kept = [float(v) for v in values[lo:hi] if not math.isnan(v)]  # a pane without a value is NaN
        if part == "sum":
            out.append(sum(kept, 0.0))
        elif not kept:
            out.append(math.nan)
        else:
            out.append(max(kept) if part == "max" else min(kept))
    return np.array(out, np.float64)


@st.composite
def runs(draw):
    """Panes and monotone runs of them, as a bucket's windows are: empty runs and runs past the
    last pane included."""
    values = np.array(draw(st.lists(PANE_NUMBERS, max_size=30)), np.float64)
    n = len(values)
    first = np.sort(np.array(draw(st.lists(st.integers(0, n), max_size=20)), np.int64))
    lengths = np.array(draw(st.lists(st.integers(0, 4), min_size=len(first), max_size=len(first))), np.int64)
    after = np.maximum.accumulate(np.minimum(first + lengths, n)) if len(first) else first
    return values, first, after


@settings(max_examples=300, deadline=None)
@given(runs(), st.sampled_from(["sum", "max", "min"]))
def test_every_run_of_panes_folds_as_a_loop_over_it(drawn, part):
    values, first, after = drawn
    got = window_folds(values, first, after, part)
    want = _by_loop(values, first, after, part)
    if part == "sum":  # numpy may group the additions otherwise: they may differ in the last bits
        finite = np.isfinite(want)
        np.testing.assert_allclose(got[finite], want[finite], rtol=1e-12, atol=1e-6)
        np.testing.assert_array_equal(got[~finite], want[~finite])
    else:
        np.testing.assert_array_equal(got, want)


def test_an_empty_run_holds_no_pane_and_a_run_skips_panes_without_a_value():
    values = np.array([3.0, np.nan, -1.0, 7.0])
    first, after = np.array([0, 1, 2, 4]), np.array([0, 3, 4, 4])
    np.testing.assert_array_equal(window_folds(values, first, after, "sum"), [0.0, -1.0, 6.0, 0.0])
    np.testing.assert_array_equal(window_folds(values, first, after, "max"), [np.nan, -1.0, 7.0, np.nan])
    np.testing.assert_array_equal(window_folds(values, first, after, "min"), [np.nan, -1.0, -1.0, np.nan])
