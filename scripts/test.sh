#!/usr/bin/env bash
# Set up .venv (idempotent), install headless Chromium for the leaderboard's
# browser test when it is missing, and run lint, types and the whole test
# suite, offline.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh
if ! { command -v chromium && command -v chromedriver; } >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing chromium + chromium-driver (Debian packages) for the browser test" >&2
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        chromium chromium-driver >/dev/null; } \
      || echo "setup: could not install chromium; the browser test will be skipped" >&2
  else
    echo "setup: chromium not installed and no root apt-get; the browser test will be skipped" >&2
  fi
fi
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
echo "== ruff ==" && .venv/bin/ruff check cacheeval scripts adapters tests
echo "== mypy ==" && .venv/bin/mypy cacheeval adapters scripts
echo "== pytest ==" && exec .venv/bin/python -m pytest -q "$@"
