"""``winagg bench`` in --quick mode: the files it writes, not how fast anything is."""

import csv

import pytest

from winagg import bench
from winagg.bench import throughput
from winagg.cli import build_parser, main

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _assert_png(path):
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE
    assert b"IEND" in data[-16:]


def test_help_lists_experiments_and_options(capsys):
    with pytest.raises(SystemExit):
        main(["bench", "--help"])
    text = capsys.readouterr().out
    for name in bench.EXPERIMENTS:
        assert name in text
    for flag in ("--sizes", "--repeat", "--rounds", "--algorithms", "--aggs", "--quick", "--out", "--window",
                 "--trials"):
        assert flag in text


def test_unknown_experiment_is_refused():
    with pytest.raises(SystemExit):
        build_parser().parse_args(["bench", "nosuch"])


def test_throughput_quick(tmp_path):
    out = tmp_path / "throughput"
    assert main(["bench", "throughput", "--quick", "--algorithms", "two_stacks,daba_lite", "soe",
                 "--aggs", "sum", "max", "--out", str(out)]) == 0
    rows = _read(out / "throughput.csv")
    # 3 algorithms x 2 aggregations x 2 sizes (n = 1 and 2^5)
    assert len(rows) == 12
    assert {(r["algorithm"], r["aggregation"], r["window"]) for r in rows} == {
        (a, g, w) for a in ("two_stacks", "daba_lite", "soe") for g in ("sum", "max") for w in ("1", "32")}
    for row in rows:
        assert row["cpu"] and int(row["cores"]) >= 1 and row["command"].startswith("winagg bench throughput")
        if row["algorithm"] == "soe" and row["aggregation"] == "max":  # max has no inverse
            assert row["note"].startswith("not applicable") and row["median_mitems_s"] == ""
            continue
        assert int(row["repeats"]) == 2 and int(row["rows"]) == int(row["window"]) + int(row["rounds"])
        low, mid, high = (float(row[k]) for k in ("min_mitems_s", "median_mitems_s", "max_mitems_s"))
        assert 0 < low <= mid <= high
    _assert_png(out / "throughput.png")


def test_latency_quick(tmp_path):
    out = tmp_path / "latency"
    assert main(["bench", "latency", "--quick", "--out", str(out)]) == 0
    rows = _read(out / "latency.csv")
    assert [(r["algorithm"], r["aggregation"]) for r in rows] == [("two_stacks", "sum"), ("daba", "sum")]
    for row in rows:
        assert int(row["window"]) == 64 and int(row["rounds"]) == 3000 and int(row["trials"]) == 2
        stats = [float(row[f"{s}_ns"]) for s in ("min", "median", "p99", "p99_9", "p99_999", "max")]
        assert 0 < stats[0] and stats == sorted(stats)
        assert float(row["max_cycles"]) > 0 and float(row["cycles_per_ns"]) > 0
        assert float(row["raw_max_ns"]) >= stats[-1]  # the per-round minimum never raises the maximum
    _assert_png(out / "latency.png")


def test_budget_cuts_then_skips_recalc_only():
    # 1e-9 s per unit of work: n = 2^12 with 10^5 rounds is ~0.4 s, so a 0.1 s budget cuts it
    rounds, note = throughput.fit_budget("recalc", 4096, 100_000, 1e-9, 0.1)
    assert 1000 <= rounds < 100_000 and note.startswith("rounds cut")
    rounds, note = throughput.fit_budget("recalc", 2 ** 20, 1000, 1e-9, 0.1)
    assert rounds == 0 and note.startswith("skipped")
    assert throughput.fit_budget("recalc", 2 ** 20, 1000, None, 0.1) == (1000, "")  # nothing to predict from
    assert throughput.fit_budget("daba", 2 ** 20, 1000, 1e-9, 1e-6) == (1000, "")  # O(1): never cut


def test_throughput_runs_the_mtas_whose_space_is_prose(tmp_path):
    # amta/lmta describe their space as "about 2n partials (...)", which the memory check
    # could not parse: `winagg bench throughput --algorithms amta` stopped with a ValueError
    assert throughput.space_factor("about 2n partials (n items plus n internal nodes)") == 2
    assert [throughput.space_factor(s) for s in ("2n", "3n", "n + 1", "O(n)")] == [2, 3, 1, 1]
    out = tmp_path / "throughput"
    assert main(["bench", "throughput", "--quick", "--algorithms", "amta", "--aggs", "sum",
                 "--out", str(out)]) == 0
    assert [r["window"] for r in _read(out / "throughput.csv")] == ["1", "32"]
