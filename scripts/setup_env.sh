#!/usr/bin/env bash
# Create .venv and install CacheEval with every extra. Idempotent: skips the
# install when pyproject.toml has not changed since the last successful one.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.cacheeval-installed
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
echo "setup: installing into .venv (torch first, CPU build)" >&2
.venv/bin/python -m pip install --quiet --upgrade pip
# torch must come first and pinned, or a dependency pulls a CUDA build.
.venv/bin/python -m pip install --quiet "torch==2.13.0"
.venv/bin/python -m pip install --quiet -e ".[all]"
echo "$want" > "$stamp"
