"""Experiment ``spark``: winagg.spark.sliding vs Spark's own window functions on one DataFrame.

The DataFrame (generated in Spark, cached and counted before any timing):
``--spark-rows`` rows, ``--spark-keys`` keys (``key``, a long), an order column
``t`` (a long, distinct within a key, rows arriving shuffled) and a double
``v``. Within a key the order values are ``j * SPACING + jitter`` (jitter in
``[0, SPACING)``), so a range frame ``rangeBetween(-(R - 1) * SPACING, 0)``
holds about R rows: the range point "range ~R" is comparable with the row
frame of R rows.

For each row frame of ``--spark-windows`` rows and the range frame of about
``--spark-range-rows`` rows, and each aggregation (``--aggs``: max, min, sum, and the
exact ``quantile`` (q = 0.9) and ``median``, whose Spark peer is ``percentile(v, q)``
over the same frame; default max and sum),
these methods add the window column, each timed as a full action (a write to
Spark's ``noop`` format, so every row is computed and nothing is stored):

* ``winagg``: ``winagg.spark.sliding`` (repartition by key, sort within
  partitions, a scalar Arrow iterator UDF over the key, order and value
  columns that returns the answers of the compiled windows);
* ``native_default``: ``F.max/F.sum(v).over(Window.partitionBy(key).orderBy(t)
  .rowsBetween(-(N - 1), 0))`` (or ``rangeBetween``) with
  ``spark.sql.window.segmentTree.enabled=false``, Spark's default, which
  re-aggregates a moving frame on every row;
* ``native_segment_tree``: the same with ``spark.sql.window.segmentTree.enabled=true``;
* ``pass_through`` (once, not per window): the same repartition + sort +
  Arrow UDF over the same columns as winagg, with a function that returns the
  value column unchanged: the floor of any method that sends those columns
  through Python;
* ``shuffle_sort`` (once, beside the pass-through): the same repartition + sort
  without Python, the part of every method's time that Spark's window functions
  share (the pass-through less this is the cost of moving the rows through Python).

The methods of a point run interleaved, round by round (each method once per
round, ``--repeat`` rounds), so that a change of the machine's load falls on all
of them alike; the two floors likewise. A point's ``seconds`` are the median
wall-clock time of its actions (the work runs in the JVM and in Python worker
processes); ``cpu_seconds`` the median CPU time of all of them (this process and
its descendants, which in local mode are the whole of Spark), less sensitive to
other work on a shared machine. A method stops repeating once its runs add up to
``--budget`` seconds (Spark's default frame at 10,000 rows takes minutes); the
CSV says how many ran. Every method is run once on a small DataFrame first (JVM
code paths, Python workers, numba kernels), except with ``--quick``; and each
timed run of a Python method follows an untimed one of it on that small
DataFrame, because Spark ends a Python worker left idle for a minute (as one is
during a slow native run) and a new worker imports winagg and loads its kernels
again: the timings are of warm workers, as Spark's are of a warm JVM. Every winagg
column is checked against the native column (the segment-tree run; both native
settings compute the same function) by an aggregate of the differences over all
rows: ``equal`` in the CSV, and the run fails if any point differs.
"""

from __future__ import annotations

import math
import os
import statistics
import time
from pathlib import Path

from . import common

NAME = "spark"
METHODS = ("winagg", "native_default", "native_segment_tree")
DESCRIPTION = "winagg.spark.sliding vs Spark's window functions (default and segment tree), rows and range frames"
DEFAULTS = dict(aggs=("max", "sum"), rounds=0, budget=200.0, out="results/spark", repeat=3, master="local[2]",
                spark_rows=4_000_000, spark_keys=16, spark_windows=(100, 1000, 10_000), spark_range_rows=1000,
                spark_partitions=8, spark_conf=(), spark_methods=METHODS)
