"""What the FiBA experiments share: algorithm names, the round kernels, plotting.

Algorithm names follow paper 004: ``b_fiba4`` / ``b_fiba8`` (native bulk
operations, min arity 4 / 8), ``nb_fiba4`` / ``nb_fiba8`` (loops of single
operations), ``b_classic4`` (plain B-tree); any other name is a registry
algorithm (in order only: ``two_stacks_lite``, ``daba``, ``daba_lite``, ``amta``).

One round of the synthetic stream (paper 004, section 7): the window holds n
entries at consecutive integer times, the last d of them stamped far in the
future (so every insert lands d entries from the youngest end); a round bulk
evicts the m oldest, inserts the next m times (one by one, or as one bulk
insert) and queries. Values are the papers' 1 + (i mod 101).
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import numpy as np

from .. import jitcache, registry
from ..driver import compiled_funcs
from ..ops import power_of_two_at_least
from ..ooo.fiba_kernels import tree_funcs
from . import common
from .cycles import cycles_after, cycles_per_ns, read_cycles

FIBA_ALGORITHMS = ("b_fiba4", "b_fiba8", "nb_fiba4", "nb_fiba8")
IN_ORDER = ("two_stacks_lite", "daba", "daba_lite", "amta")
FAR = 1e15  # time of the entries that stand d away from the youngest end

_kernels: dict = {}


def fiba_options(name: str):
    """FiBA options of a ``b_fiba4``-style name, or None for a registry algorithm."""
    match = re.fullmatch(r"(b|nb)_(fiba|classic)(2|4|8)", name)
    if not match:
        return None
    return dict(min_arity=int(match[3]), variant="finger" if match[2] == "fiba" else "classic",
                bulk=match[1] == "b")


def available(names) -> list:
    """The names that exist here (amta only when some session has added it)."""
    known = {a.name for a in registry.algorithms()}
    return [n for n in names if fiba_options(n) is not None or n in known]


def round_kernels(name: str, agg: str):
    """``(fill, rounds)``, the two compiled halves of one run of the synthetic stream.

    ``fill(n, m, d) -> (bufs, st)`` builds the window (room for n + 2m entries);
    ``rounds(bufs, st, m, count, clock, oldest, bulk_insert, timed,
    evict_cycles, insert_cycles) -> (st, checksum)`` runs ``count`` rounds on
    it: each evicts the m oldest (FiBA: every time <= oldest + m - 1), inserts
    times clock .. clock + m - 1 and queries; with ``timed`` it records each
    round's evict and insert cycles.
    """
    key = (name, agg)
    if key in _kernels:
        return _kernels[key]
    spec = common.compiled_spec(agg)
    opts = fiba_options(name)
    kernels = _fiba_kernels(spec, opts) if opts is not None else _fifo_kernels(registry.info(name), spec)
    _kernels[key] = kernels
    return kernels


def _fiba_kernels(spec, opts):
    f = tree_funcs(spec, opts)
    init, insert_at, evict_upto, bulk_insert, query = f.init, f.insert_at, f.evict_upto, f.bulk_insert, f.query
    lift, lower, alloc, store, load = spec.lift, spec.lower, spec.layout.alloc, spec.layout.store, spec.layout.load

    @jitcache.njit
    def fill(n, m, d):
        b, st = init(n + 2 * m + 16)  # the window never holds more than n + m entries: never grows
        for i in range(n - d):
            st = insert_at(b, st, float(i), lift(1.0 + i % 101, i))
        for k in range(d):
            st = insert_at(b, st, FAR + k, lift(1.0 + k % 101, k))
        return b, st

    @jitcache.njit
    def rounds(b, st, m, count, clock, oldest, use_bulk_insert, timed, evict_cycles, insert_cycles):
        times = np.empty(m)
        partials = alloc(m)
        checksum = 0.0
        for r in range(count):
            for q in range(m):
                i = clock + q
                times[q] = float(i)
                store(partials, q, lift(1.0 + i % 101, i))
            start = read_cycles() if timed else 0
            st = evict_upto(b, st, float(oldest + m - 1))
            mid = cycles_after(np.float64(st[2])) if timed else 0
            if use_bulk_insert:
                st = bulk_insert(b, st, times, partials, m)
            else:
                for q in range(m):
                    st = insert_at(b, st, times[q], load(partials, q))
            end = cycles_after(np.float64(st[2])) if timed else 0
            if timed:
                evict_cycles[r] = mid - start
                insert_cycles[r] = end - mid
            oldest += m
            clock += m
            checksum += np.float64(lower(query(b, st)))
        return st, checksum

    return fill, rounds


def _fifo_kernels(algorithm, spec):
    funcs, evict_many = compiled_funcs(algorithm, spec)
    init, insert, evict, query, grow = funcs[:5]
    lift, lower = spec.lift, spec.lower

    @jitcache.njit
    def fill(n, m, d):
        bufs, st = init(n + m + 1)  # room for the whole window: never grows
        for i in range(n):
            st = insert(bufs, st, lift(1.0 + i % 101, i))
        return bufs, st

    @jitcache.njit
    def rounds(bufs, st, m, count, clock, oldest, use_bulk_insert, timed, evict_cycles, insert_cycles):
        checksum = 0.0
        for r in range(count):
            start = read_cycles() if timed else 0
            st = evict_many(bufs, st, m)
            mid = cycles_after(np.float64(st[2])) if timed else 0
            for q in range(m):  # in-order algorithms insert one by one
                i = clock + q
                st = insert(bufs, st, lift(1.0 + i % 101, i))
            end = cycles_after(np.float64(st[2])) if timed else 0
            if timed:
                evict_cycles[r] = mid - start
                insert_cycles[r] = end - mid
            clock += m
            checksum += np.float64(lower(query(bufs, st)))
        return st, checksum

    return fill, rounds


_PER_NS = []


def cycles_per_ns_cached() -> float:
    """The cycle counter's rate, calibrated once per process."""
    if not _PER_NS:
        _PER_NS.append(cycles_per_ns())
    return _PER_NS[0]


