"""Mergeable sketches: Bloom filter, Count-Min sketch, HyperLogLog, and a quantile sketch.

Every item is first turned into a 64-bit key that is the same in every
process (Python's own ``hash`` of a string is salted per process, which
would break sketches merged across Spark workers): integers and integral
floats map to their integer value, other floats to their mantissa and
exponent, strings and bytes to a BLAKE2b digest. Keys are then spread by the
SplitMix64 finalizer. Missing values (NaN, None) lift to the empty sketch.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import numbers
from dataclasses import dataclass
from typing import Any

import numba as nb
import numpy as np
from numba.extending import intrinsic

from ..core import jitcache
from ..core.layout import vector_layout
from ..values import is_missing
from .base import Aggregation, Compiled, float_input


@dataclass(frozen=True)
class CompiledSketch(Compiled):
    """:class:`Compiled` plus ``combine_into(out, a, b)``, the combine written into a row.

    A sketch's combine returns a new array; an algorithm that keeps partials in the rows
    of a buffer folds into them with ``combine_into`` instead (``out`` may be ``a`` or
    ``b``), so that an insert or evict allocates nothing (see :class:`winagg.core.ops.Ops`).
    """

    combine_into: Any = None
    #: ``combine_rows(out_buf, out, a_buf, a, b_buf, b)``: the combine of two rows of 2D
    #: buffers written into a third, by index (no row views; see :class:`winagg.core.ops.Ops`)
    combine_rows: Any = None

_U = np.uint64
_GOLDEN = _U(0x9E3779B97F4A7C15)
_M1 = _U(0xBF58476D1CE4E5B9)
_M2 = _U(0x94D049BB133111EB)


@nb.njit(cache=True)
def mix64(z):
    """SplitMix64 finalizer on a uint64."""
    z = (z ^ (z >> _U(30))) * _M1
    z = (z ^ (z >> _U(27))) * _M2
    return z ^ (z >> _U(31))


@nb.njit(cache=True)
def float_key(x):
    """The 64-bit key of a number; integral values give their integer."""
    if x == math.floor(x) and abs(x) < 9.2e18:
        return _U(np.int64(x))
    mantissa, exponent = math.frexp(x)
    return _U(np.int64(mantissa * 9007199254740992.0)) ^ (_U(exponent + 4096) << _U(53))


def stable_key(item):
    """The 64-bit key of any item, or None for a missing one (None, NaN)."""
    if item is None:
        return None
    if isinstance(item, (bool, np.bool_)):
        return _U(int(item))
    if isinstance(item, (int, np.integer)):
        return _U(int(item) & 0xFFFFFFFFFFFFFFFF)
    if isinstance(item, (float, np.floating)):
        if item != item:
            return None
        return _U(float_key(float(item)))  # numba hands uint64 back as a Python int
    if isinstance(item, str):
        data = item.encode("utf-8")
    elif isinstance(item, (bytes, bytearray)):
        data = bytes(item)
    else:
        data = repr(item).encode("utf-8")
    return _U(int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little"))


def item_keys(items) -> "np.ndarray | None":
    """The keys of an object array's items as int64 (the bits of :func:`stable_key`), or None
    when an item is missing: a compiled sketch then keys strings as :func:`winagg.make` does."""
    keys = [stable_key(item) for item in items.tolist()]
    if any(key is None for key in keys):
        return None
    return np.array([int(key) for key in keys], dtype=np.uint64).view(np.int64)


_int_lifts: dict = {}


def _int_lift(lift_key):
    """A compiled lift that keys an int64 value by its own bits, as :func:`stable_key` keys an
    int: through float64 (the float lift) integers above 2**53 would share keys."""
    if lift_key not in _int_lifts:
        @jitcache.njit
        def lift(x, row):
            return lift_key(_U(x))
        _int_lifts[lift_key] = lift
    return _int_lifts[lift_key]


def _int_keyed(spec, lift_key):
    return dataclasses.replace(spec, key=spec.key + "_int", lift=_int_lift(lift_key))


def _python_lift(key_lift, empty):
    def lift(item):
        key = stable_key(item)
        return empty if key is None else key_lift(key)
    return lift


@nb.njit(cache=True)
def _bitwise_or(a, b):
    return a | b


@nb.njit(cache=True, inline="always")
def _bitwise_or_into(out, a, b):
    for i in range(out.shape[0]):
        out[i] = a[i] | b[i]


@nb.njit(cache=True, inline="always")
def _bitwise_or_rows(out_buf, out, a_buf, a, b_buf, b):
    for i in range(out_buf.shape[1]):
        out_buf[out, i] = a_buf[a, i] | b_buf[b, i]


@nb.njit(cache=True)
def _elementwise_max(a, b):
    return np.maximum(a, b)


@nb.njit(cache=True, inline="always")
def _elementwise_max_into(out, a, b):
    for i in range(out.shape[0]):
        out[i] = a[i] if a[i] >= b[i] else b[i]


@nb.njit(cache=True, inline="always")
def _elementwise_max_rows(out_buf, out, a_buf, a, b_buf, b):
    for i in range(out_buf.shape[1]):
        x = a_buf[a, i]
        y = b_buf[b, i]
        out_buf[out, i] = x if x >= y else y


@nb.njit(cache=True)
def _elementwise_add(a, b):
    return a + b


@nb.njit(cache=True, inline="always")
def _elementwise_add_into(out, a, b):
    for i in range(out.shape[0]):
        out[i] = a[i] + b[i]


@nb.njit(cache=True, inline="always")
def _elementwise_add_rows(out_buf, out, a_buf, a, b_buf, b):
    for i in range(out_buf.shape[1]):
        out_buf[out, i] = a_buf[a, i] + b_buf[b, i]


@nb.njit(cache=True)
def _elementwise_negate(a):
    return -a


@intrinsic
def _ones(typingctx, word):
    """The number of set bits of a uint64 (LLVM's ctpop: one instruction where the CPU has one)."""
    def codegen(context, builder, signature, args):
        ctpop = builder.module.declare_intrinsic("llvm.ctpop", [args[0].type])
        return builder.call(ctpop, [args[0]])

    return nb.types.uint64(nb.types.uint64), codegen


@nb.njit(cache=True)
def _popcount(words):
    # Every compiled Bloom query lowers through this count (the distinct-item estimate): the
    # bit-twiddling count it replaced cost about as much as the rest of a Two-Stacks Lite round.
    total = 0
    for w in words:
        total += np.int64(_ones(w))
    return total


# ---------------------------------------------------------------- Bloom filter
_bloom_cache: dict = {}


def _bloom_kernels(bits, hashes):
    if (bits, hashes) in _bloom_cache:
        return _bloom_cache[(bits, hashes)]
    words = bits // 64
    nbits = _U(bits)

    @jitcache.njit
    def bit_positions(key):
        out = np.empty(hashes, np.uint64)
        h = _U(key)  # an int64 key would turn the uint64 arithmetic below into float64
        for k in range(hashes):
            h = mix64(h + _GOLDEN * _U(k + 1))
            out[k] = h % nbits
        return out

    @jitcache.njit
    def lift_key(key):
        # the bits of bit_positions, set as they are made: the filter is the lift's one allocation
        filt = np.zeros(words, np.uint64)
        h = _U(key)
        for k in range(hashes):
            h = mix64(h + _GOLDEN * _U(k + 1))
            bit = h % nbits
            filt[bit >> _U(6)] |= _U(1) << (bit & _U(63))
        return filt

    @jitcache.njit
    def contains_key(filt, key):
        for bit in bit_positions(key):
            if (filt[bit >> _U(6)] >> (bit & _U(63))) & _U(1) == _U(0):
                return False
        return True

    @jitcache.njit
    def lift(x, row):
        if x != x:
            return np.zeros(words, np.uint64)
        return lift_key(float_key(np.float64(x)))

    @jitcache.njit
    def estimate(filt):
        # Swamidass and Baldi's estimate of the number of distinct items inserted.
        ones = _popcount(filt)
        if ones >= bits:
            return np.inf
        return -(bits / hashes) * math.log(1.0 - ones / bits)

    _bloom_cache[(bits, hashes)] = (lift_key, contains_key, lift, estimate)
    return _bloom_cache[(bits, hashes)]


class BloomFilter:
    """The lowered Bloom filter of a window: answers ``item in filter``."""

    def __init__(self, words, hashes, contains_key, estimate):
        self.words = words
        self.hashes = hashes
        self._contains_key = contains_key
        self._estimate = estimate

    def __contains__(self, item):
        key = stable_key(item)
        return False if key is None else bool(self._contains_key(self.words, key))

    def estimated_count(self) -> float:
        """Estimated number of distinct items in the window."""
        return float(self._estimate(self.words))

    def __repr__(self):
        return f"BloomFilter(bits={self.words.size * 64}, ones={int(_popcount(self.words))})"


class Bloom(Aggregation):
    """Bloom filter of the window's items (default 4096 bits, 4 hashes, as the papers).

    Lowered in Python to a :class:`BloomFilter` (``item in result``). In the
    compiled :func:`winagg.rolling` path each row gets the estimated number of
    distinct items in its window, or with ``probe=x`` 1.0/0.0 for whether
    ``x`` may be in the window.
    """

    aliases = ("bloom",)
    defined_when_empty = True
    keyed_input = True

    def __init__(self, bits: int = 4096, hashes: int = 4, probe=None):
        if bits <= 0 or bits % 64:
            raise ValueError(f"bits must be a positive multiple of 64, got {bits!r}")
        if hashes <= 0:
            raise ValueError(f"hashes must be positive, got {hashes!r}")
        super().__init__(bits=bits, hashes=hashes, probe=probe)
        self.bits, self.hashes = bits, hashes
        lift_key, contains_key, lift, estimate = _bloom_kernels(bits, hashes)
        empty = np.zeros(bits // 64, np.uint64)
        if probe is None:
            lower = estimate
        else:
            probe_key = stable_key(probe)

            @jitcache.njit
            def lower(filt):
                return 1.0 if contains_key(filt, probe_key) else 0.0

        self._spec = CompiledSketch(f"bloom{bits}x{hashes}p{probe!r}", lift, _bitwise_or, lower, empty,
                                    vector_layout(bits // 64, np.uint64), np.float64,
                                    combine_into=_bitwise_or_into, combine_rows=_bitwise_or_rows)
        self._int_spec = _int_keyed(self._spec, lift_key)
        Aggregation._init_python(
            self, empty, _bitwise_or.py_func, _python_lift(lift_key, empty),
            lambda filt: BloomFilter(filt, hashes, contains_key, estimate), True, "bloom")

    def compiled_for(self, dtype):
        return self._spec if float_input(dtype) else self._int_spec


# ---------------------------------------------------------------- Count-Min sketch
_countmin_cache: dict = {}


def _countmin_kernels(width, depth):
    if (width, depth) in _countmin_cache:
        return _countmin_cache[(width, depth)]
    w = _U(width)

    @jitcache.njit
    def lift_key(key):
        counts = np.zeros(width * depth, np.int64)
        for row in range(depth):
            counts[row * width + np.int64(mix64(_U(key) + _GOLDEN * _U(row + 1)) % w)] += 1
        return counts

    @jitcache.njit
    def estimate_key(counts, key):
        best = np.iinfo(np.int64).max
        for row in range(depth):
            c = counts[row * width + np.int64(mix64(_U(key) + _GOLDEN * _U(row + 1)) % w)]
            if c < best:
                best = c
        return best

    @jitcache.njit
    def lift(x, row):
        if x != x:
            return np.zeros(width * depth, np.int64)
        return lift_key(float_key(np.float64(x)))

    @jitcache.njit
    def total(counts):
        return np.float64(counts[:width].sum())

    _countmin_cache[(width, depth)] = (lift_key, estimate_key, lift, total)
    return _countmin_cache[(width, depth)]


class CountMinSketch:
    """The lowered Count-Min sketch of a window: ``sketch[item]`` estimates its frequency."""

    def __init__(self, counts, estimate_key):
        self.counts = counts
        self._estimate_key = estimate_key

    def __getitem__(self, item):
        return self.estimate(item)

    def estimate(self, item) -> int:
        """An upper bound on how often ``item`` occurs in the window (exact with no collisions)."""
        key = stable_key(item)
        return 0 if key is None else int(self._estimate_key(self.counts, key))

    def __repr__(self):
        return f"CountMinSketch(cells={self.counts.size})"


class CountMin(Aggregation):
    """Count-Min sketch (``width`` counters in each of ``depth`` rows) of the window's items.

    Lowered in Python to a :class:`CountMinSketch` (``sketch[item]``); compiled, each
    row gets the number of items, or with ``probe=x`` the frequency estimate of ``x``.
    Counts are integers, so the inverse (subtracting a sketch) is exact.
    """

    aliases = ("countmin", "count_min")
    defined_when_empty = True
    keyed_input = True

    def __init__(self, width: int = 512, depth: int = 4, probe=None):
        if width <= 0 or depth <= 0:
            raise ValueError(f"width and depth must be positive, got {width!r}, {depth!r}")
        super().__init__(width=width, depth=depth, probe=probe)
        lift_key, estimate_key, lift, total = _countmin_kernels(width, depth)
        empty = np.zeros(width * depth, np.int64)
        if probe is None:
            lower = total
        else:
            probe_key = stable_key(probe)

            @jitcache.njit
            def lower(counts):
                return np.float64(estimate_key(counts, probe_key))

        self._spec = CompiledSketch(f"countmin{width}x{depth}p{probe!r}", lift, _elementwise_add, lower, empty,
                                    vector_layout(width * depth, np.int64), np.float64, _elementwise_negate,
                                    exact_inverse=True, combine_into=_elementwise_add_into,
                                    combine_rows=_elementwise_add_rows)
        self._int_spec = _int_keyed(self._spec, lift_key)
        Aggregation._init_python(
            self, empty, _elementwise_add.py_func, _python_lift(lift_key, empty),
            lambda counts: CountMinSketch(counts, estimate_key), True, "countmin",
            inverse=_elementwise_negate.py_func)

    def compiled_for(self, dtype):
        return self._spec if float_input(dtype) else self._int_spec


# ---------------------------------------------------------------- HyperLogLog
_hll_cache: dict = {}


def _hll_kernels(precision):
    if precision in _hll_cache:
        return _hll_cache[precision]
    registers = 1 << precision
    rest_bits = 64 - precision
    alpha = 0.7213 / (1.0 + 1.079 / registers)

    @jitcache.njit
    def lift_key(key):
        regs = np.zeros(registers, np.uint8)
        h = mix64(_U(key))
        index = np.int64(h >> _U(rest_bits))
        rest = h << _U(precision)
        rank = 1
        while rank <= rest_bits and (rest >> _U(63)) == _U(0):
            rest = rest << _U(1)
            rank += 1
        regs[index] = rank
        return regs

    @jitcache.njit
    def lift(x, row):
        if x != x:
            return np.zeros(registers, np.uint8)
        return lift_key(float_key(np.float64(x)))

    @jitcache.njit
    def estimate(regs):
        inverse_sum = 0.0
        zeros = 0
        for r in regs:
            inverse_sum += 2.0 ** (-np.float64(r))
            if r == 0:
                zeros += 1
        raw = alpha * registers * registers / inverse_sum
        if raw <= 2.5 * registers and zeros > 0:  # small range: linear counting
            return registers * math.log(registers / zeros)
        return raw

    _hll_cache[precision] = (lift_key, lift, estimate)
    return _hll_cache[precision]


class HyperLogLog(Aggregation):
    """HyperLogLog with ``2**precision`` registers: lowered to the estimated number of distinct items."""

    aliases = ("hll", "hyperloglog")
    defined_when_empty = True
    keyed_input = True

    def __init__(self, precision: int = 10):
        if not 4 <= precision <= 16:
            raise ValueError(f"precision must be in 4..16, got {precision!r}")
        super().__init__(precision=precision)
        lift_key, lift, estimate = _hll_kernels(precision)
        empty = np.zeros(1 << precision, np.uint8)
        self._spec = CompiledSketch(f"hll{precision}", lift, _elementwise_max, estimate, empty,
                                    vector_layout(1 << precision, np.uint8), np.float64,
                                    combine_into=_elementwise_max_into, combine_rows=_elementwise_max_rows)
        self._int_spec = _int_keyed(self._spec, lift_key)
        Aggregation._init_python(
            self, empty, _elementwise_max.py_func, _python_lift(lift_key, empty),
            lambda regs: float(estimate(regs)), True, "hyperloglog")

    def compiled_for(self, dtype):
        return self._spec if float_input(dtype) else self._int_spec


# ---------------------------------------------------------------- quantile sketch (DDSketch)
_quantile_sketch_cache: dict = {}


def _quantile_sketch_kernels(q, accuracy, smallest, largest):
    """DDSketch's logarithmic buckets over fixed magnitudes: bucket j holds the magnitudes in
    (gamma**(j-1), gamma**j], gamma = (1 + accuracy) / (1 - accuracy), so that one value,
    2 gamma**j / (gamma + 1), lies within ``accuracy`` (relative) of every magnitude in it.
    Slots in value order: -inf, the negative buckets (largest magnitude first), the magnitudes
    below ``smallest`` (zero), the positive buckets, +inf."""
    cache_key = (q, accuracy, smallest, largest)
    if cache_key in _quantile_sketch_cache:
        return _quantile_sketch_cache[cache_key]
    log_gamma = math.log((1.0 + accuracy) / (1.0 - accuracy))
    lowest = math.ceil(math.log(smallest) / log_gamma)
    buckets = math.ceil(math.log(largest) / log_gamma) - lowest + 1
    zero = buckets + 1
    slots = 2 * buckets + 3

    @jitcache.njit
    def slot_of(x):
        if x != x:
            return -1
        magnitude = abs(x)
        if magnitude < smallest:
            return zero
        if magnitude == np.inf:
            return 0 if x < 0 else slots - 1
        j = min(max(np.int64(math.ceil(math.log(magnitude) / log_gamma)), lowest), lowest + buckets - 1) - lowest
        return zero - 1 - j if x < 0 else zero + 1 + j

    @jitcache.njit
    def lift(x, row):
        counts = np.zeros(slots, np.int64)
        slot = slot_of(np.float64(x))
        if slot >= 0:
            counts[slot] = 1
        return counts

    @jitcache.njit
    def value_of(slot):
        if slot == 0 or slot == slots - 1:
            return -np.inf if slot == 0 else np.inf
        if slot == zero:
            return 0.0
        j = slot - zero - 1 if slot > zero else zero - 1 - slot
        magnitude = 2.0 * math.exp((lowest + j) * log_gamma) / (1.0 + math.exp(log_gamma))
        return magnitude if slot > zero else -magnitude

    @jitcache.njit
    def estimate(counts):
        total = counts.sum()
        if total == 0:
            return np.nan
        rank = np.int64(q * (total - 1))  # the value of this rank (from 0) is estimated
        seen = 0
        for slot in range(slots):
            seen += counts[slot]
            if seen > rank:
                return value_of(slot)
        return np.nan

    _quantile_sketch_cache[cache_key] = (slots, lift, estimate)
    return _quantile_sketch_cache[cache_key]


class QuantileSketch(Aggregation):
    """A mergeable quantile sketch (DDSketch, Masson, Rim and Lee, VLDB 2019) of the window's
    numbers, lowered to an estimate of its ``q``-quantile.

    Bound: the estimate is within ``relative_accuracy`` (relative error) of the window's exact
    ``q``-quantile with pandas' "lower" interpolation (the value of rank ``floor(q * (n - 1))``
    among its n values, NaN skipped), whatever the order of the items and however partials
    were merged, as long as that value's magnitude lies in ``[min_value, max_value]``;
    magnitudes below ``min_value`` are estimated as 0, ±inf as themselves, and finite
    magnitudes above ``max_value`` as about ``max_value``. A window without a value gives NaN.
    The partial is a fixed array of counts, one per logarithmic bucket (about
    ``ln(max_value / min_value) / relative_accuracy`` of them): merging adds counts, so the
    monoid is commutative and exactly invertible.
    """

    aliases = ("quantile_sketch", "ddsketch")
    defined_when_empty = True

    def __init__(self, q: float = 0.5, relative_accuracy: float = 0.01, min_value: float = 1e-9,
                 max_value: float = 1e9):
        from .quantile import check_fraction

        q = check_fraction(q)
        if not 0.0 < relative_accuracy < 1.0:
            raise ValueError(f"relative_accuracy must be in (0, 1), got {relative_accuracy!r}")
        if not 0.0 < min_value < max_value < math.inf:
            raise ValueError(f"min_value and max_value must satisfy 0 < min_value < max_value < inf, "
                             f"got {min_value!r}, {max_value!r}")
        super().__init__(q, relative_accuracy, min_value, max_value)
        self.q, self.relative_accuracy = q, relative_accuracy
        slots, lift, estimate = _quantile_sketch_kernels(q, float(relative_accuracy), float(min_value),
                                                         float(max_value))
        empty = np.zeros(slots, np.int64)
        self._spec = CompiledSketch(f"ddsketch{q!r}a{relative_accuracy!r}r{min_value!r}-{max_value!r}", lift,
                                    _elementwise_add, estimate, empty, vector_layout(slots, np.int64), np.float64,
                                    _elementwise_negate, exact_inverse=True, commutative=True,
                                    combine_into=_elementwise_add_into, combine_rows=_elementwise_add_rows)

        def lift_item(item):
            if is_missing(item):
                return empty.copy()
            if isinstance(item, (str, bytes)) or not isinstance(item, numbers.Real):
                raise TypeError(f"quantile_sketch needs numbers or missing values, got {item!r} "
                                f"({type(item).__name__})")
            return lift(float(item), 0)

        Aggregation._init_python(self, empty, _elementwise_add.py_func, lift_item,
                                 lambda counts: float(estimate(counts)), True, "quantile_sketch",
                                 inverse=_elementwise_negate.py_func)

    def compiled_for(self, dtype):
        return self._spec
