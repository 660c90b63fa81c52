"""What the FiBA experiments share: algorithm names, the synthetic stream through the window driver, plotting.

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

from ..algos import registry
from ..engine.plans import bulk_plan, NO_ANSWER, OutOfOrderPlan, WHOLE
from ..engine.kernels import compiled_driver, compiled_out_of_order_driver
from ..engine.loops import run_out_of_order
from ..engine.loops import run as run_plan
from ..core.ops import power_of_two_at_least
from . import common
from .cycles import CLOCK

FIBA_ALGORITHMS = ("b_fiba4", "b_fiba8", "nb_fiba4", "nb_fiba8")
IN_ORDER = ("two_stacks_lite", "daba", "daba_lite", "amta")
FAR = 1e15  # time of the entries that stand d away from the youngest end

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


def paper_stream(first: int, count: int) -> np.ndarray:
    """Values of the synthetic stream's items ``first .. first + count - 1``: 1 + (i mod 101)."""
    return 1.0 + np.arange(first, first + count) % 101


def stream_driver(name: str, agg: str):
    """The timed window driver that runs the synthetic stream for ``name`` over ``agg`` (built once
    per process by the driver module): FiBA's out-of-order driver, evicting first
    (:func:`winagg.engine.kernels.compiled_out_of_order_driver`), for a FiBA variant, the in-order
    driver's bulk build for a registry algorithm."""
    spec, opts = common.compiled_spec(agg), fiba_options(name)
    if opts is not None:
        return compiled_out_of_order_driver(spec, opts, "float64", per_row=False, clock=CLOCK, evict_first=True)
    return compiled_driver(registry.info(name), spec, clock=CLOCK, bulk=True)


_NONE_I = np.empty(0, np.int64)


def _positions(spec, first, count):
    # positional aggregations lift each item with its stream position; the others never read it
    return np.arange(first, first + count, dtype=np.int64) if spec.positional else _NONE_I