class FilledWindow:
    """A window of the synthetic stream filled once (untimed), on which batches of rounds are timed.

    Several points of a sweep (every m at one d) run one after the other on one fill: the
    window holds n entries after every round, so each batch starts from the state the
    previous one left, as a long stream would; only the fill, which for bloom at 2^22
    takes longer than the rounds, is shared.
    """

    def __init__(self, name, agg, n, d, max_bulk):
        self.fill, self.run = round_kernels(name, agg)
        self.bufs, self.st = self.fill(n, max_bulk, d)
        self.max_bulk = max_bulk
        self.checksums = []  # per batch, the sum of its rounds' query results (for tests)
        self.clock, self.oldest = n - d, 0  # in-order times oldest .. clock - 1 are in, and d far ones

    def batches(self, m, rounds, bulk_insert, timed, repeats=1):
        """``(seconds, evict_cycles, insert_cycles)`` of ``repeats`` batches of ``rounds`` rounds.

        ``seconds`` lists each batch's CPU time (``time.process_time``: time other processes
        take from the core is not counted). With ``timed``, the cycle arrays hold every
        round of every batch; otherwise they are empty.
        """
        if m > self.max_bulk:
            raise ValueError(f"bulk size {m} > {self.max_bulk}, the most this window was built for")
        ev = np.zeros(rounds * repeats if timed else 0, np.int64)
        ins = np.zeros(rounds * repeats if timed else 0, np.int64)
        seconds = []
        for k in range(repeats):
            part = slice(k * rounds, (k + 1) * rounds) if timed else slice(0, 0)
            start = time.process_time()
            self.st, checksum = self.run(self.bufs, self.st, m, rounds, self.clock, self.oldest, bulk_insert,
                                         timed, ev[part], ins[part])
            self.checksums.append(checksum)
            seconds.append(time.process_time() - start)
            self.clock += rounds * m
            self.oldest += rounds * m
        return seconds, ev, ins


def run_rounds(name, agg, n, m, d, rounds, bulk_insert, timed, repeats=1):
    """:meth:`FilledWindow.batches` on a window filled for this run alone."""
    return FilledWindow(name, agg, n, d, m).batches(m, rounds, bulk_insert, timed, repeats)


def by_window(points) -> dict:
    """Indices of the points ``(sweep, algorithm, agg, n, m, d, ...)`` grouped by the window they
    can share, ``(agg, algorithm, n, d)``, in order of first appearance."""
    groups: dict = {}
    for i, point in enumerate(points):
        groups.setdefault((point[2], point[1], point[3], point[5]), []).append(i)
    return groups


#: A window is skipped when its buffers would need more than this share of the available memory.
MEMORY_SHARE = 0.6


def partial_bytes(agg: str) -> int:
    """Bytes of one compiled partial of ``agg``."""
    buf = common.compiled_spec(agg).layout.alloc(1)
    return sum(a.nbytes for a in buf) if isinstance(buf, tuple) else buf.nbytes


