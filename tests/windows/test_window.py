"""winagg.Window against a brute-force model of its documented semantics, sentence by sentence."""

import math
import pickle
import random

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import winagg
from oracle import CONCAT, same_answer
from winagg import Window, WindowResult


# ---------------------------------------------------------------- brute-force model
class WindowModel:
    """The class docstring of winagg.Window, written as the most direct code possible:
    keep every on-time event, and at each call list every window that is closed and not yet
    emitted, folding its events from scratch."""

    def __init__(self, monoid, sizes, slide, lateness):
        self.monoid, self.sizes, self.slide, self.lateness = monoid, sizes, slide, lateness
        self.watermark = -math.inf
        self.events = []  # (time, arrival number, value) of on-time events
        self.emitted = set()
        self.late = 0

    def push(self, t, v):
        if t < self.watermark:
            self.late += 1
            return []
        self.events.append((t, len(self.events), v))
        return self.advance(t - self.lateness)

    def push_batch(self, times, values):
        out = []
        for t, v in zip(times, values):
            out += self.push(t, v)
        return out

    def advance(self, w):
        self.watermark = max(self.watermark, w)
        closed = []
        for which, size in enumerate(self.sizes):
            for start, end, covers in self._windows(size):
                if (start, end) in self.emitted or not self._is_closed(end):
                    continue
                inside = sorted(e for e in self.events if covers(e[0]))
                if inside:
                    closed.append((end, which, start, inside))
        closed.sort(key=lambda c: (c[0], c[1]))
        out = []
        for end, _, start, inside in closed:
            self.emitted.add((start, end))
            out.append(WindowResult(start, end, self.monoid.fold(v for _, _, v in inside), len(inside)))
        return out

    def _is_closed(self, end):
        return end <= self.watermark if self.slide is not None else end < self.watermark

    def _windows(self, size):
        if self.slide is None:
            for t in {e[0] for e in self.events}:
                yield t - size, t, (lambda x, t=t, size=size: t - size < x <= t)
        else:
            ks = {k for t, _, _ in self.events for k in range(math.floor((t - size) / self.slide), math.floor(t / self.slide) + 1)}
            for k in ks:
                start, end = k * self.slide, k * self.slide + size
                yield start, end, (lambda x, s=start, e=end: s <= x < e)

    def flush(self):
        return self.advance(math.inf)


def same_results(got, want):
    assert len(got) == len(want), f"{len(got)} results, expected {len(want)}:\n{got}\n{want}"
    for g, w in zip(got, want):
        assert (g.start, g.end, g.count) == (w.start, w.end, w.count), f"{g} != {w}"
        assert same_answer(g.value, w.value), f"{g} != {w}"


# ---------------------------------------------------------------- random streams
event = st.tuples(st.just("push"), st.integers(0, 40), st.integers(1, 9))
stream_ops = st.lists(st.one_of(
    event, event, event, event,
    st.tuples(st.just("batch"), st.lists(st.tuples(st.integers(0, 40), st.integers(1, 9)), max_size=8)),
    st.tuples(st.just("advance"), st.integers(0, 45)),
), max_size=40)
configs = st.sampled_from([
    dict(size=[5], slide=None), dict(size=[5], slide=5), dict(size=[6], slide=2), dict(size=[4], slide=3),
    dict(size=[2], slide=5), dict(size=[3, 10], slide=None), dict(size=[4, 10], slide=2),
])


def run_both(window, model, ops, cut=None):
    """Apply ``ops`` to both; at index ``cut`` the window is pickled and replaced by its copy."""
    for i, op in enumerate(ops):
        if i == cut:
            window = pickle.loads(pickle.dumps(window))
        if op[0] == "push":
            same_results(window.push(op[1], op[2]), model.push(op[1], op[2]))
        elif op[0] == "batch":
            times, values = [t for t, _ in op[1]], [v for _, v in op[1]]
            same_results(window.push_batch(times, values), model.push_batch(times, values))
        else:
            same_results(window.advance_watermark(op[1]), model.advance(op[1]))
        assert window.late_events == model.late
    same_results(window.flush(), model.flush())
    return window


