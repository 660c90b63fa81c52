"""The bytes a stored value becomes: the same value back, damage refused, no code run from a blob."""

import datetime
import pickle
import struct
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

import winagg
from winagg import aggregations
from winagg.store import SQLiteStore, StoredWindow, codec

from crafted import crafted_pickles, with_checksum

SAMPLES = [
    0.5, -0.0, float("inf"), 0, -1, 255, 2 ** 100, -(2 ** 70), True, False, None, "", "a;b;", "é\udcff", b"",
    b"\x00\xff", np.float64(2.5), np.int64(-3), np.uint8(7), np.bool_(True), np.float32(1.5),
    np.complex128(1 + 2j), np.datetime64(5, "ns"), np.timedelta64(3, "s"), (), ((),), (1.0, np.int64(2)),
    [1, [2, (3, "x")]], np.zeros(64, np.uint64), np.arange(6, dtype=np.int32).reshape(2, 3),
    np.array([], np.float64), np.array(3.0), np.array([1.0, 2.0])[::2],
    # through the checked pickle
    Fraction(1, 3), Decimal("1.10"), {1: "a", "b": (2, 3)}, {1, 2}, frozenset({"x"}), complex(1, 2),
    datetime.datetime(2024, 3, 1, 8, tzinfo=datetime.timezone.utc), np.array(["a", None], object), np.str_("x"),
]


def _same(a, b) -> bool:
    """Same type and value, all the way down (-0.0 is not 0.0, NaN is NaN; arrays by dtype, shape and items)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and a.tolist() == b.tolist()
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (set, frozenset)):
        return a == b
    return repr(a) == repr(b)  # a float's repr is exact


@pytest.mark.parametrize("value", SAMPLES, ids=lambda v: f"{type(v).__name__}:{v!r:.20}")
def test_a_value_comes_back_of_the_same_type_and_value(value):
    back = codec.decode(codec.encode(value))
    assert _same(back, value)
    if isinstance(back, np.ndarray):
        back[...] = back  # writable, as the partial was


def _pickled_leaves(value) -> list:
    if type(value) in (tuple, list):
        return [leaf for item in value for leaf in _pickled_leaves(item)]
    return [value] if codec.encode(value)[:1] == b"p" else []


# one name per built-in aggregation; argmin and argmax lift (value, position) pairs, not items
@pytest.mark.parametrize("name", sorted(cls.aliases[0] for cls in aggregations.BUILTINS if not cls.positional))
def test_the_built_in_aggregations_partials_are_kept_as_data_not_pickles(name):
    window = winagg.make("amta", name)
    for value in (3.0, 5.0, float("nan"), -2.0):
        window.insert(value)
    partial = window.partial()
    assert _pickled_leaves(partial) == []
    assert _same(codec.decode(codec.encode(partial)), partial)


@pytest.mark.parametrize("value", [0.5, 2 ** 100, "a;b;", np.int64(-3), (1.0, np.int64(2)),
                                   np.arange(6, dtype=np.int32), Fraction(1, 3)], ids=repr)
def test_every_cut_and_every_changed_byte_of_a_value_is_refused_as_damage(value):
    blob = codec.encode(value)
    for length in range(len(blob)):
        with pytest.raises(winagg.StoreCorruptError):
            codec.decode(blob[:length])
    for at in range(len(blob)):
        changed = blob[:at] + bytes([blob[at] ^ 0x5A]) + blob[at + 1:]
        with pytest.raises(winagg.StoreCorruptError):
            codec.decode(changed)


@pytest.mark.parametrize("body, problem", [
    (b"x", "unknown tag"),
    (b"f" + b"\x00" * 7, "float is not 8 bytes"),
    (b"n\x03|O8" + b"\x00" * 8, "not one kept as raw bytes"),
    (b"t" + struct.pack("<I", 1_000_000), "does not fit"),
    (b"t" + struct.pack("<II", 1, 50) + b"N", "runs past its end"),
    (b"l" + struct.pack("<II", 1, 1) + b"NN", "trailing bytes"),
    (b"a\x03<f8\x01" + struct.pack("<I", 3) + b"\x00" * 16, "has the wrong size"),
    (b"T!", "trailing bytes"),
    (b"p" + pickle.dumps(1.5) + b"!", "trailing bytes"),
])
def test_well_checksummed_nonsense_is_refused_as_damage(body, problem):
    with pytest.raises(winagg.StoreCorruptError, match=problem):
        codec.decode(with_checksum(body))


def test_a_crafted_pickle_would_run_code_and_the_codec_refuses_it_without_running_it(tmp_path):
    control = tmp_path / "control"
    for payload in crafted_pickles(control).values():
        pickle.loads(payload)  # the payloads are live: plain pickle runs them
        assert control.exists()
        control.unlink()
    marker = tmp_path / "marker"
    for payload in crafted_pickles(marker).values():
        with pytest.raises(winagg.StoreCorruptError, match="not among the types a store may hold"):
            codec.decode(with_checksum(b"p" + payload))
        assert not marker.exists()


class _Point:
    def __init__(self, x):
        self.x = x


def _add_points(a, b):
    return _Point(a.x + b.x)


def test_a_partial_the_store_could_not_read_back_is_refused_when_written(tmp_path):
    with pytest.raises(TypeError, match="cannot keep a _Point"):
        codec.encode((1.0, _Point(2)))
    store = SQLiteStore(tmp_path / "points.db")
    with pytest.raises(TypeError, match="cannot keep a _Point"):
        StoredWindow(store, winagg.Monoid(_Point(0), _add_points, _Point, name="points"))
    # the refusal left the store free for a window it can keep
    with StoredWindow(store, winagg.Monoid(Fraction(0), lambda a, b: a + b, Fraction, name="fractions")) as window:
        window.bulk_insert([1, 2, 3])
        for _ in range(3):
            window.bulk_insert([Fraction(1, 3)] * 4)
    with StoredWindow(SQLiteStore(tmp_path / "points.db"), window.monoid) as again:
        assert again.query() == Fraction(10) and type(again.query()) is Fraction
