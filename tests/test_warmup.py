"""winagg.warmup: which kernels it compiles, and that a later process loads them instead of compiling."""

import os
import subprocess
import sys

import numpy as np
import pytest

from winagg import warmup

LOADS = """
import numpy as np, winagg
print(winagg.rolling(np.array([1.0, np.nan, 2.5, 4.0]), 2, "count").tolist())
"""


def test_tasks_are_each_groups_aggregations():
    assert warmup.tasks(["fiba", "rolling"], ["mean"]) == ["fiba:mean", "rolling:mean"]
    assert warmup.tasks(["window"]) == [f"window:{agg}" for agg in warmup.OUT_OF_ORDER]
    assert warmup.tasks(["pipeline"], ["mean"]) == ["pipeline:all"]  # the pipeline's aggregations are its own
    default = warmup.tasks()
    assert {task.split(":")[0] for task in default} >= {"rolling", "fiba", "window"}


def test_unknown_groups_and_tasks_are_named():
    with pytest.raises(ValueError, match="'rollin'"):
        warmup.tasks(["rollin"])
    with pytest.raises(ValueError, match="'rolling'.*GROUP:AGGREGATION"):
        warmup.compile_task("rolling")
    with pytest.raises(ValueError, match="jobs"):
        warmup.warm(["rolling:count"], jobs=-1)


def test_a_failing_task_is_named():
    with pytest.raises(RuntimeError, match="rolling:no_such_aggregation"):
        warmup.warm(["rolling:no_such_aggregation"], jobs=1)


def test_a_later_process_loads_what_the_warm_up_compiled(tmp_path):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    seconds = warmup.warm(["rolling:count"], jobs=1, env=env)
    assert set(seconds) == {"rolling:count"}
    cached = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*.nb*")}
    assert cached, "the warm-up wrote nothing to the cache"
    done = subprocess.run([sys.executable, "-c", LOADS], env=env, capture_output=True, text=True, check=True)
    assert done.stdout.split("\n")[0] == str([1, 1, 1, 2])  # count of non-NaN values in each 2-row window
    # every kernel came from the cache: a compile would have written a file or rewritten an index
    assert {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*.nb*")} == cached


def test_main_prints_each_tasks_seconds(capsys):
    assert warmup.main(["rolling:count"]) == 0
    task, seconds = capsys.readouterr().out.strip().split("=")
    assert task == "rolling:count" and float(seconds) >= 0
    assert np.isfinite(float(seconds))
