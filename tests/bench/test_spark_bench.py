"""``winagg bench spark`` in --quick mode: the CSV it writes and the equality check it records, not speeds."""

import csv

import pytest

pytest.importorskip("pyspark")

from winagg.bench import spark as spark_bench  # noqa: E402
from winagg.cli import main  # noqa: E402
from measurements import is_measurement


@pytest.fixture(scope="module")
def spark():
    """One local session for this module (the bench reuses it); one made by other tests is left running."""
    from pyspark.sql import SparkSession

    from winagg.spark import session

    existing = SparkSession.getActiveSession()
    spark = session("local[2]")
    yield spark
    if existing is None:
        spark.stop()


def test_spark_bench_quick_times_every_method_and_records_equality(spark, tmp_path):
    out = tmp_path / "spark"
    assert main(["bench", "spark", "--quick", "--aggs", "max", "--spark-windows", "10", "--spark-range-rows", "50",
                 "--out", str(out)]) == 0
    with open(out / "spark.csv") as f:
        reader = csv.DictReader(f)
        rows = list(reader)
    assert tuple(reader.fieldnames) == spark_bench.COLUMNS
    points = {(r["frame"], r["window"], r["aggregation"], r["method"]) for r in rows}
    assert points == {(frame, window, "max", method) for frame, window in (("rows", "10"), ("range", "50"))
                      for method in spark_bench.METHODS} | {("none", "0", "none", floor) for floor in spark_bench.FLOORS}
    assert all(is_measurement(r["seconds"]) and r["repeats"] == "1" and r["rows"] == "20000" and r["keys"] == "16"
               for r in rows)
    mine = [r for r in rows if r["method"] == "winagg"]
    # the equality check ran on every winagg point, and only there
    assert [r["equal"] for r in mine] == ["True", "True"]
    assert all(r["equal"] == "" for r in rows if r["method"] != "winagg")
    assert all(is_measurement(r["speedup_vs_native_default"]) and is_measurement(r["speedup_vs_native_segment_tree"])
               for r in mine)
    # a range of (50 - 1) * SPACING order units holds about 50 rows
    assert {r["range"] for r in rows if r["frame"] == "range"} == {str(49 * spark_bench.SPACING)}
    assert (out / "spark.png").stat().st_size > 0
    # the caller's session is left as it was
    assert spark.conf.get(spark_bench.SEGMENT_TREE, None) in (None, "false")


def test_generated_order_values_are_distinct_per_key_and_arrive_shuffled(spark):
    df = spark_bench.make_data(spark, 1000, 16)
    try:
        rows = df.collect()
    finally:
        df.unpersist()
    assert len(rows) == 1000 and len({r.key for r in rows}) == 16
    per_key = {}
    for r in rows:
        per_key.setdefault(r.key, []).append(r.t)
    for times in per_key.values():
        assert len(set(times)) == len(times)
        assert times != sorted(times)  # not already in order
        # consecutive rows of a key are less than two spacings apart, so range frames hold about as many rows
        gaps = [b - a for a, b in zip(sorted(times), sorted(times)[1:])]
        assert 0 < min(gaps) and max(gaps) < 2 * spark_bench.SPACING
