"""An oracle for every path that shares no code with winagg: Python ints, Fractions, plain lists.

It encodes the one semantics of docs/guide/rolling.md ("Missing values", "Integers, times
and errors") and DESIGN.md section 10, with pandas' answers where pandas has the aggregation
and numpy's otherwise:

* windows: row window ``w`` covers rows ``max(0, i - w + 1) .. i``; a time window ``d``
  covers the rows ``j <= i`` (arrived so far) with ``t[i] - d < t[j] <= t[i]``, folded in
  time order, equal times in arrival order. Times here are exact numbers (ints, Fractions).
* missing values (NaN, None, pd.NA, NaT) are skipped; a window without a value gives NaN
  (a *missing* answer) for sum, mean, min, max, var and std and 0 for count.
* sums of integers are exact; one that does not fit int64 is an ``OverflowError``.
* float sums: +inf and -inf in one window give NaN, else the inf; finite windows are
  compared with the exact sum (a Fraction) within a tolerance relative to the sum of |x|.
* var/std (ddof=1): NaN with fewer than 2 values or with an inf; a finite window whose true
  variance overflows float64 gives inf (pandas: the std of such a window is inf too).

:func:`aggregate` gives an :class:`Expect` and :meth:`Expect.check` compares a path's
answer with it, returning None or a message.
"""

from __future__ import annotations

import math
import os
import sys
from decimal import Context, Decimal
from fractions import Fraction
from typing import List, Optional, Sequence

INT64_MIN, INT64_MAX = -2 ** 63, 2 ** 63 - 1
FLOAT_MAX = Fraction(sys.float_info.max)
#: Relative tolerance of float answers (the brief: 1e-9 relative).
REL = Fraction(1, 10 ** 9)
#: Float answers within a few subnormal steps of the exact value are right (underflow).
SUBNORMAL_SLACK = Fraction(64, 2 ** 1074)


#: HYPOTHESIS_PROFILE=deep (tests/conftest.py) runs the differential tests for about an hour.
DEEP = os.environ.get("HYPOTHESIS_PROFILE") == "deep"


def examples(ci: int, deep: int, **more):
    """Hypothesis settings with ``ci`` examples (profiles default/ci) or ``deep`` (profile deep)."""
    from hypothesis import HealthCheck, settings

    # CI draws the same examples every run (a rare case found there would otherwise fail a
    # submission at random); the deep profile explores anew each time
    return settings(max_examples=deep if DEEP else ci, deadline=None, derandomize=not DEEP,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much], **more)


# ---------------------------------------------------------------- values
def is_missing(v) -> bool:
    """None, NaN, pd.NA, NaT (and numpy's NaN scalars)."""
    if v is None:
        return True
    name = type(v).__name__
    if name in ("NAType", "NaTType"):
        return True
    if isinstance(v, float) or name.startswith("float"):
        return v != v
    return False


def as_number(v):
    """A Python int or float for a numpy or Python number (exactly)."""
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        return v
    kind = getattr(getattr(v, "dtype", None), "kind", None)
    if kind in ("i", "u", "b"):
        return int(v)
    return float(v)


def fits_int64(x: int) -> bool:
    return INT64_MIN <= x <= INT64_MAX


def to_float(x: Fraction) -> Optional[float]:
    """``x`` rounded to float64 (correctly rounded), or None when it overflows."""
    try:
        return float(x)
    except OverflowError:
        return None


# ---------------------------------------------------------------- expectations
class Expect:
    """What a path must answer for one window (see the module docs)."""

    kind = "?"

    def check(self, got) -> Optional[str]:  # pragma: no cover - abstract
        raise NotImplementedError

    def kept_exact(self, got) -> bool:
        """Whether a path of Python ints answered the exact value where int64 paths raise."""
        return False

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in vars(self).items())})"


class Missing(Expect):
    """NaN (rolling, make, Window), null (Spark), None for pandas' nullable answers."""

    kind = "missing"

    def check(self, got):
        return None if is_missing(got) else f"expected a missing answer (NaN/null), got {got!r}"


