"""One differential test of every path against one independent oracle (tests/exact_oracle.py).

Hypothesis draws inputs across the whole domain: dtypes (numpy float64/float32/int64/int32,
pandas nullable Int64/Float64 with pd.NA, object arrays with None or pd.NA, Arrow arrays with
nulls), magnitudes (NaN, +-inf, -0.0, 1e+-300, subnormals, float64's and int64's extremes),
row and time windows, time units (int, float, datetime64 s/ms/us/ns, tz-aware), duplicate
and unsorted times, empty and one-row inputs. Every path must give the oracle's answer:

* ``winagg.rolling`` with its default, with a random in-order algorithm that fits the monoid,
  and with ``"fiba"``;
* ``winagg.make(algorithm, agg)`` fed item by item (evict, bulk_evict, evict_oldest to slide);
* ``winagg.Window`` count windows (``rows=``) and time windows (size, slide, lateness);
* ``winagg.store.StoredWindow`` on SQLite and on a real redis-server;
* Spark batch: tests/spark/test_paths_spark.py.

To keep numba compiles few, each example picks one algorithm and one aggregation. Depth
follows the Hypothesis profile: ``HYPOTHESIS_PROFILE=deep`` explores for about an hour
(see tests/conftest.py).
"""

from __future__ import annotations

import itertools
import math
import os
import tempfile
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, List, Optional

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, note
from hypothesis import strategies as st

import exact_oracle as X
import winagg
from redis_server import redis_port  # noqa: F401 (a fixture)

examples = X.examples


#: The numeric aggregations every path has, and the order-sensitive ones where a path runs them.
NUMERIC = ("sum", "mean", "min", "max", "count", "var", "std")
ORDERED = ("collect", "first", "last")
FIFO = [a.name for a in winagg.algorithms() if a.order == "fifo"]
INVERTIBLE = ("sum", "mean", "count", "var", "std")


def algorithms_for(agg: str) -> list:
    """The in-order algorithms that fit ``agg`` (``soe`` needs an inverse), and FiBA."""
    monoid = winagg.aggregations.get(agg) if agg != "multi" else None
    names = [a.name for a in winagg.algorithms()
             if not a.needs_inverse or (monoid is not None and monoid.invertible)]
    return names


def monoid_of(agg: str):
    if agg == "multi":
        from winagg.aggregations import Multi

        return Multi(total="sum", peak="max", n="count")
    if agg == "var":
        return winagg.aggregations.Variance(ddof=1)
    if agg == "std":
        return winagg.aggregations.Stddev(ddof=1)
    return agg


# ---------------------------------------------------------------- values
MISSING = "missing"  # a placeholder the column builders turn into NaN, None, pd.NA or null

FLOAT_SPECIALS = [math.nan, math.inf, -math.inf, -0.0, 0.0, 1e300, -1e300, 1e-300, -1e-300, 5e-324,
                  -5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, -1.7976931348623157e308,
                  1.0, -1.0, 0.1, 1e16, -1e16, 2.0 ** 53 + 2]
INT_SPECIALS = [X.INT64_MAX, X.INT64_MIN, X.INT64_MAX - 1, X.INT64_MIN + 1, 2 ** 62, -(2 ** 62),
                2 ** 62 - 1, 2 ** 53 + 1, -(2 ** 53 + 1), 2 ** 63 - 2 ** 10, 0, 1, -1]

floats = st.one_of(st.sampled_from(FLOAT_SPECIALS), st.integers(-20, 20).map(float),
                   st.floats(-1e3, 1e3), st.floats(allow_nan=False, allow_infinity=False),
                   st.floats(-1e-300, 1e-300))
small_ints = st.integers(-1000, 1000)
huge_ints = st.one_of(st.sampled_from(INT_SPECIALS), st.integers(X.INT64_MIN, X.INT64_MAX), small_ints)

