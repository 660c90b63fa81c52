"""The one brute-force reference every algorithm is checked against: a list and a fold.

``Reference`` keeps the window as a plain list of (time, item) and answers
every query by folding the lifted items from the identity, oldest first.
``fifo_scripts`` generates random operation sequences with hypothesis:
inserts (equal times included), evicts (also from an empty window), bulk
evicts, bulk inserts and queries.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

import winagg


class Reference:
    """A FIFO window as a list; every answer recomputed by a left-to-right fold."""

    def __init__(self, monoid):
        self.monoid = monoid
        self.items = []  # (time, item), oldest first
        self.arrivals = 0

    def insert(self, item, time=None):
        time = self.arrivals if time is None else time
        if self.items and time < self.items[-1][0]:
            raise winagg.OutOfOrderError("reference: out of order")
        self.items.append((time, item))
        self.arrivals += 1

    def bulk_insert(self, items, times):
        for item, time in zip(items, times):
            self.insert(item, time)

    def evict(self):
        if not self.items:
            raise winagg.EmptyWindowError("reference: empty")
        self.items.pop(0)

    def bulk_evict(self, time):
        before = len(self.items)
        self.items = [(t, x) for t, x in self.items if t > time]
        return before - len(self.items)

    def query(self, t_from=None, t_to=None):
        selected = [x for t, x in self.items
                    if (t_from is None or t >= t_from) and (t_to is None or t <= t_to)]
        return self.monoid.fold(selected)

    def __len__(self):
        return len(self.items)

    def oldest_time(self):
        return self.items[0][0] if self.items else None

    def youngest_time(self):
        return self.items[-1][0] if self.items else None


# ---------------------------------------------------------------- test monoids
def _concat(a, b):
    return a + b


def _tag(x):
    return f"{x};"


#: String concatenation: associative, not commutative, exact: any order bug shows.
CONCAT = winagg.Monoid("", _concat, _tag, name="concat")

_P = 1009


def _matmul(a, b):
    return ((a[0] * b[0] + a[1] * b[2]) % _P, (a[0] * b[1] + a[1] * b[3]) % _P,
            (a[2] * b[0] + a[3] * b[2]) % _P, (a[2] * b[1] + a[3] * b[3]) % _P)


def _matrix_of(x):
    return (x % _P, 1, 1, 0)  # determinant -1: always invertible


def _matrix_inverse(m):
    det_inverse = pow((m[0] * m[3] - m[1] * m[2]) % _P, _P - 2, _P)
    return ((m[3] * det_inverse) % _P, (-m[1] * det_inverse) % _P,
            (-m[2] * det_inverse) % _P, (m[0] * det_inverse) % _P)


#: 2x2 matrix product modulo a prime (the group GL2(F_1009) on these items): an exact,
#: non-commutative monoid with an inverse, so subtract-on-evict is checked for order bugs too.
MATRIX = winagg.Monoid((1, 0, 0, 1), _matmul, _matrix_of, inverse=_matrix_inverse, name="matrix")


def same_answer(got, want):
    """Equality of lowered answers, with a tolerance for floats and by content for sketches."""
    if isinstance(want, winagg.aggregations.BloomFilter):
        return np.array_equal(got.words, want.words)
    if isinstance(want, winagg.aggregations.CountMinSketch):
        return np.array_equal(got.counts, want.counts)
    if isinstance(want, (float, np.floating)) or isinstance(got, (float, np.floating)):
        if math.isnan(want) or math.isnan(got):
            return math.isnan(want) and math.isnan(got)
        return math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-9)
    if isinstance(want, tuple) and isinstance(got, tuple):
        return len(got) == len(want) and all(same_answer(g, w) for g, w in zip(got, want))
    return got == want


# ---------------------------------------------------------------- operation scripts
small_values = st.integers(min_value=1, max_value=20)
time_steps = st.integers(min_value=0, max_value=3)  # 0 gives equal timestamps

fifo_operation = st.one_of(
    st.tuples(st.just("insert"), small_values, time_steps),
    st.tuples(st.just("insert"), small_values, time_steps),
    st.tuples(st.just("insert"), small_values, time_steps),
    st.tuples(st.just("evict")),
    st.tuples(st.just("evict")),
    st.tuples(st.just("bulk_evict"), st.integers(min_value=-1, max_value=6)),
    st.tuples(st.just("bulk_insert"), st.lists(st.tuples(small_values, time_steps), max_size=8)),
    st.tuples(st.just("query")),
)

#: Random FIFO scripts: lists of operations as tuples (see :func:`run_fifo_script`).
fifo_scripts = st.lists(fifo_operation, max_size=60)


def item_for(monoid, value, position):
    """The item to insert for a generated integer: (value, position) pairs for argmin/argmax."""
    if getattr(monoid, "positional", False):
        return (float(value), position)
    if isinstance(monoid, winagg.aggregations.Aggregation) and monoid.name not in ("first", "last", "collect", "m4"):
        return float(value)
    return value


def check_same(agg, ref, context):
    assert len(agg) == len(ref), context
    assert agg.oldest_time() == ref.oldest_time(), context
    assert agg.youngest_time() == ref.youngest_time(), context
    got, want = agg.query(), ref.query()
    assert same_answer(got, want), f"{context}: got {got!r}, want {want!r}"


def expect_empty_evict_refused(agg):
    """evict() on an empty window raises EmptyWindowError and changes nothing."""
    length, answer = len(agg), agg.query()
    try:
        agg.evict()
    except winagg.EmptyWindowError:
        pass
    else:
        raise AssertionError("evict() on an empty window did not raise EmptyWindowError")
    assert len(agg) == length and same_answer(agg.query(), answer)


def run_fifo_script(agg, monoid, script):
    """Apply a script to an aggregator and to the reference; compare after every step."""
    ref = Reference(monoid)
    clock = 0
    for step, op in enumerate(script):
        if op[0] == "evict" and len(ref) == 0:
            expect_empty_evict_refused(agg)
        else:
            clock = _apply_fifo(agg, ref, monoid, op, step, clock)
        check_same(agg, ref, f"step {step} {op}")
    return ref


# ---------------------------------------------------------------- range queries on FIFO windows
#: FIFO scripts that also ask range queries ("range", lo, hi): times relative to the oldest.
fifo_range_scripts = st.lists(
    st.one_of(fifo_operation, st.tuples(st.just("range"), st.integers(-2, 12), st.integers(-2, 12))),
    max_size=60)


def run_fifo_range_script(agg, monoid, script):
    """Like :func:`run_fifo_script`, and compares ``query(t_from, t_to)`` with the reference's fold."""
    ref = Reference(monoid)
    clock = 0
    for step, op in enumerate(script):
        if op[0] == "range":
            base = ref.oldest_time() or 0
            t_from, t_to = base + op[1], base + op[2]
            got, want = agg.query(t_from, t_to), ref.query(t_from, t_to)
            assert same_answer(got, want), f"step {step} {op}: got {got!r}, want {want!r}"
            continue
        if op[0] == "evict" and len(ref) == 0:
            expect_empty_evict_refused(agg)
        else:
            clock = _apply_fifo(agg, ref, monoid, op, step, clock)
        check_same(agg, ref, f"step {step} {op}")
    return ref


