"""External validity of the reference caches: every labelled pair file in a
directory, beside CacheEval's test split, against the MiniLM cosine.

    python -m scripts.run_external --pairs ../shared/ext      # or CACHEEVAL_EXTERNAL_DIR=...

Grades the verified cache (the committed model), GPTCache ``minilm@0.80`` (its
fast path: GPTCache's own decision rule on batch embeddings) and the
``exact_match`` baseline on every file of the directory that reads as a pair
file (``cacheeval.benches.pair_formats``: layout from the header; ``.csv``/``.tsv``
files with ``text_a``/``text_b``/``label`` columns and HIT/MISS values), and on
CacheEval's test split (``cachebench.jsonl`` + ``private/test_labels.jsonl``).
The MiniLM cosine (fp32 ONNX) is the reference: its recall at each cache's FHR
and its ROC-AUC on the same rows, on every whole set and again on the pairs
whose numbers and names agree (``cacheeval.benches.external.details_agree``: there a
paraphrase label and a cache label should coincide). Writes
``reports/EXTERNAL.md`` and ``.json``:
figures only, never the pairs' text. Exits 0 without writing anything when no
directory is given (the main job runs this only when it exists).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cacheeval.benches.external import (
    DEFAULT_SLICES,
    DETAILS_AGREE,
    ExternalReport,
    LabelledSet,
    from_pair_file,
    grade,
)
from cacheeval.benches.pair_formats import read_pair_file
from cacheeval.commands._running import add_resamples_argument, non_negative_int
from cacheeval.metrics.paired import DEFAULT_RESAMPLES
from cacheeval.reporting.report import utc_now
from cacheeval.support.jsonio import dumps_pretty, write_bytes_atomic

REPO = Path(__file__).resolve().parents[1]
ENV = "CACHEEVAL_EXTERNAL_DIR"
SUFFIXES = (".csv", ".tsv", ".txt", ".jsonl")
#: The name of CacheEval's own test split among the graded sets.
TEST_SET = "CacheEval test"


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def pair_sets(directory: Path) -> list[LabelledSet]:
    """Every readable pair file of ``directory``, by file name."""
    out = []
    for path in sorted(directory.iterdir()):
        if not path.is_file() or path.suffix.lower() not in SUFFIXES:
            continue
        try:
            out.append(from_pair_file(read_pair_file(path)))
        except ValueError as e:
            _log(f"skipping {path.name}: {e}")
    return out


def cacheeval_test_set(bench: Path, labels: Path) -> LabelledSet | None:
    """CacheEval's test split with its private labels (None when they are missing)."""
    from cacheeval.dataset import load_bench

    if not bench.is_file() or not labels.is_file():
        _log(f"no {labels}: run scripts/assemble.py for the CacheEval test split")
        return None
    rows = load_bench(bench, split="test", labels_path=labels)
    info = {"format": "cachebench", "pairs": len(rows), "positives": sum(r.y for r in rows)}
    return LabelledSet(TEST_SET, tuple(rows), info)


def reference_caches(
    model_dir: Path | None = None, verified: Any = None, embedder_name: str | None = None
) -> dict[str, Any]:
    """The caches graded: the verified cache (``verified``, or the model in
    ``model_dir``, default the committed one, served with ``embedder_name``,
    default the one it was trained with), GPTCache minilm@0.80, exact match.
    Built from :class:`~cacheeval.run.blockrun.CacheSpec` s, so a large set can run
    on worker processes; ``verified`` (a cache object) always runs here."""
    from adapters.gptcache_adapter import config_spec
    from adapters.verified_cache.model import MODEL_DIR
    from cacheeval.run.blockrun import CacheSpec

    kwargs: dict[str, Any] = {"model_dir": str(model_dir or MODEL_DIR)}
    if embedder_name is not None:
        kwargs["embedder_name"] = embedder_name
    return {
        "verified-cache": verified
        or CacheSpec("adapters.verified_cache.adapter", "VerifiedCacheAdapter", kwargs),
        "gptcache minilm@0.80": config_spec("minilm@0.80", "fast"),
        "exact_match": CacheSpec(baseline="exact_match"),
    }