QUICK = dict(repeat=1, spark_rows=20_000, spark_windows=(10, 100), spark_range_rows=100, spark_partitions=2)
PASS_THROUGH = "pass_through"
SHUFFLE_SORT = "shuffle_sort"
#: The floors, timed once: every method that sends its columns through Python, and the part Spark's
#: window functions share.
FLOORS = (PASS_THROUGH, SHUFFLE_SORT)
#: The methods that run in Python workers (kept warm before each timed run).
PYTHON_METHODS = ("winagg", PASS_THROUGH)
#: Spark's switch between its default moving frame and the segment tree (since Spark 4.2; off by default; it
#: serves frames of partitions of at least spark.sql.window.segmentTree.minPartitionRows = 64 rows).
SEGMENT_TREE = "spark.sql.window.segmentTree.enabled"
#: Order values of consecutive rows of a key are SPACING apart on average.
SPACING = 10
#: Relative tolerance of the equality check (sums of doubles in another order round differently).
TOLERANCE = 1e-9
#: The exact order statistics and their q: Spark's peer is percentile(v, q) (it refuses median() over a frame).
PERCENTILES = {"quantile": 0.9, "median": 0.5}
COLUMNS = ("frame", "window", "range", "aggregation", "method", "seconds", "min_seconds", "max_seconds", "cpu_seconds",
           "repeats", "rows", "keys", "partitions", "equal", "speedup_vs_native_default", "speedup_vs_native_segment_tree",
           "load", "master", "spark", "arrow_batch", "cpu", "cores", "python", "numba", "numpy", "platform", "command")


def add_arguments(group) -> None:
    """The options only this experiment takes (``--repeat`` is shared with ra_breakeven and flatfit)."""
    group.add_argument("--master", metavar="URL", help="Spark master (default local[2])")
    group.add_argument("--spark-rows", type=int, metavar="N", help="rows of the DataFrame (default 4,000,000)")
    group.add_argument("--spark-keys", type=int, metavar="K", help="keys of the DataFrame (default 16)")
    group.add_argument("--spark-windows", type=int, nargs="+", metavar="N",
                       help="row frames, in rows (default 100 1000 10000)")
    group.add_argument("--spark-range-rows", type=int, metavar="R",
                       help="the range frame holds about R rows (default 1000; 0: no range frame)")
    group.add_argument("--spark-partitions", type=int, metavar="P",
                       help="partitions of the shuffle by key, for every method (default 8)")
    group.add_argument("--spark-methods", nargs="+", metavar="NAME",
                       help=f"methods to time, of: {' '.join(METHODS)} (default: all; the pass-through always runs)")
    group.add_argument("--spark-conf", nargs="+", metavar="KEY=VALUE",
                       help="more Spark settings, e.g. spark.sql.execution.arrow.maxRecordsPerBatch=20000")


# ---------------------------------------------------------------- settings and session
def _settings(args) -> dict:
    get = lambda name: common.option(args, name, DEFAULTS, QUICK)  # noqa: E731
    cfg = {name: get(name) for name in ("budget", "out", "repeat", "master", "spark_rows", "spark_keys",
                                        "spark_range_rows", "spark_partitions")}
    cfg.update(aggs=common.names(get("aggs")), spark_windows=[int(w) for w in get("spark_windows")],
               spark_conf=list(get("spark_conf")), spark_methods=common.names(get("spark_methods")),
               quick=bool(args.quick))
    unknown = [m for m in cfg["spark_methods"] if m not in METHODS]
    if unknown:
        raise SystemExit(f"winagg bench spark: unknown method {unknown[0]!r} (methods: {' '.join(METHODS)})")
    for agg in cfg["aggs"]:
        if agg not in ("max", "min", "sum", *PERCENTILES):
            raise SystemExit(f"winagg bench spark: --aggs takes max, min, sum, quantile and median (Spark's "
                             f"windowed aggregates and its exact percentile), got {agg!r}")
    if cfg["spark_rows"] < cfg["spark_keys"] or cfg["spark_keys"] < 1:
        raise SystemExit("winagg bench spark: --spark-rows must be at least --spark-keys >= 1")
    return cfg


def _conf_pairs(items) -> dict:
    pairs = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"winagg bench spark: --spark-conf takes KEY=VALUE, got {item!r}")
        pairs[key.strip()] = value.strip()
    return pairs


def _session(cfg):
    """``(spark, finish)``: a winagg session on the master, and what to call at the end.

    A session made here is stopped at the end; in a caller's session (tests, a
    notebook) the run-time settings changed here are put back instead.
    """
    from pyspark.sql import SparkSession

    from ..spark import session

    existing = SparkSession.getActiveSession()
    conf = {"spark.sql.shuffle.partitions": str(cfg["spark_partitions"]), **_conf_pairs(cfg["spark_conf"])}
    if existing is None:
        spark = session(cfg["master"], app_name="winagg-bench-spark", conf=conf)
        return spark, spark.stop
    spark = existing
    before = {key: spark.conf.get(key, None) for key in [*conf, SEGMENT_TREE]}
    for key, value in conf.items():
        try:
            spark.conf.set(key, value)
        except Exception:  # static settings (memory, ...) stay the caller's
            before.pop(key)

    def finish():
        for key, value in before.items():
            spark.conf.unset(key) if value is None else spark.conf.set(key, value)

    return spark, finish


