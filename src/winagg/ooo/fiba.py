"""FiBA: the finger B-tree aggregator for out-of-order windows (FiBA-2019 and paper 004).

Options: ``min_arity`` (2, 4 or 8; nodes have min_arity .. 2*min_arity children),
``variant`` (``"finger"``: spine aggregates, O(1) query, amortized O(log d)
insert at distance d from the youngest end; ``"classic"``: a plain B-tree
whose every node holds its subtree's aggregate, O(log n) per operation) and
``bulk`` (True, b_fiba: native bulk evict in amortized O(log m) and bulk
insert in O(m log(d/m)); False, nb_fiba: loops of single operations).

The window holds at most one entry per time: inserting at a time already
present combines into that entry (old + new, in that order).
"""

from __future__ import annotations

from typing import Any, Iterable

from ..aggregator import check_time
from ..errors import EmptyWindowError, InvalidTimeError, OutOfOrderError
from ..ops import python_ops
from . import fiba_layout as layout
from .fiba_tree import build_tree

INFO = dict(order="any", needs_inverse=False,
            time="O(1) query; amortized O(log d) insert, O(1) evict; bulk evict O(log m), "
                 "bulk insert O(m log(d/m)) amortized",
            space="O(n)", paper="004",
            native=("insert", "evict", "query", "bulk_evict", "bulk_insert", "range_query"),
            options=dict(min_arity=4, variant="finger", bulk=True, check=False))

MIN_ARITIES = (2, 4, 8)
VARIANTS = ("finger", "classic")


def check_options(min_arity, variant, bulk):
    """Refuse option values FiBA does not have (ValueError naming the allowed ones)."""
    if min_arity not in MIN_ARITIES:
        raise ValueError(f"fiba: min_arity must be one of {MIN_ARITIES}, got {min_arity!r}")
    if variant not in VARIANTS:
        raise ValueError(f"fiba: variant must be one of {VARIANTS}, got {variant!r}")
    if not isinstance(bulk, bool):
        raise ValueError(f"fiba: bulk must be True or False, got {bulk!r}")


def build(ops, min_arity: int = 4, variant: str = "finger", bulk: bool = True, check: bool = False,
          times: str = "float64"):
    """FiBA's operations specialised to ``ops`` (``check`` only matters to :class:`Aggregator`).

    ``times`` is the compiled time type, "float64" (default) or "int64".

    Returns a :class:`winagg.ooo.fiba_tree.TreeFuncs`: its first five fields
    follow the FIFO contract (``insert`` appends at the youngest time + 1), so
    the generic count and time kernels can run FiBA as an in-order window too.
    """
    check_options(min_arity, variant, bulk)
    return build_tree(ops, int(min_arity), variant == "finger", bulk, times)