class Exact(Expect):
    """Equal as Python compares numbers (int and float compared exactly; -0.0 == 0.0)."""

    kind = "exact"

    def __init__(self, value):
        self.value = value

    def check(self, got):
        if is_missing(got) or isinstance(got, (list, tuple, dict)):
            return f"expected exactly {self.value!r}, got {got!r}"
        got = as_number(got)
        if isinstance(self.value, float) and math.isnan(self.value):
            return None if math.isnan(got) else f"expected NaN, got {got!r}"
        return None if got == self.value else f"expected exactly {self.value!r}, got {got!r}"


class Close(Expect):
    """A float within ``REL * (|exact| + scale) + absolute`` of the exact value.

    When the exact value overflows float64 the answer is inf of its sign. ``inf_from``:
    when given, an inf of the exact value's sign is accepted once ``|exact|`` reaches it
    (float algorithms square or add on the way, and may overflow a little earlier).
    """

    kind = "close"

    def __init__(self, exact: Fraction, scale: Fraction = Fraction(0), absolute: Fraction = Fraction(0),
                 inf_from: Optional[Fraction] = None):
        self.exact, self.scale, self.absolute, self.inf_from = exact, scale, absolute, inf_from

    def check(self, got):
        if is_missing(got) or isinstance(got, (list, tuple, dict)):
            return f"expected about {_show(self.exact)}, got {got!r}"
        got = float(got)
        rounded = to_float(self.exact)
        if math.isinf(got):
            sign = 1 if got > 0 else -1
            if self.exact * sign > 0 and (rounded is None or (self.inf_from is not None and
                                                               abs(self.exact) >= self.inf_from)):
                return None
            return f"expected about {_show(self.exact)}, got {got!r}"
        if rounded is None:
            return f"expected inf (the exact value {_show(self.exact)} overflows float64), got {got!r}"
        # below float64's resolution (subnormals are 2**-1074 apart) every answer rounds
        tolerance = REL * (abs(self.exact) + self.scale) + self.absolute + SUBNORMAL_SLACK
        if got == rounded or abs(Fraction(got) - self.exact) <= tolerance:
            return None
        return f"expected about {rounded!r} (tolerance {float(tolerance):.3g}), got {got!r}"


class Overflow(Expect):
    """The path raises OverflowError (checked by the caller, which runs the path); a path of
    Python ints (make, Python-mode windows) may answer ``exact``, the sum beyond int64, instead."""

    kind = "overflow"

    def __init__(self, exact=None):
        self.exact = exact

    def kept_exact(self, got) -> bool:
        return self.exact is not None and isinstance(got, int) and not isinstance(got, bool) and got == self.exact

    def check(self, got):
        return f"expected OverflowError (the window's int64 sum does not fit int64), got {got!r}"


class AnyOf(Expect):
    """Any one of several answers (e.g. the exact int or pandas' float64 rounding of it)."""

    kind = "anyof"

    def __init__(self, *options: Expect):
        self.options = options

    def check(self, got):
        messages = [o.check(got) for o in self.options]
        return None if any(m is None for m in messages) else " / ".join(messages)

    @property
    def allows_overflow(self):
        return any(isinstance(o, Overflow) for o in self.options)


class Anything(Expect):
    """No check (a float sum whose terms overflow float64 on the way: any order may differ)."""

    kind = "anything"

    def check(self, got):
        return None


class Items(Expect):
    """A list of items in window order; missing items compare equal to each other."""

    kind = "items"

    def __init__(self, items: Sequence):
        self.items = list(items)

    def check(self, got):
        if is_missing(got) or not hasattr(got, "__len__"):
            return f"expected the items {self.items!r}, got {got!r}"
        got = list(got)
        if len(got) == len(self.items) and all(_same_item(g, w) for g, w in zip(got, self.items)):
            return None
        return f"expected the items {self.items!r}, got {got!r}"


class Members(Expect):
    """A dict (or row) of member answers: ``Multi``."""

    kind = "members"

    def __init__(self, members: dict):
        self.members = members

    def check(self, got):
        for name, expect in self.members.items():
            try:
                value = got[name]
            except (KeyError, TypeError, IndexError):
                return f"member {name!r} missing from {got!r}"
            message = expect.check(value)
            if message:
                return f"member {name!r}: {message}"
        return None


def _same_item(got, want) -> bool:
    if is_missing(want):
        return is_missing(got)
    if is_missing(got):
        return False
    return as_number(got) == want if isinstance(want, (int, float)) else got == want


def _show(x: Fraction) -> str:
    f = to_float(x)
    return repr(f) if f is not None else f"~{'-' if x < 0 else ''}1e{len(str(abs(x.numerator) // x.denominator)) - 1}"