def _apply_fifo(agg, ref, monoid, op, step, clock):
    kind = op[0]
    if kind == "insert":
        clock += op[2]
        item = item_for(monoid, op[1], step)
        agg.insert(item, clock)
        ref.insert(item, clock)
    elif kind == "evict":
        if len(ref):
            agg.evict()
            ref.evict()
    elif kind == "bulk_evict":
        cut = (ref.oldest_time() or 0) + op[1]
        assert agg.bulk_evict(cut) == ref.bulk_evict(cut)
    elif kind == "bulk_insert":
        times, items = [], []
        for k, (value, dt) in enumerate(op[1]):
            clock += dt
            times.append(clock)
            items.append(item_for(monoid, value, step * 100 + k))
        agg.bulk_insert(items, times)
        ref.bulk_insert(items, times)
    return clock


# ---------------------------------------------------------------- out-of-order windows
class OutOfOrderReference:
    """An out-of-order window as a dict time -> items; equal times combine (older item on the left).

    ``len`` counts distinct times, as the FiBA paper's aggregator does.
    """

    def __init__(self, monoid):
        self.monoid = monoid
        self.entries = {}  # time -> list of items in arrival order

    def insert(self, item, time):
        self.entries.setdefault(time, []).append(item)

    def bulk_insert(self, items, times):
        for item, time in zip(items, times):
            self.insert(item, time)

    def evict(self):
        if not self.entries:
            raise winagg.EmptyWindowError("reference: empty")
        del self.entries[min(self.entries)]

    def bulk_evict(self, time):
        gone = [t for t in self.entries if t <= time]
        for t in gone:
            del self.entries[t]
        return len(gone)

    def query(self, t_from=None, t_to=None):
        acc = self.monoid.identity
        for t in sorted(self.entries):
            if (t_from is None or t >= t_from) and (t_to is None or t <= t_to):
                for item in self.entries[t]:
                    acc = self.monoid.combine(acc, self.monoid.lift(item))
        return self.monoid.lower(acc)

    def __len__(self):
        return len(self.entries)

    def oldest_time(self):
        return min(self.entries) if self.entries else None

    def youngest_time(self):
        return max(self.entries) if self.entries else None