def run_external(
    directory: Path,
    caches: dict[str, Any],
    *,
    bench: Path | None = None,
    labels: Path | None = None,
    workers: int = 2,
    resamples: int = DEFAULT_RESAMPLES,
) -> ExternalReport:
    """Grade ``caches`` on every pair file of ``directory`` (and CacheEval's test
    split when ``bench`` and ``labels`` are given) against the MiniLM cosine;
    ``workers`` processes per cache on the large sets (see
    :func:`cacheeval.benches.external.grade`)."""
    from adapters.cosine_baseline import MiniLMCosine

    sets = pair_sets(directory)
    if bench is not None and labels is not None:
        test = cacheeval_test_set(bench, labels)
        if test is not None:
            sets.append(test)
    reference = MiniLMCosine()
    report = grade(caches, sets, reference=reference, reference_name=reference.name,
                   progress=_log, workers=workers, slices=DEFAULT_SLICES,
                   resamples=resamples)  # fmt: skip
    notes = (
        "Each row: the cache at its shipped operating point on that set (FHR, recall), its "
        "ROC-AUC from its own score, and the MiniLM cosine (fp32 ONNX, the queries only) on "
        "the same rows: its best recall among thresholds whose FHR is at most the cache's "
        "FHR, and its ROC-AUC. 'keeps it': recall >= the cosine's at the same FHR - 0.02 "
        "and ROC-AUC >= the cosine's - 0.02 (the tolerance issue 29 set: a paraphrase "
        "set's HIT pairs include changed names and numbers a cache must refuse). The "
        "cosine's own row is its decision at 0.60 "
        "(GPTCache's similarity_threshold 0.80).",
        "The pair files' labels are paraphrase judgements, not cache judgements: some HIT "
        "pairs differ in a detail a strict cache refuses. Compare caches side by side.",
        f"Rows marked '{DETAILS_AGREE}' repeat every figure, from the same decisions, on the "
        "pairs whose two texts name the same numbers and whose capitalised words inside a "
        "sentence each occur in the other text: there a paraphrase judgement and a cache "
        "judgement should agree, so a cache below the cosine on this slice ranks worse, "
        "not just more strictly.",
    )
    return dataclasses.replace(report, created=utc_now(), notes=notes)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=Path, default=None, help=f"directory (default ${ENV})")
    parser.add_argument("--bench", type=Path, default=REPO / "cachebench.jsonl")
    parser.add_argument("--labels", type=Path, default=REPO / "private" / "test_labels.jsonl")
    parser.add_argument("--out", type=Path, default=REPO / "reports" / "EXTERNAL.md")
    parser.add_argument(
        "--workers",
        type=non_negative_int,
        default=2,
        help="worker processes per cache on sets of 1,000+ pairs (default 2; 0: this process)",
    )
    add_resamples_argument(parser, "the gap intervals")
    args = parser.parse_args(argv)
    directory = args.pairs or (Path(os.environ[ENV]) if os.environ.get(ENV) else None)
    if directory is None:
        _log(f"no pair directory (--pairs or ${ENV}): nothing to do")
        return 0
    if not directory.is_dir():
        _log(f"error: {directory} is not a directory")
        return 2
    report = run_external(
        directory, reference_caches(), bench=args.bench, labels=args.labels,
        workers=args.workers, resamples=args.resamples,
    )  # fmt: skip
    write_external(report, args.out)
    return 0


def write_external(report: ExternalReport, out_md: Path) -> None:
    """Write ``out_md`` and its ``.json`` twin and log every row's figures."""
    write_bytes_atomic(out_md, report.to_markdown("External validity").encode("utf-8"))
    write_bytes_atomic(out_md.with_suffix(".json"), dumps_pretty(report.to_dict()).encode())
    for e in report.entries:
        _log(f"{e.set:16s} {e.cache:22s} FHR {e.fhr} recall {e.recall} AUC {e.roc_auc} "
             f"| cosine recall@FHR {e.ref_recall_at_fhr} AUC {e.ref_roc_auc} "
             f"| gap CIs {e.recall_gap_ci} {e.auc_gap_ci} keeps {e.keeps_share}")  # fmt: skip
    _log(f"wrote {out_md} and {out_md.with_suffix('.json')}")


if __name__ == "__main__":
    sys.exit(main())