# ---------------------------------------------------------------- data and methods
def _multiplier(rows: int) -> int:
    """An odd multiplier coprime with ``rows``: ``(i * a + b) % rows`` is a permutation of the rows."""
    a = 1_000_003
    while math.gcd(a, rows) != 1:
        a += 2
    return a


def make_data(spark, rows: int, keys: int):
    """The cached, counted DataFrame ``key, t, v`` (see the module docstring)."""
    from pyspark.sql import functions as F

    position = (F.col("id") * _multiplier(rows) + 12_345) % rows  # row id -> its place in key/order
    mix = (position * 2_654_435_761 + 97) % 1_000_003  # a deterministic pseudo-random number per row
    df = (spark.range(rows, numPartitions=max(2, int(spark.conf.get("spark.sql.shuffle.partitions"))))
          .select(position.alias("p"), mix.alias("m"))
          .select((F.col("p") % keys).alias("key"),
                  (F.floor(F.col("p") / keys) * SPACING + F.col("m") % SPACING).alias("t"),
                  (F.col("m") / 1000.0 - 500.0).alias("v")))
    df = df.cache()
    df.count()
    return df


def frame_span(frame: str, window: int):
    """``(rows, range)`` arguments of winagg.spark.sliding for this point."""
    return (window, None) if frame == "rows" else (None, (window - 1) * SPACING)


def _native(df, frame: str, window: int, agg: str):
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    spec = Window.partitionBy("key").orderBy("t")
    rows, span = frame_span(frame, window)
    spec = spec.rowsBetween(-(rows - 1), 0) if frame == "rows" else spec.rangeBetween(-span, 0)
    column = F.percentile("v", PERCENTILES[agg]) if agg in PERCENTILES else getattr(F, agg)("v")
    return df.withColumn(f"native_{agg}", column.over(spec))


def _winagg(df, frame: str, window: int, agg: str, partitions: int):
    from ..spark import sliding

    rows, span = frame_span(frame, window)
    spec = ("quantile", "v", PERCENTILES[agg]) if agg == "quantile" else (agg, "v")
    return sliding(df, partition_by="key", order_by="t", rows=rows, range=span, aggs={f"w_{agg}": spec},
                   num_partitions=partitions)


def _values_unchanged(columns):
    for _, _, values in columns:
        yield values


def _shuffle_sort(df, partitions: int):
    return df.repartition(partitions, "key").sortWithinPartitions("key", "t")


def _pass_through(df, partitions: int):
    from ..spark._common import arrow_iter_udf

    return _shuffle_sort(df, partitions).withColumn("w", arrow_iter_udf(_values_unchanged, "double")("key", "t", "v"))


def method_frame(spark, df, method: str, frame: str, window: int, agg: str, partitions: int):
    """The DataFrame of ``method`` at this point, with Spark's segment-tree switch set for it."""
    if method == PASS_THROUGH:
        return _pass_through(df, partitions)
    if method == SHUFFLE_SORT:
        return _shuffle_sort(df, partitions)
    if method == "winagg":
        return _winagg(df, frame, window, agg, partitions)
    spark.conf.set(SEGMENT_TREE, "true" if method == "native_segment_tree" else "false")
    return _native(df, frame, window, agg)


def _process_tree_cpu() -> float:
    """CPU seconds (user + system, with reaped children) of this process and all its descendants.

    In local mode they are the whole of Spark: the JVM, its Python daemon and
    workers. NaN where there is no Linux /proc.
    """
    parents, ticks = {}, {}
    try:
        entries = [e for e in os.listdir("/proc") if e.isdigit()]
    except OSError:
        return math.nan
    for entry in entries:
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()  # after "pid (command)"
        except OSError:  # the process ended meanwhile
            continue
        parents[int(entry)] = int(fields[1])
        ticks[int(entry)] = sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
    tree, frontier = {os.getpid()}, [os.getpid()]
    children = {}
    for pid, parent in parents.items():
        children.setdefault(parent, []).append(pid)
    while frontier:
        for child in children.get(frontier.pop(), []):
            if child not in tree:
                tree.add(child)
                frontier.append(child)
    return sum(ticks.get(pid, 0) for pid in tree) / os.sysconf("SC_CLK_TCK")


def _force(frame) -> tuple:
    """``(wall, cpu)`` seconds of an action that computes every row and column of ``frame``."""
    cpu, began = _process_tree_cpu(), time.perf_counter()
    frame.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - began, _process_tree_cpu() - cpu


