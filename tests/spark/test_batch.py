"""winagg.spark.sliding on real Spark (local mode), against Spark's own window functions."""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from oracle import CONCAT

from winagg.spark import SparkInputError, sliding

NATIVE = {"sum": "sum", "min": "min", "max": "max", "mean": "avg", "count": "count", "stddev": "stddev"}


@pytest.fixture
def data(kind_spark):
    """Three keys and a null key, order values with ties and nulls, values with nulls, in random order,
    on a classic and on a Spark Connect session."""
    rng = random.Random(7)
    rows = []
    for i in range(3000):
        key = rng.choice(["JFK", "LGA", "EWR", None])
        time = None if rng.random() < 0.02 else rng.randrange(0, 600)
        value = None if rng.random() < 0.1 else round(rng.uniform(-50, 300), 2)
        rows.append((i, key, time, value))
    rng.shuffle(rows)
    return kind_spark.createDataFrame(rows, "id long, origin string, t long, delay double")


def _assert_same_columns(joined, pairs):
    for row in joined:
        for mine, theirs in pairs:
            got, want = row[mine], row[theirs]
            assert (got is None) == (want is None), (row, mine)
            if want is not None:
                assert math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-6), (row, mine, got, want)


def _native(df, frame_spec, order):
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    window = Window.partitionBy("origin").orderBy(*order)
    window = window.rowsBetween(*frame_spec[1]) if frame_spec[0] == "rows" else window.rangeBetween(*frame_spec[1])
    return df.select("id", *[getattr(F, fn)("delay").over(window).alias(f"native_{name}") for name, fn in NATIVE.items()])


@pytest.mark.parametrize("rows", [1, 7, 100])
def test_row_frames_equal_spark_window_functions(data, rows):
    aggs = {name: (name, "delay") for name in NATIVE}
    mine = sliding(data, partition_by="origin", order_by=["t", "id"], rows=rows, aggs=aggs)
    assert mine.columns == data.columns + list(NATIVE)
    native = _native(data, ("rows", (-(rows - 1), 0)), ["t", "id"])
    joined = mine.join(native, "id").collect()
    assert len(joined) == 3000
    _assert_same_columns(joined, [(name, f"native_{name}") for name in NATIVE])


@pytest.mark.parametrize("span", [0, 5, 60])
def test_range_frames_equal_spark_window_functions_with_ties_and_null_times(data, span):
    aggs = {name: (name, "delay") for name in NATIVE}
    mine = sliding(data, partition_by="origin", order_by="t", range=span, aggs=aggs)
    native = _native(data, ("range", (-span, 0)), ["t"])
    joined = mine.join(native, "id").collect()
    assert len(joined) == 3000
    _assert_same_columns(joined, [(name, f"native_{name}") for name in NATIVE])


def test_integer_inputs_keep_spark_types(spark):
    df = spark.createDataFrame([("a", i, i * 3 % 7) for i in range(20)], "k string, t int, v int")
    out = sliding(df, partition_by="k", order_by="t", rows=3, aggs={"s": ("sum", "v"), "m": ("max", "v")})
    types = dict(out.dtypes)
    assert types["s"] == "bigint" and types["m"] == "int"
    got = [(r.s, r.m) for r in out.orderBy("t").collect()]
    values = [i * 3 % 7 for i in range(20)]
    assert got == [(sum(values[max(0, i - 2):i + 1]), max(values[max(0, i - 2):i + 1])) for i in range(20)]


