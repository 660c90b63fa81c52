"""The bytes a stored value becomes, read back without running code from the store.

A store's files may come from anywhere, so reading one must never run code
from it. Every value a window keeps in its store (a partial, or an item's
time) is written as *data*:

* ``None``, ``bool``, ``int`` (any size), ``float``, ``str`` and ``bytes``;
* numpy scalars and arrays of booleans, integers, floats, complex numbers,
  datetimes and timedeltas, as their raw bytes after their dtype's name;
* tuples and lists of these, to any depth.

Those cover every built-in aggregation's partials (numbers, tuples of numbers,
the sketches' numpy arrays) and the items that ``first``, ``last``, ``m4`` and
``collect`` keep when they are numbers or strings. A user monoid's partial of
another type (a ``Fraction``, a ``dict``, a ``set``, ...) is pickled and read back
with an unpickler that builds only the types in :data:`SAFE_GLOBALS` (those,
numpy arrays and scalars of any dtype, and the containers pickle writes
without a name) and refuses every other name, so a crafted pickle cannot call
anything. A partial that this unpickler could not read back is refused when it
is written (:func:`encode` raises ``TypeError`` naming its type), not when it is
read.

Each blob ends with the CRC-32 of the rest, and every part of it says how long
it is, so a truncated, cut or overwritten value raises
:class:`~winagg.StoreCorruptError` instead of coming back as another value.
"""

from __future__ import annotations

import io
import pickle
import struct
import zlib

import numpy as np

from ..core.errors import StoreCorruptError

_FLOAT = struct.Struct("<d")
_LENGTH = struct.Struct("<I")
_CRC = struct.Struct("<I")
#: dtype kinds kept as raw bytes: booleans, signed and unsigned integers, floats, complex, timedelta, datetime.
_RAW_KINDS = "biufcmM"
_CONSTANTS = {b"N": None, b"T": True, b"F": False}

#: Looked-up dtypes by name and names by dtype, at most this many each (a store's names could be endless).
_CACHED_DTYPES = 64
_DTYPES: dict = {}
_NAMES: dict = {}