#: dtype kind -> (integer values?, missing values allowed?)
KINDS = {
    "float64": (False, True), "float32": (False, True), "series_float64": (False, True),
    "int64": (True, False), "int32": (True, False), "Int64": (True, True), "Float64": (False, True),
    "object_none": (False, True), "object_na": (False, True), "arrow_float": (False, True),
    "arrow_int": (True, True),
}


@dataclass
class Case:
    kind: str
    values: list          # what the oracle reads: int, float or MISSING
    window: Any = None    # rows (int) or a duration in the times' own type
    time_kind: Optional[str] = None
    ticks: Optional[list] = None
    d_ticks: int = 0
    base: Any = None
    scale: Any = None
    keys: Optional[list] = None  # exact times (int ns / int / Fraction)
    d_key: Any = None
    times: Any = None            # what rolling gets
    items_times: Optional[list] = None  # what per-item paths get, one per row
    extra: dict = field(default_factory=dict)

    @property
    def integer(self) -> bool:
        return KINDS[self.kind][0]

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def sorted(self) -> bool:
        return self.keys is None or all(a <= b for a, b in zip(self.keys, self.keys[1:]))

    def oracle_values(self) -> list:
        return [None if v is MISSING else v for v in self.values]

    @property
    def delta(self):
        """The window's duration as something the per-item paths subtract from a time."""
        if self.time_kind in ("int", "float"):
            return self.window
        return pd.Timedelta(self.d_key, unit="ns")

    def windows(self):
        if self.time_kind is None:
            return X.row_windows(self.n, self.window)
        return X.time_windows(self.keys, self.d_key)

    # -------------------------------------------------------- inputs
    def column(self):
        """The values as ``rolling`` gets them, in the case's dtype kind."""
        kind, vals = self.kind, self.values
        if kind in ("float64", "float32", "series_float64"):
            array = np.array([math.nan if v is MISSING else v for v in vals], dtype="float64")
            if kind == "float32":
                array = array.astype("float32")
            if kind == "series_float64":
                return pd.Series(array, index=[f"r{i}" for i in range(len(vals))], name="x")
            return array
        if kind in ("int64", "int32"):
            return np.array(vals, dtype=kind)
        if kind in ("Int64", "Float64"):
            return pd.Series([pd.NA if v is MISSING else v for v in vals], dtype=kind)
        if kind == "object_none":
            return [None if v is MISSING else v for v in vals]
        if kind == "object_na":
            return np.array([pd.NA if v is MISSING else v for v in vals] + [0.0], dtype=object)[:-1]
        if kind == "arrow_float":
            return pa.array([None if v is MISSING else v for v in vals], type=pa.float64())
        if kind == "arrow_int":
            return pa.array([None if v is MISSING else v for v in vals], type=pa.int64())
        raise AssertionError(kind)

    def items(self) -> list:
        """The values as a per-item path gets them (numpy scalars, Python numbers, None, pd.NA)."""
        kind, vals = self.kind, self.values
        if kind in ("float64", "series_float64", "float32", "int64", "int32"):
            column = self.column()
            return list(column.to_numpy() if isinstance(column, pd.Series) else column)
        if kind in ("Int64", "Float64", "object_na"):
            return [pd.NA if v is MISSING else v for v in vals]
        return [None if v is MISSING else v for v in vals]


def _value(kind, regime):
    integer, missing = KINDS[kind]
    if kind == "int32":
        base = st.one_of(st.integers(-2 ** 31, 2 ** 31 - 1), st.sampled_from([2 ** 31 - 1, -2 ** 31, 0]), small_ints)
    elif integer:
        base = huge_ints if regime == "huge" else small_ints
    elif regime == "small":
        base = st.one_of(st.integers(-20, 20).map(float), st.floats(-1e3, 1e3), st.just(math.nan))
    else:
        base = floats
    if kind == "float32":
        base = base.map(_as_float32)
    if kind in ("Int64", "Float64", "arrow_int", "arrow_float", "object_na", "object_none"):
        base = base.filter(lambda v: not (isinstance(v, float) and math.isnan(v)))  # pd.NA / None instead
    if missing:
        return st.one_of(base, base, base, st.just(MISSING))
    return base.filter(lambda v: not (isinstance(v, float) and math.isnan(v))) if integer else base


