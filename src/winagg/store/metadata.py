"""A stored window's metadata blob: JSON numbers and strings, its few partials as codec blobs.

The blob says which window the store holds (format, algorithm, aggregation)
and where its tree stands (the tree's index ranges, the algorithm's state,
the AMTA stack, what each level may hold in the store). It is JSON: reading
it builds numbers, strings and lists, never objects of the blob's choice. The
partials in it (the state's running aggregate, the stack's entries) are
:mod:`winagg.store.codec` blobs in base64.

:func:`loads` checks every field's type and refuses anything else with
:class:`~winagg.StoreCorruptError`, including metadata of another format:
format 6 is the first in JSON, and the pickled metadata of formats 2 to 5 is
refused by its number (read from the pickle's opcodes, never unpickled).
"""

from __future__ import annotations

import base64
import binascii
import json
import pickletools
from typing import Any, Callable, Dict, Optional

from ..core.errors import StoreCorruptError
from ..windows.time_index import is_time_kind
from . import codec

#: 6: metadata in JSON and values in :mod:`winagg.store.codec` (data, checksummed), not pickles.
#: 5: tuple partials are kept in one record array, not an array per field.
#: 4: the times are in the window's unit (datetimes as int nanoseconds) and the snapshot says which.
#: 3: amta keeps its event positions in meta and R0 with the oldest block's entries in the stack, and its
#: state has six fields (format 2 did neither).
FORMAT = 6


# ---------------------------------------------------------------- writing
def dumps(algorithm: str, aggregation: str, tree, state_ints, state_partials, stack: Dict[int, Any],
          arrivals: int, time_kind: Optional[str], deleted_lo: Dict[int, int], written_hi: Dict[int, int]) -> bytes:
    """The metadata blob of a window (``tree`` is its ``meta`` list; ``state_*`` split its state tuple)."""
    return json.dumps(dict(
        format=FORMAT, algorithm=algorithm, aggregation=aggregation,
        tree=[int(v) for v in tree],
        state=dict(ints=[int(v) for v in state_ints], partials=[_blob(p) for p in state_partials]),
        stack=[[int(slot), _blob(p)] for slot, p in stack.items()],
        arrivals=int(arrivals), time_kind=time_kind,
        deleted_lo=_pairs(deleted_lo), written_hi=_pairs(written_hi)), separators=(",", ":")).encode("ascii")


def _blob(partial) -> str:
    return base64.b64encode(codec.encode(partial)).decode("ascii")


def _pairs(mapping: Dict[int, int]) -> list:
    return [[int(k), int(v)] for k, v in mapping.items()]


# ---------------------------------------------------------------- reading
def loads(blob, where: str) -> Dict[str, Any]:
    """The fields :func:`dumps` wrote, checked; StoreCorruptError naming ``where`` and the field otherwise.

    ``state`` comes back as ``(ints, partials)`` lists, ``stack``, ``deleted_lo`` and
    ``written_hi`` as dicts.
    """
    saved = _parse(blob, where)
    fields = _Fields(saved, where)
    fields.take("format", _is_int, "a format number")
    if saved["format"] != FORMAT:
        raise StoreCorruptError(f"{where} holds a window of format {saved['format']}, expected {FORMAT}: "
                                f"{_other_format(saved['format'])}")
    return dict(
        algorithm=fields.take("algorithm", _is_str, "a string"),
        aggregation=fields.take("aggregation", _is_str, "a string"),
        tree=fields.take("tree", _is_int_list, "a list of integers"),
        state=_state(fields.take("state", _is_dict, "an object"), where),
        stack={slot: _partial(text, where, "stack")
               for slot, text in fields.take("stack", _is_pair_list(_is_str), "a list of [slot, partial]")},
        arrivals=fields.take("arrivals", _is_count, "an integer >= 0"),
        time_kind=fields.take("time_kind", is_time_kind, "a time kind (None, 'number', 'datetime[ZONE]')"),
        deleted_lo=dict(fields.take("deleted_lo", _is_pair_list(_is_int), "a list of [level, index]")),
        written_hi=dict(fields.take("written_hi", _is_pair_list(_is_int), "a list of [level, index]")))


def _parse(blob, where) -> dict:
    if type(blob) is not bytes:
        raise StoreCorruptError(f"{where}: the metadata is a {type(blob).__name__}, not bytes")
    if blob[:1] == b"\x80":  # pickle's PROTO opcode: metadata of format 5 or older
        number = _pickled_format(blob)
        raise StoreCorruptError(f"{where} holds a window of format {number or 'unknown'}, expected {FORMAT}: "
                                f"{_other_format(number)}")
    try:
        saved = json.loads(blob.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise StoreCorruptError(f"{where}: the metadata is not JSON ({exc})") from None
    if not isinstance(saved, dict):
        raise StoreCorruptError(f"{where}: the metadata is a {type(saved).__name__}, not an object")
    return saved


def _other_format(number) -> str:
    if _is_int(number) and number > FORMAT:
        return "a newer winagg wrote it; open it with that version"
    return "an older winagg wrote it and this one cannot read it; clear() the store and rebuild the window"


def _pickled_format(blob: bytes) -> Optional[int]:
    """The ``format`` number in an older winagg's pickled metadata, read from its opcodes (nothing runs)."""
    key = None
    try:
        for opcode, arg, _ in pickletools.genops(blob):
            if opcode.name in ("MEMOIZE", "PUT", "BINPUT", "LONG_BINPUT", "FRAME"):
                continue  # bookkeeping between a key and its value
            if key == "format" and _is_int(arg):
                return arg
            key = arg if isinstance(arg, str) else None
    except ValueError:  # not a pickle after all
        return None
    return None


class _Fields:
    """The fields of a parsed blob, each taken once its type is checked."""

    def __init__(self, saved: dict, where: str):
        self.saved, self.where = saved, where

    def take(self, name: str, check: Callable[[Any], bool], what: str):
        if name not in self.saved:
            raise StoreCorruptError(f"{self.where}: the metadata has no {name!r}")
        value = self.saved[name]
        if not check(value):
            raise StoreCorruptError(f"{self.where}: the metadata's {name!r} is {_short(value)}, not {what}")
        return value


def _state(state: dict, where: str):
    fields = _Fields(state, where)
    ints = fields.take("ints", _is_int_list, "a list of integers")
    texts = fields.take("partials", lambda v: isinstance(v, list) and all(map(_is_str, v)), "a list of strings")
    return ints, [_partial(text, where, "state") for text in texts]


def _partial(text: str, where: str, field: str):
    try:
        return codec.decode(base64.b64decode(text, validate=True))
    except binascii.Error as exc:
        raise StoreCorruptError(f"{where}: a partial in the metadata's {field!r} is not base64 ({exc})") from None
    except StoreCorruptError as exc:
        raise StoreCorruptError(f"{where}: a partial in the metadata's {field!r}: {exc}") from exc


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_int(value) -> bool:
    return type(value) is int  # a JSON true or false is a bool, not a number here


def _is_count(value) -> bool:
    return _is_int(value) and value >= 0


def _is_str(value) -> bool:
    return type(value) is str


def _is_dict(value) -> bool:
    return type(value) is dict


def _is_int_list(value) -> bool:
    return type(value) is list and all(map(_is_int, value))


def _is_pair_list(second: Callable[[Any], bool]) -> Callable[[Any], bool]:
    def check(value) -> bool:
        return type(value) is list and all(
            type(pair) is list and len(pair) == 2 and _is_int(pair[0]) and second(pair[1]) for pair in value)
    return check