@settings(max_examples=120, deadline=None)
@given(ops=stream_ops, config=configs, lateness=st.sampled_from([0, 0, 3, 10]),
       monoid=st.sampled_from([CONCAT, "sum", "max"]), cut=st.integers(0, 40))
def test_window_equals_model_and_survives_pickling(ops, config, lateness, monoid, cut):
    model_monoid = winagg.aggregations.get(monoid)
    size = config["size"] if len(config["size"]) > 1 else config["size"][0]
    window = Window(monoid, size=size, slide=config["slide"], allowed_lateness=lateness)
    model = WindowModel(model_monoid, config["size"], config["slide"], lateness)
    run_both(window, model, ops, cut=cut)


def test_long_random_streams_with_float_times_and_pickle_cuts():
    rng = random.Random(7)
    for trial in range(6):
        slide = [None, 2.5, 1.0][trial % 3]
        window = Window(CONCAT, size=7.5, slide=slide, allowed_lateness=4.0)
        model = WindowModel(CONCAT, [7.5], slide, 4.0)
        ops, clock = [], 0.0
        for _ in range(300):
            clock += rng.choice([0.0, 0.25, 0.5, 1.5])
            ops.append(("push", clock - rng.choice([0.0, 0.0, 1.0, 3.75, 6.0]), rng.randint(1, 9)))
        run_both(window, model, ops, cut=rng.randrange(300))


@pytest.mark.parametrize("aggregation", ["sum", "max", "hll"])
def test_a_pickled_window_holds_what_it_keeps_not_its_largest_batch(aggregation):
    rng = random.Random(3)
    times = [rng.uniform(0, 1000) for _ in range(4_000)]  # one burst, out of order
    values = [rng.randint(1, 9) for _ in times]
    window = Window(aggregation, size=20.0, allowed_lateness=1000.0)
    model = WindowModel(winagg.aggregations.get(aggregation), [20.0], None, 1000.0)
    same_results(window.push_batch(times, values), model.push_batch(times, values))
    same_results(window.advance_watermark(1000.0), model.advance(1000.0))  # keeps the last ~20 time units
    assert 40 < len(window._engine.live) < 140
    pool_bytes = window._engine.pool_bytes()
    pickled = pickle.dumps(window)
    assert len(pickled) < pool_bytes / 10
    later = [("push", 1000.0 + rng.uniform(0, 30), rng.randint(1, 9)) for _ in range(300)]
    run_both(pickle.loads(pickled), model, later)


# ---------------------------------------------------------------- the docstring, sentence by sentence
def test_watermark_is_largest_time_minus_lateness_and_never_goes_back():
    w = Window("sum", size=10, allowed_lateness=3)
    assert w.watermark is None
    w.push(20, 1)
    assert w.watermark == 17
    w.push(18, 1)  # on time (18 >= 17), does not lower the watermark
    assert w.watermark == 17
    w.advance_watermark(30)
    assert w.watermark == 30
    w.advance_watermark(25)
    assert w.watermark == 30


def test_events_older_than_the_watermark_are_dropped_and_counted_at_the_watermark_kept():
    w = Window("sum", size=10, slide=10, allowed_lateness=2)
    w.push(12, 1.0)  # watermark 10
    w.push(9, 100.0)  # late: 9 < 10
    w.push(10, 5.0)  # exactly at the watermark: on time
    assert w.late_events == 1
    assert w.flush() == [WindowResult(10, 20, 6.0, 2)]


def test_aligned_window_closes_when_its_end_reaches_the_watermark():
    w = Window("sum", size=10, slide=10)
    assert w.push(3, 1.0) == []
    assert w.push(9, 2.0) == []
    assert w.push(10, 4.0) == [WindowResult(0, 10, 3.0, 2)]  # end 10 <= watermark 10


