"""How FiBA's parts fold partials into a node's slot: one set of steps for values and for rows.

Scalar and tuple partials are values: a fold keeps a running value and stores it at the
end. A sketch's partial (Bloom filter, Count-Min, HyperLogLog) is a row of the partial
buffer, and its ``combine`` allocates a new array; with ``combine_into`` the same fold
writes into the destination row as it goes and allocates nothing. The parts write each
fold once, over these steps, and ``build.into`` decides which of the two they become:

===============================  ==============================  ==============================
step                             value partials                  row partials (``into``)
===============================  ==============================  ==============================
``start(parts, slot)``           the identity                    the row at ``slot``, cleared
``start_with(parts, slot, v)``   ``v``                           the row at ``slot``, set to v
``start_combined(p, slot, a, b)``  ``a (+) b``                   the row at ``slot``, a (+) b
``add(acc, v)``                  ``acc (+) v``                   the row becomes itself (+) v
``add_before(v, acc)``           ``v (+) acc``                   the row becomes v (+) itself
``finish(parts, slot, acc)``     stored at ``slot``              nothing (already there)
``fold_in(parts, slot, v)``      slot's partial (+) v, in place  the same, in the row
``set_to(parts, slot, a, b)``    ``a (+) b`` at ``slot``         the same, in the row
===============================  ==============================  ==============================

A row fold's terms must not include the destination row (a node's aggregate is never
one of its own terms), except as ``acc`` itself.
"""

from __future__ import annotations

from .fiba_layout import TreeBuild


def make_folds(build: TreeBuild, made):
    """The fold steps above, compiled like the in-order round's code (``build.flat``)."""
    combine, flat, identity, into, load, store = (build.combine, build.flat, build.identity, build.into,
                                                  build.load, build.store)
    if into is None:
        def start(parts, slot):
            return identity

        def start_with(parts, slot, v):
            return v

        def start_combined(parts, slot, a, b):
            return combine(a, b)

        def add(acc, v):
            return combine(acc, v)

        def add_before(v, acc):
            return combine(v, acc)

        def finish(parts, slot, acc):
            store(parts, slot, acc)

        def fold_in(parts, slot, v):
            store(parts, slot, combine(load(parts, slot), v))

        def set_to(parts, slot, a, b):
            store(parts, slot, combine(a, b))
    else:
        def start(parts, slot):
            row = load(parts, slot)
            into(row, identity, identity)
            return row

        def start_with(parts, slot, v):
            row = load(parts, slot)
            into(row, v, identity)
            return row

        def start_combined(parts, slot, a, b):
            row = load(parts, slot)
            into(row, a, b)
            return row

        def add(acc, v):
            into(acc, acc, v)
            return acc

        def add_before(v, acc):
            into(acc, v, acc)
            return acc

        def finish(parts, slot, acc):
            pass

        def fold_in(parts, slot, v):
            row = load(parts, slot)
            into(row, row, v)

        def set_to(parts, slot, a, b):
            into(load(parts, slot), a, b)

    return dict(start=flat(start), start_with=flat(start_with), start_combined=flat(start_combined),
                add=flat(add), add_before=flat(add_before), finish=flat(finish), fold_in=flat(fold_in),
                set_to=flat(set_to))
