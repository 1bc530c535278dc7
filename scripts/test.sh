#!/usr/bin/env bash
# Set up .venv (idempotent) and run the whole test suite, offline.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
echo "== ruff ==" && .venv/bin/ruff check cacheeval scripts adapters tests
echo "== mypy ==" && .venv/bin/mypy cacheeval
echo "== pytest ==" && exec .venv/bin/python -m pytest -q "$@"