def test_empty_aligned_windows_are_never_emitted_and_gaps_hold_no_results():
    w = Window("sum", size=2, slide=5)
    w.push(1, 1.0)  # in [0, 2)
    assert w.push(3, 7.0) == [WindowResult(0, 2, 1.0, 1)]  # 3 lies in the gap [2, 5): in no window
    assert w.push(100, 1.0) == []
    assert w.late_events == 0
    assert w.flush() == [WindowResult(100, 102, 1.0, 1)]


def test_per_event_window_is_t_minus_size_exclusive_to_t_inclusive_and_waits_past_t():
    w = Window("sum", size=5)
    assert w.push(10, 1.0) == []  # t == watermark: not final yet
    assert w.push(10, 2.0) == []  # same time: shares the window
    assert w.push(5, 100.0) == []  # late (5 < 10)
    got = w.push(15, 4.0)
    assert got == [WindowResult(5, 10, 3.0, 2)]  # (5, 10]: 10 twice; 5 was late anyway
    w2 = Window("sum", size=5, allowed_lateness=10)
    for t in (10, 5, 6):
        w2.push(t, t)
    assert w2.flush() == [WindowResult(0, 5, 5, 1), WindowResult(1, 6, 11, 2), WindowResult(5, 10, 16, 2)]


def test_late_arrivals_within_lateness_join_their_windows_in_time_order():
    w = Window(CONCAT, size=10, slide=10, allowed_lateness=5)
    w.push(8, "b")
    w.push(12, "c")
    w.push(7, "a")  # out of order but on time: goes before b
    w.push(8, "b2")  # equal time: after the earlier b
    assert w.push(15, "d") == [WindowResult(0, 10, "a;b;b2;", 3)]


def test_results_ordered_by_end_then_by_size_order():
    w = Window("count", size=[10, 4], slide=2)
    w.push(1, 1.0)
    got = w.flush()
    assert [(r.end, r.end - r.start) for r in got] == [(2, 10), (2, 4), (4, 10), (4, 4), (6, 10), (8, 10),
                                                       (10, 10)]


def test_flush_closes_everything_and_later_events_are_late():
    w = Window("max", size=3)
    w.push(1, 2.0)
    assert w.push(2, 5.0) == [WindowResult(-2, 1, 2.0, 1)]
    assert w.flush() == [WindowResult(-1, 2, 5.0, 2)]
    assert w.push(50, 1.0) == [] and w.late_events == 1
    assert w.flush() == []


def test_batch_equals_one_by_one_and_gives_a_frame():
    times = [5, 1, 9, 3, 14, 2, 20, 11]
    values = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]
    one = Window("sum", size=6, slide=3, allowed_lateness=4)
    expected = [r for t, v in zip(times, values) for r in one.push(t, v)] + one.flush()
    batch = Window("sum", size=6, slide=3, allowed_lateness=4)
    frame = pd.concat([batch.push_batch(times, values, as_frame=True), Window.to_frame(batch.flush())])
    assert list(frame.columns) == ["start", "end", "value", "count"]
    assert [tuple(row) for row in frame.itertuples(index=False)] == [tuple(r) for r in expected]
    assert batch.late_events == one.late_events == 3


def test_datetime_times_and_duration_strings():
    w = Window("sum", size="10min", slide="10min", allowed_lateness="1min")
    t0 = pd.Timestamp("2024-03-01 10:00")
    w.push(t0 + pd.Timedelta("2min"), 1.0)
    w.push(np.datetime64("2024-03-01T10:09"), 2.0)
    got = w.push(t0 + pd.Timedelta("11min"), 4.0)  # watermark 10:10 closes [10:00, 10:10)
    assert got == [WindowResult(t0, t0 + pd.Timedelta("10min"), 3.0, 2)]
    frame = w.push_batch(pd.Series([t0 + pd.Timedelta("25min")]), [1.0], as_frame=True)
    assert frame["start"].tolist() == [t0 + pd.Timedelta("10min")] and frame["count"].tolist() == [1]
    with pytest.raises(winagg.InvalidTimeError):
        w.push(3, 1.0)


