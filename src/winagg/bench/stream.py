"""Experiment ``stream``: winagg.spark.sliding_stream against Spark's own window() aggregation.

The same source for every method: ``--stream-events`` events ``key`` (a long,
``--stream-keys`` keys), ``ts`` (a timestamp over ``--stream-hours`` hours of
event time, each event up to ``--stream-jitter-seconds`` from its place, so
micro-batches arrive a little out of order) and ``v`` (a double), written once
per key count as ``--stream-files`` Parquet files that a file source reads one
per micro-batch (``availableNow``), the watermark ``--stream-lateness`` behind.
The aggregations are the mean and the maximum of ``v`` over windows of
``--stream-size`` (1 hour), and the methods:

* ``native``: ``groupBy(key, window(ts, size, slide)).agg(avg(v), max(v))``,
  Spark's streaming aggregation (every event copied into size/slide windows);
* ``hopping``: ``sliding_stream(..., range=size, slide=slide)``: the same rows,
  from panes of gcd(size, slide): rows combined per key and pane before the
  stateful operator, which keeps each bucket of keys' panes as one state value;
* ``per_event``: ``sliding_stream(..., range=size)``: a result for every event
  (its window ``[t - size, t]``); it has no slide and runs once per key count.

Every query writes to Spark's ``noop`` sink (everything computed, nothing
stored), with RocksDB state (what transformWithStateInPandas needs; the native
aggregation gets the same provider). A point's ``events_per_second`` is the
events over the median wall time of ``--repeat`` runs, the methods interleaved
run by run; each method runs once on a small input first (JVM code, Python
workers, numba kernels). State per key is read from the last micro-batch's
progress: ``state_rows`` (Spark's numRowsTotal) and ``state_bytes``, the
RocksDB SST files' size (the committed state, compressed as Spark stores it),
divided by the keys. ``trigger_ms_median`` is the median wall time of a
micro-batch that read events, over every run of the point, and
``state_commit_ms_median`` the part of it the stateful operators spent
committing their state; ``query_ms_median`` the part spent running the query
itself (Spark's addBatch: reading, the Python steps, the shuffle, the stateful
operator), the rest being Spark's own bookkeeping of a micro-batch (offsets,
write-ahead log, planning).
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from . import common

NAME = "stream"
METHODS = ("native", "hopping", "per_event")
DESCRIPTION = "sliding_stream (hopping and per event) vs Spark's window() aggregation: events/s, state per key"
DEFAULTS = dict(aggs=("mean", "max"), rounds=0, budget=0.0, out="results/stream", repeat=3, master="local[2]",
                stream_events=2_000_000, stream_keys=(16, 10_000), stream_slides=("1 hour", "10 minutes",
                                                                                  "1 minute", "10 seconds"),
                stream_size="1 hour", stream_hours=6, stream_files=8, stream_lateness="1 minute",
                stream_jitter_seconds=30, stream_methods=METHODS)
QUICK = dict(repeat=1, stream_events=20_000, stream_keys=(16,), stream_slides=("1 hour", "1 minute"), stream_files=2)
COLUMNS = ("keys", "slide", "method", "events", "seconds", "min_seconds", "max_seconds", "repeats",
           "events_per_second", "speedup_vs_native", "output_rows", "state_rows_per_key", "state_bytes_per_key",
           "state_vs_native", "trigger_ms_median", "query_ms_median", "state_commit_ms_median", "size", "hours", "files", "lateness",
           "load", "master", "spark", "cpu", "cores", "python", "numba", "numpy", "platform", "command")
NATIVE_AGGS = {"mean": "avg", "max": "max"}


def add_arguments(group) -> None:
    """The options only this experiment takes."""
    group.add_argument("--stream-events", type=int, metavar="N", help="events of the source (default 2,000,000)")
    group.add_argument("--stream-keys", type=int, nargs="+", metavar="K", help="key counts (default 16 10000)")
    group.add_argument("--stream-slides", nargs="+", metavar="DURATION",
                       help="slides of the hopping windows (default: '1 hour' '10 minutes' '1 minute' '10 seconds')")
    group.add_argument("--stream-size", metavar="DURATION", help="window size (default '1 hour')")
    group.add_argument("--stream-hours", type=float, metavar="H", help="hours of event time (default 6)")
    group.add_argument("--stream-files", type=int, metavar="F", help="files = micro-batches (default 8)")
    group.add_argument("--stream-lateness", metavar="DURATION", help="watermark delay (default '1 minute')")
    group.add_argument("--stream-jitter-seconds", type=int, metavar="S",
                       help="how far an event may be from its place in time order (default 30)")
    group.add_argument("--stream-methods", nargs="+", metavar="NAME",
                       help=f"methods, of: {' '.join(METHODS)} (default: all)")


def _settings(args) -> dict:
    get = lambda name: common.option(args, name, DEFAULTS, QUICK)  # noqa: E731
    cfg = {name: get(name) for name in ("out", "repeat", "master", "stream_events", "stream_size", "stream_hours",
                                        "stream_files", "stream_lateness", "stream_jitter_seconds")}
    cfg.update(stream_keys=[int(k) for k in get("stream_keys")], stream_slides=list(get("stream_slides")),
               stream_methods=common.names(get("stream_methods")), aggs=common.names(get("aggs")),
               quick=bool(args.quick))
    unknown = [m for m in cfg["stream_methods"] if m not in METHODS]
    if unknown:
        raise SystemExit(f"winagg bench stream: unknown method {unknown[0]!r} (methods: {' '.join(METHODS)})")
    if any(a not in NATIVE_AGGS for a in cfg["aggs"]):
        raise SystemExit(f"winagg bench stream: --aggs takes {' '.join(NATIVE_AGGS)}, got {cfg['aggs']}")
    if cfg["stream_events"] < max(cfg["stream_keys"]) or cfg["stream_files"] < 1:
        raise SystemExit("winagg bench stream: --stream-events must be at least the largest key count, "
                         "--stream-files at least 1")
    return cfg


# ---------------------------------------------------------------- the source
SCHEMA = "key long, ts timestamp, v double"


def write_source(folder: Path, events: int, keys: int, hours: float, files: int, jitter_seconds: int,
                 seed: int = 1) -> Path:
    """Parquet files of ``key, ts, v`` in arrival order, one per micro-batch, stamped oldest first."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ..spark.pipeline import stamp_in_order

    rng = np.random.default_rng(seed)
    span_us = int(hours * 3600e6)
    place = np.arange(events, dtype=np.int64) * span_us // events
    times = place + rng.integers(-jitter_seconds * 1_000_000, jitter_seconds * 1_000_000 + 1, events)
    start = pd.Timestamp("2024-01-01", tz="UTC").value // 1000
    table = pa.table({"key": rng.integers(0, keys, events), "ts": pa.array(start + times, pa.timestamp("us", "UTC")),
                      "v": rng.normal(100.0, 30.0, events)})
    folder.mkdir(parents=True, exist_ok=True)
    bounds = np.linspace(0, events, files + 1).astype(int)
    paths = [folder / f"part-{i:04d}.parquet" for i in range(files)]
    for path, lo, hi in zip(paths, bounds, bounds[1:]):
        pq.write_table(table.slice(lo, hi - lo), path)
    stamp_in_order(paths)
    return folder


