"""setuptools' build, plus winagg's commonest numba kernels compiled into the built package.

After the package's files are copied to the build folder, ``python -m winagg.warmup --all``
runs over that copy, so numba's cache files (``__pycache__/*.nbi``, ``*.nbc``) lie beside the
sources and travel into the wheel: ``pip install .`` installs kernels that load instead of
compiling on their first call (``winagg.warmup`` says when such a cache is used and when not).
``WINAGG_BUILD_KERNELS=0`` builds without them; an editable install never compiles here
(``winagg warm`` does that in place).
"""

import os
import subprocess
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildWithKernels(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False) or os.environ.get("WINAGG_BUILD_KERNELS", "1") == "0":
            return
        env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}  # the cache goes beside the sources
        # the built package first; pip's isolated build environment comes on the path after it
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.path.abspath(self.build_lib), env.get("PYTHONPATH")]))
        subprocess.run([sys.executable, "-m", "winagg.warmup", "--all"], env=env, check=True)
        for lock in Path(self.build_lib).rglob("__pycache__/*.lock"):  # the compile locks stay out of the wheel
            lock.unlink()


setup(cmdclass={"build_py": BuildWithKernels})