def test_count_windows_slide_over_arrival_positions():
    w = Window(CONCAT, rows=3, slide=2)
    got = w.push_batch(None, "abcde")
    assert got == [WindowResult(0, 2, "a;b;", 2), WindowResult(1, 4, "b;c;d;", 3)]
    assert w.flush() == [WindowResult(2, 5, "c;d;e;", 3)]
    assert w.flush() == []
    w2 = pickle.loads(pickle.dumps(Window("max", rows=2)))
    assert [w2.push(None, v) for v in (3, 1, 2)] == [[WindowResult(0, 1, 3, 1)], [WindowResult(0, 2, 3, 2)],
                                                      [WindowResult(1, 3, 2, 2)]]


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError):
        Window("sum")
    with pytest.raises(ValueError):
        Window("sum", size=5, rows=3)
    with pytest.raises(ValueError):
        Window("sum", size=0)
    with pytest.raises(ValueError):
        Window("sum", size=5, allowed_lateness=-1)
    with pytest.raises(winagg.InvalidTimeError):
        Window("sum", size=5).push(float("nan"), 1.0)
    with pytest.raises(ValueError):
        Window("sum", size=5, algorithm="daba_lite")


def test_module_example_runs():
    import doctest

    import winagg.windows.window

    assert doctest.testmod(winagg.windows.window).failed == 0


# ---------------------------------------------------------------- the compiled batch path
@pytest.mark.parametrize("monoid", ["sum", "max"])
@pytest.mark.parametrize("slide", [None, 1.5])
def test_one_size_windows_of_builtin_aggregations_run_compiled_and_agree_with_the_model(monoid, slide):
    rng = random.Random(11)
    window = Window(monoid, size=6.0, slide=slide, allowed_lateness=2.5)
    assert window.compiled  # the compiled path is the one under test here
    model = WindowModel(winagg.aggregations.get(monoid), [6.0], slide, 2.5)
    ops, clock = [], 0.0
    for _ in range(200):
        clock += rng.choice([0.0, 0.5, 1.0])
        if rng.random() < 0.15:
            batch = [(clock - rng.choice([0.0, 2.0, 4.0]), float(rng.randint(-9, 9))) for _ in range(rng.randint(0, 30))]
            ops.append(("batch", batch))
        else:
            ops.append(("push", clock - rng.choice([0.0, 0.0, 1.0, 3.0]), float(rng.randint(-9, 9))))
    ops.insert(150, ("advance", clock + 0.25))
    run_both(window, model, ops, cut=rng.randrange(200))


@pytest.mark.parametrize("slide", [None, "1min", "7min"])
def test_compiled_and_python_paths_give_the_same_rows_on_datetimes(slide):
    rng = np.random.default_rng(5)
    base = np.datetime64("2024-01-01T00:00:00", "ns")
    offsets = np.cumsum(rng.integers(0, 90, 3000)) - rng.choice([0, 0, 0, 400], 3000)
    times = base + offsets.astype("timedelta64[s]")
    values = rng.normal(size=3000)
    frames = []
    for compiled in (True, False):
        w = Window("sum", size="5min", slide=slide, allowed_lateness="2min", compiled=compiled)
        parts = [w.push_batch(times[i:i + 700], values[i:i + 700], as_frame=True) for i in range(0, 3000, 700)]
        frames.append((pd.concat(parts + [Window.to_frame(w.flush())], ignore_index=True), w.late_events))
    (fast, fast_late), (slow, slow_late) = frames
    assert fast_late == slow_late > 0
    assert fast[["start", "end", "count"]].equals(slow[["start", "end", "count"]])
    assert np.allclose(fast["value"].to_numpy(float), slow["value"].to_numpy(float))
    with pytest.raises(ValueError):
        Window(CONCAT, size=5, compiled=True)