def _as_float32(v):
    with np.errstate(over="ignore"):
        return float(np.float32(v))


def _normalise(kind, vals):
    # NaN in a float column is the missing value; the oracle reads it as missing too
    return [MISSING if isinstance(v, float) and math.isnan(v) else v for v in vals]


@st.composite
def value_lists(draw, kind, max_rows):
    regime = draw(st.sampled_from(["small", "huge"]))
    size = draw(st.one_of(st.integers(0, 2), st.integers(0, max_rows)))
    return _normalise(kind, draw(st.lists(_value(kind, regime), min_size=size, max_size=size)))


# ---------------------------------------------------------------- times
TIME_KINDS = ["int", "float", "s", "ms", "us", "ns", "tz"]
UNIT_NS = {"s": 10 ** 9, "ms": 10 ** 6, "us": 10 ** 3, "ns": 1}
TZ_BASE = pd.Timestamp("2024-03-10 06:58:00", tz="UTC")  # two minutes before New York's clocks jump


@st.composite
def tick_lists(draw, n, unsorted):
    if unsorted:
        return draw(st.lists(st.integers(0, max(3 * n, 1)), min_size=n, max_size=n))
    steps = draw(st.lists(st.sampled_from([0, 0, 1, 1, 2, 3, 7]), min_size=n, max_size=n))
    return list(np.cumsum(steps).tolist())


def set_times(case: Case, draw, time_kind: str, unsorted: bool, duration_as):
    n = case.n
    ticks = draw(tick_lists(n, unsorted))
    d_ticks = draw(st.integers(1, max(ticks, default=0) + 3))
    case.time_kind, case.ticks, case.d_ticks = time_kind, ticks, d_ticks
    if time_kind == "int":
        base = draw(st.sampled_from([0, 7, -(2 ** 40), 2 ** 60, -(2 ** 62)]))
        scale = draw(st.sampled_from([1, 3, 1000]))
        case.keys = [base + t * scale for t in ticks]
        case.d_key = d_ticks * scale
        case.times = np.array(case.keys, dtype=np.int64)
        case.items_times = list(case.times)
        case.window = case.d_key
        case.base, case.scale = base, scale
    elif time_kind == "float":
        base = draw(st.sampled_from([0.0, -3.5, 1024.0]))
        case.times = np.array([base + 0.25 * t for t in ticks], dtype=np.float64)
        case.keys = [Fraction(float(t)) for t in case.times]
        case.d_key = Fraction(d_ticks, 4)
        case.window = d_ticks * 0.25
        case.items_times = [float(t) for t in case.times]
        case.base, case.scale = base, 0.25
    elif time_kind in UNIT_NS:
        unit = UNIT_NS[time_kind]
        base = np.datetime64("2024-02-28T23:59:58", time_kind)
        step = 1 if time_kind in ("s", "ms") else 1000
        case.times = np.array([base + np.timedelta64(t * step, time_kind) for t in ticks],
                              dtype=f"datetime64[{time_kind}]")
        base_ns = int(base.astype("datetime64[ns]").astype(np.int64))
        case.keys = [base_ns + t * step * unit for t in ticks]
        case.d_key = d_ticks * step * unit
        delta = pd.Timedelta(d_ticks * step * unit, unit="ns")
        case.window = duration_as(delta, time_kind)
        case.items_times = list(case.times)
        case.base, case.scale = base_ns, step * unit
    else:  # tz-aware, across a daylight-saving change, minutes apart
        stamps = [TZ_BASE + pd.Timedelta(minutes=t) for t in ticks]
        case.times = pd.DatetimeIndex(stamps, dtype="datetime64[ns, UTC]").tz_convert("America/New_York")
        case.keys = [s.value for s in stamps]
        case.d_key = d_ticks * 60 * 10 ** 9
        case.window = duration_as(pd.Timedelta(minutes=d_ticks), "tz")
        case.items_times = list(case.times)
        case.base, case.scale = TZ_BASE.value, 60 * 10 ** 9
    return case


