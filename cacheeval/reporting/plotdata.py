"""What the figures draw, read from report JSON (pair mode, ``cacheeval_report``)
and replay JSON (``cacheeval_replay``) files: pure functions, standard
library only, shared by the matplotlib figures (:mod:`cacheeval.reporting.plot`) and the
leaderboard's server-side SVG (:mod:`cacheeval.server.charts`).

Curve coordinates (see :mod:`cacheeval.metrics.curves` and
:mod:`cacheeval.metrics.replay`):

* pair mode: recall ``tp / n_positive``, CHR ``n_fired / n``, precision ``tp / n_fired``;
* replay: recall ``valid / n_servable``, CHR ``fired / n``, precision ``valid / fired``.

Both curves start at the empty point (recall 0 / CHR 0) with the first
point's precision, so a step drawn from it covers the whole area.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..support.jsonio import read_json_document

PAIR = "pair"
REPLAY = "replay"


@dataclass(frozen=True, slots=True)
class Source:
    """One report file: its display name, kind (pair or replay) and content."""

    name: str
    kind: str
    data: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Curve:
    """One cache's PR and P-CHR curves and their areas (None when not computed)."""

    name: str
    recall: tuple[float, ...]
    chr: tuple[float, ...]
    precision: tuple[float, ...]
    pr_auc: float | None
    p_chr_auc: float | None
    positive_rate: float | None


@dataclass(frozen=True, slots=True)
class ClqPoint:
    """One cache in the cost-latency-quality view: F1 and FHR (pair mode over
    its rows; a replay over its lookups, see :func:`clq_point`), p95 latency,
    and ``cost_per_1k`` (0 when the cache declares no price). ``recall_at_5``
    is the best recall with FHR <= 5% (None without scores, and for a replay)."""

    name: str
    f1: float | None
    recall_at_5: float | None
    p95_ms: float
    cost_per_1k: float
    fhr: float | None = None
    kind: str = "pair"


def read_source(path: str | Path, name: str | None = None) -> Source:
    """Read a report or replay JSON file; ValueError naming ``path:LINE`` otherwise
    (:func:`~cacheeval.support.jsonio.read_json_document`)."""
    data = read_json_document(path)  # JsonlError is a ValueError
    if not isinstance(data, dict):
        raise ValueError(f"{path}:1: expected a JSON object")
    if "cacheeval_report" in data:
        kind, default = PAIR, data.get("provenance", {}).get("cache_name")
    elif "cacheeval_replay" in data:
        kind, default = REPLAY, data.get("provenance", {}).get("cache_name")
    else:
        raise ValueError(f"{path}:1: neither a CacheEval report nor a replay report")
    source = Source(name or str(default or Path(path).stem), kind, data)
    _check_complete(source, path)
    return source


def _check_complete(src: Source, path: str | Path) -> None:
    """Read every figure's data once, so a report with a field missing or of the
    wrong type is a ``path:1`` error here, not a traceback while drawing."""
    try:
        curve(src)
        subscore_fhr(src)
        kind_rates(src)
        domain_fhr(src)
        if src.kind == PAIR:
            reliability(src)
        clq_point(src)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, ZeroDivisionError) as e:
        what = f"no field {e}" if isinstance(e, KeyError) else str(e)
        raise ValueError(f"{path}:1: an incomplete or damaged report ({what})") from None


def curve(src: Source) -> Curve | None:
    """The source's PR and P-CHR curves, or None when it has no threshold sweep
    (no scores, or a report written before reports kept curves).

    >>> data = {"curves": {"n": 4, "n_positive": 2, "score_curve": [
    ...     {"threshold": 0.9, "n_fired": 1, "tp": 1, "fp": 0},
    ...     {"threshold": 0.5, "n_fired": 4, "tp": 2, "fp": 2}]},
    ...     "threshold_free": {"pr_auc": 1.0, "p_chr_auc": 0.5, "positive_rate": 0.5}}
    >>> c = curve(Source("x", PAIR, data))
    >>> c.recall, c.chr, c.precision
    ((0.0, 0.5, 1.0), (0.0, 0.25, 1.0), (1.0, 1.0, 0.5))
    """
    d = src.data
    if src.kind == PAIR:
        block = d.get("curves") or {}
        points = block.get("score_curve") or []
        n, pos = block.get("n", 0), block.get("n_positive", 0)
        tf = d.get("threshold_free") or {}
        if not points or not n:
            return None
        rec = [p["tp"] / pos if pos else 0.0 for p in points]
        chr_ = [p["n_fired"] / n for p in points]
        prec = [p["tp"] / p["n_fired"] for p in points]
        aucs = tf.get("pr_auc"), tf.get("p_chr_auc"), tf.get("positive_rate")
    else:
        points = d.get("curve") or []
        counts = d.get("counts") or {}
        n, pos = counts.get("n", 0), counts.get("n_servable", 0)
        if not points or not n:
            return None
        rec = [p["valid"] / pos if pos else 0.0 for p in points]
        chr_ = [p["fired"] / n for p in points]
        prec = [p["valid"] / p["fired"] for p in points]
        aucs = None, d.get("p_chr_auc"), d.get("positive_rate")
    return Curve(
        name=src.name,
        recall=(0.0, *rec),
        chr=(0.0, *chr_),
        precision=(prec[0], *prec),
        pr_auc=aucs[0],
        p_chr_auc=aucs[1],
        positive_rate=aucs[2],
    )


