"""Hopping windows (``slide=``): the per-key engine against brute force, batch and stream against Spark's window()."""

from __future__ import annotations

import datetime as dt
import math
import pickle
import random
from pathlib import Path

import cloudpickle
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from oracle import CONCAT

from winagg import aggregations
from winagg.spark import SparkInputError, sliding
from winagg.spark.hopping import HoppingWindows
from winagg.spark.partition import Output, result_type
from winagg.spark.pipeline import stamp_in_order

MINUTE = 60_000_000_000  # nanoseconds, winagg's time unit
#: The aggregations compared with Spark's (the kernels the per-event streaming tests compile too).
NATIVE = {"max": "max", "count": "count", "sum": "sum", "mean": "avg"}


def _events(count, seed, keys=("JFK", "LGA", None)):
    """(id, key, minute, value): ties in time, null values, an empty stretch of two hours, a null time."""
    rng = random.Random(seed)
    events = []
    for i in range(count):
        minute = rng.randrange(0, 120) + (240 if rng.random() < 0.5 else 0)  # nothing in [120, 240)
        value = None if rng.random() < 0.15 else float(rng.randrange(-20, 200))
        events.append((i, rng.choice(keys), minute, value))
    events.append((count, "JFK", None, 5.0))  # in no window
    return events


def _brute_force(events, size, slide):
    """Per (key, window start): max, count, sum, mean of the non-null values and their concatenation in time order."""
    result = {}
    for key in {e[1] for e in events}:
        mine = [e for e in events if e[1] == key and e[2] is not None]
        ks = {k for e in mine for k in range((e[2] - size) // slide + 1, e[2] // slide + 1)}
        for k in ks:
            inside = sorted((e for e in mine if k * slide <= e[2] < k * slide + size), key=lambda e: e[2])
            values = [e[3] for e in inside if e[3] is not None]
            result[(key, k * slide)] = (max(values) if values else None, len(values), sum(values) if values else None,
                                        sum(values) / len(values) if values else None,
                                        "".join(f"{v};" for v in values))
    return result


def _assert_close(got, want, what):
    assert (got is None or (isinstance(got, float) and math.isnan(got))) == (want is None), (what, got, want)
    if want is not None:
        assert got == pytest.approx(want, rel=1e-9), what


def test_one_key_fed_out_of_order_gives_every_window_as_brute_force():
    """Micro-batches out of order behind a watermark; slide 4 does not divide size 10 (panes of 2 minutes);
    a non-commutative monoid folds each window in time order (equal times in arrival order)."""
    events = [e for e in _events(400, seed=3, keys=("a",)) if e[2] is not None]
    random.Random(4).shuffle(events)
    names = ["max", "count", "sum", "mean"]
    outputs = [Output(n, "v", aggregations.get(n), result_type(aggregations.get(n), pa.float64())) for n in names]
    outputs.append(Output("trail", "v", CONCAT, pa.string()))
    windows = HoppingWindows(outputs, 10 * MINUTE, 4 * MINUTE)
    closed, on_time, watermark = [], [], -math.inf
    for chunk in np.array_split(np.arange(len(events)), 7):
        batch = [events[i] for i in chunk if events[i][2] * MINUTE >= watermark]  # late events are dropped
        on_time += batch
        frame = pd.DataFrame({"v": [e[3] for e in batch]})
        closed.append(windows.step(frame, np.array([e[2] * MINUTE for e in batch], np.int64), watermark))
        windows = pickle.loads(cloudpickle.dumps(windows)).bind(outputs)  # as Spark's state store keeps it
        watermark = max(watermark, max(e[2] for e in batch) * MINUTE - 30 * MINUTE)
    closed.append(windows.step(None, None, math.inf))
    got = pa.concat_tables([t for t in closed if t is not None]).to_pylist()
    want = _brute_force(on_time, 10, 4)
    assert len(on_time) < len(events)  # some were late
    assert [row["window_start"] for row in got] == sorted(start * MINUTE for _, start in want)
    assert len(windows) == 0
    for row in got:
        expected = want[("a", row["window_start"] // MINUTE)]
        assert row["window_end"] - row["window_start"] == 10 * MINUTE
        for name, value in zip(names, expected):
            _assert_close(row[name], value, (row["window_start"], name))
        assert row["trail"] == (expected[4] or None)


def _frame(spark, events):
    start = dt.datetime(2024, 3, 1, tzinfo=dt.timezone.utc)
    rows = [(i, key, None if minute is None else start + dt.timedelta(minutes=minute), value)
            for i, key, minute, value in events]
    return spark.createDataFrame(rows, "id long, origin string, ts timestamp, delay double")


def _native(df, size, slide):
    from pyspark.sql import functions as F

    aggs = [getattr(F, fn)("delay").alias(name) for name, fn in NATIVE.items()]
    grouped = df.groupBy("origin", F.window("ts", size, slide)).agg(*aggs)
    return grouped.select("origin", F.col("window.start").alias("window_start"),
                          F.col("window.end").alias("window_end"), *NATIVE).toPandas()


def _assert_equal_to_native(got: pd.DataFrame, want: pd.DataFrame):
    order = ["origin", "window_start"]
    got = got.sort_values(order, na_position="first").reset_index(drop=True)
    want = want.sort_values(order, na_position="first").reset_index(drop=True)
    assert len(got) == len(want)
    assert got["origin"].tolist() == want["origin"].tolist()
    assert (got["window_start"] == want["window_start"]).all() and (got["window_end"] == want["window_end"]).all()
    for name in NATIVE:
        assert (got[name].isna() == want[name].isna()).all(), name
        np.testing.assert_allclose(got[name][want[name].notna()].astype(float),
                                   want[name][want[name].notna()].astype(float), rtol=1e-9, err_msg=name)


@pytest.mark.parametrize("size, slide", [("10 minutes", "4 minutes"), ("15 minutes", "15 minutes")])
def test_batch_hopping_windows_equal_spark_window(kind_spark, size, slide):
    """Nulls, ties, a null key, a null time, two hours without rows, a slide that does not divide the size;
    on a classic and on a Spark Connect session."""
    df = _frame(kind_spark, _events(1500, seed=9))
    aggs = {name: (name, "delay") for name in NATIVE}
    mine = sliding(df, partition_by="origin", order_by="ts", range=size, slide=slide, aggs=aggs)
    assert mine.columns == ["origin", "window_start", "window_end", *NATIVE]
    _assert_equal_to_native(mine.toPandas(), _native(df, size, slide))


def test_batch_hopping_refuses_a_row_frame_and_a_number_order(spark):
    from pyspark.sql import functions as F

    df = _frame(spark, _events(5, seed=1)).withColumn("n", F.lit(1))
    with pytest.raises(SparkInputError, match="slide needs range="):
        sliding(df, partition_by="origin", order_by="ts", rows=3, slide="1 minute", aggs={"m": ("max", "delay")})
    with pytest.raises(SparkInputError, match="timestamp order_by"):
        sliding(df, partition_by="origin", order_by="n", range=5, slide=1, aggs={"m": ("max", "delay")})
    with pytest.raises(SparkInputError, match="window column"):
        sliding(df, partition_by="origin", order_by="ts", range="5 minutes", slide="1 minute",
                aggs={"window_end": ("max", "delay")})
    with pytest.raises(SparkInputError, match="slide '1500ns' is not a whole number of microseconds"):
        sliding(df, partition_by="origin", order_by="ts", range="5 minutes", slide="1500ns",
                aggs={"m": ("max", "delay")})


SCHEMA = pa.schema([("id", pa.int64()), ("origin", pa.string()), ("ts", pa.timestamp("us", "UTC")),
                    ("delay", pa.float64())])


def test_stream_hopping_windows_equal_spark_window_on_the_same_files(kind_spark, tmp_path):
    """On a classic and on a Spark Connect session."""
    from winagg.spark import sliding_stream

    spark = kind_spark
    events = [e for e in _events(600, seed=13) if e[2] is not None]
    rng = random.Random(14)
    events.sort(key=lambda e: e[2] + rng.randrange(0, 20))  # arrival order: up to 20 minutes out of order
    events.append((-1, "~end", 10 ** 7, None))  # closes every window; its key is not compared
    folder = tmp_path / "in"
    folder.mkdir()
    paths = []
    for number, chunk in enumerate(np.array_split(np.arange(len(events)), 5)):
        rows = [events[i] for i in chunk]
        table = pa.table({"id": [r[0] for r in rows], "origin": [r[1] for r in rows],
                          "ts": [pd.Timestamp("2024-03-01", tz="UTC") + pd.Timedelta(minutes=r[2]) for r in rows],
                          "delay": [r[3] for r in rows]}, schema=SCHEMA)
        paths.append(folder / f"part-{number}.parquet")
        pq.write_table(table, paths[-1])
    stamp_in_order(paths)
    source = spark.readStream.schema("id long, origin string, ts timestamp, delay double") \
        .option("maxFilesPerTrigger", 1).parquet(str(folder))
    aggs = {name: (name, "delay") for name in NATIVE}
    stream, dropped = sliding_stream(source, partition_by="origin", order_by="ts", range="10 minutes",
                                     slide="4 minutes", aggs=aggs, lateness="30 minutes")
    query = (stream.writeStream.format("parquet").option("path", str(tmp_path / "out"))
             .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    query.awaitTermination()
    assert dropped.value == 0
    got = spark.read.parquet(str(tmp_path / "out")).toPandas()
    got = got[got["origin"] != "~end"]
    data = spark.read.schema("id long, origin string, ts timestamp, delay double").parquet(str(folder))
    _assert_equal_to_native(got, _native(data.where("id >= 0"), "10 minutes", "4 minutes"))


def test_a_row_between_two_windows_behind_the_watermark_is_not_counted_late():
    """slide > size: a row in the gap between two windows is in none (Spark's window() gives it
    none), so behind the reported windows it is neither aggregated nor dropped; a row of a
    reported window is dropped and counted."""
    from winagg.spark.panes import PaneCombine, PaneWindows, pane_parts, pane_schema

    outputs = [Output("n", "v", aggregations.get("count"), pa.int64())]
    parts = pane_parts(outputs, {"v": pa.float64()})
    key_fields = [pa.field("k", pa.string())]
    windows = PaneWindows(outputs, 2 * MINUTE, 5 * MINUTE, ["k"], parts, key_fields)  # [0, 2), [5, 7), ...
    combine = PaneCombine(["k"], "ts", MINUTE, parts, pane_schema(key_fields, parts))

    def batch(minutes):
        return combine.combine(pa.table({"k": ["a"] * len(minutes),
                                         "ts": pa.array([m * MINUTE for m in minutes], pa.timestamp("ns", "UTC")),
                                         "v": pa.array([1.0] * len(minutes), pa.float64())}))

    closed, dropped = windows.step(batch([0, 5, 11]), 8 * MINUTE)  # reports [0, 2) and [5, 7)
    assert dropped == 0 and closed.column("window_start").to_pylist() == [0, 5 * MINUTE]
    closed, dropped = windows.step(batch([3, 8, 1, 6]), 8 * MINUTE)  # 3 and 8 in gaps, 1 and 6 late
    assert dropped == 2 and closed is None
    closed, dropped = windows.step(None, math.inf)
    assert closed.column("window_start").to_pylist() == [10 * MINUTE] and closed.column("n").to_pylist() == [1]


def test_panes_of_many_keys_fed_out_of_order_give_the_windows_of_the_rows_that_arrived_in_time():
    """The streaming pane path (PaneCombine then PaneWindows, state pickled between micro-batches):
    a window holds the rows that arrived before it was reported; a row arriving after all of its
    windows were reported is dropped and counted, one arriving later than some is counted in the others."""
    from winagg.spark.panes import PaneCombine, PaneWindows, pane_parts, pane_schema

    names = ["max", "count", "sum", "mean", "min"]
    outputs = [Output(n, "v", aggregations.get(n), result_type(aggregations.get(n), pa.float64())) for n in names]
    parts = pane_parts(outputs, {"v": pa.float64()})
    key_fields = [pa.field("k", pa.string())]
    combine = PaneCombine(["k"], "ts", 2 * MINUTE, parts, pane_schema(key_fields, parts))
    size, slide = 10, 4
    events = [e for e in _events(600, seed=3, keys=("a", "b", None)) if e[2] is not None]
    rng = random.Random(4)
    events.sort(key=lambda e: e[2] + rng.randrange(0, 60))  # up to an hour out of order
    windows = PaneWindows(outputs, size * MINUTE, slide * MINUTE, ["k"], parts, key_fields)
    reported, arrived, watermark, dropped, late = [], [], -math.inf, 0, 0
    for number, chunk in enumerate(np.array_split(np.arange(len(events)), 9) + [None]):
        batch = [] if chunk is None else [events[i] for i in chunk]
        first_open = windows.first_open()
        for e in batch:
            if e[2] * MINUTE < first_open:
                late += 1
            else:
                arrived.append((number, e))
        table = pa.table({"k": [e[1] for e in batch],
                          "ts": pa.array([e[2] * MINUTE for e in batch], pa.timestamp("ns", "UTC")),
                          "v": pa.array([e[3] for e in batch], pa.float64())})
        closed, gone = windows.step(combine.combine(table) if batch else None,
                                    watermark if chunk is not None else math.inf)
        dropped += gone
        reported += [] if closed is None else [(number, row) for row in closed.to_pylist()]
        windows = pickle.loads(pickle.dumps(windows)).bind(outputs, key_fields)  # as the state store keeps it
        if batch:
            watermark = max(watermark, max(e[2] for e in batch) * MINUTE - 25 * MINUTE)
    assert late > 0 and dropped == late and len(windows) == 0
    holding = {}
    for number, e in arrived:
        for k in range((e[2] - size) // slide + 1, e[2] // slide + 1):
            holding.setdefault((e[1], k * slide * MINUTE), []).append((number, e))
    assert sorted((row["k"] or "", row["window_start"]) for _, row in reported) == \
        sorted((k or "", start) for (k, start), rows in holding.items()
               if any(n <= when for n, _ in rows for when, r in reported if (r["k"], r["window_start"]) == (k, start)))
    for number, row in reported:
        values = [e[3] for n, e in holding[(row["k"], row["window_start"])] if n <= number and e[3] is not None]
        want = {"max": max(values, default=None), "count": len(values), "sum": sum(values) if values else None,
                "mean": sum(values) / len(values) if values else None, "min": min(values, default=None)}
        for name in names:
            _assert_close(row[name], want[name], (row["k"], row["window_start"], name))


def _native_stream(spark, folder, size, slide, lateness):
    from pyspark.sql import functions as F

    source = spark.readStream.schema("id long, origin string, ts timestamp, delay double") \
        .option("maxFilesPerTrigger", 1).parquet(str(folder))
    aggs = [getattr(F, fn)("delay").alias(name) for name, fn in NATIVE.items()]
    grouped = source.withWatermark("ts", lateness).groupBy("origin", F.window("ts", size, slide)).agg(*aggs)
    return grouped.select("origin", F.col("window.start").alias("window_start"),
                          F.col("window.end").alias("window_end"), *NATIVE)


def _write_files(folder: Path, chunks, first: int):
    paths = []
    for number, rows in enumerate(chunks, start=first):
        table = pa.table({"id": [r[0] for r in rows], "origin": [r[1] for r in rows],
                          "ts": [pd.Timestamp("2024-03-01", tz="UTC") + pd.Timedelta(minutes=r[2]) for r in rows],
                          "delay": [r[3] for r in rows]}, schema=SCHEMA)
        paths.append(folder / f"part-{number:04d}.parquet")
        pq.write_table(table, paths[-1])
    return paths


@pytest.mark.parametrize("general", [False, True], ids=["panes", "per-key trees"])
def test_stream_hopping_late_rows_and_a_restart_equal_spark_window_streaming(kind_spark, tmp_path, general):
    """Rows behind the watermark, a query stopped after three micro-batches and restarted from its
    checkpoint with three more files: the rows equal Spark's own streaming window() aggregation
    run the same way, nothing lost or twice, and the rows in no open window are counted; on a
    classic and on a Spark Connect session."""
    from oracle import CONCAT

    from winagg.spark import sliding_stream

    spark = kind_spark
    events = [e for e in _events(500, seed=21) if e[2] is not None]
    rng = random.Random(22)
    events.sort(key=lambda e: e[2] + rng.randrange(0, 20))
    chunks = [list(c) for c in np.array_split(np.array(events, dtype=object), 5)]
    chunks[2] = chunks[2] + [(9001, "JFK", 5, 77.0), (9002, "LGA", chunks[1][-1][2] - 12, 88.0)]  # late, partly
    chunks.append([(-1, "~end", 10 ** 7, None)])  # closes every window; its key is not compared
    folder = tmp_path / "in"
    folder.mkdir()
    aggs = {name: (name, "delay") for name in NATIVE}
    if general:
        aggs["trail"] = (CONCAT, "delay")  # not pane-combinable: one FiBA tree per key and output
    runs = {"mine": (tmp_path / "out", tmp_path / "ck"), "native": (tmp_path / "nout", tmp_path / "nck")}
    dropped_total = 0
    paths = []
    for part in (chunks[:3], chunks[3:]):
        paths += _write_files(folder, part, len(paths))
        stamp_in_order(paths)
        for name, (out, checkpoint) in runs.items():
            if name == "mine":
                stream, dropped = sliding_stream(
                    spark.readStream.schema("id long, origin string, ts timestamp, delay double")
                    .option("maxFilesPerTrigger", 1).parquet(str(folder)),
                    partition_by="origin", order_by="ts", range="10 minutes", slide="4 minutes", aggs=aggs,
                    lateness="10 minutes")
            else:
                stream = _native_stream(spark, folder, "10 minutes", "4 minutes", "10 minutes")
            query = (stream.writeStream.format("parquet").option("path", str(out))
                     .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
            query.awaitTermination()
            if name == "mine":
                dropped_total += dropped.value
    assert dropped_total == 1  # the row at minute 5: every window holding it was reported
    got = spark.read.parquet(str(runs["mine"][0])).toPandas()
    want = spark.read.parquet(str(runs["native"][0])).toPandas()
    got, want = got[got["origin"] != "~end"], want[want["origin"] != "~end"]
    assert not got.duplicated(["origin", "window_start"]).any()
    _assert_equal_to_native(got, want)


@pytest.mark.parametrize("general", [False, True], ids=["panes", "per-key trees"])
def test_stream_hopping_resumed_with_another_bucket_count_fails_naming_both(spark, tmp_path, monkeypatch, general):
    """Keys are hashed into KEY_BUCKETS buckets and each bucket's state keeps that number: a
    checkpoint written with one count and resumed with another fails instead of mixing keys."""
    from oracle import CONCAT
    from pyspark.errors import StreamingQueryException

    from winagg.spark import hopping_stream, streaming

    events = [e for e in _events(200, seed=31) if e[2] is not None]
    events.sort(key=lambda e: e[2])
    chunks = [list(c) for c in np.array_split(np.array(events, dtype=object), 4)]
    folder, checkpoint = tmp_path / "in", tmp_path / "ck"
    folder.mkdir()
    paths = []

    def run(part, buckets):
        nonlocal paths
        paths += _write_files(folder, part, len(paths))
        stamp_in_order(paths)
        monkeypatch.setattr(hopping_stream, "KEY_BUCKETS", buckets)
        stream, _ = streaming.sliding_stream(
            spark.readStream.schema("id long, origin string, ts timestamp, delay double")
            .option("maxFilesPerTrigger", 1).parquet(str(folder)),
            partition_by="origin", order_by="ts", range="10 minutes", slide="4 minutes",
            aggs={"trail": (CONCAT, "delay")} if general else {"max": ("max", "delay")}, lateness="10 minutes")
        query = (stream.writeStream.format("noop").option("checkpointLocation", str(checkpoint))
                 .trigger(availableNow=True).start())
        query.awaitTermination()

    run(chunks[:2], 4)
    with pytest.raises(StreamingQueryException, match="hash keys into 4 buckets, the query into 3"):
        run(chunks[2:], 3)


def test_sizes_and_slides_are_read_by_the_front_door_never_truncated():
    outputs = [Output("n", "v", aggregations.get("count"), pa.int64())]
    windows = HoppingWindows(outputs, "10min", np.timedelta64(5, "m"))
    assert (windows.size, windows.slide) == (10 * MINUTE, 5 * MINUTE)
    with pytest.raises(ValueError, match="size '1 month' is not a fixed duration"):
        HoppingWindows(outputs, "1 month", "1min")
    with pytest.raises(ValueError, match="slide 1.5 is not a whole number of nanoseconds"):
        HoppingWindows(outputs, 10, 1.5)


def test_a_window_that_would_end_past_int64_nanoseconds_is_refused_not_wrapped():
    from winagg.core.errors import InvalidTimeError

    outputs = [Output("max", "v", aggregations.get("max"), pa.float64())]
    windows = HoppingWindows(outputs, 10 * MINUTE, 4 * MINUTE)
    last = np.iinfo(np.int64).max - 5 * MINUTE  # 2262-04-11 23:42
    closed = windows.step(pd.DataFrame({"v": [1.0]}), np.array([last - 10 * MINUTE], np.int64), math.inf)
    assert closed.column("max").to_pylist() == [1.0, 1.0, 1.0]
    with pytest.raises(InvalidTimeError, match="would end past 2262-04-11"):
        HoppingWindows(outputs, 10 * MINUTE, 4 * MINUTE).step(pd.DataFrame({"v": [1.0]}),
                                                             np.array([last], np.int64), math.inf)


def test_pane_states_written_before_the_nanosecond_layout_are_refused_by_name():
    """A bucket's panes pickled in an earlier layout (microsecond pane starts, or no format at all)
    are refused, not misread as nanoseconds."""
    from winagg.spark.panes import PaneWindows, pane_parts

    outputs = [Output("max", "v", aggregations.get("max"), pa.float64())]
    parts = pane_parts(outputs, {"v": pa.float64()})
    key_fields = [pa.field("k", pa.string())]
    windows = PaneWindows(outputs, 10 * MINUTE, 4 * MINUTE, ["k"], parts, key_fields, buckets=8)
    windows.table = pa.Table.from_arrays(
        [pa.array(["a", "b"]), pa.array([0, 2 * MINUTE], pa.int64()), pa.array([1, 2], pa.int64()),
         pa.array([3.0, 4.0])], schema=windows._schema)
    again = pickle.loads(pickle.dumps(windows)).bind(outputs, key_fields)
    assert again.buckets == 8 and again.table.equals(windows.table)
    earlier = pickle.loads(pickle.dumps(windows))
    earlier.format = 1
    with pytest.raises(SparkInputError, match="state format 1.*reads format 2.*new checkpoint"):
        earlier.bind(outputs, key_fields)


def test_hopping_windows_pickled_in_the_earlier_layout_are_refused_by_name():
    """Before the layout was kept, a mean kept a tree of its own partials; such a state is refused, not misread."""
    outputs = [Output("m", "v", aggregations.get("mean"), pa.float64())]
    windows = HoppingWindows(outputs, 600_000_000, 60_000_000)
    assert pickle.loads(pickle.dumps(windows)).bind(outputs).outputs == outputs
    earlier = pickle.loads(pickle.dumps(windows))
    del earlier.format
    with pytest.raises(SparkInputError, match="state format 1.*new checkpoint"):
        earlier.bind(outputs)
    in_microseconds = pickle.loads(pickle.dumps(windows))
    in_microseconds.format = 2
    with pytest.raises(SparkInputError, match="state format 2.*reads format 4"):
        in_microseconds.bind(outputs)
    fields_apart = pickle.loads(pickle.dumps(windows))  # a mean's (sum, count) in two arrays
    fields_apart.format = 3
    with pytest.raises(SparkInputError, match="state format 3.*reads format 4"):
        fields_apart.bind(outputs)


#: Longs near int64's limits and a null, at minutes 0..8 (two at minute 3): every 2-minute window's
#: sum fits int64 (2**63 - 1 and -2**63 included), none of them is a float64.
BIG = 2 ** 62
LONG_EVENTS = [(0, BIG), (1, BIG - 1), (2, -5), (3, 2 ** 53 + 1), (3, None), (4, 3), (5, -2 ** 63 + 3), (6, -3),
               (7, 2 ** 63 - 1), (8, -1)]


def _long_windows(events, size, slide):
    """{window start minute: (exact sum, correctly rounded mean)} of the windows holding events."""
    from fractions import Fraction

    result = {}
    for k in {k for minute, _ in events for k in range((minute - size) // slide + 1, minute // slide + 1)}:
        values = [v for minute, v in events if k * slide <= minute < k * slide + size and v is not None]
        result[k * slide] = (sum(values), float(Fraction(sum(values), len(values)))) if values else (None, None)
    return result


def _long_outputs():
    return [Output("s", "v", aggregations.get("sum"), pa.int64()),
            Output("m", "v", aggregations.get("mean"), pa.float64())]


def _pane_engine(events, key="a"):
    """The streaming panes of the long outputs, and a combiner that makes (key, minute, value) events panes."""
    from winagg.spark.panes import PaneCombine, PaneWindows, pane_parts, pane_schema

    outputs = _long_outputs()
    parts = pane_parts(outputs, {"v": pa.int64()})
    key_fields = [pa.field("k", pa.string())]
    combine = PaneCombine(["k"], "ts", MINUTE, parts, pane_schema(key_fields, parts))

    def panes(events):
        return combine.combine(pa.table({"k": [key] * len(events),
                                         "ts": pa.array([m * MINUTE for m, _ in events], pa.timestamp("ns", "UTC")),
                                         "v": pa.array([v for _, v in events], pa.int64())}))

    return PaneWindows(outputs, 2 * MINUTE, MINUTE, ["k"], parts, key_fields), panes, outputs, key_fields


def test_long_sums_of_hopping_windows_are_exact_in_per_key_trees_and_in_panes():
    """Both engines of hopping windows (a key's FiBA trees, the streaming panes), their state pickled
    between two feeds: int64 sums exact near the limits, means correctly rounded from the exact sum."""
    want = _long_windows(LONG_EVENTS, 2, 1)
    outputs = _long_outputs()
    trees = HoppingWindows(outputs, 2 * MINUTE, MINUTE, long_columns={"v"})
    panes, as_panes, _, key_fields = _pane_engine(LONG_EVENTS)
    by_trees, by_panes = [], []
    for part, watermark in ((LONG_EVENTS[:5], 3 * MINUTE), (LONG_EVENTS[5:], math.inf)):
        frame = pd.DataFrame({"v": pd.array([v for _, v in part], dtype="Int64")})
        by_trees.append(trees.step(frame, np.array([m * MINUTE for m, _ in part], np.int64), watermark))
        by_panes.append(panes.step(as_panes(part), watermark)[0])
        # as Spark's state store keeps them
        trees = pickle.loads(cloudpickle.dumps(trees)).bind(outputs)
        panes = pickle.loads(pickle.dumps(panes)).bind(outputs, key_fields)
    for table in (pa.concat_tables(by_trees), pa.concat_tables(by_panes)):
        assert table.schema.field("s").type == pa.int64()
        assert {r["window_start"] // MINUTE: (r["s"], r["m"]) for r in table.to_pylist()} == want


def test_a_hopping_long_sum_outside_int64_raises_naming_the_key_and_the_window():
    events = [(0, BIG), (1, BIG - 1), (1, 1)]  # the window [0, 2) sums to 2**63
    message = (r"output column 's': the sum of the long column 'v' over the window of k='a', "
               r"window \[1970-01-01 00:00:00, 1970-01-01 00:02:00\) is 9223372036854775808, outside int64")
    trees = HoppingWindows(_long_outputs(), 2 * MINUTE, MINUTE, long_columns={"v"})
    with pytest.raises(OverflowError, match=message):
        trees.step(pd.DataFrame({"v": [v for _, v in events]}), np.array([m * MINUTE for m, _ in events]), math.inf,
                   "k='a'")
    panes, as_panes, *_ = _pane_engine(events)
    with pytest.raises(OverflowError, match=message):
        panes.step(as_panes(events), math.inf)


def test_batch_hopping_long_sums_are_exact_longs_or_raise(spark):
    """Spark's sum of a long is a long: exact past 2**53, or an error naming the key and window."""
    start = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
    rows = [("a", start + dt.timedelta(minutes=m), v) for m, v in LONG_EVENTS] + [("b", start, 7), ("b", start, None)]
    df = spark.createDataFrame(rows, "k string, ts timestamp, v long")
    out = sliding(df, partition_by="k", order_by="ts", range="2 minutes", slide="1 minute",
                  aggs={"s": ("sum", "v"), "m": ("mean", "v")})
    assert dict(out.dtypes)["s"] == "bigint" and dict(out.dtypes)["m"] == "double"
    got = {(r.k, r.window_start.replace(tzinfo=dt.timezone.utc)): (r.s, r.m) for r in out.collect()}
    want = {("a", start + dt.timedelta(minutes=m)): answer for m, answer in _long_windows(LONG_EVENTS, 2, 1).items()}
    want.update({("b", start - dt.timedelta(minutes=1)): (7, 7.0), ("b", start): (7, 7.0)})
    assert got == want
    over = spark.createDataFrame(rows + [("a", start + dt.timedelta(minutes=1), 1)], "k string, ts timestamp, v long")
    with pytest.raises(Exception, match=r"OverflowError: output column 's': the sum of the long column 'v' over the "
                                        r"window of k='a', window \[1970-01-01 00:00:00, 1970-01-01 00:02:00\) is "
                                        r"9223372036854775808, outside int64"):
        sliding(over, partition_by="k", order_by="ts", range="2 minutes", slide="1 minute",
                aggs={"s": ("sum", "v")}).collect()