# ---------------------------------------------------------------- the methods
def method_stream(spark, source: Path, method: str, cfg, slide):
    """The streaming DataFrame of ``method`` over the files in ``source``."""
    from pyspark.sql import functions as F

    from ..spark.streaming import sliding_stream

    events = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(source))
    aggs = {f"{a}_v": (a, "v") for a in cfg["aggs"]}
    if method == "native":
        columns = [getattr(F, NATIVE_AGGS[a])("v").alias(f"{a}_v") for a in cfg["aggs"]]
        return events.withWatermark("ts", cfg["stream_lateness"]) \
            .groupBy("key", F.window("ts", cfg["stream_size"], slide)).agg(*columns)
    stream, _ = sliding_stream(events, partition_by="key", order_by="ts", range=cfg["stream_size"], aggs=aggs,
                               lateness=cfg["stream_lateness"], slide=slide if method == "hopping" else None)
    return stream


def _state(progress: dict) -> tuple:
    """``(rows, bytes)`` of state after the last micro-batch, over every stateful operator."""
    rows = size = 0
    for operator in progress.get("stateOperators", []):
        rows += operator.get("numRowsTotal", 0)
        size += (operator.get("customMetrics") or {}).get("rocksdbSstFileSize", 0)
    return rows, size


def batch_figures(progress: list) -> dict:
    """Medians over the micro-batches that read events: wall milliseconds of a trigger (Spark's
    triggerExecution), of its query (addBatch) and of the stateful operators' state commits
    (their commitTimeMs)."""
    busy = [p for p in progress if p.get("numInputRows")]
    triggers = [p.get("durationMs", {}).get("triggerExecution", 0) for p in busy]
    queries = [p.get("durationMs", {}).get("addBatch", 0) for p in busy]
    commits = [sum(o.get("commitTimeMs", 0) for o in p.get("stateOperators", [])) for p in busy]
    return {"trigger_ms": statistics.median(triggers) if busy else 0.0,
            "query_ms": statistics.median(queries) if busy else 0.0,
            "commit_ms": statistics.median(commits) if busy else 0.0}


