"""A job whose monoid lives in a module only its driver can import (run in a separate process).

usage: python user_module_job.py MODULE_DIR WORK_DIR

MODULE_DIR holds ``usermonoids.py`` with a monoid ``JOINED``; it goes on this
process's ``sys.path`` only, as a module next to a user's script would, so
Spark's Python processes cannot import it. Prints one JSON line: the batch
results (rows=3) and the streaming results (range 2 minutes) by time.
"""

import json
import sys
from pathlib import Path


def main(module_dir, work):
    sys.path.insert(0, module_dir)
    import pandas as pd
    from usermonoids import JOINED

    from winagg.spark import session, sliding
    from winagg.spark.streaming import sliding_stream

    spark = session("local[2]", app_name="winagg-user-module-test", conf={"spark.sql.shuffle.partitions": "2"})
    df = spark.createDataFrame([(t % 2, t, float(t)) for t in range(12)], "k long, t long, v double")
    batch = sliding(df, partition_by="k", order_by="t", rows=3, aggs={"j": (JOINED, "v", "string")})
    batch_rows = {r["t"]: r["j"] for r in batch.collect()}

    work = Path(work)
    (work / "in").mkdir(parents=True)
    events = pd.DataFrame({"k": [0] * 6, "ts": pd.date_range("2024-01-01", periods=6, freq="min", tz="UTC"),
                           "v": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]})
    events.to_parquet(work / "in" / "a.parquet", coerce_timestamps="us")
    source = spark.readStream.schema("k long, ts timestamp, v double").parquet(str(work / "in"))
    stream, _ = sliding_stream(source, partition_by="k", order_by="ts", range="2 minutes",
                               aggs={"j": (JOINED, "v", "string")}, lateness="0 seconds")
    query = (stream.writeStream.format("parquet").option("checkpointLocation", str(work / "ck"))
             .trigger(availableNow=True).start(str(work / "out")))
    query.awaitTermination()
    stream_rows = {r["ts"].strftime("%H:%M"): r["j"] for r in spark.read.parquet(str(work / "out")).collect()}
    print(json.dumps({"batch": batch_rows, "stream": stream_rows}))
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:3])