class FilledWindow:
    """A window of the synthetic stream filled once (untimed), on which batches of rounds are timed,
    all through the window driver (:func:`stream_driver`).

    Several points of a sweep (every m at one d) run one after the other on one fill: the
    window holds n entries after every round, so each batch starts from the state the
    previous one left, as a long stream would; only the fill, which for bloom at 2^22
    takes longer than the rounds, is shared.

    A FiBA variant runs each round as one step of the out-of-order driver's evict-first build,
    the reference's order: evict every time up to the m-th oldest in one bulk eviction, insert
    the m next (one by one, or in one bulk insert), answer. Its fill inserts one by one, as a
    stream does. An in-order algorithm runs a round as one step of the bulk build: evict the
    m oldest (natively or one by one), insert m values, answer.
    """

    def __init__(self, name, agg, n, d, max_bulk):
        self.spec = common.compiled_spec(agg)
        self.driver = stream_driver(name, agg)
        self.fiba = fiba_options(name) is not None
        self.max_bulk = max_bulk
        self.checksums = []  # per batch, the sum of its rounds' query results (for tests)
        self.clock, self.oldest = n - d, 0  # in-order times oldest .. clock - 1 are in, and d far ones
        if self.fiba:
            state = self.driver.init(n + 2 * max_bulk + 16)  # never more than n + m entries: never grows
            times = np.concatenate([np.arange(n - d, dtype=np.float64), FAR + np.arange(d, dtype=np.float64)])
            values = np.concatenate([paper_stream(0, n - d), paper_stream(0, d)])
            positions = np.concatenate([np.arange(n - d), np.arange(d)]) if self.spec.positional else _NONE_I
            one = np.ones(1, np.int64)
            plan = OutOfOrderPlan(one * n, one * 0, np.full(1, -np.inf), one * NO_ANSWER, np.zeros(1), np.zeros(1),
                                  positions, 0.0)
            _, _, self.state = run_out_of_order(self.driver, values, times, plan, state, few=(0, n))
        else:
            state = self.driver.init(n + max_bulk + 1)  # room for the whole window: never grows
            plan = bulk_plan([0], [n], [False])._replace(positions=_positions(self.spec, 0, n))
            _, _, self.state = run_plan(self.driver, paper_stream(0, n), plan, state)

    def batches(self, m, rounds, bulk_insert, timed, repeats=1):
        """``(seconds, evict_cycles, insert_cycles)`` of ``repeats`` batches of ``rounds`` rounds.

        ``seconds`` lists each batch's CPU time (``time.process_time``: time other processes
        take from the core is not counted). With ``timed``, the cycle arrays hold every
        round of every batch; otherwise they are empty. ``bulk_insert``: FiBA inserts a
        round's m items in one bulk insert (else one by one); in-order algorithms insert one
        by one unless they have a native bulk insert.
        """
        if m > self.max_bulk:
            raise ValueError(f"bulk size {m} > {self.max_bulk}, the most this window was built for")
        ev = np.zeros(rounds * repeats if timed else 0, np.int64)
        ins = np.zeros(rounds * repeats if timed else 0, np.int64)
        seconds = []
        for k in range(repeats):
            run = self._fiba_rounds if self.fiba else self._in_order_rounds
            second, out, evict_cycles, insert_cycles = run(m, rounds, bulk_insert, timed)
            seconds.append(second)
            self.checksums.append(float(out.sum()))
            if timed:
                ev[k * rounds:(k + 1) * rounds] = evict_cycles
                ins[k * rounds:(k + 1) * rounds] = insert_cycles
            self.clock += rounds * m
            self.oldest += rounds * m
        return seconds, ev, ins

    def _fiba_rounds(self, m, rounds, bulk_insert, timed):
        """``(seconds, answers, evict_cycles, insert_cycles)`` of one batch, one step a round."""
        horizons = self.oldest + m * np.arange(1, rounds + 1) - 1.0  # every time up to the m-th oldest
        unread = np.broadcast_to(np.float64(0), (rounds,))  # range bounds: no step answers a range
        plan = OutOfOrderPlan(np.full(rounds, m), np.zeros(rounds, np.int64), horizons,
                              np.full(rounds, WHOLE, np.int64), unread, unread,
                              _positions(self.spec, self.clock, rounds * m), 0.0)
        times = np.arange(self.clock, self.clock + rounds * m, dtype=np.float64)
        values = paper_stream(self.clock, rounds * m)
        few = (0, 0 if bulk_insert else m)  # evict in bulk always; insert in bulk or one by one
        start = time.process_time()
        out, cycles, self.state = run_out_of_order(self.driver, values, times, plan, self.state, timed, few)
        seconds = time.process_time() - start
        if not timed:
            return seconds, out, None, None
        return seconds, out, cycles[rounds:2 * rounds], cycles[:rounds]

    def _in_order_rounds(self, m, rounds, bulk_insert, timed):
        """``(seconds, answers, evict_cycles, insert_cycles)`` of one batch, one bulk step a round."""
        plan = bulk_plan(np.full(rounds, m), np.full(rounds, m))._replace(
            positions=_positions(self.spec, self.clock, rounds * m))
        values = paper_stream(self.clock, rounds * m)
        start = time.process_time()
        out, cycles, self.state = run_plan(self.driver, values, plan, self.state, timed)
        seconds = time.process_time() - start
        if not timed:
            return seconds, out, None, None
        return seconds, out, cycles[:rounds], cycles[rounds:2 * rounds]


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


def window_bytes(name: str, agg: str, n: int, max_bulk: int) -> int:
    """Bytes of the buffers a :class:`FilledWindow` allocates (numba zeroes them: all resident)."""
    opts = fiba_options(name)
    if opts is not None:
        from ..algos.ooo.fiba import layout

        mu = opts["min_arity"]
        nodes = (n + 2 * max_bulk + 16) // (mu - 1) + 2 * layout.MARGIN
        slots = nodes * layout.slots_per_node(mu)
        return slots * (common.partial_bytes(agg) + 8) + (layout.RECORDS + nodes * (layout.ints_per_node(mu) + 1)) * 8
    space = registry.info(name).space  # "n + 1", "2n", "about 2n partials ...": buffers of n slots
    match = re.search(r"(\d*)\s*n\b", space)
    buffers = int(match[1]) if match and match[1] else 1
    return power_of_two_at_least(n + max_bulk + 1) * common.partial_bytes(agg) * buffers


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
