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


def test_help_is_short_and_lists_experiments(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["bench", "--help"])
    assert stop.value.code == 0
    text = capsys.readouterr().out
    for name in bench.EXPERIMENTS:
        assert f"  {name} " in text
    assert "--sizes" not in text and len(text.splitlines()) < 40


@pytest.mark.parametrize("name, own, foreign", [
    ("throughput", ("--sizes", "--repeat", "--bloom-rounds"), ("--trials", "--ff-sizes")),
    ("latency", ("--window", "--trials"), ("--sizes", "--bloom-rounds")),
    ("mta_multi", ("--multi-rows", "--window", "--repeat"), ("--sizes", "--trials")),
])
def test_experiment_help_shows_its_options_only(capsys, name, own, foreign):
    with pytest.raises(SystemExit) as stop:
        main(["bench", name, "--help"])
    assert stop.value.code == 0
    text = capsys.readouterr().out
    assert f"winagg bench {name}" in text
    for flag in own + ("--algorithms", "--aggs", "--rounds", "--quick", "--out"):
        assert flag in text
    for flag in foreign:
        assert flag not in text
    assert "defaults: " in text


def test_summary_table_shows_varying_columns_and_constants(tmp_path):
    from winagg.bench import common

    path = tmp_path / "x.csv"
    common.write_csv(path, [dict(algorithm="daba", window=1, rate=1.23456, cpu="Xeon", note=""),
                            dict(algorithm="two_stacks", window=1, rate=20, cpu="Xeon", note="")],
                     ("algorithm", "window", "rate", "cpu", "note"))
    lines = common.summary_table(path).splitlines()
    assert lines[0] == f"{path} (2 rows)"
    assert lines[1] == "  every row: window = 1"  # constant columns once; machine and empty ones left out
    assert lines[2].split() == ["algorithm", "rate"]
    assert lines[3].split() == ["daba", "1.235"] and lines[4].split() == ["two_stacks", "20"]
    assert len({len(line) for line in lines[2:]}) == 1  # aligned


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
