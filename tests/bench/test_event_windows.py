"""``winagg bench window`` in --quick mode: the files it writes and the counts it reports, not speeds."""

import csv

from winagg.bench import event_windows as window_bench
from winagg.cli import main
from measurements import is_measurement


def test_window_bench_quick_writes_every_configuration(tmp_path):
    out = tmp_path / "window"
    assert main(["bench", "window", "--quick", "--out", str(out)]) == 0
    with open(out / "window.csv") as f:
        rows = list(csv.DictReader(f))
    assert [r["config"] for r in rows] == list(window_bench.CONFIGS)
    by_config = {r["config"]: r for r in rows}
    # a lateness of a day drops no flight; each per-event Window closes one window per distinct time
    assert all(r["late_events"] == "0" and is_measurement(r["median_events_s"]) for r in rows)
    assert by_config["rolling"]["results"] == "20000"
    assert by_config["window_batches"]["results"] == by_config["window_batches_python"]["results"] \
        == by_config["window_batches_rows"]["results"]
    assert by_config["shared_sizes"]["results"] == by_config["separate_sizes"]["results"] \
        == by_config["shared_sizes_python"]["results"] == by_config["separate_sizes_python"]["results"]
    assert (out / "window.png").stat().st_size > 0
