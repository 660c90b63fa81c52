"""Store-backed MTA windows (SQLite and a real Redis server) against the brute-force oracle."""

import itertools
import random

import pytest
from hypothesis import HealthCheck, given, settings

import winagg
from winagg.store import RedisStore, SQLiteStore, StoredWindow

from oracle import CONCAT, Reference, fifo_scripts, run_fifo_script

SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
_names = itertools.count()


@pytest.fixture(params=["sqlite", "redis"])
def new_store(request, tmp_path):
    """A factory of empty stores of one kind; ``new_store(name)`` reopens the store called ``name``."""
    opened = []

    def make(name=None):
        name = name or f"w{next(_names)}"
        if request.param == "sqlite":
            store = SQLiteStore(tmp_path / f"{name}.db")
        else:
            store = RedisStore(port=request.getfixturevalue("redis_port"), prefix=f"test:{name}")
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()


@pytest.mark.parametrize("algorithm", ["amta", "lmta"])
@SETTINGS
@given(script=fifo_scripts)
def test_stored_window_matches_the_oracle_through_spills_and_refills(new_store, algorithm, script):
    # a 4-value buffer flushes every few steps and refills the head caches often
    window = StoredWindow(new_store(), CONCAT, algorithm=algorithm, buffer_size=4, refill=2)
    run_fifo_script(window, CONCAT, script)


def _random_steps(seed, count):
    rng = random.Random(seed)
    for step in range(count):
        roll = rng.random()
        if roll < 0.6:
            yield ("insert", step)
        elif roll < 0.93:
            yield ("evict", None)
        else:
            yield ("evict_oldest", rng.randint(0, 40))


def _apply(windows, ref, step):
    kind, arg = step
    if kind == "insert":
        for window in windows:
            window.insert(arg)
        ref.insert(arg)
    elif kind == "evict" and len(ref):
        for window in windows:
            window.evict()
        ref.evict()
    elif kind == "evict_oldest":
        for window in windows:
            assert window.evict_oldest(arg) == min(arg, len(ref))
        for _ in range(min(arg, len(ref))):
            ref.evict()


def test_a_reopened_window_continues_where_it_stopped(new_store):
    steps = list(_random_steps(7, 3000))
    uninterrupted = winagg.make("amta", CONCAT)
    ref = Reference(CONCAT)
    name = f"reopen{next(_names)}"
    window = StoredWindow(new_store(name), CONCAT, buffer_size=16, refill=8)
    for i, step in enumerate(steps):
        if i and i % 700 == 0:  # close and reopen on the same store, several times
            window.close()
            window = StoredWindow(new_store(name), CONCAT, buffer_size=16, refill=8)
        _apply([window, uninterrupted], ref, step)
        assert window.query() == uninterrupted.query() == ref.query(), f"step {i}"
    assert len(window) == len(uninterrupted) == len(ref)


def test_reopening_with_another_aggregation_is_refused(new_store):
    name = f"other{next(_names)}"
    window = StoredWindow(new_store(name), "sum")
    window.insert(1.0)
    window.close()
    with pytest.raises(ValueError, match="sum"):
        StoredWindow(new_store(name), "max")


@pytest.mark.parametrize("number", [2, 5])
def test_a_window_saved_in_an_older_format_is_refused_by_name(tmp_path, number):
    import pickle

    path = tmp_path / "old.db"
    window = StoredWindow(SQLiteStore(path), "sum", algorithm="amta")
    window.insert(1.0)
    window.close()
    store = SQLiteStore(path)
    # metadata as winagg wrote it up to format 5: a pickled dict (2: before amta kept its event
    # positions and R0 in the stack; 5: before the JSON metadata)
    old = dict(format=number, algorithm="amta", aggregation="sum", meta=[0] * 4, state=(15, 0, 1, 1, 0, 1.0))
    store.write({}, meta=pickle.dumps(old, protocol=pickle.HIGHEST_PROTOCOL))
    with pytest.raises(winagg.StoreCorruptError, match=f"format {number}, expected 6: an older winagg"):
        StoredWindow(store, "sum", algorithm="amta")
    store.close()


def test_local_buffers_stay_logarithmic_and_the_store_drops_evicted_items(new_store):
    store = new_store()
    window = StoredWindow(store, "sum", buffer_size=32, refill=16)
    largest_cache = 0
    for i in range(20_000):
        window.insert(1.0)
        if len(window) > 5000:
            window.evict()
        largest_cache = max(largest_cache, window.levels.cached_values())
    assert window.query() == 5000.0
    # levels ~ log2(5000) + 2 = 15: each holds at most a head cache and a few recent
    # values, plus the write buffer; far below the 5000 items (and the 10000 tree nodes)
    assert largest_cache < 20 * (32 + 8) + 32 + 64
    window.flush()
    # items, times and internal nodes of the live window only: about 3 values per item
    assert store.count() < 3 * 5000 + 20 * 32
    assert store.count() > 5000


def test_the_slide_policy_and_time_eviction_work_on_a_stored_window(new_store):
    window = StoredWindow(new_store(), "sum", buffer_size=8, refill=4)
    window.bulk_insert([1.0] * 100, times=list(range(0, 200, 2)))
    assert window.bulk_evict(49) == 25  # times 0..48
    assert window.oldest_time() == 50 and window.youngest_time() == 198
    # keep the newest items whose sum is at most 30 (sum's partial: the sum and how many values it has)
    assert window.enforce(lambda total, prefix: total[0] - prefix[0] >= 30) == 45
    assert window.query() == 30.0
    with pytest.raises(winagg.OutOfOrderError):
        window.insert(1.0, time=150)


