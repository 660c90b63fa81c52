"""A streaming job the streaming tests run in a separate process (so that they can kill it).

usage: python stream_job.py MASTER INPUT OUTPUT CHECKPOINT RESULT_JSON [--batch BATCH_OUTPUT]

MASTER is a master URL, or a Spark Connect URL (sc://HOST:PORT) to run on that server.

Runs winagg.spark.sliding_stream over the Parquet files in INPUT (one file per
micro-batch) into a Parquet sink, until every file is processed; with --batch
it then also copies the sink's committed rows to BATCH_OUTPUT.stream and runs
winagg.spark.sliding on the same files into BATCH_OUTPUT. Writes the number
of dropped events to RESULT_JSON.
"""

import json
import os
import sys
from pathlib import Path

AGGS = {"max_delay": ("max", "delay"), "n": ("count", "delay"), "total": ("sum", "delay"),
        "mean_delay": ("mean", "delay")}
SCHEMA = "id long, origin string, ts timestamp, delay double, tag long"


def main(argv):
    master, source, sink, checkpoint, result = argv[:5]
    from oracle import CONCAT

    from winagg.spark import session, sliding, sliding_stream

    oracle = str(Path(__file__).resolve().parents[1] / "oracle.py")
    settings = {"spark.sql.shuffle.partitions": "2"}
    if master.startswith("sc://"):
        spark = session(remote=master, app_name="winagg-stream-test", conf=settings)
        spark.addArtifacts(oracle, pyfile=True)
    else:
        spark = session(master, app_name="winagg-stream-test", conf=settings)
        spark.sparkContext.addPyFile(oracle)
    aggs = {**AGGS, "trail": (CONCAT, "tag")}
    events = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(source)
    stream, dropped = sliding_stream(events, partition_by="origin", order_by="ts", range="1 hour", aggs=aggs,
                                     lateness="30 minutes")
    query = (stream.writeStream.format("parquet").option("path", sink).option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start())
    query.awaitTermination()
    report = {"dropped": dropped.value}
    if "--batch" in argv:
        batch_output = argv[argv.index("--batch") + 1]
        # the sink as Spark reads it: committed files only (its _spark_metadata log)
        spark.read.parquet(sink).write.mode("overwrite").parquet(batch_output + ".stream")
        data = spark.read.schema(SCHEMA).parquet(source).where("id >= 0")
        sliding(data, partition_by="origin", order_by="ts", range="1 hour", aggs=aggs) \
            .write.mode("overwrite").parquet(batch_output)
    Path(result).write_text(json.dumps(report))
    spark.stop()


if __name__ == "__main__":
    tests = str(Path(__file__).resolve().parents[1])
    sys.path.insert(0, tests)
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (tests, os.environ.get("PYTHONPATH")) if p)
    main(sys.argv[1:])