class Aggregator:
    """An out-of-order sliding window over any monoid, on a FiBA tree.

    Entries are kept by time; ``len`` counts distinct times. Every operation
    either completes or raises and leaves the window as it was. With
    ``check=True`` the B-tree invariants are verified after every operation
    (slow; for tests).
    """

    def __init__(self, algorithm, monoid, min_arity: int = 4, variant: str = "finger", bulk: bool = True,
                 check: bool = False, capacity: int = 16):
        check_options(min_arity, variant, bulk)
        self.algorithm = algorithm
        self.monoid = monoid
        self.options = dict(min_arity=min_arity, variant=variant, bulk=bulk, check=check)
        self._funcs = build(python_ops(monoid), **self.options)
        self._bufs, self._state = self._funcs.init(capacity)

    # ------------------------------------------------------------ checks
    def _valid_time(self, t, what="time"):
        check_time(t, what)
        if len(self):
            try:
                t < self._funcs.youngest(self._bufs)
            except TypeError:
                raise InvalidTimeError(f"{what} {t!r} cannot be compared with the window's times") from None
        return t

    def _after(self):
        if self.options["check"]:
            check_invariants(self)

    # ------------------------------------------------------------ inserting
    def insert(self, value, time) -> None:
        """Insert ``value`` at ``time`` (any time; an existing time combines old + new)."""
        self._valid_time(time)
        partial = self.monoid.lift(value)
        self._bufs, self._state = self._funcs.reserve(self._bufs, self._state, 1)
        self._state = self._funcs.insert_at(self._bufs, self._state, time, partial)
        self._after()

    def bulk_insert(self, values: Iterable, times: Iterable) -> None:
        """Insert a batch sorted by time (equal times combine in batch order, old + new).

        An unsorted batch raises :class:`winagg.OutOfOrderError` and changes nothing.
        """
        values, times = list(values), list(times)
        if len(times) != len(values):
            raise ValueError(f"bulk_insert got {len(values)} values but {len(times)} times")
        for i, t in enumerate(times):
            self._valid_time(t, f"times[{i}]")
            if i and t < times[i - 1]:
                raise OutOfOrderError(f"bulk_insert needs a batch sorted by time: times[{i}] = {t!r} is older "
                                      f"than times[{i - 1}] = {times[i - 1]!r}")
        if not values:
            return
        partials = [self.monoid.lift(v) for v in values]  # lift everything before changing state
        self._bufs, self._state = self._funcs.reserve(self._bufs, self._state, len(partials))
        self._state = self._funcs.bulk_insert(self._bufs, self._state, times, partials, len(partials))
        self._after()

    # ------------------------------------------------------------ evicting
    def evict(self) -> None:
        """Drop the oldest entry; :class:`EmptyWindowError` if the window is empty."""
        if not len(self):
            raise EmptyWindowError(f"evict() on an empty window ({self.algorithm.name})")
        self._state = self._funcs.evict(self._bufs, self._state)
        self._after()

    def bulk_evict(self, time) -> int:
        """Drop every entry whose time is <= ``time``; returns how many entries went."""
        self._valid_time(time)
        before = len(self)
        self._state = self._funcs.evict_upto(self._bufs, self._state, time)
        self._after()
        return before - len(self)

    # ------------------------------------------------------------ reading
    def query(self, t_from=None, t_to=None) -> Any:
        """The lowered aggregate of the window, or of its entries with ``t_from <= time <= t_to``.

        A missing bound is open; an empty window or range gives the identity's lowering.
        """
        if t_from is None and t_to is None:
            return self.monoid.lower(self._funcs.query(self._bufs, self._state))
        if not len(self):
            return self.monoid.lower(self.monoid.identity)
        lo = self.oldest_time() if t_from is None else self._valid_time(t_from, "t_from")
        hi = self.youngest_time() if t_to is None else self._valid_time(t_to, "t_to")
        return self.monoid.lower(self._funcs.range_query(self._bufs, self._state, lo, hi, False))

    def query_after(self, t_after, t_to) -> Any:
        """The lowered aggregate of the entries with ``t_after < time <= t_to`` (a half-open range)."""
        self._valid_time(t_after, "t_after")
        self._valid_time(t_to, "t_to")
        if not len(self):
            return self.monoid.lower(self.monoid.identity)
        return self.monoid.lower(self._funcs.range_query(self._bufs, self._state, t_after, t_to, True))

    def __len__(self) -> int:
        return self._state[2]

    def oldest_time(self):
        """Time of the oldest entry, or None when the window is empty."""
        return self._funcs.oldest(self._bufs) if len(self) else None

    def youngest_time(self):
        """Time of the youngest entry, or None when the window is empty."""
        return self._funcs.youngest(self._bufs) if len(self) else None

    def __repr__(self):
        o = self.options
        return (f"<{self.algorithm.name} aggregator (min_arity={o['min_arity']}, {o['variant']}, "
                f"bulk={o['bulk']}) of {self.monoid.name}, {len(self)} entries>")

    # ------------------------------------------------------------ pickling
    def __getstate__(self):
        return {"algorithm": self.algorithm.name, "monoid": self.monoid, "options": self.options,
                "bufs": self._bufs, "state": self._state}

    def __setstate__(self, saved):
        from ..registry import info

        self.algorithm = info(saved["algorithm"])
        self.monoid = saved["monoid"]
        self.options = saved["options"]
        self._funcs = build(python_ops(self.monoid), **self.options)
        self._bufs = saved["bufs"]
        self._state = saved["state"]


# ---------------------------------------------------------------- debug checks
def _same_partial(a, b) -> bool:
    """Equality of partials, with a float tolerance (spine and up aggregates associate differently)."""
    import math

    import numpy as np

    if isinstance(a, float) or isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9) or (a != a and b != b)
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same_partial(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.array_equal(np.asarray(a), np.asarray(b)))
    result = a == b
    if isinstance(result, np.ndarray):
        return bool(result.all())
    return bool(result)


