"""Experiment ``mta_memory``: resident set size of an AMTA window of 2^22 items, in memory vs in a store.

Each configuration runs in a fresh Python process (so one does not inherit
another's heap): it creates the window, inserts 16 items and notes its
resident set size (VmRSS; the baseline: interpreter, libraries, numba's
compiler), inserts the rest in batches (the papers' values), evicts half of
them in one bulk eviction, queries, and reports VmRSS, the peak (VmHWM) and the time
taken. ``memory`` is the plain-Python ``winagg.make("amta", "sum")``
aggregator; ``sqlite`` and ``redis`` are :class:`winagg.store.StoredWindow`
over :class:`~winagg.store.SQLiteStore` (a file in a temporary directory)
and :class:`~winagg.store.RedisStore` (a ``redis-server`` this experiment
starts on a free loopback port without persistence, and stops).
"""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from . import common, mta_common

NAME = "mta_memory"
DESCRIPTION = "resident set size of a 2^22-item amta window: in memory, in SQLite, in Redis (paper 001)"

DEFAULTS = dict(aggs=("sum",), rounds=0, budget=0.0, memory_log_items=22, stores=("memory", "sqlite", "redis"),
                out="results/mta_memory")
QUICK = dict(memory_log_items=12)
COLUMNS = (("configuration", "aggregation", "items", "baseline_rss_mb", "rss_mb", "peak_rss_mb",
            "growth_mb", "insert_seconds", "us_per_insert", "answer", "redis_used_memory_mb", "note")
           + mta_common.MACHINE_COLUMNS)
BATCH = 1 << 16
WARM_UP = 16


def add_arguments(group) -> None:
    """The options only this experiment takes."""
    group.add_argument("--memory-log-items", type=int, metavar="K",
                       help="items in the window: 2^K (default 22; --quick: 12)")
    group.add_argument("--stores", nargs="+", metavar="NAME",
                       help="configurations among memory, sqlite, redis (default: all three)")


def _status_mb(field: str) -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def _paper_batch(start: int, stop: int) -> list:
    # the papers' values 1 + (i mod 101) for i in start..stop-1, made per batch: the whole
    # stream as arrays would itself take ~100 MB at 2^22 items
    return (1.0 + np.arange(start, stop) % 101).tolist()