#: The only names a stored pickle may load: value types whose construction runs no code of the store's choice.
SAFE_GLOBALS = frozenset({
    ("builtins", "complex"), ("builtins", "set"), ("builtins", "frozenset"), ("builtins", "bytearray"),
    ("fractions", "Fraction"), ("decimal", "Decimal"),
    ("datetime", "date"), ("datetime", "time"), ("datetime", "datetime"), ("datetime", "timedelta"),
    ("datetime", "timezone"),
    ("collections", "OrderedDict"),
    ("numpy", "dtype"), ("numpy", "ndarray"),
    ("numpy._core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "scalar"),
    ("numpy.core.multiarray", "_reconstruct"), ("numpy.core.multiarray", "scalar"),
})


# ---------------------------------------------------------------- writing
def encode(value) -> bytes:
    """``value`` as a self-checking blob (see the module docstring); TypeError for a type it cannot read back."""
    body = _encode(value)
    return body + _CRC.pack(zlib.crc32(body))


def _encode(value) -> bytes:
    kind = type(value)
    if kind is float:  # the commonest partial first
        return b"f" + _FLOAT.pack(value)
    if isinstance(value, np.generic) and value.dtype.kind in _RAW_KINDS:
        return b"n" + _dtype_name(value.dtype) + value.tobytes()
    if kind is tuple:
        return b"t" + _sequence(value)
    if kind is int:
        raw = value.to_bytes(value.bit_length() // 8 + 1, "little", signed=True)
        return b"i" + raw
    if value is None:
        return b"N"
    if kind is bool:
        return b"T" if value else b"F"
    if kind is str:
        return b"s" + value.encode("utf-8", "surrogatepass")
    if kind is bytes:
        return b"y" + value
    if kind is list:
        return b"l" + _sequence(value)
    if kind is np.ndarray and value.dtype.kind in _RAW_KINDS:
        return b"a" + _array(value)
    return b"p" + _checked_pickle(value)


def _dtype_name(dtype) -> bytes:
    named = _NAMES.get(dtype)
    if named is None:
        name = dtype.str.encode("ascii")  # '<f8', '<M8[ns]': byte order, kind, size (and unit)
        named = bytes([len(name)]) + name
        if len(_NAMES) < _CACHED_DTYPES:
            _NAMES[dtype] = named
    return named


def _sequence(items) -> bytes:
    parts = [_LENGTH.pack(len(items))]
    for item in items:
        blob = _encode(item)
        parts.append(_LENGTH.pack(len(blob)))
        parts.append(blob)
    return b"".join(parts)


def _array(array) -> bytes:
    shape = b"".join(_LENGTH.pack(n) for n in array.shape)
    return _dtype_name(array.dtype) + bytes([array.ndim]) + shape + np.ascontiguousarray(array).tobytes()


def _checked_pickle(value) -> bytes:
    blob = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    try:
        _safe_loads(blob)
    except pickle.UnpicklingError as refused:
        raise TypeError(f"a stored window cannot keep a {type(value).__name__} ({refused}): its partials and "
                        f"times must be numbers, strings, bytes, numpy values, tuples, lists or one of "
                        f"{sorted('.'.join(name) for name in SAFE_GLOBALS)}") from None
    return blob


# ---------------------------------------------------------------- reading
def decode(blob):
    """The value :func:`encode` turned into ``blob``; StoreCorruptError if ``blob`` is not such a value."""
    if type(blob) is not bytes:
        raise StoreCorruptError(f"a stored value is a {type(blob).__name__}, not bytes")
    if len(blob) < 5:
        raise StoreCorruptError(f"a stored value of {len(blob)} bytes is too short to be one")
    body = blob[:-4]
    if zlib.crc32(body) != _CRC.unpack_from(blob, len(body))[0]:
        raise StoreCorruptError("a stored value does not match its checksum (it was cut or overwritten)")
    try:
        return _decode(body)
    except StoreCorruptError:
        raise
    except Exception as exc:  # whatever a damaged blob makes the readers raise, it is damage
        raise StoreCorruptError(f"a stored value is damaged: {type(exc).__name__}: {exc}") from exc


def _decode(body: bytes):
    tag, data = body[:1], body[1:]
    if tag == b"f":
        if len(data) != 8:
            raise _damaged("a float is not 8 bytes")
        return _FLOAT.unpack(data)[0]
    if tag == b"n":
        dtype, offset = _read_dtype(data, 0)
        if len(data) - offset != dtype.itemsize:
            raise _damaged(f"a {dtype} scalar has the wrong size")
        return np.frombuffer(data, dtype, offset=offset)[0]
    if tag in (b"t", b"l"):
        items = _read_sequence(data)
        return tuple(items) if tag == b"t" else items
    if tag == b"i":
        if not data:
            raise _damaged("an int has no bytes")
        return int.from_bytes(data, "little", signed=True)
    if tag in _CONSTANTS:
        if data:
            raise _damaged("a constant has trailing bytes")
        return _CONSTANTS[tag]
    if tag == b"s":
        return data.decode("utf-8", "surrogatepass")
    if tag == b"y":
        return data
    if tag == b"a":
        return _read_array(data)
    if tag == b"p":
        stream = io.BytesIO(data)
        value = _SafeUnpickler(stream).load()
        if stream.tell() != len(data):
            raise _damaged("a pickle has trailing bytes")
        return value
    raise StoreCorruptError(f"a stored value starts with the unknown tag {tag!r}")


def _damaged(problem: str) -> StoreCorruptError:
    return StoreCorruptError(f"a stored value is damaged: {problem}")


def _read_dtype(data: bytes, offset: int):
    end = offset + 1 + data[offset]
    name = data[offset + 1:end]
    dtype = _DTYPES.get(name)
    if dtype is None:  # parsing a dtype's name costs more than the rest of the read
        dtype = np.dtype(name.decode("ascii"))
        if dtype.kind not in _RAW_KINDS:
            raise _damaged(f"dtype {dtype} is not one kept as raw bytes")
        if len(_DTYPES) < _CACHED_DTYPES:
            _DTYPES[name] = dtype
    return dtype, end


def _read_sequence(data: bytes) -> list:
    (count,) = _LENGTH.unpack_from(data, 0)
    if count * 4 > len(data) - 4:
        raise _damaged(f"a sequence of {count} items does not fit in {len(data)} bytes")
    items, offset = [], 4
    for _ in range(count):
        (size,) = _LENGTH.unpack_from(data, offset)
        offset += 4
        if offset + size > len(data):
            raise _damaged("a sequence's item runs past its end")
        items.append(_decode(data[offset:offset + size]))
        offset += size
    if offset != len(data):
        raise _damaged("a sequence has trailing bytes")
    return items


def _read_array(data: bytes):
    dtype, offset = _read_dtype(data, 0)
    ndim = data[offset]
    shape = struct.unpack_from(f"<{ndim}I", data, offset + 1)
    offset += 1 + 4 * ndim
    count = 1
    for n in shape:
        count *= n
    if count * dtype.itemsize != len(data) - offset:
        raise _damaged(f"a {dtype} array of shape {shape} has the wrong size")
    return np.frombuffer(data, dtype, count, offset).reshape(shape).copy()  # writable, as the partial was


class _SafeUnpickler(pickle.Unpickler):
    """An unpickler that builds only the types of :data:`SAFE_GLOBALS` and refuses every other name."""

    def find_class(self, module, name):
        if (module, name) in SAFE_GLOBALS:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"{module}.{name} is not among the types a store may hold")

    def persistent_load(self, pid):
        raise pickle.UnpicklingError("a stored pickle refers to an outside object")


def _safe_loads(data: bytes):
    return _SafeUnpickler(io.BytesIO(data)).load()
