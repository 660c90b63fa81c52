"""FiBA's compiled operations, built once per (FiBA options, aggregation, time type).

The loops over them are :mod:`winagg.engine.loops`'s out-of-order driver (rolling over
unsorted times, operation scripts) and :class:`winagg.Window`'s batch kernel.
"""

from __future__ import annotations


def tree_funcs(spec, options=None, times="float64"):
    """FiBA's compiled operations for one aggregation, options and time type (shared with the
    window driver's out-of-order loop)."""
    from ....engine.kernels import out_of_order_funcs
    from ...registry import info

    return out_of_order_funcs(info("fiba"), spec, options, times)
