"""The differential test's Spark path: ``winagg.spark.sliding`` and ``sliding_stream`` against
tests/exact_oracle.py.

A few generated cases (several keys each, so that one Spark job checks many windows): values
with nulls, NaN, +-inf, -0.0, huge and tiny magnitudes, and int64 values whose window sums
come near int64's limit without leaving it; order values with ties, in any order. Row frames
(``rowsBetween(-(N-1), 0)``, ties broken by a second order column) and range frames
(``rangeBetween(-D, 0)``: ``[t - D, t]``, peers included). Spark answers null where the
oracle says NaN (a window without a value, a sample variance of one value).

Hopping windows (``slide=``): the batch job over timestamps in several units and duration
forms, int64 values at int64's ends (a sum that leaves int64 fails the job, naming the key and
window), and one streaming query over two micro-batches (exact_oracle.hopping_windows,
exact_oracle.stream_hopping_windows).
"""

from __future__ import annotations

import datetime as dt
import math
import re
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import Phase, event, example, given, note
from hypothesis import strategies as st

import exact_oracle as X

DOUBLE_AGGS = ("sum", "mean", "min", "max", "count", "var", "std")
LONG_AGGS = ("sum", "min", "max", "count")

doubles = st.one_of(st.none(), st.just(math.nan), st.sampled_from([math.inf, -math.inf, -0.0, 1e300, -1e300, 5e-324]),
                    st.integers(-20, 20).map(float), st.floats(-1e6, 1e6), st.floats(allow_nan=False))
longs = st.one_of(st.none(), st.integers(-1000, 1000), st.integers(-(2 ** 40), 2 ** 40))


@st.composite
def keys(draw):
    n = draw(st.integers(0, 12))
    return dict(x=draw(st.lists(doubles, min_size=n, max_size=n)),
                y=draw(st.lists(longs, min_size=n, max_size=n)),
                t=draw(st.lists(st.integers(0, 2 * n + 1), min_size=n, max_size=n)))


#: int64 values every run of which sums within int64, rows 0..1 to exactly 2**63 - 1 and rows 1..4 to
#: exactly -2**63 (times 0..4: every row and range frame is a run): no false overflow at the limit
NEAR_LIMIT = dict(x=[1.0, 2.0, 3.0, 4.0, 5.0], y=[2 ** 62, 2 ** 62 - 1, -(2 ** 62), -(2 ** 62), 2 ** 62 - 1],
                  t=[0, 1, 2, 3, 4])


def _frame_rows(spec, frame, size):
    """Per row of one key, the rows of its frame (indices into the key's lists)."""
    t = spec["t"]
    if frame == "range":
        return X.range_frames(t, size)
    order = sorted(range(len(t)), key=lambda j: (t[j], j))
    place = {j: k for k, j in enumerate(order)}
    return [order[max(0, place[i] - size + 1):place[i] + 1] for i in range(len(t))]


