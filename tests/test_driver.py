"""The window driver's plans against brute force, and a plan cut into batches against one batch."""

import numpy as np
import pytest

import winagg
from winagg.driver import KEY_STARTS, WINDOW_STARTS, RangeFrames, RowFrames, python_driver, row_plan, run, time_plan
from winagg.registry import info


def windows_of(plan, n):
    """The rows each step's window holds, by replaying the plan on a plain list."""
    held, out = [], []
    for k in range(n):
        gone = (1 if k >= plan.window else 0) if plan.evicts.shape[0] == 0 else int(plan.evicts[k])
        assert gone <= len(held), f"step {k} evicts {gone} of {len(held)} items"
        del held[:gone]
        if plan.inserts.shape[0] == 0 or plan.inserts[k]:
            held.append(k)
        assert len(held) <= plan.room, f"step {k} holds {len(held)} items, room is {plan.room}"
        out.append(list(held))
    return out


def test_time_plan_keeps_the_rows_within_the_span():
    times = np.array([0, 0, 1, 3, 3, 3, 7, 8, 20], np.int64)
    for k, rows in enumerate(windows_of(time_plan(times, 3), times.size)):
        assert rows == [j for j in range(k + 1) if times[k] - 3 < times[j]]


def test_row_plan_keeps_the_last_rows():
    for k, rows in enumerate(windows_of(row_plan(10, 4), 10)):
        assert rows == list(range(max(0, k - 3), k + 1))


def _keyed_input(seed, n=60):
    rng = np.random.default_rng(seed)
    valid = rng.random(n) < 0.8
    reset = np.zeros(n, np.int8)
    reset[0] = KEY_STARTS
    reset[rng.random(n) < 0.1] = KEY_STARTS
    reset[(reset == 0) & (rng.random(n) < 0.05)] = WINDOW_STARTS
    times = np.zeros(n, np.int64)
    segment_time = 0
    for k in range(n):
        segment_time = 0 if reset[k] else segment_time + int(rng.integers(0, 3))
        times[k] = segment_time
    group_start = np.ones(n, np.bool_)
    group_start[1:] = (times[1:] != times[:-1]) | (reset[1:] != 0)
    return valid, reset, group_start, times


def _brute_rows(valid, reset, window):
    start, out = 0, []
    for k in range(valid.size):
        if reset[k]:
            start = k
        out.append([j for j in range(max(start, k - window + 1), k + 1) if valid[j]])
    return out


def _brute_range(valid, reset, group_start, times, span):
    start, out = 0, []
    for k in range(valid.size):
        if reset[k]:
            start = k
        end = k + 1
        while end < valid.size and not group_start[end]:
            end += 1
        out.append([j for j in range(start, end) if valid[j] and times[j] >= times[k] - span])
    return out


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("cut", [None, 17])
def test_frames_give_spark_frames_across_batches(seed, cut):
    valid, reset, group_start, times = _keyed_input(seed)
    n = valid.size
    if cut is not None:  # a range frame's batches end at whole groups
        cut = int(np.flatnonzero(group_start[cut:])[0]) + cut
    pieces = [slice(0, n)] if cut is None else [slice(0, cut), slice(cut, n)]
    driver = python_driver(info("two_stacks"), winagg.aggregations.get("collect"))
    rows, ranges = RowFrames(3), RangeFrames(2, np.int64)
    row_state = range_state = driver.init(2)
    got_rows, got_ranges = [], []
    values = np.arange(n)
    for part in pieces:
        plan = rows.plan(valid[part], reset[part])
        out, counts, row_state = run(driver, values[part], plan, row_state, want_counts=True)
        got_rows += [sorted(o) for o in out]
        plan = ranges.plan(valid[part], reset[part], group_start[part], times[part])
        out, counts, range_state = run(driver, values[part], plan, range_state, want_counts=True)
        got_ranges += [sorted(o) for o in ranges.spread(out)]
    assert got_rows == _brute_rows(valid, reset, 3)
    assert got_ranges == _brute_range(valid, reset, group_start, times, 2)


def test_the_timed_loops_answer_as_the_plain_ones_and_time_only_the_answering_steps():
    from winagg.bench.common import compiled_spec
    from winagg.driver import compiled_driver

    values = np.random.default_rng(3).normal(size=300)
    spec, algorithm = compiled_spec("sum"), info("two_stacks")
    expected = np.array([values[max(0, k - 39):k + 1].sum() for k in range(300)])
    dense = compiled_driver(algorithm, spec, dense=True, timed=True)
    out, cycles, _ = run(dense, values, row_plan(300, 40), dense.init(41))
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)
    assert cycles.shape == (300,) and (cycles > 0).all()

    general = compiled_driver(algorithm, spec, timed=True)
    emits = np.arange(300) >= 40
    out, cycles, _ = run(general, values, row_plan(300, 40)._replace(emits=emits), general.init(41))
    np.testing.assert_allclose(out[emits], expected[emits], rtol=1e-12, atol=1e-12)
    assert (cycles[emits] > 0).all()