def perfect_ranker(p: float, steps: int = 200) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The P-CHR curve of a perfect ranker at positive rate p: precision 1 up to
    CHR = p, then p / CHR; its area is ``p (1 - ln p)``.

    >>> xs, ys = perfect_ranker(0.5, steps=2)
    >>> xs, ys
    ((0.0, 0.5, 0.75, 1.0), (1.0, 1.0, 0.6666666666666666, 0.5))
    """
    if not 0.0 < p <= 1.0:
        raise ValueError(f"positive rate must be in (0, 1], got {p}")
    xs = [0.0, p] + [p + (1.0 - p) * k / steps for k in range(1, steps + 1)]
    return tuple(xs), tuple(1.0 if x <= p else p / x for x in xs)


def ceiling(p: float) -> float:
    """``p (1 - ln p)``, the P-CHR AUC of a perfect ranker.

    >>> round(ceiling(0.45), 3)
    0.809
    """
    return p * (1.0 - math.log(p)) if p > 0 else 0.0


def subscore_fhr(src: Source) -> list[tuple[str, float | None, float | None, float | None, int]]:
    """Per-sub-score FHR (query, context, policy) as :func:`domain_fhr` gives
    per-domain; [] for a replay report or a report without sub-scores."""
    if src.kind != PAIR:
        return []
    out = []
    for s in src.data.get("per_subscore") or []:
        e = s["fhr"]
        out.append((s["key"], e["value"], e["ci_low"], e["ci_high"], int(e["denominator"])))
    return out


#: One bar of the per-kind figure: (kind key, value, ci_low, ci_high, rows).
KindBar = tuple[str, float | None, float | None, float | None, int]


def kind_rates(src: Source) -> tuple[list[KindBar], list[KindBar]]:
    """A pair report's per-kind results (stress rows): FHR of every kind with
    MISS rows (identity, context, policy) and recall of every kind with HIT
    rows (noise); ([], []) for a replay report or one without stress rows.

    >>> e = lambda v, d: {"value": v, "ci_low": v, "ci_high": v, "denominator": d}
    >>> none = {"value": None, "ci_low": None, "ci_high": None, "denominator": 0}
    >>> data = {"per_kind": [{"key": "noise/typo", "fhr": none, "recall": e(0.5, 4)},
    ...                      {"key": "identity/city", "fhr": e(0.25, 4), "recall": none}]}
    >>> kind_rates(Source("x", PAIR, data))
    ([('identity/city', 0.25, 0.25, 0.25, 4)], [('noise/typo', 0.5, 0.5, 0.5, 4)])
    """
    fhrs: list[KindBar] = []
    recalls: list[KindBar] = []
    if src.kind != PAIR:
        return fhrs, recalls
    for s in src.data.get("per_kind") or []:
        for rate, out in (("fhr", fhrs), ("recall", recalls)):
            e = s[rate]
            if int(e["denominator"]):
                out.append((s["key"], e["value"], e["ci_low"], e["ci_high"], int(e["denominator"])))
    return fhrs, recalls


def domain_fhr(src: Source) -> list[tuple[str, float | None, float | None, float | None, int]]:
    """Per-domain FHR as (domain, value, ci_low, ci_high, MISS rows)."""
    out = []
    if src.kind == PAIR:
        for s in src.data.get("per_domain", []):
            e = s["fhr"]
            out.append((s["key"], e["value"], e["ci_low"], e["ci_high"], int(e["denominator"])))
    else:
        for s in src.data.get("per_domain", []):
            e = s["rates"]["fhr"]
            out.append((s["key"], e["value"], e["ci_low"], e["ci_high"], int(e["denominator"])))
    return out


def reliability(
    src: Source,
) -> tuple[list[tuple[float, float, float | None, int, int]], float | None]:
    """((bin lo, bin hi, mean predicted, rows, HIT rows) per bin, ECE) of a pair report."""
    block = src.data.get("curves") or {}
    bins = [
        (b["lo"], b["hi"], b["mean_predicted"], b["n"], b["n_hit"])
        for b in block.get("reliability", [])
    ]
    return bins, block.get("ece")


def clq_point(src: Source) -> ClqPoint | None:
    """The source as a point of the cost-latency-quality view; None without a
    latency.

    A pair report gives its headline F1 and FHR and its p95 per decision. A
    replay gives ``F1 = 2 P R / (P + R)`` from its precision (valid serves
    over serves) and recall (valid serves over servable lookups), its FHR
    over the lookups that must miss, and the p95 of its lookups against the
    fullest store it measured.

    >>> rep = {"rates": {"precision": {"value": 0.8}, "recall": {"value": 0.5},
    ...                  "fhr": {"value": 0.1}},
    ...        "latency": [{"n_entries": 10, "latency": {"p95_ms": 2.0}},
    ...                    {"n_entries": 500, "latency": {"p95_ms": 9.0}}]}
    >>> p = clq_point(Source("r", REPLAY, rep))
    >>> round(p.f1, 4), p.fhr, p.p95_ms, p.kind
    (0.6154, 0.1, 9.0, 'replay')
    """
    d = src.data
    if src.kind == REPLAY:
        return _replay_clq_point(src)
    if (d.get("latency") or {}).get("p95_ms") is None:
        return None
    tf = d.get("threshold_free") or {}
    at5 = next((op for op in tf.get("operating_points", []) if op["alpha"] == 0.05), None)
    cost = (d.get("cost") or {}).get("per_1k_decisions_usd")
    return ClqPoint(
        name=src.name,
        f1=d["headline"]["f1"]["value"],
        recall_at_5=None if at5 is None else at5["recall"],
        p95_ms=float(d["latency"]["p95_ms"]),
        cost_per_1k=float(cost or 0.0),
        fhr=d["headline"]["fhr"]["value"],
        kind=PAIR,
    )


def _replay_clq_point(src: Source) -> ClqPoint | None:
    d = src.data
    runs = [r for r in d.get("latency") or [] if (r.get("latency") or {}).get("p95_ms") is not None]
    if not runs:
        return None
    fullest = max(runs, key=lambda r: r.get("n_entries") or 0)
    rates = d.get("rates") or {}
    prec = (rates.get("precision") or {}).get("value")
    rec = (rates.get("recall") or {}).get("value")
    f1 = (
        None
        if prec is None or rec is None
        else (2 * prec * rec / (prec + rec) if prec + rec else 0.0)
    )
    return ClqPoint(
        name=src.name,
        f1=f1,
        recall_at_5=None,
        p95_ms=float(fullest["latency"]["p95_ms"]),
        cost_per_1k=0.0,
        fhr=(rates.get("fhr") or {}).get("value"),
        kind=REPLAY,
    )


def pareto_front(points: Sequence[tuple[float, float, float]]) -> list[int]:
    """Indices of the points (latency, quality, cost) no other point dominates:
    none has lower-or-equal latency and cost and higher-or-equal quality with
    at least one strictly better. Sorted by latency.

    >>> pareto_front([(1.0, 0.5, 0.0), (2.0, 0.9, 0.0), (3.0, 0.8, 0.0), (1.0, 0.4, 0.0)])
    [0, 1]
    """
    keep = []
    for i, (lat, q, cost) in enumerate(points):
        dominated = any(
            lo <= lat and co <= cost and qo >= q and (lo < lat or co < cost or qo > q)
            for j, (lo, qo, co) in enumerate(points)
            if j != i
        )
        if not dominated:
            keep.append(i)
    return sorted(keep, key=lambda i: (points[i][0], -points[i][1]))


def read_sweep(path: str | Path) -> dict[str, list[tuple[float, float, float]]]:
    """GPTCache's threshold sweep CSV (``reports/gptcache_sweep.csv``, written by
    ``scripts/run_gptcache.py``): embedder -> [(threshold, FHR, recall)] for the
    query-only configurations, by threshold."""
    import csv

    out: dict[str, list[tuple[float, float, float]]] = {}
    with open(path, encoding="utf-8", newline="") as f:
        for rec in csv.DictReader(f):
            if rec.get("embed", "query") != "query":
                continue
            out.setdefault(rec["embedder"], []).append(
                (float(rec["threshold"]), float(rec["fhr"]), float(rec["recall"]))
            )
    for points in out.values():
        points.sort()
    return out


def slug(name: str) -> str:
    """A file-name-safe form of a cache name.

    >>> slug("gptcache minilm@0.80 (fast)")
    'gptcache-minilm-0.80-fast'
    """
    out = "".join(c if c.isalnum() or c in "._" else "-" for c in name)
    while "--" in out:
        out = out.replace("--", "-")
    return out.strip("-") or "cache"
