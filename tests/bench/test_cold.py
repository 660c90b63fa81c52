"""``winagg bench cold`` on an environment given (no install): the files it writes and the checks it makes."""

import csv
import sys

import pytest

from winagg.bench import cold
from winagg.cli import main


def test_cold_times_each_case_in_a_new_process(tmp_path):
    status = main(["bench", "cold", "--cold-venv", sys.prefix, "--cold-cases", "daba_lite", "--cold-rows", "2000",
                   "--out", str(tmp_path)])
    assert status == 0
    with open(tmp_path / "cold.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert set(cold.COLUMNS) == set(rows[0])
    assert [r["case"] for r in rows] == ["install", "daba_lite"]
    assert rows[0]["install_seconds"] == ""  # an environment given is not installed again
    case = rows[1]
    assert float(case["import_seconds"]) > 0 and float(case["first_call_seconds"]) > 0
    assert case["met"] == str(float(case["first_call_seconds"]) < float(case["target_seconds"]))


def test_unknown_cases_and_sources_are_named(tmp_path):
    with pytest.raises(SystemExit, match="'maxx'"):
        main(["bench", "cold", "--cold-cases", "maxx", "--out", str(tmp_path)])
    with pytest.raises(SystemExit, match="--cold-source.*pyproject.toml"):
        main(["bench", "cold", "--cold-source", str(tmp_path), "--out", str(tmp_path)])


def test_restore_puts_the_installed_cache_back(tmp_path):
    index, data = tmp_path / "__pycache__" / "f.nbi", tmp_path / "__pycache__" / "f.1.nbc"
    index.parent.mkdir()
    index.write_bytes(b"installed")
    installed = cold._cache_files(tmp_path)
    index.write_bytes(b"changed by a case")
    data.write_bytes(b"written by a case")
    cold._restore(tmp_path, installed)
    assert index.read_bytes() == b"installed" and not data.exists()
