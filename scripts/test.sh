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
# mypy (one core, about a minute when its cache is cold, as in CI) runs beside
# pytest on the second core; its report is printed after the tests, and either
# failing fails the command.
mypy_log=$(mktemp)
.venv/bin/mypy cacheeval adapters scripts >"$mypy_log" 2>&1 &
mypy_pid=$!
echo "== pytest ==" && pytest_rc=0 && { .venv/bin/python -m pytest -q "$@" || pytest_rc=$?; }
mypy_rc=0 && { wait "$mypy_pid" || mypy_rc=$?; }
echo "== mypy ==" && cat "$mypy_log" && rm -f "$mypy_log"
if [ "$pytest_rc" != 0 ]; then exit "$pytest_rc"; fi
exit "$mypy_rc"
