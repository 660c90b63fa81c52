#!/usr/bin/env bash
# Sets up a fresh machine for winagg: a virtual environment in .venv with the
# package and every extra (Spark, Redis, benchmarks, data, docs, tests) at the
# exact versions of constraints.txt, a Java runtime for Spark and redis-server
# when they are not on the PATH, and numba's cache of winagg.rolling's commonest
# kernels (`winagg warm`). Safe to run again: it only reinstalls when
# pyproject.toml or constraints.txt changed.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
if ! command -v "$PYTHON" >/dev/null; then
  echo "setup: $PYTHON not found; install Python 3.11 or newer" >&2
  exit 1
fi
"$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' || {
  echo "setup: winagg needs Python 3.11 or newer, found $("$PYTHON" --version)" >&2; exit 1; }

if ! command -v java >/dev/null; then
  echo "setup: no java on the PATH; installing a Java 17 runtime for Spark" >&2
  if command -v apt-get >/dev/null; then
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq && $SUDO apt-get install -y -qq openjdk-17-jre-headless >/dev/null
  else
    echo "setup: cannot install Java here (no apt-get); install Java 17 and run again" >&2
    exit 1
  fi
fi

if ! command -v redis-server >/dev/null; then
  echo "setup: no redis-server on the PATH; installing it for the key-value store tests" >&2
  if command -v apt-get >/dev/null; then
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq && $SUDO apt-get install -y -qq redis-server >/dev/null
  else
    echo "setup: cannot install redis-server here (no apt-get); install it and run again" >&2
    exit 1
  fi
fi

if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
stamp=.venv/.winagg-installed
want=$(cat pyproject.toml constraints.txt | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e ".[all]" -c constraints.txt
  echo "$want" > "$stamp"
fi
# The first winagg.rolling call of a process then loads its kernel instead of compiling it.
.venv/bin/winagg warm >/dev/null
