"""The count windows of :class:`winagg.Window` (``rows=N``): a plan for the window driver per batch.

Every event enters; the oldest leaves once N are held; every ``slide``-th event
answers. A batch of events is one :class:`~winagg.engine.plans.Plan`, run by the
compiled driver for built-in numeric aggregations and by the Python driver for
any other monoid, on a state carried from batch to batch.
"""

from __future__ import annotations

import numpy as np

from ..engine.plans import count_plan
from ..engine.kernels import compiled_driver, python_driver
from ..engine.loops import run
from ..values import float_values, item_array
from .time_windows import WindowResult, plain


class CountWindows:
    """The last ``rows`` events in arrival order, answered after every ``slide``-th event.

    ``spec`` is the aggregation's compiled description (values become float64) or None
    (any monoid, in plain Python). ``algorithm`` is an in-order
    :class:`~winagg.algos.registry.AlgorithmInfo` with its options.
    """

    def __init__(self, rows: int, slide: int, monoid, algorithm, spec=None):
        self.rows, self.slide = rows, slide
        self.monoid, self.algorithm, self.spec = monoid, algorithm, spec
        self.events_seen = 0
        self.since_result = 0
        self.held = 0
        self.last_answer = None  # the window's answer after the latest event
        self.state = None
        self._driver = None

    def _drive(self, values, plan):
        if self._driver is None:
            self._driver = (compiled_driver(self.algorithm, self.spec) if self.spec is not None
                            else python_driver(self.algorithm, self.monoid))
        if self.state is None:
            self.state = self._driver.init(16)
        out, _, self.state = run(self._driver, values, plan, self.state)
        return out

    def push(self, values) -> list:
        """Add events in arrival order; the windows they complete."""
        n = len(values)
        if n == 0:
            return []
        values = float_values(values) if self.spec is not None else item_array(values)
        step = np.arange(n, dtype=np.int64)
        due = (self.since_result + step + 1) % self.slide == 0
        plan = count_plan(n, self.rows, self.held, self.since_result, self.slide, self.events_seen)
        out = self._drive(values, plan)  # the batch's last answer is kept for flush()
        ends = self.events_seen + step + 1
        counts = np.minimum(self.held + step + 1, self.rows)
        results = [WindowResult(int(end - count), int(end), plain(out[k]), int(count))
                   for k, end, count in zip(np.flatnonzero(due).tolist(), ends[due].tolist(), counts[due].tolist())]
        self.events_seen += n
        self.held = int(counts[-1])
        self.since_result = (self.since_result + n) % self.slide
        self.last_answer = plain(out[n - 1])
        return results

    def flush(self) -> list:
        """The window of the last events, if events arrived since the last result."""
        if self.since_result == 0 or self.held == 0:
            return []
        self.since_result = 0
        return [WindowResult(self.events_seen - self.held, self.events_seen, self.last_answer, self.held)]

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_driver"] = None  # compiled functions and closures are rebuilt after unpickling
        return state