def window_bytes(name: str, agg: str, n: int, max_bulk: int) -> int:
    """Bytes of the buffers a :class:`FilledWindow` allocates (numba zeroes them: all resident)."""
    opts = fiba_options(name)
    if opts is not None:
        from ..ooo import fiba_layout as layout

        mu = opts["min_arity"]
        nodes = (n + 2 * max_bulk + 16) // (mu - 1) + 2 * layout.MARGIN
        slots = nodes * layout.slots_per_node(mu)
        return slots * (partial_bytes(agg) + 8) + (layout.RECORDS + nodes * (layout.ints_per_node(mu) + 1)) * 8
    space = registry.info(name).space  # "n + 1", "2n", "about 2n partials ...": buffers of n slots
    match = re.search(r"(\d*)\s*n\b", space)
    buffers = int(match[1]) if match and match[1] else 1
    return power_of_two_at_least(n + max_bulk + 1) * partial_bytes(agg) * buffers


def memory_note(name: str, agg: str, n: int, max_bulk: int) -> str:
    """A skip note when the window would not fit comfortably in the available memory, else ''."""
    need = window_bytes(name, agg, n, max_bulk)
    available = common.available_memory()
    if available and need > MEMORY_SHARE * available:
        return f"skipped: needs ~{need / 2**30:.1f} GiB, {available / 2**30:.1f} GiB available"
    return ""


def warm_up(name, agg):
    """Compile (or load) the kernels outside any timed run."""
    run_rounds(name, agg, 64, 4, 4 if fiba_options(name) else 0, 4, True, True)
    run_rounds(name, agg, 64, 4, 4 if fiba_options(name) else 0, 4, False, False)


def violin_png(samples: dict, title: str, ylabel: str, path: Path) -> None:
    """One panel per aggregation, a violin per algorithm (log10 ns): red dot mean, thick line median,
    thin lines 99.9th and 99.999th percentiles (paper 004's figures). ``samples[(algorithm, agg)]``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    aggs = list(dict.fromkeys(a for _, a in samples))
    fig, axes = plt.subplots(1, len(aggs), figsize=(4.5 * len(aggs), 4.2), squeeze=False)
    for ax, agg in zip(axes[0], aggs):
        names = [n for n, a in samples if a == agg]
        for pos, name in enumerate(names):
            ns = np.maximum(samples[(name, agg)], 1e-3)
            logs = np.log10(ns)
            body = logs if logs.size <= 20000 else np.random.default_rng(0).choice(logs, 20000)
            parts = ax.violinplot([body], positions=[pos], widths=0.8, showextrema=False)
            for shape in parts["bodies"]:
                shape.set_alpha(0.5)
            ax.plot(pos, np.log10(ns.mean()), "o", color="red", markersize=4)
            ax.hlines(np.percentile(logs, 50), pos - 0.35, pos + 0.35, color="navy", linewidth=2)
            ax.hlines(np.percentile(logs, [99.9, 99.999]), pos - 0.2, pos + 0.2, color="navy", linewidth=0.8)
        ax.set_xticks(range(len(names)), names, rotation=40, ha="right", fontsize="small")
        ax.set_title(f"{agg}: {title}")
        ax.set_ylabel(f"log10 {ylabel}")
        ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def lines_png(rows: list, x: str, series: str, y: str, panels: str, title: str, path: Path, logx=True,
              xlabel: str = "", ylabel: str = "", logy=False) -> None:
    """Line plots of ``y`` against ``x``, one line per ``series`` value, one panel per ``panels`` value
    (titled with that value; ``title`` is the figure's).

    The legend sits below the panels, so it hides no data; ``xlabel`` and ``ylabel`` default to the
    column names.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker  # noqa: F401  (matplotlib.ticker below)

    keys = list(dict.fromkeys(r[panels] for r in rows))
    names = list(dict.fromkeys(r[series] for r in rows))
    fig, axes = plt.subplots(1, len(keys), figsize=(4.5 * len(keys), 4.2), squeeze=False)
    for ax, key in zip(axes[0], keys):
        for index, name in enumerate(names):
            pts = sorted((r[x], r[y]) for r in rows if r[panels] == key and r[series] == name and r.get(y) != "")
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", markersize=3, label=name,
                        color=f"C{index % 10}")
        if logx:
            ax.set_xscale("log", base=2)
        if logy:
            ax.set_yscale("log")
            plain = matplotlib.ticker.FuncFormatter(lambda value, _: f"{value:g}")
            ax.yaxis.set_major_formatter(plain)
            ax.yaxis.set_minor_formatter(plain)
            ax.tick_params(axis="y", which="minor", labelsize="x-small")
        ax.set_xlabel(xlabel or x)
        ax.set_ylabel(ylabel or y)
        ax.set_title(str(key), fontsize="medium")
        ax.grid(True, which="both", alpha=0.3)
    if title:
        fig.suptitle(title)
    handles = {h.get_label(): h for ax in axes[0] for h in ax.get_lines()}
    fig.legend([handles[n] for n in names if n in handles], [n for n in names if n in handles],
               loc="lower center", ncol=min(len(handles), 8), fontsize="small", frameon=False)
    fig.tight_layout(rect=(0, 0.09, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
