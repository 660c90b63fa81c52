"""The MTA experiments of ``winagg bench`` in --quick mode: the files they write, not how fast anything is."""

import csv

import numpy as np

from winagg.bench import mta_bulk_evict, mta_latency
from winagg.cli import main

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _assert_png(path):
    assert path.read_bytes()[:8] == PNG_SIGNATURE


def _assert_machine_info(row, experiment):
    assert row["cpu"] and int(row["cores"]) >= 1
    assert row["command"].startswith(f"winagg bench {experiment}") and "--quick" in row["command"]


def test_window_and_eviction_sizes():
    assert mta_latency.window_sizes(22) == [16, 128, 1024, 8192, 65536, 2 ** 19, 2 ** 22]
    assert mta_latency.window_sizes(8) == [16, 128, 256]
    assert mta_bulk_evict.eviction_sizes(16) == [1, 2, 4, 8, 15]


def test_the_bulk_evictions_answer_for_the_items_left_and_fill_the_window_again():
    from winagg.bench.common import compiled_spec, paper_values
    from winagg.algos.registry import info

    window, counts, repeat, period = 64, [1, 8, 63], 2, 1 << 16
    values = paper_values(period)
    cycles, checksum = mta_bulk_evict.bulk_evict_cycles(info("lmta"), compiled_spec("sum"), values, window, counts,
                                                        repeat)
    # the window holds positions position - window .. position - 1 (value values[p mod period]);
    # each eviction leaves the newest window - count of them, then count inserts refill it
    want, position = 0.0, window
    for count in counts:
        for _ in range(repeat):
            want += values[np.arange(position - window + count, position) % period].sum()
            position += count
    assert checksum == want
    assert cycles.shape == (3, 2) and (cycles > 0).all()


def test_mta_latency_quick(tmp_path):
    assert main(["bench", "mta_latency", "--quick", "--out", str(tmp_path)]) == 0
    rows = _read(tmp_path / "mta_latency.csv")
    assert {(r["algorithm"], int(r["window"])) for r in rows} == {
        (a, n) for a in ("amta", "lmta") for n in (16, 128, 256)}
    for row in rows:
        _assert_machine_info(row, "mta_latency")
        assert int(row["rounds"]) == 2000
        assert 0 < float(row["min_ns"]) <= float(row["median_ns"]) <= float(row["max_ns"])
    _assert_png(tmp_path / "mta_latency.png")


def test_mta_bulk_evict_quick_caps_recalc(tmp_path):
    assert main(["bench", "mta_bulk_evict", "--quick", "--algorithms", "amta", "recalc", "--recalc-cap", "8",
                 "--out", str(tmp_path)]) == 0
    rows = _read(tmp_path / "mta_bulk_evict.csv")
    sizes = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1023]
    assert [int(r["count"]) for r in rows if r["algorithm"] == "amta"] == sizes
    for row in rows:
        _assert_machine_info(row, "mta_bulk_evict")
        assert int(row["window"]) == 1024
        if row["algorithm"] == "recalc" and int(row["count"]) > 8:
            assert row["note"].startswith("skipped") and row["median_us"] == ""
        else:
            assert 0 < float(row["min_us"]) <= float(row["median_us"]) <= float(row["max_us"])
    _assert_png(tmp_path / "mta_bulk_evict.png")


def test_mta_memory_quick_runs_each_store_in_a_subprocess(tmp_path):
    assert main(["bench", "mta_memory", "--quick", "--out", str(tmp_path)]) == 0
    rows = _read(tmp_path / "mta_memory.csv")
    assert [r["configuration"] for r in rows] == ["memory", "sqlite", "redis"]
    # sum of the papers' values 1 + (i mod 101) over the newest 2048 of 4096 items
    want = float(sum(1 + i % 101 for i in range(2048, 4096)))
    for row in rows:
        _assert_machine_info(row, "mta_memory")
        assert int(row["items"]) == 4096 and float(row["answer"]) == want
        # (VmHWM is updated lazily by the kernel: it may trail the last VmRSS reading a little)
        assert float(row["baseline_rss_mb"]) > 0 and float(row["peak_rss_mb"]) > 0
    assert float(rows[2]["redis_used_memory_mb"]) > 0
    _assert_png(tmp_path / "mta_memory.png")


def test_mta_multi_quick(tmp_path):
    assert main(["bench", "mta_multi", "--quick", "--out", str(tmp_path)]) == 0
    rows = _read(tmp_path / "mta_multi.csv")
    assert [(r["mode"], r["algorithm"]) for r in rows] == [("compiled", "daba_lite"), ("python", "daba_lite")]
    for row in rows:
        _assert_machine_info(row, "mta_multi")
        assert row["members"] == "count sum max" and int(row["window"]) == 64
        one, three = float(row["one_window_s"]), float(row["three_windows_s"])
        assert one > 0 and three > 0
        # the times are rounded to 0.1 us in the CSV, the ratio (3 decimals) is of the unrounded ones
        assert abs(float(row["ratio_one_to_three"]) - one / three) <= 0.001 + 2e-7 / three
    _assert_png(tmp_path / "mta_multi.png")
