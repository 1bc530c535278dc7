"""Leave-one-group-out ablation of the verified cache's features, on CacheEval and
on real, human-labelled pair files (validation only: nothing is trained on them).

    python -m scripts.ablate_verified_cache --pairs ../shared/ext   # or CACHEEVAL_EXTERNAL_DIR

For the full feature set and for each feature group left out (its columns held
constant, so no tree can split on them), the shipped pipeline runs unchanged:
train on the train split, certify the threshold on dev, score the test split,
5-fold grouped out-of-fold scores over every labelled row, and every pair file
of the directory scored at the certified operating point beside the MiniLM
cosine (its recall at the same FHR, its ROC-AUC). A group earns its place when
leaving it out costs CacheEval recall or external value; the table says which.
Each change on a pair file carries a 95% interval from a paired bootstrap over
that file's pairs (``--resamples``; the same draws for the ablated and the full
model), so a change one false hit makes can be told from a real one.

Writes ``reports/VERIFIED_ABLATION.md`` and ``.json`` (figures only).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adapters.verified_cache.cache import DEFAULT_EMBEDDER, Resources
from adapters.verified_cache.diagnosis import zeroed
from adapters.verified_cache.frontier import frontier
from adapters.verified_cache.training import (
    PairCase,
    Scored,
    build_cases,
    fit_shipped,
    out_of_fold,
    pair_file_figures,
    score_cases,
    summarize,
)
from cacheeval.benches.external import format_gap
from cacheeval.commands._running import add_resamples_argument
from cacheeval.metrics.paired import DEFAULT_RESAMPLES, paired_difference_interval
from cacheeval.support.jsonio import dumps_pretty, write_bytes_atomic
from scripts.run_external import ENV, pair_sets
from scripts.train_verified_cache import training_rows

REPO = Path(__file__).resolve().parents[1]

#: Seed offsets of the seed-noise rows are multiples of this (0: the shipped model).
SEED_STEP = 100

#: Feature groups, each left out in turn.
GROUPS: dict[str, tuple[str, ...]] = {
    "token alignment": ("tok_align_p", "tok_align_r", "tok_align_f"),
    "replaced word pieces' cosine": ("tok_diff_cos",),
    "short-substitution cosine": ("cos_diff",),
    "numbers": ("num_diff", "num_any_diff", "num_order_swap", "ordinal_diff"),
    "operators": ("op_diff",),
    "contrast words": ("contrast_swap",),
    "negation": ("neg_diff", "neg_scope_flip"),
    "variables, identifiers": ("var_diff", "var_rename", "ident_diff"),
    "names, quotes": ("entity_diff", "entity_both_changed", "quoted_diff"),
    "direction": ("direction_swap",),
    "languages": ("text_lang_diff", "nat_lang_conflict", "prog_lang_conflict",
                  "prog_lang_one_sided"),
    "units, currencies": ("unit_diff", "currency_diff"),
    "dates, times": ("date_diff", "weekday_diff", "time_diff", "relative_diff"),
    "history": ("cos_context", "cos_ctx_added", "ctx_equal", "ctx_present", "ctx_turns_diff",
                "ctx_diff", "ctx_critical", "ctx_entity_diff", "ctx_num_diff", "ctx_seq_ratio",
                "ctx_added_only"),
    "system prompt": ("sys_equal", "sys_present"),
    "tools": ("tools_present", "tools_equal", "tools_jaccard", "tool_intent_diff",
              "tool_needed_changed"),
    "content equal": ("content_equal",),
    "pooled critical count": ("critical_diff",),
}  # fmt: skip


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def without(cases: Sequence[PairCase], names: Sequence[str]) -> list[PairCase]:
    """``cases`` with the columns ``names`` held at 0.0 (nothing to split on)."""
    return zeroed(cases, names)


def change_interval(
    scored: Sequence[Scored], base: Sequence[Scored], cosines: Sequence[float], resamples: int
) -> dict[str, list[float] | None]:
    """95% paired-bootstrap intervals of the change in the recall gap and the AUC
    gap (``scored``'s minus ``base``'s), both scored on the same pairs."""
    y = [x.case.y for x in scored]
    r, a = paired_difference_interval(
        y, ([x.hit for x in scored], [x.score for x in scored]),
        ([x.hit for x in base], [x.score for x in base]), list(cosines),
        n_resamples=resamples,
    )  # fmt: skip
    return {"d_recall_gap_ci": list(r) if r else None, "d_auc_gap_ci": list(a) if a else None}


@dataclass(frozen=True, slots=True)
class ConfigRun:
    """One configuration's figures (``row``), its shipped model's scored CacheEval
    rows (``bench``, every split), its out-of-fold scored rows (``oof``) and its
    scored pair files (``pair_files``)."""

    row: dict[str, Any]
    bench: list[Scored]
    oof: list[Scored]
    pair_files: dict[str, list[Scored]]


def run_config(
    name: str,
    bench: list[PairCase],
    ext: dict[str, tuple[list[PairCase], list[float]]],
    drop: Sequence[str],
    base: dict[str, list[Scored]] | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    seed_offset: int = 0,
) -> ConfigRun:
    """One configuration's run; with ``base`` (the full model's scored pair
    files), the intervals of its changes against it; ``seed_offset`` moves
    LightGBM's seeds (0: the shipped model's)."""
    cases = without(bench, drop)
    shipped = fit_shipped(cases, seed_offset=seed_offset)
    test = summarize([s for s in shipped.scored if s.case.split == "test"])
    oof_scored = out_of_fold(cases, seed_offset=seed_offset).scored
    oof = summarize(oof_scored)
    row: dict[str, Any] = {
        "config": name,
        "dropped": list(drop),
        "seed_offset": seed_offset,
        "test": {"fhr": test["fhr"], "recall": test["recall"],
                 "adversarial_fhr": test["adversarial"]["fhr"]},
        "oof": {"fhr": oof["fhr"], "recall": oof["recall"]},
        "external": {},
    }  # fmt: skip
    v = shipped.verifier
    scored_sets: dict[str, list[Scored]] = {}
    for set_name, (ecases, cosines) in ext.items():
        scored = score_cases(without(ecases, drop), v, v.gate_threshold, v.operating_point)
        scored_sets[set_name] = scored
        row["external"][set_name] = pair_file_figures(scored, cosines)
        if base is not None and resamples:
            row["external"][set_name] |= change_interval(scored, base[set_name], cosines, resamples)
    return ConfigRun(row, shipped.scored, oof_scored, scored_sets)


def _f(x: float | None, signed: bool = False) -> str:
    if x is None:
        return "n/a"
    return f"{x:+.3f}" if signed else f"{x:.3f}"


def _gap(e: dict[str, Any]) -> float | None:
    if e["cos_recall_at_fhr"] is None or e["recall"] is None:
        return None
    return float(e["recall"] - e["cos_recall_at_fhr"])


def markdown(
    rows: Sequence[dict[str, Any]],
    sets: Sequence[str],
    created: str,
    mixes: Sequence[dict[str, Any]] = (),
    seeds: Sequence[dict[str, Any]] = (),
) -> str:
    """The ablation table, then (with ``seeds``) the full model under other
    LightGBM seeds and (with ``mixes``) the embedding-mix table."""
    base = rows[0]
    header = ["left out", "test FHR", "test recall", "OOF recall", "d OOF recall"]
    for s in sets:
        header += [f"{s}: recall - cosine's", f"{s}: d", f"{s}: AUC - cosine's", f"{s}: d AUC"]
    lines = [
        "# Verified cache: feature ablation",
        "",
        f"Generated by `python -m scripts.ablate_verified_cache` ({created}). Each row "
        "retrains the shipped pipeline (train split, threshold certified on dev) with one "
        "feature group held constant. External files are validation only. 'recall - "
        "cosine's': the cache's recall at its operating point minus the MiniLM cosine's "
        "recall at the same FHR; 'AUC - cosine's': ROC-AUC gap; d: change against all "
        "features, on a pair file with the 95% interval of a paired bootstrap over its "
        "pairs (stratified by label, the same resamples for both models; an interval "
        "spanning 0 is a change the sample cannot tell from noise).",
        "",
    ]
    body = []
    for r in rows:
        cells = [r["config"], _f(r["test"]["fhr"]), _f(r["test"]["recall"]),
                 _f(r["oof"]["recall"]),
                 _f(r["oof"]["recall"] - base["oof"]["recall"], True)]  # fmt: skip
        for s in sets:
            e, b = r["external"][s], base["external"][s]
            gap, base_gap = _gap(e), _gap(b)
            d_gap = gap - base_gap if gap is not None and base_gap is not None else None
            cells += [_f(gap, True), format_gap(d_gap, e.get("d_recall_gap_ci")),
                      _f(e["roc_auc"] - e["cos_roc_auc"], True),
                      format_gap(e["roc_auc"] - b["roc_auc"], e.get("d_auc_gap_ci"))]  # fmt: skip
        body.append(cells)
    lines += _table(header, body)
    if seeds:
        lines += ["", *_seed_lines(seeds, sets)]
    if mixes:
        lines += ["", *_mix_lines(mixes, sets)]
    return "\n".join(lines) + "\n"


def render(record: dict[str, Any]) -> str:
    """The Markdown report of a JSON record (what :func:`main` writes beside it)."""
    return markdown(record["results"], record["sets"], record["created"],
                    record.get("embedding_mix", ()), record.get("seeds", ()))  # fmt: skip


def _seed_lines(seeds: Sequence[dict[str, Any]], sets: Sequence[str]) -> list[str]:
    """The seed-noise section: the full model retrained with other seeds."""
    header = ["seed offset", "test FHR", "test recall", "test ADV-FHR", "OOF recall"]
    for s in sets:
        header += [f"{s}: FHR", f"{s}: recall - cosine's", f"{s}: AUC - cosine's"]
    body = []
    for r in seeds:
        t = r["test"]
        cells = [str(r["seed_offset"]), _f(t["fhr"]), _f(t["recall"]),
                 _f(t["adversarial_fhr"]), _f(r["oof"]["recall"])]  # fmt: skip
        for s in sets:
            e = r["external"][s]
            cells += [_f(e["fhr"]), _f(_gap(e), True), _f(e["roc_auc"] - e["cos_roc_auc"], True)]
        body.append(cells)
    spreads: list[tuple[str, list[float | None]]] = [
        ("test recall", [r["test"]["recall"] for r in seeds]),
        ("OOF recall", [r["oof"]["recall"] for r in seeds]),
        *((f"{s} recall gap", [_gap(r["external"][s]) for r in seeds]) for s in sets),
    ]
    lo_hi = []
    for name, values in spreads:
        v = [x for x in values if x is not None]
        if v:
            lo_hi.append(f"{name} {min(v):+.3f} to {max(v):+.3f}" if "gap" in name
                         else f"{name} {min(v):.3f} to {max(v):.3f}")  # fmt: skip
    return [
        "## Seed noise",
        "",
        f"The full model retrained with {len(seeds)} LightGBM seed offsets (every seed of "
        "bagging, feature sampling and data moved; offset 0 is the shipped model), the "
        "same features and splits. A change in the table above that stays within this "
        "spread is not told apart from the seed: " + "; ".join(lo_hi) + ".",
        "",
        *_table(header, body),
    ]


def _mix_lines(mixes: Sequence[dict[str, Any]], sets: Sequence[str]) -> list[str]:
    """The embedding-mix section (:func:`adapters.verified_cache.frontier.frontier`)."""
    a, b = mixes[0]["cosine_log_odds"]
    header = ["weight w", "dev threshold (false hits)", "test FHR", "test recall", "test ADV-FHR",
              "OOF FHR", "OOF recall"]  # fmt: skip
    for s in sets:
        header += [f"{s}: FHR", f"{s}: recall", f"{s}: recall - cosine's"]
    lines = [
        "## Following the embedding further",
        "",
        "The full model's P(HIT) p mixed with the query cosine's own log-odds: "
        f"s_w = sigmoid((1 - w) logit(p) + w ({a:+.2f} {b:+.2f} cos)), the cosine's "
        "log-odds a logistic fit on the train split's pairs that reach the verifier. "
        "w = 0 is the shipped verifier, w = 1 ranks by the cosine alone. Each w gets its "
        "own threshold certified on dev by the shipped rule (same FHR budget and "
        "confidence; the out-of-fold columns certify on the out-of-fold scores "
        "themselves, as the out-of-fold report does); no retraining. It shows what "
        "serving more by the embedding costs CacheEval and gives on the pair files.",
        "",
    ]
    body = []
    for m in mixes:
        thr = "serves nothing" if m["threshold"] is None else f"{m['threshold']:.3f}"
        t = m["test"]
        o = m.get("oof", {})
        cells = [f"{m['weight']:.1f}", f"{thr} ({m['dev_fp']})", _f(t["fhr"]), _f(t["recall"]),
                 _f(t["adversarial_fhr"]), _f(o.get("fhr")), _f(o.get("recall"))]  # fmt: skip
        for s in sets:
            e = m["external"][s]
            cells += [_f(e["fhr"]), _f(e["recall"]), _f(_gap(e), True)]
        body.append(cells)
    return lines + _table(header, body)


def _table(header: Sequence[str], body: Sequence[Sequence[str]]) -> list[str]:
    """A Markdown table's lines."""
    rule = "|" + "---|" * len(header)
    return ["| " + " | ".join(header) + " |", rule, *("| " + " | ".join(r) + " |" for r in body)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=Path, default=None, help=f"directory (default ${ENV})")
    parser.add_argument("--bench", type=Path, default=REPO / "cachebench.jsonl")
    parser.add_argument("--labels", type=Path, default=REPO / "private" / "test_labels.jsonl")
    parser.add_argument("--out", type=Path, default=REPO / "reports" / "VERIFIED_ABLATION.md")
    add_resamples_argument(parser, "the changes' intervals")
    parser.add_argument(
        "--seeds", type=int, default=8, help="LightGBM seeds to retrain the full model with"
    )
    args = parser.parse_args(argv)
    if args.seeds < 1:
        parser.error("--seeds must be at least 1")
    directory = args.pairs or (Path(os.environ[ENV]) if os.environ.get(ENV) else None)
    if directory is None or not directory.is_dir():
        _log(f"need a directory of pair files (--pairs or ${ENV})")
        return 2
    from adapters.cosine_baseline import MiniLMCosine
    from cacheeval.reporting.report import utc_now

    resources = Resources(embedder_name=DEFAULT_EMBEDDER)
    t0 = time.perf_counter()
    rows, extra = training_rows(args.bench, args.labels)
    bench = build_cases(rows + extra, resources)
    ext: dict[str, tuple[list[PairCase], list[float]]] = {}
    cosine = MiniLMCosine()
    for s in pair_sets(directory):
        rows = list(s.rows)
        cosine.prepare([r.pair for r in rows])
        ext[s.name] = (build_cases(rows, resources), [cosine.cosine(r.pair) for r in rows])
    cosine.close()
    _log(f"features in {time.perf_counter() - t0:.0f} s")
    full = run_config("(none: all features)", bench, ext, ())
    results = [full.row]
    for name, names in GROUPS.items():
        row = run_config(name, bench, ext, names, full.pair_files, args.resamples).row
        results.append(row)
        _log(f"  {name}: OOF recall {row['oof']['recall']:.3f}")
    mixes = frontier(full.bench, {n: (full.pair_files[n], ext[n][1]) for n in ext}, oof=full.oof)
    seeds = [full.row] + [
        run_config("(none: all features)", bench, ext, (), seed_offset=SEED_STEP * k).row
        for k in range(1, args.seeds)
    ]
    record = {
        "created": utc_now(),
        "groups": GROUPS,
        "resamples": args.resamples,
        "sets": list(ext),
        "results": results,
        "seeds": seeds,
        "embedding_mix": mixes,
    }
    write_bytes_atomic(args.out, render(record).encode("utf-8"))
    write_bytes_atomic(args.out.with_suffix(".json"), dumps_pretty(record).encode())
    _log(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