def _duration(draw):
    def as_duration(delta: pd.Timedelta, time_kind):
        how = draw(st.sampled_from(["timedelta", "string", "numpy"]))
        if how == "string":
            return f"{delta.value}ns"
        if how == "numpy":
            return delta.to_timedelta64()
        return delta
    return as_duration


@st.composite
def cases(draw, kinds=tuple(KINDS), timed=None, unsorted=None, max_rows=14):
    kind = draw(st.sampled_from(kinds))
    case = Case(kind=kind, values=draw(value_lists(kind, max_rows)))
    if timed is None:
        timed = draw(st.booleans())
    if not timed:
        case.window = draw(st.one_of(st.integers(1, 3), st.integers(1, max_rows + 2)))
        return case
    time_kind = draw(st.sampled_from(TIME_KINDS))
    if unsorted is None:
        unsorted = draw(st.booleans())
    return set_times(case, draw, time_kind, unsorted, _duration(draw))


def describe(case: Case) -> str:
    return (f"kind={case.kind} values={case.values!r} window={case.window!r} time_kind={case.time_kind} "
            f"ticks={case.ticks} d_ticks={case.d_ticks} base={case.base!r}")


# ---------------------------------------------------------------- comparing
def rows_of(out) -> list:
    """A rolling result as one Python value per row (dicts for a DataFrame of Multi members)."""
    if isinstance(out, pd.DataFrame):
        return [dict(zip(out.columns, row)) for row in out.itertuples(index=False)]
    if isinstance(out, pd.Series):
        return list(out.to_numpy(dtype=object))
    return list(out)


def check_rows(got: list, want: List[X.Expect], what: str):
    assert len(got) == len(want), f"{what}: {len(got)} results for {len(want)} rows"
    bad = []
    for i, (g, w) in enumerate(zip(got, want)):
        message = w.check(g)
        if message:
            bad.append(f"row {i}: {message}")
    assert not bad, f"{what}: " + "; ".join(bad[:4]) + (f" (and {len(bad) - 4} more)" if len(bad) > 4 else "")


def check_item(want: X.Expect, got, what: str):
    """One per-item answer: the oracle's, or the exact sum where int64 paths raise (Python ints)."""
    if X.must_overflow(want):
        assert want.kept_exact(got), f"{what}: expected OverflowError or the exact sum, got {got!r}"
        return
    message = want.check(got)
    assert message is None, f"{what}: {message}"


def refused_by_name(case: Case, error: Exception) -> bool:
    """DESIGN.md: every value is taken exactly or refused by name. Integers beyond 2**53 that a
    path would keep as float64 (beside missing values, or in a compiled Window) may be refused
    with a ValueError that says so; nothing else may be refused."""
    return (isinstance(error, ValueError) and "2**53" in str(error)
            and any(isinstance(v, int) and abs(v) > 2 ** 53 for v in case.values))


def run_whole(call, want: List[X.Expect], what: str, case: Case):
    """Run a whole-array path: OverflowError where a window must overflow, the answers otherwise."""
    must = any(X.must_overflow(w) for w in want)
    may = any(X.expects_overflow(w) for w in want)
    try:
        out = call()
    except OverflowError:
        if may:
            return
        raise
    except ValueError as error:
        if refused_by_name(case, error):
            return
        raise
    assert not must, f"{what}: expected OverflowError (an int64 window sum does not fit int64)"
    check_rows(rows_of(out), want, what)


# ---------------------------------------------------------------- rolling
aggregations = st.sampled_from(NUMERIC + NUMERIC + ORDERED + ("multi",))


