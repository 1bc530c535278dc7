#!/usr/bin/env bash
# Create .venv and install CacheEval with every extra. Idempotent: skips the
# install when pyproject.toml has not changed since the last successful one.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
# bubblewrap: the OS sandbox of code verification (cacheeval/verify/sandbox.py).
# Without it the sandbox falls back to an in-interpreter guard and says so.
if ! command -v bwrap >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing bubblewrap (Debian package) for the code sandbox" >&2
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        bubblewrap >/dev/null; } \
      || echo "setup: could not install bubblewrap; code verification will warn and fall back" >&2
  else
    echo "setup: bwrap not installed and no root apt-get; code verification will warn and fall back" >&2
  fi
fi
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
