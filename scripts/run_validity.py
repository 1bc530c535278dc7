"""reports/VALIDITY.md: does CacheEval's ranking of caches predict yours?

A pool of caches (the references, GPTCache, lexical and embedding caches),
each plain and behind ``--keyed``, is run on CacheEval's test split (labels
from ``private/test_labels.jsonl``), the secret-seed private slice (the demo
seed, the in-distribution reference) and every labelled pair file in
``--pairs DIR`` (real pairs: ``../shared/ext``, or your own). Kendall's tau
between CacheEval's ordering (all test rows, and its query and context
sub-scores) and each set's ordering, on ROC-AUC and on the best recall at
FHR <= 5%, with bootstrap intervals over that set's pairs
(:mod:`cacheeval.benches.validity`). The report carries numbers, never pairs.

    python -m scripts.run_validity --pairs ../shared/ext
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from cacheeval.baselines import make_baseline
from cacheeval.benches.slice import DEFAULT_PER_DOMAIN, generate_slice, load_public_texts
from cacheeval.benches.validity import (
    METRIC_TITLES,
    TauCell,
    render_markdown,
    subset,
    to_record,
    validity_taus,
)
from cacheeval.dataset import load_bench
from cacheeval.metrics.agreement import Scored
from cacheeval.run.harness import predict
from cacheeval.schema import Row, subscore_of
from cacheeval.support.jsonio import dumps_pretty, write_bytes_atomic
from cacheeval.support.layout import DOMAINS_DIR, REPO_ROOT
from scripts.run_external import pair_sets
from scripts.run_shift import DEMO_SEED  # the private slice of reports/SHIFT.md

TEST = "CacheEval test"
SLICE = "private slice (demo seed)"


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def pool() -> list[tuple[str, Callable[[], Any]]]:
    """(name, factory) of the plain caches; each also runs behind --keyed."""

    def gptcache() -> Any:
        from adapters.gptcache_adapter import GPTCacheAdapter

        return GPTCacheAdapter.from_config("minilm@0.80", path="fast")

    def verified() -> Any:
        from adapters.verified_cache.adapter import VerifiedCacheAdapter

        return VerifiedCacheAdapter()

    def cosine(embedder: str) -> Callable[[], Any]:
        def make() -> Any:
            from adapters.cosine_baseline import MiniLMCosine

            return MiniLMCosine(embedder=embedder)

        return make

    def overlap() -> Any:
        from adapters.lexical import TokenOverlap

        return TokenOverlap()

    return [
        ("exact_match", lambda: make_baseline("exact_match")),
        ("token-overlap", overlap),
        ("minilm cosine", cosine("minilm-onnx")),
        ("e5 cosine", cosine("e5-small")),
        ("gptcache minilm@0.80", gptcache),
        ("verified cache", verified),
    ]


def labelled_sets(bench: Path, labels: Path, pairs: Path | None) -> dict[str, list[Row]]:
    """The sets: CacheEval's test split, the demo private slice, the pair files."""
    sets = {TEST: load_bench(bench, split="test", labels_path=labels)}
    texts, _ = load_public_texts(sorted(DOMAINS_DIR.glob("*.jsonl")))
    sets[SLICE] = [
        Row.from_dict(r) for r in generate_slice(DEMO_SEED, texts, per_domain=DEFAULT_PER_DOMAIN)
    ]
    if pairs is not None:
        for pair_set in pair_sets(pairs):
            sets[pair_set.name] = list(pair_set.rows)
    return sets


def run_pool(sets: dict[str, list[Row]]) -> dict[str, dict[str, Scored]]:
    """cache -> set -> (truth, scores), plain and keyed."""
    from adapters.keyed import keyed_predictions

    out: dict[str, dict[str, Scored]] = {}
    for name, make in pool():
        cache = make()
        plain: dict[str, Scored] = {}
        keyed: dict[str, Scored] = {}
        for set_name, rows in sets.items():
            _log(f"validity: {name} on {set_name} ({len(rows)} pairs)")
            preds = predict(cache, rows)
            y = [r.y for r in rows]
            plain[set_name] = (y, [p.score for p in preds])
            keyed[set_name] = (y, [p.score for p in keyed_predictions(rows, preds)])
        out[name] = plain
        out[f"{name} + keyed"] = keyed
    return out


def add_subscores(scores: dict[str, dict[str, Scored]], test_rows: Sequence[Row]) -> list[str]:
    """CacheEval's sub-score orderings as extra 'sets' of every cache; their names."""
    names = []
    for part in ("query", "context"):
        keep = [subscore_of(r) == part for r in test_rows]
        name = f"{TEST}: {part}"
        for sets in scores.values():
            sets[name] = subset(sets[TEST], keep)
        names.append(name)
    return names


def statement(taus: Sequence[TauCell], targets: Sequence[str]) -> str:
    """Which CacheEval ordering predicts each target best, in words."""
    parts = []
    for target in targets:
        for metric in ("roc_auc", "recall_at_fhr_5"):
            cells = [
                c for c in taus if c.target == target and c.metric == metric and c.tau is not None
            ]
            if cells:
                best = max(cells, key=lambda c: c.tau or -2)
                parts.append(
                    f"on {target}, {METRIC_TITLES[metric]}: {best.benchmark} (tau {best.tau:+.2f})"
                )
    return "Best predictor, per target and metric: " + "; ".join(parts) + "." if parts else ""


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pairs", type=Path, help="a directory of labelled pair files")
    p.add_argument("--bench", type=Path, default=REPO_ROOT / "cachebench.jsonl")
    p.add_argument("--labels", type=Path, default=REPO_ROOT / "private" / "test_labels.jsonl")
    p.add_argument("--out-dir", type=Path, default=REPO_ROOT / "reports")
    p.add_argument("--resamples", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if not args.labels.is_file():
        _log(f"{args.labels}: missing (run python -m scripts.assemble first)")
        return 2
    if args.pairs is not None and not args.pairs.is_dir():
        _log(f"{args.pairs}: not a directory")
        return 2
    sets = labelled_sets(args.bench, args.labels, args.pairs)
    scores = run_pool(sets)
    benchmarks = [TEST, *add_subscores(scores, sets[TEST])]
    targets = [s for s in sets if s != TEST]
    taus = validity_taus(scores, benchmarks, targets, n_resamples=args.resamples, seed=args.seed)
    info = {
        s: {"pairs": len(rows), "positives": sum(r.y for r in rows)} for s, rows in sets.items()
    }
    command = "python -m scripts.run_validity" + (" --pairs DIR" if args.pairs else "")
    record = to_record(
        command=command,
        caches=list(scores),
        sets=info,
        scores=scores,
        taus=taus,
        n_resamples=args.resamples,
        seed=args.seed,
        statement=statement(taus, targets),
    )
    args.out_dir.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(args.out_dir / "VALIDITY.json", (dumps_pretty(record) + "\n").encode())
    write_bytes_atomic(args.out_dir / "VALIDITY.md", render_markdown(record).encode())
    _log(f"validity: wrote {args.out_dir / 'VALIDITY.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
