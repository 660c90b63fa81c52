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

from . import layout
from .tree import build_tree

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
    """FiBA's operations specialised to ``ops`` (``check=True`` makes the per-item aggregator run
    :func:`check_invariants` after every change).

    ``times`` is the compiled time type, "float64" (default) or "int64".

    Returns a :class:`winagg.algos.ooo.fiba.tree.TreeFuncs`: its first five fields
    follow the FIFO contract (``insert`` appends at the youngest time + 1), so
    the generic count and time kernels can run FiBA as an in-order window too.
    """
    check_options(min_arity, variant, bulk)
    return build_tree(ops, int(min_arity), variant == "finger", bulk, times)


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


def check_invariants(agg) -> None:
    """Assert FiBA's invariants in ``agg`` (a :class:`winagg.windows.aggregator.Aggregator` of FiBA):
    arity bounds, sorted keys, equal leaf depth, parent and spine
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
