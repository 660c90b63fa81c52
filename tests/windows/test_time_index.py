"""The per-item aggregator's times: one unit per window (numbers, or datetimes as int ns), one index."""

import datetime
import pickle

import numpy as np
import pandas as pd
import pytest

import winagg
from winagg.windows.time_index import ArrivalTimes, TimeUnit

IN_ORDER = ["two_stacks_lite", "flatfat", "amta"]
EVERY_KIND = IN_ORDER + ["fiba"]


@pytest.mark.parametrize("algorithm", EVERY_KIND)
def test_datetimes_of_every_type_are_one_time_inside_and_timestamps_outside(algorithm):
    agg = winagg.make(algorithm, "sum")
    agg.insert(1.0, datetime.datetime(2024, 1, 1, 0, 0))
    agg.insert(2.0, np.datetime64("2024-01-01T00:01"))
    agg.insert(4.0, pd.Timestamp("2024-01-01 00:02"))
    assert agg.oldest_time() == pd.Timestamp("2024-01-01 00:00")
    assert isinstance(agg.youngest_time(), pd.Timestamp) and agg.youngest_time() == pd.Timestamp("2024-01-01 00:02")
    # a bound of any datetime type means the same instant
    assert agg.bulk_evict(np.datetime64("2024-01-01T00:00:59", "s")) == 1
    assert agg.query() == 6.0 and agg.oldest_time() == pd.Timestamp("2024-01-01 00:01")


@pytest.mark.parametrize("algorithm", EVERY_KIND)
def test_a_time_of_the_other_kind_is_refused_by_name_and_changes_nothing(algorithm):
    agg = winagg.make(algorithm, "sum")
    agg.insert(1.0, pd.Timestamp("2024-01-01"))
    with pytest.raises(winagg.InvalidTimeError, match="time 5 is a number, but this window's times are datetimes"):
        agg.insert(2.0, 5)
    with pytest.raises(winagg.InvalidTimeError, match=r"times\[1\]"):
        agg.bulk_insert([2.0, 3.0], [pd.Timestamp("2024-01-02"), 7])
    with pytest.raises(winagg.InvalidTimeError, match="time 3"):
        agg.bulk_evict(3)
    with pytest.raises(winagg.InvalidTimeError, match="number" if algorithm in IN_ORDER else "keys its entries"):
        agg.insert(2.0)  # an arrival number is a number too; a time-keyed window needs a time
    assert len(agg) == 1 and agg.query() == 1.0
    numbers = winagg.make(algorithm, "sum")
    numbers.insert(1.0, 3)
    with pytest.raises(winagg.InvalidTimeError, match="is a datetime, but this window's times are numbers"):
        numbers.insert(1.0, pd.Timestamp("2024-01-01"))


@pytest.mark.parametrize("algorithm", EVERY_KIND)
def test_a_first_batch_of_mixed_kinds_is_refused_and_fixes_no_kind(algorithm):
    agg = winagg.make(algorithm, "sum")
    with pytest.raises(winagg.InvalidTimeError, match=r"times\[1\]"):
        agg.bulk_insert([1.0, 2.0], [3, pd.Timestamp("2024-01-01")])
    assert len(agg) == 0
    agg.insert(1.0, pd.Timestamp("2024-01-01"))  # the refused batch fixed nothing
    assert agg.youngest_time() == pd.Timestamp("2024-01-01")


@pytest.mark.parametrize("algorithm", EVERY_KIND)
@pytest.mark.parametrize("bad", [None, float("nan"), np.datetime64("NaT"), pd.NaT, True, "2024-01-01", object()])
def test_missing_or_unreadable_times_are_refused(algorithm, bad):
    agg = winagg.make(algorithm, "sum")
    agg.insert(1.0, 1)
    with pytest.raises(winagg.InvalidTimeError, match=r"times\[0\]"):
        agg.bulk_insert([2.0], [bad])  # (insert's own None means "the arrival number")
    if bad is not None:
        with pytest.raises(winagg.InvalidTimeError, match="time"):
            agg.insert(2.0, bad)
        with pytest.raises(winagg.InvalidTimeError, match="time"):
            agg.bulk_evict(bad)
    assert len(agg) == 1 and agg.query() == 1.0