def check_invariants(agg: Aggregator) -> None:
    """Assert FiBA's invariants: arity bounds, sorted keys, equal leaf depth, parent and spine
    pointers, fingers, and every stored aggregate (and count, and the local aggregate of each
    internal node on one spine) equal to the fold it stands for."""
    b, monoid, mu = agg._bufs, agg.monoid, agg.options["min_arity"]
    finger = agg.options["variant"] == "finger"
    E, S = layout.slots_per_node(mu), layout.ints_per_node(mu)
    keys, parts, ints = b
    nk, par, leaf, lsp, rsp, cnt = ((lambda x, f=f: ints[x * S + f])
                                    for f in (layout.N_ENTRIES, layout.PARENT, layout.IS_LEAF, layout.ON_LEFT_SPINE, layout.ON_RIGHT_SPINE, layout.COVERED))
    kid = lambda x, i: ints[x * S + layout.CHILD + i]  # noqa: E731
    aggregate = lambda x: parts[x * E + 2 * mu]  # noqa: E731
    root = ints[layout.ROOT]
    up = {}  # node -> (up aggregate, count)
    leaf_depths = set()

    def visit(x, depth, lo, hi, on_left, on_right):
        n = nk(x)
        ks = [keys[x * E + i] for i in range(n)]
        assert all(ks[i] < ks[i + 1] for i in range(n - 1)), f"node {x}: keys not sorted {ks}"
        assert all((lo is None or k > lo) and (hi is None or k < hi) for k in ks), f"node {x}: keys outside ({lo}, {hi})"
        if x != root:
            assert mu - 1 <= n <= 2 * mu - 1, f"node {x}: {n} entries, arity outside [{mu}, {2 * mu}]"
            assert lsp(x) == int(on_left) and rsp(x) == int(on_right), f"node {x}: spine flags wrong"
        elif not leaf(x):
            assert 1 <= n <= 2 * mu - 1, f"root: {n} entries"
        acc, count = monoid.identity, 0
        for i in range(n + 1):
            if not leaf(x):
                c = kid(x, i)
                assert par(c) == x, f"node {c}: parent {par(c)}, expected {x}"
                visit(c, depth + 1, lo if i == 0 else ks[i - 1], hi if i == n else ks[i],
                      (on_left or x == root) and i == 0, (on_right or x == root) and i == n)
                acc, count = monoid.combine(acc, up[c][0]), count + up[c][1]
            if i < n:
                acc, count = monoid.combine(acc, parts[x * E + i]), count + 1
        if leaf(x):
            leaf_depths.add(depth)
            if on_left or x == root:
                assert ints[layout.LEFT_FINGER] == x, "left finger is not the leftmost leaf"
            if on_right or x == root:
                assert ints[layout.RIGHT_FINGER] == x, "right finger is not the rightmost leaf"
        up[x] = (acc, count)

    visit(root, 0, None, None, False, False)
    assert par(root) == layout.NIL, "root has a parent"
    assert len(leaf_depths) == 1, f"leaves at depths {leaf_depths}"
    assert ints[layout.NEXT_FRESH] <= ints[layout.CAPACITY], "the pool ran past its capacity"
    assert agg._state[0] >= agg._state[2], "more entries than the pool's limit"

    def expected(x, local=False):
        n = nk(x)
        if not finger or (x != root and not lsp(x) and not rsp(x)):
            return up[x]
        kind = layout.INNER if x == root else (layout.LEFT if lsp(x) else layout.RIGHT)
        acc, count = monoid.identity, 0
        p = par(x)
        parent_term = p != layout.NIL and p != root and not local
        if kind == layout.RIGHT and parent_term:
            acc, count = expected(p)
        for i in range(n + 1):
            if not leaf(x):
                skip = (i == 0 and kind in (layout.INNER, layout.LEFT)) or (i == n and kind in (layout.INNER, layout.RIGHT))
                if not skip:
                    c = kid(x, i)
                    acc, count = monoid.combine(acc, up[c][0]), count + up[c][1]
            if i < n:
                acc, count = monoid.combine(acc, parts[x * E + i]), count + 1
        if kind == layout.LEFT and parent_term:
            pa, pc = expected(p)
            acc, count = monoid.combine(acc, pa), count + pc
        return acc, count

    for x in up:
        want, want_count = expected(x)
        assert cnt(x) == want_count, f"node {x}: count {cnt(x)}, expected {want_count}"
        assert _same_partial(aggregate(x), want), f"node {x}: aggregate {aggregate(x)!r}, expected {want!r}"
        if finger and x != root and not leaf(x) and lsp(x) != rsp(x):
            # an internal node on one spine keeps its local aggregate in its overflow slot
            local = parts[x * E + 2 * mu - 1]
            want_local = expected(x, local=True)[0]
            assert _same_partial(local, want_local), f"node {x}: local aggregate {local!r}, expected {want_local!r}"
    assert agg._state[2] == up[root][1], f"size {agg._state[2]}, tree holds {up[root][1]}"
    assert _same_partial(agg._funcs.query(b, agg._state), up[root][0]), "query() differs from the fold"
