"""Long random operation sequences against the brute-force oracle, as hypothesis state machines.

:func:`window_machine` builds a ``RuleBasedStateMachine`` that drives one aggregator and
the oracle (:mod:`oracle`) side by side: single and bulk inserts (runs of up to
thousands of items, so amta's blocks, deep FiBA trees and FlatFAT's resizes are reached),
evictions (also from an empty window), bulk evictions of none to all, and pickling
mid-sequence. After every step the window's length, oldest and youngest time and answer
must equal the oracle's.

How many sequences and steps run comes from the hypothesis profile (``tests/conftest.py``):
``HYPOTHESIS_PROFILE=deep`` runs many more.
"""

from __future__ import annotations

import pickle

import numpy as np
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from oracle import OutOfOrderReference, Reference, check_same, expect_empty_evict_refused, item_for

values = st.integers(min_value=1, max_value=20)


def window_machine(make_aggregator, monoid, out_of_order: bool = False):
    """A state machine class comparing ``make_aggregator()`` with the oracle over ``monoid``."""

    class WindowMachine(RuleBasedStateMachine):
        def __init__(self):
            super().__init__()
            self.agg = make_aggregator()
            self.ref = (OutOfOrderReference if out_of_order else Reference)(monoid)
            self.clock = 0
            self.serial = 0  # positions for argmin/argmax items

        def _item(self, value):
            self.serial += 1
            return item_for(monoid, value, self.serial)

        def _next_time(self, step):
            if out_of_order:
                return step  # any time, repeats included
            self.clock += step
            return self.clock

        @rule(value=values, step=st.integers(0, 3) if not out_of_order else st.integers(0, 400))
        def insert(self, value, step):
            item, time = self._item(value), self._next_time(step)
            self.agg.insert(item, time)
            self.ref.insert(item, time)

        # the oracle folds the whole window at every step: past ~30,000 items a step costs more
        # than it finds
        @precondition(lambda self: len(self.ref) < 30000)
        @rule(run=st.integers(1, 3000), seed=st.integers(0, 2**32 - 1), spread=st.integers(0, 3))
        def insert_many(self, run, seed, spread):
            rng = np.random.default_rng(seed)
            if out_of_order:
                times = np.sort(rng.integers(0, 400 + run, size=run)).tolist()
            else:
                times = (self.clock + np.cumsum(rng.integers(0, spread + 1, size=run))).tolist()
                self.clock = times[-1]
            items = [self._item(int(v)) for v in rng.integers(1, 21, size=run)]
            self.agg.bulk_insert(items, times)
            self.ref.bulk_insert(items, times)

        @rule()
        def evict(self):
            if len(self.ref) == 0:
                expect_empty_evict_refused(self.agg)
            else:
                self.agg.evict()
                self.ref.evict()

        @rule(fraction=st.floats(0, 1.05))
        def bulk_evict(self, fraction):
            oldest, youngest = self.ref.oldest_time(), self.ref.youngest_time()
            if oldest is None:
                cut = self.clock
            else:
                cut = oldest - 1 + int(round(fraction * (youngest - oldest + 1)))
            assert self.agg.bulk_evict(cut) == self.ref.bulk_evict(cut)

        @precondition(lambda self: len(self.ref) < 20000)
        @rule()
        def pickle_round_trip(self):
            self.agg = pickle.loads(pickle.dumps(self.agg))

        @invariant()
        def same_as_the_oracle(self):
            check_same(self.agg, self.ref, f"after {self.serial} items")

    return WindowMachine
