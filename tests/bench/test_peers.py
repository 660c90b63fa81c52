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
                   "--peers-cold", "--out", str(tmp_path)])
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