def interleaved(makers: dict, repeat: int, budget: float, before=None) -> dict:
    """``{method: [(wall, cpu), ...]}``: ``repeat`` rounds, each running every method of ``makers``
    (``method -> make_frame``) once in turn; a method's runs stop once their wall time adds up to
    ``budget`` (> 0). ``before(method)``, if given, runs untimed before each timed run."""
    runs = {method: [] for method in makers}
    for _ in range(repeat):
        for method, make_frame in makers.items():
            if budget > 0 and sum(wall for wall, _ in runs[method]) >= budget:
                continue
            if before is not None:
                before(method)
            runs[method].append(_force(make_frame()))
    return runs


def check_equal(spark, df, frame: str, window: int, agg: str, partitions: int) -> tuple:
    """``(equal, rows, worst)``: winagg's column against Spark's (segment tree on) over every row."""
    from pyspark.sql import functions as F

    spark.conf.set(SEGMENT_TREE, "true")
    mine, theirs = F.col(f"w_{agg}"), F.col(f"native_{agg}")
    both = _native(_winagg(df, frame, window, agg, partitions), frame, window, agg)
    gap = F.abs(mine - theirs)
    differs = (mine.isNull() != theirs.isNull()) | (gap > TOLERANCE * F.greatest(F.abs(theirs), F.lit(1.0)))
    row = both.agg(F.count(F.lit(1)).alias("rows"), F.sum(differs.cast("long")).alias("differ"),
                   F.max(gap).alias("worst")).first()
    return row["differ"] == 0, row["rows"], row["worst"]


# ---------------------------------------------------------------- the experiment
def points(cfg) -> list:
    """``(frame, window)`` of every point: the row frames, then the range frame."""
    out = [("rows", w) for w in cfg["spark_windows"]]
    if cfg["spark_range_rows"]:
        out.append(("range", cfg["spark_range_rows"]))
    return out


def _small_data(spark, cfg):
    return make_data(spark, min(cfg["spark_rows"], 200 * cfg["spark_keys"]), cfg["spark_keys"])


def _warm_up(spark, cfg, plan, small):
    """Every method once on the small DataFrame: JVM code paths, Python workers, numba kernels."""
    for method in FLOORS:
        _force(method_frame(spark, small, method, "rows", 10, "max", cfg["spark_partitions"]))
    for frame in sorted({f for f, _ in plan}):
        for agg in cfg["aggs"]:
            for method in cfg["spark_methods"]:
                _force(method_frame(spark, small, method, frame, 10, agg, cfg["spark_partitions"]))


def _warm_workers(cfg, spark, small, frame: str, agg: str):
    """``before`` of :func:`interleaved`: a Python method once on the small DataFrame, untimed
    (None with ``--quick``, a smoke test)."""
    def before(method):
        if method in PYTHON_METHODS:
            _force(method_frame(spark, small, method, frame, 10, agg, cfg["spark_partitions"]))
    return None if cfg["quick"] else before


def _row(cfg, frame, window, agg, method, runs, extra):
    wall, cpu = [w for w, _ in runs], [c for _, c in runs]
    return dict(frame=frame, window=window, range=frame_span(frame, window)[1] if frame == "range" else "",
                aggregation=agg, method=method, seconds=round(statistics.median(wall), 3),
                min_seconds=round(min(wall), 3), max_seconds=round(max(wall), 3),
                cpu_seconds=round(statistics.median(cpu), 3), repeats=len(runs),
                rows=cfg["spark_rows"], keys=cfg["spark_keys"], partitions=cfg["spark_partitions"],
                load=common.load_average(), **extra)


def _speedups(table):
    seconds = {(r["frame"], r["window"], r["aggregation"], r["method"]): r["seconds"] for r in table}
    for row in table:
        if row["method"] == "winagg":
            point = (row["frame"], row["window"], row["aggregation"])
            for method in ("native_default", "native_segment_tree"):
                if seconds.get(point + (method,)):
                    row[f"speedup_vs_{method}"] = round(seconds[point + (method,)] / row["seconds"], 2)


