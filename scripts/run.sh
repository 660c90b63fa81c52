#!/usr/bin/env bash
# First command of the README: set up, then run the main job.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/winagg "${@:-pipeline}"