def expects_overflow(expect: Expect) -> bool:
    if isinstance(expect, Members):  # Multi: a member that overflows makes the whole call raise
        return any(expects_overflow(m) for m in expect.members.values())
    return isinstance(expect, Overflow) or (isinstance(expect, AnyOf) and expect.allows_overflow)


def must_overflow(expect: Expect) -> bool:
    if isinstance(expect, Members):
        return any(must_overflow(m) for m in expect.members.values())
    return isinstance(expect, Overflow)


# ---------------------------------------------------------------- aggregations
#: The aggregations the oracle knows; "multi" is winagg's Multi(total=sum, peak=max, n=count).
AGGREGATIONS = ("sum", "mean", "min", "max", "count", "var", "std", "collect", "first", "last", "multi")


def aggregate(agg: str, items: Sequence, *, integer: bool, history: Sequence = ()) -> Expect:
    """The answer for one window holding ``items`` (oldest first) of aggregation ``agg``.

    ``integer``: the input column holds integers (sums are exact int64). ``history``: every
    value the path has seen so far (subtract-on-evict paths: their float rounding is relative
    to it, not to the window alone); empty for paths that aggregate only the window.
    """
    if agg == "collect":
        return Items(items)
    if agg == "first":
        return _first_last(items, 0)
    if agg == "last":
        return _first_last(items, -1)
    if agg == "multi":
        return Members({"total": aggregate("sum", items, integer=integer, history=history),
                        "peak": aggregate("max", items, integer=integer),
                        "n": aggregate("count", items, integer=integer)})
    values = [as_number(v) for v in items if not is_missing(v)]
    if agg == "count":
        return Exact(len(values))
    if not values:
        return Missing()
    finite_history = [abs(Fraction(as_number(v))) for v in history
                      if not is_missing(v) and not math.isinf(as_number(v))]
    if agg in ("min", "max"):  # the item itself: an integer is never rounded through float64
        return Exact(min(values) if agg == "min" else max(values))
    if agg in ("sum", "mean"):
        return _sum_or_mean(agg, values, integer, finite_history)
    if agg in ("var", "std"):
        return _var_or_std(agg, [float(v) for v in values], finite_history)
    raise ValueError(f"the oracle has no aggregation {agg!r}")


class _Item(Expect):
    kind = "item"

    def __init__(self, item, present):
        self.item, self.present = item, present

    def check(self, got):
        if not self.present:
            return None if got is None or is_missing(got) else f"expected None (empty window), got {got!r}"
        return None if _same_item(got, self.item) else f"expected the item {self.item!r}, got {got!r}"


def _first_last(items, k):
    return _Item(items[k], True) if items else _Item(None, False)


def _sum_or_mean(agg, values, integer, history):
    n = len(values)
    if integer:
        total = sum(int(v) for v in values)
        if agg == "sum":
            return Exact(total) if fits_int64(total) else Overflow(exact=total)
        mean = Close(Fraction(total, n), Fraction(sum(abs(int(v)) for v in values), n))
        return mean if fits_int64(total) else AnyOf(Overflow(), mean)
    if any(math.isinf(v) for v in values):
        signs = {v > 0 for v in values if math.isinf(v)}
        if len(signs) == 2:
            return Missing()
        infinity = Exact(math.inf if signs.pop() else -math.inf)
        finite = sum(abs(Fraction(v)) for v in values if not math.isinf(v))
        if to_float(finite) is None:  # the finite terms may overflow to the other infinity first
            return AnyOf(infinity, Missing())  # (numpy's sum answers NaN there)
        return infinity
    exact = sum(Fraction(v) for v in values)
    scale = sum(abs(Fraction(v)) for v in values)
    if history:
        scale = max(scale, sum(history))
    if to_float(scale) is None:
        return Anything()  # the terms overflow float64 on the way in some order: any answer
    if agg == "mean":
        return Close(exact / n, scale / n)
    return Close(exact, scale)


