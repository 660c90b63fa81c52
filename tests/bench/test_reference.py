"""``winagg bench reference``: where the reference's sources must be, winagg's side of a cell, and one
tiny run end to end against a stand-in for the reference's driver (built with g++ and make like the
real one, in seconds instead of minutes)."""

import csv
import shutil
import textwrap

import numpy as np
import pytest

from winagg.bench import reference, reference_build
from winagg.cli import main

# A stand-in for the reference's benchmark driver: it reports a timed part of (iterations - window)
# microseconds, so the reference's rate it implies is 1 M rounds/s whatever the cell.
STAND_IN_DRIVER = r"""
#include <cstdio>
#include <cstdlib>
int main(int argc, char** argv) {
    if (argc != 5) { std::fprintf(stderr, "error: wrong number of program options\n"); return 1; }
    long long window = std::atoll(argv[3]), iterations = std::atoll(argv[4]);
    std::printf("%s, %s, %lld, %lld\ncore runtime: %.9f\n", argv[1], argv[2], window, iterations,
                (iterations - window) * 1e-6);
    return 0;
}
"""
MAKEFILE = "benchmark_driver:\n\tmkdir -p bin\n\t$(CXX) -O1 src/benchmark_driver.cc -o bin/benchmark_driver\n"


def stand_in_sources(folder):
    (folder / "src").mkdir(parents=True)
    (folder / "Makefile").write_text(MAKEFILE)
    (folder / "src" / "benchmark_core.h").write_text("// the stand-in needs no core\n")
    (folder / "src" / "benchmark_driver.cc").write_text(textwrap.dedent(STAND_IN_DRIVER))
    return folder


def _bench(tmp_path, *options):
    return main(["bench", "reference", "--out", str(tmp_path / "out"), *map(str, options)])


@pytest.mark.parametrize("given, says", [
    (None, "--reference-src is required"),
    ("nowhere", "no folder at"),
    ("empty", "has no Makefile or src/benchmark_core.h"),
])
def test_the_sources_must_be_given_and_be_the_references(tmp_path, capsys, given, says):
    (tmp_path / "empty").mkdir()
    options = [] if given is None else ["--reference-src", tmp_path / given]
    assert _bench(tmp_path, *options, "--quick") == 2
    error = capsys.readouterr().err
    assert says in error
    assert "cpp/ folder" in error and "https://github.com/IBM/sliding-window-aggregators" in error
    assert not (tmp_path / "out").exists()


def test_an_algorithm_the_reference_lacks_is_refused(tmp_path):
    with pytest.raises(SystemExit, match="--algorithms: the reference's driver has no amta"):
        _bench(tmp_path, "--reference-src", tmp_path, "--algorithms", "amta")


def test_the_build_folder_follows_the_sources(tmp_path, monkeypatch):
    monkeypatch.setenv(reference_build.CACHE_VARIABLE, str(tmp_path / "cache"))
    sources = stand_in_sources(tmp_path / "cpp")
    before = reference_build.cache_folder(sources)
    (sources / "src" / "benchmark_core.h").write_text("// edited\n")
    after = reference_build.cache_folder(sources)
    assert before.parent == after.parent == tmp_path / "cache" and before != after


def _brute_force(values, window, agg):
    out = []
    for row in range(len(values)):
        held = [float(v) for v in values[max(0, row - window + 1): row + 1]]
        out.append({"sum": sum(held), "max": max(held), "bloom": len(set(held)),
                    "geomean": float(np.prod(held)) ** (1 / len(held))}[agg])
    return np.array(out)


@pytest.mark.parametrize("agg", ["sum", "max", "geomean", "bloom"])
def test_the_expected_answers_are_each_windows(agg):
    values = reference.stream(300)
    np.testing.assert_allclose(reference.expected(values, 7 if agg != "bloom" else 150, agg),
                               _brute_force(values, 7 if agg != "bloom" else 150, agg), rtol=1e-12)


@pytest.mark.parametrize("agg", ["sum", "bloom"])
def test_winaggs_rounds_are_timed_and_every_answer_checked(agg):
    values = reference.stream(64 + 500)
    seconds, answers = reference.winagg_round_seconds(values, 64, agg, "two_stacks_lite")
    assert isinstance(seconds, float) and answers.shape == values.shape
    assert reference.check(values, 64, agg, answers) == "ok"
    wrong = np.array(answers, np.float64)
    wrong[300] += 2 if agg == "sum" else 20  # beyond Bloom's tolerance of a 5% error
    assert reference.check(values, 64, agg, wrong).startswith("MISMATCH at row 300 of 1 rows")


def test_a_cell_gives_the_rounds_a_second_of_each_side(tmp_path, monkeypatch):
    """The command end to end: the stand-in built in the cache folder, then one cell of 3,000 rounds
    (max's 30,000,000 scaled)."""
    if shutil.which("g++") is None or shutil.which("make") is None:
        pytest.skip("building the reference's driver needs g++ and make")
    monkeypatch.setenv(reference_build.CACHE_VARIABLE, str(tmp_path / "cache"))
    sources = stand_in_sources(tmp_path / "cpp")
    options = ["--reference-src", sources, "--windows", 64, "--algorithms", "daba_lite", "--aggs", "max",
               "--scale", 0.0001, "--repeat", 2]
    assert _bench(tmp_path, *options) == 0
    with open(tmp_path / "out" / "reference.csv", newline="") as f:
        (row,) = list(csv.DictReader(f))
    assert (row["window"], row["algorithm"], row["reference_name"], row["aggregation"]) == \
        ("64", "daba_lite", "daba_lite", "max")
    assert (row["rounds"], row["repeats"], row["check"], row["note"]) == ("3000", "2", "ok", "")
    assert float(row["reference_mrounds_s"]) == pytest.approx(1.0)  # the stand-in's (iterations - window) µs
    assert float(row["ratio"]) == pytest.approx(float(row["winagg_mrounds_s"]), rel=1e-2)
    assert "--reference-src" in row["command"] and "None" not in row["command"]
    built = reference_build.cache_folder(sources) / "bin" / "benchmark_driver"
    assert built.is_file()
    stamp = built.stat().st_mtime_ns
    assert _bench(tmp_path, *options) == 0  # a second run uses the cached driver
    assert built.stat().st_mtime_ns == stamp
