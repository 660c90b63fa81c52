"""Exact quantiles and medians of Spark's row and range frames, from the compiled order statistics.

A quantile is holistic: no constant-size partial gives it, so the window driver's monoids cannot
carry it cheaply from row to row. Here a batch of a partition (rows sorted by key, then order
value) is answered by one call of :func:`winagg.engine.order_stats.window_answers`, which takes any
window starts: the frame's plan (:mod:`winagg.engine.frames`, every row entered, so that its evictions
count rows) gives each row's first row, cut at its key's first row. The values the frames still
hold at the end of a batch are kept and run again ahead of the next batch, so memory is bounded
by the window and one batch, as for the other aggregations.

The answers are Spark's ``percentile(x, q)`` over the frame, to the bit (its linear interpolation
is pandas' ``low + (high - low) * f``, the kernels'): nulls (and NaN, as everywhere in winagg)
skipped, a frame without a value null.
"""

from __future__ import annotations

import numpy as np

from ..engine.frames import RangeFrames, RowFrames
from ..engine.order_stats import window_answers


class QuantileFrameWindow:
    """One exact quantile (or median) output's frame, carried across a partition's batches; the
    same ``step`` as the window driver's frames (:class:`winagg.spark.partition.PartitionRun`)."""

    def __init__(self, monoid, frame, time_dtype):
        self.monoid = monoid
        self.rows = frame.rows is not None
        self.frames = RowFrames(frame.rows) if self.rows else RangeFrames(frame.span, time_dtype)
        self.kept = np.empty(0, np.float64)  # the values the frames hold after the last batch, NaN if missing

    def step(self, values, valid, reset, group_start, times):
        """The answers and value counts of the batch's rows (peers of a range frame share theirs)."""
        every_row = np.ones(values.shape[0], np.bool_)  # missing values hold a place, as NaN
        plan = self.frames.plan(every_row, reset) if self.rows else \
            self.frames.plan(every_row, reset, group_start, times)
        held = self.kept.shape[0]
        x = np.concatenate((self.kept, np.where(valid, values, np.nan)))
        starts = np.concatenate((np.zeros(held, np.int64), np.cumsum(plan.evicts)))
        out = window_answers(x, starts, self.monoid)[held:]
        present = np.concatenate(([0], np.cumsum(~np.isnan(x))))
        counts = present[held + 1:] - present[starts[held:]]
        self.kept = x[starts[-1]:]
        if not self.rows:
            out, counts = self.frames.spread(out), self.frames.spread(counts)
        return out, counts