def test_timestamp_range_as_a_duration_equals_spark_sql_interval_frames(spark):
    rng = random.Random(3)
    start = dt.datetime(2013, 1, 1, 5, 0)
    rows = [(i, rng.choice("AB"), start + dt.timedelta(minutes=rng.randrange(0, 600)), float(rng.randrange(-10, 90)))
            for i in range(800)]
    df = spark.createDataFrame(rows, "id long, carrier string, ts timestamp, delay double")
    mine = sliding(df, partition_by="carrier", order_by="ts", range="1 hour",
                   aggs={"max_1h": ("max", "delay"), "n_1h": ("count", "delay")})
    df.createOrReplaceTempView("flights_t")
    native = spark.sql("""SELECT id, max(delay) OVER w AS native_max, count(delay) OVER w AS native_n FROM flights_t
                          WINDOW w AS (PARTITION BY carrier ORDER BY ts
                                       RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW)""")
    joined = mine.join(native, "id").collect()
    assert len(joined) == 800
    _assert_same_columns(joined, [("max_1h", "native_max"), ("n_1h", "native_n")])
    seconds = sliding(df, partition_by="carrier", order_by="ts", range=3600, aggs={"m": ("max", "delay")})
    assert sorted(r.m for r in seconds.collect()) == sorted(r.max_1h for r in mine.collect())