def _var_or_std(agg, values, history):
    n = len(values)
    if n < 2 or any(math.isinf(v) for v in values):
        return Missing()
    exact = [Fraction(v) for v in values]
    mean = sum(exact) / n
    var = sum((x - mean) ** 2 for x in exact) / (n - 1)
    biggest = max(abs(x) for x in exact)
    if history:
        biggest = max(biggest, max(history))
    # float algorithms lose about n * eps * max(x)^2 to cancellation, and square on the way
    absolute = REL * biggest * biggest
    inf_from = FLOAT_MAX / (4 * n * n)
    if agg == "var":
        return Close(var, Fraction(0), absolute, inf_from)
    root = exact_sqrt(var)
    # sqrt(var + e) - sqrt(var) <= sqrt(e): an absolute error e of the variance, including the
    # variance's own underflow (pandas and numpy take the root of the rounded variance: the std
    # of [1e-301, 0] is 0.0)
    std = Close(root, Fraction(0), 2 * exact_sqrt(absolute + SUBNORMAL_SLACK) + REL * root, exact_sqrt(inf_from))
    if to_float(var) is None:  # pandas answers inf where the variance overflows; the true std is right too
        return AnyOf(Exact(math.inf), std)
    return std


def exact_sqrt(x: Fraction) -> Fraction:
    """The square root of ``x`` to 60 significant digits (Decimal handles any exponent)."""
    context = Context(prec=60, Emax=10 ** 6, Emin=-10 ** 6)
    return Fraction(context.sqrt(context.divide(Decimal(x.numerator), Decimal(x.denominator))))


# ---------------------------------------------------------------- windows
def row_windows(n: int, w: int) -> List[List[int]]:
    """Row ``i`` covers rows ``max(0, i - w + 1) .. i``."""
    return [list(range(max(0, i - w + 1), i + 1)) for i in range(n)]


def time_windows(times: Sequence, d) -> List[List[int]]:
    """Row ``i``: rows ``j <= i`` with ``t[i] - d < t[j] <= t[i]``, in time order (ties by arrival)."""
    out = []
    for i, ti in enumerate(times):
        rows = [j for j in range(i + 1) if ti - d < times[j] <= ti]
        out.append(sorted(rows, key=lambda j: (times[j], j)))
    return out


def range_frames(times: Sequence, d) -> List[List[int]]:
    """Spark's ``rangeBetween(-d, 0)``: every row of the key with ``t[i] - d <= t[j] <= t[i]``."""
    order = sorted(range(len(times)), key=lambda j: (times[j], j))
    return [[j for j in order if times[i] - d <= times[j] <= times[i]] for i in range(len(times))]


def answers(agg: str, values: Sequence, windows: Sequence[Sequence[int]], *, integer: bool,
            soe: bool = False) -> List[Expect]:
    """One expectation per window; ``soe``: the path subtracts on eviction (see :func:`aggregate`)."""
    return [aggregate(agg, [values[j] for j in rows], integer=integer,
                      history=values[:max(rows) + 1] if soe and rows else ())
            for rows in windows]


# ---------------------------------------------------------------- winagg.Window
def event_windows(times: Sequence, values: Sequence, size, slide, lateness):
    """The results ``winagg.Window(size=, slide=, allowed_lateness=)`` gives for events pushed in
    order and then flushed: ``[(start, end, rows)]`` sorted by end, and the late event count.

    Its class docs: the watermark is max(time seen) - lateness; an event older than the
    watermark is late and dropped; without a slide each distinct on-time time t has the
    window (t - size, t]; with one, window k is [k*slide, k*slide + size) and is emitted
    when it holds an on-time event.
    """
    watermark, on_time, late = None, [], 0
    for j, t in enumerate(times):
        if watermark is not None and t < watermark:
            late += 1
            continue
        on_time.append(j)
        watermark = t - lateness if watermark is None else max(watermark, t - lateness)
    results = []
    if slide is None:
        for t in sorted({times[j] for j in on_time}):
            rows = [j for j in on_time if t - size < times[j] <= t]
            results.append((t - size, t, sorted(rows, key=lambda j: (times[j], j))))
    else:
        starts = set()
        for j in on_time:
            t = times[j]
            k = math.floor(Fraction(t) / Fraction(slide))
            while k * slide + size > t:
                if k * slide <= t:
                    starts.add(k * slide)
                k -= 1
        for start in sorted(starts, key=lambda s: (s + size, s)):
            rows = [j for j in on_time if start <= times[j] < start + size]
            results.append((start, start + size, sorted(rows, key=lambda j: (times[j], j))))
    return results, late