def run(args) -> int:
    """Run the experiment; write spark.csv and spark.png into --out."""
    import pyspark

    cfg = _settings(args)
    out = Path(cfg["out"])
    plan = points(cfg)
    spark, finish = _session(cfg)
    try:
        extra = dict(common.machine_info(), master=cfg["master"], spark=pyspark.__version__,
                     arrow_batch=spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch"),
                     command=common.command_line(NAME, {k: cfg[k] for k in (
                         "master", "spark_rows", "spark_keys", "spark_windows", "spark_range_rows",
                         "spark_partitions", "aggs", "spark_methods", "repeat", "budget", "spark_conf", "quick", "out")
                         if cfg[k] or k != "spark_conf"}))
        table = _measure(spark, cfg, plan, extra)
    finally:
        finish()
    _speedups(table)
    common.write_csv(out / "spark.csv", table, COLUMNS)
    from .plots import spark_png

    spark_png([r for r in table if r["method"] != SHUFFLE_SORT], cfg["aggs"], [f"{frame} {window:,}" if frame == "rows" else f"range ~{window:,}"
                                   for frame, window in plan], out / "spark.png")
    _report(table, out)
    unequal = [r for r in table if r.get("equal") is False]
    if unequal:
        raise SystemExit("winagg bench spark: winagg.spark.sliding differs from Spark's window function at "
                         + ", ".join(f"{r['frame']} {r['window']} {r['aggregation']}" for r in unequal))
    return 0


def _measure(spark, cfg, plan, extra) -> list:
    parts, repeat, budget = cfg["spark_partitions"], cfg["repeat"], cfg["budget"]
    with common.progress(2 + len(plan) * len(cfg["aggs"]), NAME) as bar:
        bar.set_postfix_str("data and warm-up")
        df = make_data(spark, cfg["spark_rows"], cfg["spark_keys"])
        small = df if cfg["quick"] else _small_data(spark, cfg)  # the quick DataFrame is as small as this
        if not cfg["quick"]:
            _warm_up(spark, cfg, plan, small)
        bar.update(1)
        bar.set_postfix_str("floors")
        makers = {method: (lambda m=method: method_frame(spark, df, m, "rows", 0, "none", parts)) for method in FLOORS}
        runs = interleaved(makers, repeat, budget, _warm_workers(cfg, spark, small, "rows", "max"))
        table = [_row(cfg, "none", 0, "none", method, runs[method], extra) for method in FLOORS]
        bar.update(1)
        for frame, window in plan:
            for agg in cfg["aggs"]:
                bar.set_postfix_str(f"{frame} {window} {agg}")
                makers = {method: (lambda m=method: method_frame(spark, df, m, frame, window, agg, parts))
                          for method in cfg["spark_methods"]}
                runs = interleaved(makers, repeat, budget, _warm_workers(cfg, spark, small, frame, agg))
                for method in cfg["spark_methods"]:
                    row = _row(cfg, frame, window, agg, method, runs[method], extra)
                    if method == "winagg":
                        row["equal"], _, worst = check_equal(spark, df, frame, window, agg, parts)
                        if not row["equal"]:
                            print(f"NOT EQUAL: {frame} {window} {agg}: largest difference {worst}")
                    table.append(row)
                bar.update(1)
        if small is not df:
            small.unpersist()
        df.unpersist()
    return table


def _report(table, out: Path) -> None:
    floor, shared = (next(r for r in table if r["method"] == method) for method in FLOORS)
    print(f"pass-through (repartition + sort + Arrow UDF, values unchanged): {floor['seconds']:.2f} s "
          f"({floor['cpu_seconds']:.2f} s CPU); repartition + sort alone: {shared['seconds']:.2f} s "
          f"({shared['cpu_seconds']:.2f} s CPU)")
    print("seconds: wall-clock median (CPU seconds of the Spark processes); speed-up: Spark wall / winagg wall")
    print(f"{'frame':6s} {'window':>7s} {'agg':4s} " + " ".join(f"{m:>20s}" for m in METHODS)
          + f" {'x default':>9s} {'x segtree':>9s} equal")
    points = {}
    for r in table:
        if r["method"] not in FLOORS:
            points.setdefault((r["frame"], r["window"], r["aggregation"]), {})[r["method"]] = r
    for (frame, window, agg), by in points.items():
        mine = by.get("winagg", {})
        cells = [f"{by[m]['seconds']:8.2f} ({by[m]['cpu_seconds']:8.2f})" if m in by else f"{'-':>20s}"
                 for m in METHODS]
        print(f"{frame:6s} {window:7,d} {agg:4s} " + " ".join(cells)
              + f" {mine.get('speedup_vs_native_default', ''):>9} {mine.get('speedup_vs_native_segment_tree', ''):>9}"
              f" {mine.get('equal', '')}")
    print(f"load average {common.load_average()}; wrote {out / 'spark.csv'} and spark.png")
