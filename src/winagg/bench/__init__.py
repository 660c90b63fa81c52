"""The experiments of ``winagg bench``: ``winagg bench EXPERIMENT [options]``.

Each experiment is a module of this package with ``NAME``, ``DESCRIPTION``,
``add_arguments(group)`` (its own options), and ``run(args) -> int``. To add
one, write the module and list it in :data:`EXPERIMENTS`; options every
experiment takes live in :func:`winagg.bench.common.add_shared_arguments`.
"""

from __future__ import annotations

import argparse
import importlib

#: Experiment name -> module implementing it.
EXPERIMENTS = {
    "throughput": "winagg.bench.throughput",
    "latency": "winagg.bench.latency",
    "ra_breakeven": "winagg.bench.ra_breakeven",
    "ra_scaling": "winagg.bench.ra_scaling",
    "flatfit": "winagg.bench.flatfit_multi",
    "mta_latency": "winagg.bench.mta_latency",
    "mta_bulk_evict": "winagg.bench.mta_bulk_evict",
    "mta_memory": "winagg.bench.mta_memory",
    "mta_multi": "winagg.bench.mta_multi",
    "fiba_latency": "winagg.bench.fiba_latency",
    "fiba_throughput": "winagg.bench.fiba_throughput",
    "fiba_flights": "winagg.bench.fiba_flights",
    "window": "winagg.bench.window",
    "spark": "winagg.bench.spark",
}


def experiment(name: str):
    """The module of experiment ``name``."""
    return importlib.import_module(EXPERIMENTS[name])


def add_arguments(parser) -> None:
    """Add the experiment argument and every experiment's options to the ``bench`` parser."""
    from .common import add_shared_arguments

    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    listing = "\n".join(f"  {name:12s} {experiment(name).DESCRIPTION}" for name in EXPERIMENTS)
    parser.description = (parser.description or "") + "\n\nexperiments:\n" + listing
    parser.add_argument("experiment", choices=list(EXPERIMENTS), metavar="EXPERIMENT",
                        help=f"one of: {', '.join(EXPERIMENTS)}")
    defaults = "; ".join(_defaults_text(name) for name in EXPERIMENTS)
    add_shared_arguments(parser, f"defaults differ per experiment: {defaults}")
    for name in EXPERIMENTS:
        experiment(name).add_arguments(parser.add_argument_group(f"options of {name}"))


def _defaults_text(name: str) -> str:
    d = experiment(name).DEFAULTS
    return (f"{name}: --aggs {' '.join(d['aggs'])} --rounds {d['rounds']:,} --budget {d['budget']:g} "
            f"--out {d['out']}")


def run(args) -> int:
    """Run the experiment named in ``args.experiment``."""
    return experiment(args.experiment).run(args)
