"""A cycle counter readable from numba code, and its calibration to nanoseconds.

``read_cycles()`` emits LLVM's ``llvm.readcyclecounter`` (``rdtsc`` on x86-64)
between two sequentially consistent fences, as the papers' C++ harness
brackets ``rdtsc``: the fences keep the loads and stores of the timed
operations from moving across the stamp. On x86 an ``lfence`` on each side
also keeps the out-of-order core from overlapping the stamp with the timed
instructions, so a round's latency is not hidden behind the timer's own. ``cycles_after(x)`` first makes
``x`` an operand of an empty volatile ``asm``, so the computation of ``x``
(a query's result) cannot be sunk past the closing stamp by the optimiser.
"""

from __future__ import annotations

import platform
import time

import numba as nb
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

_I64 = ir.IntType(64)


_X86 = platform.machine().lower() in ("x86_64", "amd64", "i386", "i686")


def _lfence(builder):
    # rdtsc is not ordered with other instructions, only the fences order memory:
    # lfence waits until every earlier instruction has completed (Intel's advice).
    if _X86:
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), []),
                                            "llvm.x86.sse2.lfence")
        builder.call(fn, [])


def _stamp(builder):
    fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(_I64, []), "llvm.readcyclecounter")
    builder.fence("seq_cst")
    _lfence(builder)
    cycles = builder.call(fn, [])
    _lfence(builder)
    builder.fence("seq_cst")
    return cycles


@intrinsic
def read_cycles(typingctx):
    """The processor's cycle (time-stamp) counter as int64, fenced on both sides."""

    def codegen(context, builder, signature, args):
        return _stamp(builder)

    return types.int64(), codegen


@intrinsic
def cycles_after(typingctx, value):
    """Like :func:`read_cycles`, but only once the float64 ``value`` has been computed."""
    if value != types.float64:
        return None

    def codegen(context, builder, signature, args):
        # A volatile asm that "reads" the value's bits: LLVM must have the value first.
        bits = builder.bitcast(args[0], _I64)
        sink = ir.InlineAsm(ir.FunctionType(ir.VoidType(), [_I64]), "", "r,~{memory}", side_effect=True)
        builder.call(sink, [bits])
        return _stamp(builder)

    return types.int64(value), codegen


@nb.njit(cache=True)
def now_cycles():
    """:func:`read_cycles` callable from Python (for calibration)."""
    return read_cycles()


@nb.njit(cache=True)
def _back_to_back(out):
    # Two stamps with nothing between them: the cost of the timer itself.
    for i in range(out.shape[0]):
        t0 = read_cycles()
        out[i] = cycles_after(0.0) - t0


def timer_overhead(samples: int = 100_000) -> int:
    """Median cycles between two back-to-back stamps (included in every timed round)."""
    import numpy as np

    out = np.empty(samples, np.int64)
    _back_to_back(out)
    return int(np.median(out))


def cycles_per_ns(interval: float = 0.2, trials: int = 3) -> float:
    """Cycle-counter ticks per nanosecond, from ``trials`` wall-clock intervals of ``interval`` s.

    The median of the trials is returned. On CPUs with an invariant TSC
    (``constant_tsc`` in /proc/cpuinfo) the counter ticks at a fixed rate,
    so a sleep calibrates it as well as a busy loop.
    """
    now_cycles()  # compile before the first interval
    rates = []
    for _ in range(trials):
        c0, t0 = now_cycles(), time.perf_counter()
        time.sleep(interval)
        c1, t1 = now_cycles(), time.perf_counter()
        rates.append((c1 - c0) / ((t1 - t0) * 1e9))
    rates.sort()
    return rates[len(rates) // 2]


#: The clock a timed loop of :mod:`winagg.engine.kernels` reads: ``(read_cycles, cycles_after)``.
CLOCK = (read_cycles, cycles_after)
