"""A damaged store raises StoreCorruptError, whatever the damage, and never runs code from its contents.

Each test builds a window, closes it, damages what it stored as another program
would (``sqlite3`` or a Redis client), and opens it again.
"""

import base64
import json
import pickle

import pytest

import winagg
from winagg.store import StoredWindow

from crafted import crafted_pickles, with_checksum

TIME_LEVEL = 65  # the level a stored window keeps its items' times in


def _stored(backend, name="w"):
    """A closed window of items 0 .. 199 with the 50 oldest evicted: its first position is 50."""
    with StoredWindow(backend.open(name), "sum", buffer_size=16) as window:
        window.bulk_insert([float(i) for i in range(200)])
        for _ in range(50):
            window.evict()
    return name


def _refused(backend, name, match, read=lambda window: None):
    """Open ``name`` again, ``read`` it; assert StoreCorruptError matching ``match`` on the way."""
    store = backend.open(name)
    try:
        with pytest.raises(winagg.StoreCorruptError, match=match):
            read(StoredWindow(store, "sum", buffer_size=16))
    finally:
        store.close()


def _edit(change):
    def damage(blob):
        saved = json.loads(blob)
        change(saved)
        return json.dumps(saved).encode()
    return damage


def _set_state_partial(text):
    def change(saved):
        assert len(saved["state"]["partials"]) == 1  # amta's running aggregate
        saved["state"]["partials"][0] = text
    return change


def _set_stack_entry(text):
    def change(saved):
        assert saved["stack"]  # amta's stack holds entries
        saved["stack"][0][1] = text
    return change


def _cut_state_partial(saved):
    blob = base64.b64decode(saved["state"]["partials"][0])
    saved["state"]["partials"][0] = base64.b64encode(blob[:-1]).decode()


def _set_state_int(at, value):
    def change(saved):
        saved["state"]["ints"][at] = value
    return change