@examples(ci=60, deep=6000)
@given(case=cases(), agg=aggregations)
def test_rolling_default(case, agg):
    note(describe(case))
    want = X.answers(agg, case.oracle_values(), case.windows(), integer=case.integer)
    run_whole(lambda: winagg.rolling(case.column(), case.window, monoid_of(agg), times=case.times),
              want, f"rolling({agg}) default", case)


@examples(ci=30, deep=6000)
@given(case=cases(), agg=aggregations, data=st.data())
def test_rolling_named_algorithm(case, agg, data):
    algorithm = data.draw(st.sampled_from(algorithms_for(agg)), label="algorithm")
    note(describe(case))
    call = lambda: winagg.rolling(case.column(), case.window, monoid_of(agg), times=case.times,  # noqa: E731
                                  algorithm=algorithm)
    if not case.sorted and algorithm != "fiba":
        with pytest.raises((winagg.OutOfOrderError, ValueError)) as raised:
            call()
        # values are read before times: a refusal of the values may come first
        assert raised.type is winagg.OutOfOrderError or refused_by_name(case, raised.value), raised.value
        return
    want = X.answers(agg, case.oracle_values(), case.windows(), integer=case.integer, soe=algorithm == "soe")
    run_whole(call, want, f"rolling({agg}, algorithm={algorithm!r})", case)


# ---------------------------------------------------------------- make: item by item
def _minus(t, d):
    return t - d


@examples(ci=60, deep=8000)
@given(case=cases(), agg=st.sampled_from(NUMERIC + ORDERED), data=st.data())
def test_make_item_by_item(case, agg, data):
    algorithm = data.draw(st.sampled_from(algorithms_for(agg)), label="algorithm")
    note(describe(case))
    keyed = algorithm == "fiba"
    if not case.sorted and not keyed:
        algorithm, keyed = "fiba", True
    soe = algorithm == "soe"
    want = X.answers(agg, case.oracle_values(), case.windows(), integer=case.integer, soe=soe)
    a = winagg.make(algorithm, monoid_of(agg))
    what = f"make({algorithm!r}, {agg!r})"
    empty = X.aggregate(agg, [], integer=case.integer)
    message = empty.check(a.query())
    assert message is None, f"{what}: query() of the empty window: {message}"
    items = case.items()
    slide = data.draw(st.sampled_from(["evict", "bulk_evict", "evict_oldest"]), label="slide")
    for i, item in enumerate(items):
        try:
            if case.time_kind is None:
                if keyed or slide == "bulk_evict":  # the items' times are their row numbers
                    a.bulk_evict(i - case.window)
                elif slide == "evict_oldest":
                    a.evict_oldest(len(a) - case.window + 1 if len(a) >= case.window else 0)
                elif len(a) == case.window:
                    a.evict()
                a.insert(item, i if keyed else None)
                got = a.query()
            else:
                t = case.items_times[i]
                if keyed:
                    horizon = min(case.items_times[i:])  # no later row needs what is at or before this
                    a.bulk_evict(_minus(horizon, case.delta))
                    a.insert(item, t)
                    got = a.query_after(_minus(t, case.delta), t)
                else:
                    a.bulk_evict(_minus(t, case.delta))
                    a.insert(item, t)
                    got = a.query()
        except OverflowError:
            assert X.expects_overflow(want[i]), f"{what}: row {i}: OverflowError, expected {want[i]!r}"
            return
        except ValueError as error:
            if refused_by_name(case, error):
                return
            raise
        check_item(want[i], got, f"{what}: row {i}")


# ---------------------------------------------------------------- Window
def _push_all(window, times, items, data):
    """Push the events one by one or in batches (the same results either way), then flush."""
    results, k = [], 0
    while k < len(items):
        size = data.draw(st.integers(1, 4), label="batch")
        if size == 1:
            results += window.push(None if times is None else times[k], items[k])
        else:
            results += window.push_batch([None] * len(items[k:k + size]) if times is None else times[k:k + size],
                                         items[k:k + size])
        k += size
    return results + window.flush()


