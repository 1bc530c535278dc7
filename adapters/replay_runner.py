"""Pair mode against replay mode for the reference caches
(``python -m scripts.run_replay``), written to ``reports/REPLAY.md``/``.json``.

Caches: ``exact_match``, ``always_hit`` (pair: always serve; replay: serve the
lexically nearest entry), GPTCache ``minilm@0.80`` (pair and replay on the
fast path: the real package's decision on batch embeddings) and the verified
cache. Settings, all seeded:

* ``test``: pair mode through the harness on the 500 test rows, and replay
  with the 500 test side-a entries in one store;
* ``test+1500``: the same 500 test lookups against 2,000 entries (the test
  side a plus side a of every train and dev row as distractors);
* ``all``: replay over all 2,000 rows for the caches that were not trained on
  any of them (the verified cache's verifier saw the train split).

Per-cache reports go to ``reports/replay/`` (``pair_test_<cache>.json``,
``<setting>_<cache>.json``); the summary tables, the lookup latency per store
size and the wall time of each replay go to ``REPLAY.md``/``.json``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cacheeval.dataset import load_bench
from cacheeval.replay.engine import replay
from cacheeval.replay.report import ReplayReport, build_replay_report
from cacheeval.reporting.plotdata import slug
from cacheeval.reporting.report import Report
from cacheeval.run.harness import evaluate
from cacheeval.schema import Row
from cacheeval.support.jsonio import dumps_pretty, sha256_file, write_bytes_atomic

REPO = Path(__file__).resolve().parents[1]
GPTCACHE_CONFIG = "minilm@0.80"
SEED = 0
#: Store sizes at which lookup latency is probed (the full store is the last size).
LATENCY_SIZES = (100, 1000)


@dataclass(frozen=True)
class Reference:
    """A reference cache in both modes: factories for a fresh pair-mode cache
    and a fresh shared cache; ``trained`` when it learnt from labelled rows."""

    name: str
    pair: Callable[[], Any]
    shared: Callable[[], Any]
    trained: bool = False


def references() -> list[Reference]:
    from adapters.gptcache_adapter import GPTCacheAdapter
    from adapters.gptcache_shared import GPTCacheShared
    from adapters.verified_cache.adapter import VerifiedCacheAdapter
    from adapters.verified_cache.shared import VerifiedShared
    from cacheeval.baselines import make_baseline
    from cacheeval.replay.shared_baselines import make_shared_baseline

    # one text -> embedding store for every GPTCache run (pair mode and the three
    # replays see the same texts): each is embedded once
    vectors: dict[str, Any] = {}
    return [
        Reference("exact_match", lambda: make_baseline("exact_match"),
                  lambda: make_shared_baseline("exact_match")),
        Reference("always_hit", lambda: make_baseline("always_hit"),
                  lambda: make_shared_baseline("always_hit")),
        Reference(f"gptcache {GPTCACHE_CONFIG}",
                  lambda: GPTCacheAdapter.from_config(GPTCACHE_CONFIG, path="fast",
                                                      vectors=vectors),
                  lambda: GPTCacheShared(config=GPTCACHE_CONFIG, path="fast", vectors=vectors)),
        Reference("verified-cache", VerifiedCacheAdapter, VerifiedShared, trained=True),
    ]  # fmt: skip


def _progress(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _v(e: dict[str, Any] | None) -> float | None:
    return None if e is None else e.get("value")


def pair_summary(report: Report) -> dict[str, Any]:
    """The pair-mode numbers shown beside the replay."""
    h, c, tf = report.headline, report.confusion, report.threshold_free
    at5 = None if tf is None else next(op for op in tf.operating_points if op.alpha == 0.05)
    return {
        "n": c.n,
        "chr": (c.tp + c.fp) / c.n if c.n else None,
        "precision": h.precision.value,
        "recall": h.recall.value,
        "fhr": h.fhr.value,
        "fhr_ci": [h.fhr.ci_low, h.fhr.ci_high],
        "p_chr_auc": None if tf is None else tf.p_chr_auc,
        "recall_at_fhr_5": None if at5 is None else at5.recall,
        "p50_ms": report.latency.p50_ms,
        "p95_ms": report.latency.p95_ms,
    }


def replay_summary(r: ReplayReport) -> dict[str, Any]:
    """The replay numbers of the summary table."""
    rt = r.rates
    at5 = next(op for op in r.operating_points if op.alpha == 0.05)
    return {
        "n": r.counts.n,
        "entries": r.provenance.n_entries,
        "servable": r.counts.n_servable,
        "chr": rt.chr.value,
        "precision": rt.precision.value,
        "recall": rt.recall.value,
        "fhr": rt.fhr.value,
        "fhr_ci": [rt.fhr.ci_low, rt.fhr.ci_high],
        "fhr_judged": rt.fhr_judged.value,
        "wrong_entry_rate": rt.wrong_entry_rate.value,
        "unjudged_rate": rt.unjudged_rate.value,
        "p_chr_auc": r.p_chr_auc,
        "ceiling": r.ceiling,
        "vchr_at_fhr_5": at5.vchr,
        "precision_at_fhr_5": at5.precision,
        "latency": [
            {
                "entries": x.n_entries,
                "n": x.latency.n,
                "p50_ms": x.latency.p50_ms,
                "p95_ms": x.latency.p95_ms,
            }
            for x in r.latency
        ],  # fmt: skip
        "seconds": r.provenance.seconds,
        "lookup_errors": r.errors.n_lookup_errors,
    }


def run_replay(
    ref: Reference,
    setting: str,
    rows: Sequence[Row],
    distractors: Sequence[Row],
    judgements: Sequence[Row],
    bench: Path,
    splits: Sequence[str],
) -> ReplayReport:
    t0 = time.perf_counter()
    run = replay(ref.shared(), rows, distractors=distractors, judgements=judgements, seed=SEED,
                 latency_sizes=LATENCY_SIZES, cache_name=ref.name)  # fmt: skip
    report = build_replay_report(run, dataset_path=str(bench.name),
                                 dataset_sha256=sha256_file(bench), splits=splits)  # fmt: skip
    r = report.rates
    _progress(
        f"  replay {setting:>9} {ref.name}: {len(rows)} lookups / {run.n_entries} entries in"
        f" {time.perf_counter() - t0:.1f} s: CHR {_f(r.chr.value)} precision"
        f" {_f(r.precision.value)} FHR {_f(r.fhr.value)} wrong-entry {_f(r.wrong_entry_rate.value)}"
    )
    return report


def _f(x: float | None, digits: int = 3) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Pair mode vs replay mode, reference caches.")
    parser.add_argument("--bench", type=Path, default=REPO / "cachebench.jsonl")
    parser.add_argument("--labels", type=Path, default=REPO / "private" / "test_labels.jsonl")
    parser.add_argument("--out-dir", type=Path, default=REPO / "reports")
    parser.add_argument("--only", action="append", help="only caches whose name contains this")
    args = parser.parse_args(argv)
    if not args.labels.exists():
        print(f"error: {args.labels} not found: run `python -m scripts.assemble` first",
              file=sys.stderr)  # fmt: skip
        return 2
    every = load_bench(args.bench, labels_path=args.labels)
    test = [r for r in every if r.split == "test"]
    others = [r for r in every if r.split != "test"]
    out: Path = args.out_dir
    detail = out / "replay"
    results: list[dict[str, Any]] = []
    for ref in references():
        if args.only and not any(o in ref.name for o in args.only):
            continue
        _progress(f"{ref.name}: pair mode on the {len(test)} test rows ...")
        pair = evaluate(ref.pair(), test, cache_name=ref.name, dataset_path=args.bench)
        write_bytes_atomic(detail / f"pair_test_{slug(ref.name)}.json", pair.to_json().encode())
        entry: dict[str, Any] = {"cache": ref.name, "pair_test": pair_summary(pair), "replay": {}}
        settings: list[tuple[str, list[Row], list[Row], tuple[str, ...]]] = [
            ("test", test, [], ("test",)),
            ("test+1500", test, others, ("test",)),
        ]
        if not ref.trained:
            settings.append(("all", every, [], ("train", "dev", "test")))
        for setting, rows, distractors, splits in settings:
            rep = run_replay(ref, setting, rows, distractors, every, args.bench, splits)
            write_bytes_atomic(detail / f"{setting}_{slug(ref.name)}.json", rep.to_json().encode())
            entry["replay"][setting] = replay_summary(rep)
        results.append(entry)
    data = {"seed": SEED, "dataset": args.bench.name, "dataset_sha256": sha256_file(args.bench),
            "caches": results}  # fmt: skip
    write_bytes_atomic(out / "REPLAY.json", dumps_pretty(data).encode())
    write_bytes_atomic(out / "REPLAY.md", replay_markdown(data).encode())
    _progress(f"wrote {out / 'REPLAY.md'}")
    return 0


# --- Markdown -------------------------------------------------------------------------


def _ci(x: dict[str, Any]) -> str:
    lo, hi = x["fhr_ci"]
    return f"{_f(x['fhr'])} [{_f(lo)}, {_f(hi)}]"


def replay_markdown(data: dict[str, Any]) -> str:
    caches = data["caches"]
    lines = [
        "# Pair mode vs shared-cache replay",
        "",
        "Generated by `python -m scripts.run_replay` (seed "
        f"{data['seed']}, `{data['dataset']}` sha256 `{data['dataset_sha256'][:16]}`).",
        "",
        "**Pair mode** gives each row its own one-entry cache: is the stored request the same",
        "as the new one? **Replay** (`cacheeval replay`) stores side a of every row in ONE cache",
        "and looks up side b of every row against all of it, so a cache must also *retrieve*",
        "the right entry. A replay fire is valid only when it returns an entry the labels accept",
        "for the request (the row's own partner on a HIT row, a copy of the request itself, or",
        "side a of any labelled HIT pair whose side b is the request). Every other returned",
        "entry is a wrong-entry hit; *unjudged* ones are entries no label relates to the",
        "request (some are near-copies that would be right), so replay precision and FHR are",
        "conservative; the judged FHR leaves them out (the two bound the true FHR). GPTCache",
        "runs its fast path in both modes (the real package's decision rule on batch",
        "embeddings; `tests/adapters/test_shared_caches.py` checks it against one real",
        "SQLite + faiss store).",
        "",
        "![PR and P-CHR curves](figures/pr_pchr.svg)",
        "",
        "## Test split: pair mode vs replay (500 lookups, 500 entries)",
        "",
        "| Cache | Pair FHR [95% CI] | Pair precision | Pair recall | Pair P-CHR AUC |"
        " Replay CHR | Replay precision | Replay FHR [95% CI] | FHR judged | Wrong-entry"
        " (unjudged) | Replay recall | Replay P-CHR AUC |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in caches:
        p, r = c["pair_test"], c["replay"]["test"]
        lines.append(
            f"| {c['cache']} | {_ci(p)} | {_f(p['precision'])} | {_f(p['recall'])} |"
            f" {_f(p['p_chr_auc'])} | {_f(r['chr'])} | {_f(r['precision'])} | {_ci(r)} |"
            f" {_f(r['fhr_judged'])} | {_f(r['wrong_entry_rate'])} ({_f(r['unjudged_rate'])}) |"
            f" {_f(r['recall'])} | {_f(r['p_chr_auc'])} |"
        )
    if caches:
        r0 = caches[0]["replay"]["test"]
        lines += ["", f"{r0['servable']} of {r0['n']} test lookups are servable; the P-CHR"
                  f" ceiling p(1 - ln p) of a perfect ranker is {_f(r0['ceiling'])}."]  # fmt: skip
    lines += ["", "## Replay as the store grows", ""]
    lines += [
        "The same 500 test lookups against the test entries alone, then with side a of all",
        "1,500 train and dev rows stored as distractors; and (caches trained on no row) all",
        "2,000 rows looked up against all 2,000 entries. Best point: the most valid fires",
        "with FHR <= 5% on the cache's own score.",
        "",
        "| Cache | Setting | Entries | CHR | Precision | FHR | FHR judged | Wrong-entry"
        " (unjudged) | Recall | P-CHR AUC | Best @FHR<=5%: VCHR / precision | Wall (s) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in caches:
        for setting, r in c["replay"].items():
            lines.append(
                f"| {c['cache']} | {setting} | {r['entries']} | {_f(r['chr'])} |"
                f" {_f(r['precision'])} | {_f(r['fhr'])} | {_f(r['fhr_judged'])} |"
                f" {_f(r['wrong_entry_rate'])} ({_f(r['unjudged_rate'])}) | {_f(r['recall'])} |"
                f" {_f(r['p_chr_auc'])} | {_f(r['vchr_at_fhr_5'])} /"
                f" {_f(r['precision_at_fhr_5'])} | {r['seconds']:.1f} |"
            )
    lines += ["", "## Lookup latency per store size", ""]
    lines += [
        "Milliseconds per lookup, p50 / p95 (nearest rank), in the `test+1500` and `all`",
        "replays: 200 probe lookups timed after 100 and 1,000 puts, every lookup at the",
        "full store. Pair-mode p50 / p95 on the test split for comparison.",
        "",
        "| Cache | Setting | 100 entries | 1,000 entries | full store | Pair mode |",
        "|---|---|---|---|---|---|",
    ]
    for c in caches:
        p = c["pair_test"]
        for setting in ("test+1500", "all"):
            r = c["replay"].get(setting)
            if r is None:
                continue
            cells = {x["entries"]: f"{_f(x['p50_ms'])} / {_f(x['p95_ms'])}" for x in r["latency"]}
            lines.append(
                f"| {c['cache']} | {setting} | {cells.get(100, 'n/a')} | {cells.get(1000, 'n/a')}"
                f" | {cells.get(r['entries'], 'n/a')} ({r['entries']}) |"
                f" {_f(p['p50_ms'])} / {_f(p['p95_ms'])} |"
            )
    lines += [
        "",
        "## Pair mode on the test split: FHR per domain and calibration",
        "",
        "![FHR per domain, 95% Wilson intervals](figures/domain_fhr.svg)",
        "",
        "![Reliability of GPTCache's score](figures/reliability_gptcache-minilm-0.80.svg)"
        " ![Reliability of the verified cache's P(HIT)](figures/reliability_verified-cache.svg)",
        "",
        "Per-cache reports (per domain, per label, curves): `reports/replay/`.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