def run_once(spark, source: Path, method: str, cfg, slide, scratch: Path) -> dict:
    """One query to the end of its input: wall seconds, output rows, state after the last batch."""
    checkpoint = Path(tempfile.mkdtemp(prefix="ck-", dir=scratch))
    stream = method_stream(spark, source, method, cfg, slide)
    began = time.perf_counter()
    query = (stream.writeStream.format("noop").outputMode("append").option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    seconds = time.perf_counter() - began
    if query.exception() is not None:
        raise query.exception()
    history = query.recentProgress
    output = sum(max(p.get("sink", {}).get("numOutputRows", 0) or 0, 0) for p in history)
    rows, size = _state(history[-1]) if history else (0, 0)
    shutil.rmtree(checkpoint, ignore_errors=True)
    return {"seconds": seconds, "output_rows": output, "state_rows": rows, "state_bytes": size,
            **batch_figures(history)}


def _warm_up(spark, cfg, scratch: Path) -> None:
    small = write_source(scratch / "warm-up", 2_000, 4, 3, 2, cfg["stream_jitter_seconds"], seed=2)
    for method in cfg["stream_methods"]:
        run_once(spark, small, method, cfg, cfg["stream_slides"][0], scratch)


def points(cfg) -> list:
    """``(keys, method, slide)``: every slide for native and hopping, none for per-event."""
    out = []
    for keys in cfg["stream_keys"]:
        for method in cfg["stream_methods"]:
            slides = [None] if method == "per_event" else cfg["stream_slides"]
            out += [(keys, method, slide) for slide in slides]
    return out


def _measure(spark, cfg, scratch: Path, extra) -> list:
    plan = points(cfg)
    runs = {point: [] for point in plan}
    with common.progress(1 + len(plan) * cfg["repeat"], NAME) as bar:
        bar.set_postfix_str("warm-up")
        _warm_up(spark, cfg, scratch)
        bar.update(1)
        sources = {}
        for _ in range(cfg["repeat"]):
            for point in plan:  # interleaved: every method once per round
                keys, method, slide = point
                if keys not in sources:
                    sources[keys] = write_source(scratch / f"source-{keys}", cfg["stream_events"], keys,
                                                 cfg["stream_hours"], cfg["stream_files"],
                                                 cfg["stream_jitter_seconds"])
                bar.set_postfix_str(f"{keys} keys {method} {slide or ''}")
                result = run_once(spark, sources[keys], method, cfg, slide, scratch)
                result["load"] = common.load_average()
                runs[point].append(result)
                bar.update(1)
    table = []
    for (keys, method, slide), results in runs.items():
        seconds = [r["seconds"] for r in results]
        last = results[-1]
        table.append(dict(
            keys=keys, slide=slide or "per event", method=method, events=cfg["stream_events"],
            seconds=round(statistics.median(seconds), 3), min_seconds=round(min(seconds), 3),
            max_seconds=round(max(seconds), 3), repeats=len(results),
            events_per_second=round(cfg["stream_events"] / statistics.median(seconds)),
            output_rows=last["output_rows"], state_rows_per_key=round(last["state_rows"] / keys, 2),
            state_bytes_per_key=round(last["state_bytes"] / keys, 1),
            trigger_ms_median=statistics.median(r["trigger_ms"] for r in results),
            query_ms_median=statistics.median(r["query_ms"] for r in results),
            state_commit_ms_median=statistics.median(r["commit_ms"] for r in results), size=cfg["stream_size"],
            hours=cfg["stream_hours"], files=cfg["stream_files"], lateness=cfg["stream_lateness"],
            load=max(r["load"] for r in results), **extra))
    _ratios(table)
    return table


def _ratios(table) -> None:
    native = {(r["keys"], r["slide"]): r for r in table if r["method"] == "native"}
    for row in table:
        peer = native.get((row["keys"], row["slide"]))
        if row["method"] == "hopping" and peer:
            row["speedup_vs_native"] = round(peer["seconds"] / row["seconds"], 2)
            if peer["state_bytes_per_key"]:
                row["state_vs_native"] = round(row["state_bytes_per_key"] / peer["state_bytes_per_key"], 2)


def plot(table, path: Path) -> None:
    """Events per second and state bytes per key against the slide, one line per method and key count."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    slides = list(dict.fromkeys(r["slide"] for r in table if r["method"] != "per_event"))
    x = np.arange(len(slides))
    fig, (speed, state) = plt.subplots(1, 2, figsize=(11, 4.2))
    for index, keys in enumerate(sorted({r["keys"] for r in table})):
        for method, style in (("native", "--"), ("hopping", "-")):
            rows = {r["slide"]: r for r in table if r["keys"] == keys and r["method"] == method}
            if not rows:
                continue
            label = f"{'Spark window()' if method == 'native' else 'winagg hopping'}, {keys:,} keys"
            speed.plot(x, [rows[s]["events_per_second"] if s in rows else np.nan for s in slides], style,
                       marker="o", color=f"C{index}", label=label)
            state.plot(x, [rows[s]["state_bytes_per_key"] or np.nan if s in rows else np.nan for s in slides],
                       style, marker="o", color=f"C{index}", label=label)
        per_event = [r for r in table if r["keys"] == keys and r["method"] == "per_event"]
        if per_event:
            speed.axhline(per_event[0]["events_per_second"], color=f"C{index}", linestyle=":",
                          label=f"winagg per event, {keys:,} keys")
    for ax, title, label in ((speed, "throughput", "events per second (median)"),
                             (state, "state after the last micro-batch", "state bytes per key (RocksDB SST)")):
        ax.set_xticks(x, slides)
        ax.set_xlabel(f"slide (window size {table[0]['size']})")
        ax.set_ylabel(label)
        ax.set_yscale("log")
        ax.set_title(title)
        ax.grid(alpha=0.3)
    speed.legend(fontsize="small")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _report(table, out: Path) -> None:
    print(f"{'keys':>6s} {'slide':>11s} {'method':>9s} {'events/s':>10s} {'x native':>8s} "
          f"{'state rows/key':>14s} {'state B/key':>11s} {'x native':>8s}")
    for r in table:
        print(f"{r['keys']:6,d} {r['slide']:>11s} {r['method']:>9s} {r['events_per_second']:10,d} "
              f"{r.get('speedup_vs_native', ''):>8} {r['state_rows_per_key']:14} {r['state_bytes_per_key']:11} "
              f"{r.get('state_vs_native', ''):>8}")
    print(f"load average {common.load_average()}; wrote {out / 'stream.csv'} and stream.png")


def run(args) -> int:
    """Run the experiment; write stream.csv and stream.png into --out."""
    import pyspark

    from ..spark import session

    cfg = _settings(args)
    out = Path(cfg["out"])
    spark = session(cfg["master"], app_name="winagg-bench-stream", conf={"spark.sql.shuffle.partitions": "2"})
    scratch = Path(tempfile.mkdtemp(prefix="winagg-bench-stream-"))
    try:
        extra = dict(common.machine_info(), master=cfg["master"], spark=pyspark.__version__,
                     command=common.command_line(NAME, {k: cfg[k] for k in (
                         "master", "stream_events", "stream_keys", "stream_slides", "stream_size", "stream_hours",
                         "stream_files", "stream_lateness", "stream_jitter_seconds", "stream_methods", "aggs",
                         "repeat", "quick", "out")}))
        table = _measure(spark, cfg, scratch, extra)
    finally:
        spark.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    common.write_csv(out / "stream.csv", table, COLUMNS)
    plot(table, out / "stream.png")
    _report(table, out)
    return 0
