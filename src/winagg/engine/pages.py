"""The answers' memory, faulted in on another core while the compiled loop fills it.

A large new array is only address space: each 4 KiB (or 2 MiB, with transparent huge pages)
page is faulted in and zeroed by the kernel at its first write. For an output of tens of
millions of answers those faults cost as much as the aggregation itself, more on a virtual
machine whose host takes freed memory back (see docs/benchmarks/reference.md). Linux (5.14
and later) can fault a range in ahead of use without changing its contents
(``madvise(MADV_POPULATE_WRITE)``); :func:`populated` asks for that on a helper thread, which
holds no GIL while the kernel works, so the loop mostly finds its pages ready.
"""
from __future__ import annotations

import ctypes
import mmap
import sys
import threading
from contextlib import contextmanager

import numpy as np

#: Arrays smaller than this are left to fault in as the loop writes them. From here up numpy
#: backs an array with 2 MiB pages, and faulting them in (memory the process freed a moment
#: ago, or memory the host took back) costs more than starting and joining a thread.
POPULATE_BYTES = 4 << 20
_MADV_POPULATE_WRITE = 23
_madvise = None  # the C function once loaded; False where it is missing or refused


def _load_madvise():
    global _madvise
    if _madvise is None:
        _madvise = False
        if sys.platform.startswith("linux"):
            try:
                libc = ctypes.CDLL(None, use_errno=True)
                libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
                libc.madvise.restype = ctypes.c_int
                _madvise = libc.madvise
            except (OSError, AttributeError):
                pass
    return _madvise


def _whole_pages(array: np.ndarray) -> tuple[int, int]:
    """``(address, length)`` of the pages that lie wholly inside ``array``'s buffer."""
    start = array.ctypes.data
    first = -(-start // mmap.PAGESIZE) * mmap.PAGESIZE
    end = (start + array.nbytes) // mmap.PAGESIZE * mmap.PAGESIZE
    return first, max(end - first, 0)


def _populate(madvise, address: int, length: int) -> None:
    global _madvise
    if madvise(address, length, _MADV_POPULATE_WRITE) != 0:
        _madvise = False  # an older kernel (EINVAL) or a refusal: the loop's own faults will do


@contextmanager
def populated(array):
    """Within the block, ``array``'s pages are faulted in on a helper thread (large, writable,
    contiguous numpy arrays on Linux; otherwise, the Python drivers' lists included, nothing
    happens). Its contents do not change; the block's end waits for the helper, so the array
    outlives its work."""
    thread = None
    large = isinstance(array, np.ndarray) and array.nbytes >= POPULATE_BYTES
    madvise = _load_madvise() if large else False
    if madvise and array.flags.c_contiguous and array.flags.writeable:
        address, length = _whole_pages(array)
        thread = threading.Thread(target=_populate, args=(madvise, address, length),
                                  name="winagg-populate", daemon=True)
        thread.start()
    try:
        yield array
    finally:
        if thread is not None:
            thread.join()
