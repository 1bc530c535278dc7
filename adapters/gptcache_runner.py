"""Produce every GPTCache reference report (``python -m scripts.run_gptcache``).

For each configuration of :data:`adapters.gptcache_adapter.CONFIGS`, the real
cache (Protocol A-prime, embedding included in the timed call) runs over every
labelled row; the harness scores it. The fast path then re-derives every
decision from batch embeddings: its disagreements with the real path are
counted and reported, and it drives the threshold sweep (0.50-0.99) of each
embedder and the query-vs-full-request comparison.

Outputs under ``reports/``: ``gptcache_<config>.md`` / ``.json`` (harness
reports), ``gptcache_<config>.csv`` (per-row score and decision),
``gptcache_sweep.csv`` and ``SUMMARY.md``.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import io
import os
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from adapters.gptcache_adapter import (
    CONFIGS,
    GPTCacheAdapter,
    GPTCacheConfig,
    adapter_args,
    config_spec,
    gptcache_hit,
)
from cacheeval.dataset import load_bench
from cacheeval.metrics import Confusion, f1, fhr, hit_rate, precision, recall
from cacheeval.metrics.sweep import OperatingPoint, threshold_sweep
from cacheeval.reporting.report import Report, utc_now
from cacheeval.results.predictions import (
    Prediction,
    make_header,
    read_predictions,
    write_predictions,
)
from cacheeval.run.harness import predict, score
from cacheeval.run.parallel import predict_parallel
from cacheeval.run.probe import run_probe
from cacheeval.schema import ADVERSARIAL, DOMAINS, Row
from cacheeval.support.gitinfo import read_git_info
from cacheeval.support.jsonio import sha256_file, write_bytes_atomic
from cacheeval.support.progress import terminal_progress

if TYPE_CHECKING:
    import numpy as np

REPO = Path(__file__).resolve().parents[1]
DEFAULT_CONFIG = "minilm@0.80"
SWEEP = [round(0.50 + 0.01 * i, 2) for i in range(50)]  # 0.50 ... 0.99
EMBEDDERS = ("minilm", "minilm-onnx", "e5-small")


#: Rows of the real path timed for a configuration graded on the fast path.
LATENCY_SAMPLE = 100


@dataclass(frozen=True)
class ConfigRun:
    """One configuration's report. ``path`` is how its decisions were made:
    ``real`` (GPTCache per row; every decision cross-checked against the fast
    path) or ``fast`` (GPTCache's rule on batch embeddings; the real path runs
    on a seeded sample of :data:`LATENCY_SAMPLE` rows, for latency and a
    cross-check). ``checked`` counts the rows both paths decided."""

    config: GPTCacheConfig
    path: str
    report: Report
    predictions: list[Prediction]
    fast_disagreements: list[str]
    checked: int
    seconds: float


def _progress(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _rates(c: Confusion, c_adv: Confusion) -> dict[str, float | None]:
    """The sweep's rates at one threshold, from the confusion counts of every row
    (``c``) and of the ADVERSARIAL rows (``c_adv``); CHR = (TP + FP) / N."""
    return {
        "precision": precision(c).value,
        "recall": recall(c).value,
        "f1": f1(c).value,
        "fhr": fhr(c).value,
        "adversarial_fhr": fhr(c_adv).value,
        "chr": hit_rate(c).value,
    }


def run_config(
    config: GPTCacheConfig,
    rows: list[Row],
    dataset: Path,
    real: bool,
    vectors: dict[str, np.ndarray] | None = None,
    workers: int = 0,
) -> ConfigRun:
    """Grade one configuration on the real path (``real``) or the fast path, and
    cross-check the two paths on every row (real) or on a seeded sample (fast).
    ``vectors``: the fast path's text -> embedding store, shared by the runs of
    one embedder (the real path always embeds for itself, as GPTCache does).
    ``workers`` > 1 runs the real path on that many worker processes (the same
    predictions in the same order; each call is still timed alone, in its worker)."""
    start = time.perf_counter()
    fast = GPTCacheAdapter.from_config(config, path="fast", vectors=vectors)
    live = GPTCacheAdapter.from_config(config, path="real")
    if real:
        checked = rows
        if workers > 1:
            spec = config_spec(config, "real")
            preds = predict_parallel(spec, rows, workers=workers, progress=terminal_progress())
        else:
            preds = predict(live, rows, progress=terminal_progress())
        real_preds = preds
    else:
        preds = predict(fast, rows, progress=terminal_progress())
        rng = random.Random(LATENCY_SAMPLE)
        picked = sorted(rng.sample(range(len(rows)), min(LATENCY_SAMPLE, len(rows))))
        checked = [rows[i] for i in picked]
        real_preds = predict(live, checked)
    report = score(
        preds,
        rows,
        cache_name=f"gptcache {config.name}",
        cache_args={
            **adapter_args(config, "real" if real else "fast"),
            "protocol": "A-prime (per-pair isolation)",
        },
        cache_ref="adapters.gptcache_adapter:GPTCacheAdapter",
        dataset_path=dataset,
    )
    if not real:  # latency of the real path, from its sample
        sample = score(real_preds, checked, cache_name="latency sample")
        report = dataclasses.replace(report, latency=sample.latency)
    # the real path's cold probe: a fresh GPTCache embedding each new pair in the call
    # (prepare() is not timed here: the report's prepare stays null, not measured)
    report = dataclasses.replace(report, cold_probe=run_probe(config_spec(config, "real")))
    seconds = time.perf_counter() - start
    pairs = [r.pair for r in checked]
    fast.prepare(pairs)
    disagreements = [
        p.id for pair, p in zip(pairs, real_preds, strict=True) if fast(pair).is_hit != p.is_hit
    ]
    path = "real" if real else "fast"
    return ConfigRun(config, path, report, preds, disagreements, len(checked), seconds)


#: Where the main job keeps the real path's per-row predictions of a configuration
#: (git-ignored, like the private labels) so a later step can score them again
#: instead of re-running GPTCache: ``private/predictions/gptcache_<config>.jsonl``.
PREDICTIONS_DIR = REPO / "private" / "predictions"


def real_predictions_path(config: str, directory: Path = PREDICTIONS_DIR) -> Path:
    return directory / f"gptcache_{config}.jsonl"


def real_path_args(config: GPTCacheConfig) -> dict[str, Any]:
    """The cache arguments a real-path predictions file records (and is matched on)."""
    return adapter_args(config, "real")


def save_real_predictions(
    config: GPTCacheConfig, dataset: Path, preds: Sequence[Prediction], path: Path
) -> None:
    """Write the real path's predictions with a header naming the dataset (sha256)."""
    header = make_header(
        cache_name=f"gptcache {config.name}",
        created=utc_now(),
        cache_args=real_path_args(config),
        dataset_sha256=sha256_file(dataset),
        cache_ref="adapters.gptcache_adapter:GPTCacheAdapter",
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    write_predictions(path, header, preds)


def load_real_predictions(
    config: GPTCacheConfig, dataset: Path, ids: Sequence[str], path: Path
) -> list[Prediction] | None:
    """The saved real-path predictions for ``ids`` (in that order), or None when
    the file is missing, unreadable, for another dataset or configuration, or
    lacks one of the ids: the caller then runs GPTCache itself."""
    try:
        header, preds = read_predictions(path)
    except (OSError, ValueError):
        return None
    if (
        not header.complete
        or header.dataset_sha256 != sha256_file(dataset)
        or header.cache_args != real_path_args(config)
    ):
        return None
    by_id = {p.id: p for p in preds}
    if any(i not in by_id for i in ids):
        return None
    return [by_id[i] for i in ids]


def per_row_csv(rows: Sequence[Row], preds: Sequence[Prediction]) -> bytes:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(
        [
            "id",
            "domain",
            "label",
            "binary_label",
            "split",
            "difficulty",
            "score",
            "cosine",
            "decision",
            "correct",
            "latency_ms",
            "error",
        ]
    )
    for r, p in zip(rows, preds, strict=True):
        cos = None if p.score is None else 2 * p.score - 1  # score = (1 + cos) / 2
        w.writerow(
            [
                r.id,
                r.domain,
                r.label,
                r.binary_label,
                r.split,
                r.difficulty,
                "" if p.score is None else f"{p.score:.6f}",
                "" if cos is None else f"{cos:.6f}",
                "HIT" if p.is_hit else "MISS",
                int(p.is_hit == (r.binary_label == "HIT")),
                "" if p.latency_ms is None else f"{p.latency_ms:.3f}",
                p.error or "",
            ]
        )
    return buf.getvalue().encode("utf-8")


def sweep(
    rows: list[Row],
    embedder: str,
    embed: str = "query",
    vectors: dict[str, np.ndarray] | None = None,
) -> list[dict[str, Any]]:
    """Fast-path decisions at every threshold of :data:`SWEEP` (``vectors`` as in
    :func:`run_config`)."""
    cache = GPTCacheAdapter(
        embedder=embedder, threshold=0.8, embed=embed, path="fast", vectors=vectors
    )
    pairs = [r.pair for r in rows]
    cache.prepare(pairs)
    return sweep_points(rows, [cache.rank(p) for p in pairs], embedder, embed)


def sweep_points(
    rows: Sequence[Row], ranks: Sequence[float], embedder: str, embed: str
) -> list[dict[str, Any]]:
    """GPTCache's rates at every threshold t of :data:`SWEEP` from the rows' ranks:
    one :func:`~cacheeval.metrics.sweep.threshold_sweep` of the ranks (and one of
    the ADVERSARIAL rows'), read where :func:`gptcache_hit` starts to serve."""
    y = [r.y for r in rows]
    adv = [i for i, r in enumerate(rows) if r.label == ADVERSARIAL]
    every = threshold_sweep(y, ranks)
    adversarial = threshold_sweep([y[i] for i in adv], [ranks[i] for i in adv])
    out = []
    for t in SWEEP:
        fires = partial(gptcache_hit, threshold=t)
        c, c_adv = (s.confusion(s.where(fires)) for s in (every, adversarial))
        out.append(
            {
                "embedder": embedder,
                "embed": embed,
                "threshold": t,
                "cosine_cut": round(2 * t - 1, 2),
                **_rates(c, c_adv),
            }
        )
    return out


def sweep_csv(points: Sequence[dict[str, Any]]) -> bytes:
    keys = [
        "embedder",
        "embed",
        "threshold",
        "cosine_cut",
        "precision",
        "recall",
        "f1",
        "fhr",
        "adversarial_fhr",
        "chr",
    ]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(keys)
    for p in points:
        w.writerow([p[k] if not isinstance(p[k], float) else f"{p[k]:.4f}" for k in keys])
    return buf.getvalue().encode("utf-8")


def _f(x: float | None, digits: int = 3) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


#: Thresholds of the sweep shown in SUMMARY.md (every one is in gptcache_sweep.csv).
SUMMARY_THRESHOLDS = (0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.99)
#: Thresholds of the query-vs-full-request table.
CONTEXT_THRESHOLDS = (0.8, 0.85, 0.95)


def summary_markdown(
    runs: Sequence[ConfigRun],
    points: Sequence[dict[str, Any]],
    context_points: Sequence[dict[str, Any]],
    rows: Sequence[Row],
    dataset: Path,
) -> str:
    """SUMMARY.md: every configuration, the threshold-free metrics per embedder,
    the default's domains, the sweep and the full-request comparison."""
    git = read_git_info(REPO)
    commit = f"`{(git.commit or 'unknown')[:12]}`{' (dirty)' if git.dirty else ''}"
    default = next((r for r in runs if r.config.name == DEFAULT_CONFIG), None)
    query_points = {p["threshold"]: p for p in points if p["embedder"] == "minilm"}
    lines = _intro_lines(dataset.name, sha256_file(dataset)[:16], len(rows), commit)
    lines += _config_lines(runs)
    lines += _threshold_free_lines(_first_per_embedder(runs))
    if default is not None:
        lines += _domain_lines(default)
    lines += _sweep_lines([p for p in points if p["threshold"] in SUMMARY_THRESHOLDS])
    lines += _best_f1_lines(best_f1_by_embedder(points))
    if context_points:
        shown = [p for p in context_points if p["threshold"] in CONTEXT_THRESHOLDS]
        lines += _context_lines([(query_points[p["threshold"]], p) for p in shown])
    lines += _keyed_lines(runs, rows)
    lines += _FILES_LINES
    return "\n".join(lines)


def _point_at_5(report: Report) -> OperatingPoint | None:
    """A report's best operating point at FHR <= 5% (None without scores)."""
    tf = report.threshold_free
    return None if tf is None else next((o for o in tf.operating_points if o.alpha == 0.05), None)


def _best_recall(report: Report) -> float | None:
    """The best recall at FHR <= 5% of a report (None without scores)."""
    op = _point_at_5(report)
    return None if op is None else op.recall


def _keyed_lines(runs: Sequence[ConfigRun], rows: Sequence[Row]) -> list[str]:
    """Every configuration with and without the key it should have had
    (:mod:`adapters.keyed`): the same GPTCache predictions, a refused pair a
    MISS at score 0.0."""
    from adapters.keyed import keyed_predictions

    lines = [
        "",
        "## With the key it should have had (`--keyed`)",
        "",
        "GPTCache keys its entries by the last user message alone, so the same question under "
        "another user's system prompt, after other turns or with other tools sits at cosine "
        "1.0. `--keyed` (`adapters/keyed.py`) refuses those pairs, and the never-cache ones, "
        "at score 0.0 and leaves every other pair to GPTCache; the keyed figures below are "
        "GPTCache's own predictions with the refused pairs made MISS (the same decisions as "
        "running it wrapped). Context FHR: over the rows whose two requests differ in context.",
        "",
        "| config | FHR | keyed | recall | keyed | ADVERSARIAL-FHR | keyed | best recall "
        "@ FHR ≤ 5% | keyed | context FHR | keyed |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        plain = run.report
        keyed = score(keyed_predictions(rows, run.predictions), rows, cache_name="keyed")
        cells = []
        for r in (plain, keyed):
            ctx = next((s for s in r.per_subscore or () if s.key == "context"), None)
            cells.append(
                (
                    r.headline.fhr.value,
                    r.headline.recall.value,
                    r.headline.adversarial_fhr.value,
                    _best_recall(r),
                    None if ctx is None else ctx.fhr.value,
                )
            )
        row = " | ".join(f"{_f(a)} | {_f(b)}" for a, b in zip(*cells, strict=True))
        lines.append(f"| {run.config.name} | {row} |")
    return lines


def _first_per_embedder(runs: Sequence[ConfigRun]) -> list[ConfigRun]:
    """The first run of every embedder (its threshold-free metrics do not depend
    on the threshold)."""
    seen: dict[str, ConfigRun] = {}
    for run in runs:
        seen.setdefault(run.config.embedder, run)
    return list(seen.values())


def best_f1_by_embedder(points: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The sweep point of largest F1 per embedder (the first on ties; points
    without an F1 never win)."""
    best: dict[str, dict[str, Any]] = {}
    for p in points:
        cur = best.get(p["embedder"])
        if p["f1"] is not None and (cur is None or p["f1"] > cur["f1"]):
            best[p["embedder"]] = p
    return best


def _intro_lines(name: str, sha_prefix: str, n_rows: int, commit: str) -> list[str]:
    return [
        "# GPTCache 0.1.44 on CacheEval",
        "",
        f"Dataset `{name}` (sha256 `{sha_prefix}…`), {n_rows} labelled "
        f"rows (all splits, test labels from the private labels file); code at "
        f"{commit}. "
        "Regenerate with `python scripts/run_gptcache.py`.",
        "",
        "Protocol A-prime: per row a fresh GPTCache (SQLite through sqlalchemy + faiss, in a "
        "temp dir), `put` side a, `get` side b; GPTCache's own decision "
        "(`rank >= (max - min) x similarity_threshold`, `SearchDistanceEvaluation`). For "
        "normalised vectors that is **cos >= 2t - 1**: t = 0.80 serves every pair with "
        "cosine >= 0.60. Only the last user message is embedded, as GPTCache's "
        "pre-embedding does. Latency is per decision on the real path (embed both sides, "
        "put, get), measured on this 2-core CPU in the same run.",
        "",
        f"`path`: `real` runs GPTCache itself on every row and checks the fast path "
        f"(batch embeddings + GPTCache's own rule) against it on every row; `fast` decides "
        f"every row on the fast path and runs the real path on a seeded sample of "
        f"{LATENCY_SAMPLE} rows, for the latency figures and a second cross-check.",
        "",
    ]


def _config_lines(runs: Sequence[ConfigRun]) -> list[str]:
    lines = [
        "| config | path | accuracy | F1 | FHR | ADVERSARIAL-FHR | precision | recall | p50 ms "
        "| p95 ms | fast≠real (rows checked) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        h, lat = run.report.headline, run.report.latency
        lines.append(
            f"| {run.config.name} | {run.path} | {_f(h.accuracy.value)} | {_f(h.f1.value)} | "
            f"{_f(h.fhr.value)} | {_f(h.adversarial_fhr.value)} | {_f(h.precision.value)} | "
            f"{_f(h.recall.value)} | {_f(lat.p50_ms, 1)} | {_f(lat.p95_ms, 1)} | "
            f"{len(run.fast_disagreements)} ({run.checked}) |"
        )
    return lines + [
        "",
        "`fast≠real`: rows where the fast path decides differently from the real cache "
        "with live single-text embeddings; batch padding moves cosines by ~1e-7, so only "
        "pairs sitting on the threshold can differ.",
        "",
        "Not run: the seed's `mpnet-base`, `onnx-default` (GPTCache's paraphrase-albert-onnx "
        "embedding) and `ONNX cross-encoder` (albert-duplicate-onnx) configurations need "
        "model files from a hub, which cannot be fetched here. `GPTCacheAdapter("
        "embedder='onnx-dir:/path')` runs a local ONNX encoder directory for users who "
        "have one.",
        "",
    ]


def _threshold_free_lines(runs: Sequence[ConfigRun]) -> list[str]:
    lines = [
        "## Threshold-free metrics (GPTCache's rank scaled to [0, 1])",
        "",
        "| embedder | PR-AUC | ROC-AUC | P-CHR AUC | CRR | Δcal | best recall @ FHR ≤ 5% "
        "(threshold) |",
        "|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        tf = run.report.threshold_free
        if tf is None:
            continue
        op = _point_at_5(run.report)
        best = "n/a" if op is None else f"{_f(op.recall)} ({_f(op.threshold, 4)})"
        lines.append(
            f"| {run.config.embedder} | {_f(tf.pr_auc)} | {_f(tf.roc_auc)} | "
            f"{_f(tf.p_chr_auc)} | {_f(tf.crr)} | {_f(tf.delta_cal)} | {best} |"
        )
    return lines


def _domain_lines(default: ConfigRun) -> list[str]:
    lines = [
        "",
        f"## Per-domain FHR and F1 of the default ({default.config.name})",
        "",
        "| domain | n | FHR | F1 | recall |",
        "|---|---|---|---|---|",
    ]
    for s in sorted(default.report.per_domain, key=lambda s: DOMAINS.index(s.key)):
        lines.append(
            f"| {s.key} | {s.n} | {_f(s.fhr.value)} | {_f(s.f1.value)} | {_f(s.recall.value)} |"
        )
    return lines


def _sweep_lines(points: Sequence[dict[str, Any]]) -> list[str]:
    lines = [
        "",
        "## Threshold sweep (fast path; full table in `gptcache_sweep.csv`)",
        "",
        "![GPTCache FHR and recall against its threshold](figures/gptcache_sweep.svg)",
        "",
        "![Cost, latency and quality of every configuration](figures/clq.svg)",
        "",
        "| embedder | t | cos ≥ | precision | recall | F1 | FHR | ADV-FHR |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for p in points:
        lines.append(
            f"| {p['embedder']} | {p['threshold']:.2f} | {p['cosine_cut']:.2f} | "
            f"{_f(p['precision'])} | {_f(p['recall'])} | {_f(p['f1'])} | {_f(p['fhr'])} | "
            f"{_f(p['adversarial_fhr'])} |"
        )
    return lines


def _best_f1_lines(best: dict[str, dict[str, Any]]) -> list[str]:
    lines = ["", "Best F1 over the sweep, per embedder:", ""]
    for emb, p in best.items():
        lines.append(
            f"- {emb}: F1 {_f(p['f1'])} at t = {p['threshold']:.2f} "
            f"(FHR {_f(p['fhr'])}, recall {_f(p['recall'])})"
        )
    return lines


def _context_lines(pairs: Sequence[tuple[dict[str, Any], dict[str, Any]]]) -> list[str]:
    """The (query-only, full-request) sweep points at the same thresholds."""
    lines = [
        "",
        "## Embedding the whole request (system prompt + prior turns + query), MiniLM",
        "",
        "| t | FHR (query only) | FHR (full request) | recall (query only) "
        "| recall (full request) |",
        "|---|---|---|---|---|",
    ]
    for base, p in pairs:
        lines.append(
            f"| {p['threshold']:.2f} | {_f(base['fhr'])} | {_f(p['fhr'])} | "
            f"{_f(base['recall'])} | {_f(p['recall'])} |"
        )
    return lines


_FILES_LINES = [
    "",
    "## Files",
    "",
    "- `gptcache_<config>.md` / `.json`: the full harness report of each configuration",
    "- `gptcache_<config>.csv`: per-row score, cosine, decision and latency",
    "- `gptcache_sweep.csv`: precision, recall, F1, FHR, ADVERSARIAL-FHR and CHR at every "
    "threshold 0.50-0.99 for each embedder (and MiniLM on the full request)",
    "",
]


def fill_store(
    store: dict[str, np.ndarray], config: GPTCacheConfig, rows: Sequence[Row], workers: int
) -> None:
    """Embed every text the fast path of ``config`` needs into ``store`` on
    ``workers`` processes, for an embedder that encodes one text at a time (its
    vectors are the same whichever process computes them); others are left to
    the fast path's own batches."""
    from adapters.embedders import PER_TEXT_EMBEDDERS, encode_in_processes

    if config.embedder not in PER_TEXT_EMBEDDERS or workers <= 1:
        return
    probe = GPTCacheAdapter.from_config(config, path="fast")
    todo = [t for t in probe.texts([r.pair for r in rows]) if t not in store]
    if todo:
        _progress(f"  {config.embedder}: {len(todo)} texts on {workers} processes ...")
        store.update(zip(todo, encode_in_processes(config.embedder, todo, workers), strict=True))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run the GPTCache reference configurations.")
    parser.add_argument("--bench", type=Path, default=REPO / "cachebench.jsonl")
    parser.add_argument("--labels", type=Path, default=REPO / "private" / "test_labels.jsonl")
    parser.add_argument("--out-dir", type=Path, default=REPO / "reports")
    parser.add_argument("--configs", nargs="*", default=list(CONFIGS), choices=list(CONFIGS))
    parser.add_argument(
        "--real-configs",
        nargs="*",
        default=[DEFAULT_CONFIG],
        choices=list(CONFIGS),
        help=f"configurations graded on GPTCache's real path (default {DEFAULT_CONFIG}); "
        "the others use the fast path, cross-checked on a sample",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=min(2, os.cpu_count() or 1),
        help="worker processes for the real path (default: 2, or 1 on a 1-CPU machine; "
        "the decisions do not depend on it)",
    )
    parser.add_argument(
        "--predictions-dir",
        type=Path,
        default=PREDICTIONS_DIR,
        help="where the real path's predictions are kept for later steps (git-ignored)",
    )
    parser.add_argument("--limit", type=int, default=None, help="first N rows only (smoke runs)")
    args = parser.parse_args(argv)
    if not args.labels.exists():
        print(
            f"error: {args.labels} not found: run `python -m scripts.assemble` first "
            "(it writes the private test labels)",
            file=sys.stderr,
        )
        return 2
    rows = load_bench(args.bench, labels_path=args.labels)
    if args.limit:
        rows = rows[: args.limit]
    out: Path = args.out_dir
    out.mkdir(parents=True, exist_ok=True)
    runs = []
    # One text -> embedding store per embedder: each text is embedded once for
    # all the fast-path runs and the sweep.
    stores: dict[str, dict[str, np.ndarray]] = {}
    for name in args.configs:
        real = name in args.real_configs
        _progress(f"gptcache {name}: {'real' if real else 'fast'} path over {len(rows)} rows ...")
        cfg = CONFIGS[name]
        store = stores.setdefault(cfg.embedder, {})
        if not real:
            fill_store(store, cfg, rows, args.workers)
        run = run_config(cfg, rows, args.bench, real, store, args.workers)
        runs.append(run)
        h = run.report.headline
        _progress(
            f"gptcache {name}: F1 {_f(h.f1.value)} FHR {_f(h.fhr.value)} "
            f"ADV-FHR {_f(h.adversarial_fhr.value)} in {run.seconds:.0f} s; "
            f"fast and real paths disagree on {len(run.fast_disagreements)} of {run.checked} rows"
        )
        # Not Path.with_suffix: "minilm@0.80" already has a dot.
        stem = f"gptcache_{name}"
        write_bytes_atomic(out / f"{stem}.md", run.report.to_markdown().encode("utf-8"))
        write_bytes_atomic(out / f"{stem}.json", run.report.to_json().encode("utf-8"))
        write_bytes_atomic(out / f"{stem}.csv", per_row_csv(rows, run.predictions))
        if real and not args.limit:
            save_real_predictions(
                cfg, args.bench, run.predictions, real_predictions_path(name, args.predictions_dir)
            )
    _progress("threshold sweep ...")
    points: list[dict[str, Any]] = []
    for emb in EMBEDDERS:
        points += sweep(rows, emb, vectors=stores.setdefault(emb, {}))
    context_points = sweep(rows, "minilm", embed="full", vectors=stores.setdefault("minilm", {}))
    write_bytes_atomic(out / "gptcache_sweep.csv", sweep_csv(points + context_points))
    summary = summary_markdown(runs, points, context_points, rows, args.bench)
    write_bytes_atomic(out / "SUMMARY.md", summary.encode("utf-8"))
    _progress(f"wrote {out / 'SUMMARY.md'}")
    return 0