def test_any_monoid_runs_in_python_workers_in_order(spark):
    rows = [(i, "ab"[i % 2], i // 2, i) for i in range(40)]
    df = spark.createDataFrame(rows, "id long, k string, t long, v long")
    out = sliding(df, partition_by="k", order_by="t", rows=3, aggs={"trail": (CONCAT, "v")})
    got = {r.id: r.trail for r in out.collect()}
    for i in range(40):
        same_key = [j for j in range(0, i + 1) if j % 2 == i % 2][-3:]
        assert got[i] == "".join(f"{j};" for j in same_key)


def test_one_key_without_partition_columns(spark):
    df = spark.createDataFrame([(i, float(i)) for i in range(50)], "t long, v double")
    out = sliding(df, partition_by=None, order_by="t", range=4, aggs={"s": ("sum", "v")}).orderBy("t").collect()
    assert [r.s for r in out] == [float(sum(range(max(0, t - 4), t + 1))) for t in range(50)]


@pytest.mark.parametrize("kwargs,message", [
    (dict(partition_by="nope", order_by="t", rows=3, aggs={"m": ("max", "v")}), "partition_by column 'nope'"),
    (dict(partition_by="k", order_by="missing", rows=3, aggs={"m": ("max", "v")}), "order_by column 'missing'"),
    (dict(partition_by="k", order_by="t", rows=3, aggs={"m": ("max", "w")}), "input column 'w'"),
    (dict(partition_by="k", order_by="t", aggs={"m": ("max", "v")}), "exactly one of rows"),
    (dict(partition_by="k", order_by="t", rows=0, aggs={"m": ("max", "v")}), "rows must be"),
    (dict(partition_by="k", order_by="t", range="1 hour", aggs={"m": ("max", "v")}), "integer column"),
    (dict(partition_by="k", order_by="k", range=3, aggs={"m": ("max", "v")}), "numeric, date or timestamp"),
    (dict(partition_by="k", order_by="t", rows=3, aggs={"v": ("max", "v")}), "already exists"),
    (dict(partition_by="k", order_by="t", rows=3, aggs={"m": ("medain", "v")}), "unknown aggregation"),
    (dict(partition_by="k", order_by="t", rows=3, aggs={"m": ("max", "k")}), "give it as a third element"),
])
def test_bad_arguments_are_named(spark, kwargs, message):
    df = spark.createDataFrame([("a", 1, 1.0)], "k string, t long, v double")
    with pytest.raises(Exception, match=message):
        sliding(df, **kwargs)


@pytest.mark.parametrize("value,column,want", [
    (np.timedelta64(500, "ms"), "timestamp", 500_000_000),  # its length, not 500 seconds
    (0.1, "timestamp", 100_000_000),  # a number of seconds, as written
    (pd.offsets.Hour(2), "timestamp", 7_200_000_000_000),
    (pd.Timedelta("2D"), "date", 2),
])
def test_a_range_is_read_by_the_front_door_in_the_columns_unit(value, column, want):
    from pyspark.sql.types import DateType, TimestampType

    from winagg.spark.batch import range_span

    assert range_span(value, {"timestamp": TimestampType(), "date": DateType()}[column]) == want


@pytest.mark.parametrize("value,column,message", [
    ("1 month", "timestamp", "range '1 month' is not a fixed duration"),
    (np.timedelta64(1500, "ps"), "timestamp", "range .* is not a whole number of nanoseconds"),
    (1e-10, "timestamp", "range 1e-10 seconds is not a whole number of nanoseconds"),
    ("36h", "date", "range '36h' is not a whole number of days"),
])
def test_a_range_the_front_door_refuses_raises_naming_it(value, column, message):
    from pyspark.sql.types import DateType, TimestampType

    from winagg.spark.batch import range_span

    with pytest.raises(ValueError, match=message):
        range_span(value, {"timestamp": TimestampType(), "date": DateType()}[column])


USER_MODULE = """
import winagg


def _join(older, younger):
    return older + younger


def _tag(item):
    return str(int(item))


JOINED = winagg.Monoid("", _join, _tag, name="joined")
"""


def test_a_monoid_from_a_module_only_the_driver_imports_runs_in_spark(tmp_path):
    """Batch workers and the streaming state processes get the monoid's code, not just its name."""
    modules = tmp_path / "modules"
    modules.mkdir()
    (modules / "usermonoids.py").write_text(USER_MODULE)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    job = Path(__file__).with_name("user_module_job.py")
    done = subprocess.run([sys.executable, str(job), str(modules), str(tmp_path / "work")], env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    # rows=3 per key (k = t % 2): the values of t - 4, t - 2 and t, oldest first
    assert result["batch"] == {str(t): "".join(str(u) for u in range(t % 2, t + 1, 2)[-3:]) for t in range(12)}
    # range 2 minutes: minutes m - 2 .. m; the last event waits for a watermark past it
    assert result["stream"] == {"00:00": "1", "00:01": "12", "00:02": "123", "00:03": "234", "00:04": "345"}


def test_nan_is_missing_like_null(spark):
    # NaN is a missing value in winagg as in pandas: a window of NaN and null only is null,
    # and NaN is skipped where the window has numbers (Spark's own sum would give NaN)
    rows = [("a", 1, 1.0), ("a", 2, float("nan")), ("a", 3, None), ("a", 4, float("nan")), ("a", 5, 4.0)]
    df = spark.createDataFrame(rows, "k string, t long, v double")
    out = sliding(df, partition_by="k", order_by="t", rows=2,
                  aggs={"s": ("sum", "v"), "n": ("count", "v"), "m": ("max", "v")}).orderBy("t").collect()
    assert [r["s"] for r in out] == [1.0, 1.0, None, None, 4.0]
    assert [r["n"] for r in out] == [1, 1, 0, 0, 1]
    assert [r["m"] for r in out] == [1.0, 1.0, None, None, 4.0]


#: Longs near int64's limits (a null among them): sums of two or three neighbours fit int64 (2**63 - 1
#: at most), while the running total of the column passes it, as subtracting prefix sums would.
BIG = 2 ** 62
LONGS = [BIG, BIG - 1, -5, BIG, BIG - 1, None, BIG - 1, BIG, -BIG, -7, -2 ** 63 + 7, 2 ** 53 + 1, -3, 2 ** 63 - 1]


#: Three peers summing to 1443950364469935044, whose mean rounds correctly to 4.81316788156645e+17;
#: dividing the float64 of the sum (60 above it) gives the next float64 up, 4.8131678815664506e+17.
PEERS = [2 ** 60, 291028859863075723, 12345]


def _longs(spark, values):
    """(id, k, t, v): key "a" holds ``values`` at t = 0, 1, ... (t 6 twice: peers of a range frame), key "b" a
    few small ones, key "c" the :data:`PEERS` at t = 0."""
    times = [i if i < 7 else i - 1 for i in range(len(values))]
    rows = [(i, "a", t, v) for i, (t, v) in enumerate(zip(times, values))]
    rows += [(100 + i, "b", i, v) for i, v in enumerate([1, -2, None, 3])]
    rows += [(200 + i, "c", 0, v) for i, v in enumerate(PEERS)]
    return rows, spark.createDataFrame(rows, "id long, k string, t long, v long")


def _frame_values(rows, row, frame):
    """The non-null values of ``row``'s frame: ("rows", n) the n rows before it by (t, id), ("range", s) t - s .. t."""
    kind, size = frame
    mine = sorted((r for r in rows if r[1] == row[1]), key=lambda r: (r[2], r[0]))
    if kind == "rows":
        at = mine.index(row)
        inside = mine[max(0, at - size + 1):at + 1]
    else:
        inside = [r for r in mine if row[2] - size <= r[2] <= row[2]]
    return [r[3] for r in inside if r[3] is not None]


@pytest.mark.parametrize("frame", [("rows", 2), ("range", 1)])
def test_long_sums_near_int64_limits_are_exact_and_means_correctly_rounded(spark, frame):
    """No wrap-around and no false overflow: every frame sum is the exact Python sum, its mean the
    correctly rounded quotient of that sum, and the sums equal Spark's own (ANSI) sum over the frame."""
    from fractions import Fraction

    from pyspark.sql import Window
    from pyspark.sql import functions as F

    rows, df = _longs(spark, LONGS)
    kind, size = frame
    bounds = {"rows": dict(rows=size), "range": dict(range=size)}[kind]
    order = ["t", "id"] if kind == "rows" else "t"
    out = sliding(df, partition_by="k", order_by=order, aggs={"s": ("sum", "v"), "m": ("mean", "v")}, **bounds)
    assert dict(out.dtypes)["s"] == "bigint" and dict(out.dtypes)["m"] == "double"
    window = Window.partitionBy("k").orderBy(*([order] if isinstance(order, str) else order))
    window = window.rowsBetween(-(size - 1), 0) if kind == "rows" else window.rangeBetween(-size, 0)
    native = df.select("id", F.sum("v").over(window).alias("native_s"))
    got = {r.id: r for r in out.join(native, "id").collect()}
    for row in rows:
        values = _frame_values(rows, row, frame)
        want_sum = sum(values) if values else None
        want_mean = float(Fraction(sum(values), len(values))) if values else None
        assert (got[row[0]].s, got[row[0]].m) == (want_sum, want_mean), (row, values)
        assert got[row[0]].native_s == want_sum, row
    assert max(abs(sum(v for v in LONGS[:i] if v is not None)) for i in range(len(LONGS))) > 2 ** 63


@pytest.mark.parametrize("frame", [("rows", 3), ("range", 2)])
def test_a_long_sum_outside_int64_raises_naming_the_column_and_the_row(spark, frame):
    """2**62 + (2**62 - 1) + 1 is 2**63: Spark's sum of a long is a long, so it raises (as Spark's
    ANSI sum does) instead of wrapping around to -2**63."""
    _, df = _longs(spark, [BIG, BIG - 1, 1, 0])
    kind, size = frame
    bounds = {"rows": dict(rows=size), "range": dict(range=size)}[kind]
    out = sliding(df, partition_by="k", order_by="t", aggs={"total": ("sum", "v")}, **bounds)
    with pytest.raises(Exception, match=r"OverflowError: output column 'total': the sum of the long column 'v' "
                                        r"over the window of the row with k='a', t=2 is 9223372036854775808, "
                                        r"outside int64"):
        out.collect()
    # the mean of the same frames is defined (the exact sum over 3 values): Spark's avg gives it too
    means = sliding(df, partition_by="k", order_by="t", aggs={"m": ("mean", "v")}, **bounds)
    assert {r.t: r.m for r in means.where("k = 'a'").collect()}[2] == 2 ** 63 / 3


def test_an_aggregate_of_the_order_column_alone_without_keys(spark):
    # the windows read one column only: Spark hands the UDF one array per batch, not a tuple
    df = spark.createDataFrame([(t,) for t in [5, 1, 3, 2, 9]], "t long")
    rows = sliding(df, partition_by=None, order_by="t", rows=2, aggs={"s": ("sum", "t")}).collect()
    assert [(r["t"], r["s"]) for r in rows] == [(1, 1), (2, 3), (3, 5), (5, 8), (9, 14)]
    rows = sliding(df, partition_by=None, order_by="t", range=2, aggs={"s": ("sum", "t")}).collect()
    assert [(r["t"], r["s"]) for r in rows] == [(1, 1), (2, 3), (3, 6), (5, 8), (9, 9)]