def test_aggregations_whose_python_answer_is_not_a_number_stay_in_python():
    window = Window("bloom", size=5.0)
    assert not window.compiled
    window.push(1.0, 7.0)
    (result,) = window.flush()
    assert isinstance(result.value, winagg.aggregations.BloomFilter) and result.count == 1


# ---------------------------------------------------------------- integer times stay exact
def test_compiled_integer_times_one_nanosecond_apart_stay_apart():
    t0 = 1_700_000_000_000_000_000  # nanoseconds since the epoch: float64 would merge these
    times = np.array([t0, t0 + 1, t0 + 2])
    fast = Window("sum", size=1)
    slow = Window("sum", size=1, compiled=False)
    got = fast.push_batch(times, [1.0, 2.0, 4.0]) + fast.flush()
    want = slow.push_batch(times.tolist(), [1.0, 2.0, 4.0]) + slow.flush()
    assert [(r.end, r.value) for r in got] == [(r.end, r.value) for r in want] == \
        [(t0, 1.0), (t0 + 1, 2.0), (t0 + 2, 4.0)]


def test_datetimes_before_1897_are_not_late():
    w = Window("count", size="1h")
    stamps = pd.to_datetime(["1800-01-01 00:00", "1800-01-01 00:30", "1800-01-01 02:00"])
    results = w.push_batch(stamps, [1.0, 2.0, 3.0]) + w.flush()
    assert [r.count for r in results] == [1, 2, 1] and w.late_events == 0


def test_fractional_time_in_an_integer_window_is_refused():
    w = Window("sum", size=10)
    with pytest.raises(winagg.InvalidTimeError, match="fractional"):
        w.push(1.5, 1.0)
    with pytest.raises(winagg.InvalidTimeError, match=r"times\[1\] = 2.5"):
        w.push_batch(np.array([1.0, 2.5]), [1.0, 1.0])
    assert w.push(3.0, 1.0) == [] and [r.value for r in w.flush()] == [1.0]


def test_integer_times_at_int64_limits_are_refused_by_name():
    w = Window("sum", size=10)
    with pytest.raises(winagg.InvalidTimeError, match="int64's limits"):
        w.push(-2**63 + 3, 1.0)


# ---------------------------------------------------------------- durations and bare numbers (issue 38)
import datetime  # noqa: E402


@pytest.mark.parametrize("kwargs, named", [
    (dict(size="10min", allowed_lateness=60), "allowed_lateness"),  # was read as 60 ns
    (dict(size="10min", slide=60), "slide"),  # was read as 60 ns
    (dict(size=["10min", 5]), "size"),  # 5 was read as 5 ns
    (dict(size=pd.Timedelta("10min"), allowed_lateness=2.5), "allowed_lateness"),
    (dict(size=10, slide="1min"), "slide"),
    (dict(size=10, allowed_lateness=np.timedelta64(3, "s")), "allowed_lateness"),
    (dict(size=10, slide=np.timedelta64(2, "ns")), "slide"),
    (dict(size=[10, "1min"]), "size"),
])
def test_a_bare_number_beside_a_duration_or_the_reverse_is_refused_naming_the_argument(kwargs, named):
    with pytest.raises(TypeError, match=named):
        Window("sum", **kwargs)


def test_zero_and_infinite_lateness_need_no_unit():
    t0 = pd.Timestamp("2024-03-01 10:00")
    for lateness in (0, 0.0, math.inf, "0s", pd.Timedelta(0)):
        w = Window("sum", size="10min", slide="10min", allowed_lateness=lateness)
        w.push(t0 + pd.Timedelta("12min"), 1.0)
        w.push(t0, 2.0)  # 12 minutes behind: late unless the lateness is infinite
        assert w.late_events == (0 if lateness == math.inf else 1)


