"""winagg.spark.sliding_stream: equal to the batch job, late events dropped and counted, checkpoint recovery."""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from connect_server import start_connect_server, stop_connect_server

from winagg.spark import sliding, sliding_stream
from winagg.spark.pipeline import stamp_in_order

STREAM_JOB = Path(__file__).with_name("stream_job.py")
BASE = pd.Timestamp("2013-01-01", tz="UTC")
SCHEMA = pa.schema([("id", pa.int64()), ("origin", pa.string()), ("ts", pa.timestamp("us", "UTC")),
                    ("delay", pa.float64()), ("tag", pa.int64())])


def _events(count, seed):
    """Events of three keys, up to 10 minutes from their place in time order, some delays null
    (so two files apart they are at most 20 minutes out of order)."""
    rng = random.Random(seed)
    seconds = rng.sample(range(0, count * 40), count)  # distinct times: no peers
    seconds.sort()
    events = []
    for i, second in enumerate(seconds):
        jitter = rng.randrange(-600, 600)
        delay = None if rng.random() < 0.1 else float(rng.randrange(-15, 120))
        events.append((i, rng.choice(["JFK", "LGA", "EWR"]), second + jitter, delay, rng.randrange(1000)))
    return events


def _write(folder: Path, events, per_file, closing=True):
    """One Parquet file per ``per_file`` events, in arrival order, then a closing event far ahead
    (its key is never reported; it moves the watermark past every real event)."""
    folder.mkdir(parents=True)
    chunks = [events[i:i + per_file] for i in range(0, len(events), per_file)]
    if closing:
        chunks.append([(-1, "~end", 10 ** 8, None, 0)])
    paths = [folder / f"part-{number:04d}.parquet" for number in range(len(chunks))]
    for path, chunk in zip(paths, chunks):
        table = pa.table({"id": [e[0] for e in chunk], "origin": [e[1] for e in chunk],
                          "ts": [BASE + pd.Timedelta(seconds=e[2]) for e in chunk],
                          "delay": [e[3] for e in chunk], "tag": [e[4] for e in chunk]}, schema=SCHEMA)
        pq.write_table(table, path)
    stamp_in_order(paths)
    return len(chunks)


def _assert_frames_equal(stream: pd.DataFrame, batch: pd.DataFrame, columns):
    stream = stream.sort_values("id").reset_index(drop=True)
    batch = batch.sort_values("id").reset_index(drop=True)
    assert stream["id"].tolist() == batch["id"].tolist()  # nothing lost, nothing twice
    for column in columns:
        got, want = stream[column], batch[column]
        assert (got.isna() == want.isna()).all(), column
        if got.dtype.kind in "fi":
            np.testing.assert_allclose(got[want.notna()].astype(float), want[want.notna()].astype(float),
                                       rtol=1e-9, err_msg=column)
        else:
            assert got[want.notna()].tolist() == want[want.notna()].tolist(), column