def child(configuration: str, agg: str, items: int, directory: str, port: int) -> dict:
    """Fill one window in this process and measure it (run by :func:`measure` in a subprocess)."""
    import winagg
    from winagg.store import RedisStore, SQLiteStore, StoredWindow

    if configuration == "memory":
        window = winagg.make("amta", agg)
    elif configuration == "sqlite":
        window = StoredWindow(SQLiteStore(Path(directory) / "mta.db"), agg)
    elif configuration == "redis":
        store = RedisStore(port=port, prefix=f"mta_memory:{agg}")
        store.clear()  # a window of an earlier run would be continued
        window = StoredWindow(store, agg)
    else:
        raise ValueError(f"unknown configuration {configuration!r}")
    # the baseline is taken once the window works: the first calls load numba's compiler (~40 MB)
    window.bulk_insert(_paper_batch(0, WARM_UP))
    baseline = _status_mb("VmRSS")
    started = time.perf_counter()
    for start in range(WARM_UP, items, BATCH):
        window.bulk_insert(_paper_batch(start, min(items, start + BATCH)))
    seconds = time.perf_counter() - started
    rss = _status_mb("VmRSS")
    half = window.evict_oldest(items // 2) if hasattr(window, "evict_oldest") else 0
    answer = float(window.query())
    if configuration != "memory":
        window.close()
    return dict(baseline_rss_mb=round(baseline, 1), rss_mb=round(rss, 1), peak_rss_mb=round(_status_mb("VmHWM"), 1),
                growth_mb=round(rss - baseline, 1), insert_seconds=round(seconds, 2),
                us_per_insert=round(seconds / max(items - WARM_UP, 1) * 1e6, 2), answer=answer, evicted=half)


def measure(configuration: str, agg: str, items: int, port: int = 0) -> dict:
    """:func:`child` in a fresh interpreter, with a temporary directory for SQLite."""
    with tempfile.TemporaryDirectory() as directory:
        code = ("import json, sys; from winagg.bench.mta_memory import child; "
                "print(json.dumps(child(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5]))))")
        done = subprocess.run([sys.executable, "-c", code, configuration, agg, str(items), directory, str(port)],
                              capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{configuration} run failed:\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["items"] = int(items)
    return result


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def redis_server():
    """A redis-server on a free loopback port without persistence; yields the port, stops the server."""
    if shutil.which("redis-server") is None:
        raise SystemExit("mta_memory: no redis-server on the PATH (scripts/setup.sh installs it)")
    port = _free_port()
    # hashes of up to 512 fields (RedisStore.BUCKET) kept as compact listpacks
    server = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                               "--appendonly", "no", "--hash-max-listpack-entries", "1024"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        import redis

        client = redis.Redis(port=port)
        for _ in range(200):
            try:
                client.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        yield port
    finally:
        server.terminate()
        server.wait(timeout=10)


def _redis_used_mb(port: int) -> float:
    import redis

    return round(redis.Redis(port=port).info("memory")["used_memory"] / 2 ** 20, 1)


def _settings(args) -> dict:
    get = lambda name: common.option(args, name, DEFAULTS, QUICK)  # noqa: E731
    cfg = dict(aggs=common.names(get("aggs")), memory_log_items=get("memory_log_items"),
               stores=common.names(get("stores")), quick=bool(args.quick), out=get("out"))
    common.check_names((), cfg["aggs"])
    unknown = set(cfg["stores"]) - {"memory", "sqlite", "redis"}
    if unknown:
        raise SystemExit(f"--stores: unknown {sorted(unknown)}; choose among memory, sqlite, redis")
    return cfg


def run(args) -> int:
    """Run the experiment; write mta_memory.csv and mta_memory.png into --out."""
    cfg = _settings(args)
    out = Path(cfg["out"])
    extra = mta_common.extra_columns(NAME, cfg, ("aggs", "memory_log_items", "stores", "quick", "out"))
    items = 2 ** cfg["memory_log_items"]
    rows = []
    with contextlib.ExitStack() as stack:
        port = stack.enter_context(redis_server()) if "redis" in cfg["stores"] else 0
        with common.progress(len(cfg["aggs"]) * len(cfg["stores"]), NAME) as bar:
            for agg in cfg["aggs"]:
                for configuration in cfg["stores"]:
                    bar.set_postfix_str(f"{agg} {configuration}")
                    result = measure(configuration, agg, items, port)
                    row = dict(configuration=configuration, aggregation=agg, note="",
                               load_avg_1min=common.load_average(), **result, **extra)
                    if configuration == "redis":
                        row["redis_used_memory_mb"] = _redis_used_mb(port)
                    rows.append(row)
                    bar.update(1)
    common.write_csv(out / "mta_memory.csv", rows, COLUMNS)
    _png(rows, out / "mta_memory.png")
    print(f"wrote {out / 'mta_memory.csv'} and {out / 'mta_memory.png'}")
    return 0


def _png(rows: list, path: Path) -> None:
    from . import plots

    fig, axes = plots._figure(1, width=6.0, height=4.2)
    ax = axes[0]
    labels = [f"{r['configuration']}\n{r['aggregation']}" for r in rows]
    ax.bar(labels, [r["growth_mb"] for r in rows], label="growth over the bare interpreter", color="C0")
    ax.bar(labels, [r["baseline_rss_mb"] for r in rows], bottom=[r["growth_mb"] for r in rows],
           label="interpreter + winagg imported", color="C7")
    ax.set_ylabel("resident set size [MB]")
    ax.set_title(f"amta window of {rows[0]['items']:,} items" if rows else "no configuration run")
    ax.legend(fontsize="small")
    plots._save(fig, path)