def count_windows(n: int, rows: int, slide: int):
    """``winagg.Window(rows=, slide=)``: after every slide-th event the last ``rows`` events, and at
    the flush the last ``rows`` if events came since the last result: ``[(start, end)]``."""
    ends = list(range(slide, n + 1, slide))
    if n and (not ends or ends[-1] != n):
        ends.append(n)
    return [(max(0, end - rows), end) for end in ends]


# ---------------------------------------------------------------- Spark's hopping windows
def hopping_starts(t, size, slide) -> List:
    """The starts of the windows ``[k*slide, k*slide + size)`` (k any integer, aligned to time 0)
    that hold the time ``t``, oldest first (none when ``t`` falls between windows, slide > size)."""
    k = math.floor(Fraction(t) / Fraction(slide))
    starts = []
    while k * slide + size > t:
        if k * slide <= t:
            starts.append(k * slide)
        k -= 1
    return starts[::-1]


def hopping_windows(times: Sequence, size, slide):
    """One key's windows in Spark's ``groupBy(key, window(t, size, slide))``, which
    ``winagg.spark.sliding(..., range=size, slide=slide)`` gives: ``[(start, end, rows)]`` sorted
    by start, one per window ``[k*slide, k*slide + size)`` holding at least one row (rows in time
    order, ties in arrival order); a row whose time is None is in no window.

    The windows :func:`event_windows` gives with a slide and unbounded lateness, over the rows
    that have a time.
    """
    timed = [j for j, t in enumerate(times) if t is not None]
    results, _ = event_windows([times[j] for j in timed], [None] * len(timed), size, slide, math.inf)
    return sorted(((start, end, [timed[i] for i in rows]) for start, end, rows in results), key=lambda w: w[0])


def stream_hopping_windows(keys: Sequence, times: Sequence, batches: Sequence, size, slide, lateness):
    """What ``winagg.spark.streaming.sliding_stream(..., range=size, slide=slide, lateness=)``
    reports in append mode, as its docstring says (Spark's own ``window()`` in append mode), for
    rows of key ``keys[j]`` and time ``times[j]`` arriving in micro-batch ``batches[j]`` (0, 1, ...),
    followed by one micro-batch without data: ``({(key, start): (end, rows)}, dropped)``.

    * The watermark of micro-batch n is the largest time of the rows of every earlier
      micro-batch minus ``lateness`` (-inf before any row): one watermark for all keys.
    * A window is reported (once) in the first micro-batch whose watermark reaches its end,
      with the rows it holds then; the windows whose end the last watermark never reaches
      are not reported.
    * A row counts in those of its windows not reported before its micro-batch, even when it
      is behind the watermark; a row that has windows but none of them still open, or has no
      time, is dropped and counted in ``dropped``. A row between two windows (slide > size)
      is in none, as in the batch job, and is not counted.

    Spark runs a micro-batch without data only when no data is left (with files read one a
    micro-batch and ``trigger(availableNow=True)``: after the last), so the watermark moves
    between micro-batches that have data, never within one.
    """
    marks = stream_watermarks(times, batches, lateness)
    final = marks[-1]
    held: dict = {}
    dropped = 0
    for j, (key, t, n) in enumerate(zip(keys, times, batches)):
        if t is None:
            dropped += 1
            continue
        reported = marks[n - 1] if n > 0 else -math.inf  # windows ending at or before it were reported
        starts = hopping_starts(t, size, slide)
        open_starts = [s for s in starts if s + size > reported]
        if starts and not open_starts:
            dropped += 1
        for start in open_starts:
            held.setdefault((key, start), []).append(j)
    windows = {where: (where[1] + size, sorted(rows, key=lambda j: (times[j], j)))
               for where, rows in held.items() if where[1] + size <= final}
    return windows, dropped


def stream_watermarks(times: Sequence, batches: Sequence, lateness) -> List:
    """The watermark of each micro-batch 0 .. last + 1 (the one without data that follows the
    last): the largest time of the earlier micro-batches' rows minus ``lateness``, or -inf."""
    last = max(batches, default=-1)
    marks, seen = [], None
    for n in range(last + 2):
        marks.append(-math.inf if seen is None else seen - lateness)
        mine = [t for t, b in zip(times, batches) if b == n and t is not None]
        if mine:
            seen = max(mine) if seen is None else max(seen, max(mine))
    return marks