def _check_window_value(agg, case, rows, result, what, expect=None):
    want = expect or X.aggregate(agg, [case.oracle_values()[j] for j in rows], integer=case.integer)
    message = want.check(result.value)
    assert message is None, f"{what}: window {result.start}..{result.end}: {message}"
    assert result.count == len(rows), f"{what}: window {result.start}..{result.end}: count {result.count}, " \
                                      f"expected {len(rows)}"


@examples(ci=40, deep=6000)
@given(case=cases(timed=False), agg=st.sampled_from(NUMERIC + ORDERED), slide=st.integers(1, 4),
       compiled=st.sampled_from([None, False]), data=st.data())
def test_window_rows(case, agg, slide, compiled, data):
    note(describe(case))
    what = f"Window({agg!r}, rows={case.window}, slide={slide}, compiled={compiled})"
    window = winagg.Window(monoid_of(agg), rows=case.window, slide=slide, compiled=compiled)
    spans = X.count_windows(case.n, case.window, slide)
    wants = [X.aggregate(agg, case.oracle_values()[s:e], integer=case.integer) for s, e in spans]
    results = _pushed_or_refused(window, None, case, data, wants, what)
    if results is None:
        return
    assert [(r.start, r.end) for r in results] == spans, f"{what}: windows"
    for (s, e), r, want in zip(spans, results, wants):
        if X.must_overflow(want):  # a Python-mode window keeps Python ints: the exact sum
            assert want.kept_exact(r.value), f"{what}: window {s}..{e}: expected OverflowError, got {r.value!r}"
            continue
        _check_window_value(agg, case, range(s, e), r, what, want)


def _pushed_or_refused(window, times, case, data, wants, what):
    """The Window's results, or None where it raised as it must: OverflowError where a window's
    exact sum leaves int64, ValueError naming what float64 would round."""
    try:
        return _push_all(window, times, case.items(), data)
    except OverflowError:
        assert any(X.expects_overflow(w) for w in wants), f"{what}: OverflowError, expected {wants!r}"
        return None
    except ValueError as error:
        if refused_by_name(case, error):
            return None
        raise


def _key_of(case, t):
    """A Window's reported start/end as an exact key (int ns, int, Fraction)."""
    if case.time_kind == "int":
        return int(t)
    if case.time_kind == "float":
        return Fraction(float(t))
    return pd.Timestamp(t).value


def _span(case, ticks):
    """``ticks`` (whole ticks of the case's time scale) as a size/slide/lateness of its time type."""
    if case.time_kind == "int":
        return ticks * case.scale
    if case.time_kind == "float":
        return ticks * 0.25
    return pd.Timedelta(ticks * case.scale, unit="ns")


def _key_span(case, ticks):
    if case.time_kind == "float":
        return Fraction(ticks, 4)
    return ticks * case.scale


@examples(ci=40, deep=6000)
@given(case=cases(timed=True), agg=st.sampled_from(NUMERIC + ORDERED),
       slide=st.sampled_from([None, None, 1, 2, 3, "size", "size+1"]),
       lateness=st.sampled_from([0, 1, 3, "all"]), compiled=st.sampled_from([None, False]), data=st.data())
