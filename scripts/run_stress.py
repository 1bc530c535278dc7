"""reports/STRESS.md/.json: the reference caches on stress rows, per perturbation kind.

    python -m scripts.run_stress            # the main job runs this

1. Makes stress rows (``cacheeval stress``'s generator, seed :data:`SEED`) in a
   temporary directory, never in the checkout: from the shipped prompts file
   (``sources/stress/prompts.txt``) and from CacheEval's dev queries (side a of
   every dev row, with its system prompt, prior turns and offered tools).
2. Runs the pool - the exact_match baseline, every GPTCache configuration of
   :data:`adapters.gptcache_adapter.CONFIGS` (fast path: GPTCache's rule on batch
   embeddings) and the verified cache - on both sets of stress rows and on
   CacheEval's own rows (the test split with ``private/test_labels.jsonl`` when
   it is there, else dev), in this process (trusted reference caches).
3. Writes the record (:func:`cacheeval.benches.stress_report.to_record`) and its
   Markdown, the per-kind figure of the pool on each source
   (``reports/figures/stress_kinds_<source>``), and the per-pair page of each
   source (``reports/stress/<source>.html``: ``cacheeval view``'s page of every
   stress row with every cache's decision; the report's counts link to it).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cacheeval.baselines import make_baseline
from cacheeval.benches.stress_report import (
    CacheResult,
    render_markdown,
    to_record,
    wrong_decisions,
)
from cacheeval.dataset import load_bench
from cacheeval.reporting.plotdata import slug
from cacheeval.reporting.report import Report
from cacheeval.results.predictions import Prediction
from cacheeval.run.harness import evaluate, evaluate_with_predictions
from cacheeval.schema import Row
from cacheeval.support.jsonio import dumps_pretty, sha256_file, write_bytes_atomic, write_jsonl
from cacheeval.support.layout import REPO_ROOT

SEED = 0
PROMPTS = REPO_ROOT / "sources" / "stress" / "prompts.txt"
BENCH = REPO_ROOT / "cachebench.jsonl"
LABELS = REPO_ROOT / "private" / "test_labels.jsonl"
VERIFIED = "verified cache"
SHIPPED = "shipped prompts"
DEV = "CacheEval dev queries"


def _log(msg: str) -> None:
    print(f"run_stress: {msg}", file=sys.stderr, flush=True)


def make_rows(source: Path, spec: Any, out: Path, seed: int) -> tuple[list[Row], dict[str, Any]]:
    """Stress rows of ``source`` written to ``out`` and read back as a bench, and
    what the generator says it made."""
    from cacheeval.benches.stress.generate import StressStats, stress_rows
    from cacheeval.benches.stress.reader import read_prompts

    stats = StressStats()
    write_jsonl(out, stress_rows(read_prompts(source, spec), seed=seed, split="dev", stats=stats))
    rows = load_bench(out)
    info = {
        "prompts": stats.prompts,
        "prompts_with_rows": stats.prompts_with_rows,
        "rows": len(rows),
        "sha256": sha256_file(source),
    }
    return rows, info


def pool() -> list[tuple[str, str, Callable[[], Any]]]:
    """(name, group, factory) of the caches; GPTCache configurations of one
    embedder share one text -> vector store, so each text is embedded once."""
    from adapters.gptcache_adapter import CONFIGS, GPTCacheAdapter

    stores: dict[str, dict[str, Any]] = {}

    def gptcache(config: str) -> Callable[[], Any]:
        def make() -> Any:
            store = stores.setdefault(CONFIGS[config].embedder, {})
            return GPTCacheAdapter.from_config(config, path="fast", vectors=store)

        return make

    def verified() -> Any:
        from adapters.verified_cache.adapter import VerifiedCacheAdapter

        return VerifiedCacheAdapter()

    return [
        ("exact_match", "reference", lambda: make_baseline("exact_match")),
        *((f"gptcache {c}", "gptcache", gptcache(c)) for c in CONFIGS),
        (VERIFIED, "reference", verified),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--prompts", type=Path, default=PROMPTS, help="the shipped prompts file")
    parser.add_argument("--bench", type=Path, default=BENCH)
    parser.add_argument("--labels", type=Path, default=LABELS)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--out-dir", type=Path, default=REPO_ROOT / "reports")
    parser.add_argument("--no-figures", action="store_true", help="skip the per-kind figures")
    parser.add_argument("--redraw", action="store_true",
                        help="only redraw the figures from OUT_DIR/STRESS.json")  # fmt: skip
    args = parser.parse_args(argv)
    if args.redraw:
        import json

        figures(json.loads((args.out_dir / "STRESS.json").read_text("utf-8")),
                args.out_dir / "figures")  # fmt: skip
        return 0
    from cacheeval.benches.stress.reader import PromptSpec

    sources: list[dict[str, Any]] = []
    stress: dict[str, list[Row]] = {}
    with tempfile.TemporaryDirectory(prefix="cacheeval-stress-") as tmp:
        for name, path, spec in (
            (SHIPPED, args.prompts, PromptSpec(fmt="text")),
            (DEV, args.bench, PromptSpec(fmt="jsonl", field="query_a",
                                         system_field="system_prompt_a",
                                         turns_field="context_a", where=("split", "dev"),
                                         tools_field="tools_a")),
        ):  # fmt: skip
            if not path.is_file():
                _log(f"warning: {path} is missing: the report leaves out {name}")
                continue
            rows, info = make_rows(path, spec, Path(tmp) / f"{len(sources)}.jsonl", args.seed)
            stress[name] = rows
            view = f"stress/{slug(name)}.html"
            sources.append({"name": name, "file": _shown(path), **info, "view": view})
            _log(f"{name}: {info['prompts']} prompts -> {info['rows']} rows")
    if args.labels.is_file():
        cacheeval_rows = load_bench(args.bench, split="test", labels_path=args.labels)
        which = "test split (labels from private/test_labels.jsonl)"
    else:
        cacheeval_rows = load_bench(args.bench, split="dev")
        which = "dev split (no private/test_labels.jsonl: run python -m scripts.assemble)"
    results = []
    decided: dict[str, list[tuple[str, list[Prediction]]]] = {src: [] for src in stress}
    for name, group, make in pool():
        cache = make()
        reports: dict[str, Report] = {}
        for src, rows in stress.items():
            _log(f"{name} on {src} ({len(rows)} rows)")
            reports[src], preds = evaluate_with_predictions(cache, rows, cache_name=name)
            decided[src].append((name, preds))
        _log(f"{name} on CacheEval's {which.split(' (')[0]} ({len(cacheeval_rows)} rows)")
        own = evaluate(cache, cacheeval_rows, cache_name=name)
        results.append(CacheResult(name, group, reports, own))
    wrong = {
        src: wrong_decisions(stress[src], dict(decided[src])[VERIFIED]) for src in stress
    }  # fmt: skip
    record = to_record(sources, results, cacheeval_rows=which, verified=VERIFIED, seed=args.seed,
                       verified_wrong=wrong)  # fmt: skip
    args.out_dir.mkdir(parents=True, exist_ok=True)
    for source in sources:
        write_view(args.out_dir / source["view"], source, stress[source["name"]],
                   decided[source["name"]], args.seed)  # fmt: skip
    write_bytes_atomic(args.out_dir / "STRESS.json", dumps_pretty(record).encode("utf-8"))
    write_bytes_atomic(args.out_dir / "STRESS.md", render_markdown(record).encode("utf-8"))
    if not args.no_figures:
        figures(record, args.out_dir / "figures")
    _log(f"wrote {args.out_dir / 'STRESS.md'} and STRESS.json")
    return 0


def write_view(
    path: Path,
    source: dict[str, Any],
    rows: list[Row],
    decided: list[tuple[str, list[Prediction]]],
    seed: int,
) -> None:
    """The per-pair page of one source: every stress row, every cache's decision."""
    from cacheeval.reporting.viewer import CacheRun
    from cacheeval.reporting.viewer_page import page_for
    from cacheeval.results.predictions import make_header

    # no predictions file: the page's File column says where the decisions came from
    runs = [
        CacheRun(name, "scripts.run_stress", make_header(cache_name=name, created="-"),
                 {p.id: p for p in preds})
        for name, preds in decided
    ]  # fmt: skip
    title = f"Stress rows of {source['name']} ({source['file']}, seed {seed})"
    page = page_for(
        rows,
        runs,
        title=title,
        source={"bench": f"stress rows of {source['file']}", "split": None, "domains": None,
                "n_rows": len(rows), "labels": None},
    )  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(path, page.encode("utf-8"))
    _log(f"wrote {path} ({len(page.encode('utf-8')) / 1e6:.2f} MB)")


def _shown(path: Path) -> str:
    """``path`` relative to the checkout when it is inside it (the record stays
    the same wherever the checkout is)."""
    try:
        return str(path.resolve().relative_to(REPO_ROOT))
    except ValueError:
        return path.name


def figures(record: dict[str, Any], out_dir: Path) -> None:
    """The per-kind figure of the pool on each source, drawn from the record
    (``python -m scripts.run_stress --redraw`` draws them from reports/STRESS.json)."""
    from cacheeval.reporting import plot
    from cacheeval.reporting.plotdata import PAIR, Source

    for src in record["sources"]:
        name = src["name"]
        sources = [
            Source(c["name"], PAIR, {"per_kind": c["stress"][name]["per_kind"]})
            for c in record["caches"]
        ]
        fig = plot.kind_results(sources, out_dir, stem=f"stress_kinds_{slug(name)}")
        _log(f"figure {fig.name}: {fig.n_series} caches")


if __name__ == "__main__":
    sys.exit(main())
