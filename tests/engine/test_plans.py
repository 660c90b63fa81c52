"""Plans against brute force: window starts, time plans and count plans."""

import numpy as np
import pytest

from winagg.engine.plans import count_plan, time_plan, window_starts


def _starts_by_search(times, span):
    return np.array([next(j for j in range(len(times)) if times[j] > t - span) for t in times], np.int64)


@pytest.mark.parametrize("dtype", [np.int64, np.float64])
def test_window_starts_are_the_first_rows_inside_each_window(dtype):
    rng = np.random.default_rng(7)
    times = np.sort(rng.integers(-50, 50, 300)).astype(dtype)
    for span in (1, 3, 7.5, 1000):
        starts, widest = window_starts(times, span, len(times))
        want = _starts_by_search(times, np.ceil(span) if dtype == np.int64 else span)
        assert starts.tolist() == want.tolist(), span
        assert widest == int(np.max(np.arange(1, len(times) + 1) - want))


def test_window_starts_refuse_unsorted_times_and_windows_past_int64():
    assert window_starts(np.array([3, 1, 2], np.int64), 2, 3) is None
    assert window_starts(np.array([np.iinfo(np.int64).min, 0], np.int64), 5, 2) is None
    with pytest.raises(ValueError, match="span"):
        window_starts(np.array([1.0, 2.0]), 0, 2)


def test_a_time_plan_evicts_the_rows_whose_window_ended():
    times = np.array([0, 1, 1, 4, 9, 10], np.int64)
    plan = time_plan(times, 3)
    held = []
    for k, t in enumerate(times):  # replay the plan: evict, insert, then the window is the rows held
        del held[:plan.evicts[k]]
        held.append(k)
        assert held == [j for j in range(k + 1) if times[j] > t - 3]
    assert plan.room == max(len([j for j in range(k + 1) if times[j] > times[k] - 3]) for k in range(len(times)))


def test_a_count_plan_keeps_the_last_rows_and_answers_every_slide():
    rows, slide, held, since = 4, 3, 2, 1  # a window of the last 4 that holds 2 and answered 1 event ago
    plan = count_plan(7, rows, held, since, slide, first_position=10)
    window = list(range(held))
    for k in range(7):
        del window[:plan.evicts[k]]
        window.append(held + k)
        assert len(window) == min(held + k + 1, rows)
        assert plan.emits[k] == ((since + k + 1) % slide == 0 or k == 6)
    assert plan.positions.tolist() == list(range(10, 17)) and plan.room == rows


def _last_closed_by_search(size, slide, watermark):
    k = -10**6
    while (k + 1) * slide + size <= watermark:
        k += 1
    return k


def test_a_time_is_in_a_hopping_window_unless_it_falls_between_two():
    from winagg.engine.plans import in_a_hopping_window

    times = np.arange(-23, 24, dtype=np.int64)
    for size, slide in ((10, 5), (5, 5), (2, 5), (1, 3), (3, 7)):
        # brute force: some k with k*slide <= t < k*slide + size
        want = [any(k * slide <= t < k * slide + size for k in range(-10, 10)) for t in times.tolist()]
        assert in_a_hopping_window(times, size, slide).tolist() == want


def test_the_last_closed_hopping_window_is_the_last_that_ends_by_the_watermark():
    from winagg.engine.plans import INT_HIGH, INT_LOW, last_closed_window

    for size, slide in ((10, 5), (7, 3), (5, 5), (2.5, 0.5)):
        for watermark in (-30, -1, 0, 4, 9, 10, 11, 23.75, 100):
            assert last_closed_window(size, slide, watermark) == _last_closed_by_search(size, slide, watermark)
    assert last_closed_window(10, 5, float("-inf")) == INT_LOW
    assert last_closed_window(10, 5, float("inf")) == INT_HIGH == last_closed_window(10, 5, INT_HIGH)
    # int64 nanoseconds stay exact where a float division would round
    big = 2**62 + 1
    assert last_closed_window(3, 2, big) == (big - 3) // 2
