"""Dropped-event counts as observed metrics, on a classic session and through Spark Connect."""

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from winagg.spark.dropped import DROPPED_COLUMN, dropped_row, observe_dropped

SCHEMA_DDL = f"id long, v double, {DROPPED_COLUMN} long"


def _write(folder, number, rows, dropped):
    """One micro-batch file: ``rows`` results and, when ``dropped``, a count row as a processor emits it."""
    frame = pd.DataFrame({"id": pd.array(rows, dtype="Int64"), "v": [float(i) / 2 for i in rows],
                          DROPPED_COLUMN: pd.array([None] * len(rows), dtype="Int64")})
    if dropped:
        frame = pd.concat([frame, dropped_row(dropped, ["id", "v"]).astype({"id": "Int64", "v": "float64"})])
    folder.mkdir(exist_ok=True)
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), folder / f"part-{number:03d}.parquet")


def _run(spark, source, tmp_path, dropped=None):
    stream = spark.readStream.schema(SCHEMA_DDL).option("maxFilesPerTrigger", 1).parquet(str(source))
    results, dropped = observe_dropped(stream, dropped)
    query = (results.writeStream.format("parquet").option("path", str(tmp_path / "out"))
             .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    query.awaitTermination()
    return query, dropped


def test_counts_leave_the_stream_and_add_up_once_per_micro_batch_across_a_resume(kind_spark, tmp_path):
    source = tmp_path / "in"
    counts = {0: 2, 1: 0, 2: 5}
    for number, dropped in counts.items():
        _write(source, number, [10 * number + i for i in range(3)], dropped)
    query, dropped = _run(kind_spark, source, tmp_path)
    assert dropped.value == 7
    assert dropped.of(query.lastProgress) == 5 and dropped.metric in query.lastProgress["observedMetrics"]
    assert [dropped.of(progress) for progress in query.recentProgress] == [2, 0, 5]
    # a second run of the query resumes from its checkpoint: only the new file is a new micro-batch
    _write(source, 3, [30], 4)
    _run(kind_spark, source, tmp_path, dropped)
    assert dropped.value == 11
    dropped.close()
    out = kind_spark.read.parquet(str(tmp_path / "out"))
    assert out.columns == ["id", "v"]
    assert sorted(r.id for r in out.collect()) == [0, 1, 2, 10, 11, 12, 20, 21, 22, 30]
