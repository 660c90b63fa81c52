"""The documentation: the site builds with warnings as errors, and every Python example runs.

Each Markdown file's ```python blocks run in order in one namespace, in a fresh
process (so a page that starts Spark leaves nothing behind) and in a temporary
directory (so files an example writes go there).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))
BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)

RUNNER = """
import sys
namespace = {"__name__": "__main__"}
for number, code in enumerate(BLOCKS):
    try:
        exec(compile(code, f"{PAGE} (python block {number + 1})", "exec"), namespace)
    except BaseException:
        print(f"{PAGE}: python block {number + 1} failed:\\n{code}", file=sys.stderr)
        raise
"""


def python_blocks(page: Path) -> list:
    """The ```python blocks of a Markdown page, in order."""
    return BLOCK.findall(page.read_text())


def test_blocks_are_found():
    blocks = python_blocks(ROOT / "docs" / "guide" / "rolling.md")
    assert len(blocks) >= 3 and "winagg.rolling" in blocks[0]


@pytest.mark.parametrize("page", [p for p in PAGES if python_blocks(p)], ids=lambda p: str(p.relative_to(ROOT)))
def test_python_examples_run(page, tmp_path):
    script = f"BLOCKS = {python_blocks(page)!r}\nPAGE = {str(page.relative_to(ROOT))!r}\n{RUNNER}"
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True,
                          timeout=1200)
    assert done.returncode == 0, done.stderr[-4000:]


def test_site_builds_strictly(tmp_path):
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                           str(ROOT / "mkdocs.yml"), "--site-dir", str(tmp_path / "site")],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    assert (tmp_path / "site" / "reference" / "winagg" / "index.html").exists()
