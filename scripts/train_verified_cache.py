"""Train the verified cache's LightGBM verifier and certify its operating point.

    python -m scripts.train_verified_cache                 # from the repository root

1. Loads every labelled row (``cachebench.jsonl`` + the private test labels written
   by ``scripts/assemble.py``) and the training corpus (``sources/training/``:
   project-written rows for training only, never graded, split ``train``) and
   computes, once, every decision that needs no training (policy tier, exact
   matches) and every feature (MiniLM ONNX embeddings in batches).
2. **Shipped model**: trains on the *train* split and the training corpus; the
   recall gate is chosen on them, the threshold certified on *dev* (the lowest threshold whose
   one-sided Clopper-Pearson 95% upper bound of FHR on dev is <= 5%), and
   compares the result with the committed model
   (:func:`adapters.verified_cache.reproduce.check_committed`: reproduced byte
   for byte, or which features differ and by how much). With ``--write-model``
   (and only then) a model that differs is written:
   ``adapters/verified_cache/model/verifier.txt``, ``meta.json`` (threshold,
   certified bound, gate, feature list, sha256 of the training data, of the
   feature table and of the model, LightGBM parameters) and ``features.jsonl``
   (every train and dev row the model reads, features included).
3. **Out-of-fold check**: 5-fold cross-fitting over *all* labelled rows with folds
   grouped by family (the ``source`` field: rows sharing a source are one family
   and never straddle folds; the corpus trains every fold and is never scored);
   the threshold is certified on the OOF scores.
   Prints the results and, with ``--oof-out``, writes per-row OOF predictions.

Training is deterministic (one thread, fixed seeds, ``deterministic=True``,
features at a fixed precision, ONNX Runtime on one thread): the same rows give
the same ``verifier.txt`` bytes. The model is committed; rerun this script with
``--write-model`` whenever the dataset changes (the report script refuses to use
a model trained on other rows: it retrains in memory instead).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from adapters.verified_cache.cache import DEFAULT_EMBEDDER, Resources
from adapters.verified_cache.model import CONFIDENCE, MAX_FHR, MODEL_DIR
from adapters.verified_cache.reproduce import check_committed
from adapters.verified_cache.training import (
    PairCase,
    Scored,
    build_cases,
    fit_shipped,
    is_corpus,
    out_of_fold,
    summarize,
)
from cacheeval.dataset import load_bench
from cacheeval.pipeline.training_corpus import TRAINING_DIR, corpus
from cacheeval.schema import Row
from cacheeval.support.jsonio import (
    JsonlError,
    jsonl_bytes,
    sha256_bytes,
    sha256_file,
    write_jsonl,
)

REPO = Path(__file__).resolve().parents[1]


def load_labelled(bench: Path, labels: Path) -> list[Row]:
    """Every row with its label; a clear message (no traceback) when files are missing."""
    for path, hint in ((bench, "run `python -m scripts.assemble`"), (labels, "run assemble")):
        if not path.is_file():
            raise SystemExit(f"error: {path} not found: {hint} first (it writes both files)")
    try:
        return load_bench(bench, labels_path=labels)
    except (JsonlError, ValueError) as e:
        raise SystemExit(f"error: {e}") from None


def corpus_rows(training_dir: Path = TRAINING_DIR) -> list[Row]:
    """The training corpus's rows (:func:`cacheeval.pipeline.training_corpus.corpus`),
    labelled, split ``train``; a clear message (no traceback) for a broken fixture."""
    try:
        return [Row.from_dict(r) for r in corpus(training_dir)]
    except ValueError as e:
        raise SystemExit(f"error: {e}") from None


def training_rows(bench: Path, labels: Path) -> tuple[list[Row], list[Row]]:
    """(every labelled benchmark row, the training corpus's rows): the model reads
    the benchmark's train and dev rows and the corpus; only benchmark rows are graded."""
    return load_labelled(bench, labels), corpus_rows()


def dataset_id(bench: Path, labels: Path, extra: Sequence[Row] = ()) -> str:
    """``<bench sha256[:16]>+<labels sha256[:16]>`` and, with training-corpus rows,
    ``+corpus:<sha256[:16] of their canonical JSONL>``: which data a model was
    trained on."""
    out = f"{sha256_file(bench)[:16]}+{sha256_file(labels)[:16]}"
    if extra:
        out += "+corpus:" + sha256_bytes(jsonl_bytes([r.to_dict() for r in extra]))[:16]
    return out


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def print_summary(title: str, scored: Sequence[Scored]) -> None:
    s = summarize(scored)
    adv = s["adversarial"]
    print(
        f"{title}: n={s['n']} FHR {_fmt(s['fhr'])} recall {_fmt(s['recall'])} "
        f"precision {_fmt(s['precision'])} F1 {_fmt(s['f1'])} ADV-FHR {_fmt(adv['fhr'])} "
        f"(TP {s['tp']} FP {s['fp']} FN {s['fn']} TN {s['tn']}); tiers {s['tiers']}"
    )
    for d, v in s["per_domain"].items():
        print(f"    {d:15s} n={v['n']:4d} FHR {_fmt(v['fhr'])} recall {_fmt(v['recall'])}")


def oof_records(cases: Sequence[PairCase], scored: Sequence[Scored], folds: dict[str, int]) -> list:
    return [
        {
            "id": s.case.id,
            "fold": folds[s.case.id],
            "family": s.case.family,
            "y": s.case.y,
            "tier": s.tier,
            "score": round(s.score, 6),
            "hit": s.hit,
        }
        for s in scored
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", type=Path, default=REPO / "cachebench.jsonl")
    parser.add_argument("--labels", type=Path, default=REPO / "private" / "test_labels.jsonl")
    parser.add_argument("--model-dir", type=Path, default=MODEL_DIR)
    parser.add_argument("--embedder", default=DEFAULT_EMBEDDER)
    parser.add_argument("--max-fhr", type=float, default=MAX_FHR)
    parser.add_argument("--confidence", type=float, default=CONFIDENCE)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--oof-out", type=Path, default=None, help="write OOF predictions (JSONL)")
    parser.add_argument(
        "--write-model",
        action="store_true",
        help="write the model, its meta and its feature table to --model-dir when they "
        "differ from the committed ones (without it nothing is written)",
    )
    args = parser.parse_args(argv)
    if not 0.0 < args.max_fhr < 1.0 or not 0.0 < args.confidence < 1.0 or args.folds < 2:
        parser.error("--max-fhr and --confidence must be in (0, 1), --folds >= 2")
    default_budget = (args.max_fhr, args.confidence) == (MAX_FHR, CONFIDENCE)
    if args.write_model and not default_budget:
        parser.error("--write-model writes the shipped model: only with the default budget")

    rows, extra = training_rows(args.bench, args.labels)
    t0 = time.perf_counter()
    # one intra-op thread: the values do not depend on it, but nothing is left to chance
    cases = build_cases(rows + extra, Resources(embedder_name=args.embedder, threads=1))
    print(
        f"features of {len(rows)} benchmark rows and {len(extra)} training-corpus rows in "
        f"{time.perf_counter() - t0:.1f} s",
        file=sys.stderr,
    )

    data_id = dataset_id(args.bench, args.labels, extra)
    shipped = fit_shipped(
        cases,
        max_fhr=args.max_fhr,
        confidence=args.confidence,
        data_id=data_id,
        embedder=args.embedder,
    )
    op = shipped.operating_point
    meta = shipped.verifier.meta
    print(
        f"shipped model: trained on {meta.training['rows']} train rows that reach the verifier "
        f"(gate {meta.gate_threshold:.2f}); threshold {op.threshold:.4f} certified on dev: "
        f"FHR {_fmt(op.fhr)} ({op.fp}/{op.n_negative}), one-sided CP {op.confidence:.0%} upper "
        f"bound {op.fhr_upper:.4f} (<= {op.max_fhr}: {op.certified}), dev recall {_fmt(op.recall)}"
    )
    for split in ("train", "dev", "test"):
        part = [s for s in shipped.scored if s.case.split == split and not is_corpus(s.case)]
        print_summary(f"  {split}", part)
    print_summary("  training corpus", [s for s in shipped.scored if is_corpus(s.case)])
    print(
        f"model sha256 {meta.model_sha256}, training data sha256 {meta.training['data_sha256']}, "
        f"feature table sha256 {meta.training['feature_table_sha256']}"
    )
    if default_budget:
        check = check_committed(
            cases, args.model_dir, data_id=data_id, embedder=args.embedder, write=args.write_model
        )
        print(f"committed model: {check.status}")
        for line in check.drift.lines() if check.drift is not None else []:
            print(f"    {line}")

    oof = out_of_fold(cases, k=args.folds, max_fhr=args.max_fhr, confidence=args.confidence)
    op = oof.operating_point
    print(
        f"{args.folds}-fold grouped OOF over {len(oof.scored)} benchmark rows (the "
        f"{len(extra)} corpus rows train every fold): threshold {op.threshold:.4f}, "
        f"FHR {_fmt(op.fhr)} ({op.fp}/{op.n_negative}), CP upper bound {op.fhr_upper:.4f} "
        f"(<= {op.max_fhr}: {op.certified}); gates {oof.gates}"
    )
    print_summary("  OOF", oof.scored)
    if args.oof_out is not None:
        write_jsonl(args.oof_out, oof_records(cases, oof.scored, oof.folds))
        print(f"wrote {args.oof_out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
