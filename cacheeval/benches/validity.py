"""Does CacheEval's ranking of caches predict their ranking on other pairs?

A pool of caches is run on CacheEval's test split and on target sets (the
secret-seed private slice, real pair files, a user's own labelled pairs).
For every cache and set, :data:`METRICS` are computed from its scores; the
Kendall tau between CacheEval's ordering of the pool and a target's ordering
(:func:`~cacheeval.metrics.agreement.tau_interval`) says how well the first
predicts the second, with a bootstrap interval over the target's pairs.

CacheEval's ordering is taken over all its test rows and over each sub-score
(:func:`~cacheeval.schema.subscore_of`): query and context (the policy rows
are all MISS, so neither metric is defined on them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ..metrics.agreement import Scored, best_recall, roc_auc, tau_interval
from ..reporting.markdown import table

#: The per-cache metrics the orderings use (higher is better for both).
METRICS = {"roc_auc": roc_auc, "recall_at_fhr_5": best_recall}
METRIC_TITLES = {"roc_auc": "ROC-AUC", "recall_at_fhr_5": "best recall @ FHR ≤ 5%"}


@dataclass(frozen=True, slots=True)
class TauCell:
    """Kendall's tau between the ``benchmark``'s ordering of the pool and the
    ``target``'s, on ``metric``, with its bootstrap interval."""

    benchmark: str
    target: str
    metric: str
    tau: float | None
    interval: tuple[float, float] | None
    n_caches: int


def subset(scored: Scored, keep: Sequence[bool]) -> Scored:
    """The rows of ``scored`` where ``keep`` is true.

    >>> subset(([1, 0, 1], [0.9, None, 0.2]), [True, False, True])
    ([1, 1], [0.9, 0.2])
    """
    y, s = scored
    return [v for v, k in zip(y, keep, strict=True) if k], [
        v for v, k in zip(s, keep, strict=True) if k
    ]


def metric_values(
    scores: Mapping[str, Mapping[str, Scored]],
) -> dict[str, dict[str, dict[str, float | None]]]:
    """cache -> set -> metric -> value."""
    return {
        cache: {
            name: {m: fn(*scored) for m, fn in METRICS.items()} for name, scored in sets.items()
        }
        for cache, sets in scores.items()
    }


def validity_taus(
    scores: Mapping[str, Mapping[str, Scored]],
    benchmarks: Sequence[str],
    targets: Sequence[str],
    *,
    n_resamples: int = 200,
    seed: int = 0,
) -> list[TauCell]:
    """Every (benchmark, target, metric) tau over the caches that have both
    sets (``scores``: cache -> set name -> truth and scores)."""
    values = metric_values(scores)
    out = []
    for bench in benchmarks:
        for target in targets:
            for metric, fn in METRICS.items():
                ref = {c: v[bench][metric] for c, v in values.items() if bench in v}
                scored = {c: s[target] for c, s in scores.items() if target in s and c in ref}
                tau, interval = tau_interval(ref, scored, fn, n_resamples=n_resamples, seed=seed)
                out.append(TauCell(bench, target, metric, tau, interval, len(scored)))
    return out


def _num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def _tau(cell: TauCell) -> str:
    if cell.tau is None:
        return "n/a"
    ci = "" if cell.interval is None else f" [{cell.interval[0]:+.2f}, {cell.interval[1]:+.2f}]"
    return f"{cell.tau:+.2f}{ci}"


def render_markdown(record: Mapping[str, Any]) -> str:
    """VALIDITY.md from its JSON record (:func:`to_record`)."""
    taus = [TauCell(**{**c, "interval": tuple(c["interval"]) if c["interval"] else None})
            for c in record["taus"]]  # fmt: skip
    lines = [
        "# Does CacheEval's ranking predict yours?",
        "",
        f"Regenerate with `{record['command']}`. {len(record['caches'])} caches, "
        f"{record['n_resamples']} bootstrap resamples of each target set's pairs "
        f"(seed {record['seed']}), 95% percentile intervals. Kendall's tau-b between "
        "CacheEval's ordering of the pool (on its test split, all rows or one sub-score) "
        "and each target set's ordering: +1 the same order, 0 none, -1 reversed.",
        "",
    ]
    for metric in METRICS:
        lines += [f"## {METRIC_TITLES[metric]}", ""]
        benches = list(dict.fromkeys(c.benchmark for c in taus))
        targets = list(dict.fromkeys(c.target for c in taus))
        rows = []
        for bench in benches:
            cells = {c.target: c for c in taus if c.benchmark == bench and c.metric == metric}
            rows.append([bench, *(_tau(cells[t]) for t in targets)])
        lines += table(["CacheEval ordering", *targets], rows)
        lines.append("")
    lines += ["## The pool", ""]
    sets = list(record["sets"])
    header = ["cache", *(f"{s} {METRIC_TITLES[m]}" for s in sets for m in METRICS)]
    rows = []
    for cache in record["caches"]:
        vals = record["values"][cache]
        rows.append([cache, *(_num(vals.get(s, {}).get(m)) for s in sets for m in METRICS)])
    lines += table(header, rows)
    lines += ["", "## Sets", ""]
    lines += table(
        ["set", "pairs", "HIT"],
        [[s, str(info["pairs"]), str(info["positives"])] for s, info in record["sets"].items()],
    )
    if record.get("statement"):
        lines += ["", record["statement"]]
    return "\n".join(lines) + "\n"


def to_record(
    *,
    command: str,
    caches: Sequence[str],
    sets: Mapping[str, Mapping[str, int]],
    scores: Mapping[str, Mapping[str, Scored]],
    taus: Sequence[TauCell],
    n_resamples: int,
    seed: int,
    statement: str = "",
) -> dict[str, Any]:
    """The JSON record VALIDITY.md is rendered from (numbers only: no pair)."""
    return {
        "command": command,
        "caches": list(caches),
        "sets": {k: dict(v) for k, v in sets.items()},
        "values": metric_values(scores),
        "taus": [asdict(c) for c in taus],
        "n_resamples": n_resamples,
        "seed": seed,
        "statement": statement,
    }