def test_late_events_are_dropped_counted_and_never_merged(kind_spark, tmp_path):
    from oracle import CONCAT

    spark = kind_spark
    events = _events(120, seed=5)
    late = (999, "JFK", -3 * 3600, 500.0, 7)  # hours older than anything: behind the watermark
    arrivals = events[:60] + [late] + events[60:]
    _write(tmp_path / "in", arrivals, per_file=60)  # the late event opens the second micro-batch
    source = spark.readStream.schema(SCHEMA_DDL).option("maxFilesPerTrigger", 1).parquet(str(tmp_path / "in"))
    aggs = {"max_delay": ("max", "delay"), "n": ("count", "delay"), "trail": (CONCAT, "tag")}
    stream, dropped = sliding_stream(source, partition_by="origin", order_by="ts", range="1 hour", aggs=aggs,
                                     lateness="30 minutes")
    query = (stream.writeStream.format("parquet").option("path", str(tmp_path / "out"))
             .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    query.awaitTermination()
    assert dropped.value == 1
    got = spark.read.parquet(str(tmp_path / "out")).toPandas()
    assert 999 not in set(got["id"])
    on_time = spark.read.schema(SCHEMA_DDL).parquet(str(tmp_path / "in")).where("id >= 0 AND id != 999")
    want = sliding(on_time, partition_by="origin", order_by="ts", range="1 hour", aggs=aggs).toPandas()
    _assert_frames_equal(got, want, list(aggs))


SCHEMA_DDL = "id long, origin string, ts timestamp, delay double, tag long"


def test_sliding_stream_refuses_a_non_timestamp_event_time(spark, tmp_path):
    _write(tmp_path / "in", _events(5, seed=1), per_file=5, closing=False)
    source = spark.readStream.schema(SCHEMA_DDL).parquet(str(tmp_path / "in"))
    with pytest.raises(Exception, match="must be a timestamp"):
        sliding_stream(source, partition_by="origin", order_by="id", range=10, aggs={"m": ("max", "delay")})


def test_a_stream_keeps_nullable_longs_exact_and_reads_event_times_in_any_session_time_zone(kind_spark, tmp_path):
    """Long keys and values with nulls, past 2**53, reach the stateful operator exactly (PySpark hands
    such a column over as doubles), and zoned event times are instants in a session time zone west
    of UTC (read as its wall-clock, the second file's events would be hours late): nothing dropped,
    every row equal to brute force."""
    spark = kind_spark
    big = 2 ** 60
    schema = pa.schema([("id", pa.int64()), ("k", pa.int64()), ("ts", pa.timestamp("us", "UTC")), ("v", pa.int64())])
    events = [(i, [big + 1, big + 2, None][i % 3], i * 40, None if i % 5 == 0 else (big + i) * (-1) ** i)
              for i in range(24)]
    # the second file's last event moves the watermark past every other
    chunks = [events[:12], events[12:] + [(-1, -1, 86_400, None)]]
    paths = [tmp_path / "in" / f"part-{n}.parquet" for n in range(2)]
    paths[0].parent.mkdir()
    for path, chunk in zip(paths, chunks):
        columns = list(zip(*chunk))
        pq.write_table(pa.table([columns[0], columns[1], [BASE + pd.Timedelta(seconds=s) for s in columns[2]],
                                 columns[3]], schema=schema), path)
    stamp_in_order(paths)
    # west of UTC; one stateful task a micro-batch (a quicker test)
    settings = {"spark.sql.session.timeZone": "America/New_York", "spark.sql.shuffle.partitions": "1"}
    before = {name: spark.conf.get(name) for name in settings}
    for name, value in settings.items():
        spark.conf.set(name, value)
    try:
        source = spark.readStream.schema("id long, k long, ts timestamp, v long").option("maxFilesPerTrigger", 1) \
            .parquet(str(tmp_path / "in"))
        stream, dropped = sliding_stream(source, partition_by="k", order_by="ts", range="5 minutes",
                                         aggs={"s": ("sum", "v"), "n": ("count", "v")}, lateness="1 minute")
        query = (stream.writeStream.format("parquet").option("path", str(tmp_path / "out"))
                 .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
        query.awaitTermination()
        got = {row["id"]: row for row in spark.read.parquet(str(tmp_path / "out")).collect()}  # ints, not doubles
    finally:
        for name, value in before.items():
            spark.conf.set(name, value)
    assert dropped.value == 0
    assert sorted(got) == [e[0] for e in events]
    for i, key, second, value in events:
        inside = [e[3] for e in events if e[1] == key and second - 300 <= e[2] <= second and e[3] is not None]
        row = got[i]
        assert (row["k"], row["v"]) == (key, value)
        assert (row["s"], row["n"]) == (sum(inside) if inside else None, len(inside)), i


def test_lateness_is_read_by_the_front_door_in_whole_milliseconds():
    from winagg.spark.stream_inputs import watermark_delay

    assert watermark_delay(dt.timedelta(minutes=10)) == watermark_delay("10 minutes") == "600000 milliseconds"
    assert watermark_delay(np.timedelta64(1500, "ms")) == "1500 milliseconds"
    with pytest.raises(ValueError, match="lateness '1 month' is not a fixed duration"):
        watermark_delay("1 month")  # Spark would count 31 days
    with pytest.raises(ValueError, match="lateness '1500us' is not a whole number of milliseconds"):
        watermark_delay("1500us")  # Spark would truncate it


def test_a_long_column_that_reached_python_as_doubles_past_2_53_is_refused_not_rounded():
    from winagg.spark.hopping import exact_longs

    assert exact_longs(pd.Series([1.0, None, 2.0 ** 53 - 1]), "v").to_pylist() == [1, None, 2 ** 53 - 1]
    with pytest.raises(OverflowError, match="'v' reached Python as float64 with the value 9007199254740992"):
        exact_longs(pd.Series([1.0, None, 2.0 ** 53]), "v")


def _committed(checkpoint: Path) -> int:
    commits = checkpoint / "commits"
    return len([p for p in commits.iterdir() if p.name.isdigit()]) if commits.exists() else 0


def _wait_for_commits(checkpoint: Path, job: subprocess.Popen, count: int) -> None:
    deadline = time.time() + 600
    while _committed(checkpoint) < count:
        assert job.poll() is None, "the first run ended before it could be killed"
        assert time.time() < deadline, "the first run made no progress"
        time.sleep(0.2)


def test_a_killed_stream_resumes_from_its_checkpoint(tmp_path, session_kind):
    """Kill the query mid-stream, restart it: its output equals the batch job's, row for row.

    Classic: both runs use Spark's local-cluster master (two executor JVMs with their own Python
    workers), so the aggregator state travels between processes as on a cluster, and the driver
    is killed. Connect: the Connect server the query runs on is killed (SIGKILL by its PID) with
    its client, and the restart runs on a new server.
    """
    files = _write(tmp_path / "in", _events(480, seed=11), per_file=80)
    paths = [str(tmp_path / name) for name in ("in", "out", "ck", "result.json")]
    server = None
    master = "local-cluster[2,1,1024]"
    if session_kind == "connect":
        server, master = start_connect_server(tmp_path, {"spark.sql.shuffle.partitions": "2"})
    first = subprocess.Popen([sys.executable, str(STREAM_JOB), master, *paths], start_new_session=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for_commits(tmp_path / "ck", first, 2)
    finally:
        if server is not None:
            server.kill()
            server.wait()
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
    killed_after = _committed(tmp_path / "ck")
    assert killed_after < files  # work was left for the restart

    if server is not None:
        server, master = start_connect_server(tmp_path, {"spark.sql.shuffle.partitions": "2"})
    batch_out = str(tmp_path / "batch")
    try:
        subprocess.run([sys.executable, str(STREAM_JOB), master, *paths, "--batch", batch_out], check=True,
                       timeout=900, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    finally:
        if server is not None:
            stop_connect_server(server)
    assert json.loads((tmp_path / "result.json").read_text())["dropped"] == 0
    stream_rows = pd.read_parquet(batch_out + ".stream")
    batch_rows = pd.read_parquet(batch_out)
    assert len(batch_rows) == 480
    _assert_frames_equal(stream_rows, batch_rows, ["max_delay", "n", "total", "mean_delay", "trail"])


# ---------------------------------------------------------------- one key's state, without Spark
def _fold(monoid, items):
    partial = monoid.identity
    for item in items:
        partial = monoid.combine(partial, monoid.lift(item))
    return monoid.lower(partial)


def test_a_keys_state_answers_each_event_once_final_over_out_of_order_micro_batches():
    """Events arrive up to 5 minutes out of order, with peers, NaN and None, in eight micro-batches,
    the state pickled between them, the watermark 4 minutes behind the latest time seen; events
    behind it are dropped, as the processor drops them. Each kept event's answers equal a fold
    over its window's kept events."""
    import math
    import pickle

    from pyspark import cloudpickle

    from winagg import aggregations
    from winagg.spark.partition import Output, result_type
    from winagg.spark.streaming import _KeyState

    rng = np.random.default_rng(3)
    n = 300
    second = 1_000_000_000  # nanoseconds, winagg's time unit
    times = np.sort(rng.integers(0, 3000, n)) * second  # many peers
    arrival = np.argsort(times + rng.integers(-300, 300, n) * second, kind="stable")
    values = rng.normal(size=n)
    values[rng.random(n) < 0.1] = np.nan
    tags = rng.choice(np.array(["a", "b", "c", None], dtype=object), n)
    events = pd.DataFrame({"id": np.arange(n), "ts": pd.to_datetime(times, unit="ns", utc=True), "v": values,
                           "d": tags})
    schema = pa.schema([("v", pa.float64()), ("d", pa.string())])
    wanted = [("count", "v", 600), ("mean", "v", 600), ("max", "v", 900), ("stddev", "v", 600), ("hll", "d", 900)]
    outputs = [Output(name, column, aggregations.get(name),
                      result_type(aggregations.get(name), schema.field(column).type)) for name, column, _ in wanted]
    state = _KeyState(outputs, [seconds * second for *_, seconds in wanted], schema)
    answered, watermark, kept = [], -math.inf, np.ones(n, bool)
    for part in np.array_split(arrival, 8):
        late = times[part] < watermark
        kept[part[late]] = False
        state.add(events.iloc[part[~late]].reset_index(drop=True), times[part[~late]])
        watermark = max(watermark, times[part].max() - 240 * second)
        done = state.close(watermark)
        if done is not None:
            assert (_nanos(done["ts"]) < watermark).all()
            answered.append(done)
        state = pickle.loads(cloudpickle.dumps(state))
    answered.append(state.close(np.iinfo(np.int64).max))
    got = pd.concat(answered).set_index("id").sort_index()
    assert 0 < (~kept).sum() < n // 4  # some events were late
    assert got.index.tolist() == np.flatnonzero(kept).tolist()  # each kept event once
    for name, column, seconds in wanted:
        monoid = aggregations.get(name)
        for i in np.flatnonzero(kept):
            inside = kept & (times >= times[i] - seconds * second) & (times <= times[i])
            items = [x for x in events[column][inside]
                     if x is not None and not (isinstance(x, float) and math.isnan(x))]
            want = _fold(monoid, items) if items or name == "count" else None
            if isinstance(want, float) and math.isnan(want):
                want = None
            if want is None:
                assert got.loc[i, name] is None, (name, i)
            else:
                assert got.loc[i, name] == pytest.approx(want, rel=1e-9), (name, i)


def _nanos(stamps: pd.Series) -> np.ndarray:
    return stamps.dt.tz_convert(None).astype("datetime64[ns]").astype(np.int64).to_numpy()


def test_a_keys_state_of_another_layout_is_refused_by_name():
    from winagg.spark._common import SparkInputError, checked_format
    from winagg.spark.streaming import STATE_FORMAT

    class Old:  # a state pickled before the format was kept
        pass

    with pytest.raises(SparkInputError, match="state format 1.*new checkpoint"):
        checked_format(Old(), STATE_FORMAT, "windows")


def test_a_keys_state_runs_the_kernels_of_the_batch_job():
    """After the batch job's range frames ran over the same columns, a key's state builds no new kernel:
    neither a driver nor a FiBA batch step (the kernels of time-keyed windows)."""
    from winagg import aggregations
    from winagg.engine import kernels, range_batches
    from winagg.spark.partition import Frame, Output, PartitionWindows, result_type
    from winagg.spark.streaming import _KeyState

    schema = pa.schema([("v", pa.float64())])
    outputs = [Output(name, "v", aggregations.get(name), result_type(aggregations.get(name), pa.float64()))
               for name in ("mean", "max")]
    stamps = pa.array([0, 5_000_000, 9_000_000], pa.timestamp("us", "UTC"))
    table = pa.table({"k": ["a", "a", "a"], "ts": stamps, "v": [1.0, None, 4.0]})
    batch_rows = pa.Table.from_batches(list(PartitionWindows(["k"], "ts", Frame(span=6_000_000_000), outputs)(
        iter(table.to_batches())))).to_pandas()
    built = set(kernels._compiled), set(range_batches._KERNELS)
    state = _KeyState(outputs, [6_000_000_000, 6_000_000_000], schema)  # nanoseconds
    state.add(table.select(["ts", "v"]).to_pandas(), np.array([0, 5_000_000_000, 9_000_000_000], np.int64))
    done = state.close(np.iinfo(np.int64).max)
    assert (set(kernels._compiled), set(range_batches._KERNELS)) == built
    assert done["mean"].tolist() == batch_rows["mean"].tolist() == [1.0, 1.0, 4.0]
    assert done["max"].tolist() == batch_rows["max"].tolist() == [1.0, 1.0, 4.0]


def test_a_keys_state_sums_longs_exactly_through_micro_batches():
    """The per-event stream runs the batch job's windows: a long column's sums stay exact near int64's
    limits (its running total passes them) across micro-batches and a pickled state, means are the
    correctly rounded quotients, and a window past int64 raises naming the column and time."""
    import pickle
    from fractions import Fraction

    from pyspark import cloudpickle

    from winagg import aggregations
    from winagg.spark.partition import Output
    from winagg.spark.streaming import _KeyState

    second = 1_000_000_000
    big = 2 ** 62
    values = [big, big - 1, None, -5, big, big - 1, -2 ** 63 + 9, -9, -2 ** 53 - 1, 2 ** 63 - 1]
    schema = pa.schema([("v", pa.int64())])
    outputs = [Output("s", "v", aggregations.get("sum"), pa.int64()),
               Output("m", "v", aggregations.get("mean"), pa.float64())]
    state = _KeyState(outputs, [second, second], schema)  # each event and the one a second before
    answered = []
    for part in (range(0, 4), range(4, 10)):
        state.add(pd.DataFrame({"t": list(part), "v": pd.Series([values[i] for i in part], dtype=object)}),
                  np.array(list(part), np.int64) * second)
        answered.append(state.close(np.iinfo(np.int64).max))
        state = pickle.loads(cloudpickle.dumps(state))
    got = pd.concat(answered)
    frames = [[v for v in values[max(0, i - 1):i + 1] if v is not None] for i in range(10)]
    assert got["s"].tolist() == [sum(f) for f in frames]
    assert got["m"].tolist() == [float(Fraction(sum(f), len(f))) for f in frames]
    state.add(pd.DataFrame({"t": [10], "v": pd.Series([1], dtype=object)}), np.array([10 * second]))
    with pytest.raises(OverflowError, match=r"output column 's': the sum of the long column 'v' over the window "
                                            r"of the row with the event time 1970-01-01 00:00:10 is "
                                            r"9223372036854775808, outside int64"):
        state.close(np.iinfo(np.int64).max)
