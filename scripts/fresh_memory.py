"""What writing into memory fresh from the kernel costs, right after a free and after a pause.

winagg.rolling writes every answer into a new array; the C++ reference's drivers keep one
running value. This script times the first and the second write of an array as large as the
answers of 30,000,000 rounds (240 MB of float64), each time right after the previous array was
freed and after a pause of --pause seconds:

    .venv/bin/python scripts/fresh_memory.py
    .venv/bin/python scripts/fresh_memory.py --megabytes 80 --pause 1 3 --repeat 3
    .venv/bin/python scripts/fresh_memory.py --small-pages   # without numpy's 2 MiB page hint

On a virtual machine whose guest hands freed memory back to the hypervisor (virtio-balloon free
page reporting), pages freed a few seconds ago are taken from the host again on the next write,
and the first write costs many times the second. The second write is the memory bandwidth alone.
numpy asks the kernel for 2 MiB pages for every large array; ``--small-pages`` turns that off.
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np


def first_and_second_write(n_values: int) -> tuple:
    start = time.perf_counter()
    values = np.empty(n_values)
    values[:] = 1.0
    first = time.perf_counter() - start
    start = time.perf_counter()
    values[:] = 2.0
    second = time.perf_counter() - start
    del values
    return first, second


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--megabytes", type=float, default=240.0, help="size of each array")
    parser.add_argument("--pause", type=float, nargs="+", default=[0.0, 3.0],
                        help="seconds to wait after a free before the next array")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--small-pages", action="store_true", help="turn numpy's 2 MiB page hint off")
    args = parser.parse_args()
    if args.small_pages:
        from numpy._core.multiarray import _set_madvise_hugepage

        _set_madvise_hugepage(False)
    n_values = int(args.megabytes * 1e6 / 8)
    first_and_second_write(n_values)  # the process's first array: neither case
    print(f"# load before: {os.getloadavg()}")
    print("pause s\tfirst write ms\tsecond write ms\tfirst / second")
    for _ in range(args.repeat):
        for pause in args.pause:
            time.sleep(pause)
            first, second = first_and_second_write(n_values)
            print(f"{pause:g}\t{first * 1e3:.0f}\t{second * 1e3:.0f}\t{first / second:.1f}", flush=True)
    print(f"# load after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
