"""Large answer arrays are faulted in on a helper thread, their contents untouched."""

import ctypes
import mmap
import sys

import numpy as np
import pytest

import winagg
from winagg.engine import pages

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="MADV_POPULATE_WRITE is Linux's")


def resident_pages(array: np.ndarray) -> int:
    """How many of the pages wholly inside ``array`` are in memory (mincore(2))."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
    address, length = pages._whole_pages(array)
    vec = ctypes.create_string_buffer(length // mmap.PAGESIZE)
    assert libc.mincore(address, length, vec) == 0, ctypes.get_errno()
    return sum(byte & 1 for byte in vec.raw)


@linux_only
def test_a_large_new_array_is_in_memory_when_the_block_ends():
    # A mapping of its own: memory from malloc may be memory the process has already touched.
    mapping = mmap.mmap(-1, pages.POPULATE_BYTES + 8 * mmap.PAGESIZE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    fresh = np.frombuffer(mapping, np.float64)
    whole = pages._whole_pages(fresh)[1] // mmap.PAGESIZE
    assert resident_pages(fresh) == 0
    with pages.populated(fresh):
        pass
    assert resident_pages(fresh) == whole
    del fresh
    mapping.close()


def test_contents_stay_as_they_were():
    values = np.arange(pages.POPULATE_BYTES // 8 + 12345, dtype=np.int64)
    with pages.populated(values):
        values[-1] = -1
    assert values[0] == 0 and values[-2] == values.size - 2 and values[-1] == -1
    assert np.array_equal(values[:-1], np.arange(values.size - 1))


def test_whole_pages_lie_inside_the_buffer():
    buffer = np.empty(3 * mmap.PAGESIZE + 100, np.uint8)[7:]
    address, length = pages._whole_pages(buffer)
    assert address % mmap.PAGESIZE == 0 and length % mmap.PAGESIZE == 0
    assert buffer.ctypes.data <= address and address + length <= buffer.ctypes.data + buffer.nbytes
    assert length >= 2 * mmap.PAGESIZE


def test_rolling_answers_filled_beside_the_helper_are_right():
    n = pages.POPULATE_BYTES // 8 + 1000  # 8-byte answers: the helper runs
    values = (1 + np.arange(n) % 101).astype(np.int64)
    out = winagg.rolling(values, window=100, agg="sum", algorithm="two_stacks_lite")
    sums = np.cumsum(values)
    want = sums - np.concatenate((np.zeros(100, np.int64), sums[:-100]))
    assert np.array_equal(np.asarray(out, np.int64), want)
