"""The RA and FlatFIT experiments in --quick mode: the files they write, not how fast anything is."""

import csv

from winagg.bench.ra_breakeven import smallest_window
from winagg.cli import main
from measurements import is_measurement


def _read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_smallest_window_bisects_to_the_nearest_ten():
    assert smallest_window(lambda n: n / 437, 1.0, 2000) == 440
    assert smallest_window(lambda n: 5.0, 1.0, 2000) == 10
    assert smallest_window(lambda n: 0.5, 1.0, 2000) is None


def test_ra_experiments_quick(tmp_path):
    assert main(["bench", "ra_breakeven", "--quick", "--aggs", "sum", "--out", str(tmp_path / "be")]) == 0
    rows = _read(tmp_path / "be" / "ra_breakeven.csv")
    assert [r["aggregation"] for r in rows] == ["sum"] and rows[0]["command"].startswith("winagg bench ra_breakeven")
    assert (tmp_path / "be" / "ra_breakeven.png").read_bytes()[:4] == b"\x89PNG"
    assert main(["bench", "ra_scaling", "--quick", "--ra-sizes", "6", "--out", str(tmp_path / "sc")]) == 0
    rows = _read(tmp_path / "sc" / "ra_scaling.csv")
    assert {r["part"] for r in rows} == {"per_item", "firing", "oscillating"}
    assert all(is_measurement(r["median_us_per_item"]) for r in rows)


def test_flatfit_experiment_quick(tmp_path):
    assert main(["bench", "flatfit", "--quick", "--ff-sizes", "3", "--multi-sizes", "3", "--out", str(tmp_path)]) == 0
    rows = _read(tmp_path / "flatfit.csv")
    # 3 algorithms x (4 single + 4 multi window sizes)
    assert len(rows) == 24
    assert all(r["ratio_flatfit_over_flatfat"] for r in rows if r["algorithm"] == "flatfit")
    assert (tmp_path / "flatfit.png").read_bytes()[:4] == b"\x89PNG"
