"""Several suffix ranges answered on every slide from one structure (the FlatFIT paper's multi-query).

For any algorithm with a native ``range_query`` (flatfat, b_int, flatfit): the
paper's "max-multi" workload is every range 1..n on every slide. It runs
through the window driver built with ``sub_windows``, the row loop of
``winagg.rolling`` whose answers are range queries.
"""

from __future__ import annotations

import numpy as np

from ...engine.kernels import compiled_driver
from ...engine.plans import row_plan
from ...engine.loops import run


def multi_query(algorithm, spec, values, window: int, ranges, query_from: int = 0) -> np.ndarray:
    """``out[i, q]``: the lowered aggregate of the ``ranges[q]`` youngest rows (fewer while the
    window fills) of a count window of ``window`` rows after row i, for the rows i >= ``query_from``
    (rows before it are not answered; their entries are unset).

    ``ranges`` are evaluated in the order given: pass them largest first for FlatFIT
    (:func:`descending`).
    """
    widths = np.ascontiguousarray(ranges, dtype=np.int64)
    driver = compiled_driver(algorithm, spec, sub_windows=True)
    emits = np.arange(values.shape[0]) >= query_from
    plan = row_plan(values.shape[0], window)._replace(emits=emits, widths=widths)
    out, _, _ = run(driver, values, plan, driver.init(plan.room + 1))
    return out.reshape(values.shape[0], widths.shape[0])


def descending(ranges) -> np.ndarray:
    """The ranges as an int64 array, largest first (the order FlatFIT needs)."""
    return np.sort(np.asarray(ranges, dtype=np.int64))[::-1].copy()