_ooo_time = st.integers(min_value=0, max_value=60)

ooo_operation = st.one_of(
    st.tuples(st.just("insert"), small_values, _ooo_time),
    st.tuples(st.just("insert"), small_values, _ooo_time),
    st.tuples(st.just("insert"), small_values, _ooo_time),
    st.tuples(st.just("evict")),
    st.tuples(st.just("bulk_evict"), st.integers(min_value=-1, max_value=62)),
    # a batch sorted by time, anywhere relative to the window, possibly repeating existing times
    st.tuples(st.just("bulk_insert"), st.lists(st.tuples(small_values, _ooo_time), max_size=12)),
    st.tuples(st.just("query")),
    st.tuples(st.just("range"), st.integers(-1, 62), st.integers(-1, 62)),
)

#: Random out-of-order scripts: inserts at any time (repeats included), evicts (also from empty),
#: bulk evicts of none to all, sorted bulk inserts straddling existing times, range queries.
ooo_scripts = st.lists(ooo_operation, max_size=80)


def run_ooo_script(agg, monoid, script, after_each=None):
    """Apply an out-of-order script to ``agg`` and the reference; compare after every step.

    ``after_each(agg)`` (optional) runs after every operation, e.g. a structural invariant check.
    """
    ref = OutOfOrderReference(monoid)
    for step, op in enumerate(script):
        context = f"step {step} {op}"
        kind = op[0]
        if kind == "insert":
            item = item_for(monoid, op[1], step)
            agg.insert(item, op[2])
            ref.insert(item, op[2])
        elif kind == "evict":
            if len(ref) == 0:
                expect_empty_evict_refused(agg)
            else:
                agg.evict()
                ref.evict()
        elif kind == "bulk_evict":
            assert agg.bulk_evict(op[1]) == ref.bulk_evict(op[1]), context
        elif kind == "bulk_insert":
            batch = sorted(op[1], key=lambda vt: vt[1])
            items = [item_for(monoid, v, step * 100 + k) for k, (v, _) in enumerate(batch)]
            times = [t for _, t in batch]
            agg.bulk_insert(items, times)
            ref.bulk_insert(items, times)
        elif kind == "range":
            got, want = agg.query(op[1], op[2]), ref.query(op[1], op[2])
            assert same_answer(got, want), f"{context}: got {got!r}, want {want!r}"
        if after_each is not None:
            after_each(agg)
        check_same(agg, ref, context)
    return ref