METADATA_DAMAGE = {
    "cut in half": (lambda blob: blob[:len(blob) // 2], "not JSON"),
    "garbage bytes": (lambda blob: b"\xff\x00garbage", "not JSON"),
    "empty": (lambda blob: b"", "not JSON"),
    "a list, not an object": (lambda blob: b"[6]", "is a list, not an object"),
    "no state": (_edit(lambda saved: saved.pop("state")), "has no 'state'"),
    "a newer format": (_edit(lambda saved: saved.update(format=7)), "format 7, expected 6: a newer winagg"),
    "an older format": (_edit(lambda saved: saved.update(format=5)), "format 5, expected 6: an older winagg"),
    "a format that is a string": (_edit(lambda saved: saved.update(format="6")), "'format' is '6', not a format"),
    "arrivals that are a string": (_edit(lambda saved: saved.update(arrivals="many")), "'arrivals' is 'many'"),
    "arrivals that are true": (_edit(lambda saved: saved.update(arrivals=True)), "'arrivals' is True"),
    "arrivals below zero": (_edit(lambda saved: saved.update(arrivals=-1)), "'arrivals' is -1"),
    "an unknown time kind": (_edit(lambda saved: saved.update(time_kind="weeks")), "'time_kind' is 'weeks'"),
    "a tree with a float": (_edit(lambda saved: saved["tree"].__setitem__(0, 0.5)), "'tree' is"),
    "a tree cut short": (_edit(lambda saved: saved.update(tree=saved["tree"][:10])), "its tree has 10 fields"),
    "a state with a string": (_edit(_set_state_int(1, "50")), "'ints' is"),
    "a state of the other algorithm": (_edit(lambda saved: saved["state"]["ints"].pop()), "4 integers and 1"),
    "a state without a window": (_edit(_set_state_int(1, 10 ** 6)), "has no window"),
    "a state partial that is not base64": (_edit(_set_state_partial("!!")), "'state' is not base64"),
    "a state partial cut short": (_edit(_cut_state_partial), "partial in the metadata's 'state'"),
    "a stack entry that is a number": (_edit(_set_stack_entry(5)), "'stack' is"),
    "a stack entry outside the stack": (_edit(lambda saved: saved["stack"][0].__setitem__(0, 5)),
                                        "outside the stack's level"),
    "a level that does not exist": (_edit(lambda saved: saved["deleted_lo"].append([999, 0])), "does not exist"),
}


@pytest.mark.parametrize("damage", METADATA_DAMAGE)
def test_damaged_metadata_is_refused_when_the_window_opens(backend, damage):
    change, match = METADATA_DAMAGE[damage]
    name = _stored(backend)
    backend.set_meta(name, change(backend.meta(name)))
    _refused(backend, name, match)


def test_values_without_metadata_are_refused(backend):
    name = _stored(backend)
    backend.delete_meta(name)
    _refused(backend, name, "holds values but no metadata")


def _read_the_oldest_time(window):
    window.oldest_time()


def _evict_every_item(window):
    for _ in range(150):
        window.evict()
        window.query()


# (level, index, how to make the window read it): the oldest item's time, and the 4th oldest item
CELLS = {"a time": (TIME_LEVEL, 50, _read_the_oldest_time), "an item": (0, 53, _evict_every_item)}
CELL_DAMAGE = {
    "cut short": lambda blob: blob[:-1],
    "one byte changed": lambda blob: blob[:2] + bytes([blob[2] ^ 1]) + blob[3:],
    "garbage": lambda blob: b"garbage!",
    "empty": lambda blob: b"",
    "a bare pickle": lambda blob: pickle.dumps(1.0),
    "an unknown tag": lambda blob: with_checksum(b"?" + blob[1:-4]),
}


@pytest.mark.parametrize("cell", CELLS)
@pytest.mark.parametrize("damage", CELL_DAMAGE)
def test_a_damaged_cell_is_refused_when_the_window_reads_it(backend, cell, damage):
    level, index, read = CELLS[cell]
    name = _stored(backend)
    blob = backend.cell(name, level, index)
    assert blob is not None
    backend.set_cell(name, level, index, CELL_DAMAGE[damage](blob))
    _refused(backend, name, f"level {level}, index {index}: ", read)


@pytest.mark.parametrize("cell", CELLS)
def test_a_missing_cell_is_refused_when_the_window_reads_it(backend, cell):
    level, index, read = CELLS[cell]
    name = _stored(backend)
    backend.delete_cell(name, level, index)
    _refused(backend, name, f"no value at level {level}, index {index}", read)


def test_a_redis_key_of_another_type_is_refused(redis_keys):
    backend = redis_keys
    name = _stored(backend)
    bucket = f"{backend.prefix(name)}:{TIME_LEVEL}:0"
    backend.client.delete(bucket)
    backend.client.set(bucket, b"a string where a hash was")
    _refused(backend, name, "another kind of Redis value", _read_the_oldest_time)
    meta = backend.meta(name)
    backend.client.delete(f"{backend.prefix(name)}:meta")
    backend.client.hset(f"{backend.prefix(name)}:meta", "format", meta)
    _refused(backend, name, "another kind of Redis value")


def test_an_sqlite_value_of_another_sql_type_is_refused(sqlite_files):
    backend = sqlite_files
    name = _stored(backend)
    backend.set_cell(name, TIME_LEVEL, 50, "50.0")
    _refused(backend, name, "is a str, not bytes", _read_the_oldest_time)
    backend.set_meta(name, backend.meta(name).decode())
    _refused(backend, name, "the metadata is a str, not bytes")


def _encoded_pickle(payload):
    return base64.b64encode(with_checksum(b"p" + payload)).decode()


# where a crafted pickle goes: (how it gets there, what the window reads, the error)
PLACES = {
    "as the whole metadata": (lambda backend, name, payload: backend.set_meta(name, payload),
                              lambda window: None, "format unknown, expected 6"),
    "in the metadata's state": (lambda backend, name, payload: backend.set_meta(
        name, _edit(_set_state_partial(_encoded_pickle(payload)))(backend.meta(name))),
                                lambda window: None, "not among the types a store may hold"),
    "in the metadata's stack": (lambda backend, name, payload: backend.set_meta(
        name, _edit(_set_stack_entry(_encoded_pickle(payload)))(backend.meta(name))),
                                lambda window: None, "not among the types a store may hold"),
    "in a cell": (lambda backend, name, payload: backend.set_cell(
        name, TIME_LEVEL, 50, with_checksum(b"p" + payload)),
                  _read_the_oldest_time, "not among the types a store may hold"),
    "as a bare cell": (lambda backend, name, payload: backend.set_cell(name, 0, 53, payload),
                       _evict_every_item, "level 0, index 53"),
}


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("payload", ["os.system", "open", "inside a tuple"])
def test_a_crafted_pickle_in_a_store_is_refused_and_never_runs(backend, tmp_path, place, payload):
    put, read, match = PLACES[place]
    marker = tmp_path / "ran"
    name = _stored(backend)
    put(backend, name, crafted_pickles(marker)[payload])
    _refused(backend, name, match, read)
    assert not marker.exists()
