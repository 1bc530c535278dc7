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

# External validity on real, human-labelled pair files kept outside the repository
# (e.g. CACHEEVAL_EXTERNAL_DIR=../shared/ext): reports/EXTERNAL.md, figures only.
if [ -n "${CACHEEVAL_EXTERNAL_DIR:-}" ] && [ -d "$CACHEEVAL_EXTERNAL_DIR" ]; then
    echo "== external validity ($CACHEEVAL_EXTERNAL_DIR) ==" >&2
    $py -m scripts.run_external --pairs "$CACHEEVAL_EXTERNAL_DIR"
else
    echo "== external validity: skipped (set CACHEEVAL_EXTERNAL_DIR to a directory of pair files) ==" >&2
fi

echo "main job done: see reports/" >&2
