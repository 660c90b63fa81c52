"""The per-partition engine of winagg.spark, without Spark, against a brute-force frame fold."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import CONCAT, same_answer

import winagg
from winagg.aggregations.sketches import stable_key
from winagg.spark.partition import Frame, Output, PartitionWindows, result_type

#: (aggregation, input Arrow type) pairs checked; CONCAT runs in plain Python, the rest compiled.
CHECKED = [(CONCAT, pa.int64()), ("sum", pa.int64()), ("sum", pa.float64()), ("max", pa.float64()),
           ("min", pa.int32()), ("mean", pa.float64()), ("stddev", pa.float64()), ("count", pa.int64()),
           ("first", pa.float64()), ("last", pa.int64()), ("argmax", pa.float64()), ("geomean", pa.float64()),
           ("variance_pop", pa.float64()), ("argmin", pa.int64()), ("maxcount", pa.float64()),
           ("mincount", pa.int64()), ("relative_variation", pa.float64()), ("collect", pa.int64()),
           ("m4", pa.float64()), ("mean", pa.int64())]

keys = st.sampled_from(["a", "b", "c", None])
times = st.one_of(st.none(), st.integers(0, 12))
values = st.one_of(st.none(), st.integers(1, 20))
table_rows = st.lists(st.tuples(keys, times, values), max_size=40)
frames = st.one_of(st.builds(lambda n: Frame(rows=n), st.integers(1, 5)),
                   st.builds(lambda s: Frame(span=s), st.integers(0, 4)))


def _sorted(rows):
    """Spark's sort within a partition: key then time, nulls first; ties keep their order."""
    return sorted(rows, key=lambda r: (r[0] is not None, r[0] or "", r[1] is not None, r[1] or 0))


def _frame_of(rows, i, frame):
    """Indices of row i's frame, straight from the definition."""
    key, time, _ = rows[i]
    same_key = [j for j in range(len(rows)) if rows[j][0] == key]
    if frame.rows is not None:
        upto = [j for j in same_key if j <= i]
        return upto[-frame.rows:]
    if time is None:
        return [j for j in same_key if rows[j][1] is None]
    return [j for j in same_key if rows[j][1] is not None and time - frame.span <= rows[j][1] <= time]


def _expected(rows, frame, monoid):
    defined_when_empty = isinstance(monoid, (winagg.aggregations.Count, winagg.aggregations.Collect))
    positional = getattr(monoid, "positional", False)
    answers = []
    for i in range(len(rows)):
        items = []
        for j in _frame_of(rows, i, frame):
            value = rows[j][2]
            if value is None:
                continue
            position = sum(1 for k in range(j) if rows[k][0] == rows[j][0])
            items.append((float(value), position) if positional else value)
        if not items and not defined_when_empty:
            answers.append(None)
            continue
        answer = monoid.fold(items)
        if isinstance(answer, tuple):  # an Arrow list column reads back as a list
            answer = list(answer)
        answers.append(None if isinstance(answer, float) and math.isnan(answer) else answer)
    return answers


def _batches(rows, value_type, cuts):
    table = pa.table({"k": pa.array([r[0] for r in rows], pa.string()),
                      "t": pa.array([r[1] for r in rows], pa.int64()),
                      "v": pa.array([r[2] for r in rows], value_type)})
    bounds = sorted({0, len(rows), *[c for c in cuts if 0 < c < len(rows)]})
    return [table.slice(a, b - a).to_batches()[0] if b > a else None for a, b in zip(bounds, bounds[1:])]


def _run(rows, frame, aggregation, value_type, cuts):
    monoid = winagg.aggregations.get(aggregation)
    output = Output("out", "v", monoid, result_type(monoid, value_type))
    windows = PartitionWindows(["k"], "t", frame, [output])
    batches = [b for b in _batches(rows, value_type, cuts) if b is not None]
    got = []
    for batch in windows(iter(batches)):
        assert batch.schema.names == ["k", "t", "v", "out"]
        got.extend(batch.column("out").to_pylist())
    return got, monoid


@pytest.mark.parametrize("aggregation,value_type", CHECKED, ids=lambda x: str(getattr(x, "name", x)))
@settings(max_examples=60, deadline=None)
@given(rows=table_rows, frame=frames, cuts=st.lists(st.integers(0, 40), max_size=6))
def test_every_row_gets_the_fold_of_its_frame(aggregation, value_type, rows, frame, cuts):
    rows = _sorted(rows)
    got, monoid = _run(rows, frame, aggregation, value_type, cuts)
    want = _expected(rows, frame, monoid)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert (g is None) == (w is None) and (w is None or same_answer(g, w)), \
            f"row {i} {rows[i]} of {rows} ({frame}): got {g!r}, want {w!r}"


@pytest.mark.parametrize("aggregation,value_type", [("sum", pa.int64()), ("max", pa.float64()), (CONCAT, pa.int64())],
                         ids=["sum", "max", "concat"])
