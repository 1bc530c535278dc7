#!/usr/bin/env bash
# The main job, from a fresh clone: set up .venv, rebuild and verify the
# dataset, grade the baselines and the reference caches, write reports/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
py=.venv/bin/python
# Each step says when it starts (seconds since the job began), so the log shows
# where the time goes.
step() { echo "== [${SECONDS}s] $* ==" >&2; }

# Scripts run as modules of the scripts package (python -m scripts.NAME), from
# the repository root: nothing edits sys.path.
step "dataset: generate the shards, rebuild (also writes the git-ignored private/test_labels.jsonl) and check"
$py -m cacheeval generate
$py -m scripts.assemble
# The build just rewrote the committed files: in a git checkout, git says whether
# it reproduced them byte for byte (elsewhere, assemble --check rebuilds and compares).
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    if git diff --quiet -- cachebench.jsonl domains/; then
        echo "check: the rebuilt dataset is byte-identical to the committed one" >&2
    else
        echo "check: the rebuilt dataset differs from the committed one (commit it):" >&2
        git diff --stat -- cachebench.jsonl domains/ >&2
    fi
else
    $py -m scripts.assemble --check
fi
$py -m cacheeval verify

step "baselines"
$py -m scripts.run_baselines

step "GPTCache (5 configurations + threshold sweep)"
$py -m scripts.run_gptcache

# External validity on real, human-labelled pair files kept outside the repository
# (e.g. CACHEEVAL_EXTERNAL_DIR=../shared/ext): the verified-cache step grades the
# reference caches on them with the model it just checked and also writes
# reports/EXTERNAL.md (figures only; what `python -m scripts.run_external` writes).
if [ -n "${CACHEEVAL_EXTERNAL_DIR:-}" ] && [ -d "$CACHEEVAL_EXTERNAL_DIR" ]; then
    step "verified cache vs GPTCache, and external validity ($CACHEEVAL_EXTERNAL_DIR)"
else
    step "verified cache vs GPTCache (external validity skipped: set CACHEEVAL_EXTERNAL_DIR to a directory of pair files)"
fi
$py -m scripts.run_verified_vs_gptcache

if [ -n "${CACHEEVAL_EXTERNAL_DIR:-}" ] && [ -d "$CACHEEVAL_EXTERNAL_DIR" ]; then
    step "validity: does CacheEval's ranking of a pool of caches predict the pair files'? (reports/VALIDITY.md)"
    $py -m scripts.run_validity --pairs "$CACHEEVAL_EXTERNAL_DIR"
fi

step "stress rows from the shipped prompts and the dev queries: the reference caches per perturbation kind (reports/STRESS.md)"
$py -m scripts.run_stress

step "test split vs private slices (demo seed and 3 more seeds): reports/SHIFT.md, reference predictions"
$py -m scripts.run_shift

step "per-pair viewer of the reference caches on the test split (reports/view/index.html; shows the hidden labels, so git-ignored)"
$py -m scripts.make_view

step "shared-cache replay vs pair mode (reports/REPLAY.md)"
$py -m scripts.run_replay

step "figures (reports/figures/)"
$py -m scripts.make_figures

echo "main job done in ${SECONDS}s: see reports/" >&2