def test_nanoseconds_one_apart_stay_apart_beyond_float_precision():
    agg = winagg.make("fiba", "count")
    base = pd.Timestamp("2262-04-11 23:47:16.854775000")
    for k in range(3):
        agg.insert(1.0, base + pd.Timedelta(k, "ns"))
    assert len(agg) == 3 and agg.query(base + pd.Timedelta(1, "ns"), base + pd.Timedelta(1, "ns")) == 1


@pytest.mark.parametrize("algorithm", EVERY_KIND)
def test_the_time_kind_survives_pickling(algorithm):
    agg = winagg.make(algorithm, "sum")
    agg.insert(1.0, pd.Timestamp("2024-01-01"))
    copy = pickle.loads(pickle.dumps(agg))
    assert copy.oldest_time() == pd.Timestamp("2024-01-01")
    with pytest.raises(winagg.InvalidTimeError):
        copy.insert(1.0, 10)


def test_time_unit_and_arrival_times_directly():
    unit = TimeUnit()
    times, kind = unit.inward_all([np.datetime64("1970-01-01T00:00:01")], lambda i: f"t[{i}]")
    assert times == [1_000_000_000] and kind == "datetime" and unit.kind is None  # the caller fixes the kind
    assert TimeUnit("datetime").outward(1_000_000_000) == pd.Timestamp("1970-01-01 00:00:01")
    assert TimeUnit("number").outward(7) == 7
    index = ArrivalTimes([1, 2, 2, 3, 5])
    assert (index.count_upto(2), index.count_before(2), index.count_upto(0), index.count_upto(9)) == (3, 1, 0, 5)
    index.drop(2)
    assert (len(index), index[0], index.youngest(), index.count_upto(2)) == (3, 2, 5, 1)
    index.keep([True, False, True])
    assert index.as_list() == [2, 5]


@pytest.mark.parametrize("algorithm", EVERY_KIND)
def test_a_datetime_outside_nanoseconds_is_refused_by_name(algorithm):
    agg = winagg.make(algorithm, "sum")
    agg.insert(1.0, pd.Timestamp("2024-01-01"))
    for far in (datetime.datetime(2300, 1, 1), np.datetime64("1500-01-01", "D")):
        with pytest.raises(winagg.InvalidTimeError, match="outside int64 nanoseconds"):
            agg.insert(2.0, far)
    assert len(agg) == 1
    window = winagg.Window("sum", size="1h")
    with pytest.raises(winagg.InvalidTimeError, match="outside int64 nanoseconds"):
        window.push(datetime.datetime(2300, 1, 1), 1.0)


# ---------------------------------------------------------------- durations and time zones (issue 38)
DURATIONS = [np.timedelta64(3, "ns"), np.timedelta64(3, "s"), pd.Timedelta("3s"), datetime.timedelta(seconds=3)]


@pytest.mark.parametrize("algorithm", EVERY_KIND)
@pytest.mark.parametrize("duration", DURATIONS)
def test_a_duration_is_not_a_time_and_changes_nothing(algorithm, duration):
    # np.timedelta64(3, "ns") was read as the number 3 (a bulk evict took items away), one in
    # seconds as a datetime.timedelta that failed later, inside a comparison
    agg = winagg.make(algorithm, "sum")
    agg.bulk_insert([1.0, 2.0], [1, 5])
    for call in (lambda: agg.bulk_evict(duration), lambda: agg.insert(4.0, duration),
                 lambda: agg.bulk_insert([4.0], [duration])):
        with pytest.raises(winagg.InvalidTimeError, match="is a duration, not a time"):
            call()
    assert (len(agg), agg.query(), agg.oldest_time(), agg.youngest_time()) == (2, 3.0, 1, 5)
    empty = winagg.make(algorithm, "sum")
    with pytest.raises(winagg.InvalidTimeError, match="duration"):
        empty.insert(1.0, duration)
    empty.insert(1.0, pd.Timestamp("2024-01-01"))  # the refused time fixed no kind
    assert empty.oldest_time() == pd.Timestamp("2024-01-01")