# no shrinking: each try is two Spark jobs, and the message names the key, row and column
@X.examples(ci=2, deep=60, phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(groups=st.lists(keys(), min_size=1, max_size=4), rows=st.integers(1, 4), span=st.integers(0, 4))
def test_sliding_equals_the_oracle(spark, groups, rows, span):
    from winagg.spark import sliding

    groups = groups + [NEAR_LIMIT]
    note(repr(groups))
    data = [(f"k{g}", j, spec["t"][j], spec["x"][j], spec["y"][j])
            for g, spec in enumerate(groups) for j in range(len(spec["t"]))]
    df = spark.createDataFrame(data, "k string, seq long, t long, x double, y long")
    aggs = {f"x_{a}": (a, "x") for a in DOUBLE_AGGS}
    aggs.update({f"y_{a}": (a, "y") for a in LONG_AGGS})
    for frame, size in (("rows", rows), ("range", span)):
        if frame == "rows":
            out = sliding(df, partition_by="k", order_by=["t", "seq"], rows=size, aggs=aggs)
        else:
            out = sliding(df, partition_by="k", order_by="t", range=size, aggs=aggs)
        got = {(r["k"], r["seq"]): r for r in out.collect()}
        assert len(got) == len(data), f"{frame}: {len(got)} rows back for {len(data)}"
        bad = []
        for g, spec in enumerate(groups):
            frames = _frame_rows(spec, frame, size)
            for i, members in enumerate(frames):
                row = got[(f"k{g}", i)]
                for column, integer in (("x", False), ("y", True)):
                    for agg in (LONG_AGGS if integer else DOUBLE_AGGS):
                        want = X.aggregate(agg, [spec[column][j] for j in members], integer=integer)
                        message = want.check(row[f"{column}_{agg}"])
                        if message:
                            bad.append(f"{frame}={size} key k{g} row {i} {column}_{agg}: {message}")
        assert not bad, "; ".join(bad[:5]) + (f" (and {len(bad) - 5} more)" if len(bad) > 5 else "")


# ---------------------------------------------------------------- hopping windows (slide=)
HOP_AGGS = ("sum", "mean", "min", "max", "count")


def hop_aggs() -> dict:
    """The outputs of a generated hopping case: every aggregation of the doubles ``x``, and sum,
    mean and count of the longs ``y``. Their min and max, which hopping windows refuse beyond
    2**53 (where float64 would round them), are test_long_min_and_max_are_exact_or_refused's."""
    return {f"{c}_{a}": (a, c) for c in ("x", "y") for a in HOP_AGGS if c == "x" or a not in ("min", "max")}
#: int64 values whose window sums leave int64 (two of one sign in a window), beside the generated ones
EXTREMES = st.sampled_from([X.INT64_MAX, X.INT64_MIN, X.INT64_MAX - 1, X.INT64_MIN + 1, 2 ** 62, -(2 ** 62)])
#: The time unit of a hopping case, in microseconds (Spark's time unit), with its names as durations.
UNITS = {"us": (1, "microseconds"), "ms": (1000, "milliseconds"), "s": (10 ** 6, "seconds"),
         "min": (60 * 10 ** 6, "minutes"), "h": (3600 * 10 ** 6, "hours")}
EPOCH = dt.datetime(1970, 1, 1)
OVERFLOW = re.compile(r"OverflowError: output column 'y_sum': the sum of the long column 'y' over the window of "
                      r"k=(None|'k\d+'), window \[([^,\]]+), ([^)\]]+)\) is (-?\d+), outside int64")


@st.composite
def hop_keys(draw):
    """One key's rows: doubles as the row-frame cases have them, longs sometimes near int64's ends,
    times in whole units with ties and, now and then, none (a row in no window)."""
    n = draw(st.integers(0, 10))
    y = st.one_of(longs, EXTREMES) if draw(st.booleans()) else longs
    return dict(x=draw(st.lists(doubles, min_size=n, max_size=n)), y=draw(st.lists(y, min_size=n, max_size=n)),
                t=draw(st.lists(st.integers(-1, 2 * n + 1).map(lambda v: None if v < 0 else v),
                                min_size=n, max_size=n)))


def _duration(count: int, unit: str, form: int):
    """``count`` units as one of the forms winagg.times reads: text, short text, timedelta,
    numpy.timedelta64, or a bare number of seconds on the timestamp column."""
    micros, name = UNITS[unit]
    if form == 0:
        return f"{count} {name}"
    if form == 1:
        return f"{count}{unit}"
    if form == 2:
        return dt.timedelta(microseconds=count * micros)
    if unit == "s" and form == 4:
        return count
    return np.timedelta64(count, "m" if unit == "min" else unit)


def _stamp(units: int, unit: str, ntz: bool) -> dt.datetime:
    """A time ``units`` units from the epoch: naive for a timestamp_ntz column, in UTC otherwise."""
    when = EPOCH + dt.timedelta(microseconds=units * UNITS[unit][0])
    return when if ntz else when.replace(tzinfo=dt.timezone.utc)


def _micros(text: str) -> int:
    """A window bound as an error message writes it, in microseconds from the epoch."""
    return (dt.datetime.fromisoformat(text.strip()) - EPOCH) // dt.timedelta(microseconds=1)


def _window_rows(out, ntz: bool):
    """The hopping result's rows keyed by (key, window start in microseconds from the epoch)."""
    from pyspark.sql import functions as F

    if ntz:  # naive datetimes: the column's wall-clock, exactly
        rows = out.collect()
        starts = [(r["window_start"] - EPOCH) // dt.timedelta(microseconds=1) for r in rows]
        ends = [(r["window_end"] - EPOCH) // dt.timedelta(microseconds=1) for r in rows]
    else:  # instants: their epoch microseconds, whatever the Python process's time zone
        rows = out.select("*", F.unix_micros("window_start").alias("_start"),
                          F.unix_micros("window_end").alias("_end")).collect()
        starts, ends = [r["_start"] for r in rows], [r["_end"] for r in rows]
    got = {}
    for row, start, end in zip(rows, starts, ends):
        assert (row["k"], start) not in got, f"window {start} of key {row['k']} reported twice"
        got[(row["k"], start)] = (end, row)
    return got


def _check_windows(got, want, unit, size, columns):
    """Compare ``got`` (:func:`_window_rows`) with ``want`` ({(key, start in units): (rows' x, rows' y)})."""
    micros = UNITS[unit][0]
    have = {(k, start // micros) for k, start in got if start % micros == 0}
    assert have == set(want) and len(got) == len(want), \
        f"windows (key, start in {unit}): missing {sorted(set(want) - have, key=str)[:5]}, " \
        f"extra {sorted(have - set(want), key=str)[:5]} of {len(got)}"
    bad = []
    for (key, start), (xs, ys) in want.items():
        end, row = got[(key, start * micros)]
        if end != (start + size) * micros:
            bad.append(f"key {key} window {start}: ends at {end} us")
        for column, items in (("x", xs), ("y", ys)):
            for agg in HOP_AGGS + ("std",):
                name = f"{column}_{agg}"
                if name in columns:
                    message = X.aggregate(agg, items, integer=column == "y").check(row[name])
                    if message:
                        bad.append(f"key {key} window [{start}, {start + size}) {name}: {message}")
    assert not bad, "; ".join(bad[:5]) + (f" (and {len(bad) - 5} more)" if len(bad) > 5 else "")


# no shrinking: each try is one or two Spark jobs, and the message names the key, window and column
@X.examples(ci=3, deep=60, phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(groups=st.lists(hop_keys(), min_size=1, max_size=4), null_key=st.booleans(),
       unit=st.sampled_from(sorted(UNITS)), base=st.sampled_from([0, -7, 1_000_003]), size=st.integers(1, 5),
       slide=st.integers(1, 5), forms=st.tuples(st.integers(0, 4), st.integers(0, 4)), ntz=st.booleans())
# every run: a sum past int64 in the null key's window [-8 s, -5 s) (2**62 twice), a row without a time
@example(groups=[dict(x=[1.0, None, math.nan], y=[2 ** 62, 2 ** 62, 5], t=[0, 1, None])], null_key=True, unit="s",
         base=-7, size=3, slide=2, forms=(0, 4), ntz=False)
def test_hopping_windows_equal_the_oracle(spark, groups, null_key, unit, base, size, slide, forms, ntz):
    """``sliding(..., range=size, slide=slide)`` over int64 and double columns (NaN, null, +-inf, int64's
    ends), timestamp or timestamp_ntz times in whole units (microseconds to hours; before the epoch,
    near it or decades after it), some null, sizes and slides in any duration form, the slide
    dividing the size or not (or larger: rows between windows), several keys and a null key: one
    row per key and window ``[k*slide, k*slide + size)`` holding a row, as
    exact_oracle.hopping_windows says; a long sum outside int64 fails the job naming it."""
    from winagg.spark import sliding

    groups = groups + [NEAR_LIMIT]
    names = [None if null_key and g == 0 else f"k{g}" for g in range(len(groups))]
    note(repr((names, groups)))
    data = [(names[g], None if t is None else _stamp(base + t, unit, ntz), spec["x"][j], spec["y"][j])
            for g, spec in enumerate(groups) for j, t in enumerate(spec["t"])]
    df = spark.createDataFrame(data, f"k string, t {'timestamp_ntz' if ntz else 'timestamp'}, x double, y long")
    aggs = hop_aggs()
    want, overflows = {}, {}
    for g, spec in enumerate(groups):
        times = [None if t is None else base + t for t in spec["t"]]
        for start, _, rows in X.hopping_windows(times, size, slide):
            ys = [spec["y"][j] for j in rows]
            want[(names[g], start)] = ([spec["x"][j] for j in rows], ys)
            total = X.aggregate("sum", ys, integer=True)
            if X.must_overflow(total):
                overflows[(names[g], start)] = total.exact
    window = dict(partition_by="k", order_by="t", range=_duration(size, unit, forms[0]),
                  slide=_duration(slide, unit, forms[1]))
    event("a long sum leaves int64" if overflows else "every long sum fits int64")
    if overflows:
        with pytest.raises(Exception) as raised:
            sliding(df, aggs=aggs, **window).collect()
        found = OVERFLOW.search(str(raised.value))
        assert found, f"expected an OverflowError naming one of {overflows}, got {str(raised.value)[-2000:]}"
        key = None if found[1] == "None" else found[1].strip("'")
        start, end = _micros(found[2]), _micros(found[3])
        micros = UNITS[unit][0]
        assert start % micros == 0 and (key, start // micros) in overflows, (found[0], overflows)
        assert end - start == size * micros and int(found[4]) == overflows[(key, start // micros)], found[0]
        del aggs["y_sum"]  # the rest, without the sum that cannot be answered
    out = sliding(df, aggs=aggs, **window)
    assert out.columns == ["k", "window_start", "window_end", *aggs]
    types = dict(out.dtypes)
    assert [types[name] for name in aggs if name.startswith("y_")] == \
        ["double" if name == "y_mean" else "bigint" for name in aggs if name.startswith("y_")]
    _check_windows(_window_rows(out, ntz), want, unit, size, aggs)


def test_long_min_and_max_are_exact_or_refused(spark):
    """A long column's min and max keep its type (the sliding docstring): row and range frames
    answer the long itself at int64's ends; hopping windows (batch, streaming panes and per-key
    trees, fed directly) keep float64, so they answer longs within 2**53 exactly and refuse one
    beyond it by name instead of rounding it. One value a key, so each answer is that value."""
    from pyspark.sql import functions as F

    from winagg import aggregations
    from winagg.spark import sliding
    from winagg.spark.hopping import HoppingWindows
    from winagg.spark.panes import PaneCombine, PaneWindows, pane_parts, pane_schema
    from winagg.spark.partition import Output

    far = [2 ** 53 + 1, -(2 ** 53) - 1, 2 ** 62 - 1, X.INT64_MAX - 1, X.INT64_MAX, X.INT64_MIN + 1, X.INT64_MIN]
    near = [2 ** 53, -(2 ** 53), 2 ** 53 - 1, 0, -1]
    outputs = [Output(name, "y", aggregations.get(name[2:]), pa.int64()) for name in ("y_min", "y_max")]
    key_fields = [pa.field("k", pa.string())]
    minute = 60_000_000_000

    def check(got, keys, values, where):
        bad = [f"{where} {key} {name}: {message}" for key, value in zip(keys, values) for name in ("y_min", "y_max")
               if (message := X.aggregate(name[2:], [value], integer=True).check(got[key][name]))]
        assert not bad, "; ".join(bad)

    def panes(values):
        keys = [f"k{j}" for j in range(len(values))]
        parts = pane_parts(outputs, {"y": pa.int64()})
        combine = PaneCombine(["k"], "t", minute, parts, pane_schema(key_fields, parts))
        table = combine.combine(pa.table({"k": keys, "t": pa.array([0] * len(values), pa.timestamp("ns", "UTC")),
                                          "y": pa.array(values, pa.int64())}))
        closed, _ = PaneWindows(outputs, minute, minute, ["k"], parts, key_fields).step(table, math.inf)
        return {row["k"]: row for row in closed.to_pylist()}

    def trees(value):
        windows = HoppingWindows(outputs, minute, minute)
        closed = windows.step(pd.DataFrame({"y": pd.array([value], "Int64")}), np.array([0], np.int64), math.inf)
        return closed.to_pylist()[0]

    check(panes(near), [f"k{j}" for j in range(len(near))], near, "streaming panes")
    check({f"k{j}": trees(v) for j, v in enumerate(near)}, [f"k{j}" for j in range(len(near))], near, "per-key trees")
    for value in far:
        for where, run in (("streaming panes", lambda: panes([value])), ("per-key trees", lambda: trees(value))):
            with pytest.raises(OverflowError, match=f"'y' holds {value}, beyond 2\\*\\*53"):
                run()
    values = far + near
    keys = [f"k{j}" for j in range(len(values))]
    df = spark.createDataFrame([(key, j, _stamp(j, "min", False), v) for j, (key, v) in enumerate(zip(keys, values))],
                               "k string, n long, t timestamp, y long")
    aggs = {"y_min": ("min", "y"), "y_max": ("max", "y")}
    for window in (dict(order_by="n", rows=1), dict(order_by="n", range=0)):
        check({row["k"]: row for row in sliding(df, partition_by="k", aggs=aggs, **window).collect()}, keys, values,
              window)
    hopping = dict(order_by="t", range="1 minute", slide="1 minute")
    check({row["k"]: row for row in sliding(df.where(F.col("y").between(-2 ** 53, 2 ** 53)), partition_by="k", aggs=aggs,
                                            **hopping).collect()}, keys[len(far):], near, hopping)
    with pytest.raises(Exception, match="'y' holds .*, beyond 2"):
        sliding(df, partition_by="k", aggs=aggs, **hopping).collect()


# ---------------------------------------------------------------- hopping windows, streaming
STREAM_KEYS = ("k0", "k1", None)
#: 2024-03-01 in minutes from the epoch: the streaming case's times (Spark's watermark starts at the epoch)
STREAM_BASE = (dt.datetime(2024, 3, 1) - EPOCH) // dt.timedelta(minutes=1)
STREAM_SCHEMA = "id long, k string, t timestamp, x double, y long"


@st.composite
def stream_rows(draw, span):
    """One micro-batch's rows: (key, minute within ``span``, x, y), in arrival order."""
    n = draw(st.integers(0, 12))
    return [(draw(st.sampled_from(STREAM_KEYS)), draw(st.integers(0, span - 1)), draw(doubles), draw(longs))
            for _ in range(n)]


def _stream_case(first, second, lateness):
    """Three micro-batches' rows, ``[(batch, key, minute or None, x, y)]``: the generated ones (the
    first batch never empty) and NEAR_LIMIT's in the first; in the second, a row exactly at the
    watermark and a row without a time; in the third, rows of a key met anew (``new``) and of a
    known one around the watermark that the second micro-batch's late rows are measured by (Spark
    takes them into their windows that end after it) and the one it closes windows by, and a row
    far ahead (its key ``~end``) whose watermark, in the micro-batch without data that follows,
    closes every other window."""
    rows = [(0, key, STREAM_BASE + t, x, y) for key, t, x, y in first]
    rows += [(0, "near", STREAM_BASE + t, x, y) for t, x, y in zip(NEAR_LIMIT["t"], NEAR_LIMIT["x"], NEAR_LIMIT["y"])]
    watermark = max(r[2] for r in rows) - lateness
    rows += [(1, key, STREAM_BASE + t, x, y) for key, t, x, y in second]
    rows += [(1, "k0", watermark, 2.5, -3), (1, "k1", None, 1.0, 1)]
    closing = max(r[2] for r in rows if r[2] is not None) - lateness  # the third micro-batch's watermark
    rows += [(2, "new", watermark + d, float(d), d) for d in (-7, -4, -2, -1, 0, 1, 3)]
    rows += [(2, "new", closing + d, 0.25, d) for d in (-1, 0, 2)]
    rows += [(2, "k1", watermark - 1, -0.5, 11), (2, "k1", closing, 4.0, 12)]
    rows += [(2, "~end", STREAM_BASE + 10 ** 5, None, None)]
    return rows


# one query per try (about 10 s once Spark's Python workers run); no shrinking, the message names
# the key, window and column
@pytest.mark.parametrize("kept", ["panes", "per-key trees"])
@X.examples(ci=1, deep=20, phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(first=stream_rows(20).filter(bool), second=stream_rows(30), size=st.integers(1, 5), slide=st.integers(1, 5),
       lateness=st.integers(0, 8))
# slide > size: rows between two windows behind the watermark are in none, neither late nor counted
@example(first=[(None, 1, 11.0, 192), ("k0", 13, None, None), ("k1", 15, -8743287310878298.0, 512),
                ("k1", 10, 1e300, 21252), ("k1", 19, None, -34)],
         second=[("k0", 26, -20.0, None), ("k0", 23, None, 22763), ("k1", 12, 5e-324, None), ("k1", 28, -7.0, None),
                 ("k0", 13, 1.0, None), ("k0", 15, None, None)], size=4, slide=5, lateness=5)
# a kept key's windows that Spark counts as reported while the key got no call (no row of it in
# them): a row of the key in the next micro-batch must not open one of them
@example(first=[("k0", 15, -math.inf, -700), ("k0", 19, -831573.2937255587, 369), ("k1", 17, math.nan, -5),
                (None, 7, math.nan, -499), ("k1", 17, -1e300, -999), (None, 12, -6237889335011659.0, None),
                ("k0", 4, None, None), (None, 9, 19.0, -352), (None, 13, None, None), ("k0", 13, -9.0, -98375679),
                ("k0", 1, 15.0, -1_099_511_627_776)],
         second=[(None, 6, math.nan, None)], size=4, slide=1, lateness=3)
def test_hopping_stream_equals_the_oracle(spark, kept, first, second, size, slide, lateness):
    """``sliding_stream(..., slide=)`` fed three Parquet files, one micro-batch each: windows that close
    in a later micro-batch with rows of several, rows out of order and behind the watermark (they
    still count in the windows not reported before their micro-batch), one exactly at it, one
    without a time, a key met in the third micro-batch behind the watermark, doubles with NaN, nulls
    and infinities, long sums at int64's ends; in append mode, the windows and the dropped count
    exact_oracle.stream_hopping_windows says (Spark's window()), whether the stateful operator keeps
    panes (count, sum, mean, min, max) or, with a std among the outputs, a tree per key and output."""
    import pyarrow.parquet as pq

    from winagg.spark.pipeline import stamp_in_order
    from winagg.spark.streaming import sliding_stream

    rows = _stream_case(first, second, lateness)
    note(repr(rows))
    windows, dropped = X.stream_hopping_windows([r[1] for r in rows], [r[2] for r in rows], [r[0] for r in rows],
                                                size, slide, lateness)
    want = {where: ([rows[j][3] for j in members], [rows[j][4] for j in members])
            for where, (_, members) in windows.items()}
    assert not any(X.must_overflow(X.aggregate("sum", ys, integer=True)) for _, ys in want.values())
    aggs = hop_aggs()
    if kept == "per-key trees":
        aggs["x_std"] = ("std", "x")
    schema = pa.schema([("id", pa.int64()), ("k", pa.string()), ("t", pa.timestamp("us", "UTC")),
                        ("x", pa.float64()), ("y", pa.int64())])
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        (folder / "in").mkdir()
        paths = []
        for n in range(3):
            mine = [(j, *r[1:]) for j, r in enumerate(rows) if r[0] == n]
            paths.append(folder / "in" / f"part-{n}.parquet")
            pq.write_table(pa.table({"id": [r[0] for r in mine], "k": [r[1] for r in mine],
                                     "t": [None if r[2] is None else _stamp(r[2], "min", False) for r in mine],
                                     "x": [r[3] for r in mine], "y": [r[4] for r in mine]}, schema=schema), paths[-1])
        stamp_in_order(paths)
        partitions = spark.conf.get("spark.sql.shuffle.partitions")
        spark.conf.set("spark.sql.shuffle.partitions", "1")  # one stateful task a micro-batch: quicker
        try:
            source = spark.readStream.schema(STREAM_SCHEMA).option("maxFilesPerTrigger", 1) \
                .parquet(str(folder / "in"))
            stream, counter = sliding_stream(source, partition_by="k", order_by="t", range=f"{size} minutes",
                                             slide=dt.timedelta(minutes=slide), aggs=aggs, lateness=f"{lateness}min")
            query = (stream.writeStream.format("parquet").option("path", str(folder / "out"))
                     .option("checkpointLocation", str(folder / "ck")).trigger(availableNow=True).start())
            query.awaitTermination()
        finally:
            spark.conf.set("spark.sql.shuffle.partitions", partitions)
        got = _window_rows(spark.read.parquet(str(folder / "out")), ntz=False)
    per_batch = [(p["batchId"], p["numInputRows"], counter.of(p)) for p in query.recentProgress]
    assert counter.value == dropped, (f"{counter.value} rows dropped, the oracle drops {dropped}; "
                                      f"(micro-batch, rows, dropped): {per_batch}")
    _check_windows(got, want, "min", size, aggs)