def test_window_time(case, agg, slide, lateness, compiled, data):
    note(describe(case))
    slide_ticks = {"size": case.d_ticks, "size+1": case.d_ticks + 1}.get(slide, slide)
    late_ticks = (max(case.ticks, default=0) + 1) if lateness == "all" else lateness
    size = _span(case, case.d_ticks)
    what = f"Window({agg!r}, size={size!r}, slide={slide_ticks}, lateness={late_ticks}, compiled={compiled})"
    window = winagg.Window(monoid_of(agg), size=size, compiled=compiled,
                           slide=None if slide_ticks is None else _span(case, slide_ticks),
                           allowed_lateness=_span(case, late_ticks) if late_ticks else 0)
    spans, late = X.event_windows(case.keys, case.oracle_values(), case.d_key,
                                  None if slide_ticks is None else _key_span(case, slide_ticks),
                                  _key_span(case, late_ticks))
    wants = [X.aggregate(agg, [case.oracle_values()[j] for j in rows], integer=case.integer)
             for _, _, rows in spans]
    results = _pushed_or_refused(window, case.items_times, case, data, wants, what)
    if results is None:
        return
    got = [(_key_of(case, r.start), _key_of(case, r.end)) for r in results]
    assert got == [(s, e) for s, e, _ in spans], f"{what}: windows"
    assert window.late_events == late, f"{what}: late events"
    for (s, e, rows), r, want in zip(spans, results, wants):
        if X.must_overflow(want):
            assert want.kept_exact(r.value), f"{what}: window {s}..{e}: expected OverflowError, got {r.value!r}"
            continue
        _check_window_value(agg, case, rows, r, what, want)


# ---------------------------------------------------------------- stored windows (SQLite, Redis)
_redis_prefixes = itertools.count()


def _store(kind: str, folder: str, port: int):
    from winagg.store import RedisStore, SQLiteStore

    if kind == "sqlite":
        return SQLiteStore(os.path.join(folder, "w.db"))
    return RedisStore(port=port, prefix=f"paths:{next(_redis_prefixes)}")


@examples(ci=20, deep=2000)
@given(case=cases(unsorted=False, max_rows=10), agg=st.sampled_from(NUMERIC + ORDERED),
       algorithm=st.sampled_from(["amta", "lmta"]), buffer_size=st.sampled_from([2, 4, 512]),
       kind=st.sampled_from(["sqlite", "redis"]))
def test_stored_window(redis_port, case, agg, algorithm, buffer_size, kind):
    from winagg.store import StoredWindow

    note(describe(case))
    want = X.answers(agg, case.oracle_values(), case.windows(), integer=case.integer)
    what = f"StoredWindow({agg!r}, {algorithm!r}, buffer_size={buffer_size}) on {kind}"
    items = case.items()
    with tempfile.TemporaryDirectory() as folder:
        with StoredWindow(_store(kind, folder, redis_port), monoid_of(agg), algorithm=algorithm,
                          buffer_size=buffer_size) as window:
            message = X.aggregate(agg, [], integer=case.integer).check(window.query())
            assert message is None, f"{what}: query() of the empty window: {message}"
            for i, item in enumerate(items):
                try:
                    if case.time_kind is None:
                        while len(window) >= case.window:
                            window.evict()
                        window.insert(item)
                    else:
                        window.bulk_evict(_minus(case.items_times[i], case.delta))
                        window.insert(item, case.items_times[i])
                    got = window.query()
                except OverflowError:
                    assert X.expects_overflow(want[i]), f"{what}: row {i}: OverflowError, expected {want[i]!r}"
                    return
                check_item(want[i], got, f"{what}: row {i}")


# ---------------------------------------------------------------- hand-picked cases the brief names
def test_a_sum_near_the_int64_limit_is_exact_and_one_past_it_overflows():
    fits = np.array([2 ** 62, 2 ** 62 - 1, -(2 ** 62), -(2 ** 62), -1], dtype=np.int64)
    want = X.answers("sum", fits.tolist(), X.row_windows(5, 2), integer=True)
    assert not any(X.expects_overflow(w) for w in want)
    for algorithm in (None, "soe", "daba_lite"):
        check_rows(rows_of(winagg.rolling(fits, 2, "sum", algorithm=algorithm)), want, f"sum {algorithm}")
    with pytest.raises(OverflowError):
        winagg.rolling(np.array([2 ** 62, 2 ** 62], dtype=np.int64), 2, "sum")
