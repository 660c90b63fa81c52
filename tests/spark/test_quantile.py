"""Exact quantiles and medians of Spark frames against Spark's ``percentile`` over the same
``Window`` frame; the quantile sketch in a hopping stream against each window's exact quantile."""

from __future__ import annotations

import math
import random

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from winagg.spark import SparkInputError, sliding

#: The exact outputs compared with Spark's percentile: (aggs entry, its q).
OUTPUTS = {"q0": (("quantile", "x", 0), 0.0), "q50": (("quantile", "x", 0.5), 0.5),
           "q90": (("quantile", "x", 0.9), 0.9), "q100": (("quantile", "x", 1), 1.0),
           "med": (("median", "x"), 0.5), "n90": (("quantile", "n", 0.9), 0.9)}


@pytest.fixture
def data(kind_spark):
    """Three keys and a null key; order values with ties and nulls; values with ties (halves),
    nulls, a key whose values are all null, and a long column; in random order; on a classic
    and on a Spark Connect session."""
    rng = random.Random(41)
    rows = []
    for i in range(400):
        key = rng.choice(["JFK", "LGA", "EWR", None, "NUL"])
        time = None if rng.random() < 0.04 else rng.randrange(0, 80)
        value = None if key == "NUL" or rng.random() < 0.15 else rng.randrange(-20, 40) / 2
        rows.append((i, key, time, value, None if value is None else rng.randrange(-10 ** 6, 10 ** 6)))
    rng.shuffle(rows)
    return kind_spark.createDataFrame(rows, "id long, origin string, t long, x double, n long")


def _spark_percentiles(df, window):
    from pyspark.sql import functions as F

    return df.select("id", *[F.percentile(spec[1], q).over(window).alias(f"spark_{name}")
                             for name, (spec, q) in OUTPUTS.items()])


def _assert_equal_to_spark(mine, spark_answers):
    joined = mine.join(spark_answers, "id").collect()
    assert len(joined) == 400
    for row in joined:
        for name in OUTPUTS:
            assert row[name] == row[f"spark_{name}"], (row, name)  # the same bits, or both null
    assert any(row["q90"] is None for row in joined)  # all-null frames were met


@pytest.mark.parametrize("rows", [1, 6])
def test_row_frames_equal_spark_percentile(data, rows):
    from pyspark.sql import Window

    mine = sliding(data, partition_by="origin", order_by=["t", "id"], rows=rows,
                   aggs={name: spec for name, (spec, q) in OUTPUTS.items()})
    window = Window.partitionBy("origin").orderBy("t", "id").rowsBetween(-(rows - 1), 0)
    _assert_equal_to_spark(mine, _spark_percentiles(data, window))


@pytest.mark.parametrize("span", [0, 9])
def test_range_frames_equal_spark_percentile_with_peers_and_null_times(data, span):
    from pyspark.sql import Window

    mine = sliding(data, partition_by="origin", order_by="t", range=span,
                   aggs={name: spec for name, (spec, q) in OUTPUTS.items()})
    window = Window.partitionBy("origin").orderBy("t").rangeBetween(-span, 0)
    _assert_equal_to_spark(mine, _spark_percentiles(data, window))


def _percentile(values, q):
    """Spark's percentile of the non-null values: linear between the values around rank q * (n - 1)."""
    ordered = sorted(v for v in values if v is not None)
    if not ordered:
        return None
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


@pytest.mark.parametrize("frame", [("rows", 5), ("range", 7)])
def test_frames_carried_across_small_batches_give_every_row_its_frames_percentile(frame):
    """Without Spark: a partition's batches of 13 rows, keys and groups of peers running across
    them, each answer against the percentile of the row's frame by brute force."""
    from winagg.aggregations import Quantile
    from winagg.spark.partition import Frame, Output, PartitionWindows

    rng = random.Random(43)
    rows = []
    for key in ("a", "b", "c"):
        times = sorted(rng.randrange(0, 40) for _ in range(rng.randrange(1, 60)))
        rows += [(key, None) for _ in range(rng.randrange(0, 3))]  # null order values sort first
        rows += [(key, t) for t in times]
    rows = [(k, t, None if rng.random() < 0.2 else rng.randrange(-9, 9) / 4) for k, t in rows]
    table = pa.table({"k": [r[0] for r in rows], "t": pa.array([r[1] for r in rows], pa.int64()),
                      "x": pa.array([r[2] for r in rows], pa.float64())})
    kind, size = frame
    windows = PartitionWindows(["k"], "t", Frame(rows=size) if kind == "rows" else Frame(span=size),
                               [Output("p", "x", Quantile(0.9), pa.float64())])
    got = pa.Table.from_batches(list(windows(table.to_batches(max_chunksize=13)))).column("p").to_pylist()
    for i, (key, time, _) in enumerate(rows):
        mine = [j for j, r in enumerate(rows) if r[0] == key]
        if kind == "rows":
            inside = mine[max(0, mine.index(i) - size + 1):mine.index(i) + 1]
        elif time is None:
            inside = [j for j in mine if rows[j][1] is None]
        else:
            inside = [j for j in mine if rows[j][1] is not None and time - size <= rows[j][1] <= time]
        assert got[i] == _percentile([rows[j][2] for j in inside], 0.9), (i, rows[i])


