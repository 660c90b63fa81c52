"""``winagg bench peers`` on a few thousand rows: the files it writes and the checks it makes, not speed."""

import csv

import numpy as np
import pytest

from winagg.bench import peers
from winagg.cli import main

pytest.importorskip("bottleneck")
pytest.importorskip("polars")


def _read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_peers_writes_checked_timings_and_ratios(tmp_path):
    status = main(["bench", "peers", "--quick", "--peers-rows", "3000", "--peers-windows", "50",
                   "--aggs", "sum", "count", "--peers-repeat", "1", "--peers-span-rows", "20",
                   "--peers-cold", "--peers-keys", "0", "--threads", "1", "--peers-order-aggs", "--out", str(tmp_path)])
    assert status == 0
    rows = _read(tmp_path / "peers.csv")
    assert set(peers.COLUMNS) <= set(rows[0])
    # 2 inputs (clean, 1% NaN) x (1 row window + the 1h time window) x 2 aggregations x 5 implementations
    assert len(rows) == 2 * 2 * 2 * len(peers.IMPLEMENTATIONS)
    assert {r["kind"] for r in rows} == {"rows", "time"}
    for r in rows:
        if r["implementation"] == "bottleneck" and r["kind"] == "time" or \
                r["aggregation"] == "count" and r["implementation"] in ("bottleneck", "polars"):
            assert r["check"].startswith("n/a") and r["median_seconds"] == ""
        else:
            assert r["check"] == "ok", r
            assert float(r["median_seconds"]) > 0
    ratio_rows = _read(tmp_path / "peers_ratios.csv")
    assert set(peers.RATIO_COLUMNS) == set(ratio_rows[0])
    assert {(r["ours"], r["peer"]) for r in ratio_rows if r["aggregation"] == "sum" and r["kind"] == "rows"} == \
        {(o, p) for o in peers.OURS for p in peers.PEERS}
    assert (tmp_path / "peers.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not (tmp_path / "peers_cold.csv").exists()  # --peers-cold with no aggregation skips it


def test_keyed_points_are_checked_against_pandas_per_thread_count(tmp_path):
    status = main(["bench", "peers", "--quick", "--peers-rows", "2000", "--peers-windows", "20", "--aggs", "max",
                   "--peers-repeat", "1", "--peers-span-rows", "0", "--peers-nan", "0", "--peers-cold",
                   "--peers-keys", "15", "--peers-keyed-rows", "2000", "--peers-keyed-window", "7",
                   "--peers-keyed-span-rows", "5", "--peers-keyed-aggs", "mean", "std", "--threads", "1", "2",
                   "--peers-order-aggs", "--out", str(tmp_path)])
    assert status == 0
    keyed = [r for r in _read(tmp_path / "peers.csv") if r["kind"].startswith("keyed")]
    # (rows, 1h) x 2 aggregations x 2 thread counts x 5 implementations
    assert len(keyed) == 2 * 2 * 2 * len(peers.IMPLEMENTATIONS)
    assert {r["threads"] for r in keyed} == {"1", "2"} and {r["keys"] for r in keyed} == {"15"}
    for r in keyed:
        if r["implementation"] in ("winagg", "polars", "pandas"):
            assert r["check"] == "ok", r
        else:
            assert r["check"].startswith("n/a")
    ratio_rows = [r for r in _read(tmp_path / "peers_ratios.csv") if r["kind"].startswith("keyed")]
    assert {(r["ours"], r["peer"], r["threads"]) for r in ratio_rows} == \
        {("winagg", p, t) for p in ("polars", "pandas") for t in ("1", "2")}


def test_order_statistics_are_checked_against_pandas(tmp_path):
    status = main(["bench", "peers", "--quick", "--peers-rows", "3000", "--peers-windows", "1", "40", "--aggs", "max",
                   "--peers-repeat", "1", "--peers-span-rows", "0", "--peers-cold", "--peers-keys", "0",
                   "--threads", "1", "2", "--peers-order-aggs", "median", "quantile", "--out", str(tmp_path)])
    assert status == 0
    ordered = [r for r in _read(tmp_path / "peers.csv") if r["aggregation"] in ("median", "quantile")]
    # 2 inputs (clean, 1% NaN) x 2 windows x 2 order statistics x 2 thread counts x 5 implementations
    assert len(ordered) == 2 * 2 * 2 * 2 * len(peers.IMPLEMENTATIONS)
    assert {r["threads"] for r in ordered} == {"1", "2"}
    for r in ordered:
        offered = r["implementation"] in ("winagg", "polars", "pandas") or \
            r["implementation"] == "bottleneck" and r["aggregation"] == "median"
        assert r["check"] == "ok" if offered else r["check"].startswith("n/a"), r
    with pytest.raises(SystemExit, match="--peers-order-aggs"):
        main(["bench", "peers", "--peers-order-aggs", "mode"])


def test_threads_option_refuses_what_is_not_a_count():
    from winagg.cli import build_parser

    args = build_parser().parse_args(["bench", "peers", "--threads", "0"])
    with pytest.raises(SystemExit, match="--threads"):
        peers._settings(args)
    assert peers._settings(build_parser().parse_args(["bench", "peers", "--threads", "all", "3"]))["threads"] == [None, 3]


def test_check_reports_disagreements():
    want = np.array([1.0, np.nan, 3.0])
    assert peers.check(want.copy(), want) == "ok"
    assert peers.check(np.array([1.0, 2.0, 3.0]), want).startswith("mismatch: NaN at row 1")
    assert peers.check(np.array([1.0, np.nan, 3.1]), want).startswith("mismatch: row 2")


@pytest.mark.parametrize("given,want", [([], []), (["none"], []), (["sum", "max"], ["sum", "max"])])
def test_peers_cold_none_or_the_bare_flag_skips_cold_starts(given, want):
    from winagg.cli import build_parser

    args = build_parser().parse_args(["bench", "peers", "--peers-cold", *given])
    assert peers._settings(args)["cold"] == want
