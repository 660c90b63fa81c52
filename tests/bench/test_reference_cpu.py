"""``winagg bench reference_cpu``: its options, and one cell end to end against the stand-in driver of
test_reference (built with g++ and make in seconds)."""

import csv
import shutil

import pytest

from test_reference import stand_in_sources
from winagg.bench import reference_build
from winagg.cli import main


def test_the_short_run_must_be_shorter(tmp_path):
    with pytest.raises(SystemExit, match="--cpu-short-rounds"):
        main(["bench", "reference_cpu", "--reference-src", str(tmp_path), "--rounds", "1000",
              "--cpu-short-rounds", "1000"])


def test_a_missing_source_folder_is_named(tmp_path, capsys):
    assert main(["bench", "reference_cpu", "--reference-src", str(tmp_path / "nowhere"), "--quick"]) == 2
    assert "no folder at" in capsys.readouterr().err


def test_a_cell_is_written_with_its_two_run_lengths(tmp_path, monkeypatch):
    if shutil.which("g++") is None or shutil.which("make") is None:
        pytest.skip("building the reference's driver needs g++ and make")
    monkeypatch.setenv(reference_build.CACHE_VARIABLE, str(tmp_path / "cache"))
    sources = stand_in_sources(tmp_path / "cpp")
    assert main(["bench", "reference_cpu", "--reference-src", str(sources), "--windows", "64", "--algorithms",
                 "daba_lite", "--aggs", "max", "--rounds", "4000", "--repeat", "2",
                 "--out", str(tmp_path / "out")]) == 0
    with open(tmp_path / "out" / "reference_cpu.csv", newline="") as f:
        (row,) = list(csv.DictReader(f))
    assert (row["window"], row["algorithm"], row["reference_name"], row["aggregation"]) == \
        ("64", "daba_lite", "daba_lite", "max")
    assert (row["short_rounds"], row["rounds"], row["repeats"]) == ("400", "4000", "2")
    assert "--cpu-short-rounds 400" in row["command"]
