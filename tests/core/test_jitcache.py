"""The disk cache of compiled closures: hits across processes, and no symbol clashes."""

import os
import subprocess
import sys
import textwrap

from winagg.core import jitcache

SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import winagg
    for pair in sys.argv[1:]:
        algorithm, agg = pair.split(":")
        out = winagg.rolling(1 + (np.arange(50.0) % 101), 16, agg, algorithm=algorithm)
        print(pair, float(out[-1]))
""")


def run(cache_dir, *pairs):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache_dir)}
    done = subprocess.run([sys.executable, "-c", SCRIPT, *pairs], env=env, capture_output=True,
                          text=True, check=True)
    lines = dict(line.rsplit(" ", 1) for line in done.stdout.splitlines())
    return {k: float(v) for k, v in lines.items()}


def test_kernels_compiled_in_different_processes_load_together(tmp_path):
    # Each kernel is compiled in its own process, then both are loaded from the cache into a
    # third: their symbols must not clash (they did when named by a per-process counter).
    assert run(tmp_path, "daba_lite:sum")["daba_lite:sum"] == 680.0
    assert run(tmp_path, "soe:sum")["soe:sum"] == 680.0
    both = run(tmp_path, "daba_lite:sum", "soe:sum", "two_stacks:max")
    assert both["daba_lite:sum"] == 680.0  # sum of the last 16 of 1..50
    assert both["soe:sum"] == 680.0
    assert both["two_stacks:max"] == 50.0
    cached = sorted(tmp_path.rglob("*.nbc"))
    assert cached, "nothing was written to the cache"
    again = run(tmp_path, "daba_lite:sum", "soe:sum", "two_stacks:max")
    assert again["soe:sum"] == 680.0
    # every kernel was found in the cache: a miss would have compiled and saved a new entry
    assert sorted(tmp_path.rglob("*.nbc")) == cached


def test_the_same_code_with_other_options_is_another_cache_entry():
    # a function compiled without numba's runtime once must not be loaded from the cache
    # for the same code compiled with other options (it was: the key held only the code)
    from winagg.core import jitcache

    def make():
        def plus_one(x):
            return x + 1
        return plus_one

    plain, flat = jitcache.njit(make()), jitcache.njit(make(), _nrt=False, forceinline=True)
    again = jitcache.njit(make(), _nrt=False, forceinline=True)
    assert plain.py_func.__qualname__ != flat.py_func.__qualname__
    assert flat.py_func.__qualname__ == again.py_func.__qualname__
    assert plain(1) == flat(1) == 2


def test_one_function_compiled_two_ways_gets_a_name_for_each():
    # AMTA compiles one rebuild both inlined and as a call: the second compile must not see
    # the first one's name (the name was put on the caller's function object in place)
    from winagg.core import jitcache

    def plus_two(x):
        return x + 2

    plain = jitcache.njit(plus_two)
    flat = jitcache.njit(plus_two, _nrt=False, forceinline=True)
    assert plus_two.__qualname__.endswith("plus_two")
    assert plain.py_func.__qualname__.startswith(plus_two.__qualname__ + "_")
    assert flat.py_func.__qualname__.startswith(plus_two.__qualname__ + "_")
    assert plain.py_func.__qualname__ != flat.py_func.__qualname__
    assert plain(1) == flat(1) == 3


def test_constant_arguments_share_one_compiled_copy_unless_only_a_constant_types(tmp_path, monkeypatch):
    import numba

    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path))  # compiled here, not loaded from a past run

    @jitcache.njit
    def step(x, up):
        return x + 1 if up else x - 1

    @jitcache.njit
    def item(pair, i):  # a tuple of two types, indexed by an argument: types only for a constant i
        return pair[i]

    @jitcache.njit
    def caller(x):
        pair = (x, 1.5)
        return step(x, True) + step(x, False) + step(x, 0 < x) + item(pair, 0) + item(pair, 1)

    assert caller(3) == 4 + 2 + 4 + 3 + 1.5
    assert len(step.signatures) == 1  # True, False and a computed bool: one copy
    assert len(item.signatures) == 2  # one per index


RACE = textwrap.dedent("""
    import os, sys, time
    import numpy as np
    import winagg
    open(sys.argv[1] + "." + str(os.getpid()), "w").close()
    while len([f for f in os.listdir(os.path.dirname(sys.argv[1])) if f.startswith("ready.")]) < 2:
        time.sleep(0.01)  # both processes start compiling together
    print(winagg.rolling(1 + (np.arange(50.0) % 101), 16, "sum", algorithm="two_stacks_lite")[-1])
""")


def test_processes_compiling_one_kernel_together_compile_it_once(tmp_path):
    cache, ready = tmp_path / "cache", tmp_path / "ready"
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "NUMBA_DEBUG_CACHE": "1"}
    both = [subprocess.Popen([sys.executable, "-c", RACE, str(ready)], env=env, stdout=subprocess.PIPE, text=True)
            for _ in range(2)]
    outputs = [p.communicate(timeout=600)[0] for p in both]
    assert [p.returncode for p in both] == [0, 0]
    saves = [out.count("data saved to") for out in outputs]
    loads = [out.count("data loaded from") for out in outputs]
    # one process compiled and saved every function; the other waited and loaded the kernel
    assert sorted(saves)[0] == 0 and sorted(saves)[1] > 0, saves
    assert max(loads) > 0
    assert [float(out.strip().splitlines()[-1]) for out in outputs] == [680.0, 680.0]  # the last 16 of 1..50