def test_a_store_missing_a_cell_the_window_needs_says_so(tmp_path):
    import sqlite3

    path = tmp_path / "w.db"
    with StoredWindow(SQLiteStore(path), "sum", buffer_size=16) as window:
        window.bulk_insert([float(i) for i in range(200)])
        for _ in range(50):
            window.evict()
    with sqlite3.connect(path) as db:  # lose one live item of the lowest level
        db.execute("DELETE FROM cells WHERE level = 0 AND idx = (SELECT idx FROM cells WHERE level = 0 "
                   "ORDER BY idx LIMIT 1 OFFSET 3)")
    reopened = StoredWindow(SQLiteStore(path), "sum", buffer_size=16)
    with pytest.raises(winagg.StoreCorruptError, match="level 0, index 53"):
        for _ in range(150):
            reopened.evict()
            reopened.query()


@pytest.mark.parametrize("buffer_size", [2, 16])
def test_a_small_buffer_gets_a_refill_that_fits_it(tmp_path, buffer_size):
    with StoredWindow(SQLiteStore(tmp_path / "w.db"), "sum", buffer_size=buffer_size) as window:
        window.bulk_insert([1.0] * 100)
        for _ in range(60):
            window.evict()
        assert window.query() == 40.0
    with pytest.raises(ValueError, match="buffer_size"):
        StoredWindow(SQLiteStore(tmp_path / "x.db"), "sum", buffer_size=1)


def test_evict_oldest_of_a_fraction_is_refused_and_changes_nothing(tmp_path):
    with StoredWindow(SQLiteStore(tmp_path / "w.db"), "sum") as window:
        window.bulk_insert([1.0, 2.0, 3.0])
        with pytest.raises(TypeError, match="count"):
            window.evict_oldest(1.5)
        assert (len(window), window.query()) == (3, 6.0)


def test_datetimes_are_stored_as_nanoseconds_and_come_back_after_reopening(tmp_path):
    import pandas as pd

    path = tmp_path / "times.db"
    window = StoredWindow(SQLiteStore(path), "sum", algorithm="amta", buffer_size=4)
    start = pd.Timestamp("2024-03-01 08:00")
    window.bulk_insert([1.0, 2.0, 4.0], [start, start + pd.Timedelta("1min"), start + pd.Timedelta("2min")])
    window.close()
    again = StoredWindow(SQLiteStore(path), "sum", algorithm="amta", buffer_size=4)
    assert again.youngest_time() == start + pd.Timedelta("2min") and again.query() == 7.0
    with pytest.raises(winagg.InvalidTimeError, match="datetimes"):
        again.insert(8.0, 5)
    assert again.bulk_evict(start + pd.Timedelta("30s")) == 1
    assert again.oldest_time() == start + pd.Timedelta("1min") and again.query() == 6.0
    again.close()


# one name per built-in aggregation; argmin and argmax lift (value, position) pairs, not items
@pytest.mark.parametrize("name", sorted(cls.aliases[0] for cls in winagg.aggregations.BUILTINS if not cls.positional))
def test_every_builtin_aggregation_keeps_its_partials_through_reopening(tmp_path, name):
    from winagg.store import codec

    values = [float((i * 37) % 101) - 20.0 for i in range(300)]
    values[17] = float("nan")

    def run(window, reopen):
        window.bulk_insert(values[:150])
        window = reopen(window)
        for value in values[150:]:
            window.insert(value)
        window.evict_oldest(100)
        window = reopen(window)
        window.evict()
        return window

    def close_and_open(window):
        window.close()
        return StoredWindow(SQLiteStore(tmp_path / "reopened.db"), name, buffer_size=8)

    reopened = run(StoredWindow(SQLiteStore(tmp_path / "reopened.db"), name, buffer_size=8), close_and_open)
    uninterrupted = run(StoredWindow(SQLiteStore(tmp_path / "kept.db"), name, buffer_size=8), lambda window: window)
    # the same partial, bit for bit and type for type (a sketch's array, a tuple's numpy scalars)
    assert codec.encode(reopened.partial()) == codec.encode(uninterrupted.partial())
    assert len(reopened) == len(uninterrupted) == 199
    reopened.close()
    uninterrupted.close()


def test_a_window_of_tz_aware_times_reopens_in_its_zone(new_store):
    import pandas as pd

    times = pd.date_range("2024-03-31 00:30", periods=4, freq="30min", tz="Europe/Berlin")  # across DST
    window = StoredWindow(new_store("zoned"), "sum")
    for t, v in zip(times, [1.0, 2.0, 3.0, 4.0]):
        window.insert(v, time=t)
    window.close()
    reopened = StoredWindow(new_store("zoned"), "sum")
    assert reopened.query() == 10.0 and len(reopened) == 4
    assert reopened.oldest_time() == times[0] and str(reopened.youngest_time().tz) == "Europe/Berlin"
    reopened.close()


def test_pandas_missing_markers_are_kept_as_none(new_store):
    import pandas as pd

    window = StoredWindow(new_store("markers"), "collect")
    window.insert(pd.NA)
    window.insert(1.5)
    window.close()
    reopened = StoredWindow(new_store("markers"), "collect")
    assert reopened.query() == [None, 1.5]
    reopened.close()