@pytest.mark.parametrize("algorithm", EVERY_KIND)
def test_tz_aware_times_are_instants_and_come_back_in_the_window_zone(algorithm):
    agg = winagg.make(algorithm, "sum")
    berlin = pd.date_range("2024-03-31 01:00", periods=4, freq="30min", tz="Europe/Berlin")  # 01:00 .. 03:30 (DST)
    agg.bulk_insert([1.0, 2.0], berlin[:2])
    agg.insert(4.0, berlin[2].tz_convert("UTC"))  # the same instant in another zone
    agg.insert(8.0, berlin[3].to_pydatetime())
    assert agg.oldest_time() == berlin[0] and str(agg.oldest_time().tz) == "Europe/Berlin"
    assert agg.youngest_time() == berlin[3] and str(agg.youngest_time().tz) == "Europe/Berlin"
    # 01:30 Berlin is 00:30 UTC: a bound of any zone is the same instant
    assert agg.bulk_evict(pd.Timestamp("2024-03-31 00:30", tz="UTC")) == 2
    assert agg.query() == 12.0 and agg.oldest_time() == pd.Timestamp("2024-03-31 03:00", tz="Europe/Berlin")
    copy = pickle.loads(pickle.dumps(agg))
    assert copy.youngest_time() == berlin[3] and str(copy.youngest_time().tz) == "Europe/Berlin"


@pytest.mark.parametrize("algorithm", EVERY_KIND)
def test_tz_naive_and_tz_aware_times_do_not_mix(algorithm):
    aware = winagg.make(algorithm, "sum")
    aware.insert(1.0, pd.Timestamp("2024-03-31 01:00", tz="Europe/Berlin"))
    naive_bounds = (pd.Timestamp("2024-03-31 05:00"), np.datetime64("2024-03-31T05:00"),
                    datetime.datetime(2024, 3, 31, 5))
    for naive in naive_bounds:  # read as UTC they would be an hour or two off
        with pytest.raises(winagg.InvalidTimeError, match="tz-naive datetime, but this window's times are tz-aware"):
            aware.insert(2.0, naive)
        with pytest.raises(winagg.InvalidTimeError, match="tz-naive"):
            aware.bulk_evict(naive)
    assert len(aware) == 1 and aware.query() == 1.0
    naive = winagg.make(algorithm, "sum")
    naive.insert(1.0, pd.Timestamp("2024-03-31 01:00"))
    with pytest.raises(winagg.InvalidTimeError, match=r"times\[0\] .* is a tz-aware datetime, but this window's "
                                                      r"times are tz-naive"):
        naive.bulk_insert([2.0], [pd.Timestamp("2024-03-31 05:00", tz="UTC")])
    assert len(naive) == 1


def test_time_kinds_are_plain_strings_a_saved_state_can_hold():
    from winagg.windows.time_index import is_time_kind

    unit = TimeUnit()
    _, kind = unit.inward_all([pd.Timestamp("2024-01-01", tz="Asia/Kolkata")], lambda i: f"t[{i}]")
    assert kind == "datetime[Asia/Kolkata]" and is_time_kind(kind)
    fixed = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone(datetime.timedelta(hours=-5, minutes=-30)))
    _, kind = unit.inward_all([fixed], lambda i: f"t[{i}]")
    assert TimeUnit(kind).outward(pd.Timestamp(fixed).value) == pd.Timestamp(fixed)
    assert all(is_time_kind(k) for k in (None, "number", "datetime")) and not is_time_kind("datetime[")