def test_a_numeric_window_refuses_datetimes_and_stays_as_it_was():
    w = Window("sum", size=10, allowed_lateness=2)
    w.push(5, 1.0)
    for bad in (pd.Timestamp("2024-01-01"), np.timedelta64(3, "s"), datetime.timedelta(seconds=1)):
        with pytest.raises((TypeError, winagg.InvalidTimeError)):
            w.push(bad, 100.0)
    with pytest.raises(winagg.InvalidTimeError):
        w.push_batch(np.array(["2024-01-01"], "datetime64[s]"), [100.0])
    with pytest.raises(winagg.InvalidTimeError, match="durations"):
        w.push_batch(np.array([7], "timedelta64[ns]"), [100.0])  # once read as time 7
    assert (w.watermark, w.late_events) == (3, 0)
    assert w.flush() == [WindowResult(-5, 5, 1.0, 1)]


@pytest.mark.parametrize("size", ["10min", pd.Timedelta(minutes=10), np.timedelta64(10, "m"),
                                  np.timedelta64(600_000, "ms"), datetime.timedelta(minutes=10), pd.offsets.Minute(10)])
def test_durations_of_every_type_are_the_same_window(size):
    t0 = pd.Timestamp("2024-03-01 10:00")
    w = Window("sum", size=size, slide=size, allowed_lateness=np.timedelta64(1, "m"))
    w.push(t0 + pd.Timedelta("2min"), 1.0)
    w.push(t0 + pd.Timedelta("9min"), 2.0)
    assert w.push(t0 + pd.Timedelta("11min"), 4.0) == [WindowResult(t0, t0 + pd.Timedelta("10min"), 3.0, 2)]


def test_a_duration_that_is_no_whole_nanosecond_is_refused():
    with pytest.raises(ValueError, match="size .* whole number of nanoseconds"):
        Window("sum", size=np.timedelta64(1500, "ps"))
    with pytest.raises(ValueError, match="slide"):
        Window("sum", size="1h", slide=pd.offsets.MonthEnd(1))


def test_a_batch_of_dates_outside_nanoseconds_is_refused_not_wrapped():
    w = Window("count", size="1h")
    with pytest.raises(winagg.InvalidTimeError, match=r"times\[1\].*outside int64 nanoseconds"):
        w.push_batch(np.array(["2024-01-01", "3000-01-01"], "datetime64[D]"), [1.0, 1.0])
    with pytest.raises(winagg.InvalidTimeError, match=r"times\[0\].*whole nanosecond"):
        w.push_batch(np.array([1500], "datetime64[ps]"), [1.0])
    assert w.watermark is None and w.flush() == []


# ---------------------------------------------------------------- infinite and huge lateness (issue 38)
def _stream(seed, advances):
    rng = random.Random(seed)
    ops, clock = [], 0
    for _ in range(120):
        clock += rng.choice([0, 1, 2, 5])
        if advances and rng.random() < 0.05:
            ops.append(("advance", clock - rng.choice([0, 10, 30])))
        elif rng.random() < 0.15:
            ops.append(("batch", [(clock - rng.choice([0, 3, 40, 200]), rng.randint(1, 9))
                                  for _ in range(rng.randint(0, 6))]))
        else:
            ops.append(("push", clock - rng.choice([0, 0, 7, 60, 300]), rng.randint(1, 9)))
    return ops


@pytest.mark.parametrize("lateness", [math.inf, 1e300, 10**30, 2**63, 2**64 + 5])
@pytest.mark.parametrize("size, slide", [(10, None), (10, 5), (6, 2), (4, 10), ([3, 10], None), ([4, 10], 2)])
@pytest.mark.parametrize("advances", [False, True])
def test_unbounded_lateness_never_drops_events_and_agrees_with_the_model(lateness, size, slide, advances):
    sizes = size if isinstance(size, list) else [size]
    ops = _stream(len(sizes) * 7 + (slide or 0), advances)
    for monoid in (CONCAT, "sum"):
        window = Window(monoid, size=size, slide=slide, allowed_lateness=lateness)
        model = WindowModel(winagg.aggregations.get(monoid), sizes, slide, lateness)
        window = run_both(window, model, ops, cut=60)
        if not advances:
            assert window.late_events == 0  # only the flush's +infinity watermark makes events late
    assert Window("sum", size=size, slide=slide, allowed_lateness=lateness).allowed_lateness == lateness


