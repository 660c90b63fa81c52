"""``winagg bench reference_ooo``: its plans replay the reference's bulk rounds, unsigned times included."""

import numpy as np
import pytest

from winagg.bench import reference_ooo as script
from winagg.cli import main


def reference_window(experiment, n, d, m, iterations):
    """The times the reference's driver holds at the end, its loop replayed with uint64 times."""
    held = list(range(iterations - d, iterations)) + list(range(n - d))
    i = n - d
    while i < iterations - d:
        horizon = (i - n + m - 1) % 2**64  # timestamp is uint64_t
        held = [t for t in held if t > horizon]
        if experiment == "bulk_evict":
            batch = range(i, min(i + m, iterations - d))
        else:  # the reference's range ends one past the next round's first time
            batch = range(i, i + m + 1)
        held += list(batch)
        i += m
    return held


def test_a_negative_evict_time_evicts_everything_and_never_stays_never():
    never, everything = script.NEVER, script.EVERYTHING
    horizons = np.array([never, -5, -1, 0, 7], np.int64)
    assert script.as_reference_horizons(horizons).tolist() == [never, everything, everything, 0, 7]


@pytest.mark.parametrize("experiment", ["bulk_evict", "bulk_evict_insert"])
@pytest.mark.parametrize("d, m", [(0, 2), (1, 2), (4, 2), (6, 3), (2, 5)])
def test_the_expected_answer_is_the_reference_drivers_window(experiment, d, m):
    n, iterations = 10, 40
    steps = script.reference_steps(experiment, n, d, m, iterations)
    values = [1 + t % 101 for t in reference_window(experiment, n, d, m, iterations)]
    assert script.expected("sum", steps) == pytest.approx(sum(values))
    assert script.expected("max", steps) == pytest.approx(max(values))


def test_a_distance_beyond_the_window_is_refused_before_any_build(tmp_path):
    with pytest.raises(SystemExit, match="--ooo-distances"):
        main(["bench", "reference_ooo", "--reference-src", str(tmp_path), "--window", "16", "--ooo-distances", "16"])


def test_a_missing_source_folder_says_where_to_get_it(tmp_path, capsys):
    assert main(["bench", "reference_ooo", "--reference-src", str(tmp_path / "nowhere"), "--quick"]) == 2
    error = capsys.readouterr().err
    assert "no folder at" in error and "github.com/IBM/sliding-window-aggregators" in error
