"""The experiments of ``winagg bench`` (filled in by the benchmark module)."""


def add_arguments(parser):
    parser.add_argument("experiment", nargs="?", help="experiment name")


def run(args):
    raise SystemExit("no experiments yet")