def test_infinite_lateness_on_datetimes_and_integers_keeps_exact_times():
    t0 = 1_700_000_000_000_000_000
    w = Window("sum", size=1, allowed_lateness=math.inf)
    w.push(t0 + 2, 4.0)
    w.push(t0, 1.0)
    w.push(t0 + 1, 2.0)
    assert w.watermark is None and w.late_events == 0
    assert [(r.end, r.value) for r in w.flush()] == [(t0, 1.0), (t0 + 1, 2.0), (t0 + 2, 4.0)]
    d = Window("sum", size="1h", slide="1h", allowed_lateness=math.inf)
    d.push(pd.Timestamp("2024-01-02"), 1.0)
    d.push(pd.Timestamp("2024-01-01 00:00:00.000000001"), 2.0)
    assert d.flush() == [WindowResult(pd.Timestamp("2024-01-01"), pd.Timestamp("2024-01-01 01:00"), 2.0, 1),
                         WindowResult(pd.Timestamp("2024-01-02"), pd.Timestamp("2024-01-02 01:00"), 1.0, 1)]


# ---------------------------------------------------------------- tz-aware times (issue 38)
def test_tz_aware_times_are_instants_and_come_back_in_their_zone():
    berlin = pd.date_range("2024-03-31 00:00", periods=40, freq="7min", tz="Europe/Berlin")  # across 02:00 -> 03:00
    order = random.Random(2).sample(range(40), 40)
    times, values = [berlin[i] for i in order], [float(i % 5) for i in order]
    ns = [t.value for t in times]  # UTC nanoseconds, pandas' own
    for slide in (None, "30min"):
        w = Window("sum", size="1h", slide=slide, allowed_lateness="2h")
        model = WindowModel(winagg.aggregations.get("sum"), [3_600_000_000_000],
                            None if slide is None else 1_800_000_000_000, 7_200_000_000_000)
        got = w.push_batch(pd.Series(times), values) + w.flush()
        want = model.push_batch(ns, values) + model.flush()
        assert [(r.start.value, r.end.value, r.value, r.count) for r in got] == \
            [(r.start, r.end, r.value, r.count) for r in want]
        assert all(str(r.start.tz) == "Europe/Berlin" for r in got)


def test_a_tz_naive_time_in_a_tz_aware_window_is_refused_and_changes_nothing():
    w = Window("sum", size="1h")
    w.push(pd.Timestamp("2024-03-31 01:00", tz="Europe/Berlin"), 1.0)
    with pytest.raises(winagg.InvalidTimeError, match="tz-naive"):
        w.push(pd.Timestamp("2024-03-31 05:00"), 2.0)  # would be read as UTC: an hour or two off
    with pytest.raises(winagg.InvalidTimeError, match="tz-naive"):
        w.push_batch(np.array(["2024-03-31T05:00"], "datetime64[ns]"), [2.0])
    assert w.watermark == pd.Timestamp("2024-03-31 00:00", tz="UTC")
    w.push(pd.Timestamp("2024-03-31 01:00", tz="UTC"), 4.0)  # another zone: the same scale of instants
    (result,) = w.flush()[-1:]
    assert (result.end, result.value, str(result.end.tz)) == (pd.Timestamp("2024-03-31 03:00", tz="Europe/Berlin"),
                                                               4.0, "Europe/Berlin")
    naive = Window("sum", size="1h")
    with pytest.raises(winagg.InvalidTimeError, match="tz-naive"):
        naive.push_batch([pd.Timestamp("2024-01-01"), pd.Timestamp("2024-01-01", tz="UTC")], [1.0, 2.0])
    naive.push(pd.Timestamp("2024-01-01"), 1.0)  # the refused batch fixed no zone
    assert naive.flush()[0].end == pd.Timestamp("2024-01-01")
