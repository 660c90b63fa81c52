"""``winagg bench amta_pairs``: the pairs it writes, not how fast either algorithm is."""

import csv

import pytest

from winagg.cli import main


def test_quick_writes_one_row_per_window_and_aggregation(tmp_path):
    assert main(["bench", "amta_pairs", "--quick", "--out", str(tmp_path)]) == 0
    with open(tmp_path / "amta_pairs.csv", newline="") as f:
        (row,) = list(csv.DictReader(f))
    assert (row["window"], row["aggregation"], row["first"], row["second"]) == ("64", "sum", "amta", "two_stacks")
    assert (row["rows"], row["pairs"]) == (str(64 + 20_000), "2")
    assert float(row["ratio_min"]) <= float(row["ratio_median"]) <= float(row["ratio_max"])


def test_it_takes_exactly_two_algorithms(tmp_path):
    with pytest.raises(SystemExit, match="--algorithms: give two algorithms"):
        main(["bench", "amta_pairs", "--algorithms", "amta", "daba", "two_stacks", "--out", str(tmp_path)])
