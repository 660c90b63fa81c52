"""Compiled algorithms free what they allocate, whichever way ``ops`` compiles their functions."""

import json
import os
import subprocess
import sys

import pytest

# Run in a fresh process: numba counts the runtime's allocations only when NUMBA_NRT_STATS is
# set before it is imported.
_PROBE = """
import json, sys
import numpy as np
from numba.core.runtime import rtsys
import winagg

values = np.arange(4096, dtype=np.int64)
report = {}
for algorithm in sys.argv[1:]:
    winagg.rolling(values, window=64, agg="bloom", algorithm=algorithm)  # compiled (or loaded) here
    before = rtsys.get_allocation_stats()
    for _ in range(3):
        winagg.rolling(values, window=1024, agg="bloom", algorithm=algorithm)
    after = rtsys.get_allocation_stats()
    report[algorithm] = (after.alloc - before.alloc) - (after.free - before.free)
print(json.dumps(report))
"""


@pytest.mark.parametrize("algorithms", [("two_stacks_lite", "flatfat")])
def test_in_place_sketch_kernels_free_their_buffers(algorithms):
    """Bloom rows folded in place: every buffer a call allocates is freed when it returns (a
    function compiled without the runtime once kept the ring alive, 64 MB a call at 2^16)."""
    done = subprocess.run([sys.executable, "-c", _PROBE, *algorithms], capture_output=True, text=True,
                          env=dict(os.environ, NUMBA_NRT_STATS="1"), timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    outstanding = json.loads(done.stdout.strip().splitlines()[-1])
    assert outstanding == {a: 0 for a in algorithms}
