"""How FiBA's parts fold partials into a node's slot: one set of steps for values and for rows.

Scalar and tuple partials are values: a fold keeps a running value and stores it at the
end. A sketch's partial (Bloom filter, Count-Min, HyperLogLog) is a row of the partial
buffer, and its ``combine`` allocates a new array; with ``combine_into`` the same fold
writes into the destination row as it goes and allocates nothing. The parts write each
fold once, over these steps, and ``build.into`` decides which of the two they become:

=====================================  ==============================  ================================
step                                   value partials                  row partials (``into``)
=====================================  ==============================  ================================
``start(parts, slot)``                 the identity                    ``slot``; its row cleared
``start_with(parts, slot, v)``         ``v``                           ``slot``; its row set to v
``start_combined(parts, slot, a, b)``  ``a (+) b``                     ``slot``; its row set to a (+) b
``add(parts, acc, v)``                 ``acc (+) v``                   ``acc``; its row (+) v
``add_before(parts, v, acc)``          ``v (+) acc``                   ``acc``; v (+) its row
``value_of(parts, acc)``               ``acc``                         the row at ``acc``
``finish(parts, slot, acc)``           stored at ``slot``              nothing (already there)
``fold_in(parts, slot, v)``            slot's partial (+) v, in place  the same, in the row
``set_to(parts, slot, a, b)``          ``a (+) b`` at ``slot``         the same, in the row
=====================================  ==============================  ================================

So the running fold ``acc`` is a value in the first case and a row's slot in the second.
A row fold's terms must not include the destination row (a node's aggregate is never
one of its own terms), except as the row at ``acc`` itself.
"""

from __future__ import annotations

from .layout import TreeBuild


def make_folds(build: TreeBuild, made):
    """The fold steps above, always inlined into the parts that call them (``build.inline``)."""
    combine, identity, inline, into, load, store = (build.combine, build.identity, build.inline, build.into,
                                                    build.load, build.store)
    if into is None:
        def start(parts, slot):
            return identity

        def start_with(parts, slot, v):
            return v

        def start_combined(parts, slot, a, b):
            return combine(a, b)

        def add(parts, acc, v):
            return combine(acc, v)

        def add_before(parts, v, acc):
            return combine(v, acc)

        def value_of(parts, acc):
            return acc

        def finish(parts, slot, acc):
            store(parts, slot, acc)

        def fold_in(parts, slot, v):
            store(parts, slot, combine(load(parts, slot), v))

        def set_to(parts, slot, a, b):
            store(parts, slot, combine(a, b))
    else:
        # The running fold of a row partial is the slot of its row: an int, where a row (an array
        # view) handed from step to step has its reference counted at every step.
        def start(parts, slot):
            into(load(parts, slot), identity, identity)
            return slot

        def start_with(parts, slot, v):
            into(load(parts, slot), v, identity)
            return slot

        def start_combined(parts, slot, a, b):
            into(load(parts, slot), a, b)
            return slot

        def add(parts, acc, v):
            row = load(parts, acc)
            into(row, row, v)
            return acc

        def add_before(parts, v, acc):
            row = load(parts, acc)
            into(row, v, row)
            return acc

        def value_of(parts, acc):
            return load(parts, acc)

        def finish(parts, slot, acc):
            pass

        def fold_in(parts, slot, v):
            row = load(parts, slot)
            into(row, row, v)

        def set_to(parts, slot, a, b):
            into(load(parts, slot), a, b)

    return dict(start=inline(start), start_with=inline(start_with), start_combined=inline(start_combined),
                add=inline(add), add_before=inline(add_before), value_of=inline(value_of), finish=inline(finish),
                fold_in=inline(fold_in), set_to=inline(set_to))