@settings(max_examples=40, deadline=None)
@given(rows=table_rows, frame=frames, cuts=st.lists(st.integers(0, 40), max_size=6))
def test_the_udf_side_answers_every_row_in_order_never_ahead_of_its_input(aggregation, value_type, rows, frame, cuts):
    """PartitionWindows.answers, the body of sliding()'s Arrow UDF: tuples of the columns it reads
    in, a struct of the outputs per row out; a range frame's held-back peers come later, but no
    more rows are answered than have come in (PySpark refuses that)."""
    rows = _sorted(rows)
    monoid = winagg.aggregations.get(aggregation)
    windows = PartitionWindows(["k"], "t", frame, [Output("out", "v", monoid, result_type(monoid, value_type))])
    assert windows.needed == ["k", "t", "v"]
    batches = [b for b in _batches(rows, value_type, cuts) if b is not None]
    brought = 0

    def columns():
        nonlocal brought
        for batch in batches:
            brought += batch.num_rows
            yield tuple(batch.column(name) for name in ("k", "t", "v"))

    got = []
    for answers in windows.answers(columns()):
        assert [field.name for field in answers.type] == ["out"]
        got.extend(answers.field("out").to_pylist())
        assert len(got) <= brought
    want = _expected(rows, frame, monoid)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert (g is None) == (w is None) and (w is None or same_answer(g, w)), \
            f"row {i} {rows[i]} of {rows} ({frame}): got {g!r}, want {w!r}"


def test_rows_keep_their_order_and_columns_across_batches():
    rows = _sorted([("a", t, t) for t in range(10)] + [("b", t, 100 + t) for t in range(5)])
    got, _ = _run(rows, Frame(rows=3), "sum", pa.int64(), [1, 4, 11])
    assert got == [0, 1, 3, 6, 9, 12, 15, 18, 21, 24, 100, 201, 303, 306, 309]


def test_peers_share_one_result_even_when_a_batch_splits_them():
    rows = [("a", 1, 1), ("a", 2, 10), ("a", 2, 20), ("a", 2, 30), ("a", 3, 5)]
    # every cut inside the group of time 2 must still give all three rows 1 + 10 + 20 + 30
    for cut in range(1, 5):
        got, _ = _run(rows, Frame(span=1), "sum", pa.int64(), [cut])
        assert got == [1, 61, 61, 61, 65], cut


def test_null_order_values_form_their_own_group_before_the_others():
    rows = [("a", None, 1), ("a", None, 2), ("a", 0, 4), ("a", 1, 8)]
    # a cut after the nulls hands the next batch, which has none, a window that must start afresh
    for cut in range(1, 4):
        got, _ = _run(rows, Frame(span=5), "sum", pa.int64(), [cut])
        assert got == [3, 3, 4, 12], cut


def test_timestamps_run_as_nanoseconds_and_one_past_2262_is_refused_naming_its_column():
    """Spark's microsecond timestamps become int64 nanoseconds: range frames near both ends of that
    range give their folds; a 9999-12-31 stamp raises InvalidTimeError instead of wrapping around."""
    import datetime as dt

    from winagg.core.errors import InvalidTimeError

    stamps = [dt.datetime(1677, 9, 22), dt.datetime(1677, 9, 22, 0, 0, 2), dt.datetime(2262, 4, 10),
              dt.datetime(2262, 4, 10, 0, 0, 1, 500)]
    table = pa.table({"k": ["a"] * 4, "t": pa.array(stamps, pa.timestamp("us", "UTC")), "v": [1, 2, 4, 8]})
    output = Output("s", "v", winagg.aggregations.get("sum"), pa.int64())
    windows = PartitionWindows(["k"], "t", Frame(span=2_000_000_000), [output])  # 2 s in nanoseconds
    out = pa.Table.from_batches(list(windows(iter(table.to_batches()))))
    assert out.column("s").to_pylist() == [1, 3, 4, 12]
    stamps[-1] = dt.datetime(9999, 12, 31)
    late = table.set_column(1, "t", pa.array(stamps, pa.timestamp("us", "UTC")))
    with pytest.raises(InvalidTimeError, match=r"column 't' = 9999-12-31.* outside int64 nanoseconds"):
        list(windows(iter(late.to_batches())))


def test_strings_run_compiled_through_stable_keys_for_hll_and_count():
    names = [f"N{i % 30}" for i in range(200)]
    table = pa.table({"k": ["x"] * 200, "t": list(range(200)), "v": names})
    outputs = [Output("hll", "v", winagg.aggregations.get("hll"), pa.float64()),
               Output("n", "v", winagg.aggregations.get("count"), pa.int64())]
    out = pa.Table.from_batches(list(PartitionWindows(["k"], "t", Frame(rows=50), outputs)(
        iter(table.to_batches(max_chunksize=17)))))
    counts = out.column("n").to_pylist()
    assert counts[:3] == [1, 2, 3] and counts[-1] == 50
    estimates = np.array(out.column("hll").to_pylist())
    # the same as rolling over each name's stable key, and near the true distinct count
    keys = np.array([np.uint64(stable_key(name)) for name in names]).view(np.int64)
    np.testing.assert_array_equal(estimates, winagg.rolling(keys, 50, "hll"))
    distinct = np.array([len(set(names[max(0, i - 49):i + 1])) for i in range(200)])
    assert np.all(np.abs(estimates - distinct) <= 2 + 0.05 * distinct)  # two register collisions here


