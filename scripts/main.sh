#!/usr/bin/env bash
# The main job, from a fresh clone: set up .venv, rebuild and verify the
# dataset, grade the baselines and the reference caches, write reports/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
py=.venv/bin/python

echo "== dataset: rebuild (also writes the git-ignored private/test_labels.jsonl) and check ==" >&2
$py scripts/assemble.py
$py scripts/assemble.py --check
.venv/bin/cacheeval verify

echo "== baselines ==" >&2
$py scripts/run_baselines.py

echo "== GPTCache (5 configurations + threshold sweep) ==" >&2
$py scripts/run_gptcache.py

echo "== verified cache vs GPTCache ==" >&2
$py scripts/run_verified_vs_gptcache.py

echo "== test split vs private slice (demo seed): reports/SHIFT.md, reference predictions ==" >&2
$py -m scripts.run_shift

echo "== shared-cache replay vs pair mode (reports/REPLAY.md) ==" >&2
$py -m scripts.run_replay

echo "== figures (reports/figures/) ==" >&2
$py -m scripts.make_figures

echo "main job done: see reports/" >&2
