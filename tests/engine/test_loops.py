"""The window driver's plans against brute force, and a plan cut into batches against one batch."""

import pickle

import numpy as np
import pytest

import winagg
from winagg.engine.kernels import python_driver
from winagg.engine.plans import row_plan, time_plan
from winagg.engine.loops import run
from winagg.bench.cycles import CLOCK
from winagg.engine.frames import KEY_STARTS, WINDOW_STARTS, RangeFrames, RowFrames
from winagg.algos.registry import info


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
@pytest.mark.parametrize("cut, pickled", [(None, False), (17, False), (17, True)])
def test_frames_give_spark_frames_across_batches(seed, cut, pickled):
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
        if pickled:  # as a streaming key keeps them between micro-batches: the window's times only
            live = ranges.tail - ranges.head
            rows, ranges = pickle.loads(pickle.dumps(rows)), pickle.loads(pickle.dumps(ranges))
            assert ranges.held.shape == (live,) and not hasattr(ranges, "owner")
    assert got_rows == _brute_rows(valid, reset, 3)
    assert got_ranges == _brute_range(valid, reset, group_start, times, 2)


def test_the_timed_loops_answer_as_the_plain_ones_and_time_only_the_answering_steps():
    from winagg.bench.common import compiled_spec
    from winagg.engine.kernels import compiled_driver

    values = np.random.default_rng(3).normal(size=300)
    spec, algorithm = compiled_spec("sum"), info("two_stacks")
    expected = np.array([values[max(0, k - 39):k + 1].sum() for k in range(300)])
    dense = compiled_driver(algorithm, spec, dense=True, clock=CLOCK)
    out, cycles, _ = run(dense, values, row_plan(300, 40), dense.init(41), want_counts=True)
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)
    assert cycles.shape == (300,) and (cycles > 0).all()

    general = compiled_driver(algorithm, spec, clock=CLOCK)
    emits = np.arange(300) >= 40
    out, cycles, _ = run(general, values, row_plan(300, 40)._replace(emits=emits), general.init(41),
                         want_counts=True)
    np.testing.assert_allclose(out[emits], expected[emits], rtol=1e-12, atol=1e-12)
    assert (cycles[emits] > 0).all()


def _bulk_steps(rng, steps, most):
    """Random counts of a bulk plan: each step evicts some of the items held and inserts up to ``most``."""
    evicts, inserts, held = [], [], 0
    for _ in range(steps):
        gone = int(rng.integers(0, held + 1)) if rng.random() < 0.5 else 0
        added = int(rng.integers(0, most + 1))
        evicts.append(gone)
        inserts.append(added)
        held += added - gone
    return np.array(evicts), np.array(inserts)


def _bulk_answers(values, evicts, inserts):
    """Each step's window sum, by replaying the counts on positions."""
    first = end = 0
    out = []
    for gone, added in zip(evicts, inserts):
        first += gone
        end += added
        out.append(values[first:end].sum())
    return np.array(out)


@pytest.mark.parametrize("algorithm", ["flatfat", "two_stacks_lite"])  # a native bulk insert, and one by one
def test_bulk_plans_evict_and_insert_any_number_of_items_a_step(algorithm):
    from winagg.bench.common import compiled_spec
    from winagg.engine.plans import bulk_plan
    from winagg.engine.kernels import compiled_driver

    rng = np.random.default_rng(5)
    evicts, inserts = _bulk_steps(rng, 300, 40)
    values = rng.integers(-1000, 1000, int(inserts.sum())).astype(np.float64)  # integer sums: exact
    emits = rng.random(300) < 0.7
    driver = compiled_driver(info(algorithm), compiled_spec("sum"), bulk=True)
    out, _, _ = run(driver, values, bulk_plan(evicts, inserts, emits, room=int(inserts.sum())), driver.init(2))
    assert out.shape == (300,)
    assert out[emits].tolist() == _bulk_answers(values, evicts, inserts)[emits].tolist()


def test_a_resizing_driver_grows_a_full_window_and_halves_one_below_a_quarter_full():
    from winagg.bench.common import compiled_spec
    from winagg.engine.loops import SMALLEST_ROOM
    from winagg.engine.plans import bulk_plan
    from winagg.engine.kernels import compiled_driver
    from winagg.core.state import capacity

    # up to 1,000 items one at a time, down to 3, up to 100 in bulks of 10, down to 0
    inserts = np.r_[np.ones(1000, np.int64), np.zeros(997, np.int64), np.full(10, 10), np.zeros(103, np.int64)]
    evicts = np.r_[np.zeros(1000, np.int64), np.ones(997, np.int64), np.zeros(10, np.int64), np.ones(103, np.int64)]
    values = np.arange(1.0, inserts.sum() + 1)
    driver = compiled_driver(info("flatfat"), compiled_spec("sum"), bulk=True, resize=True)
    out, _, (bufs, st) = run(driver, values, bulk_plan(evicts, inserts), driver.init(16))
    assert out.tolist() == _bulk_answers(values, evicts, inserts).tolist()
    assert capacity(st) == SMALLEST_ROOM  # halved all the way down once empty
    _, _, (bufs, st) = run(driver, values[:1000], bulk_plan(np.zeros(1, np.int64), [1000]), (bufs, st))
    assert capacity(st) == 1024  # doubled to the first power of two that holds the step


def test_a_timed_bulk_build_times_each_steps_evictions_inserts_and_answer_apart():
    from winagg.bench.common import compiled_spec
    from winagg.engine.plans import bulk_plan
    from winagg.engine.kernels import compiled_driver

    driver = compiled_driver(info("daba_lite"), compiled_spec("sum"), clock=CLOCK, bulk=True)
    plan = bulk_plan([0, 20, 0, 5], [50, 0, 20, 5], [False, True, False, True], room=50)
    values = np.arange(1.0, 76.0)
    out, cycles, _ = run(driver, values, plan, driver.init(64), want_counts=True)
    assert [out[1], out[3]] == [values[20:50].sum(), values[25:75].sum()]
    evicting, inserting, answering = cycles.reshape(3, 4)
    assert evicting[3] > 0 and (inserting[[0, 2, 3]] > 0).all() and (answering[[1, 3]] > 0).all()
    assert (answering[[0, 2]] == 0).all()  # no answer
    assert evicting[1] == inserting[1] == 0  # inserts nothing: its evictions count with its answer
    _, untimed, _ = run(driver, values[:5], bulk_plan([0], [5]), driver.init(64))
    assert untimed.shape == (0,)