def test_result_types_follow_spark():
    assert result_type(winagg.aggregations.get("sum"), pa.int32()) == pa.int64()
    assert result_type(winagg.aggregations.get("max"), pa.int32()) == pa.int32()
    assert result_type(winagg.aggregations.get("mean"), pa.int32()) == pa.float64()
    assert result_type(winagg.aggregations.get("count"), pa.string()) == pa.int64()
    assert result_type(CONCAT, pa.int64()) == pa.string()
    assert result_type(winagg.aggregations.get("max"), pa.string()) is None  # numeric max: no answer to guess


def test_long_sums_are_exact_across_batches_and_one_past_int64_raises_naming_the_row():
    """Longs up to a twelfth of int64's range, at most 12 to a frame: every frame sum fits int64 while the
    running total passes it; cut into batches anywhere, each sum is the exact one and each
    mean the correctly rounded quotient of it. One frame past int64 raises, naming column, key and time
    (declared a double, the sum is the rounded exact one instead)."""
    from fractions import Fraction

    rng = np.random.default_rng(5)
    bound = (2 ** 63 - 1) // 12
    times = np.sort(rng.integers(0, 40, 60))
    values = [None if rng.random() < 0.1 else int(v) for v in rng.integers(-bound // 8, bound, 60, endpoint=True)]
    rows = [("a", int(t), v) for t, v in zip(times, values)]
    outputs = [Output("s", "v", winagg.aggregations.get("sum"), pa.int64()),
               Output("m", "v", winagg.aggregations.get("mean"), pa.float64())]
    for frame in (Frame(rows=12), Frame(span=1)):
        frames = [[rows[j][2] for j in _frame_of(rows, i, frame) if rows[j][2] is not None] for i in range(60)]
        assert max(len(f) for f in frames) <= 12
        windows = PartitionWindows(["k"], "t", frame, outputs)
        out = pa.Table.from_batches(list(windows(iter(b for b in _batches(rows, pa.int64(), [7, 8, 30]) if b))))
        assert out.column("s").to_pylist() == [sum(f) if f else None for f in frames]
        assert out.column("m").to_pylist() == [float(Fraction(sum(f), len(f))) if f else None for f in frames]
    assert max(abs(sum(v for v in values[:i] if v is not None)) for i in range(60)) > 2 ** 63
    over = [("a", 0, 2 ** 62), ("b", 0, 2 ** 62 - 1), ("b", 1, 2 ** 62), ("b", 2, 2 ** 62)]
    windows = PartitionWindows(["k"], "t", Frame(rows=2), outputs)
    with pytest.raises(OverflowError, match=r"output column 's': the sum of the long column 'v' over the window "
                                            r"of the row with k='b', t=2 is 9223372036854775808, outside int64"):
        list(windows(iter(_batches(over, pa.int64(), [2]))))
    # a sum declared a double is the correctly rounded exact sum, in range or not
    as_double = Output("d", "v", winagg.aggregations.get("sum"), pa.float64())
    out = pa.Table.from_batches(list(PartitionWindows(["k"], "t", Frame(rows=2), [as_double])(
        iter(_batches(over, pa.int64(), [2])))))
    assert out.column("d").to_pylist() == [2.0 ** 62, float(2 ** 62 - 1), float(2 ** 63 - 1), 2.0 ** 63]


def test_means_of_large_long_sums_round_once_as_python_integer_division_does():
    """rounded_quotients against Python's int / int (correctly rounded): random sums from 2**53 to int64's
    ends, counts up to 2**31 - 1, and quotients built to sit exactly halfway between two float64 or just
    past halfway (a remainder the float64 of the sum would lose)."""
    import random

    from winagg.spark.partition import rounded_quotients

    rng = random.Random(11)
    ends = (2 ** 63 - 1, -2 ** 63, 2 ** 53, -2 ** 53 - 1, 2 ** 63 - 512)
    pairs = [(s, n) for s in ends for n in (1, 2, 3, 2 ** 31 - 1)]
    while len(pairs) < 20_000:
        n = rng.choice([1, 2, 3, 7, 1024, 99_991, rng.randrange(1, 2 ** 31)])
        bits = rng.randrange(23, 64)
        q = rng.randrange(2 ** (bits - 1), 2 ** bits)
        if bits > 53 and rng.random() < 0.5:  # halfway between two float64: the remainder decides
            q = (q >> (bits - 53) << (bits - 53)) | (1 << (bits - 54))
        total = rng.choice([-1, 1]) * (q * n + rng.choice([0, 1, n // 2, n - 1, rng.randrange(n)]))
        if 2 ** 53 <= abs(total) and -2 ** 63 <= total < 2 ** 63:
            pairs.append((total, n))
    sums, counts = (np.array(column, np.int64) for column in zip(*pairs))
    got = rounded_quotients(sums, counts)
    want = np.array([s / n for s, n in pairs])
    wrong = np.flatnonzero(got != want)
    assert not len(wrong), [(pairs[i], got[i], want[i]) for i in wrong[:5]]
