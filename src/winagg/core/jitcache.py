"""Disk caching for numba functions built as closures.

numba keys its disk cache for a closure on the pickled contents of the
closure's cells. winagg's kernels close over other compiled functions
(the algorithm's insert/evict/query, the aggregation's combine), and a
compiled function pickles with a random per-process id, so the key changed in
every process: nothing was ever loaded, and every run added files.
:func:`njit` keys the cache instead on the code of the function and,
recursively, of every compiled function or plain value it closes over or
calls as a global. A change to any of them gives a new key, and the digest
also goes into the function's name, so that specialisations compiled in
different processes never share a symbol once loaded into one.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import threading
import time
import types

import numba as nb
from numba.core import errors, sigutils, types as nbtypes
from numba.core.caching import FunctionCache
from numba.core.compiler_lock import global_compiler_lock
from numba.core.dispatcher import Dispatcher
from numba.core.extending import _Intrinsic
from numba.core.registry import CPUDispatcher


def _code_bytes(code: types.CodeType, out: list) -> None:
    out.append(code.co_code)
    out.append(repr(code.co_names).encode())
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _code_bytes(const, out)
        else:
            out.append(repr(const).encode())


def _value_bytes(value, seen: set) -> bytes:
    if isinstance(value, Dispatcher):
        return b"D" + function_digest(value.py_func, seen).encode() + repr(sorted(value.targetoptions.items())).encode()
    if isinstance(value, types.FunctionType):
        return b"F" + function_digest(value, seen).encode()
    if isinstance(value, _Intrinsic):
        # an intrinsic pickles with a per-process id: key it on its definition's code instead
        return b"I" + function_digest(value._defn, seen).encode()
    try:
        return b"P" + pickle.dumps(value, protocol=4)
    except Exception:
        return b"R" + repr(value).encode()


def function_digest(fn: types.FunctionType, seen: set = None) -> str:
    """A digest of ``fn``'s code, its closure and the compiled globals it calls, recursively."""
    seen = set() if seen is None else seen
    if id(fn) in seen:
        return "cycle"
    seen.add(id(fn))
    parts: list = [fn.__module__.encode(), fn.__qualname__.encode()]
    _code_bytes(fn.__code__, parts)
    for cell in fn.__closure__ or ():
        parts.append(_value_bytes(cell.cell_contents, seen))
    for name in fn.__code__.co_names:
        value = fn.__globals__.get(name)
        if isinstance(value, Dispatcher):
            parts.append(name.encode() + _value_bytes(value, seen))
    return hashlib.sha256(b"\0".join(parts)).hexdigest()


class _StableClosureCache(FunctionCache):
    def _index_key(self, sig, codegen):
        return (sig, codegen.magic_tuple(), (function_digest(self._py_func),))


def njit(fn=None, **options):
    """``numba.njit`` with a disk cache that also works for closures over compiled functions."""
    if fn is None:
        return lambda f: njit(f, **options)
    # numba names a compiled function after its qualified name and a per-process counter.
    # Two closures of one source function, compiled in different processes and loaded from
    # the cache into one, could get the same symbol and share (or miss) an environment;
    # the digest in the name keeps every specialisation's symbols apart. The options join
    # the digest (and so the cache key, which hashes the name): the same code compiled with
    # other options (without the runtime, inlined) is other machine code.
    # The name goes on a copy of the function: the caller's object keeps its own, so one
    # function can be compiled more than once (with other options) under names of its own.
    digest = function_digest(fn)
    if options:
        digest = hashlib.sha256(f"{digest} {sorted(options.items())!r}".encode()).hexdigest()
    named = _copy_of(fn)
    named.__qualname__ = f"{fn.__qualname__}_{digest[:16]}"
    dispatcher = nb.njit(**options)(named)
    try:
        dispatcher._cache = _StableClosureCache(named)
    except RuntimeError:
        pass  # no file to cache beside (code run by exec, as a notebook's): compiled in each process
    dispatcher.__class__ = _PlainArgumentsDispatcher
    return dispatcher


class _PlainArgumentsDispatcher(CPUDispatcher):
    """A dispatcher that compiles one specialisation for the types of its arguments, not one per
    constant: called from compiled code as ``f(bufs, x, True)`` and ``f(bufs, x, False)``, or with a
    loop counter starting at the literal 0, numba compiled a copy for each literal (FiBA's
    ``walk_down`` ten times, the out-of-order driver's loop twice), a large share of the first
    compile of a ``winagg.Window``. Inlined into its callers (most of winagg's per-item
    functions are), the one copy still sees the constants. Where a function only types with a
    literal (a tuple indexed by an argument), that literal's copy is compiled as before.
    """

    def get_call_template(self, args, kws):
        plain = tuple(nbtypes.unliteral(a) for a in args)
        plain_kws = {k: nbtypes.unliteral(v) for k, v in kws.items()}
        if plain != tuple(args) or plain_kws != kws:
            try:
                return super().get_call_template(plain, plain_kws)
            except errors.TypingError:
                pass
        return super().get_call_template(args, kws)

    def compile(self, sig):
        # One process compiles a kernel, the others wait for it and load it from the cache (two
        # test workers, or Spark's Python workers, used to compile the same kernel side by side).
        # numba's compiler lock comes first, so that within a process one thread compiles at a time
        # and every process takes the kernels' file locks in call order (callers before callees).
        args, _ = sigutils.normalize_signature(sig)
        if tuple(args) in self.overloads:
            return super().compile(sig)
        with global_compiler_lock, _one_compiler(self._cache):
            return super().compile(sig)


#: The lock files this process holds (a recursive compile of one function must not wait for itself).
_HELD: set = set()
_HELD_GUARD = threading.Lock()
#: How long a process waits for another's compile before it compiles the kernel itself.
WAIT_SECONDS = 900.0


@contextlib.contextmanager
def _one_compiler(cache):
    """An exclusive lock on a file beside ``cache``'s index, held by whoever compiles that function.

    Where there is no ``fcntl`` (Windows) or no writable cache folder, or after
    :data:`WAIT_SECONDS` of waiting, the process compiles without the lock.
    """
    try:
        import fcntl
        path = os.path.join(cache.cache_path, cache._cache_file._index_name + ".lock")
        handle = open(path, "a+b")
    except (ImportError, OSError, AttributeError):
        yield
        return
    with handle:
        with _HELD_GUARD:
            held = path in _HELD
            _HELD.add(path)
        locked = False
        try:
            deadline = time.monotonic() + WAIT_SECONDS
            while not held and not locked:
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    locked = True
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.05)
            yield
        finally:
            if not held:
                with _HELD_GUARD:
                    _HELD.discard(path)
            if locked:
                fcntl.flock(handle, fcntl.LOCK_UN)


def _copy_of(fn: types.FunctionType) -> types.FunctionType:
    copy = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    copy.__kwdefaults__ = fn.__kwdefaults__
    copy.__module__, copy.__doc__ = fn.__module__, fn.__doc__
    copy.__dict__.update(fn.__dict__)
    return copy