def test_quantiles_are_doubles_and_nan_is_skipped_like_null(spark):
    rows = [("a", 1, 4.0), ("a", 2, float("nan")), ("a", 3, None), ("a", 4, 1.0), ("a", 5, float("nan"))]
    df = spark.createDataFrame(rows, "k string, t long, v double")
    out = sliding(df, partition_by="k", order_by="t", rows=3, aggs={"m": ("median", "v")})
    assert out.schema["m"].dataType.simpleString() == "double"
    assert [r["m"] for r in out.orderBy("t").collect()] == [4.0, 4.0, 4.0, 1.0, 1.0]


@pytest.mark.parametrize("spec, message", [
    (("quantile", "x", 1.5), r"aggs\['p'\]: q must be in \[0, 1\], got 1.5"),
    (("quantile", "x", -0.1), r"aggs\['p'\]: q must be in \[0, 1\]"),
    (("quantile", "x", "0.9"), r"aggs\['p'\]: q must be a number in \[0, 1\]"),
    (("quantile", "x"), r"aggs\['p'\]: an exact quantile is \('quantile', column, q\)"),
    (("quantile", "origin", 0.5), r"aggs\['p'\]: quantile needs a numeric column; 'origin' is string"),
    (("median", "origin"), r"aggs\['p'\]: median needs a numeric column; 'origin' is string"),
])
def test_a_bad_quantile_is_refused_naming_the_output(data, spec, message):
    with pytest.raises(SparkInputError, match=message):
        sliding(data, partition_by="origin", order_by="t", rows=3, aggs={"p": spec})


def test_the_quantile_sketch_of_each_hopping_stream_window_stays_within_its_bound(spark, tmp_path):
    """The sketch's bound (relative accuracy 1%) around each window's exact lower quantile."""
    from winagg.aggregations import QuantileSketch
    from winagg.spark import sliding_stream
    from winagg.spark.pipeline import stamp_in_order

    rng = random.Random(42)
    base = pd.Timestamp("2024-03-01", tz="UTC")
    events = [(i, rng.choice(["a", "b"]), rng.randrange(0, 60), rng.lognormvariate(3, 1.5)) for i in range(300)]
    events.sort(key=lambda e: e[2] + rng.randrange(0, 5))  # arrival order: a few minutes out of order
    events.append((-1, "~end", 10 ** 5, 1.0))  # closes every window; its key is not compared
    folder = tmp_path / "in"
    folder.mkdir()
    paths = []
    for number, chunk in enumerate(np.array_split(np.arange(len(events)), 2)):
        part = [events[i] for i in chunk]
        table = pa.table({"id": [e[0] for e in part], "k": [e[1] for e in part],
                          "ts": [base + pd.Timedelta(minutes=e[2]) for e in part], "x": [e[3] for e in part]},
                         schema=pa.schema([("id", pa.int64()), ("k", pa.string()), ("ts", pa.timestamp("us", "UTC")),
                                           ("x", pa.float64())]))
        paths.append(folder / f"part-{number}.parquet")
        pq.write_table(table, paths[-1])
    stamp_in_order(paths)
    source = spark.readStream.schema("id long, k string, ts timestamp, x double") \
        .option("maxFilesPerTrigger", 1).parquet(str(folder))
    stream, dropped = sliding_stream(source, partition_by="k", order_by="ts", range="10 minutes",
                                     slide="5 minutes", aggs={"p90": (QuantileSketch(0.9), "x")},
                                     lateness="30 minutes")
    query = (stream.writeStream.format("parquet").option("path", str(tmp_path / "out"))
             .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    query.awaitTermination()
    assert dropped.value == 0
    got = spark.read.parquet(str(tmp_path / "out")).toPandas()
    got = got[got["k"] != "~end"]
    got["start"] = (pd.to_datetime(got["window_start"], utc=True) - base) // pd.Timedelta(minutes=1)
    windows = 0
    for key in ("a", "b"):
        for start in range(-5, 60, 5):
            inside = sorted(e[3] for e in events if e[1] == key and start <= e[2] < start + 10)
            if not inside:
                continue
            lower = inside[math.floor(0.9 * (len(inside) - 1))]  # the bound's reference: the lower quantile
            row = got[(got["k"] == key) & (got["start"] == start)]
            assert len(row) == 1, (key, start)
            assert abs(row["p90"].iloc[0] - lower) <= 0.01 * lower, (key, start, row["p90"].iloc[0], lower)
            windows += 1
    assert len(got) == windows
